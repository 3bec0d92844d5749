"""Predicate pushdown and column selection in the ``acid`` Spark data source: Spark's filters
reach ``AcidReader.pushFilters`` (``spark.sql.python.filterPushdown.enabled``), partition
filters drop read tasks, data filters skip stripes and are applied exactly; the rows equal an
unfiltered read filtered in Python, and ``explain("formatted")`` lists what the source
applies itself. Real Spark, a SQLite catalog, ORC files on disk."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from acidflow import datasource
from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.datasource.common import AcidDataSourceError
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

pytestmark = pytest.mark.spark

N = 3000


@pytest.fixture
def catalog(warehouse, spark):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    datasource.register(spark)  # bind the source to this test's warehouse
    return cat


def _table(catalog):
    name = "db.pd"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("k", "int"),
                Column("s", "string"),
                Column("d", "decimal(10,2)"),
                Column("day", "date"),
                Column("x", "double"),
            ],
            partition_columns=[Column("p", "int")],
            primary_key=["k"],
        )
    )

    def rows(ids, tag):
        return pa.table(
            {
                "k": pa.array(ids, pa.int32()),
                "s": pa.array([f"{tag}{i:05d}" for i in ids]),
                "d": pa.array([Decimal(i) / 10 for i in ids], pa.decimal128(10, 2)),
                "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in ids]),
                "x": pa.array([None if i % 4 == 0 else i / 2 for i in ids], pa.float64()),
                "p": pa.array([i % 3 for i in ids], pa.int32()),
            }
        )

    for batch in (rows(list(range(N)), "a"), rows(list(range(0, N, 11)), "b")):
        with Transaction(catalog) as txn:  # the second: split-updates (delete deltas)
            txn.upsert(name, batch, stripe_rows=1024, compression="none")
    return name


def _python_filter(catalog, name, keep):
    return sorted(
        (r["k"], r["s"]) for r in reads.read_table(None, catalog, name).to_pylist() if keep(r)
    )


def _explained(df) -> str:
    """What ``df.explain("formatted")`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain("formatted")
    return out.getvalue()


@pytest.mark.slow
def test_pushed_filters_same_rows_and_explained(spark, catalog):
    name = _table(catalog)
    src = spark.read.format("acid").load(name)
    assert src.rdd.getNumPartitions() == 3
    cases = [
        (
            (F.col("k") == 77) & (F.col("p") == 2),
            lambda r: r["k"] == 77 and r["p"] == 2,
            ["EqualTo(k,77)", "EqualTo(p,2)"],
        ),
        (
            F.col("s").isin("a00010", "b00011", "zz"),
            lambda r: r["s"] in ("a00010", "b00011"),
            ["In(s,"],
        ),
        (
            (F.col("d") >= Decimal("250.05")) & (F.col("day") < dt.date(2028, 3, 1)),
            lambda r: r["d"] >= Decimal("250.05") and r["day"] < dt.date(2028, 3, 1),
            ["GreaterThanOrEqual(d,250.05)", "LessThan(day,"],
        ),
        (F.col("x").isNull() & (F.col("k") < 40), lambda r: r["x"] is None and r["k"] < 40, []),
        (F.col("x") > 1400.0, lambda r: r["x"] is not None and r["x"] > 1400.0, []),
    ]
    for cond, keep, shown in cases:
        df = src.filter(cond)
        got = sorted((r["k"], r["s"]) for r in df.collect())
        assert got == _python_filter(catalog, name, keep)
        plan = _explained(df)
        pushed = next((ln for ln in plan.splitlines() if ln.startswith("PushedFilters")), "")
        for text in shown:
            assert text in pushed, plan
    # a double column's filter is pushed for stripe skipping but Spark still evaluates it
    plan = _explained(src.filter(F.col("x") > 1400.0))
    assert any("Condition" in line and "> 1400.0" in line for line in plan.splitlines()), plan
    plan = _explained(src.filter(F.col("k") == 77))
    assert not any("Condition" in line for line in plan.splitlines()), plan
    # partition pruning: only the matching partition's read tasks remain
    assert src.filter(F.col("p") == 1).rdd.getNumPartitions() == 1


def test_columns_option(spark, catalog):
    name = _table(catalog)
    df = spark.read.format("acid").option("columns", "s, p,k").load(name)
    assert df.columns == ["s", "p", "k"]
    got = sorted((r["k"], r["s"]) for r in df.filter(F.col("k") < 5).collect())
    assert got == _python_filter(catalog, name, lambda r: r["k"] < 5)
    with pytest.raises(Exception, match="no column 'nope'"):
        spark.read.format("acid").option("columns", "k,nope").load(name).schema
    assert issubclass(AcidDataSourceError, ValueError)


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["arrow", "engine"])
def test_read_table_with_spark_executors(spark, catalog, monkeypatch, reader):
    """``read_table(spark, columns=, where=)`` on both Spark executors: the rows and columns
    of the pyarrow read."""
    monkeypatch.setenv("ACIDFLOW_SPARK_READER", reader)
    name = _table(catalog)
    where = [("p", "in", [0, 2]), ("k", "<", 300), ("d", ">=", Decimal("10.00")), ("x", "is null")]
    want = reads.read_table(None, catalog, name, columns=["s", "k", "p"], where=where)
    df = reads.read_table(spark, catalog, name, columns=["s", "k", "p"], where=where)
    assert df.columns == ["s", "k", "p"]
    assert sorted(tuple(r) for r in df.collect()) == sorted(
        tuple(r.values()) for r in want.to_pylist()
    )
    assert want.num_rows == len([i for i in range(100, 300) if i % 3 != 1 and i % 4 == 0])
