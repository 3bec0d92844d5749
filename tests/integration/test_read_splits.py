"""Read splits finer than a bucket (``acidflow.read.splits``): real tables written through the
Transaction API with small stripes (a one-bucket table, many stripes per file), real
compaction and conversion of plain ORC files (original files), a SQLite catalog. The rule
checked everywhere: reading split by split (stripe ranges, each split loading only the
delete events of its key ranges) returns exactly the rows of the unsplit read, in the same
order, with the same ROW__IDs and INPUT__FILE__NAMEs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidflow.catalog import Column, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.read import snapshot, splits
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS
from acidflow.tableops.convert import convert_table

STRIPE_ROWS = 1024
COLS = [Column("id", "bigint"), Column("v", "string"), Column("n", "bigint")]


def _rows(ids, tag, region=None) -> pa.Table:
    ids = list(ids)
    t = {
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([f"{tag}{i}" for i in ids], pa.string()),
        "n": pa.array([i * 3 for i in ids], pa.int64()),
    }
    if region is not None:
        t["region"] = pa.array([region] * len(ids), pa.string())
    return pa.table(t)


def _upsert(catalog, name, rows) -> None:
    # uncompressed: exact small stripes (the columnar writer cuts a zlib stripe only once a
    # compression block is full)
    with Transaction(catalog) as txn:
        txn.upsert(name, rows, stripe_rows=STRIPE_ROWS, compression="none")


def _read(tfs, plan, split_bytes, **kw) -> pa.Table:
    return snapshot.read_arrow(
        tfs, plan, row_id=True, file_name=True, split_bytes=split_bytes, **kw
    )


def _same_rows_split_or_not(tfs, plan, targets=(1, 20_000, 70_000)) -> pa.Table:
    """The unsplit read; every target's split read (sequential and threaded) equals it."""
    whole = _read(tfs, plan, 0)
    assert whole.num_rows
    for target in targets:
        cut = splits.split_tasks(tfs, plan.tasks, target)
        assert len(cut) > len(plan.tasks), target
        assert _read(tfs, plan, target).equals(whole), target
        threaded = snapshot.read_arrow_parallel(
            tfs, plan, threads=2, split_bytes=target, row_id=True, file_name=True
        )
        assert threaded.equals(whole), target
    return whole


@pytest.fixture(autouse=True)
def _no_unsorted_file(caplog):
    """Every file here is sorted by ROW__ID: no split falls back to every delete event."""
    yield
    calls = caplog.get_records("call")
    assert not [r for r in calls if "outside the split's key ranges" in r.getMessage()]


def _narrowed(tfs, plan, target=1) -> None:
    """Every split of the plan loads fewer delete events than its bucket has (no split loses
    one that hits its rows: checked by the equal reads)."""
    fewer = total = 0
    for task in plan.tasks:
        full = snapshot.load_delete_keys(tfs, task.delete_files, plan.valid_write_ids)
        assert full is not None and full.num_rows
        for s in splits.split_tasks(tfs, [task], target):
            assert s.key_ranges is not None
            part = snapshot.load_delete_keys(
                tfs, s.delete_files, plan.valid_write_ids, s.key_ranges
            )
            fewer += part is None or part.num_rows < full.num_rows
            total += 1
    assert fewer == total > len(plan.tasks)


def test_acid_base_deltas_and_delete_deltas_read_the_same_split(catalog):
    name = "db.split_acid"
    catalog.create_table(TableDef(name=name, columns=COLS, primary_key=["id"]))
    _upsert(catalog, name, _rows(range(5000), "a"))
    info = initiator.request_compaction(catalog, name, None, "major")
    cfg = CompactorConfig(heartbeat_s=0.5, target_file_bytes=0, target_stripe_bytes=16 * 1024)
    assert worker.run_worker(None, catalog, cq_id=info.id, config=cfg).state == (
        "ready for cleaning"
    )
    _upsert(catalog, name, _rows(range(5000, 8200), "b"))  # a delta of 4 stripes
    # updates (delete event + insert) hitting rows in every stripe of the base and the delta
    _upsert(catalog, name, _rows(range(0, 8200, 37), "u"))
    _upsert(catalog, name, _rows(range(11, 8200, 401), "w"))
    plan = reads.plan_table(catalog, name)
    tfs = TableFS(plan.table_dir)
    assert len(plan.tasks) == 1 and plan.tasks[0].delete_files
    kinds = {f.kind for f in plan.tasks[0].data_files}
    assert kinds == {"base", "delta"}
    whole = _same_rows_split_or_not(tfs, plan)
    assert whole.num_rows == 8200
    got = dict(zip(whole.column("id").to_pylist(), whole.column("v").to_pylist()))
    assert got[37] == "u37" and got[11] == "w11" and got[5000 + 1] == "b5001" and got[1] == "a1"
    _narrowed(tfs, plan)
    # column projection and a key filter with stripe pruning inside the splits
    keys = pa.table({"id": pa.array([1, 37, 4999, 5000, 8199, 9999], pa.int64())})
    for proj in (["v"], None):
        want = _read(tfs, plan, 0, project=proj, keys=keys)
        assert want.num_rows == 5
        assert _read(tfs, plan, 1, project=proj, keys=keys).equals(want)


def test_partitioned_table_reads_the_same_split(catalog):
    name = "db.split_parts"
    catalog.create_table(
        TableDef(
            name=name,
            columns=COLS,
            primary_key=["id"],
            partition_columns=[Column("region", "string")],
        )
    )
    _upsert(
        catalog,
        name,
        pa.concat_tables([_rows(range(3000), "a", "eu"), _rows(range(3000, 5500), "a", "us")]),
    )
    _upsert(
        catalog,
        name,
        pa.concat_tables(
            [_rows(range(0, 3000, 29), "u", "eu"), _rows(range(3000, 5500, 31), "u", "us")]
        ),
    )
    plan = reads.plan_table(catalog, name)
    tfs = TableFS(plan.table_dir)
    assert sorted(t.partition for t in plan.tasks) == ["region=eu", "region=us"]
    whole = _same_rows_split_or_not(tfs, plan, targets=(1, 10_000))
    assert whole.num_rows == 5500
    assert set(whole.column("region").to_pylist()) == {"eu", "us"}
    _narrowed(tfs, plan)


def _plain(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # a tiny stripe size: pyarrow's writer cuts a stripe after each 1,024-row batch
    paorc.write_table(_rows(ids, "r"), str(path), stripe_size=1024, compression="uncompressed")


def test_original_files_keep_their_synthetic_row_ids_in_every_split(catalog, tmp_path):
    d = tmp_path / "plain"
    _plain(d / "000000_0", list(range(3000)))
    _plain(d / "000000_0_copy_1", list(range(3000, 5500)))
    name = "db.split_plain"
    convert_table(catalog, TableDef(name=name, columns=COLS, primary_key=["id"], location=str(d)))
    # updates of original rows in several stripes of both files: delete events of their
    # synthetic ROW__IDs (write id 0, rowId continuing across the copies of bucket 0)
    _upsert(catalog, name, _rows(list(range(5, 5500, 113)) + [5500], "u"))
    plan = reads.plan_table(catalog, name)
    tfs = TableFS(plan.table_dir)
    originals = [f for f in plan.tasks[0].data_files if f.kind == "original"]
    assert len(originals) == 2 and originals[1].row_offset == 3000
    assert paorc.ORCFile(originals[0].path).nstripes > 2
    whole = _same_rows_split_or_not(tfs, plan, targets=(1, 9_000))
    assert whole.num_rows == 5501
    rid = {
        i: r["rowid"]
        for i, r, v in zip(
            whole.column("id").to_pylist(),
            whole.column(snapshot.ROW_ID).to_pylist(),
            whole.column("v").to_pylist(),
        )
        if v.startswith("r")
    }
    assert rid[0] == 0 and rid[2999] == 2999 and rid[3000] == 3000 and rid[5499] == 5499
    assert 5 not in rid and 3000 + 113 * 0 + 5 + 113 * 27 not in rid
    _narrowed(tfs, plan)


def test_random_split_targets_read_the_same_rows(catalog):
    """Property: any split target (bytes, from one stripe to more than a file) reads the rows
    of the unsplit read."""
    name = "db.split_property"
    catalog.create_table(TableDef(name=name, columns=COLS, primary_key=["id"]))
    _upsert(catalog, name, _rows(range(6000), "a"))
    _upsert(catalog, name, _rows(range(3, 6000, 53), "u"))
    plan = reads.plan_table(catalog, name)
    tfs = TableFS(plan.table_dir)
    whole = _read(tfs, plan, 0)
    size = sum(f.size for f in plan.tasks[0].data_files)

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(st.integers(min_value=1, max_value=size + 1000))
    def check(target: int) -> None:
        assert _read(tfs, plan, target).equals(whole)

    check()


@given(
    st.lists(st.integers(min_value=1, max_value=10_000), max_size=30),
    st.integers(min_value=1, max_value=40_000),
)
def test_cut_stripes_covers_every_stripe_once_in_order(sizes, target):
    runs = splits.cut_stripes(sizes, target)
    assert [i for a, b in runs for i in range(a, b)] == list(range(len(sizes)))
    assert all(a < b for a, b in runs)
    # every run but the last holds at least the target
    assert all(sum(sizes[a:b]) >= target for a, b in runs[:-1])
    groups = splits.pack([(i, s) for i, s in enumerate(sizes)], target)
    assert [i for g in groups for i in g] == list(range(len(sizes)))
    assert all(len(g) == 1 or sum(sizes[i] for i in g) <= target for g in groups)


def test_stripes_in_ranges_and_key_ranges():
    index = [(1, 7, 99), (1, 7, 199), (2, 7, 50), (3, 7, 10)]
    assert splits.file_key_range(acid=True, first=1, end=3, nstripes=4, key_index=index) == [
        [1, 7, 99],
        [2, 7, 50],
    ]
    assert splits.file_key_range(acid=True, first=0, end=1, nstripes=4, key_index=index) == [
        None,
        [1, 7, 99],
    ]
    # a key index that does not describe every stripe bounds nothing
    assert splits.file_key_range(acid=True, first=0, end=1, nstripes=5, key_index=index) is None
    assert splits.file_key_range(
        acid=False,
        first=2,
        end=3,
        nstripes=4,
        write_id=0,
        bucket_property=7,
        first_row=40,
        rows=10,
    ) == [[0, 7, 40], [0, 7, 49]]
    assert splits.stripes_in_ranges(index, 4, [[[1, 7, 150], [2, 7, 0]]]) == [1, 2]
    assert splits.stripes_in_ranges(index, 4, [[None, [1, 7, 5]]]) == [0]
    assert splits.stripes_in_ranges(index, 4, [[[3, 7, 11], None]]) == []
    assert splits.stripes_in_ranges(index, 3, [[None, None]]) is None
    # a delete file whose key index is not ascending is read whole (no stripe skipped)
    unsorted = [(1, 7, 99), (3, 7, 10), (2, 7, 50), (4, 7, 1)]
    assert splits.stripes_in_ranges(unsorted, 4, [[[2, 7, 40], [2, 7, 60]]]) is None
    keys = pa.table(
        {
            "o": pa.array([1, 1, 2, 2, 3], pa.int64()),
            "b": pa.array([7, 7, 6, 7, 7], pa.int32()),
            "r": pa.array([99, 100, 1000, 50, 0], pa.int64()),
        }
    )
    got = splits.in_ranges(keys, [[[1, 7, 100], [2, 7, 50]]]).to_pylist()
    assert got == [False, True, True, True, False]


@pytest.mark.parametrize("env, want", [("", splits.DEFAULT_SPLIT_BYTES), ("4096", 4096)])
def test_split_target_setting(monkeypatch, env, want):
    monkeypatch.setenv(splits.SPLIT_BYTES_ENV, env)
    assert splits.split_target() == want
    assert splits.split_target(7) == 7
