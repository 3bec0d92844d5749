"""Predicate UPDATE and DELETE (``txn.update`` / ``txn.delete(where=)``) through real Spark
into real ORC files: keyed and unkeyed, partitioned and not, bucketed and not, each result
equal to the same statements run on a plain Spark DataFrame; refusals write nothing; two
overlapping updates of the same rows cannot both commit (Hive's write set)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from acidflow.catalog import TableDef
from acidflow.catalog.errors import WriteConflictError
from acidflow.engine.statements import dml
from acidflow.engine.statements.dml import DmlError
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads
from tests.support import dml_tables
from tests.support.dml_tables import LAYOUTS, SCHEMA, table_rows, tree

pytestmark = pytest.mark.spark

ROWS = [(i, f"v{i}", i * 3, "eu" if i % 3 else "us") for i in range(40)]

# layout name -> TableDef keyword arguments (region is a partition column where named)


def make(spark, catalog, layout: str, name: str = "db.t") -> TableDef:
    return dml_tables.make(spark, catalog, layout, ROWS, name)


def frame_rows(df):
    return collections.Counter(tuple(r) for r in df.select("id", "v", "amt", "region").collect())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_update_and_delete_equal_the_same_statements_on_a_dataframe(spark, catalog, layout):
    make(spark, catalog, layout)
    plain = spark.createDataFrame(ROWS, SCHEMA)

    with Transaction(catalog) as txn:
        res = txn.update("db.t", "amt > 20", set={"amt": "amt * 2", "v": F.upper(F.col("v"))})
    hit = F.col("amt") > 20
    plain = plain.select(
        "id",
        F.when(hit, F.upper("v")).otherwise(F.col("v")).alias("v"),
        F.when(hit, F.col("amt") * 2).otherwise(F.col("amt")).alias("amt"),
        "region",
    )
    assert res.rows_updated == 33 and res.rows_inserted == 0
    assert table_rows(catalog) == frame_rows(plain)

    with Transaction(catalog) as txn:
        res = txn.delete("db.t", where="id % 5 = 0")
    plain = plain.where("NOT (id % 5 = 0)")
    assert res.rows_deleted == 8
    assert table_rows(catalog) == frame_rows(plain)

    # a partition-only predicate, and a Column predicate; two statements in one transaction
    with Transaction(catalog) as txn:
        up = txn.update("db.t", F.col("region") == "us", set={"v": "concat(t.v, '!')"})
        gone = txn.delete("db.t", where=(F.col("region") == "eu") & (F.col("id") < 10))
    plain = plain.withColumn(
        "v", F.when(F.col("region") == "us", F.concat("v", F.lit("!"))).otherwise(F.col("v"))
    ).where("NOT (region = 'eu' AND id < 10)")
    assert up.rows_updated == plain.where("region = 'us'").count()
    assert gone.rows_deleted == 5
    assert table_rows(catalog) == frame_rows(plain)

    # time travel still sees the table before the statements
    assert collections.Counter(
        tuple(r.values())
        for r in reads.read_table(None, catalog, "db.t", as_of_write_id=1)
        .select(["id", "v", "amt", "region"])
        .to_pylist()
    ) == collections.Counter(ROWS)
    ops = [r.stats["operations"] for r in catalog.commit_records("db.t")]
    assert ops[1:] == [["update"], ["delete"], ["update", "delete"]]


def test_update_without_where_and_literals(spark, catalog):
    make(spark, catalog, "keyed")
    with Transaction(catalog) as txn:
        res = txn.update("db.t", set={"amt": 7, "v": "'same'"})
    assert res.rows_updated == 40
    assert set(table_rows(catalog)) == {(i, "same", 7, "eu" if i % 3 else "us") for i in range(40)}


def test_partition_only_predicates_read_only_their_partitions(spark, catalog):
    table = make(spark, catalog, "keyed-partitioned")
    paths = ["region=eu", "region=us"]
    assert dml._partitions_kept(spark, table, paths, F.expr("region = 'us'")) == {"region=us"}
    assert dml._partitions_kept(spark, table, paths, F.expr("region IN ('eu', 'us')")) == set(paths)
    assert dml._partitions_kept(spark, table, paths, F.expr("id > 3")) is None
    assert dml._partitions_kept(spark, table, paths, F.expr("region = 'us' AND id > 3")) is None
    with Transaction(catalog, spark=spark) as txn:
        rows = dml.target_rows(spark, txn, table, F.expr("t.region = 'us'"))
        assert {r["region"] for r in rows.collect()} == {"us"}


def test_data_column_predicate_on_a_partitioned_table_logs_no_analysis_error(spark, catalog, capfd):
    """Deciding which partitions an UPDATE reads never runs an analysis that fails: PySpark
    logs every failed analysis at ERROR level with its stack, which read as a failure."""
    make(spark, catalog, "keyed-partitioned")
    capfd.readouterr()
    with Transaction(catalog, spark=spark) as txn:
        res = txn.update("db.t", "amt > 90", set={"v": "'big'"})
    out, err = capfd.readouterr()
    assert res.rows_updated == sum(1 for r in ROWS if r[2] > 90)
    assert "UNRESOLVED_COLUMN" not in out + err and "ERROR" not in err


@pytest.mark.parametrize(
    "layout, column, reason",
    [
        ("keyed", "id", "part of the primary key"),
        ("keyed-partitioned", "region", "partition columns is not supported"),
        ("unkeyed-partitioned-bucketed", "id", "bucketing columns is not supported"),
        ("unkeyed-partitioned-bucketed", "region", "partition columns is not supported"),
        ("keyed", "nope", "no column 'nope'"),
    ],
)
def test_refused_updates_write_nothing(spark, catalog, layout, column, reason):
    table = make(spark, catalog, layout)
    before = tree(Path(table.location))
    hwm = catalog.valid_write_ids("db.t").high_watermark
    with pytest.raises(DmlError, match=reason):
        with Transaction(catalog) as txn:
            txn.update("db.t", "id = 3", set={column: "1"})
    assert tree(Path(table.location)) == before
    assert catalog.valid_write_ids("db.t").high_watermark == hwm
    assert len(catalog.commit_records("db.t")) == 1
    with pytest.raises(DmlError, match="not a valid Spark SQL expression"):
        with Transaction(catalog) as txn:
            txn.delete("db.t", where="id = = 3")
    assert tree(Path(table.location)) == before


def test_delete_by_key_still_works_and_needs_one_form(spark, catalog):
    make(spark, catalog, "keyed-bucketed")
    with Transaction(catalog) as txn:
        assert txn.delete("db.t", spark.createDataFrame([(3,), (99,)], "id int")).rows_deleted == 1
    with pytest.raises(ValueError, match="either keys_df"):
        with Transaction(catalog) as txn:
            txn.delete("db.t")
    assert 3 not in {r[0] for r in table_rows(catalog)}


@pytest.mark.parametrize("layout", ["keyed-bucketed", "unkeyed"])
def test_overlapping_updates_of_the_same_rows_conflict(spark, catalog, layout):
    make(spark, catalog, layout)
    first = Transaction(catalog, spark=spark, heartbeat_s=0)
    second = Transaction(catalog, spark=spark, heartbeat_s=0)
    first.begin()
    second.begin()
    first.update("db.t", "id = 4", set={"v": "'first'"})
    second.update("db.t", "id = 4", set={"v": "'second'"})
    first.commit()
    with pytest.raises(WriteConflictError):
        second.commit()
    rows = table_rows(catalog)
    assert [r for r in rows if r[0] == 4] == [(4, "first", 12, "eu")]
    assert sum(rows.values()) == 40
