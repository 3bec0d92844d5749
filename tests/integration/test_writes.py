"""Writes through real Spark into real ORC files under a temp warehouse, with a real SQLite
catalog: insert, upsert (split-update), delete, insert overwrite, partitions, buckets, stripes,
time travel, incremental reads, aborts. Files are checked on disk against Hive's rules."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
from pathlib import Path

import pyarrow.orc as paorc
import pytest
from pyspark.sql import functions as F

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine import lookup, writer
from acidflow.engine.conform import DuplicateKeyError, SchemaMismatchError
from acidflow.engine.transaction import Transaction
from acidflow.format.bucketing import decode_bucket_id, encode_bucket_property
from acidflow.format.bucketing_hash import hive_bucket
from acidflow.format.orc.files import parse_acid_stats, parse_key_index
from acidflow.read import table as reads

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def make_table(catalog, name, cols, **kw) -> TableDef:
    return catalog.create_table(TableDef(name=name, columns=[Column(n, t) for n, t in cols], **kw))


def rows_of(catalog, name, **kw):
    return reads.read_table(None, catalog, name, **kw).to_pylist()


def ms(rows, *cols):
    return collections.Counter(tuple(r[c] for c in cols) for r in rows)


def data_files(root: Path):
    return sorted(p for p in root.rglob("bucket_*") if p.is_file())


def assert_hive_file_rules(path: Path, columns: list[str]):
    """Every rule of docs/hive-acid-format.md §3 for one event file we wrote."""
    f = paorc.ORCFile(str(path))
    assert f.schema.names == [
        "operation",
        "originalTransaction",
        "bucket",
        "rowId",
        "currentTransaction",
        "row",
    ]
    assert f.schema.field("row").type.num_fields == len(columns)
    assert [f.schema.field("row").type.field(i).name for i in range(len(columns))] == columns
    assert f.compression in ("ZLIB", "SNAPPY")
    meta = {k.decode(): v.decode() for k, v in f.metadata.items()}
    assert meta["hive.acid.version"] == "2"
    t = f.read()
    ops = t.column("operation").to_pylist()
    i, u, d = parse_acid_stats(meta["hive.acid.stats"])
    assert (i, u, d) == (ops.count(0), ops.count(1), ops.count(2))
    keys = list(
        zip(
            t.column("originalTransaction").to_pylist(),
            t.column("bucket").to_pylist(),
            t.column("rowId").to_pylist(),
        )
    )
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    # one key index entry per stripe = the stripe's last key
    index = parse_key_index(meta["hive.acid.key.index"])
    assert len(index) == f.nstripes
    ends, n = [], 0
    for s in range(f.nstripes):
        n += f.read_stripe(s).num_rows
        ends.append(keys[n - 1])
    assert index == ends
    assert (path.parent / "_orc_acid_version").read_bytes() == b"2"
    if d:
        assert all(r is None for r in t.column("row").to_pylist())
    return t


def test_insert_upsert_delete_unbucketed(spark, catalog, warehouse):
    make_table(
        catalog,
        "default.people",
        [("id", "int"), ("name", "string"), ("score", "double")],
        primary_key=["id"],
    )
    df = spark.createDataFrame(
        [(1, "a", 1.0), (2, "b", 2.0), (3, "c", 3.0)], "id int, name string, score double"
    )
    with Transaction(catalog) as txn:
        res = txn.insert("people", df)
    assert res.write_id == 1 and res.rows_inserted == 3
    assert ms(rows_of(catalog, "people"), "id", "name") == ms(
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}], "id", "name"
    )
    tdir = Path(catalog.get_table("people").location)
    deltas = sorted(p.name for p in tdir.iterdir())
    assert deltas == ["delta_0000001_0000001_0000"]
    for f in data_files(tdir):
        assert_hive_file_rules(f, ["id", "name", "score"])

    before = {r["id"]: r["ROW__ID"] for r in rows_of(catalog, "people", row_id=True)}
    up = spark.createDataFrame([(2, "B", 20.0), (4, "d", 4.0)], "id int, name string, score double")
    with Transaction(catalog) as txn:
        res = txn.upsert("people", up)
    assert (res.rows_updated, res.rows_inserted) == (1, 1)
    after = {r["id"]: r for r in rows_of(catalog, "people", row_id=True)}
    assert sorted(after) == [1, 2, 3, 4]
    assert after[2]["name"] == "B" and after[2]["score"] == 20.0
    assert after[2]["ROW__ID"]["writeid"] == 2 and after[1]["ROW__ID"] == before[1]
    # the delete event copies the old ROW__ID exactly
    dd = tdir / "delete_delta_0000002_0000002_0000"
    ev = [assert_hive_file_rules(f, ["id", "name", "score"]) for f in data_files(dd)]
    deleted = [
        (r["originalTransaction"], r["bucket"], r["rowId"], r["currentTransaction"])
        for t in ev
        for r in t.to_pylist()
    ]
    old = before[2]
    assert deleted == [(old["writeid"], old["bucketid"], old["rowid"], 2)]
    # and sits in the bucket file of the row it deletes
    assert [f.name for f in data_files(dd)] == [f"bucket_{decode_bucket_id(old['bucketid']):05d}"]

    with Transaction(catalog) as txn:
        res = txn.delete("people", spark.createDataFrame([(1,), (99,)], "id int"))
    assert res.rows_deleted == 1
    assert sorted(r["id"] for r in rows_of(catalog, "people")) == [2, 3, 4]
    # time travel: each write id's snapshot
    assert sorted(r["id"] for r in rows_of(catalog, "people", as_of_write_id=1)) == [1, 2, 3]
    assert {r["id"]: r["name"] for r in rows_of(catalog, "people", as_of_write_id=2)}[2] == "B"
    # commit records carry the statistics
    recs = catalog.commit_records("people")
    assert [r.write_id for r in recs] == [1, 2, 3]
    assert recs[1].stats["rows_updated"] == 1 and recs[1].stats["rows_inserted"] == 1
    assert recs[2].stats["rows_deleted"] == 1


def test_incremental_read(spark, catalog):
    make_table(catalog, "inc", [("k", "bigint"), ("v", "string")], primary_key=["k"])
    with Transaction(catalog) as txn:
        txn.insert("inc", spark.createDataFrame([(1, "x"), (2, "y")], "k long, v string"))
    with Transaction(catalog) as txn:
        txn.upsert("inc", spark.createDataFrame([(2, "y2"), (3, "z")], "k long, v string"))
    with Transaction(catalog) as txn:
        txn.delete("inc", spark.createDataFrame([(1,)], "k long"))
    ch = reads.read_incremental(spark, catalog, "inc", 1).collect()
    got = collections.Counter((r["op"], r["k"], r["v"]) for r in ch)
    assert got == collections.Counter(
        {("D", 1, "x"): 1, ("D", 2, "y"): 1, ("I", 2, "y2"): 1, ("I", 3, "z"): 1}
    )
    ch = reads.read_incremental(spark, catalog, "inc", 2, 3).collect()
    assert [(r["op"], r["k"]) for r in ch] == [("D", 1)]


def test_bucketed_table_places_rows_with_hive_hash(spark, catalog):
    make_table(
        catalog,
        "acc",
        [("aid", "int"), ("bal", "bigint"), ("note", "string")],
        primary_key=["aid"],
        num_buckets=4,
    )
    n = 6000
    # 300-byte notes: the columnar writer cuts a 1024-event stripe once the stripe's zlib
    # streams have output, i.e. after a 256 KiB compression block of some column
    pad = "." * 300
    df = spark.createDataFrame(
        [(i, i * 10, f"n{i}{pad}") for i in range(n)], "aid int, bal bigint, note string"
    )
    with Transaction(catalog) as txn:
        txn.insert("acc", df, stripe_rows=1024)
    tdir = Path(catalog.get_table("acc").location)
    files = data_files(tdir)
    assert [f.name for f in files] == [
        "bucket_00000",
        "bucket_00001",
        "bucket_00002",
        "bucket_00003",
    ]
    for f in files:
        t = assert_hive_file_rules(f, ["aid", "bal", "note"])
        b = int(f.name.split("_")[1])
        assert set(t.column("bucket").to_pylist()) == {encode_bucket_property(b, 0)}
        ids = [r["aid"] for r in t.column("row").to_pylist()]
        assert all(hive_bucket([i], ["int"], 4) == b for i in ids)
        assert t.column("rowId").to_pylist() == list(range(len(ids)))
    assert sum(paorc.ORCFile(str(f)).nstripes for f in files) > 4  # several stripes
    # updates and deletes: delete events go to the bucket file of the row
    ups = spark.createDataFrame(
        [(i, -i, "u") for i in range(0, n, 7)], "aid int, bal bigint, note string"
    )
    with Transaction(catalog) as txn:
        txn.upsert("acc", ups)
    with Transaction(catalog) as txn:
        txn.delete("acc", spark.createDataFrame([(i,) for i in range(1, n, 5)], "aid int"))
    for f in data_files(tdir / "delete_delta_0000002_0000002_0000") + data_files(
        tdir / "delete_delta_0000003_0000003_0000"
    ):
        t = assert_hive_file_rules(f, ["aid", "bal", "note"])
        b = int(f.name.split("_")[1])
        assert {decode_bucket_id(x) for x in t.column("bucket").to_pylist()} == {b}
    expected = {i: (i * 10, f"n{i}{pad}") for i in range(n)}
    for i in range(0, n, 7):
        expected[i] = (-i, "u")
    for i in range(1, n, 5):
        expected.pop(i)
    got = {r["aid"]: (r["bal"], r["note"]) for r in rows_of(catalog, "acc")}
    assert got == expected


@pytest.mark.parametrize("n", [1, 4, 7, 32, 256])
def test_spark_partition_keys_put_each_bucket_alone_in_its_own_spark_partition(spark, n):
    """What an unpartitioned bucketed write relies on to skip the sort: Spark's hash
    repartitioning by ``spark_partition_keys(n)[bucket]`` sends bucket b to partition b."""
    keys = F.array(*[F.lit(k) for k in writer.spark_partition_keys(n)])
    df = spark.range(0, 20 * n).select((F.col("id") % n).cast("int").alias("b"))
    df = df.repartition(n, F.element_at(keys, F.col("b") + F.lit(1)))
    got = df.rdd.mapPartitionsWithIndex(lambda i, it: [(i, sorted({r.b for r in it}))]).collect()
    assert got == [(i, [i]) for i in range(n)]


def test_partitioned_table_and_insert_overwrite(spark, catalog):
    make_table(
        catalog,
        "sales",
        [("id", "int"), ("amount", "decimal(10,2)"), ("ts", "timestamp")],
        partition_columns=[Column("ds", "date"), Column("region", "string")],
        primary_key=["id", "ds", "region"],
    )
    rows = [
        (
            i,
            decimal.Decimal(f"{i}.25"),
            dt.datetime(2024, 1, 1, 10, 0, i % 60),
            dt.date(2024, 1, 1 + i % 2),
            "eu" if i % 3 else "us",
        )
        for i in range(30)
    ]
    schema = "id int, amount decimal(10,2), ts timestamp_ntz, ds date, region string"
    with Transaction(catalog) as txn:
        txn.insert("sales", spark.createDataFrame(rows, schema))
    tdir = Path(catalog.get_table("sales").location)
    assert sorted(str(p.relative_to(tdir)) for p in tdir.glob("*/*")) == [
        "ds=2024-01-01/region=eu",
        "ds=2024-01-01/region=us",
        "ds=2024-01-02/region=eu",
        "ds=2024-01-02/region=us",
    ]
    got = rows_of(catalog, "sales")
    assert ms(got, "id", "amount", "ts", "ds", "region") == ms(
        [dict(zip(["id", "amount", "ts", "ds", "region"], r)) for r in rows],
        "id",
        "amount",
        "ts",
        "ds",
        "region",
    )
    # delete by key touches only the partitions named by the keys
    with Transaction(catalog) as txn:
        res = txn.delete(
            "sales",
            spark.createDataFrame(
                [(1, dt.date(2024, 1, 2), "eu")], "id int, ds date, region string"
            ),
        )
    assert res.rows_deleted == 1 and list(res.partitions) == ["ds=2024-01-02/region=eu"]
    # insert overwrite one partition: base_W there, other partitions untouched
    new = [(100, decimal.Decimal("1.00"), dt.datetime(2024, 2, 1), dt.date(2024, 1, 1), "us")]
    with Transaction(catalog) as txn:
        res = txn.insert_overwrite("sales", spark.createDataFrame(new, schema))
    assert (tdir / "ds=2024-01-01/region=us" / f"base_{res.write_id:07d}").is_dir()
    got = rows_of(catalog, "sales")
    us1 = [r["id"] for r in got if r["region"] == "us" and r["ds"] == dt.date(2024, 1, 1)]
    assert us1 == [100]
    assert (
        len(got)
        == 30 - 1 - len([r for r in rows if r[4] == "us" and r[3] == dt.date(2024, 1, 1)]) + 1
    )
    # the snapshot before the overwrite is still readable (time travel)
    assert len(rows_of(catalog, "sales", as_of_write_id=2)) == 29


def test_insert_overwrite_unpartitioned_with_no_rows_empties_table(spark, catalog):
    make_table(catalog, "t", [("a", "int")])
    with Transaction(catalog) as txn:
        txn.insert("t", spark.createDataFrame([(1,), (2,)], "a int"))
    with Transaction(catalog) as txn:
        res = txn.insert_overwrite("t", spark.createDataFrame([], "a int"))
    tdir = Path(catalog.get_table("t").location)
    assert (tdir / f"base_{res.write_id:07d}" / "_orc_acid_version").exists()
    assert rows_of(catalog, "t") == []
    assert sorted(r["a"] for r in rows_of(catalog, "t", as_of_write_id=1)) == [1, 2]


def test_schema_mismatch_is_refused_before_writing(spark, catalog):
    make_table(catalog, "s", [("a", "int"), ("b", "string")])
    tdir = Path(catalog.get_table("s").location)
    bad = [
        spark.createDataFrame([(1,)], "a int"),
        spark.createDataFrame([(1, "x", 2)], "a int, b string, c int"),
        spark.createDataFrame([("x", "y")], "a string, b string"),
    ]
    for df in bad:
        with pytest.raises(SchemaMismatchError):
            with Transaction(catalog) as txn:
                txn.insert("s", df)
        assert txn.state == "aborted"
    assert not tdir.exists() or list(tdir.rglob("*")) == []
    # widening is fine: int into bigint-compatible columns, names matched case-insensitively
    make_table(catalog, "w", [("a", "bigint"), ("b", "string")])
    with Transaction(catalog) as txn:
        txn.insert("w", spark.createDataFrame([("x", 5)], "B string, A int"))
    assert rows_of(catalog, "w") == [{"a": 5, "b": "x"}]


def test_aborted_transaction_is_invisible_and_failed_run_leaves_nothing(spark, catalog):
    make_table(catalog, "ab", [("k", "int")], primary_key=["k"])
    with Transaction(catalog) as txn:
        txn.insert("ab", spark.createDataFrame([(1,)], "k int"))
    with pytest.raises(RuntimeError, match="boom"):
        with Transaction(catalog) as txn:
            txn.insert("ab", spark.createDataFrame([(2,)], "k int"))
            txn.delete("ab", spark.createDataFrame([(1,)], "k int"))
            raise RuntimeError("boom")
    assert catalog.get_transaction(txn.txn_id).state == "aborted"
    tdir = Path(catalog.get_table("ab").location)
    assert (tdir / "delta_0000002_0000002_0000").exists()  # files stay until the cleaner
    assert rows_of(catalog, "ab") == [{"k": 1}]
    assert reads.acid_state_of(str(tdir), catalog.valid_write_ids("default.ab")).aborted


def test_multi_table_transaction_is_atomic(spark, catalog):
    make_table(catalog, "m1", [("k", "int")], primary_key=["k"])
    make_table(catalog, "m2", [("k", "int")], primary_key=["k"])
    with Transaction(catalog) as txn:
        txn.insert("m1", spark.createDataFrame([(1,)], "k int"))
        # before commit nothing is visible to other readers
        assert rows_of(catalog, "m1") == []
        # but the transaction sees its own writes
        assert reads.read_table(None, catalog, "m1", txn_id=txn.txn_id).num_rows == 1
        txn.insert("m2", spark.createDataFrame([(2,)], "k int"))
        txn.insert("m2", spark.createDataFrame([(3,)], "k int"))
    assert rows_of(catalog, "m1") == [{"k": 1}]
    assert sorted(r["k"] for r in rows_of(catalog, "m2")) == [2, 3]
    tdir = Path(catalog.get_table("m2").location)
    # two statements of one transaction: same write id, statement ids 0 and 1
    assert sorted(p.name for p in tdir.iterdir()) == [
        "delta_0000001_0000001_0000",
        "delta_0000001_0000001_0001",
    ]
    info = catalog.get_transaction(txn.txn_id)
    assert info.state == "committed"
    assert info.write_ids == {"default.m1": 1, "default.m2": 1}


def test_upsert_rejects_duplicate_keys(spark, catalog):
    make_table(catalog, "d", [("k", "int"), ("v", "int")], primary_key=["k"])
    with pytest.raises(DuplicateKeyError):
        with Transaction(catalog) as txn:
            txn.upsert("d", spark.createDataFrame([(1, 1), (1, 2)], "k int, v int"))


def test_key_lookup_is_limited_to_touched_buckets_and_partitions(spark, catalog):
    table = make_table(
        catalog,
        "scoped",
        [("k", "int"), ("v", "string")],
        partition_columns=[Column("p", "string")],
        primary_key=["k", "p"],
        bucket_columns=["k"],
        num_buckets=8,
    )
    keys = spark.createDataFrame([(3, "a"), (11, "b"), (3, "b")], "k int, p string")
    partitions, buckets = lookup.key_scope(table, keys)
    assert sorted(partitions) == ["p=a", "p=b"]
    assert sorted(buckets) == sorted({hive_bucket([3], ["int"], 8), hive_bucket([11], ["int"], 8)})


def test_read_optimized_and_virtual_columns(spark, catalog):
    make_table(catalog, "ro", [("k", "int")], primary_key=["k"])
    with Transaction(catalog) as txn:
        txn.insert_overwrite("ro", spark.createDataFrame([(1,), (2,)], "k int"))
    with Transaction(catalog) as txn:
        txn.insert("ro", spark.createDataFrame([(3,)], "k int"))
    assert sorted(r["k"] for r in rows_of(catalog, "ro")) == [1, 2, 3]
    assert sorted(r["k"] for r in rows_of(catalog, "ro", read_optimized=True)) == [1, 2]
    df = reads.read_table(spark, catalog, "ro", row_id=True, file_name=True)
    got = {r["k"]: r for r in df.collect()}
    delta_file = Path(got[3]["INPUT__FILE__NAME"])
    assert delta_file.parent.name == "delta_0000002_0000002_0000" and delta_file.is_file()
    assert Path(got[1]["INPUT__FILE__NAME"]).parent.name == "base_0000001"
    writer = int(delta_file.name.split("_")[1])
    assert got[3]["ROW__ID"].asDict() == {
        "writeid": 2,
        "bucketid": encode_bucket_property(writer, 0),
        "rowid": 0,
    }


@pytest.mark.parametrize("path", ["spark", "arrow"])
def test_empty_null_and_default_name_share_hive_default_partition(spark, catalog, path):
    """NULL, "" and the literal __HIVE_DEFAULT_PARTITION__ in one batch go to Hive's default
    partition (one directory), read back as NULL, and a later upsert of any of them finds the
    stored row instead of adding a second one."""
    import pyarrow as pa

    make_table(
        catalog,
        "dp.t",
        [("k", "int"), ("v", "string")],
        partition_columns=[Column("p", "string")],
        primary_key=["k"],
        bucket_columns=["k"],
        num_buckets=2,
    )
    kinds = [None, "", "__HIVE_DEFAULT_PARTITION__", "x"]
    # 40 rows: the three spellings interleave across both buckets after the sort
    rows = [(k, f"v{k}", kinds[k % 4]) for k in range(40)]

    def batch(rs):
        if path == "spark":
            return spark.createDataFrame(rs, "k int, v string, p string")
        return pa.table(
            {
                "k": pa.array([r[0] for r in rs], pa.int32()),
                "v": [r[1] for r in rs],
                "p": [r[2] for r in rs],
            }
        )

    with Transaction(catalog) as txn:
        txn.upsert("dp.t", batch(rows))
    location = Path(catalog.get_table("dp.t").location)
    assert sorted(p.name for p in location.iterdir() if p.is_dir()) == [
        "p=__HIVE_DEFAULT_PARTITION__",
        "p=x",
    ]
    expected = [(k, f"v{k}", None if k % 4 < 3 else "x") for k in range(40)]
    assert sorted((r["k"], r["v"], r["p"]) for r in rows_of(catalog, "dp.t")) == expected
    with Transaction(catalog) as txn:
        res = txn.upsert("dp.t", batch([(0, "A", ""), (1, "B", "__HIVE_DEFAULT_PARTITION__")]))
    assert (res.rows_updated, res.rows_inserted) == (2, 0)
    expected[:2] = [(0, "A", None), (1, "B", None)]
    assert sorted((r["k"], r["v"], r["p"]) for r in rows_of(catalog, "dp.t")) == expected


def test_arrow_rows_match_columns_case_insensitively(catalog):
    """A pyarrow upsert names columns in any case, as Spark and Hive do; two columns that
    differ only in case are refused."""
    import pyarrow as pa

    make_table(
        catalog, "ci.t", [("id", "int"), ("Name", "string")], primary_key=["id"], num_buckets=1
    )
    with Transaction(catalog) as txn:
        txn.upsert("ci.t", pa.table({"ID": pa.array([1], pa.int32()), "NAME": ["x"]}))
    assert [(r["id"], r["name"]) for r in rows_of(catalog, "ci.t")] == [(1, "x")]
    with pytest.raises(SchemaMismatchError, match="differ only in case"):
        with Transaction(catalog) as txn:
            txn.upsert(
                "ci.t", pa.table({"id": pa.array([2], pa.int32()), "name": ["y"], "NAME": ["z"]})
            )
