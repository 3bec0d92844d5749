"""fsck's pure checks: killed-run directories classified by their write ids' state (aborted / open /
orphan, never "missing metadata") and duplicate primary keys named with the write ids of their
rows."""

from __future__ import annotations

import pyarrow as pa

from acidflow.compactor.fsck import (
    WRITE_ID_COL,
    OpenWrite,
    WriteIdView,
    check_layout,
    classify_dir,
    duplicate_keys,
)
from acidflow.format.layout import DirEntry, ValidWriteIdList, get_acid_state


def _dir(name: str, *, version: bool = True) -> list[DirEntry]:
    out = [DirEntry(name, True), DirEntry(f"{name}/bucket_00000", False, 100)]
    if version:
        out.append(DirEntry(f"{name}/_orc_acid_version", False, 1))
    return out


def _view(
    valid: ValidWriteIdList,
    known: int | None = None,
    open_writes: dict[int, OpenWrite] | None = None,
    timeout: float = 300,
) -> WriteIdView:
    return WriteIdView(
        valid, valid.high_watermark if known is None else known, open_writes or {}, timeout
    )


def test_classify_dir_by_write_id_state():
    """Each state of a killed or running writer's write id."""
    valid = ValidWriteIdList("db.t", 6, open_write_ids=[4, 5], aborted_write_ids=[3])
    view = _view(valid, known=7, open_writes={4: OpenWrite(40, 10.0), 5: OpenWrite(50, 900.0)})
    assert classify_dir(1, 2, view) is None  # committed
    assert classify_dir(2, 4, view) is None  # range with committed ids
    assert classify_dir(3, 3, view)[:2] == ("aborted", "info")
    kind, sev, detail = classify_dir(4, 4, view)
    assert (kind, sev) == ("open", "info") and "transaction 40" in detail
    kind, sev, detail = classify_dir(5, 5, view)  # silent 900 s > 300 s
    assert (
        (kind, sev) == ("aborted", "info")
        and "transaction 50" in detail
        and "housekeeper" in detail
    )
    assert classify_dir(7, 7, view)[0] == "open"  # allocated after the snapshot
    kind, sev, detail = classify_dir(8, 8, view)
    assert (kind, sev) == ("orphan", "warning") and "high watermark 7" in detail
    assert classify_dir(-(2**63), -(2**63), view) is None  # conversion base


def test_killed_run_dirs_are_not_missing_metadata():
    """Directories of aborted, timed-out, running and unknown write ids without
    ``_orc_acid_version`` are reported as such; a committed one stays an error."""
    entries = (
        _dir("delta_0000001_0000001_0000")
        + _dir("delta_0000002_0000002_0000", version=False)
        + _dir("delta_0000003_0000003_0000", version=False)
        + _dir("delete_delta_0000003_0000003_0000", version=False)
        + _dir("delta_0000004_0000004_0000", version=False)
        + _dir("base_0000005", version=False)
        + _dir("delta_0000009_0000009_0000", version=False)
    )
    valid = ValidWriteIdList("db.t", 5, open_write_ids=[4, 5], aborted_write_ids=[3])
    view = _view(valid, open_writes={4: OpenWrite(44, 1000.0), 5: OpenWrite(55, 1.0)})
    state = get_acid_state(entries, valid)
    found = {f.path: f for f in check_layout("", entries, state, view)}
    assert found["delta_0000002_0000002_0000"].kind == "missing_metadata"
    assert found["delta_0000002_0000002_0000"].severity == "error"
    assert found["delta_0000003_0000003_0000"].kind == "aborted"
    assert found["delete_delta_0000003_0000003_0000"].kind == "aborted"
    assert (
        found["delta_0000004_0000004_0000"].kind,
        found["delta_0000004_0000004_0000"].severity,
    ) == ("aborted", "info")
    assert "_orc_acid_version" in found["delta_0000004_0000004_0000"].detail
    assert found["base_0000005"].kind == "open"
    assert (
        found["delta_0000009_0000009_0000"].kind,
        found["delta_0000009_0000009_0000"].severity,
    ) == ("orphan", "warning")
    assert "delta_0000001_0000001_0000" not in found
    errors = [f for f in found.values() if f.severity == "error"]
    assert [f.path for f in errors] == ["delta_0000002_0000002_0000"]
    # without the write-id view (old callers) a committed-looking dir is still checked
    old = {f.path: f.kind for f in check_layout("", entries, get_acid_state(entries, valid))}
    assert old["delta_0000004_0000004_0000"] == "missing_metadata"


def test_duplicate_keys_named_with_write_ids():
    """Keys with more than one visible row, named (at most ``limit``)."""
    rows = pa.table(
        {
            "id": [1, 2, 2, 3, 3, 3, 4, 5, 5],
            "region": ["a"] * 9,
            WRITE_ID_COL: [1, 1, 2, 1, 2, 4, 1, 3, 3],
        }
    )
    (f,) = duplicate_keys(["id", "region"], rows, limit=2)
    assert (f.kind, f.severity, f.partition) == ("duplicate_key", "error", "")
    assert "3 primary key value(s) of (id, region)" in f.detail
    assert "4 surplus row(s)" in f.detail
    assert "(id=2, region='a'): 2 rows, write ids 1, 2" in f.detail
    assert "(id=3, region='a'): 3 rows, write ids 1, 2, 4" in f.detail
    assert "id=5" not in f.detail and "1 more" in f.detail
    assert duplicate_keys(["id"], pa.table({"id": [1, 2, 3], WRITE_ID_COL: [1, 1, 1]})) == []
    assert duplicate_keys([], rows) == []
    assert duplicate_keys(["id"], rows.slice(0, 0)) == []
