"""Small files: many small inserts into an unbucketed partitioned table -> the initiator queues a
major compaction for "small files" -> the worker packs the rows into files of about
``acidflow.target.file.bytes`` -> the cleaner -> fewer files, the same rows with the same ROW__IDs,
and Hive 3.1.3's own readers read the result (and later deletes of packed rows) equal to acidflow.
Bucketed tables keep one file per bucket."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.compactor.initiator import PartitionStats, small_files
from acidflow.format.bucketing import encode_bucket_property
from acidflow.format.packing import plan_bins, split_rows
from tests.support import acidtables as at

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TARGET = 64 * 1024
CFG = CompactorConfig(heartbeat_s=0.5)
COLS = [Column("id", "int"), Column("payload", "string")]


@pytest.fixture(scope="module")
def hive31():
    from tests.compat.hive31 import Hive31Oracle, require_hive31_tools

    with Hive31Oracle(require_hive31_tools()) as oracle:
        yield oracle


def files_of(catalog, name: str, partition: str) -> dict[str, list[Path]]:
    root = Path(catalog.get_table(name).location, partition)
    return {
        d.name: sorted(d.glob("bucket_*"))
        for d in sorted(root.iterdir())
        if d.is_dir() and not d.name.startswith(".")
    }


def test_small_file_rule_and_bins_are_pure():
    cfg = CompactorConfig(small_file_count=32, small_file_ratio=0.5, target_file_bytes=TARGET)
    assert small_files(PartitionStats(data_file_sizes=(100,) * 33), cfg).startswith(
        "small files: 33"
    )
    assert small_files(PartitionStats(data_file_sizes=(100,) * 8), cfg) is None  # too few
    assert "ratio 0.67" in small_files(
        PartitionStats(data_file_sizes=(100,) * 6 + (TARGET,) * 3), cfg
    )
    assert small_files(PartitionStats(data_file_sizes=(TARGET,) * 20), cfg) is None
    assert plan_bins({0: 10, 1: 10, 5: 50, 7: 200, 8: 5}, 64) == [
        ([0, 1, 5], [0]),
        ([7], [1, 2, 3]),
        ([8], [4]),
    ]
    with pytest.raises(ValueError, match="must be positive"):
        plan_bins({0: 1}, 0)
    import pyarrow as pa

    assert [t.num_rows for t in split_rows(pa.table({"a": list(range(10))}), 3)] == [4, 4, 2]
    cfg2 = CompactorConfig().with_properties(
        {
            "acidflow.target.file.bytes": "1024",
            "compactorthreshold.acidflow.compactor.small.file.count": "4",
        },
        table=True,
    )
    assert (cfg2.target_file_bytes, cfg2.small_file_count) == (1024, 4)


def test_small_files_are_queued_packed_and_read_by_hive(spark, catalog, hive31):
    from tests.compat.hive31 import same_as_acidflow

    name = "db.events"
    catalog.create_table(
        TableDef(
            name=name,
            columns=COLS,
            partition_columns=[Column("ds", "string")],
            properties={
                "acidflow.target.file.bytes": str(TARGET),
                "compactorthreshold.hive.compactor.delta.num.threshold": "1000",
            },
        )
    )
    rnd = random.Random(7)
    next_id = 0

    def rows(n: int) -> list[tuple]:
        nonlocal next_id
        out = [
            (next_id + i, "".join(rnd.choice("0123456789abcdef") for _ in range(120)))
            for i in range(n)
        ]
        next_id += n
        return out

    # ds=a: 3 transactions of 12 writers each (36 small files); ds=b: 2 files only
    for w in range(3):
        at.write(catalog, name, {b: rows(300) for b in range(12)}, partition="ds=a")
    at.write(catalog, name, {0: rows(50), 1: rows(50)}, partition="ds=b")
    # a delete of rows of writer 11 (w1) and writer 3 (w2): the delete events go to the
    # delete delta's file of their bucket property
    at.write(
        catalog,
        name,
        deletes=[(1, encode_bucket_property(11, 0), 0), (2, encode_bucket_property(3, 0), 5)],
        partition="ds=a",
    )
    before = at.rows(catalog, name)
    small_before = files_of(catalog, name, "ds=a")
    assert sum(len(v) for k, v in small_before.items() if k.startswith("delta_")) == 36

    report = initiator.run_initiator(catalog, config=CFG)
    by_part = {d.partition: d for d in report.decisions}
    assert by_part["ds=a"].action == "major"
    assert by_part["ds=a"].reason.startswith(
        "small files: 36 data files > acidflow.compactor.small.file.count 32"
    )
    assert by_part["ds=b"].action is None
    assert by_part["ds=a"].to_dict()["stats"]["data_files"] == 36
    (cq_id,) = report.queued_ids
    out = worker.run_worker(spark, catalog, cq_id=cq_id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out.report
    cleaner.run_cleaner(catalog)

    after = files_of(catalog, name, "ds=a")
    (base,) = [k for k in after if k.startswith("base_")]
    assert list(after) == [base]  # the deltas were cleaned
    packed = after[base]
    sizes = [p.stat().st_size for p in packed]
    total = sum(sizes)
    assert [p.name for p in packed] == [f"bucket_{i:05d}" for i in range(len(packed))]
    assert len(packed) < 36 and len(packed) <= total // TARGET + 3
    assert max(sizes) <= 1.5 * TARGET, sizes
    assert sum(sizes) / len(sizes) >= TARGET / 4, sizes  # no longer small files
    assert at.rows(catalog, name) == before  # same rows, same ROW__IDs
    same_as_acidflow(hive31, catalog, name)

    # a later delete of packed rows whose bucket property is not their file's number
    live = [r for r in at.rows(catalog, name) if r[2] == "a"]
    victims = [r[-1] for r in live if r[-1][1] != encode_bucket_property(0, 0)][:3] + [
        r[-1] for r in live if r[-1][1] == encode_bucket_property(0, 0)
    ][:1]
    at.write(catalog, name, deletes=victims, partition="ds=a")
    after_delete = at.rows(catalog, name)
    assert len(after_delete) == len(before) - 4
    same_as_acidflow(hive31, catalog, name)


def test_bucketed_major_keeps_one_file_per_bucket(catalog):
    name = "db.bucketed"
    catalog.create_table(
        TableDef(
            name=name,
            columns=COLS,
            primary_key=["id"],
            num_buckets=2,
            properties={"acidflow.target.file.bytes": "1024"},
        )
    )
    for w in range(3):
        at.write(
            catalog,
            name,
            {
                0: [(2 * i + 6 * w, "x" * 200) for i in range(40)],
                1: [(2 * i + 1 + 6 * w, "y" * 200) for i in range(40)],
            },
        )
    before = at.rows(catalog, name)
    info = catalog.enqueue_compaction(name, None, "major", requester="test")
    assert worker.run_worker(None, catalog, cq_id=info.id, config=CFG).state == "ready for cleaning"
    cleaner.run_cleaner(catalog)
    (base,) = [
        d for d in Path(catalog.get_table(name).location).iterdir() if d.name.startswith("base_")
    ]
    assert sorted(p.name for p in base.glob("bucket_*")) == ["bucket_00000", "bucket_00001"]
    assert at.rows(catalog, name) == before
