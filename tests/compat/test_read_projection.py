"""Column projection and the in-reader key filter (``snapshot.read_task(project=, keys=)``)
return exactly the columns and rows of a full read, on every Hive-written fixture that our reader
accepts (ACID files, original files, delete deltas, compacted bases)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acidflow.read import snapshot
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS

CASES = [
    "trino-nation-delete-deltas",
    "trino-original-file-nation",
    "trino-original-files-dummy-id",
    "impala-original-file-alltypes",
    "trino-delete-deltas-only",
    "impala-query-compacted-no-acid-metadata",
]


def _full_and_plan(fixtures_dir, case):
    path = str(fixtures_dir / case / "table")
    plan = reads.plan_path(path)
    return snapshot.read_arrow(TableFS(path), plan, row_id=True), plan, path


def _sorted(t: pa.Table) -> pa.Table:
    flat = t.flatten() if snapshot.ROW_ID in t.column_names else t
    keys = [c for c in flat.column_names if c.startswith(snapshot.ROW_ID + ".")] or [
        flat.column_names[0]
    ]
    return flat.sort_by([(k, "ascending") for k in keys])


@pytest.mark.parametrize("case", CASES)
def test_projection_equals_full_read(fixtures_dir, case):
    full, plan, path = _full_and_plan(fixtures_dir, case)
    names = [n for n, _ in plan.columns]
    for project in ([names[-1]], names[:1], [], names[::2]):
        got = snapshot.read_arrow(TableFS(path), plan, row_id=True, project=project)
        assert got.column_names == [n for n in names if n in project] + [
            n for n, _ in plan.partition_columns
        ] + [snapshot.ROW_ID]
        want = full.select(got.column_names)
        assert _sorted(got).equals(_sorted(want)), (case, project)


@pytest.mark.parametrize("case", CASES)
def test_key_filter_equals_filtered_full_read(fixtures_dir, case):
    full, plan, path = _full_and_plan(fixtures_dir, case)
    if full.num_rows == 0:
        pytest.skip("empty snapshot")
    key = plan.columns[0][0]
    values = pc.unique(full.column(key)).to_pylist()[:3] + [None]
    keys = pa.table(
        {key: pa.array([v for v in values if v is not None], full.schema.field(key).type)}
    )
    got = snapshot.read_arrow(TableFS(path), plan, row_id=True, project=[key], keys=keys)
    want = full.filter(pc.is_in(full.column(key), value_set=keys.column(0))).select(
        got.column_names
    )
    assert got.num_rows == want.num_rows > 0
    assert _sorted(got).equals(_sorted(want))
