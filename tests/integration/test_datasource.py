"""The ``acid`` Spark data source (acidflow.datasource) with real parts: the shared Spark
session, a SQLite catalog, ORC files on disk. Reads equal ``reads.read_table`` /
``read_incremental``; ``df.write.format("acid")`` appends and overwrites like
``Transaction.insert`` / ``insert_overwrite`` in one transaction, aborts cleanly when a task
fails, and is read by Hive 3.1.3's reader like acidflow reads it."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from acidflow import datasource
from acidflow.catalog import Column, SqlCatalog, TableDef, WriteConflictError
from acidflow.compactor import cleaner
from acidflow.datasource.common import AGENT
from acidflow.engine.transaction import Transaction
from acidflow.read import snapshot
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS
from acidflow.tableops.timeline import timeline

pytestmark = pytest.mark.spark

PB = "default.acc"  # partitioned by ds, 2 buckets on id
PLAIN = "default.plain"  # no partitions, no buckets
SHAPES = {
    PB: dict(
        columns=[("id", "bigint"), ("v", "string"), ("amt", "decimal(10,2)")],
        partition_columns=[("ds", "string")],
        num_buckets=2,
        bucket_columns=["id"],
    ),
    PLAIN: dict(columns=[("id", "int"), ("v", "string"), ("ts", "timestamp")]),
}


@pytest.fixture
def catalog(warehouse, spark):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    datasource.register(spark)  # bind the source to this test's warehouse (env of the fixture)
    return cat


def make_table(catalog, name, **kw):
    shape = {**SHAPES[name.removesuffix("_twin")], **kw}
    return catalog.create_table(
        TableDef(
            name=name,
            columns=[Column(n, t) for n, t in shape.pop("columns")],
            partition_columns=[Column(n, t) for n, t in shape.pop("partition_columns", [])],
            **shape,
        )
    )


def frame(spark, name, ids, v="x", parts=4):
    """Rows for the table ``name`` (both shapes), ``parts`` Spark partitions."""
    if name == PLAIN:
        rows = [(i, f"{v}{i}", dt.datetime(2024, 1, 1, 12) + dt.timedelta(minutes=i)) for i in ids]
        return spark.createDataFrame(rows, "id int, v string, ts timestamp").repartition(parts)
    rows = [(i, f"{v}{i}", decimal.Decimal(i) / 4, "a" if i % 3 else "b") for i in ids]
    return spark.createDataFrame(
        rows, "id bigint, v string, amt decimal(10,2), ds string"
    ).repartition(parts)


def ms(rows, drop=()):
    """Multiset of rows (Spark Rows or dicts), ROW__ID as a tuple."""
    out = collections.Counter()
    for r in rows:
        d = r.asDict(recursive=True) if hasattr(r, "asDict") else dict(r)
        out[
            tuple(
                sorted(
                    (k, tuple(v.values()) if isinstance(v, dict) else v)
                    for k, v in d.items()
                    if k not in drop
                )
            )
        ] += 1
    return out


def acid(spark, name, **options):
    reader = spark.read.format("acid")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(name)


def history(spark, catalog, name):
    """W1 insert overwrite (a base), W2 update, W3 delete, W4 insert: deltas and delete
    deltas on top of a base."""
    with Transaction(catalog) as t:
        t.insert_overwrite(name, frame(spark, name, range(40)))
    with Transaction(catalog) as t:
        t.update(name, "id < 6", set={"v": "'upd'"})
    with Transaction(catalog) as t:
        t.delete(name, where="id % 7 = 0")
    with Transaction(catalog) as t:
        t.insert(name, frame(spark, name, range(40, 50)))


@pytest.mark.parametrize("name", [PB, PLAIN])
def test_reads_equal_read_table(spark, catalog, name):
    make_table(catalog, name)
    history(spark, catalog, name)
    for opts, kw in [
        ({}, {}),
        ({"asOfWriteId": 2}, {"as_of_write_id": 2}),
        ({"readOptimized": "true"}, {"read_optimized": True}),
        ({"rowId": "true"}, {"row_id": True}),
        ({"rowId": "true", "asOfWriteId": 3}, {"row_id": True, "as_of_write_id": 3}),
    ]:
        df = acid(spark, name, **opts)
        expected = reads.read_table(spark, catalog, name, **kw)
        assert df.schema == expected.schema, opts
        got = df.collect()
        assert ms(got) == ms(expected.collect()), opts
        assert ms(got) == ms(reads.read_table(None, catalog, name, **kw).to_pylist()), opts
    assert acid(spark, name, readOptimized="true").count() == 40  # base_1 only
    # incremental: the rows and columns of read_incremental
    for start, end in [(1, 3), (2, None), (0, 4), (4, 4)]:
        opts = {"fromWriteId": start, **({"toWriteId": end} if end is not None else {})}
        df = acid(spark, name, **opts)
        expected = reads.read_incremental(spark, catalog, name, start, end)
        assert (
            df.columns
            == expected.columns
            == ["op", "write_id"] + reads.read_table(spark, catalog, name, row_id=True).columns
        )
        assert ms(df.collect()) == ms(expected.collect()), opts
    assert acid(spark, name, fromWriteId=2, toWriteId=3).where("op = 'D'").count() == 6


def test_read_registers_the_snapshot_and_pins_it(spark, catalog):
    make_table(catalog, PLAIN)
    history(spark, catalog, PLAIN)
    df = acid(spark, PLAIN)
    readers = [r for r in catalog.list_readers(PLAIN) if r.agent_info == AGENT]
    assert len(readers) == 1 and readers[0].high_watermark == 4
    before = ms(df.collect())
    with Transaction(catalog) as t:
        t.insert(PLAIN, frame(spark, PLAIN, range(100, 110)))
    assert ms(df.collect()) == before  # the DataFrame keeps its snapshot
    assert acid(spark, PLAIN).count() == sum(before.values()) + 10


def test_bad_options_and_unknown_table(spark, catalog):
    make_table(catalog, PLAIN)
    with pytest.raises(Exception, match="default.nope"):
        acid(spark, "default.nope")
    with pytest.raises(Exception, match="unknown option.*asofwriteidd"):
        acid(spark, PLAIN, asOfWriteIdd=1)
    with pytest.raises(Exception, match="toWriteId needs fromWriteId"):
        acid(spark, PLAIN, toWriteId=1)
    with pytest.raises(Exception, match="not an integer"):
        acid(spark, PLAIN, asOfWriteId="x")
    with pytest.raises(Exception, match="name the table"):
        spark.read.format("acid").load()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_schema_errors_before_anything_is_written(spark, catalog, warehouse):
    table = make_table(catalog, PLAIN)
    txns = len(catalog.list_transactions())
    files = _files(Path(table.location)) if Path(table.location).exists() else set()
    good = frame(spark, PLAIN, range(3))
    for df, words in [
        (good.drop("ts"), ["missing column ts"]),
        (good.withColumn("extra", F.lit(1)), ["not in the table: extra"]),
        (good.withColumn("id", F.lit("abc")), ["column id: string cannot"]),
    ]:
        with pytest.raises(Exception) as err:
            df.write.format("acid").mode("append").save(PLAIN)
        assert "schema mismatch for table default.plain" in str(err.value)
        for w in words:
            assert w in str(err.value)
    assert len(catalog.list_transactions()) == txns
    assert (_files(Path(table.location)) if Path(table.location).exists() else set()) == files


@pytest.mark.parametrize("name", [PB, PLAIN])
def test_append_and_overwrite_like_transaction_in_one_commit(spark, catalog, name):
    """The same writes through the data source and through Transaction.insert /
    insert_overwrite into a twin table give the same rows and commit statistics; each data
    source write is one transaction: one new write id, one timeline entry."""
    twin = name + "_twin"
    make_table(catalog, name)
    make_table(catalog, twin)
    steps = [
        ("append", frame(spark, name, range(30))),
        ("append", frame(spark, name, range(20, 45), v="y", parts=3)),
        ("overwrite", frame(spark, name, range(100, 120, 2), v="o", parts=3)),
        ("append", frame(spark, name, range(5), v="z", parts=1)),
    ]
    for i, (mode, df) in enumerate(steps, start=1):
        df.write.format("acid").mode(mode).save(name)
        with Transaction(catalog) as t:
            (t.insert if mode == "append" else t.insert_overwrite)(twin, df)
        entries = timeline(catalog, name)
        assert len(entries) == i and entries[0].write_id == i
        assert catalog.valid_write_ids(name).high_watermark == i
        ours, theirs = catalog.commit_records(name)[-1], catalog.commit_records(twin)[-1]
        assert (
            ours.operations
            == theirs.operations
            == ["insert" if mode == "append" else "insert_overwrite"]
        )
        assert ours.stats["rows_inserted"] == theirs.stats["rows_inserted"] == df.count()
        assert {p: s["rows"] for p, s in ours.stats["partitions"].items()} == {
            p: s["rows"] for p, s in theirs.stats["partitions"].items()
        }
        assert ms(reads.read_table(None, catalog, name).to_pylist()) == ms(
            reads.read_table(None, catalog, twin).to_pylist()
        ), (i, mode)
    # ROW__IDs are unique per partition (a statement id per task keeps bucketed ones apart)
    rows = reads.read_table(None, catalog, name, row_id=True).to_pylist()
    keys = [(r.get("ds"), tuple(r["ROW__ID"].values())) for r in rows]
    assert len(set(keys)) == len(keys)


def test_overwrite_keeps_untouched_partitions(spark, catalog):
    make_table(catalog, PB)
    frame(spark, PB, range(30)).write.format("acid").mode("append").save(PB)
    only_a = frame(spark, PB, [1, 2, 4, 5], v="o", parts=2)  # ids not divisible by 3: ds=a
    only_a.write.format("acid").mode("overwrite").save(PB)
    rows = reads.read_table(None, catalog, PB).to_pylist()
    assert sorted(r["id"] for r in rows if r["ds"] == "a") == [1, 2, 4, 5]
    assert sorted(r["id"] for r in rows if r["ds"] == "b") == list(range(0, 30, 3))
    assert not list(Path(catalog.get_table(PB).location).glob("*/delta_0000002_*"))


@pytest.mark.parametrize("name", [PB, PLAIN])
def test_failing_task_aborts_cleanly(spark, catalog, name):
    """A task raising in the middle of the data: the write fails, the table is unchanged and
    readable, the transaction is aborted and the cleaner removes its files."""
    make_table(catalog, name)
    history(spark, catalog, name)
    before = ms(reads.read_table(None, catalog, name, row_id=True).to_pylist())

    def boom(i):
        if i == 37:
            raise RuntimeError("boom in the data")
        return i

    bad = frame(spark, name, range(200, 260), parts=3).withColumn(
        "id", F.udf(boom, "int" if name == PLAIN else "bigint")(F.col("id") - 200)
    )
    for mode in ("append", "overwrite"):
        with pytest.raises(Exception, match="boom in the data"):
            bad.write.format("acid").mode(mode).save(name)
        txn = max(catalog.list_transactions(), key=lambda t: t.txn_id)
        assert txn.agent_info == AGENT and txn.state == "aborted"
        assert ms(reads.read_table(None, catalog, name, row_id=True).to_pylist()) == before
        assert ms(acid(spark, name, rowId="true").collect()) == before
        assert len(catalog.commit_records(name)) == 4
    aborted = catalog.valid_write_ids(name).aborted_write_ids
    assert len(aborted) == 2
    cleaner.run_cleaner(catalog)
    left = [
        p
        for p in Path(catalog.get_table(name).location).rglob("*")
        if any(f"_{w:07d}" in p.name for w in aborted)
    ]
    assert left == []
    frame(spark, name, range(300, 303)).write.format("acid").mode("append").save(name)
    assert acid(spark, name).count() == sum(before.values()) + 3


def test_keyed_append_of_an_existing_key_is_refused_like_insert(spark, catalog):
    """An append into a keyed table refuses a stored key -- through the data source as through
    Transaction.insert (the twin table), naming the table, the key and its write id; nothing of
    the write is visible. A new key enters the key-level write set, so an overlapping upsert of
    it loses to the append."""
    twin = PLAIN + "_twin"
    for name in (PLAIN, twin):
        make_table(catalog, name, primary_key=["id"])
        with Transaction(catalog) as t:
            t.insert(name, frame(spark, PLAIN, range(5)))
    for name in (PLAIN, twin):
        batch = frame(spark, PLAIN, [3, 9], v="new", parts=1)
        with pytest.raises(Exception, match=r"1 primary key value\(s\) already in the table"):
            if name == PLAIN:
                batch.write.format("acid").mode("append").save(name)
            else:
                with Transaction(catalog) as t:
                    t.insert(name, batch)
        assert len(catalog.commit_records(name)) == 1
    outcome = {}
    for name in (PLAIN, twin):
        racer = Transaction(catalog, heartbeat_s=0)
        racer.begin()
        racer.upsert(name, frame(spark, PLAIN, [9], v="racer"))
        batch = frame(spark, PLAIN, [9], v="new", parts=1)
        if name == PLAIN:
            batch.write.format("acid").mode("append").save(name)
        else:
            with Transaction(catalog) as t:
                t.insert(name, batch)
        try:
            racer.commit()
            outcome[name] = "committed"
        except WriteConflictError:
            outcome[name] = "conflict"
    assert outcome == {PLAIN: "conflict", twin: "conflict"}
    assert ms(reads.read_table(None, catalog, PLAIN).to_pylist()) == ms(
        reads.read_table(None, catalog, twin).to_pylist()
    )
    assert sorted(r["id"] for r in reads.read_table(None, catalog, PLAIN).to_pylist()) == [
        0,
        1,
        2,
        3,
        4,
        9,
    ]


def _ids(catalog, name):
    return collections.Counter(r["id"] for r in reads.read_table(None, catalog, name).to_pylist())


@pytest.mark.parametrize("name", [PB, PLAIN])
def test_keyed_append_twice_is_refused_and_on_existing_option(spark, catalog, name):
    """The same append run twice (an Airflow retry of the Spark task) used to leave two rows
    per key; the second run is now refused and commits nothing. ``onExisting=ignore`` appends
    only the new keys, ``onExisting=upsert`` replaces the stored rows (one statement: delete
    events and new rows in one write id)."""
    make_table(catalog, name, primary_key=["id"])
    first = frame(spark, name, range(10))
    first.write.format("acid").mode("append").save(name)
    # each task names the stored keys among its rows
    with pytest.raises(
        Exception, match=rf"insert into {name}: \d+ primary key value\(s\) already in the table"
    ):
        first.write.format("acid").mode("append").save(name)
    assert _ids(catalog, name) == collections.Counter(range(10))
    assert len(catalog.commit_records(name)) == 1
    (
        frame(spark, name, range(5, 15), v="ign")
        .write.format("acid")
        .mode("append")
        .option("onExisting", "ignore")
        .save(name)
    )
    got = {r["id"]: r["v"] for r in reads.read_table(None, catalog, name).to_pylist()}
    assert got == {i: f"x{i}" if i < 10 else f"ign{i}" for i in range(15)}
    (
        frame(spark, name, range(12, 18), v="up")
        .write.format("acid")
        .mode("append")
        .option("onExisting", "upsert")
        .save(name)
    )
    assert _ids(catalog, name) == collections.Counter(range(18))
    got = {r["id"]: r["v"] for r in reads.read_table(None, catalog, name).to_pylist()}
    assert got == {i: ("x" if i < 10 else "ign" if i < 12 else "up") + str(i) for i in range(18)}
    last = catalog.commit_records(name)[-1]
    assert last.operations == ["update"]  # the components of Transaction.upsert's split-update
    assert (last.stats["rows_inserted"], last.stats["rows_updated"]) == (3, 3)
    with pytest.raises(Exception, match="onExisting=upsert applies to appends"):
        frame(spark, name, [1]).write.format("acid").mode("overwrite").option(
            "onExisting", "upsert"
        ).save(name)


def test_keyed_append_refuses_repeated_and_null_keys(spark, catalog):
    """Keys repeated inside one task or across two tasks, and NULL keys, refuse the write."""
    make_table(catalog, PLAIN, primary_key=["id"])
    ts = dt.datetime(2024, 1, 1)
    rows = [(1, "a", ts), (2, "b", ts), (3, "c", ts), (1, "d", ts)]
    # two Spark partitions, [1, 2] and [3, 1]: key 1 is written by two tasks
    across = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, 2), "id int, v string, ts timestamp"
    )
    assert across.rdd.glom().map(len).collect() == [2, 2]
    for df in (across, across.coalesce(1)):
        with pytest.raises(Exception, match=r"1 repeated within the batch.*\{'id': 1\}"):
            df.write.format("acid").mode("append").save(PLAIN)
    nulls = spark.createDataFrame(
        [(None, "n", ts), (5, "e", ts)], "id int, v string, ts timestamp"
    ).coalesce(1)
    with pytest.raises(
        Exception, match=rf"insert into {PLAIN}: 1 row\(s\) with NULL in primary key column id"
    ):
        nulls.write.format("acid").mode("append").save(PLAIN)
    assert reads.read_table(None, catalog, PLAIN).num_rows == 0
    assert catalog.commit_records(PLAIN) == []
    assert {t.state for t in catalog.list_transactions()} == {"aborted"}


def test_idempotent_write_with_txn_app_id_and_version_commits_once(spark, catalog):
    """Delta Lake's ``txnAppId`` / ``txnVersion``: a retried write with the same pair commits
    nothing (on an unkeyed table, where a second append would else double the rows); a lower
    version is skipped, a higher one applied; the pair is per table."""
    make_table(catalog, PLAIN)
    twin = PLAIN + "_twin"
    make_table(catalog, twin)

    def write(name, ids, version, app="dag.task"):
        (
            frame(spark, PLAIN, ids)
            .write.format("acid")
            .mode("append")
            .option("txnAppId", app)
            .option("txnVersion", version)
            .save(name)
        )

    write(PLAIN, range(10), 5)
    write(PLAIN, range(10), 5)  # the retry
    assert _ids(catalog, PLAIN) == collections.Counter(range(10))
    assert len(catalog.commit_records(PLAIN)) == 1
    [b] = catalog.list_batches("datasource")
    assert (b.batch_id, b.state) == (f"datasource:{PLAIN}:dag.task:5", "committed")
    assert b.details == {"table": PLAIN, "app_id": "dag.task", "version": 5}
    write(PLAIN, range(100, 105), 4)  # older than the last applied: skipped
    assert len(catalog.commit_records(PLAIN)) == 1
    write(PLAIN, range(100, 105), 6)
    write(PLAIN, range(200, 203), 5, app="other")
    write(twin, range(3), 5)  # the same pair on another table is another batch
    assert _ids(catalog, PLAIN) == collections.Counter(
        [*range(10), *range(100, 105), 200, 201, 202]
    )
    assert len(catalog.commit_records(PLAIN)) == 3
    assert _ids(catalog, twin) == collections.Counter(range(3))
    with pytest.raises(Exception, match="takes both txnAppId"):
        frame(spark, PLAIN, [1]).write.format("acid").mode("append").option("txnAppId", "x").save(
            PLAIN
        )


def test_sql_temporary_view(spark, catalog):
    """Spark SQL names: a temporary view USING acid reads, INSERT INTO and INSERT OVERWRITE
    commit through the source; the view keeps the snapshot it was created with."""
    make_table(catalog, PB)
    history(spark, catalog, PB)
    view = datasource.create_temp_view(spark, PB)
    assert view == "acc"
    assert ms(spark.sql("SELECT * FROM acc").collect()) == ms(
        reads.read_table(spark, catalog, PB).collect()
    )
    assert ms(spark.table("acc").collect()) == ms(reads.read_table(spark, catalog, PB).collect())
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW acc_w2 USING acid "
        "OPTIONS (path 'default.acc', asOfWriteId '2')"
    )
    assert ms(spark.sql("SELECT * FROM acc_w2").collect()) == ms(
        reads.read_table(spark, catalog, PB, as_of_write_id=2).collect()
    )
    n = spark.table("acc").count()
    spark.sql("INSERT INTO acc SELECT id + 1000, v, amt, ds FROM acc")
    assert catalog.commit_records(PB)[-1].operations == ["insert"]
    assert reads.read_table(None, catalog, PB).num_rows == 2 * n
    assert spark.table("acc").count() == n  # pinned snapshot
    datasource.create_temp_view(spark, PB)
    assert spark.table("acc").count() == 2 * n
    spark.sql("INSERT OVERWRITE acc SELECT * FROM acc WHERE ds = 'b'")
    assert catalog.commit_records(PB)[-1].operations == ["insert_overwrite"]
    assert reads.read_table(None, catalog, PB).num_rows == 2 * n  # ds=b rewritten as itself
    assert timeline(catalog, PB)[0].write_id == 6


@pytest.mark.slow
def test_hive31_reads_what_the_source_wrote(spark, catalog):
    """Hive 3.1.3's reader (row-by-row and vectorized) reads a bucketed, partitioned table
    written by appends (a statement per task) and an overwrite (base_W with several tasks'
    files of one bucket concatenated) exactly as acidflow reads it."""
    from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow

    make_table(catalog, PB)
    frame(spark, PB, range(60), parts=3).write.format("acid").mode("append").save(PB)
    frame(spark, PB, range(50, 90), v="y", parts=2).write.format("acid").mode("append").save(PB)
    with Hive31Oracle(require_hive31_tools()) as oracle:
        same_as_acidflow(oracle, catalog, PB)
        frame(spark, PB, range(0, 90, 2), v="o", parts=3).write.format("acid").mode(
            "overwrite"
        ).save(PB)
        assert list(Path(catalog.get_table(PB).location).glob("ds=a/base_0000003/bucket_*"))
        rows = same_as_acidflow(oracle, catalog, PB)
        assert len(rows) == 45


def test_split_reads_share_one_bucket_between_partitions(spark, catalog):
    """A one-bucket table read with a small split target: more Spark partitions than buckets
    (stripe ranges of its files), and exactly the rows of the unsplit pyarrow read -- through
    the data source (``splitBytes``) and through ``read_spark``."""
    name = "default.splits"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "bigint"), Column("v", "string")],
            primary_key=["id"],
        )
    )

    def rows(ids, tag):
        return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})

    for ids, tag in ((range(4100), "a"), (range(0, 4100, 41), "u")):
        with Transaction(catalog) as t:
            t.upsert(name, rows(list(ids), tag), stripe_rows=1024, compression="none")
    plan = reads.plan_table(catalog, name)
    assert len(plan.tasks) == 1
    want = snapshot.read_arrow(
        TableFS(plan.table_dir), plan, row_id=True, file_name=True, split_bytes=0
    ).to_pylist()
    df = acid(spark, name, rowId="true", fileName="true", splitBytes="1")
    assert df.rdd.getNumPartitions() > len(plan.tasks)
    assert ms(df.collect()) == ms(want)
    assert acid(spark, name).rdd.getNumPartitions() == 1  # the default target: one bucket
    sdf = snapshot.read_spark(
        spark, plan.table_dir, plan, row_id=True, file_name=True, split_bytes=1
    )
    assert sdf.rdd.getNumPartitions() > len(plan.tasks)
    assert ms(sdf.collect()) == ms(want)
