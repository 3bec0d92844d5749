"""Timestamps across Hive's range through the whole table path with Spark: a keyed table
upserted with 9999-12-31 (the usual "valid to" sentinel), 0001-01-01, 1600-01-01 and a pre-1970
timestamp with a fraction of a second reads back exactly with Spark and pyarrow, before and
after a major compaction; a value Hive cannot store is refused and the table keeps its rows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.format.orc.timestamps import HiveRangeError
from acidflow.read import table as reads

pytestmark = pytest.mark.spark

CFG = CompactorConfig(heartbeat_s=0.5)
VALUES = {
    1: (dt.datetime(9999, 12, 31, 0, 0), dt.date(9999, 12, 31)),
    2: (dt.datetime(1, 1, 1, 0, 0), dt.date(1, 1, 1)),
    3: (dt.datetime(1600, 1, 1, 0, 0), dt.date(1600, 1, 1)),
    4: (dt.datetime(1960, 6, 15, 8, 0, 0, 123), dt.date(1960, 6, 15)),
    5: (dt.datetime(1960, 6, 15, 8, 0, 0, 500123), dt.date(1960, 6, 15)),
    6: (dt.datetime(2024, 3, 10, 2, 30), dt.date(2024, 3, 10)),
}
SCHEMA = "id int, ts timestamp_ntz, day date, v string"


def table_rows(spark, catalog, name: str) -> tuple[dict, dict]:
    """``{id: (ts, day, v)}`` as Spark and as pyarrow read the table."""
    with_spark = {
        r["id"]: (r["ts"], r["day"], r["v"])
        for r in reads.read_table(spark, catalog, name).collect()
    }
    with_arrow = {
        r["id"]: (r["ts"], r["day"], r["v"])
        for r in reads.read_table(None, catalog, name).to_pylist()
    }
    return with_spark, with_arrow


@pytest.mark.parametrize("v_type", ["string", "varchar(10)"], ids=["columnar", "pyorc"])
def test_whole_range_upsert_read_compact_read(spark, catalog, v_type):
    name = "db.ts"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("id", "int"),
                Column("ts", "timestamp"),
                Column("day", "date"),
                Column("v", v_type),
            ],
            primary_key=["id"],
        )
    )
    first = [(i, ts, day, "a") for i, (ts, day) in VALUES.items()]
    with Transaction(catalog) as txn:  # w1: a Spark upsert (all inserts)
        txn.upsert(name, spark.createDataFrame(first, SCHEMA))
    # w2: a pyarrow upsert updating two rows and adding one
    second = pa.table(
        {
            "id": pa.array([2, 4, 7], pa.int32()),
            "ts": pa.array(
                [dt.datetime(1, 1, 1, 0, 0, 0, 1), VALUES[4][0], dt.datetime(9999, 12, 31)],
                pa.timestamp("us"),
            ),
            "day": pa.array([dt.date(1, 1, 2), VALUES[4][1], dt.date(9999, 12, 31)]),
            "v": ["b", "b", "b"],
        }
    )
    with Transaction(catalog) as txn:
        txn.upsert(name, second)
    want = {i: (ts, day, "a") for i, (ts, day) in VALUES.items()}
    want[2] = (dt.datetime(1, 1, 1, 0, 0, 0, 1), dt.date(1, 1, 2), "b")
    want[4] = (VALUES[4][0], VALUES[4][1], "b")
    want[7] = (dt.datetime(9999, 12, 31), dt.date(9999, 12, 31), "b")
    assert table_rows(spark, catalog, name) == (want, want)

    info = initiator.request_compaction(catalog, name, None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report
    assert table_rows(spark, catalog, name) == (want, want)

    # a value Hive cannot store is refused, naming the column and the value
    bad = spark.createDataFrame(
        [(8, dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.date(2000, 1, 1), "c")], SCHEMA
    )
    with pytest.raises(Exception, match="column 'ts'.*1969-12-31 23:59:59.500000") as exc:
        with Transaction(catalog) as txn:
            txn.upsert(name, bad)
    assert "HiveRangeError" in str(exc.value) or isinstance(exc.value, HiveRangeError)
    with pytest.raises(HiveRangeError, match="column 'day' row 0 holds date 10000-01-01"):
        with Transaction(catalog) as txn:
            txn.upsert(
                name,
                pa.table(
                    {
                        "id": pa.array([9], pa.int32()),
                        "ts": pa.array([dt.datetime(2000, 1, 1)], pa.timestamp("us")),
                        "day": pa.array([2932897], pa.int32()).cast(pa.date32()),
                        "v": ["c"],
                    }
                ),
            )
    assert table_rows(spark, catalog, name) == (want, want)
