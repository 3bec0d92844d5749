"""The engine executor (``acidflow.read.engine.read_engine``: Spark's own ORC scans) against
``read_spark`` (``mapInArrow`` + pyarrow), plan by plan, on every layout of the read tests:
deltas with updates and deletes, aborted and open write ids, time travel, partitions (the
default partition too), buckets, a compacted base with deltas on top, schema evolution (renamed,
widened, added columns) and the Hive-written fixtures (original files, delete deltas only, minor
compacted names). Same columns, Spark types and rows (ROW__ID included); and it runs as ORC
scans, no Python node."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.read import engine, snapshot
from acidflow.read import table as reads
from acidflow.tableops.schema import alter_table
from tests.support import acidtables

pytestmark = pytest.mark.spark

CFG = CompactorConfig(heartbeat_s=0.5)


def assert_same(spark, plan, *, expect_engine: bool = True, **kw) -> int:
    """The engine executor and read_spark give the same schema and rows for ``plan``."""
    want = snapshot.read_spark(spark, plan.table_dir, plan, **kw)
    got = engine.read_engine(spark, plan, **kw)
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in want.schema]
    got_rows = sorted(repr(r) for r in got.collect())
    want_rows = sorted(repr(r) for r in want.collect())
    assert got_rows == want_rows
    assert got.count() == len(want_rows)
    physical = got._jdf.queryExecution().executedPlan().toString()
    if expect_engine:
        assert "FileScan orc" in physical
    return len(want_rows)


def scan_schemas(df) -> list[str]:
    """The read schemas of a DataFrame's ORC scans (from its physical plan)."""
    leaves = df._jdf.queryExecution().sparkPlan().collectLeaves()
    out = []
    for i in range(leaves.size()):
        node = leaves.apply(i)
        if node.nodeName().startswith("Scan orc"):
            schema = node.requiredSchema()
            names = list(schema.fieldNames())
            row = schema.apply("row").dataType().simpleString() if "row" in names else "-"
            out.append(",".join(names[:5]) + ",row:" + row)
    return out


def upsert(catalog, name: str, rows: pa.Table) -> None:
    with Transaction(catalog, heartbeat_s=0) as txn:
        txn.upsert(name, rows)


def delete_ids(catalog, name: str, ids: list[int]) -> None:
    with Transaction(catalog, heartbeat_s=0) as txn:
        txn.delete(name, where=f"id in ({', '.join(map(str, ids))})")


def rows_of(ids, tag: str, ds: bool = False) -> pa.Table:
    data = {
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"{tag}{i}" for i in ids], pa.string()),
        "amount": pa.array([decimal.Decimal(i * 7) / 100 for i in ids], pa.decimal128(10, 2)),
        "flag": pa.array([i % 3 == 0 for i in ids], pa.bool_()),
    }
    if ds:
        data["ds"] = pa.array([None if i % 5 == 0 else f"d{i % 2}" for i in ids], pa.string())
    return pa.table(data)


def make(catalog, name: str, *, partitioned: bool, buckets: int) -> None:
    catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("id", "bigint"),
                Column("name", "string"),
                Column("amount", "decimal(10,2)"),
                Column("flag", "boolean"),
            ],
            partition_columns=[Column("ds", "string")] if partitioned else [],
            primary_key=["id"],
            num_buckets=buckets,
        )
    )


def churn(catalog, name: str, partitioned: bool) -> None:
    """w1 insert, w2 upsert (updates + inserts), w3 delete, w4 aborted, w5 upsert, w6 open."""
    upsert(catalog, name, rows_of(list(range(40)), "a", partitioned))
    upsert(catalog, name, rows_of(list(range(0, 50, 3)), "b", partitioned))
    delete_ids(catalog, name, [1, 2, 9, 45])
    with pytest.raises(RuntimeError):
        with Transaction(catalog, heartbeat_s=0) as txn:
            txn.upsert(name, rows_of([4, 5, 100], "x", partitioned))
            raise RuntimeError("abort this transaction")
    upsert(catalog, name, rows_of([5, 6, 60], "c", partitioned))
    acidtables.write(catalog, name, {0: []}, end="open")


SHAPES = [
    pytest.param(p, b, id=f"{'part' if p else 'flat'}-b{b}") for p in (False, True) for b in (0, 2)
]


@pytest.mark.parametrize("partitioned,buckets", SHAPES)
def test_deltas_deletes_updates_aborted_time_travel(spark, catalog, partitioned, buckets):
    name = "db.churn"
    make(catalog, name, partitioned=partitioned, buckets=buckets)
    churn(catalog, name, partitioned)
    for as_of in (None, 1, 2, 3, 5):
        plan = reads.plan_table(catalog, name, as_of_write_id=as_of)
        assert_same(spark, plan, row_id=True)
    plan = reads.plan_table(catalog, name)
    if partitioned:
        assert "ds=__HIVE_DEFAULT_PARTITION__" in {t.partition for t in plan.tasks}
    assert assert_same(spark, plan) > 0
    assert_same(spark, plan, project=["name"], row_id=True)
    assert_same(spark, plan, project=[], file_name=True)
    assert_same(spark, plan, row_id=True, file_name=True)
    ro = reads.plan_table(catalog, name, read_optimized=True)
    assert_same(spark, ro, row_id=True, expect_engine=bool(ro.tasks))


def test_compacted_base_with_deltas_on_top(spark, catalog):
    name = "db.compacted"
    make(catalog, name, partitioned=True, buckets=0)
    churn(catalog, name, True)
    for part in ("ds=d0", "ds=d1"):
        info = initiator.request_compaction(catalog, name, part, "major")
        out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
        assert out is not None and out.state == "ready for cleaning", out and out.report
    info = initiator.request_compaction(catalog, name, "ds=__HIVE_DEFAULT_PARTITION__", "minor")
    worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
    cleaner.run_cleaner(catalog)
    upsert(catalog, name, rows_of([3, 4, 70], "d", True))
    delete_ids(catalog, name, [6, 10])
    plan = reads.plan_table(catalog, name)
    assert any(f.kind == "base" for t in plan.tasks for f in t.data_files)
    assert_same(spark, plan, row_id=True)


def test_schema_evolution_renamed_widened_added(spark, catalog):
    name = "db.evolved"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("id", "int"),
                Column("qty", "int"),
                Column("price", "decimal(8,2)"),
                Column("note", "varchar(10)"),
                Column("score", "float"),
            ],
            primary_key=["id"],
        )
    )

    def batch(ids, tag):
        return pa.table(
            {
                "id": pa.array(ids, pa.int32()),
                "qty": pa.array([i * 3 for i in ids], pa.int32()),
                "price": pa.array(
                    [decimal.Decimal(i * 125) / 100 for i in ids], pa.decimal128(8, 2)
                ),
                "note": pa.array([f"{tag}{i}" for i in ids], pa.string()),
                "score": pa.array([i / 7 for i in ids], pa.float32()),
            }
        )

    upsert(catalog, name, batch(list(range(12)), "a"))
    upsert(catalog, name, batch([1, 2, 3, 12], "bb"))
    alter_table(catalog, name, rename_column=("qty", "quantity"))
    alter_table(catalog, name, change_type=("quantity", "bigint"))
    alter_table(catalog, name, change_type=("price", "decimal(12,3)"))
    alter_table(catalog, name, change_type=("note", "string"))
    alter_table(catalog, name, change_type=("score", "double"))
    alter_table(catalog, name, add_columns=[Column("extra", "string")])
    new = batch([2, 40], "c").append_column("extra", pa.array(["e2", "e40"], pa.string()))
    new = new.set_column(1, "quantity", pa.array([2**40, 7], pa.int64()))
    new = new.set_column(
        2, "price", pa.array([decimal.Decimal("123.456")] * 2, pa.decimal128(12, 3))
    )
    new = new.set_column(3, "note", pa.array(["c2", "c40"], pa.string()))
    new = new.set_column(4, "score", pa.array([0.1, 0.2], pa.float64()))
    upsert(catalog, name, new)
    for as_of in (None, 2, 4):
        plan = reads.plan_table(catalog, name, as_of_write_id=as_of)
        assert_same(spark, plan, row_id=True)
    plan = reads.plan_table(catalog, name)
    assert_same(spark, plan, project=["quantity", "extra"])


FIXTURES = [
    ("trino-nation-delete-deltas", {}, True),
    ("trino-nation-delete-deltas", {"high_watermark": 3}, True),
    ("trino-nation-delete-deltas", {"high_watermark": 4, "aborted_write_ids": [3]}, True),
    ("trino-original-files-dummy-id", {}, False),
    ("trino-original-file-nation", {}, False),
    ("trino-delete-deltas-only", {}, False),
    ("impala-original-file-alltypes", {}, False),
]


@pytest.mark.parametrize("fixture,kw,engine_scan", FIXTURES, ids=lambda v: str(v))
def test_hive_written_fixtures(spark, fixtures_dir, fixture, kw, engine_scan):
    plan = reads.plan_path(str(fixtures_dir / fixture / "table"), **kw)
    assert_same(spark, plan, row_id=True, expect_engine=engine_scan)
    assert_same(spark, plan, file_name=True, expect_engine=engine_scan)


def test_runs_as_orc_scans_when_read_table_is_set_to_it(spark, catalog, monkeypatch):
    name = "db.scans"
    make(catalog, name, partitioned=False, buckets=0)
    churn(catalog, name, False)
    monkeypatch.delenv(engine.READER_ENV, raising=False)
    assert engine.reader_setting() == engine.JVM
    monkeypatch.setenv(engine.READER_ENV, "engine")
    df = reads.read_table(spark, catalog, name, row_id=True)
    physical = df._jdf.queryExecution().executedPlan().toString()
    assert "FileScan orc" in physical and "BroadcastHashJoin" in physical
    assert "MapInArrow" not in physical and "Python" not in physical
    # the scans push no filter of the ACID rules down (ORC resolves pushed names in `row`)
    assert "PushedFilters: []" in physical and "PushedFilters: [I" not in physical
    # the row struct is pruned to the columns selected
    one = reads.read_table(spark, catalog, name).select("name")
    schemas = scan_schemas(one)
    # (plus the cheapest row field, which every scan reads so that `row` stays in a count)
    assert any(s.endswith("row:struct<id:bigint,name:string>") for s in schemas), schemas
    assert all(
        s.endswith(("row:struct<id:bigint,name:string>", "row:struct<id:bigint>")) for s in schemas
    )
    # a count still reads all six event fields (Spark's ORC reader breaks otherwise)
    counted = scan_schemas(reads.read_table(spark, catalog, name).groupBy().count())
    six = "operation,originalTransaction,bucket,rowId,currentTransaction,row:struct<"
    assert counted and all(s == six + "id:bigint>" for s in counted), counted
    monkeypatch.setenv(engine.READER_ENV, "arrow")
    arrow = reads.read_table(spark, catalog, name, row_id=True)
    assert "MapInArrow" in arrow._jdf.queryExecution().executedPlan().toString()
    assert sorted(map(repr, arrow.collect())) == sorted(map(repr, df.collect()))
    monkeypatch.setenv(engine.READER_ENV, "nope")
    with pytest.raises(engine.ReaderSettingError):
        reads.read_table(spark, catalog, name)


def test_falls_back_for_columns_named_like_event_fields(spark, catalog):
    name = "db.eventnames"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "bigint"), Column("operation", "int"), Column("bucket", "int")],
            primary_key=["id"],
        )
    )
    t = pa.table(
        {
            "id": pa.array(range(10), pa.int64()),
            "operation": pa.array([2] * 10, pa.int32()),
            "bucket": pa.array([None] * 10, pa.int32()),
        }
    )
    upsert(catalog, name, t)
    delete_ids(catalog, name, [3])
    plan = reads.plan_table(catalog, name)
    assert "named like an ACID event field" in (engine.fallback_reason(plan, {}) or "")
    assert assert_same(spark, plan, row_id=True, expect_engine=False) == 9
