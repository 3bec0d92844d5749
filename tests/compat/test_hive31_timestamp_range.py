"""Hive 3.1.3's own ACID readers (row-by-row and vectorized, ``tests/compat/hive31.py``) read
timestamps across Hive's range from files acidflow's default writer (pyarrow's ORC writer)
wrote: 9999-12-31, 0001-01-01, and pre-1970 values with a fraction of a second, which that
writer used to store with negative nanoseconds (``DateTimeException: Invalid value for
NanoOfSecond``) -- through a pyarrow upsert, a Spark upsert and a major compaction."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.format.orc import files as acid_files
from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = require_hive31_tools()
CFG = CompactorConfig(heartbeat_s=0.5)

ROWS = [
    (1, dt.datetime(1960, 6, 15, 8, 0, 0, 123), dt.date(1960, 6, 15)),
    (2, dt.datetime(9999, 12, 31, 0, 0), dt.date(9999, 12, 31)),
    (3, dt.datetime(1, 1, 1, 0, 0), dt.date(1, 1, 1)),
    (4, dt.datetime(1600, 1, 1, 0, 0), dt.date(1600, 1, 1)),
    (5, dt.datetime(1960, 6, 15, 8, 0, 0, 500123), dt.date(1960, 6, 15)),
    (6, dt.datetime(1969, 12, 31, 23, 59, 58, 999999), dt.date(1969, 12, 31)),
    (7, dt.datetime(1969, 12, 31, 23, 59, 59, 999), dt.date(1969, 12, 31)),
]


@pytest.fixture(scope="module")
def hive():
    with Hive31Oracle(ARTIFACTS) as oracle:
        yield oracle


def create(catalog, name: str) -> None:
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("ts", "timestamp"), Column("day", "date")],
            primary_key=["id"],
        )
    )


def arrow_rows(rows) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int32()),
            "ts": pa.array([r[1] for r in rows], pa.timestamp("us")),
            "day": pa.array([r[2] for r in rows], pa.date32()),
        }
    )


def test_hive31_reads_pre_1970_fractions_the_default_writer_wrote(catalog, hive):
    """Hive's reader alone (no acidflow read first): the values within pyarrow's
    ``timestamp[ns]`` range that the default writer used to store with negative nanoseconds."""
    name = "db.pre"
    create(catalog, name)
    rows = [r for r in ROWS if r[1].year == 1960 or r[1].year == 1969]
    with Transaction(catalog) as txn:
        txn.upsert(name, arrow_rows(rows))
    td = catalog.get_table(name)
    cols = [(c.name, c.hive_type) for c in td.columns]
    for vectorized in (False, True):
        got = hive.read(td.location, cols, catalog.valid_write_ids(name), vectorized=vectorized)
        assert sorted(tuple(r.values) for r in got) == sorted(rows)


def hive_values(oracle, catalog, name) -> dict[int, tuple]:
    rows = same_as_acidflow(oracle, catalog, name)  # both Hive readers == acidflow's read
    return {r.values[0]: tuple(r.values[1:]) for r in rows}


def test_hive31_reads_the_whole_range_from_the_default_writer(spark, catalog, hive):
    name = "db.tsr"
    create(catalog, name)
    table = arrow_rows(ROWS)
    with Transaction(catalog) as txn:  # w1: the pyarrow path, default (columnar) writer
        txn.upsert(name, table)
    td = catalog.get_table(name)
    files = list(Path(td.location).rglob("bucket_*"))
    assert files and acid_files.columnar_writable([(c.name, c.hive_type) for c in td.columns])
    want = {i: (ts, day) for i, ts, day in ROWS}
    assert hive_values(hive, catalog, name) == want
    # w2: a Spark upsert of the same values under new ids
    shifted = [(i + 10, ts, day) for i, ts, day in ROWS]
    with Transaction(catalog) as txn:
        txn.upsert(name, spark.createDataFrame(shifted, "id int, ts timestamp_ntz, day date"))
    want.update({i: (ts, day) for i, ts, day in shifted})
    assert hive_values(hive, catalog, name) == want
    info = initiator.request_compaction(catalog, name, None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report
    assert hive_values(hive, catalog, name) == want
