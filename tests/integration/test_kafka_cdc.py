"""Kafka as a CDC source, for real: PostgreSQL 15 -> Debezium 3.6.1 (transaction metadata on)
-> a Kafka 4.3.0 broker -> acidflow in batch mode (``spark.read.format("kafka")``) and as a
Structured Streaming query (``foreachBatch``) on Spark 4.3.0 with Spark's Kafka connector.

One Debezium connector for the module; each test applies it under its own source name (its
own offsets) into a fresh warehouse."""

from __future__ import annotations

import tempfile
import threading
import time
import uuid

import psycopg2
import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from acidflow.catalog import SqlCatalog
from acidflow.cdc.apply import CdcOptions
from acidflow.cdc.kafka import KafkaOptions, apply_kafka, drain, source_state
from acidflow.cdc.offsets import KafkaDataLossError
from acidflow.cdc.stream import run_kafka_stream
from acidflow.cli import app
from acidflow.read.table import read_table
from tests.support.kafka import (
    debezium_postgres_config,
    delete_records,
    produce,
    require_kafka_spark_jars,
)
from tests.support.postgres import create_database, drop_database, drop_replication_slot

pytestmark = pytest.mark.postgres


def _connect(url: str):
    u = make_url(url)
    return psycopg2.connect(
        host=u.host, port=u.port, user=u.username, dbname=u.database, password=u.password or ""
    )


def _tx(conn, *statements: str) -> None:
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
    conn.commit()


@pytest.fixture(scope="module")
def debezium(postgres_url, kafka, kafka_connect):
    """A database with ``public.items`` captured by one Debezium connector (pgoutput,
    transaction metadata, tombstones): ``(connection, topic prefix)``."""
    require_kafka_spark_jars()
    suffix = uuid.uuid4().hex[:8]
    dbname, slot, prefix = f"kcdc_{suffix}", f"dbz_{suffix}", f"kc{suffix}"
    url = create_database(postgres_url, dbname)
    conn = _connect(url)
    _tx(
        conn,
        "CREATE TABLE public.items (id int PRIMARY KEY, name text, qty int)",
        "ALTER TABLE public.items REPLICA IDENTITY FULL",
    )
    name = f"pg-{suffix}"
    kafka_connect.create_connector(
        name,
        debezium_postgres_config(url, topic_prefix=prefix, tables=["public.items"], slot_name=slot),
    )
    kafka_connect.wait_running(name)
    deadline = time.monotonic() + 60
    with conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
            conn.commit()
            if row and row[0]:
                break
            time.sleep(0.25)
    try:
        yield conn, prefix
    finally:
        kafka_connect.delete_connector(name)
        conn.close()
        admin = _connect(postgres_url)
        admin.autocommit = True
        with admin.cursor() as cur:
            drop_replication_slot(cur, slot)
        admin.close()
        drop_database(postgres_url, dbname)


@pytest.fixture
def catalog(warehouse):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    yield cat
    cat.close()


def _pg_rows(conn) -> dict[int, tuple]:
    with conn.cursor() as cur:
        cur.execute("SELECT id, name, qty FROM public.items")
        out = {r[0]: r for r in cur.fetchall()}
    conn.commit()
    return out


def _table_rows(spark, catalog, name="default.items") -> dict[int, tuple]:
    if not catalog.table_exists(name):
        return {}
    return {
        r["id"]: (r["id"], r["name"], r["qty"])
        for r in read_table(spark, catalog, name).select("id", "name", "qty").collect()
    }


def _kopts(kafka, prefix: str, source: str, **kw) -> KafkaOptions:
    return KafkaOptions(
        source=source,
        bootstrap_servers=kafka.bootstrap_servers,
        topics=[f"{prefix}.public.items"],
        transaction_topic=f"{prefix}.transaction",
        **kw,
    )


def _until_equal(fn, conn, spark, catalog, timeout_s: float = 90.0) -> list:
    """Run ``fn`` (one apply round) until the table equals PostgreSQL's; returns the reports."""
    reports: list = []
    deadline = time.monotonic() + timeout_s
    while True:
        reports += fn()
        if _table_rows(spark, catalog) == _pg_rows(conn):
            return reports
        assert time.monotonic() < deadline, (_table_rows(spark, catalog), _pg_rows(conn))
        time.sleep(1)


OPTIONS = dict(fmt="debezium", auto_create=True, quarantine_threshold=0.5)


@pytest.mark.slow
def test_batch_mode_applies_debezium_exactly_once(spark, catalog, kafka, debezium):
    conn, prefix = debezium
    _tx(conn, *(f"INSERT INTO public.items VALUES ({i}, 'n{i}', {i})" for i in range(1, 6)))
    _tx(conn, "UPDATE public.items SET name = 'one', qty = 10 WHERE id = 1")
    _tx(conn, "DELETE FROM public.items WHERE id = 2")
    _tx(conn, "UPDATE public.items SET id = 30 WHERE id = 3")  # a key change
    _tx(  # several statements in one source transaction
        conn,
        "INSERT INTO public.items VALUES (6, 'six', 6)",
        "UPDATE public.items SET qty = 66 WHERE id = 6",
        "DELETE FROM public.items WHERE id = 4",
        "UPDATE public.items SET name = 'five' WHERE id = 5",
    )
    options = CdcOptions(**OPTIONS)
    # a small cap: ranges end inside source transactions and are cut back to whole ones
    kopts = _kopts(kafka, prefix, "batch", max_offsets=2)
    reports = _until_equal(
        lambda: [r for r in drain(spark, catalog, options, kopts) if r.batch_id],
        conn,
        spark,
        catalog,
    )
    assert reports and all(r.status in ("applied", "empty") for r in reports)
    batches = [b for b in catalog.list_batches(kind="kafka") if b.source == "batch"]
    assert len(batches) == len(reports)
    for earlier, later in zip(batches, batches[1:]):  # each batch starts where the last ended
        assert later.details["offsets"]["start"] == earlier.details["offsets"]["end"]
    # whole source transactions: no batch ends inside one (the END of each applied
    # transaction is in the range, and the waiting ones are not). A range the cap ends
    # between a delete and its tombstone leaves the tombstone (no transaction, nothing to
    # apply) alone in a later range when the next transaction is not complete yet
    events = {r.batch_id: sum(t.get("events", 0) for t in r.tables.values()) for r in reports}
    assert all(b.details["source_transactions"] >= 1 or not events[b.batch_id] for b in batches)

    # a rerun (an Airflow retry): the same offsets, nothing applied
    again = apply_kafka(spark, catalog, options, kopts)
    assert again.status == "idle" and not again.batch_id
    assert len(catalog.list_batches(kind="kafka")) == len(batches)

    # new changes: only they are applied, from the recorded offsets on
    end_before = source_state(catalog, "batch")[0]
    _tx(conn, "INSERT INTO public.items VALUES (7, 'seven', 7)")
    more = _until_equal(
        lambda: [r for r in drain(spark, catalog, options, kopts) if r.batch_id],
        conn,
        spark,
        catalog,
    )
    new = [b for b in catalog.list_batches(kind="kafka") if b.source == "batch"][len(batches) :]
    assert len(new) == len(more) >= 1
    assert new[0].details["offsets"]["start"] == end_before
    stats = [s for r in more for s in r.tables.values()]
    assert sum(s.get("rows_inserted", 0) for s in stats) == 1
    assert sum(s.get("rows_updated", 0) + s.get("rows_deleted", 0) for s in stats) == 0


def _gg(i: int, op: str = "I") -> dict:
    return {
        "table": "HR.EMP",
        "op_type": op,
        "op_ts": f"2024-01-01 00:00:{i:02d}.000000",
        "pos": f"{i:020d}",
        "primary_keys": ["ID"],
        "after": {"ID": i, "NAME": f"e{i}"},
    }


def test_goldengate_topic_and_offsets_lost_to_retention(spark, catalog, kafka):
    require_kafka_spark_jars()
    topic = f"gg{uuid.uuid4().hex[:6]}.HR.EMP"
    produce(spark, kafka.bootstrap_servers, topic, [_gg(i) for i in range(1, 4)] + [b"poison"])
    options = CdcOptions(
        fmt="goldengate", auto_create=True, target_db="hr", quarantine_threshold=0.5
    )
    kopts = KafkaOptions(source="gg", bootstrap_servers=kafka.bootstrap_servers, topics=[topic])
    r = apply_kafka(spark, catalog, options, kopts)
    assert r.status == "applied" and r.tables["hr.emp"]["rows_inserted"] == 3
    assert r.quarantined == 1
    assert source_state(catalog, "gg")[0] == {topic: {"0": 4}}
    assert sorted(_table_rows_gg(spark, catalog)) == [1, 2, 3]

    # more records arrive, and retention deletes some before they were applied
    produce(spark, kafka.bootstrap_servers, topic, [_gg(i) for i in range(4, 8)])
    delete_records(kafka, topic, 0, 6)
    with pytest.raises(KafkaDataLossError) as e:
        apply_kafka(spark, catalog, options, kopts)
    assert (e.value.topic, e.value.partition, e.value.start, e.value.earliest) == (topic, 0, 4, 6)
    assert f"topic {topic} partition 0: offsets 4..5 are no longer available" in str(e.value)
    assert sorted(_table_rows_gg(spark, catalog)) == [1, 2, 3]  # nothing applied
    assert source_state(catalog, "gg")[0] == {topic: {"0": 4}}


def _table_rows_gg(spark, catalog) -> list[int]:
    return [r["id"] for r in read_table(spark, catalog, "hr.emp").select("id").collect()]


@pytest.mark.slow
def test_stream_applies_once_across_restarts_and_quarantines_poison(
    spark, catalog, kafka, debezium, tmp_path
):
    conn, prefix = debezium
    _tx(conn, "INSERT INTO public.items VALUES (100, 'a', 1), (101, 'b', 2)")
    # a micro-batch may hold the poison message alone: a threshold of 1 tolerates that
    options = CdcOptions(**{**OPTIONS, "quarantine_threshold": 1.0})
    kopts = _kopts(kafka, prefix, "stream")
    ckpt = str(tmp_path / "ckpt")

    def stream(checkpoint: str, idle_s: float = 6.0):
        return run_kafka_stream(
            spark, catalog, options, kopts, trigger_seconds=1, checkpoint=checkpoint,
            timeout_s=90, idle_s=idle_s,
        )  # fmt: skip

    first = stream(ckpt)
    assert first.reports and _table_rows(spark, catalog) == _pg_rows(conn)
    n = len(catalog.list_batches(kind="kafka"))

    # new changes and a poison message: the restart from the checkpoint applies them, once
    produce(spark, kafka.bootstrap_servers, f"{prefix}.public.items", [b"\x00poison"])
    _tx(
        conn,
        "UPDATE public.items SET qty = 20 WHERE id = 101",
        "DELETE FROM public.items WHERE id = 100",
    )
    second = stream(ckpt)
    assert _table_rows(spark, catalog) == _pg_rows(conn)
    assert sum(r.quarantined for r in second.reports) == 1
    (qfile,) = [r.quarantine_file for r in second.reports if r.quarantine_file]
    with open(qfile) as f:
        assert f"Kafka topic {prefix}.public.items partition 0 offset" in f.read()
    n2 = len(catalog.list_batches(kind="kafka"))
    assert n2 > n

    # a lost checkpoint: the query starts from the earliest offsets; nothing is applied twice
    third = stream(str(tmp_path / "lost"), idle_s=5.0)
    assert third.reports == [] and third.micro_batches >= 1
    assert len(catalog.list_batches(kind="kafka")) == n2
    assert _table_rows(spark, catalog) == _pg_rows(conn)


@pytest.mark.slow
def test_cdc_stream_command_applies_then_says_when_nothing_is_new(
    spark, catalog, kafka, tmp_path, monkeypatch
):
    """`acidflow cdc stream` as a user runs it, started before its topic exists (Debezium
    creates a table's topic with its first change): the records produced a few seconds later
    are applied; a second run from the catalog's offsets finds nothing and says so (not an
    empty table). Without --checkpoint each run's temporary checkpoint is deleted when it
    stops."""
    require_kafka_spark_jars()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    topic = f"ggcli{uuid.uuid4().hex[:6]}.HR.EMP"
    later = threading.Timer(
        4, produce, (spark, kafka.bootstrap_servers, topic, [_gg(i) for i in range(1, 3)])
    )
    later.start()
    args = ["cdc", "stream", "--bootstrap-servers", kafka.bootstrap_servers, "--source", "ggcli"]
    args += ["--topics", topic, "--input-format", "goldengate", "--auto-create"]
    args += ["--target-db", "hr", "--trigger-seconds", "1"]
    first = CliRunner().invoke(app, [*args, "--max-batches", "1", "--timeout", "120"])
    later.join()
    assert first.exit_code == 0, first.output
    assert "hr.emp" in first.output and "applied" in first.output
    assert sorted(_table_rows_gg(spark, catalog)) == [1, 2]
    again = CliRunner().invoke(app, [*args, "--timeout", "6"], env={"COLUMNS": "250"})
    assert again.exit_code == 0, again.output
    assert "nothing to apply" in again.output and f"on {topic} (source ggcli)" in again.output
    assert sorted(_table_rows_gg(spark, catalog)) == [1, 2]
    assert not list(tmp_path.glob("acidflow-kafka-ckpt-*"))
