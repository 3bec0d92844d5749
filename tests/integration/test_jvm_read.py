"""acidflow's JVM reader (``acidflow.read.jvm.read_jvm``: the Spark DataSource V2 of
``jvm/acid-reader``) against ``read_arrow`` (pyarrow in this process), plan by plan: base and
deltas with updates, deletes, aborted and open write ids, time travel, partitions (the default
partition too), buckets, splits finer than a bucket (stripe ranges: no row lost or read twice),
schema evolution (an added column, int -> bigint), column pruning, ``where`` filters, and the
Hive-written fixtures it reads; plans it cannot read fall back to the arrow executor and say
why. The jar must be built (``make jvm-reader``) and on the session's class path
(``acidflow.spark.session_conf``)."""

from __future__ import annotations

import logging
import os

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import engine, jvm, predicates, snapshot, splits
from acidflow.read import table as reads
from acidflow.spark import acid_reader_jar
from acidflow.storage.fs import TableFS
from acidflow.tableops.schema import alter_table
from tests.integration.test_engine_read import churn, delete_ids, make, rows_of, upsert

pytestmark = [pytest.mark.spark]

if acid_reader_jar() is None:  # CI must run these tests, not skip them
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true and make jvm-reader has not built the jar", pytrace=False)
    pytest.skip("make jvm-reader has not built the jar", allow_module_level=True)


def _canon(t: pa.Table) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in t.to_pylist())


def assert_same(spark, plan, *, split_bytes=None, project=None, where=None) -> int:
    """The JVM reader and read_arrow give the same columns and rows (and read_spark's Spark
    types); the JVM reader ran (a BatchScan of its source, no Python node)."""
    preds = predicates.parse_where(where, plan.columns, plan.partition_columns) or None
    want = snapshot.read_arrow(
        TableFS(plan.table_dir), plan, project=project, where=preds, split_bytes=split_bytes
    )
    got = jvm.read_jvm(spark, plan, project=project, where=preds, split_bytes=split_bytes)
    arrow_df = snapshot.read_spark(spark, plan.table_dir, plan, project=project)
    assert [(f.name, f.dataType) for f in got.schema] == [
        (f.name, f.dataType) for f in arrow_df.schema
    ]
    physical = got._jdf.queryExecution().executedPlan().toString()
    assert "acidflow-snapshot" in physical and "Python" not in physical, physical
    got_t = got.toArrow()
    assert got_t.column_names == want.column_names
    assert _canon(got_t) == _canon(want)
    return want.num_rows


SHAPES = [
    pytest.param(p, b, id=f"{'part' if p else 'flat'}-b{b}") for p in (False, True) for b in (0, 2)
]


@pytest.mark.parametrize("partitioned,buckets", SHAPES)
def test_deltas_deletes_aborted_time_travel_pruning_filters(spark, catalog, partitioned, buckets):
    name = "db.churn"
    make(catalog, name, partitioned=partitioned, buckets=buckets)
    churn(catalog, name, partitioned)
    plan = reads.plan_table(catalog, name)
    paths = {f.path for t in plan.tasks for f in t.data_files}
    paths |= {p for t in plan.tasks for p in t.delete_files}
    infos = engine.file_infos(TableFS(plan.table_dir), sorted(paths))
    assert jvm.jvm_fallback_reason(plan, infos) is None
    if partitioned:
        assert "ds=__HIVE_DEFAULT_PARTITION__" in {t.partition for t in plan.tasks}
    assert plan.tasks and any(t.delete_files for t in plan.tasks)
    for as_of in (None, 1, 2, 3, 5):
        assert_same(spark, reads.plan_table(catalog, name, as_of_write_id=as_of))
    assert assert_same(spark, plan) > 0
    assert_same(spark, plan, project=["name"])
    assert_same(spark, plan, project=[])
    assert_same(spark, plan, where=[("id", ">=", 5), ("flag", "=", False)])
    assert_same(spark, plan, project=["amount"], where=[("name", "in", ["a3", "b3", "c6"])])


@pytest.mark.slow
def test_splits_finer_than_a_bucket(spark, catalog):
    """Buckets cut into stripe ranges (one stripe per few hundred rows): each split loads the
    delete events of its key ranges; the rows equal the unsplit read."""
    name = "db.split"
    make(catalog, name, partitioned=True, buckets=2)

    def small_stripes(rows: pa.Table) -> None:
        with Transaction(catalog, heartbeat_s=0) as txn:
            txn.upsert(name, rows, stripe_rows=500, compression="none")

    small_stripes(rows_of(list(range(6000)), "a", True))
    delete_ids(catalog, name, list(range(0, 6000, 7)))
    small_stripes(rows_of(list(range(0, 6000, 11)), "b", True))
    plan = reads.plan_table(catalog, name)
    tfs = TableFS(plan.table_dir)
    split = splits.split_tasks(tfs, plan.tasks, 1)
    assert len(split) > len(plan.tasks), "no bucket was cut into stripe ranges"
    assert any(t.key_ranges for t in split)
    n = assert_same(spark, plan, split_bytes=1)
    assert (
        n
        == assert_same(spark, plan)
        == 6000 - len(range(0, 6000, 7)) + sum(1 for i in range(0, 6000, 11) if i % 7 == 0)
    )
    # a key range: the driver cuts each file to the stripes whose statistics may match
    paths = sorted({f.path for t in split for f in t.data_files})
    infos = engine.file_infos(tfs, paths)

    def stripes(tasks) -> int:
        return sum(
            (f.stripes[1] - f.stripes[0]) if f.stripes else infos[f.path].stripes
            for t in tasks
            for f in t.data_files
        )

    where = [("id", ">=", 1000), ("id", "<", 1100)]
    preds = predicates.parse_where(where, plan.columns, plan.partition_columns)
    pruned = jvm.prune_stripes(tfs, plan, split, infos, preds)
    assert 0 < stripes(pruned) < stripes(split)
    deleted, back = range(1001, 1100, 7), range(1001, 1100, 77)  # deleted, then re-inserted
    assert assert_same(spark, plan, split_bytes=1, where=where) == 100 - len(deleted) + len(back)
    assert assert_same(spark, plan, where=[("id", "in", [5, 3001, 6001])]) == 2


def test_schema_evolution_added_column_int_to_bigint(spark, catalog):
    name = "db.evolved"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("qty", "int"), Column("note", "varchar(10)")],
            primary_key=["id"],
        )
    )

    def batch(ids, tag):
        return pa.table(
            {
                "id": pa.array(ids, pa.int32()),
                "qty": pa.array([i * 3 for i in ids], pa.int32()),
                "note": pa.array([f"{tag}{i}" for i in ids], pa.string()),
            }
        )

    upsert(catalog, name, batch(list(range(12)), "a"))
    upsert(catalog, name, batch([1, 2, 3, 12], "bb"))
    alter_table(catalog, name, change_type=("qty", "bigint"))
    alter_table(catalog, name, change_type=("note", "string"))
    alter_table(catalog, name, add_columns=[Column("extra", "binary")])
    new = batch([2, 40], "c").append_column("extra", pa.array([b"\x00e2", b"e40"], pa.binary()))
    new = new.set_column(1, "qty", pa.array([2**40, 7], pa.int64()))
    upsert(catalog, name, new)
    delete_ids(catalog, name, [3])
    for as_of in (None, 2, 4):
        assert_same(spark, reads.plan_table(catalog, name, as_of_write_id=as_of))
    assert_same(spark, reads.plan_table(catalog, name), project=["qty", "extra"])


FIXTURES = [
    ("trino-nation-delete-deltas", {}),
    ("trino-nation-delete-deltas", {"high_watermark": 3}),
    ("trino-nation-delete-deltas", {"high_watermark": 4, "aborted_write_ids": [3]}),
]


@pytest.mark.parametrize("fixture,kw", FIXTURES, ids=lambda v: str(v))
def test_hive_written_fixtures(spark, fixtures_dir, fixture, kw):
    plan = reads.plan_path(str(fixtures_dir / fixture / "table"), **kw)
    assert assert_same(spark, plan) > 0


def test_ineligible_plans_fall_back_and_say_why(spark, catalog, fixtures_dir, caplog):
    # original (pre-ACID) files: Hive-written
    plan = reads.plan_path(str(fixtures_dir / "trino-original-file-nation" / "table"))
    assert "original (pre-ACID) file" in (jvm.jvm_fallback_reason(plan, {}) or "")
    # a timestamp column, ROW__ID
    name = "db.ts"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "bigint"), Column("at", "timestamp")],
            primary_key=["id"],
        )
    )
    upsert(catalog, name, pa.table({"id": [1, 2], "at": pa.array([0, 10**6], pa.timestamp("us"))}))
    plan = reads.plan_table(catalog, name)
    tfs = TableFS(plan.table_dir)
    infos = engine.file_infos(tfs, [f.path for t in plan.tasks for f in t.data_files])
    assert jvm.jvm_fallback_reason(plan, infos) == "column 'at' has type timestamp"
    ok = reads.plan_table(catalog, "db.ts")
    assert jvm.jvm_fallback_reason(ok, infos, row_id=True) == "ROW__ID asked"
    with caplog.at_level(logging.INFO, logger="acidflow.read.jvm"):
        df = jvm.read_jvm(spark, plan)
    assert "MapInArrow" in df._jdf.queryExecution().executedPlan().toString()
    assert sorted(r.id for r in df.collect()) == [1, 2]
    assert "column 'at' has type timestamp" in caplog.text


def test_read_table_uses_it_by_default_when_built(spark, catalog, monkeypatch):
    name = "db.default"
    make(catalog, name, partitioned=True, buckets=0)
    churn(catalog, name, True)
    monkeypatch.delenv(engine.READER_ENV, raising=False)
    assert engine.reader_setting() == engine.JVM
    df = reads.read_table(spark, catalog, name, columns=["name", "ds"], where=[("id", "<", 30)])
    assert "acidflow-snapshot" in df._jdf.queryExecution().executedPlan().toString()
    monkeypatch.setenv(engine.READER_ENV, "arrow")
    arrow = reads.read_table(spark, catalog, name, columns=["name", "ds"], where=[("id", "<", 30)])
    assert sorted(map(repr, arrow.collect())) == sorted(map(repr, df.collect()))
