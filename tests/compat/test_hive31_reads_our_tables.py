"""Tables acidflow writes (Spark inserts, pyarrow and Spark upserts, deletes, two statements in
one transaction, an aborted transaction, bucketed and partitioned) read by Hive 3.1.3's own ACID
reader (``tests/compat/hive31.py``) under the catalog's ValidWriteIdList: exactly acidflow's
snapshot, ROW__IDs included -- after the writes, at an older write id, after a minor
compaction, after the cleaner, after a major compaction and clean.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.format.bucketing import (
    decode_bucket_id,
    decode_statement_id,
    encode_bucket_property,
)
from acidflow.format.orc import files as acid_files
from acidflow.storage.fs import TableFS
from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow
from tests.support import acidtables as at
from tests.support import orcstreams

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = require_hive31_tools()
CFG = CompactorConfig(heartbeat_s=0.5)


@pytest.fixture(scope="module")
def hive31():
    with Hive31Oracle(ARTIFACTS) as oracle:
        yield oracle


def listing(catalog, name: str, partition: str = "") -> list[str]:
    root = Path(catalog.get_table(name).location) / partition
    return sorted(p.name for p in root.iterdir() if not p.name.startswith((".", "_")))


def assert_key_bloom_filters(catalog, name: str, key_column_id: int = 7) -> None:
    """Every stripe of every insert/base file carries an ORC bloom filter (BLOOM_FILTER_UTF8)
    on the key's data column and on nothing else; delete deltas carry none."""
    files = [
        f
        for f in Path(catalog.get_table(name).location).rglob("bucket_*")
        if not any(p.startswith(".") for p in f.parts)
    ]
    assert files
    for f in files:
        want = set() if f.parent.name.startswith("delete_delta_") else {key_column_id}
        assert orcstreams.bloom_filter_columns(f) == [want] * len(orcstreams.stripe_streams(f)), f


def compact(spark, catalog, name: str, kind: str, partition: str | None = None) -> None:
    info = initiator.request_compaction(catalog, name, partition, kind)
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report


BUCKETED_COLS = [
    ("id", "int"),
    ("amount", "bigint"),
    ("name", "string"),
    ("price", "decimal(18,4)"),
    ("day", "date"),
    ("at", "timestamp"),
    ("ok", "boolean"),
    ("score", "double"),
]
BUCKETED_SCHEMA = (
    "id int, amount bigint, name string, price decimal(18,4), day date,"
    " at timestamp_ntz, ok boolean, score double"
)


def bucketed_row(i: int, tag: str) -> tuple:
    return (
        i,
        i * 1_000_003,
        f"{tag}-{i}-é",
        decimal.Decimal(i * 7919 % 100_000) / 10_000,
        dt.date(1969, 12, 30) + dt.timedelta(days=i * 37 % 20_000),
        dt.datetime(2024, 3, 10, 2, 30) + dt.timedelta(seconds=i * 3607, microseconds=i % 7),
        i % 3 == 0,
        None if i % 13 == 0 else i / 7,
    )


def test_bucketed_table_writes_minor_major_clean(spark, catalog, hive31):
    """4 buckets keyed on id: a Spark insert (small stripes), a pyarrow upsert, a transaction
    with two statements (upsert then delete: statement ids 0 and 1), an aborted upsert, a Spark
    delete; then minor compaction, clean, one more write, major compaction, clean."""
    name = "db.hb"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column(*c) for c in BUCKETED_COLS],
            primary_key=["id"],
            num_buckets=4,
        )
    )
    n = 3000
    with Transaction(catalog) as txn:  # w1
        txn.insert(
            name,
            spark.createDataFrame([bucketed_row(i, "a") for i in range(n)], BUCKETED_SCHEMA),
            stripe_rows=500,
        )
    arrow_schema = pa.schema(
        [
            ("id", pa.int32()),
            ("amount", pa.int64()),
            ("name", pa.string()),
            ("price", pa.decimal128(18, 4)),
            ("day", pa.date32()),
            ("at", pa.timestamp("us")),
            ("ok", pa.bool_()),
            ("score", pa.float64()),
        ]
    )

    def arrow(rows):
        return pa.Table.from_pylist(
            [dict(zip(arrow_schema.names, r)) for r in rows], schema=arrow_schema
        )

    with Transaction(catalog) as txn:  # w2
        txn.upsert(name, arrow([bucketed_row(i, "u") for i in range(0, n + 200, 7)]))
    with Transaction(catalog) as txn:  # w3: 2 statements
        txn.upsert(name, arrow([bucketed_row(i, "s") for i in range(1, 400, 5)]))
        txn.delete(name, spark.createDataFrame([(i,) for i in range(2, 600, 10)], "id int"))
    with pytest.raises(RuntimeError, match="on purpose"):  # w4 aborted
        with Transaction(catalog) as txn:
            txn.upsert(name, arrow([bucketed_row(i, "x") for i in range(0, 3000, 3)]))
            raise RuntimeError("aborted on purpose")
    with Transaction(catalog) as txn:  # w5
        txn.delete(name, spark.createDataFrame([(i,) for i in range(1000, 1100)], "id int"))
    valid = catalog.valid_write_ids(name)
    assert (valid.high_watermark, valid.aborted_write_ids) == (5, (4,))

    assert_key_bloom_filters(catalog, name)
    hive = same_as_acidflow(hive31, catalog, name)
    assert len(hive) == n + len(range(n, n + 200, 7)) - len(range(2, 600, 10)) - 100
    assert {r.values[2].split("-")[0] for r in hive} == {"a", "u", "s"}
    assert {decode_statement_id(r.bucket) for r in hive if r.write_id == 3} == {0}
    assert any(
        name.startswith("delete_delta_0000003_0000003_0001") for name in listing(catalog, name)
    )
    for r in hive:  # every row sits in the bucket its ROW__ID names
        assert 0 <= decode_bucket_id(r.bucket) < 4
    same_as_acidflow(hive31, catalog, name, as_of_write_id=2)
    same_as_acidflow(hive31, catalog, name, as_of_write_id=3)

    compact(spark, catalog, name, "minor")
    assert "delta_0000001_0000005" in listing(catalog, name)
    same_as_acidflow(hive31, catalog, name)
    cleaner.run_cleaner(catalog)
    assert listing(catalog, name) == ["delete_delta_0000001_0000005", "delta_0000001_0000005"]
    assert_key_bloom_filters(catalog, name)
    same_as_acidflow(hive31, catalog, name)

    with Transaction(catalog) as txn:  # w6
        txn.upsert(name, arrow([bucketed_row(i, "m") for i in range(5, 50, 3)]))
    same_as_acidflow(hive31, catalog, name)
    compact(spark, catalog, name, "major")
    same_as_acidflow(hive31, catalog, name)
    cleaner.run_cleaner(catalog)
    assert listing(catalog, name) == ["base_0000006"]
    assert_key_bloom_filters(catalog, name)
    hive = same_as_acidflow(hive31, catalog, name)
    assert {r.values[2].split("-")[0] for r in hive} == {"a", "u", "s", "m"}


PART_COLS = [("k", "bigint"), ("v", "string"), ("ts", "timestamp"), ("amt", "decimal(38,10)")]
PART_SCHEMA = "k long, v string, ts timestamp_ntz, amt decimal(38,10), region string"


def part_row(i: int, tag: str, region: str) -> tuple:
    return (
        i,
        f"{tag}{i}",
        dt.datetime(2024, 5, 1, 12, 30, i % 60, 123000 + i),
        decimal.Decimal(10**20 + i) / 3,
        region,
    )


def test_partitioned_unbucketed_table_writes_minor_major_clean(spark, catalog, hive31):
    """Unpartitioned buckets (writer files), two partitions: a Spark insert in 3 tasks, a Spark
    upsert, a delete; minor, clean, major per partition, clean."""
    name = "db.hp"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column(*c) for c in PART_COLS],
            partition_columns=[Column("region", "string")],
            primary_key=["k", "region"],
        )
    )
    data = [part_row(i, "v", "eu" if i % 2 else "us") for i in range(600)]
    with Transaction(catalog) as txn:  # w1
        txn.insert(name, spark.createDataFrame(data, PART_SCHEMA).repartition(3))
    with Transaction(catalog) as txn:  # w2
        txn.upsert(
            name,
            spark.createDataFrame(
                [part_row(i, "new", "eu") for i in range(1, 200, 2)]
                + [part_row(i, "fresh", "us") for i in range(1000, 1010)],
                PART_SCHEMA,
            ),
        )
    with Transaction(catalog) as txn:  # w3
        txn.delete(
            name,
            spark.createDataFrame([(i, "us") for i in range(0, 100, 2)], "k long, region string"),
        )
    writers = {
        p.name
        for p in Path(catalog.get_table(name).location).rglob("delta_0000001_0000001_0000/bucket_*")
    }
    assert len(writers) > 1  # several writer files in one delta
    assert_key_bloom_filters(catalog, name)  # k only: region is a partition column
    hive = same_as_acidflow(hive31, catalog, name)
    assert len(hive) == 600 + 10 - 50
    assert {r.partition for r in hive} == {"region=eu", "region=us"}
    same_as_acidflow(hive31, catalog, name, as_of_write_id=1)

    for region in ("eu", "us"):
        compact(spark, catalog, name, "minor", f"region={region}")
    same_as_acidflow(hive31, catalog, name)
    cleaner.run_cleaner(catalog)
    assert listing(catalog, name, "region=us") == [
        "delete_delta_0000001_0000003",
        "delta_0000001_0000003",
    ]
    same_as_acidflow(hive31, catalog, name)
    for region in ("eu", "us"):
        compact(spark, catalog, name, "major", f"region={region}")
    cleaner.run_cleaner(catalog)
    # the last write of region=eu is w2 (w3 deleted in region=us only)
    assert [listing(catalog, name, f"region={r}") for r in ("eu", "us")] == [
        ["base_0000002"],
        ["base_0000003"],
    ]
    assert_key_bloom_filters(catalog, name)
    same_as_acidflow(hive31, catalog, name)


def test_multi_stripe_columnar_delta_and_delete_delta(spark, catalog, hive31):
    """A Spark insert written column by column in several stripes (zlib, 8192 events each),
    then a delete of every third key in several stripes (uncompressed, so that 4096-event
    stripes are cut although delete events compress to almost nothing): Hive 3.1.3 reads
    exactly acidflow's rows, using the key index of each file."""
    name = "db.ms"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column(*c) for c in BUCKETED_COLS],
            primary_key=["id"],
            num_buckets=2,
        )
    )
    n = 40_000
    rows = [bucketed_row(i, "p" + "x" * (i * 7919 % 61)) for i in range(n)]
    with Transaction(catalog) as txn:
        txn.insert(
            name, spark.createDataFrame(rows, BUCKETED_SCHEMA).repartition(2), stripe_rows=8192
        )
    with Transaction(catalog) as txn:
        txn.delete(
            name,
            spark.createDataFrame([(i,) for i in range(0, n, 3)], "id int"),
            compression="none",
            stripe_rows=4096,
        )
    root = Path(catalog.get_table(name).location)
    for d in ("delta_0000001_0000001_0000", "delete_delta_0000002_0000002_0000"):
        for f in sorted((root / d).glob("bucket_*")):
            meta = acid_files.read_user_metadata(TableFS(str(root)), str(f))
            keys = acid_files.parse_key_index(meta["hive.acid.key.index"])
            info = acid_files.file_info(TableFS(str(root)), str(f))
            assert info.stripes > 1 and len(keys) == info.stripes, (f, info.stripes)
    assert_key_bloom_filters(catalog, name)
    hive = same_as_acidflow(hive31, catalog, name)
    assert len(hive) == n - len(range(0, n, 3))


def test_max_num_delta_slices_read_by_hive31(catalog, hive31):
    """hive.compactor.max.num.delta = 3 over 8 deltas (an update's insert and delete delta, a
    delete): Hive 3.1.3 reads the slices' and the final minor compaction's directories
    (before the clean, all side by side; after it) exactly as acidflow does."""
    name = "db.slices"
    bp = encode_bucket_property(0, 0)
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("name", "string")],
            properties={"compactorthreshold.hive.compactor.max.num.delta": "3"},
        )
    )
    at.write(catalog, name, {0: [(i, f"a{i}") for i in range(4)]})  # w1
    at.write(catalog, name, {0: [(i, f"a{i}") for i in range(4, 8)]})  # w2
    at.write(catalog, name, {0: [(1, "u1")]}, [(1, bp, 1)])  # w3 update
    at.write(catalog, name, {0: [(8, "a8")]})  # w4
    at.write(catalog, name, deletes=[(2, bp, 0), (1, bp, 2)])  # w5 delete
    at.write(catalog, name, {0: [(9, "a9")]})  # w6
    at.write(catalog, name, {0: [(10, "a10")]})  # w7
    before = same_as_acidflow(hive31, catalog, name, modes=(False,))
    compact(None, catalog, name, "minor")
    assert "delta_0000003_0000004" in listing(catalog, name)  # a slice's output
    assert same_as_acidflow(hive31, catalog, name) == before
    cleaner.run_cleaner(catalog)
    assert listing(catalog, name) == ["delete_delta_0000001_0000007", "delta_0000001_0000007"]
    assert same_as_acidflow(hive31, catalog, name) == before
