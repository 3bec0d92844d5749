"""MERGE (``txn.merge(...).when_...().execute()``) through real Spark into real ORC files:
keyed and unkeyed, partitioned and not, bucketed and not, each result equal to the same MERGE
computed on plain Python rows; clause order, cardinality and key refusals write nothing."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from acidflow.catalog import Column, TableDef
from acidflow.engine.statements.dml import DmlError
from acidflow.engine.statements.merge import (
    CardinalityViolationError,
    MergeBuilder,
    source_partitions,
)
from acidflow.engine.transaction import Transaction
from tests.support import dml_tables
from tests.support.dml_tables import LAYOUTS, SCHEMA, table_rows, tree

pytestmark = pytest.mark.spark

ROWS = [(i, f"v{i}", i * 3, "eu" if i % 3 else "us") for i in range(30)]
SRC_SCHEMA = "id int, v string, amt bigint, region string, op string"
# updates of existing ids, deletes of existing ids, new ids (one of them flagged D: skipped)
SOURCE = (
    [(i, f"new{i}", i * 100, "eu" if i % 3 else "us", "U") for i in range(0, 30, 4)]
    + [(i, None, None, "eu" if i % 3 else "us", "D") for i in (1, 5, 9, 13, 17)]
    + [(i, f"ins{i}", i, "eu" if i % 2 else "us", "I") for i in range(30, 36)]
    + [(40, "never", 0, "us", "D")]
)


def make(spark, catalog, layout: str, name: str = "db.t") -> TableDef:
    return dml_tables.make(spark, catalog, layout, ROWS, name)


def expected_merge(target, source):
    """The same MERGE on Python rows: matched on (id, region); D deletes; a matched row with
    amt > 1000 in the source keeps its v (first clause), else takes v and amt; unmatched
    non-D rows are inserted."""
    out = {(r[0], r[3]): r for r in target}
    for sid, sv, samt, sreg, op in source:
        k = (sid, sreg)
        if k in out:
            if op == "D":
                del out[k]
            elif samt > 1000:
                out[k] = (sid, out[k][1], samt, sreg)
            else:
                out[k] = (sid, sv, samt, sreg)
        elif op != "D":
            out[k] = (sid, sv, samt, sreg)
    return collections.Counter(out.values())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_merge_equals_the_same_merge_on_plain_rows(spark, catalog, layout):
    make(spark, catalog, layout)
    src = spark.createDataFrame(SOURCE, SRC_SCHEMA)
    with Transaction(catalog) as txn:
        res = (
            txn.merge("db.t", src, on="t.id = s.id AND t.region = s.region")
            .when_matched_delete(condition="s.op = 'D'")
            .when_matched_update(set={"amt": "s.amt"}, condition=F.col("s.amt") > 1000)
            .when_matched_update(set={"v": "s.v", "amt": F.col("s.amt")})
            .when_not_matched_insert(condition="s.op <> 'D'")
            .execute()
        )
    want = expected_merge(ROWS, SOURCE)
    assert table_rows(catalog) == want
    assert (res.rows_updated, res.rows_deleted, res.rows_inserted) == (8, 5, 6)
    rec = catalog.commit_records("db.t")[-1].stats
    assert rec["operations"] == ["merge"] and rec["rows_deleted"] == 5


def test_merge_on_key_columns_with_explicit_values(spark, catalog):
    make(spark, catalog, "keyed-bucketed")
    src = spark.createDataFrame([(1, "x", 5, "eu"), (50, "y", 6, "us")], SCHEMA)
    with Transaction(catalog) as txn:
        res = (
            txn.merge("db.t", src, on=["id"])
            .when_matched_update(set={"amt": "t.amt + s.amt"})
            .when_not_matched_insert(values={"id": "s.id", "region": "s.region", "v": "upper(s.v)"})
            .execute()
        )
    assert (res.rows_updated, res.rows_inserted) == (1, 1)
    rows = {r[0]: r for r in table_rows(catalog)}
    assert rows[1] == (1, "v1", 8, "eu") and rows[50] == (50, "Y", None, "us")
    assert len(rows) == 31


def test_merge_source_with_two_rows_for_one_target_row_is_refused(spark, catalog):
    table = make(spark, catalog, "keyed-partitioned")
    before = tree(Path(table.location))
    src = spark.createDataFrame([(3, "a", 1, "us"), (3, "b", 2, "us"), (99, "c", 3, "eu")], SCHEMA)
    with pytest.raises(
        CardinalityViolationError,
        match=r"2 source rows match the target row with key \{'id': 3, "
        r"'region': 'us'\}",
    ):
        with Transaction(catalog) as txn:
            txn.merge("db.t", src, on=["id", "region"]).when_matched_update(
                set={"v": "s.v"}
            ).when_not_matched_insert().execute()
    assert tree(Path(table.location)) == before
    assert catalog.valid_write_ids("db.t").high_watermark == 1
    # insert-only MERGE: duplicate matches do not matter, but duplicate new keys do
    with pytest.raises(DmlError, match="would write 2 rows with primary key"):
        with Transaction(catalog) as txn:
            txn.merge(
                "db.t",
                spark.createDataFrame([(77, "a", 1, "us"), (77, "b", 2, "us")], SCHEMA),
                on=["id", "region"],
            ).when_not_matched_insert().execute()
    assert tree(Path(table.location)) == before


@pytest.mark.parametrize(
    "clause, reason",
    [
        ("update-key", "part of the primary key"),
        ("update-partition", "partition columns is not supported"),
        ("insert-existing-key", "which the table already holds"),
        ("insert-without-key", "no value for primary key"),
        ("no-clause", "no when_matched"),
    ],
)
def test_merge_refusals_write_nothing(spark, catalog, clause, reason):
    table = make(spark, catalog, "keyed-partitioned")
    before = tree(Path(table.location))
    src = spark.createDataFrame([(3, "zz", 1, "us")], SCHEMA)
    with pytest.raises(DmlError, match=reason):
        with Transaction(catalog) as txn:
            m = txn.merge("db.t", src, on="t.id = s.id AND t.v = s.v")
            if clause == "update-key":
                m.when_matched_update(set={"id": "s.id + 1"})
            elif clause == "update-partition":
                m.when_matched_update(set={"region": "'eu'"})
            elif clause == "insert-existing-key":
                m.when_not_matched_insert()
            elif clause == "insert-without-key":
                m.when_not_matched_insert(values={"v": "s.v"})
            m.execute()
    assert tree(Path(table.location)) == before
    assert len(catalog.commit_records("db.t")) == 1


def test_unkeyed_merge_updates_every_matched_row_once(spark, catalog):
    make(spark, catalog, "unkeyed")
    src = spark.createDataFrame([("eu", 1)], "region string, bump bigint")
    with Transaction(catalog) as txn:
        res = (
            txn.merge("db.t", src, on="t.region = s.region")
            .when_matched_update(set={"amt": "t.amt + s.bump"})
            .execute()
        )
    assert res.rows_updated == 20
    assert table_rows(catalog) == collections.Counter(
        (i, f"v{i}", i * 3 + (1 if r == "eu" else 0), r) for i, _, _, r in ROWS
    )


def test_merge_on_keys_with_the_partition_columns_reads_only_the_source_partitions(spark, catalog):
    table = make(spark, catalog, "keyed-partitioned")
    src = spark.createDataFrame([(3, "x", 1, "us"), (99, "y", 2, "us")], SCHEMA)
    with Transaction(catalog) as txn:
        assert source_partitions(MergeBuilder(txn, "db.t", src, ["id", "region"]), table) == {
            "region=us"
        }
        assert source_partitions(MergeBuilder(txn, "db.t", src, ["id"]), table) is None
        assert source_partitions(MergeBuilder(txn, "db.t", src, "t.id = s.id"), table) is None
        # a key without the partition column may sit in any partition: read them all
        by_id = catalog.create_table(
            TableDef(
                name="db.k",
                columns=[Column("id", "int"), Column("v", "string"), Column("amt", "bigint")],
                partition_columns=[Column("region", "string")],
                primary_key=["id"],
            )
        )
        assert source_partitions(MergeBuilder(txn, "db.k", src, ["id", "region"]), by_id) is None
        res = (
            txn.merge("db.t", src, on=["id", "region"])
            .when_matched_update(set={"v": "s.v"})
            .when_not_matched_insert()
            .execute()
        )
    assert (res.rows_updated, res.rows_inserted) == (1, 1)
    # only the 'us' partition got new directories
    assert not [
        p
        for p in (Path(table.location) / "region=eu").iterdir()
        if p.name.startswith(("delta_0000002", "delete_delta_0000002"))
    ]
    rows = {r[0]: r for r in table_rows(catalog)}
    assert rows[3] == (3, "x", 9, "us") and rows[99] == (99, "y", 2, "us") and len(rows) == 31
