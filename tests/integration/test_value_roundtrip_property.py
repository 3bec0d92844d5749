"""Property: any value Hive allows round-trips exactly through every write and read path -
decimal(38,18) extremes, double NaN / ±infinity / -0.0, unicode and control characters in
strings and varchar, binary, microsecond timestamps over 0001..9999, dates, NULLs - written by
the pyarrow path (no JVM), by Spark, and rewritten by a major compaction, read back by pyarrow
and by Spark (hypothesis generates the rows)."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidflow.catalog import Column, TableDef
from acidflow.compactor.worker import run_worker
from acidflow.engine.transaction import Transaction
from acidflow.format.types import arrow_schema
from acidflow.read.table import read_table

pytestmark = pytest.mark.spark

COLUMNS = [
    ("k", "int"),
    ("dec", "decimal(38,18)"),
    ("dbl", "double"),
    ("s", "string"),
    ("vc", "varchar(12)"),
    ("bin", "binary"),
    ("ts", "timestamp"),
    ("d", "date"),
]
SCHEMA = arrow_schema(COLUMNS)
_names = itertools.count()

decimals = st.decimals(
    min_value=Decimal("-99999999999999999999.999999999999999999"),
    max_value=Decimal("99999999999999999999.999999999999999999"),
    places=18,
    allow_nan=False,
    allow_infinity=False,
)
doubles = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 5e-324])
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
# timestamps Hive and ORC can store (the second before 1970 with a fraction cannot be stored)
timestamps = st.datetimes(
    dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
).filter(lambda v: not (dt.datetime(1969, 12, 31, 23, 59, 59) < v < dt.datetime(1970, 1, 1)))
rows = st.lists(
    st.tuples(
        st.none() | decimals,
        st.none() | doubles,
        st.none() | texts,
        st.none() | st.text(max_size=12),
        st.none() | st.binary(max_size=20),
        st.none() | timestamps,
        st.none() | st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)),
    ),
    min_size=1,
    max_size=12,
)


def batch(values: list[tuple]) -> pa.Table:
    cols = list(zip(*values))
    arrays = [pa.array(range(len(values)), pa.int32())]
    arrays += [pa.array(list(c), f.type) for c, f in zip(cols, list(SCHEMA)[1:])]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def assert_rows_equal(got: list[dict], expected: pa.Table) -> None:
    want = {r["k"]: r for r in expected.to_pylist()}
    by_key = {r["k"]: r for r in got}
    assert sorted(by_key) == sorted(want)
    for k, w in want.items():
        g = by_key[k]
        for name, _ in COLUMNS:
            assert same(g[name], w[name]), (name, g[name], w[name])


def new_table(catalog) -> str:
    name = f"prop.t{next(_names)}"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column(n, t) for n, t in COLUMNS],
            primary_key=["k"],
            bucket_columns=["k"],
            num_buckets=2,
        )
    )
    return name


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=rows)
def test_values_round_trip_on_the_pyarrow_path_and_through_compaction(catalog, values):
    name = new_table(catalog)
    expected = batch(values)
    with Transaction(catalog, heartbeat_s=0) as txn:
        txn.upsert(name, expected)
    assert_rows_equal(read_table(None, catalog, name).to_pylist(), expected)
    entry = catalog.enqueue_compaction(name, None, "major")
    run_worker(None, catalog, cq_id=entry.id)
    assert_rows_equal(read_table(None, catalog, name).to_pylist(), expected)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=rows)
def test_values_round_trip_through_spark(spark, catalog, values):
    name = new_table(catalog)
    expected = batch(values)
    # Spark takes the Arrow batch as it is (a naive timestamp would become TIMESTAMP_NTZ; the
    # table's timestamp is Hive's zone-less wall clock, which acidflow keeps in UTC for Spark)
    utc = expected.set_column(6, "ts", expected.column("ts").cast(pa.timestamp("us", tz="UTC")))
    df = spark.createDataFrame(utc)
    with Transaction(catalog, spark=spark, heartbeat_s=0) as txn:
        txn.upsert(name, df)
    assert_rows_equal(read_table(None, catalog, name).to_pylist(), expected)
    spark_rows = [r.asDict() for r in read_table(spark, catalog, name).collect()]
    for r in spark_rows:
        r["bin"] = None if r["bin"] is None else bytes(r["bin"])
    assert_rows_equal(spark_rows, expected)
