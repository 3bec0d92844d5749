"""The Kafka phase: the same Debezium change events through the file path and the Kafka path.

A pgbench-like source (the four tables of ``include/tables/pgbench.yaml``; a base of
``accounts`` accounts, 1 branch per 100,000 accounts, 10 tellers per branch) and a stream of
source transactions over it (:class:`Generator`): mostly pgbench's TPC-B-like transaction (update
an account, its teller and branch, insert a history row: 4 events), some that open an account
(insert + branch update) and some that close one (delete + its Kafka tombstone). Each
transaction is encoded once, as Debezium 3.6's PostgreSQL connector writes it with
``provide.transaction.metadata`` and schemaless JsonConverter values (:func:`encode`): a BEGIN
and an END record on ``<prefix>.transaction``, each change on ``<prefix>.public.<table>`` keyed
by its primary key (the keyless history table: no key). The *same* ``(topic, key, value)``
records become

* change files: one JSON line ``{"key": ..., "value": ...}`` per record (the shape
  ``acidflow.sources.debezium`` reads from files), files cut at transaction boundaries every
  ``per_file`` events; and
* Kafka records, written by one producer JVM (``bench/KafkaLines.java``) into a real broker
  started by the phase (``devservers.kafka.start_kafka``; no Connect needed).

Steps, each in its own process (``python -m bench.kafka STEP ...``; wall time and peak memory of
its process tree measured from outside as every bench step, :func:`bench.run.peak_rss_sampler`;
the broker and the producer are the driver's children, not the step's):

``prepare``  three fresh warehouses (``file``, ``kafka``, ``stream``), the base loaded into each
             by the file path (one snapshot file of op ``r`` events; untimed here);
``file``     ``apply_path`` over the change files (one batch per file): the file path;
``kafka``    ``drain`` over the topics with ``max_offsets`` = the file size: the Kafka batch path;
             both checked against the generator's final state (so also against each other);
``stream``   ``start_kafka_stream`` (``trigger`` s) while the driver offers ``rate`` events/s for
             ``duration`` s on other topics; each event carries its produce time
             (``source.ts_ms``); its latency is the commit time of the batch that applied it
             (the batch ledger's ``committed_at``; the batch's offset range says which events it
             holds) minus that produce time. Checked against the final state too;
``parse``    decode rates without Spark: the Kafka decoder (``decode_records``) and the file
             parser (``parse_lines``) over the same events.

Run: ``python -m bench.run --sizes --kafka 100000`` (``make bench BENCH_ARGS=...``), results in
``bench/results/kafka_e<E>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: ``devservers`` lives in tools/ (the tests get it from pytest's ``pythonpath``)
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

from devservers.kafka import KafkaArtifacts, start_kafka  # noqa: E402

TABLES_YAML = REPO / "include" / "tables" / "pgbench.yaml"
PRODUCER = REPO / "bench" / "KafkaLines.java"
DB = "pgbench"  # the tables' database (pgbench.yaml)
TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")
KEYS = {"pgbench_accounts": "aid", "pgbench_branches": "bid", "pgbench_tellers": "tid"}
#: the Debezium ``topic.prefix`` of the batch comparison and of the streaming run
BATCH_PREFIX, STREAM_PREFIX = "bench", "stream"
ACCOUNTS_PER_BRANCH = 100_000  # pgbench's scale: 100,000 accounts, 10 tellers per branch
FILLER = "f" * 84  # pgbench_accounts.filler is char(84); full length, so no padding question
SNAPSHOT_LSN = 1_000_000
EPOCH_US = 1_790_000_000_000_000  # the history rows' mtime clock (µs), independent of wall time
#: pgbench_history.mtime (timestamp) as text: schemaless JSON has no type for it, and acidflow
#: quarantines a bare number (Debezium's MicroTimestamp) for a timestamp column
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def _timestamp(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, timezone.utc).strftime(TIMESTAMP_FORMAT)


# -- the source: a deterministic pgbench-like change stream ------------------------------------
@dataclass
class Event:
    """One row change: table, Debezium op (``r`` snapshot, ``c``, ``u``, ``d``), key (None: the
    keyless history table), before and after images, LSN."""

    table: str
    op: str
    key: dict | None
    before: dict | None
    after: dict | None
    lsn: int


@dataclass
class Txn:
    txid: int
    begin_lsn: int
    events: list[Event] = field(default_factory=list)


class Generator:
    """The source database and its change stream; :attr:`state` is the source's current
    content (the expected tables after the transactions generated so far)."""

    def __init__(self, seed: int, accounts: int = 100_000) -> None:
        self.rng = random.Random(seed)
        self.branches = max(1, accounts // ACCOUNTS_PER_BRANCH)
        self.state: dict[str, Any] = {
            "pgbench_accounts": {
                a: {"aid": a, "bid": (a - 1) // ACCOUNTS_PER_BRANCH + 1, "abalance": 0}
                | {"filler": FILLER}
                for a in range(1, accounts + 1)
            },
            "pgbench_branches": {
                b: {"bid": b, "bbalance": 0, "filler": None} for b in range(1, self.branches + 1)
            },
            "pgbench_tellers": {
                t: {"tid": t, "bid": (t - 1) // 10 + 1, "tbalance": 0, "filler": None}
                for t in range(1, 10 * self.branches + 1)
            },
            "pgbench_history": [],
        }
        self.live = list(range(1, accounts + 1))  # open accounts (swap-remove on delete)
        self.next_aid = accounts + 1
        self.txid = 1000
        self.lsn = 30_000_000  # above SNAPSHOT_LSN + the base's rows (< 29M)
        self.clock_us = EPOCH_US

    def snapshot(self) -> list[Event]:
        """The base rows as Debezium snapshot reads (op ``r``)."""
        out = []
        lsn = SNAPSHOT_LSN  # below every transaction's: the change stream comes after the base
        for table in TABLES[:3]:
            for k, row in self.state[table].items():
                lsn += 1
                out.append(Event(table, "r", {KEYS[table]: k}, None, dict(row), lsn))
        return out

    def _event(self, txn: Txn, table: str, op: str, before, after) -> None:
        self.lsn += 56
        key = None
        if table in KEYS:
            key = {KEYS[table]: (after or before)[KEYS[table]]}
        txn.events.append(Event(table, op, key, before, after, self.lsn))

    def _update(self, txn: Txn, table: str, k: int, column: str, delta: int) -> None:
        row = self.state[table][k]
        new = dict(row, **{column: row[column] + delta})
        self.state[table][k] = new
        self._event(txn, table, "u", None, dict(new))  # default replica identity: no before

    def txn(self) -> Txn:
        """The next source transaction (applied to :attr:`state`)."""
        self.txid += 1
        self.lsn += 40
        txn = Txn(self.txid, self.lsn)
        self.clock_us += 1000
        r = self.rng.random()
        accounts = self.state["pgbench_accounts"]
        if r < 0.05:  # open an account (pgbench never does; the CDC path must insert)
            aid, bid = self.next_aid, self.rng.randint(1, self.branches)
            self.next_aid += 1
            row = {"aid": aid, "bid": bid, "abalance": 0, "filler": FILLER}
            accounts[aid] = row
            self.live.append(aid)
            self._event(txn, "pgbench_accounts", "c", None, dict(row))
            self._update(txn, "pgbench_branches", bid, "bbalance", 0)
        elif r < 0.10 and len(self.live) > 1:  # close one
            i = self.rng.randrange(len(self.live))
            aid = self.live[i]
            self.live[i] = self.live[-1]
            self.live.pop()
            row = accounts.pop(aid)
            self._event(txn, "pgbench_accounts", "d", dict(row), None)
        else:  # pgbench's TPC-B-like transaction
            aid = self.live[self.rng.randrange(len(self.live))]
            tid = self.rng.randint(1, 10 * self.branches)
            bid = self.rng.randint(1, self.branches)
            delta = self.rng.randint(-5000, 5000)
            self._update(txn, "pgbench_accounts", aid, "abalance", delta)
            self._update(txn, "pgbench_tellers", tid, "tbalance", delta)
            self._update(txn, "pgbench_branches", bid, "bbalance", delta)
            row = {"tid": tid, "bid": bid, "aid": aid, "delta": delta}
            row |= {"mtime": _timestamp(self.clock_us), "filler": None}
            self.state["pgbench_history"].append(row)
            self._event(txn, "pgbench_history", "c", None, dict(row))
        return txn


# -- one encoder for both paths ----------------------------------------------------------------
Record = tuple[str, "dict | None", "dict | None"]  # (topic, key, value)


def _value(prefix: str, e: Event, ts_ms: int, txid: int | None, order: tuple[int, int]) -> dict:
    source = {
        "version": "3.6.1.Final",
        "connector": "postgresql",
        "name": prefix,
        "ts_ms": ts_ms,
        "snapshot": "true" if e.op == "r" else "false",
        "db": DB,
        "schema": "public",
        "table": e.table,
        "txId": txid,
        "lsn": e.lsn,
    }
    out = {"before": e.before, "after": e.after, "source": source, "op": e.op, "ts_ms": ts_ms}
    if txid is not None:
        out["transaction"] = {
            "id": f"{txid}:{e.lsn}",
            "total_order": order[0],
            "data_collection_order": order[1],
        }
    return out


def encode(prefix: str, txn: Txn, ts_ms: int) -> list[Record]:
    """The Kafka records Debezium's PostgreSQL connector writes for ``txn`` (transaction
    metadata on, schemaless JsonConverter, tombstones after deletes); ``ts_ms`` is the source
    time of every record (the produce time in the streaming run)."""
    marker_key = {"id": f"{txn.txid}:{txn.begin_lsn}"}
    out: list[Record] = [
        (
            f"{prefix}.transaction",
            marker_key,
            {
                "status": "BEGIN",
                "id": marker_key["id"],
                "event_count": None,
                "data_collections": None,
                "ts_ms": ts_ms,
            },
        )
    ]
    per_table: Counter[str] = Counter()
    for i, e in enumerate(txn.events, 1):
        per_table[e.table] += 1
        topic = f"{prefix}.public.{e.table}"
        out.append((topic, e.key, _value(prefix, e, ts_ms, txn.txid, (i, per_table[e.table]))))
        if e.op == "d":
            out.append((topic, e.key, None))  # the tombstone that follows a delete
    end = {
        "status": "END",
        "id": marker_key["id"],
        "event_count": len(txn.events),
        "data_collections": [
            {"data_collection": f"public.{t}", "event_count": n} for t, n in per_table.items()
        ],
        "ts_ms": ts_ms,
    }
    return out + [(f"{prefix}.transaction", marker_key, end)]


def snapshot_records(prefix: str, events: list[Event], ts_ms: int) -> list[Record]:
    return [
        (f"{prefix}.public.{e.table}", e.key, _value(prefix, e, ts_ms, None, (0, 0)))
        for e in events
    ]


def file_line(rec: Record) -> str:
    """A record as a change file line: Debezium's Kafka record shape ``{"key", "value"}``."""
    return json.dumps({"key": rec[1], "value": rec[2]}, separators=(",", ":"))


def producer_line(rec: Record) -> str:
    """A record as a line of ``KafkaLines.java``'s input: TOPIC, KEY, VALUE (empty = null)."""
    key = "" if rec[1] is None else json.dumps(rec[1], separators=(",", ":"))
    value = "" if rec[2] is None else json.dumps(rec[2], separators=(",", ":"))
    return f"{rec[0]}\t{key}\t{value}"


def topics(prefix: str) -> list[str]:
    return [f"{prefix}.public.{t}" for t in TABLES]


def generate(data: Path, events: int, per_file: int, seed: int, accounts: int) -> dict:
    """Write the base snapshot file, the change files and the producer input of ``events``
    change events (whole transactions); returns (and writes) ``meta.json``."""
    if data.exists():
        shutil.rmtree(data)
    (data / "snapshot").mkdir(parents=True)
    (data / "files").mkdir()
    gen = Generator(seed, accounts)
    ts0 = 1_790_000_000_000
    with (data / "snapshot" / "snapshot_0000.jsonl").open("w") as f:
        for rec in snapshot_records(BATCH_PREFIX, gen.snapshot(), ts0):
            f.write(file_line(rec) + "\n")
    n = txns = files = in_file = 0
    out = None
    with (data / "produce.tsv").open("w") as tsv:
        while n < events:
            if out is None:
                files += 1
                out = (data / "files" / f"batch_{files:04d}.jsonl").open("w")
            txn = gen.txn()
            txns += 1
            for rec in encode(BATCH_PREFIX, txn, ts0 + txns):
                out.write(file_line(rec) + "\n")
                tsv.write(producer_line(rec) + "\n")
            n += len(txn.events)
            in_file += len(txn.events)
            if in_file >= per_file:  # files end at transaction boundaries
                out.close()
                out, in_file = None, 0
    if out is not None:
        out.close()
    meta = {
        "events": n,
        "transactions": txns,
        "files": files,
        "per_file": per_file,
        "accounts": accounts,
        "seed": seed,
    }
    (data / "meta.json").write_text(json.dumps(meta))
    return meta


def expected_state(seed: int, accounts: int, txns: int) -> dict[str, Any]:
    """The source's tables after ``txns`` transactions of the generator of ``seed``."""
    gen = Generator(seed, accounts)
    for _ in range(txns):
        gen.txn()
    return gen.state


# -- checking a warehouse against the source ----------------------------------------------------
def _rows(spark, catalog, table: str) -> list[tuple]:
    from acidflow.read.table import read_table

    cols = {
        "pgbench_accounts": ["aid", "bid", "abalance", "filler"],
        "pgbench_branches": ["bid", "bbalance", "filler"],
        "pgbench_tellers": ["tid", "bid", "tbalance", "filler"],
        "pgbench_history": ["tid", "bid", "aid", "delta", "mtime", "filler"],
    }[table]
    df = read_table(spark, catalog, f"{DB}.{table}").select(*cols)
    out = []
    for r in df.collect():
        row = []
        for c in cols:
            v = r[c]
            if isinstance(v, datetime):  # as the source sent it
                v = v.strftime(TIMESTAMP_FORMAT)
            if isinstance(v, str):
                v = v.rstrip()
            row.append(v)
        out.append(tuple(row))
    return out


def check(spark, catalog, state: dict[str, Any]) -> dict:
    """Every table equal to the source's state (history: the same multiset of rows)."""
    wrong = {}
    for table in TABLES:
        got = Counter(_rows(spark, catalog, table))
        rows = state[table] if table == "pgbench_history" else state[table].values()
        want = Counter(
            tuple(v.rstrip() if isinstance(v, str) else v for v in r.values()) for r in rows
        )
        if got != want:
            wrong[table] = {
                "rows": sum(got.values()),
                "expected": sum(want.values()),
                "missing": [list(r) for r in list((want - got).keys())[:3]],
                "unexpected": [list(r) for r in list((got - want).keys())[:3]],
            }
    return {"correct": not wrong, **({"wrong": wrong} if wrong else {})}


# -- the steps (each in its own process) --------------------------------------------------------
def _options():
    from acidflow.cdc.apply import CdcOptions
    from acidflow.tables_config import load_tables_config

    return CdcOptions(fmt="debezium", tables=load_tables_config(TABLES_YAML), target_db=DB)


def _kopts(prefix: str, bootstrap: str, max_offsets: int | None = None):
    from acidflow.cdc.kafka import KafkaOptions

    return KafkaOptions(
        source=prefix,
        bootstrap_servers=bootstrap,
        topics=topics(prefix),
        transaction_topic=f"{prefix}.transaction",
        max_offsets=max_offsets,
    )


def _catalog(work: Path, name: str):
    from acidflow.catalog import SqlCatalog

    wh = work / name
    wh.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=str(wh))


def _spark():
    from bench.tools import spark_session

    return spark_session()


def step_prepare(a) -> dict:
    """Three fresh warehouses, the base loaded into each through the file path."""
    from acidflow.cdc.apply import apply_path

    spark, jvm = _spark()
    t0 = time.perf_counter()
    for name in ("file", "kafka", "stream"):
        if (a.work / name).exists():
            shutil.rmtree(a.work / name)
        apply_path(spark, _catalog(a.work, name), str(a.data / "snapshot"), _options())
    return {"jvm_start": jvm, "work": time.perf_counter() - t0}


def _summary(reports, secs: float, events: int) -> dict:
    return {
        "work": secs,
        "events": events,
        "events_per_s": events / secs,
        "batches": len(reports),
        "batch_seconds": [round(r.seconds, 3) for r in reports],
        "statuses": dict(Counter(r.status for r in reports)),
    }


def step_file(a) -> dict:
    """The file path: ``apply_path`` over the change files, one batch per file."""
    from acidflow.cdc.apply import apply_path

    meta = json.loads((a.data / "meta.json").read_text())
    spark, jvm = _spark()
    catalog = _catalog(a.work, "file")
    t0 = time.perf_counter()
    reports = apply_path(spark, catalog, str(a.data / "files"), _options())
    out = _summary(reports, time.perf_counter() - t0, meta["events"])
    out["jvm_start"] = jvm
    out["check"] = check(
        spark, catalog, expected_state(a.seed, meta["accounts"], meta["transactions"])
    )
    return out


def step_kafka(a) -> dict:
    """The Kafka batch path: ``drain`` over the topics, at most ``per_file`` records a batch."""
    from acidflow.cdc.kafka import drain

    meta = json.loads((a.data / "meta.json").read_text())
    spark, jvm = _spark()
    catalog = _catalog(a.work, "kafka")
    kopts = _kopts(BATCH_PREFIX, a.bootstrap, meta["per_file"])
    t0 = time.perf_counter()
    reports = [r for r in drain(spark, catalog, _options(), kopts) if r.batch_id]
    out = _summary(reports, time.perf_counter() - t0, meta["events"])
    out["jvm_start"] = jvm
    out["check"] = check(
        spark, catalog, expected_state(a.seed, meta["accounts"], meta["transactions"])
    )
    return out


def _epoch_ms(t: datetime) -> float:
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp() * 1000


def step_stream(a) -> dict:
    """The streaming query while the driver produces: latencies from the batch ledger."""
    from acidflow.cdc.kafka import read_range, source_state
    from acidflow.cdc.stream import StreamRun, start_kafka_stream

    spark, jvm = _spark()
    catalog = _catalog(a.work, "stream")
    kopts = _kopts(STREAM_PREFIX, a.bootstrap)
    run = StreamRun()
    query = start_kafka_stream(
        spark, catalog, _options(), kopts, trigger_seconds=a.trigger, run=run
    )
    print("BENCH-READY", flush=True)  # the driver starts producing now
    done_file = a.work / "producer.json"
    deadline = time.monotonic() + a.duration + 600
    while not done_file.exists():
        if run.error is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the stream failed or the producer never finished: {run.error}")
        time.sleep(0.5)
    produced = json.loads(done_file.read_text())
    end = produced["end_offsets"]
    # the run ends when the source's high-water mark reaches what was produced (polled with a
    # catalog object of its own: the micro-batches use theirs in Spark's callback thread)
    watch = _catalog(a.work, "stream")
    drain_deadline = time.monotonic() + 300
    while True:
        mark = source_state(watch, STREAM_PREFIX)[0] or {}
        if all(mark.get(t, {}).get(p, 0) >= o for t, ps in end.items() for p, o in ps.items()):
            break
        if run.error is not None or time.monotonic() > drain_deadline:
            query.stop()
            raise RuntimeError(f"the stream did not apply everything in time: {run.error}")
        time.sleep(0.2)
    while run.busy:
        time.sleep(0.1)
    query.stop()
    # which batch applied each event: its offset range in the ledger; when: its commit time
    batches = [
        b
        for b in catalog.list_batches(kind="kafka")
        if b.source == STREAM_PREFIX and b.state == "committed"
    ]
    spans = []  # (topic, partition, start, end, committed ms)
    for b in batches:
        off = b.details["offsets"]
        for t, ps in off["end"].items():
            for p, o in ps.items():
                spans.append(
                    (t, p, off["start"].get(t, {}).get(p, 0), o, _epoch_ms(b.committed_at))
                )
    data_topics = set(topics(STREAM_PREFIX))
    start = {t: {"0": 0} for t in data_topics}
    records = read_range(spark, kopts, start, {t: end[t] for t in data_topics})
    latencies, unmatched = [], 0
    for r in records:
        if r.value is None:
            continue  # tombstones are not events
        produced_ms = json.loads(r.value)["source"]["ts_ms"]
        hit = [
            c
            for t, p, s, e, c in spans
            if t == r.topic and p == str(r.partition) and s <= r.offset < e
        ]
        if not hit:
            unmatched += 1
            continue
        latencies.append((hit[0] - produced_ms) / 1000)
    latencies.sort()
    first_ms = produced["first_ms"]
    last_commit = max(_epoch_ms(b.committed_at) for b in batches)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [float("nan")] * 99
    return {
        "jvm_start": jvm,
        "work": (last_commit - first_ms) / 1000,
        "events": len(latencies),
        "unmatched": unmatched,
        "offered_rate": produced["rate"],
        "offered_events": produced["events"],
        "produce_seconds": produced["seconds"],
        "achieved_offered_rate": produced["events"] / produced["seconds"],
        "sustained_events_per_s": len(latencies) / ((last_commit - first_ms) / 1000),
        "apply_capacity_events_per_s": len(latencies) / sum(r.seconds for r in run.reports),
        "latency_p50": q[49],
        "latency_p95": q[94],
        "latency_max": latencies[-1] if latencies else None,
        "micro_batches": run.micro_batches,
        "batches": len(batches),
        "batch_seconds": [round(r.seconds, 3) for r in run.reports],
        "trigger_seconds": a.trigger,
        "check": check(
            spark,
            catalog,
            expected_state(a.seed + 1, produced["accounts"], produced["transactions"]),
        ),
    }


def step_parse(a) -> dict:
    """Decode rates without Spark, the same records: the Kafka decoder (``decode_records``,
    with the transaction topic) and the file parser (``parse_lines``)."""
    from acidflow.sources.formats import parse_lines
    from acidflow.sources.kafka import KafkaRecord, decode_records

    meta = json.loads((a.data / "meta.json").read_text())
    offsets: Counter[str] = Counter()
    records = []
    for line in (a.data / "produce.tsv").read_text().splitlines():
        topic, key, value = line.split("\t", 2)
        records.append(
            KafkaRecord(topic, 0, offsets[topic], key.encode() or None, value.encode() or None)
        )
        offsets[topic] += 1
    end = {t: {"0": n} for t, n in offsets.items()}
    t0 = time.perf_counter()
    batch = decode_records(
        "debezium", records, end_offsets=end, transaction_topic=f"{BATCH_PREFIX}.transaction"
    )
    kafka_s = time.perf_counter() - t0
    lines = []
    for f in sorted((a.data / "files").iterdir()):
        lines += f.read_text().splitlines()
    t0 = time.perf_counter()
    stream = parse_lines("debezium", lines, "all.jsonl")
    file_s = time.perf_counter() - t0
    return {
        "work": kafka_s + file_s,
        "events": meta["events"],
        "kafka_decode_seconds": kafka_s,
        "kafka_decode_events_per_s": meta["events"] / kafka_s,
        "file_parse_seconds": file_s,
        "file_parse_events_per_s": meta["events"] / file_s,
        "kafka_carried": batch.carried,
        "kafka_changes": len(batch.stream.changes),
        "kafka_bad": len(batch.stream.bad),
        "file_changes": len(stream.changes),
        "file_bad": len(stream.bad),
    }


STEPS = {
    "prepare": step_prepare,
    "file": step_file,
    "kafka": step_kafka,
    "stream": step_stream,
    "parse": step_parse,
}


# -- the driver ---------------------------------------------------------------------------------
class Producer:
    """``KafkaLines.java`` in a JVM of its own (a child of the driver, so not in a step's
    measured process tree), fed line by line."""

    def __init__(
        self, bootstrap: str, artifacts: KafkaArtifacts, log: Path, create: list[str] = ()
    ) -> None:
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", artifacts.classpath(), str(PRODUCER), bootstrap, "5"]
            + list(create),
            stdin=subprocess.PIPE,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def write(self, lines: list[str]) -> None:
        self.proc.stdin.write("".join(ln + "\n" for ln in lines))
        self.proc.stdin.flush()

    def close(self, timeout: float = 300) -> None:
        """End of input: the producer flushes and exits.

        Raises:
            RuntimeError: it failed (its log's tail in the message)."""
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=timeout)
        self.log.close()
        if rc != 0:
            tail = Path(self.log.name).read_text()[-3000:]
            raise RuntimeError(f"the Kafka producer exited {rc}:\n{tail}")


def create_topics(prefix: str, bootstrap: str, artifacts: KafkaArtifacts, log: Path) -> None:
    """The data topics and the transaction topic of ``prefix``, one partition each (a streaming
    query subscribed before the first record finds them)."""
    Producer(bootstrap, artifacts, log, [*topics(prefix), f"{prefix}.transaction"]).close()


def produce_file(path: Path, bootstrap: str, artifacts: KafkaArtifacts, log: Path) -> float:
    """Produce every line of ``path`` (the batch comparison's records); returns seconds."""
    t0 = time.perf_counter()
    p = Producer(bootstrap, artifacts, log)
    with path.open() as f:
        for chunk in iter(lambda: f.readlines(1 << 20), []):
            p.write([ln.rstrip("\n") for ln in chunk])
    p.close()
    return time.perf_counter() - t0


def offer(
    bootstrap: str,
    artifacts: KafkaArtifacts,
    log: Path,
    *,
    seed: int,
    accounts: int,
    rate: float,
    duration: float,
) -> dict:
    """Offer ``rate`` events/s for ``duration`` s (whole transactions, sent every 50 ms as
    their time comes), each stamped with its produce time (``source.ts_ms``); returns what
    was produced (``end_offsets`` per topic: every topic has one partition)."""
    gen = Generator(seed, accounts)
    p = Producer(bootstrap, artifacts, log)
    counts: Counter[str] = Counter()
    events = txns = 0
    t0 = time.time()
    first_ms = int(t0 * 1000)
    while events < rate * duration:
        lines = []
        due = (time.time() - t0) * rate
        while events < min(due, rate * duration):
            txn = gen.txn()
            now_ms = int(time.time() * 1000)
            for rec in encode(STREAM_PREFIX, txn, now_ms):
                counts[rec[0]] += 1
                lines.append(producer_line(rec))
            events += len(txn.events)
            txns += 1
        if lines:
            p.write(lines)
        time.sleep(0.05)
    seconds = time.time() - t0
    p.close()
    return {
        "events": events,
        "transactions": txns,
        "accounts": accounts,
        "rate": rate,
        "seconds": seconds,
        "first_ms": first_ms,
        "end_offsets": {t: {"0": n} for t, n in counts.items()},
    }


def run_step(step: str, a: argparse.Namespace, steplog: Path, on_ready=None) -> dict:
    """One step in a new process (``setsid``), its wall time and peak memory (the process
    tree's summed RSS, :func:`bench.run.peak_rss_sampler`) measured from here; ``on_ready``
    runs when the step prints ``BENCH-READY`` (the stream step, before producing)."""
    from bench.run import StepFailed, peak_rss_sampler

    cmd = [sys.executable, "-m", "bench.kafka", step, "--data", str(a.data), "--work", str(a.work)]
    cmd += ["--bootstrap", a.bootstrap, "--seed", str(a.seed), "--trigger", str(a.trigger)]
    cmd += ["--duration", str(a.duration)]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore")
    mem: dict = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    sampler = peak_rss_sampler(proc, mem)
    output = []
    helper = None
    for line in proc.stdout:
        output.append(line)
        if line.startswith("BENCH-READY") and on_ready is not None:
            helper = threading.Thread(target=on_ready, daemon=True)
            helper.start()
    proc.wait()
    wall = time.perf_counter() - t0
    sampler.join(timeout=1)
    if helper is not None:
        helper.join(timeout=600)
    text = "".join(output)
    with steplog.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n{text}\n")
    lines = [ln for ln in output if ln.startswith("BENCH-RESULT ")]
    if proc.returncode != 0 or not lines:
        raise StepFailed(f"kafka {step} exited {proc.returncode}:\n" + text[-4000:])
    result = json.loads(lines[-1][len("BENCH-RESULT ") :])
    result.update(wall=round(wall, 3), peak_rss_mb=mem.get("peak_rss_mb"))
    return result


def bench_kafka(
    events: int,
    *,
    work: Path,
    seed: int = 42,
    per_file: int = 10_000,
    accounts: int = 100_000,
    rate: float = 1000.0,
    duration: float = 60.0,
    trigger: float = 5.0,
    log=None,
) -> dict:
    """The whole phase (module docstring); returns the result document."""
    log = log or (lambda msg: print(msg, flush=True))
    root = work / f"kafka_e{events}_s{seed}"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    a = argparse.Namespace(
        data=root / "data", work=root, seed=seed, trigger=trigger, duration=duration, bootstrap=""
    )
    t0 = time.perf_counter()
    meta = generate(a.data, events, per_file, seed, accounts)
    log(f"[kafka phase, {meta['events']:,} events] data ready ({time.perf_counter() - t0:.0f} s)")
    doc: dict = {
        "events": meta["events"],
        "meta": meta,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rate": rate,
        "duration": duration,
        "trigger": trigger,
    }
    artifacts = KafkaArtifacts.locate()
    broker = start_kafka(root / "broker", artifacts=artifacts)
    try:
        a.bootstrap = broker.bootstrap_servers
        doc["produce_seconds"] = produce_file(
            a.data / "produce.tsv", a.bootstrap, artifacts, root / "producer-batch.log"
        )
        log(f"  produced {meta['events']:,} events in {doc['produce_seconds']:.1f} s")
        create_topics(STREAM_PREFIX, a.bootstrap, artifacts, root / "producer-topics.log")
        steplog = root / "steps.log"

        def step(name, on_ready=None):
            r = run_step(name, a, steplog, on_ready)
            c = r.get("check", {})
            log(
                f"  kafka {name:8s} wall {r['wall']:7.2f} s  work {r.get('work', 0):7.2f} s  "
                f"jvm {r.get('jvm_start', 0):5.1f} s  peak {r['peak_rss_mb'] or 0:7.0f} MB  "
                + ("" if not c else "correct" if c.get("correct") else "WRONG " + json.dumps(c))
            )
            return r

        doc["parse"] = step("parse")
        doc["prepare"] = step("prepare")
        doc["file"] = step("file")
        doc["kafka"] = step("kafka")
        produced: dict = {}

        def producing():
            produced.update(
                offer(
                    a.bootstrap,
                    artifacts,
                    root / "producer-stream.log",
                    seed=seed + 1,
                    accounts=accounts,
                    rate=rate,
                    duration=duration,
                )
            )
            tmp = root / "producer.json.tmp"
            tmp.write_text(json.dumps(produced))
            tmp.rename(root / "producer.json")  # appears whole

        doc["stream"] = step("stream", producing)
    finally:
        broker.stop()
    doc["ratio"] = doc["kafka"]["work"] / doc["file"]["work"]
    doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    log(
        f"  Kafka/file apply time {doc['ratio']:.2f}x; stream p50 "
        f"{doc['stream']['latency_p50']:.1f} s p95 {doc['stream']['latency_p95']:.1f} s"
    )
    return doc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=sorted(STEPS))
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--bootstrap", default="")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--trigger", type=float, default=5.0)
    ap.add_argument("--duration", type=float, default=60.0)
    a = ap.parse_args(argv)
    result = STEPS[a.step](a)
    print("BENCH-RESULT " + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
