"""Storage faults are found, never silently lost: every write records its files (size, event
count) in the catalog; a read, fsck and the compactor compare the listing with the records
(acidflow.format.filecheck). Real ORC files, a real SQLite catalog, pyarrow reads (no Spark)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.catalog.records import CompactionState
from acidflow.compactor.fsck import fsck_table, repair
from acidflow.compactor.worker import run_worker
from acidflow.engine.transaction import Transaction
from acidflow.format.filecheck import DataFileMismatchError, MissingDataFileError
from acidflow.read.table import read_table

D1 = "delta_0000001_0000001_0000"
D2 = "delta_0000002_0000002_0000"
DD2 = "delete_delta_0000002_0000002_0000"


def _table(catalog, name: str = "s.t") -> Path:
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("v", "string")],
            primary_key=["id"],
            bucket_columns=["id"],
            num_buckets=2,
        )
    )
    return Path(catalog.get_table(name).location)


def _upsert(catalog, keys: range, tag: str, name: str = "s.t") -> None:
    with Transaction(catalog, heartbeat_s=0) as txn:
        txn.upsert(
            name,
            pa.table({"id": pa.array(keys, pa.int32()), "v": [f"{tag}{k}" for k in keys]}),
        )


def _rows(catalog, name: str = "s.t") -> dict[int, str]:
    t = read_table(None, catalog, name)
    return dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


def test_every_write_records_its_files_with_sizes_and_events(catalog):
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    _upsert(catalog, range(50), "b")  # 50 replaced: delete delta + insert delta
    recs = {r.path: r for r in catalog.data_file_records("s.t")}
    assert sorted(recs) == [
        f"{DD2}/bucket_00000",
        f"{DD2}/bucket_00001",
        f"{D1}/bucket_00000",
        f"{D1}/bucket_00001",
        f"{D2}/bucket_00000",
        f"{D2}/bucket_00001",
    ]
    for path, r in recs.items():
        assert r.size == os.path.getsize(loc / path) and r.partition == ""
    assert sum(recs[f"{D1}/bucket_0000{b}"].rows for b in (0, 1)) == 100
    assert sum(recs[f"{DD2}/bucket_0000{b}"].rows for b in (0, 1)) == 50
    assert {r.write_id for r in recs.values() if r.path.startswith(D1)} == {1}


def test_missing_delta_bucket_file_fails_the_read_naming_it(catalog):
    """Before: 52 of 100 rows came back and nothing noticed."""
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    (loc / D1 / "bucket_00001").unlink()
    with pytest.raises(MissingDataFileError) as err:
        read_table(None, catalog, "s.t")
    msg = str(err.value)
    assert "table s.t" in msg and f"{D1}/bucket_00001" in msg and "write id 1" in msg
    assert err.value.table == "s.t" and [p.kind for p in err.value.problems] == ["missing_file"]


def test_missing_delete_delta_file_fails_the_read_instead_of_resurrecting_rows(catalog):
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    _upsert(catalog, range(100), "b")  # every key replaced: delete events in DD2
    assert set(_rows(catalog).values()) == {f"b{k}" for k in range(100)}
    (loc / DD2 / "bucket_00000").unlink()
    with pytest.raises(MissingDataFileError) as err:
        read_table(None, catalog, "s.t")
    assert f"{DD2}/bucket_00000" in str(err.value) and "write id 2" in str(err.value)


def test_missing_delta_directory_fails_the_read(catalog):
    loc = _table(catalog)
    _upsert(catalog, range(10), "a")
    _upsert(catalog, range(10, 20), "b")
    shutil.rmtree(loc / D2)
    with pytest.raises(MissingDataFileError, match=f"{D2}/bucket_0000"):
        read_table(None, catalog, "s.t")


def test_truncated_file_fails_the_read(catalog):
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    f = loc / D1 / "bucket_00000"
    f.write_bytes(f.read_bytes()[:-40])
    with pytest.raises(DataFileMismatchError) as err:
        read_table(None, catalog, "s.t")
    assert f"{D1}/bucket_00000" in str(err.value) and "truncated" in str(err.value)


def test_fsck_lists_missing_truncated_unexpected_and_corrupt_files_and_goes_on(catalog):
    loc = _table(catalog)
    for w in range(4):
        _upsert(catalog, range(w * 100, w * 100 + 100), f"w{w}")
    d = [f"delta_{w:07d}_{w:07d}_0000" for w in (1, 2, 3, 4)]
    (loc / d[0] / "bucket_00001").unlink()  # missing
    t = loc / d[1] / "bucket_00000"
    t.write_bytes(t.read_bytes()[:-25])  # truncated
    c = loc / d[2] / "bucket_00000"
    c.write_bytes(b"\0" * c.stat().st_size)  # corrupt, same size as recorded
    shutil.copy(loc / d[3] / "bucket_00001", loc / d[3] / "bucket_00001_1")  # unexpected
    found = fsck_table(catalog, "s.t")
    by_kind = {(f.kind, f.path): f for f in found}
    assert by_kind[("missing_file", f"{d[0]}/bucket_00001")].severity == "error"
    assert "write id 1" in by_kind[("missing_file", f"{d[0]}/bucket_00001")].detail
    assert "write id 2" in by_kind[("size_mismatch", f"{d[1]}/bucket_00000")].detail
    assert "write id 4" in by_kind[("unexpected_file", f"{d[3]}/bucket_00001_1")].detail
    assert by_kind[("corrupt_file", f"{d[2]}/bucket_00000")].severity == "error"
    # it went on after the corrupt file: the rows of the stray copy are read (its ROW__IDs
    # duplicate those of bucket_00001)
    assert any(f.kind == "duplicate_row_id" for f in found)


def test_major_compaction_with_a_missing_input_fails_and_publishes_nothing(catalog):
    """Before: the compaction succeeded with the 52 rows left and made the loss permanent."""
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    _upsert(catalog, range(50), "b")
    (loc / D1 / "bucket_00001").unlink()
    entry = catalog.enqueue_compaction("s.t", None, "major")
    out = run_worker(None, catalog, cq_id=entry.id)
    assert out is not None and out.state == CompactionState.FAILED
    assert f"{D1}/bucket_00001" in out.report["error"]
    assert "MissingDataFileError" in catalog.get_compaction(entry.id).error
    assert not [p for p in os.listdir(loc) if p.startswith("base_") or p.startswith(".compact")]
    with pytest.raises(MissingDataFileError, match=f"{D1}/bucket_00001"):
        read_table(None, catalog, "s.t")


def test_compaction_output_is_recorded_and_checked_by_reads(catalog):
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    _upsert(catalog, range(50), "b")
    entry = catalog.enqueue_compaction("s.t", None, "major")
    out = run_worker(None, catalog, cq_id=entry.id)
    assert out is not None and out.state == CompactionState.READY_FOR_CLEANING, out.report
    base = [r for r in catalog.data_file_records("s.t") if r.path.startswith("base_")]
    assert sum(r.rows for r in base) == 100 and {r.write_id for r in base} == {2}
    (loc / base[0].path).unlink()
    with pytest.raises(MissingDataFileError, match=base[0].path):
        read_table(None, catalog, "s.t")


def test_repair_marks_the_loss_then_reads_and_compaction_proceed(catalog):
    loc = _table(catalog)
    _upsert(catalog, range(100), "a")
    (loc / D1 / "bucket_00001").unlink()
    rec = {r.path: r for r in catalog.data_file_records("s.t")}[f"{D1}/bucket_00001"]
    dry = repair(catalog, "s.t", dry_run=True)
    assert [f.path for f in dry.lost] == [f"{D1}/bucket_00001"]
    with pytest.raises(MissingDataFileError):  # a dry run marks nothing
        read_table(None, catalog, "s.t")
    report = repair(catalog, "s.t", note="disk failure, no backup")
    [lost] = report.lost
    assert (lost.table, lost.partition, lost.bucket, lost.write_id) == ("s.t", "", 1, 1)
    assert lost.rows == rec.rows and lost.reason == "missing_file"
    assert report.to_dict()["rows_lost"] == rec.rows
    rows = _rows(catalog)
    assert len(rows) == 100 - rec.rows
    found = fsck_table(catalog, "s.t")
    assert [f.kind for f in found if f.severity == "error"] == []
    assert [f.kind for f in found if f.kind == "lost_file"] == ["lost_file"]
    assert "disk failure, no backup" in next(f.detail for f in found if f.kind == "lost_file")
    assert repair(catalog, "s.t").lost == []  # nothing left to mark
    entry = catalog.enqueue_compaction("s.t", None, "major")
    out = run_worker(None, catalog, cq_id=entry.id)
    assert out is not None and out.state == CompactionState.READY_FOR_CLEANING, out.report
    assert _rows(catalog) == rows


def test_fsck_repair_from_the_command_line(catalog):
    """``acidflow fsck`` names the missing file; ``fsck --repair --dry-run`` reports, marks
    nothing; ``fsck --repair`` marks it lost, after which ``cat`` reads the rest."""
    import json

    from typer.testing import CliRunner

    from acidflow.cli.app import app

    loc = _table(catalog)
    _upsert(catalog, range(40), "a")
    (loc / D1 / "bucket_00000").unlink()
    runner = CliRunner()
    res = runner.invoke(app, ["fsck", "s.t", "--json"])
    assert res.exit_code == 1, res.output
    kinds = {json.loads(line)["kind"] for line in res.output.splitlines()}
    assert "missing_file" in kinds
    res = runner.invoke(app, ["fsck", "s.t", "--repair", "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    dry = json.loads(res.output)
    assert dry["dry_run"] and [f["path"] for f in dry["lost"]] == [f"{D1}/bucket_00000"]
    assert runner.invoke(app, ["cat", "s.t"]).exit_code == 1  # still refused: nothing marked
    res = runner.invoke(app, ["fsck", "s.t", "--repair", "--note", "disk gone"])
    assert res.exit_code == 0, res.output
    assert f"marked lost: s.t {D1}/bucket_00000 (bucket 0, write id 1" in res.output
    res = runner.invoke(app, ["cat", "s.t"])
    assert res.exit_code == 0, res.output
    survivors = {json.loads(line)["id"] for line in res.output.splitlines()}
    assert len(survivors) == 40 - dry["rows_lost"] and survivors < set(range(40))
    assert runner.invoke(app, ["fsck", "s.t", "--dry-run"]).exit_code != 0  # needs --repair


def test_cleaner_forgets_the_records_of_the_directories_it_removes(catalog):
    """The records stay bounded by what the table holds: after a major compaction and a
    cleaner pass, only the new base's files are recorded, and an aborted write's directory
    goes with its records."""
    from acidflow.compactor.cleaner import run_cleaner

    _table(catalog)
    for i in range(3):
        _upsert(catalog, range(10 * i, 10 * i + 10), "a")
    with pytest.raises(RuntimeError):
        with Transaction(catalog, heartbeat_s=0) as txn:
            txn.upsert("s.t", pa.table({"id": pa.array([99], pa.int32()), "v": ["x"]}))
            raise RuntimeError("abort after writing")
    assert {r.path.split("/")[0] for r in catalog.data_file_records("s.t")} == {
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    }
    entry = catalog.enqueue_compaction("s.t", None, "major")
    run_worker(None, catalog, cq_id=entry.id)
    run_cleaner(catalog, reader_timeout_s=0, retention={"succeeded": 0})
    dirs = {r.path.split("/")[0] for r in catalog.data_file_records("s.t")}
    assert len(dirs) == 1 and dirs.pop().startswith("base_"), dirs
    with catalog.engine.connect() as conn:  # the aborted write's records are gone too
        total = conn.exec_driver_sql("SELECT count(*) FROM data_files").scalar()
    assert total == len(catalog.data_file_records("s.t"))
    assert sorted(_rows(catalog)) == list(range(30))
