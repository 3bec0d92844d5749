"""Tables written by acidflow, read by Hive 2.3's own ACID reader (OrcInputFormat from PySpark's
hive-exec jar): it must return exactly our snapshot's rows. Covers inserts, updates (split-update),
deletes, several buckets, several stripes per file, a partitioned table and an open write id."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
from pathlib import Path

import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads
from tests.compat.hive23 import read_with_hive23

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def ours(catalog, name, cols, **kw):
    t = reads.read_table(None, catalog, name, **kw)
    return collections.Counter(tuple(r[c] for c in cols) for r in t.to_pylist())


def hive(spark, catalog, name, **kw):
    td = catalog.get_table(name)
    valid = catalog.valid_write_ids(td.name)
    cols = [(c.name, c.hive_type) for c in td.columns]
    pdirs = None
    if td.partition_columns:
        root = Path(td.location)
        pdirs = sorted(str(p) for p in root.glob("/".join(["*=*"] * len(td.partition_columns))))
    got = read_with_hive23(
        spark,
        td.location,
        cols,
        high_watermark=kw.get("hwm", valid.high_watermark),
        open_write_ids=kw.get("open", valid.open_write_ids),
        aborted_write_ids=valid.aborted_write_ids,
        partition_dirs=pdirs,
        num_buckets=td.num_buckets,
    )
    return collections.Counter(tuple(r) for r in got)


def test_hive23_reads_bucketed_table_with_updates_and_deletes(spark, catalog):
    cols = [
        ("id", "int"),
        ("amount", "bigint"),
        ("name", "string"),
        ("price", "decimal(10,2)"),
        ("day", "date"),
        ("ok", "boolean"),
        ("score", "double"),
    ]
    catalog.create_table(
        TableDef(name="h1", columns=[Column(*c) for c in cols], primary_key=["id"], num_buckets=4)
    )
    schema = "id int, amount bigint, name string, price decimal(10,2), day date, ok boolean, score double"

    def row(i, tag):
        return (
            i,
            i * 3,
            f"{tag}{i}",
            decimal.Decimal(i % 1000) / 4,
            dt.date(2020, 1, 1) + dt.timedelta(days=i % 400),
            i % 2 == 0,
            i / 7,
        )

    n = 5000
    with Transaction(catalog) as txn:
        txn.insert(
            "h1", spark.createDataFrame([row(i, "a") for i in range(n)], schema), stripe_rows=1024
        )
    with Transaction(catalog) as txn:
        txn.upsert("h1", spark.createDataFrame([row(i, "u") for i in range(0, n + 300, 9)], schema))
    with Transaction(catalog) as txn:
        txn.delete("h1", spark.createDataFrame([(i,) for i in range(3, n, 11)], "id int"))
    names = [c for c, _ in cols]
    expected = ours(catalog, "h1", names)
    new_keys = [i for i in range(0, n + 300, 9) if i >= n]
    assert sum(expected.values()) == n + len(new_keys) - len(range(3, n, 11))
    assert hive(spark, catalog, "h1") == expected
    # an older snapshot, through Hive's own txn list: write id 3 not yet committed
    assert hive(spark, catalog, "h1", hwm=2) == ours(catalog, "h1", names, as_of_write_id=2)


def test_hive23_reads_partitioned_unbucketed_table(spark, catalog):
    cols = [("k", "bigint"), ("v", "string"), ("ts", "timestamp")]
    catalog.create_table(
        TableDef(
            name="h2",
            columns=[Column(*c) for c in cols],
            partition_columns=[Column("region", "string")],
            primary_key=["k", "region"],
        )
    )
    schema = "k long, v string, ts timestamp_ntz, region string"
    data = [
        (i, f"v{i}", dt.datetime(2024, 5, 1, 12, 30, i % 60, 123000), "eu" if i % 2 else "us")
        for i in range(400)
    ]
    with Transaction(catalog) as txn:
        txn.insert("h2", spark.createDataFrame(data, schema).repartition(3))
    with Transaction(catalog) as txn:
        txn.upsert(
            "h2",
            spark.createDataFrame(
                [(i, "new", dt.datetime(2024, 6, 1), "eu") for i in range(1, 100, 2)], schema
            ),
        )
    with Transaction(catalog) as txn:
        txn.delete(
            "h2",
            spark.createDataFrame([(i, "us") for i in range(0, 50, 2)], "k long, region string"),
        )
    td = catalog.get_table("h2")
    writer_files = {p.name for p in Path(td.location).rglob("delta_0000001_0000001_0000/bucket_*")}
    assert len(writer_files) > 1  # several writer ids in one delta
    expected = ours(catalog, "h2", [c for c, _ in cols])
    assert sum(expected.values()) == 400 - 25
    assert hive(spark, catalog, "h2") == expected
