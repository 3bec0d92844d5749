"""Kafka CDC under faults, for real (Kafka 4.3.0, Spark 4.3.0 with Spark's Kafka connector,
PostgreSQL 15 -> Debezium 3.6.1): a broker restart mid-stream, ``kill -9`` of the stream between
the catalog commit and Spark's checkpoint, poison messages, offsets lost to retention, a column
added at the source, the quarantine threshold of small batches.

Every test checks the outcome (the table equals the expected rows or PostgreSQL's) and the batch
ledger of its source: each batch starts at the end offsets of the one before (no overlap, no
gap), so nothing was lost and nothing applied twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from acidflow.catalog.records import TxnState
from acidflow.cdc.apply import CdcOptions, SchemaDriftError
from acidflow.cdc.kafka import KafkaOptions, apply_kafka, drain, source_state
from acidflow.cdc.offsets import KafkaDataLossError
from acidflow.cdc.stream import (
    KILL_AFTER_COMMITS_ENV,
    StreamRun,
    run_kafka_stream,
    start_kafka_stream,
)
from acidflow.compactor import cleaner
from acidflow.quarantine import QuarantineThresholdError
from acidflow.read.table import read_table
from acidflow.storage.retention import RETAIN_COMMITS, RETAIN_HOURS
from devservers.kafka import KafkaServer, start_kafka
from tests.integration import test_kafka_cdc
from tests.integration.test_kafka_cdc import _pg_rows, _table_rows, _tx
from tests.support import history_tables as ht
from tests.support.kafka import (
    delete_records,
    produce,
    require_kafka_artifacts,
    require_kafka_spark_jars,
)

#: the Debezium connector fixture of test_kafka_cdc (a database of its own for this module)
debezium_connector = test_kafka_cdc.debezium

GG = dict(fmt="goldengate", auto_create=True, target_db="hr")


def _gg(pos: int, key: int, name: str | None = None, op: str = "I") -> dict[str, Any]:
    """A GoldenGate JSON record of ``HR.EMP`` at position ``pos``."""
    image = {"ID": key, "NAME": name or f"e{key}"}
    rec: dict[str, Any] = {
        "table": "HR.EMP",
        "op_type": op,
        "op_ts": f"2024-01-01 00:{pos // 60:02d}:{pos % 60:02d}.000000",
        "pos": f"{pos:020d}",
        "primary_keys": ["ID"],
    }
    if op == "D":
        rec["before"] = image
    else:
        rec["after"] = image
    return rec


def _emp(spark, catalog) -> dict[int, str]:
    if not catalog.table_exists("hr.emp"):
        return {}
    return {
        r["id"]: r["name"]
        for r in read_table(spark, catalog, "hr.emp").select("id", "name").collect()
    }


def _topic() -> str:
    return f"gg{uuid.uuid4().hex[:8]}.HR.EMP"


def _ledger(catalog, source: str) -> list[Any]:
    """The committed Kafka batches of ``source``, oldest first, asserting that each starts
    where the one before ended (no overlap, no gap) and that no batch id repeats."""
    batches = sorted(
        (
            b
            for b in catalog.list_batches(kind="kafka")
            if b.source == source and b.state == TxnState.COMMITTED
        ),
        key=lambda b: b.txn_id,
    )
    for earlier, later in zip(batches, batches[1:]):
        assert later.details["offsets"]["start"] == earlier.details["offsets"]["end"], (
            earlier.details["offsets"],
            later.details["offsets"],
        )
    assert len({b.batch_id for b in batches}) == len(batches)
    return batches


def _inserted(batches: list[Any]) -> int:
    return sum(
        s.get("rows_inserted", 0) for b in batches for s in (b.details.get("tables") or {}).values()
    )


def _wait(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _stop(query, run: StreamRun) -> None:
    """Stop a query between micro-batches."""
    deadline = time.monotonic() + 60
    while run.busy and time.monotonic() < deadline:
        time.sleep(0.1)
    query.stop()


# -- 1. broker restart mid-stream -----------------------------------------------------------


@pytest.fixture(scope="module")
def private_kafka(tmp_path_factory):
    """A broker of this module's own (the restart test stops it; the session's broker and its
    Connect worker are left alone)."""
    require_kafka_spark_jars()
    server = start_kafka(
        tmp_path_factory.mktemp("kafka-restart"), artifacts=require_kafka_artifacts()
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
def test_broker_restart_mid_stream_applies_everything_once(
    spark, catalog, private_kafka: KafkaServer, tmp_path
):
    k = private_kafka
    topic = _topic()
    produce(spark, k.bootstrap_servers, topic, [_gg(i, i) for i in range(1, 4)])
    options = CdcOptions(**GG)
    kopts = KafkaOptions(source="restart", bootstrap_servers=k.bootstrap_servers, topics=[topic])
    ckpt = str(tmp_path / "ckpt")
    run = StreamRun()
    query = start_kafka_stream(
        spark, catalog, options, kopts, trigger_seconds=1, checkpoint=ckpt, run=run
    )
    expected = {1: "one", 3: "e3", 4: "e4", 5: "e5", 6: "e6"}
    try:
        _wait(lambda: _emp(spark, catalog) == {1: "e1", 2: "e2", 3: "e3"}, 90, "the first rows")
        port, data = k.port, k.workdir / "data"
        k.restart(down_s=3)  # the stream's connections drop; the same node comes back
        assert (k.port, k.workdir / "data") == (port, data)
        produce(
            spark,
            k.bootstrap_servers,
            topic,
            [_gg(4, 4), _gg(5, 5), _gg(6, 6), _gg(7, 1, "one", "U"), _gg(8, 2, op="D")],
        )
        _wait(
            lambda: _emp(spark, catalog) == expected or not query.isActive,
            120,
            "the rows produced after the restart (or the stream's failure)",
        )
    finally:
        _stop(query, run)
    if _emp(spark, catalog) != expected:  # the stream failed: it says why, a restart finishes
        assert run.error is not None or query.exception() is not None
        again = run_kafka_stream(
            spark, catalog, options, kopts, trigger_seconds=1, checkpoint=ckpt,
            timeout_s=90, idle_s=5,
        )  # fmt: skip
        assert again.reports
    assert _emp(spark, catalog) == expected
    batches = _ledger(catalog, "restart")
    assert batches[-1].details["offsets"]["end"] == {topic: {"0": 8}}
    assert _inserted(batches) == 6  # every insert applied once


# -- 2. kill -9 between the catalog commit and Spark's checkpoint --------------------------

_STREAM_PROCESS = """
import json, os, sys
from acidflow.catalog import SqlCatalog
from acidflow.cdc.apply import CdcOptions
from acidflow.cdc.kafka import KafkaOptions
from acidflow.cdc.stream import run_kafka_stream
from acidflow.spark import get_spark

a = json.loads(sys.argv[1])
spark = get_spark("kill-test", master="local[1]", **{"spark.ui.enabled": "false"})
catalog = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=os.environ["ACIDFLOW_WAREHOUSE"])
run_kafka_stream(
    spark, catalog, CdcOptions(**a["options"]), KafkaOptions(**a["kopts"]),
    trigger_seconds=1, checkpoint=a["checkpoint"], timeout_s=150,
)
"""


@pytest.mark.slow
def test_kill_9_between_catalog_commit_and_checkpoint(spark, catalog, kafka, tmp_path):
    """The stream runs in a subprocess that SIGKILLs itself right after its first catalog
    commit (``ACIDFLOW_TEST_KILL_AFTER_COMMITS=1``: inside micro-batch 0, before Spark writes
    ``commits/0``; a watcher polling the catalog cannot land reliably in that window of a few
    milliseconds). Micro-batch 0 holds 6 records capped to 2 per batch, so the kill also comes
    between two batches of its range."""
    require_kafka_spark_jars()
    topic = _topic()
    produce(spark, kafka.bootstrap_servers, topic, [_gg(i, i) for i in range(1, 7)])
    ckpt = tmp_path / "ckpt"
    kw = dict(source="killed", bootstrap_servers=kafka.bootstrap_servers, topics=[topic])
    arg = json.dumps({"options": GG, "kopts": {**kw, "max_offsets": 2}, "checkpoint": str(ckpt)})
    env = {**os.environ, KILL_AFTER_COMMITS_ENV: "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _STREAM_PROCESS, arg],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        out, _ = proc.communicate(timeout=180)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its Spark JVM too
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL, out.decode(errors="replace")[-3000:]

    batches = _ledger(catalog, "killed")
    assert len(batches) == 1 and batches[0].details["offsets"]["end"] == {topic: {"0": 2}}
    assert batches[0].details["stream"]["batch_id"] == 0
    assert (ckpt / "offsets" / "0").exists() and not (ckpt / "commits" / "0").exists()
    assert _emp(spark, catalog) == {1: "e1", 2: "e2"}

    # restart from the same checkpoint: Spark replays micro-batch 0; it applies only the rest
    run = run_kafka_stream(
        spark, catalog, CdcOptions(**GG), KafkaOptions(**kw, max_offsets=2),
        trigger_seconds=1, checkpoint=str(ckpt), timeout_s=90, idle_s=4,
    )  # fmt: skip
    assert run.skipped == 1  # the replay was recognised (same query id, micro-batch 0)
    assert (ckpt / "commits" / "0").exists()
    assert _emp(spark, catalog) == {i: f"e{i}" for i in range(1, 7)}
    batches = _ledger(catalog, "killed")
    assert len(batches) == 3 and batches[-1].details["offsets"]["end"] == {topic: {"0": 6}}
    assert _inserted(batches) == 6
    assert len(run.reports) == 2


# -- 3. poison messages on a Debezium topic --------------------------------------------------


@pytest.mark.slow
@pytest.mark.postgres
def test_debezium_poison_messages_are_quarantined_and_the_stream_goes_on(
    spark, catalog, kafka, debezium_connector, tmp_path
):
    conn, prefix = debezium_connector
    topic = f"{prefix}.public.items"
    _tx(conn, "INSERT INTO public.items VALUES (1, 'a', 1), (2, 'b', 2)")
    _wait(lambda: len(kafka.consume(topic, max_messages=2, timeout_s=5)) >= 2, 60, "Debezium")
    not_json = b"{not json"
    no_op = json.dumps(
        {"before": None, "after": {"id": 9, "name": "x", "qty": 0}, "source": {"table": "items"}}
    ).encode()
    produce(spark, kafka.bootstrap_servers, topic, [not_json, no_op])
    _tx(
        conn,
        "UPDATE public.items SET qty = 10 WHERE id = 1",
        "INSERT INTO public.items VALUES (3, 'c', 3)",
    )
    # the default threshold (1 %): a micro-batch with 2 bad records (fewer than
    # min_bad_records) is applied with them quarantined, not refused
    options = CdcOptions(fmt="debezium", auto_create=True)
    kopts = KafkaOptions(
        source="poison",
        bootstrap_servers=kafka.bootstrap_servers,
        topics=[topic],
        transaction_topic=f"{prefix}.transaction",
    )
    reports: list = []
    deadline = time.monotonic() + 120
    while _table_rows(spark, catalog) != _pg_rows(conn):
        assert time.monotonic() < deadline, (_table_rows(spark, catalog), _pg_rows(conn))
        reports += run_kafka_stream(
            spark, catalog, options, kopts, trigger_seconds=1,
            checkpoint=str(tmp_path / "ckpt"), timeout_s=60, idle_s=4,
        ).reports  # fmt: skip
    assert sum(r.quarantined for r in reports) == 2
    quarantined = [
        json.loads(line)
        for r in reports
        if r.quarantine_file
        for line in Path(r.quarantine_file).read_text().splitlines()
    ]
    assert sorted(q["raw"].encode() for q in quarantined) == sorted([not_json, no_op])
    offsets = sorted(int(q["source"].rsplit(":", 1)[1]) for q in quarantined)
    assert offsets[1] == offsets[0] + 1  # produced one after the other
    for q, off in zip(sorted(quarantined, key=lambda q: q["source"]), offsets):
        assert f"Kafka topic {topic} partition 0 offset {off}: " in q["reason"]
    batches = _ledger(catalog, "poison")
    assert batches[-1].details["offsets"]["end"][topic]["0"] > offsets[1] + 1  # later records


# -- the quarantine threshold of small Kafka batches ----------------------------------------


def test_quarantine_threshold_counts_bad_records_from_min_bad_records(spark, catalog, kafka):
    require_kafka_spark_jars()
    topic = _topic()
    produce(spark, kafka.bootstrap_servers, topic, [_gg(1, 1), b"poison 1"])
    options = CdcOptions(**GG)  # threshold 1 %
    kopts = KafkaOptions(source="thr", bootstrap_servers=kafka.bootstrap_servers, topics=[topic])
    r = apply_kafka(spark, catalog, options, kopts)  # 1 bad of 2: fewer than 10, applied
    assert (r.status, r.quarantined) == ("applied", 1)

    produce(spark, kafka.bootstrap_servers, topic, [b"poison 2", _gg(2, 2), b"poison 3"])
    strict = KafkaOptions(
        source="thr", bootstrap_servers=kafka.bootstrap_servers, topics=[topic], min_bad_records=2
    )
    with pytest.raises(QuarantineThresholdError):  # 2 bad of 3, at least min_bad_records
        apply_kafka(spark, catalog, options, strict)
    assert _emp(spark, catalog) == {1: "e1"}  # nothing of that batch applied
    assert source_state(catalog, "thr")[0] == {topic: {"0": 2}}

    r = apply_kafka(spark, catalog, options, kopts)  # the default: 2 bad < 10, applied once
    assert (r.status, r.quarantined) == ("applied", 2)
    assert _emp(spark, catalog) == {1: "e1", 2: "e2"}
    assert len(_ledger(catalog, "thr")) == 2


# -- 4. offsets deleted by retention, stream mode -------------------------------------------


def test_stream_fails_on_offsets_lost_to_retention(spark, catalog, kafka, tmp_path):
    require_kafka_spark_jars()
    topic = _topic()
    produce(spark, kafka.bootstrap_servers, topic, [_gg(i, i) for i in range(1, 4)])
    options = CdcOptions(**GG)
    kopts = KafkaOptions(source="lost", bootstrap_servers=kafka.bootstrap_servers, topics=[topic])

    def stream():
        return run_kafka_stream(
            spark, catalog, options, kopts, trigger_seconds=1,
            checkpoint=str(tmp_path / "ckpt"), timeout_s=60, idle_s=3,
        )  # fmt: skip

    assert stream().reports
    assert _emp(spark, catalog) == {1: "e1", 2: "e2", 3: "e3"}
    produce(spark, kafka.bootstrap_servers, topic, [_gg(i, i) for i in range(4, 8)])
    delete_records(kafka, topic, 0, 5)  # offsets 3 and 4 (rows 4, 5) were never applied
    with pytest.raises(KafkaDataLossError) as e:
        stream()
    assert (e.value.topic, e.value.partition, e.value.start, e.value.earliest) == (topic, 0, 3, 5)
    assert f"topic {topic} partition 0: offsets 3..4 are no longer available" in str(e.value)
    assert _emp(spark, catalog) == {1: "e1", 2: "e2", 3: "e3"}  # nothing applied
    assert len(_ledger(catalog, "lost")) == 1
    assert source_state(catalog, "lost")[0] == {topic: {"0": 3}}


# -- 5. a column added at the source --------------------------------------------------------


def _pg_notes(conn) -> dict[int, tuple]:
    with conn.cursor() as cur:
        cur.execute("SELECT id, name, qty, note FROM public.items")
        out = {r[0]: r for r in cur.fetchall()}
    conn.commit()
    return out


def _table_notes(spark, catalog) -> dict[int, tuple]:
    df = read_table(spark, catalog, "default.items")
    return {
        r["id"]: (r["id"], r["name"], r["qty"], r["note"])
        for r in df.select("id", "name", "qty", "note").collect()
    }


@pytest.mark.slow
@pytest.mark.postgres
def test_column_added_at_the_source(spark, catalog, kafka, debezium_connector):
    conn, prefix = debezium_connector
    kopts = KafkaOptions(
        source="drift",
        bootstrap_servers=kafka.bootstrap_servers,
        topics=[f"{prefix}.public.items"],
        transaction_topic=f"{prefix}.transaction",
    )
    add = CdcOptions(fmt="debezium", auto_create=True, schema_drift="add")
    fail = CdcOptions(fmt="debezium", auto_create=True, schema_drift="fail")
    _tx(conn, "INSERT INTO public.items VALUES (20, 'twenty', 20)")
    deadline = time.monotonic() + 90
    while _table_rows(spark, catalog) != _pg_rows(conn):
        assert time.monotonic() < deadline, (_table_rows(spark, catalog), _pg_rows(conn))
        drain(spark, catalog, add, kopts)
        time.sleep(0.5)
    before = _table_rows(spark, catalog)
    n = len(_ledger(catalog, "drift"))

    _tx(
        conn,
        "ALTER TABLE public.items ADD COLUMN note text",
        "INSERT INTO public.items VALUES (21, 'twentyone', 21, 'new')",
        "UPDATE public.items SET note = 'set' WHERE id = 20",
    )
    # policy fail: the batch carrying the new column stops, nothing of it applied
    deadline = time.monotonic() + 90
    with pytest.raises(SchemaDriftError) as e:
        while time.monotonic() < deadline:
            drain(spark, catalog, fail, kopts)
            time.sleep(0.5)
    assert "public.items" in str(e.value) and "note" in str(e.value)
    assert "default.items" in str(e.value)
    assert len(_ledger(catalog, "drift")) == n
    assert _table_rows(spark, catalog) == before
    assert "note" not in catalog.get_table("default.items").column_names()

    # rerun under add: the column is appended, the values arrive once, older rows NULL
    deadline = time.monotonic() + 90
    while True:
        drain(spark, catalog, add, kopts)
        if "note" in catalog.get_table("default.items").column_names():
            if _table_notes(spark, catalog) == _pg_notes(conn):
                break
        assert time.monotonic() < deadline, _pg_notes(conn)
        time.sleep(0.5)
    assert any(row[3] is None for row in _pg_notes(conn).values())  # older rows: NULL
    batches = _ledger(catalog, "drift")
    assert len(batches) > n


# -- compaction beside a running stream -----------------------------------------------------


def _emp_eager(catalog) -> dict[int, str]:
    """``_emp`` with pyarrow: an eager read unregisters at once (a lazy Spark read's
    registration holds the cleaner until it expires, as documented in acidflow.read.table)."""
    if not catalog.table_exists("hr.emp"):
        return {}
    t = read_table(None, catalog, "hr.emp").select(["id", "name"]).to_pylist()
    return {r["id"]: r["name"] for r in t}


def test_compaction_and_cleaner_beside_a_running_stream(spark, catalog, kafka, tmp_path):
    """A running stream holds no transaction open between micro-batches, so the initiator,
    a major compaction and the cleaner run beside it as Hive's rules allow (only a reader's
    or writer's open transaction holds the cleaner back), and later micro-batches add on top
    of the new base."""
    require_kafka_spark_jars()
    topic = _topic()
    options = CdcOptions(**GG)
    kopts = KafkaOptions(source="beside", bootstrap_servers=kafka.bootstrap_servers, topics=[topic])
    run = StreamRun()
    # the topic exists before the query starts (Spark's Kafka source fails the query on an
    # unknown topic: docs/kafka.md)
    produce(spark, kafka.bootstrap_servers, topic, [_gg(1, 1)])
    query = start_kafka_stream(
        spark, catalog, options, kopts, trigger_seconds=1, checkpoint=str(tmp_path / "ck"), run=run
    )
    try:
        for i in range(1, 4):  # three micro-batches, three deltas
            if i > 1:
                produce(spark, kafka.bootstrap_servers, topic, [_gg(i, i)])
            _wait(lambda i=i: run.error or len(_emp_eager(catalog)) == i, 90, f"row {i}")
            assert run.error is None
        _wait(lambda: not run.busy, 30, "the stream to go idle")
        assert catalog.list_transactions(states=[TxnState.OPEN]) == []
        # Hive's behaviour (no history kept): the cleaner removes what the base replaced
        catalog.set_table_properties("hr.emp", {RETAIN_COMMITS: "0", RETAIN_HOURS: "0"})
        ht.compact(catalog, "hr.emp", "major")
        rep = cleaner.run_cleaner(catalog)
        assert rep.cleaned and not rep.waiting
        names = sorted(p.name for p in Path(catalog.get_table("hr.emp").location).iterdir())
        assert [n for n in names if not n.startswith((".", "_"))] == ["base_0000003"]
        produce(spark, kafka.bootstrap_servers, topic, [_gg(4, 4), _gg(5, 2, "two", "U")])
        _wait(lambda: _emp_eager(catalog).get(4) == "e4", 90, "row 4")
    finally:
        _stop(query, run)
    assert run.error is None
    assert _emp_eager(catalog) == {1: "e1", 2: "two", 3: "e3", 4: "e4"}
    assert len(_ledger(catalog, "beside")) >= 4
