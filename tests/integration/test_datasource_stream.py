"""``df.writeStream.format("acid")`` (acidflow.datasource.stream) with real parts: the shared
Spark session, a file stream source (one JSON file per micro-batch, ``availableNow``), a
SQLite catalog and ORC files on disk. Each micro-batch is one transaction of its own that also
claims ``(query id, batch id)`` in the batch ledger; a replayed batch id commits nothing."""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

from acidflow import datasource
from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor import cleaner
from acidflow.datasource.common import AGENT
from acidflow.datasource.stream import sink_agent
from acidflow.read import table as reads
from tests.support import history_tables as ht

pytestmark = pytest.mark.spark

T = "default.events"


@pytest.fixture
def catalog(warehouse, spark):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    datasource.register(spark)  # bind the source to this test's warehouse
    yield cat
    cat.close()


def make_table(catalog, keyed=False):
    return catalog.create_table(
        TableDef(
            name=T,
            columns=[Column("id", "int"), Column("v", "string")],
            primary_key=["id"] if keyed else [],
        )
    )


class Feed:
    """A directory of JSON files, one micro-batch each (``maxFilesPerTrigger`` 1, oldest
    first), and the checkpoint of the query reading it."""

    def __init__(self, root: Path):
        self.src, self.ckpt = root / "src", root / "ckpt"
        self.src.mkdir()
        self.n = 0

    def add(self, *batches):
        for rows in batches:
            path = self.src / f"part-{self.n:04d}.json"
            path.write_text("".join(json.dumps({"id": i, "v": v}) + "\n" for i, v in rows))
            os.utime(path, (1_700_000_000 + self.n, 1_700_000_000 + self.n))
            self.n += 1

    def run(self, spark, **options):
        """Run the query until the files are consumed (``availableNow``); returns its id."""
        writer = (
            spark.readStream.schema("id int, v string")
            .option("maxFilesPerTrigger", 1)
            .json(str(self.src))
            .writeStream.format("acid")
            .option("table", T)
            .option("checkpointLocation", str(self.ckpt))
        )
        for k, v in options.items():
            writer = writer.option(k, v)
        query = writer.trigger(availableNow=True).start()
        try:
            query.awaitTermination(300)
        finally:
            query.stop()
        return query.id


def rows(catalog):
    return collections.Counter(
        (r["id"], r["v"]) for r in reads.read_table(None, catalog, T).to_pylist()
    )


def ledger(catalog):
    return sorted(
        (b.details["app_id"], b.details["version"], b.state)
        for b in catalog.list_batches("datasource")
    )


def test_append_stream_one_transaction_per_micro_batch_and_restart(spark, catalog, tmp_path):
    """Three micro-batches append three commits (one write id each), each claiming
    (query id, batch id); no transaction is left open. A restart from the same checkpoint
    with two more files applies only those (the same query id, batches 3 and 4)."""
    make_table(catalog)
    feed = Feed(tmp_path)
    first = [[(i, f"a{i}") for i in range(b * 10, b * 10 + 10)] for b in range(3)]
    feed.add(*first)
    qid = feed.run(spark)
    assert rows(catalog) == collections.Counter(r for b in first for r in b)
    records = catalog.commit_records(T)
    assert len(records) == 3
    assert ledger(catalog) == [(qid, b, "committed") for b in range(3)]
    assert catalog.list_transactions(["open"]) == []
    # one transaction per micro-batch, none held open across micro-batches
    txns = [t for t in catalog.list_transactions() if t.agent_info.startswith(AGENT)]
    assert [t.state for t in txns] == ["committed"] * 3
    assert len({w for t in txns for w in t.write_ids.values()}) == 3
    assert all(b.started_at >= a.committed_at for a, b in zip(txns, txns[1:]))

    # a run that died after opening a micro-batch's transaction: the restart aborts it
    orphan = catalog.open_transaction(agent_info=sink_agent(T, str(feed.ckpt)))
    more = [[(100, "b100"), (101, "b101")], [(102, "b102")]]
    feed.add(*more)
    assert feed.run(spark) == qid
    assert catalog.get_transaction(orphan).state == "aborted"
    assert rows(catalog) == collections.Counter(r for b in [*first, *more] for r in b)
    assert len(catalog.commit_records(T)) == 5
    assert ledger(catalog) == [(qid, b, "committed") for b in range(5)]
    assert catalog.list_transactions(["open"]) == []


def test_replayed_batch_id_commits_nothing(spark, catalog, tmp_path):
    """A crash between the catalog's commit and Spark's ``commits/<id>`` (simulated by
    deleting that file): Spark re-runs the batch with the same id and rows; the sink commits
    nothing, aborts the replay's transaction and removes its files."""
    make_table(catalog)
    feed = Feed(tmp_path)
    feed.add([(1, "x"), (2, "y")], [(3, "z"), (4, "w")])
    qid = feed.run(spark)
    before = rows(catalog)
    assert sum(before.values()) == 4
    (feed.ckpt / "commits" / "1").unlink()
    for crc in feed.ckpt.glob("commits/.1.crc"):
        crc.unlink()
    assert feed.run(spark) == qid
    assert rows(catalog) == before
    assert len(catalog.commit_records(T)) == 2
    assert ledger(catalog) == [(qid, 0, "committed"), (qid, 1, "committed")]
    [replay] = [t for t in catalog.list_transactions(["aborted"])]
    assert "already applied" in (replay.abort_reason or "")
    aborted = catalog.valid_write_ids(T).aborted_write_ids
    assert len(aborted) == 1
    left = [
        p for p in Path(catalog.get_table(T).location).rglob("*") if f"_{aborted[0]:07d}" in p.name
    ]
    assert left == []  # the sink removed the replay's files itself
    assert (feed.ckpt / "commits" / "1").exists()  # Spark completed the batch


def test_upsert_stream_replaces_rows(spark, catalog, tmp_path):
    """``onExisting=upsert`` on a keyed table: a later micro-batch's row replaces the stored
    row of its key; new keys are inserted."""
    make_table(catalog, keyed=True)
    feed = Feed(tmp_path)
    feed.add([(1, "v1"), (2, "v1"), (3, "v1")], [(2, "v2"), (4, "v2")], [(1, "v3"), (2, "v3")])
    feed.run(spark, onExisting="upsert")
    assert rows(catalog) == collections.Counter([(1, "v3"), (2, "v3"), (3, "v1"), (4, "v2")])
    assert len(catalog.commit_records(T)) == 3
    assert catalog.list_transactions(["open"]) == []


def test_failing_micro_batch_leaves_nothing_visible(spark, catalog, tmp_path):
    """Append mode on a keyed table (onExisting=error): a micro-batch with a stored key fails
    the query with the key error; the batches before stay, nothing of the failing one is
    visible, its transaction is aborted and its files are gone; no transaction stays open."""
    make_table(catalog, keyed=True)
    feed = Feed(tmp_path)
    feed.add([(1, "a"), (2, "a")], [(3, "b"), (2, "b")])
    with pytest.raises(StreamingQueryException, match=r"(?s)ExistingKeysError.*default\.events"):
        feed.run(spark)
    assert rows(catalog) == collections.Counter([(1, "a"), (2, "a")])
    assert len(catalog.commit_records(T)) == 1
    assert catalog.list_transactions(["open"]) == []
    cleaner.run_cleaner(catalog)
    aborted = catalog.valid_write_ids(T).aborted_write_ids
    assert aborted
    assert not [
        p
        for p in Path(catalog.get_table(T).location).rglob("*")
        if any(f"_{w:07d}" in p.name for w in aborted)
    ]


def test_complete_mode_and_batch_options_are_refused(spark, catalog, tmp_path):
    """Complete output mode (Spark's overwrite of every micro-batch) is refused naming the
    table and the supported mode, update mode by Spark; txnAppId / txnVersion belong to
    batch writes; the sink needs the checkpointLocation option."""
    make_table(catalog)
    feed = Feed(tmp_path)
    feed.add([(1, "a"), (1, "b")])
    counts = spark.readStream.schema("id int, v string").json(str(feed.src)).groupBy("id").count()
    counts = counts.selectExpr("id", "cast(count as string) as v")
    query = (
        counts.writeStream.format("acid")
        .option("table", T)
        .option("checkpointLocation", str(feed.ckpt))
        .outputMode("complete")
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match=r"default\.events.*output mode append"):
        query.awaitTermination(300)
    shutil.rmtree(feed.ckpt)
    query = (
        counts.writeStream.format("acid")
        .option("table", T)
        .option("checkpointLocation", str(feed.ckpt))
        .outputMode("update")
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="does not support Update mode"):
        query.awaitTermination(300)  # Spark's own refusal for Python sinks
    shutil.rmtree(feed.ckpt, ignore_errors=True)
    with pytest.raises(StreamingQueryException, match="txnappid are for batch writes"):
        feed.run(spark, txnAppId="app")
    # a checkpoint from the session's conf only: the sink needs the option
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "conf_ckpt"))
    try:
        query = (
            spark.readStream.schema("id int, v string")
            .json(str(feed.src))
            .writeStream.format("acid")
            .option("table", T)
            .trigger(availableNow=True)
            .start()
        )
        with pytest.raises(StreamingQueryException, match="needs the option checkpointLocation"):
            query.awaitTermination(300)
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    assert rows(catalog) == collections.Counter()
    assert catalog.list_transactions(["open"]) == []


def test_major_compaction_between_micro_batches_of_a_running_query(spark, catalog, tmp_path):
    """A running query (processing-time trigger) idle between micro-batches holds no
    transaction: a major compaction and the cleaner run then leave the base alone (the
    deltas are cleaned at once); the next micro-batches land on top of it."""
    make_table(catalog)
    feed = Feed(tmp_path)
    feed.add([(1, "a")], [(2, "b")], [(3, "c")])
    query = (
        spark.readStream.schema("id int, v string")
        .option("maxFilesPerTrigger", 1)
        .json(str(feed.src))
        .writeStream.format("acid")
        .option("table", T)
        .option("checkpointLocation", str(feed.ckpt))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert catalog.list_transactions(["open"]) == []
        ht.compact(catalog, T, "major")
        cleaner.run_cleaner(catalog)
        location = Path(catalog.get_table(T).location)
        dirs = [p.name for p in location.iterdir() if p.name.startswith(("base_", "delta_"))]
        assert dirs == ["base_0000003"]
        feed.add([(4, "d")], [(5, "e")])
        query.processAllAvailable()
    finally:
        query.stop()
    assert rows(catalog) == collections.Counter([(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")])
    assert len(catalog.commit_records(T)) >= 5
    assert catalog.list_transactions(["open"]) == []


def test_stream_creates_a_missing_table(spark, catalog, tmp_path):
    """A streaming write into a table the catalog does not have creates it from the stream's
    schema and the table-definition options (acidflow.datasource.create), then upserts."""
    feed = Feed(tmp_path)
    feed.add([(1, "a"), (2, "b")], [(2, "c")])
    feed.run(spark, primaryKey="id", buckets="2", onExisting="upsert")
    table = catalog.get_table(T)
    assert [(c.name, c.hive_type) for c in table.columns] == [("id", "int"), ("v", "string")]
    assert table.primary_key == ["id"] and table.num_buckets == 2
    assert rows(catalog) == collections.Counter([(1, "a"), (2, "c")])
