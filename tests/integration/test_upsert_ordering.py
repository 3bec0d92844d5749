"""``Transaction.upsert(..., ordering_field=...)`` (Hudi's precombine field): the newer version
of a key wins within the batch and against the table, late rows are skipped and counted, on
Spark DataFrames and pyarrow Tables, partitioned and not, bucketed and not."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.engine.conform import DuplicateKeyError
from acidflow.engine.ordering import OrderingFieldError
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

pytestmark = pytest.mark.spark

SCHEMA = "id int, v string, ts bigint, region string"

LAYOUTS = {
    "plain": {},
    "bucketed": {"num_buckets": 4},
    "partitioned": {"partition_columns": [Column("region", "string")]},
    "partitioned-bucketed": {
        "partition_columns": [Column("region", "string")],
        "num_buckets": 2,
        "bucket_columns": ["id"],
    },
}


def make(catalog, layout: str, **kw) -> TableDef:
    opts = dict(LAYOUTS[layout])
    cols = [Column("id", "int"), Column("v", "string"), Column("ts", "bigint")]
    key = ["id"]
    if "partition_columns" in opts:
        key = ["id", "region"]
    else:
        cols.append(Column("region", "string"))
    return catalog.create_table(TableDef(name="db.t", columns=cols, primary_key=key, **opts, **kw))


def state(catalog):
    return {r["id"]: (r["v"], r["ts"]) for r in reads.read_table(None, catalog, "db.t").to_pylist()}


INITIAL = [
    (1, "one", 10, "eu"),
    (2, "two", 10, "eu"),
    (3, "three", 10, "us"),
    (4, "four", 10, "us"),
]
# id 1 older (late), id 2 equal (late: the stored row wins ties), id 3 twice in the batch (20
# wins over 15), id 4 NULL (late: NULL is older than any value), id 5 new with NULL, id 6 twice
# with equal values (the later one in input order wins)
BATCH = [
    (1, "one-old", 5, "eu"),
    (2, "two-tie", 10, "eu"),
    (3, "three-20", 20, "us"),
    (3, "three-15", 15, "us"),
    (4, "four-null", None, "us"),
    (5, "five", None, "eu"),
    (6, "six-a", 7, "eu"),
    (6, "six-b", 7, "eu"),
]
EXPECTED = {
    1: ("one", 10),
    2: ("two", 10),
    3: ("three-20", 20),
    4: ("four", 10),
    5: ("five", None),
    6: ("six-b", 7),
}


def arrow_batch(rows):
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int32()),
            "v": [r[1] for r in rows],
            "ts": pa.array([r[2] for r in rows], pa.int64()),
            "region": [r[3] for r in rows],
        }
    )


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("engine", ["spark", "arrow"])
def test_newer_version_wins_and_late_rows_are_skipped(spark, catalog, layout, engine):
    make(catalog, layout, ordering_column="ts")
    with Transaction(catalog) as txn:
        txn.insert("db.t", spark.createDataFrame(INITIAL, SCHEMA))
    batch = (
        spark.createDataFrame(BATCH, SCHEMA).coalesce(1)
        if engine == "spark"
        else arrow_batch(BATCH)
    )
    with Transaction(catalog, spark=spark) as txn:
        res = txn.upsert("db.t", batch)
    assert (res.rows_updated, res.rows_inserted, res.rows_skipped_late) == (1, 2, 3)
    assert state(catalog) == EXPECTED
    stats = catalog.commit_records("db.t")[-1].stats
    assert stats["rows_skipped_late"] == 3 and stats["rows_updated"] == 1
    # replaying the same batch changes nothing: every row is now as old as the stored one
    with Transaction(catalog, spark=spark) as txn:
        again = txn.upsert("db.t", batch)
    assert (again.rows_updated, again.rows_inserted) == (0, 0)
    assert again.rows_skipped_late == 6  # one winner per key of the batch, all late now
    assert state(catalog) == EXPECTED


def test_explicit_field_and_turning_ordering_off(spark, catalog):
    make(catalog, "plain")  # no declared ordering column
    with Transaction(catalog) as txn:
        txn.insert("db.t", spark.createDataFrame(INITIAL, SCHEMA))
    older = spark.createDataFrame([(1, "one-old", 5, "eu")], SCHEMA)
    with Transaction(catalog) as txn:  # no declared column: plain upsert, overwrites
        assert txn.upsert("db.t", older).rows_updated == 1
    assert state(catalog)[1] == ("one-old", 5)
    with Transaction(catalog) as txn:
        res = txn.upsert(
            "db.t",
            spark.createDataFrame([(1, "x", 4, "eu"), (2, "y", 11, "eu")], SCHEMA),
            ordering_field="ts",
        )
    assert (res.rows_updated, res.rows_skipped_late) == (1, 1)
    assert state(catalog)[1] == ("one-old", 5) and state(catalog)[2] == ("y", 11)
    with pytest.raises(OrderingFieldError, match="'nope' is not a column"):
        with Transaction(catalog) as txn:
            txn.upsert("db.t", older, ordering_field="nope")


def test_ordering_none_turns_a_declared_column_off(spark, catalog):
    make(catalog, "bucketed", ordering_column="ts")
    with Transaction(catalog) as txn:
        txn.insert("db.t", spark.createDataFrame(INITIAL, SCHEMA))
    with Transaction(catalog) as txn:
        res = txn.upsert("db.t", arrow_batch([(1, "one-old", 5, "eu")]), ordering_field=None)
    assert res.rows_updated == 1 and state(catalog)[1] == ("one-old", 5)
    dup = spark.createDataFrame([(3, "a", 12, "us"), (3, "b", 11, "us")], SCHEMA)
    for batch in (dup, arrow_batch([(3, "a", 12, "us"), (3, "b", 11, "us")])):
        with pytest.raises(DuplicateKeyError):
            with Transaction(catalog) as txn:
                txn.upsert("db.t", batch, ordering_field=None)
    # with the declared column the same batch is fine: the newer row wins
    with Transaction(catalog) as txn:
        assert txn.upsert("db.t", dup).rows_updated == 1
    assert state(catalog)[3] == ("a", 12)
