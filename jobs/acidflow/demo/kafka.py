"""The Kafka CDC demo (``make demo-kafka``): a live PostgreSQL 15 under a pgbench workload ->
Debezium -> Kafka -> acidflow, as a Structured Streaming query for a bounded time and then an
``acid_cdc`` Airflow run (``source: kafka``) that picks up the rest; every table reconciled
row for row with PostgreSQL.

:func:`run_kafka_demo` gets running servers (a PostgreSQL cluster with ``wal_level=logical``, a
Kafka broker, a Kafka Connect worker with Debezium's PostgreSQL connector: started by
``devservers.demo_kafka`` or by the tests' fixtures) and:

1. creates the pgbench tables (``pgbench -i``), keeps ``accounts`` of them in
   ``pgbench_accounts`` (a snapshot of ``100000 * scale`` rows would dominate the demo's run
   time), gives ``pgbench_history`` a surrogate key (``hid bigserial PRIMARY KEY``: pgbench
   creates it keyless; acidflow applies a keyed table's deletes and reconciles by key) and sets
   ``REPLICA IDENTITY FULL`` on all four (deletes carry the whole old row);
2. registers Debezium's connector (pgoutput, ``provide.transaction.metadata=true``, snapshot
   then streaming, a heartbeat every second so the slot's confirmed position follows the WAL);
3. starts the workload in the background: ``pgbench`` with two scripts for ``workload_s``
   seconds at ``rate`` transactions/s: a TPC-B-like transaction (accounts, tellers, branches
   updated, a history row inserted) and a churn transaction (an account's primary key changed
   to its negative, an account deleted, an account inserted or updated, the oldest history row
   deleted);
4. meanwhile runs :func:`acidflow.cdc.stream.run_kafka_stream` (``trigger_s`` trigger) for
   ``stream_s`` seconds into the catalog, then stops it (fewer seconds than the workload: the
   rest is left for the batch run);
5. waits for the workload to end and for Debezium's lag to reach zero (a marker change committed
   after the workload is in Kafka: :func:`wait_published`);
6. runs ``airflow dags test acid_cdc`` with ``source: kafka`` (a private ``AIRFLOW_HOME``,
   :mod:`acidflow.demo.localairflow`, as ``make demo`` does), which applies what the stream left;
7. checks that the source's recorded offsets are the change topics' ends (all applied) and
   reconciles every table with PostgreSQL (:func:`acidflow.quality.reconcile.reconcile` with
   :class:`acidflow.sources.postgres.snapshot.PostgresSource`: PostgreSQL's equality);
8. measures, from the change topics and the batch ledger, the events each side applied and the
   latency source commit -> visible: Debezium's ``source.ts_ms`` (the PostgreSQL commit time)
   against ``committed_at`` of the acidflow batch that applied the event (snapshot reads have no
   commit and are left out).
"""

from __future__ import annotations

import logging
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import functions as F
from sqlalchemy.engine import make_url

from acidflow.catalog import Catalog, SqlCatalog
from acidflow.cdc.apply import CdcOptions
from acidflow.cdc.kafka import KafkaOptions
from acidflow.cdc.stream import run_kafka_stream
from acidflow.cdc.tables import with_position_column
from acidflow.demo.localairflow import airflow_env, dags_test, migrate
from acidflow.demo.pgbench import _last_json
from acidflow.quality.reconcile import reconcile
from acidflow.sources.postgres.connection import connect
from acidflow.sources.postgres.snapshot import PostgresSource
from acidflow.tables_config import load_tables_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[3]
TABLES_YAML = REPO / "include" / "demo" / "kafka_pgbench.yaml"
SOURCE_TABLES = (
    "public.pgbench_accounts",
    "public.pgbench_branches",
    "public.pgbench_tellers",
    "public.pgbench_history",
)
SOURCE_NAME = "pgbench"
TOPIC_PREFIX = "demo"
SLOT = "acidflow_demo"
CONNECTOR = "pgbench-debezium"
DEBEZIUM_POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"

#: TPC-B-like (pgbench's built-in script, on the demo's account range)
TPCB_SCRIPT = """\
\\set aid random(1, :accounts)
\\set bid random(1, :branches)
\\set tid random(1, :tellers)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
  VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"""

#: deletes and a primary key change, in one transaction
CHURN_SCRIPT = """\
\\set aid random(1, :accounts)
\\set gone random(1, :accounts)
\\set newaid random(:accounts + 1, 2 * :accounts)
\\set bid random(1, :branches)
BEGIN;
UPDATE pgbench_accounts SET aid = -aid WHERE aid = :aid;
DELETE FROM pgbench_accounts WHERE aid = :gone;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (:newaid, :bid, 0, 'new')
  ON CONFLICT (aid) DO UPDATE SET abalance = pgbench_accounts.abalance + 1;
DELETE FROM pgbench_history WHERE hid = (SELECT min(hid) FROM pgbench_history);
END;
"""


class PostgresServer(Protocol):
    """What the demo needs of a PostgreSQL cluster (``devservers.postgres.PostgresCluster``)."""

    def url(self, dbname: str | None = None) -> str:
        """SQLAlchemy URL of a database."""
        ...

    def libpq_url(self, dbname: str | None = None) -> str:
        """libpq URL of a database (pgbench)."""
        ...

    def tool_path(self, tool: str) -> str:
        """Path of a PostgreSQL client binary."""
        ...


class ConnectWorker(Protocol):
    """What the demo needs of Kafka Connect (``devservers.kafka.ConnectServer``)."""

    def create_connector(self, name: str, config: dict[str, str]) -> Any:
        """Add a connector."""
        ...

    def wait_running(self, name: str, timeout_s: float = 60.0) -> Any:
        """Wait until the connector and its task run."""
        ...

    def delete_connector(self, name: str) -> None:
        """Remove a connector."""
        ...


@dataclass
class KafkaDemoSettings:
    """The demo's sizes (defaults: ``make demo-kafka``, about 2-3 minutes on 2 cores).

    Attributes:
        workload_s: seconds pgbench runs; stream_s: seconds the stream runs (fewer: the rest
            is the batch run's); rate: pgbench transactions/s (``-R``); clients: ``-c``.
        scale: ``pgbench -i -s``; accounts: accounts kept (and the workload's account range).
        trigger_s: the stream's trigger interval; lag_timeout_s: how long Debezium may take to
            catch up after the workload.
    """

    workload_s: float = 45.0
    stream_s: float = 30.0
    rate: int = 40
    clients: int = 2
    scale: int = 1
    accounts: int = 5000
    trigger_s: float = 5.0
    lag_timeout_s: float = 120.0


@dataclass
class KafkaDemoSummary:
    """What the demo did (:func:`run_kafka_demo`).

    Attributes:
        stream: ``{batches, micro_batches, events, seconds, apply_seconds}`` of the streaming
            query; batch: the same of the Airflow run (``seconds``: the DAG run's wall time).
        latency_ms: ``{"stream": [...], "batch": [...]}`` source commit -> visible per change
            event, in milliseconds.
        workload: pgbench's transactions (``transactions``) and its report's last lines.
        debezium_lag_s: seconds from the workload's end until Debezium had published a
            marker change committed then (:func:`wait_published`).
        unapplied: change records left in Kafka after the batch run (must be 0).
        tables: per table ``{rows, source_rows, matches, differing_keys, first_differing_keys}``.
        seconds: wall time.
    """

    stream: dict[str, float] = field(default_factory=dict)
    batch: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, list[float]] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)
    debezium_lag_s: float = 0.0
    unapplied: int = -1
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every table reconciled exactly and nothing is left in Kafka."""
        return (
            bool(self.tables)
            and all(t["matches"] for t in self.tables.values())
            and self.unapplied == 0
        )

    def lines(self) -> list[str]:
        """The summary as text lines (what ``make demo-kafka`` prints)."""
        out = [
            f"workload: pgbench {self.workload.get('transactions', '?')} transactions "
            f"in {self.workload.get('seconds', 0):.0f} s "
            f"({self.workload.get('failed', 0)} failed after retries)"
        ]
        for name, side in (("stream", self.stream), ("batch run", self.batch)):
            events, secs = side.get("events", 0), side.get("seconds", 0)
            apply_s = side.get("apply_seconds", 0.0)
            what = "micro-batches" if name == "stream" else "DAG run"
            out.append(
                f"{name}: {int(events)} events in {int(side.get('batches', 0))} batches, "
                f"{secs:.1f} s ({what}): {events / secs if secs else 0:.0f} events/s; "
                f"{events / apply_s if apply_s else 0:.0f} events/s while applying"
            )
        for name, key in (("stream", "stream"), ("batch run", "batch")):
            lat = self.latency_ms.get(key) or []
            if lat:
                out.append(
                    f"latency source commit -> visible ({name}, {len(lat)} events): "
                    f"p50 {percentile(lat, 50) / 1000:.1f} s, p95 {percentile(lat, 95) / 1000:.1f} s"
                )
        out.append(
            f"Debezium lag 0 {self.debezium_lag_s:.1f} s after the workload; "
            f"change records left unapplied in Kafka: {self.unapplied}"
        )
        for name, t in self.tables.items():
            verdict = (
                "exact"
                if t["matches"]
                else f"{t['differing_keys']} keys differ {t['first_differing_keys']}"
            )
            out.append(f"  {name}: {t['rows']} rows, PostgreSQL {t['source_rows']}: {verdict}")
        out.append(
            ("every table reconciled exactly with PostgreSQL" if self.ok else "MISMATCH")
            + f"; {self.seconds:.0f} s"
        )
        return out


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` (nearest rank; 0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, int(round(p / 100 * len(ordered) + 0.5 - 1e-9)))
    return ordered[min(rank, len(ordered)) - 1]


def topics(prefix: str = TOPIC_PREFIX) -> list[str]:
    """The change topics of :data:`SOURCE_TABLES` (``<prefix>.<schema>.<table>``)."""
    return [f"{prefix}.{t}" for t in SOURCE_TABLES]


def connector_config(url: str, prefix: str = TOPIC_PREFIX, slot: str = SLOT) -> dict[str, str]:
    """Debezium's PostgreSQL connector on the database of the SQLAlchemy ``url`` (superuser,
    trust auth): pgoutput, a publication of :data:`SOURCE_TABLES`, transaction metadata on,
    the tables' rows first (``snapshot.mode=initial``) then streaming, tombstones after deletes,
    a heartbeat every second (the slot's confirmed position follows the WAL, so its lag
    reaches 0 once everything was sent)."""
    u = make_url(url)
    return {
        "connector.class": DEBEZIUM_POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "database.hostname": u.host or "127.0.0.1",
        "database.port": str(u.port or 5432),
        "database.user": u.username or "postgres",
        "database.password": u.password or "",
        "database.dbname": u.database or "postgres",
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.name": f"{slot}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(SOURCE_TABLES),
        "snapshot.mode": "initial",
        "provide.transaction.metadata": "true",
        "tombstones.on.delete": "true",
        "heartbeat.interval.ms": "1000",
    }


def _execute(url: str, *statements: str) -> list[tuple[Any, ...]]:
    conn = connect(url)
    try:
        conn.autocommit = True
        rows: list[tuple[Any, ...]] = []
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
                rows = cur.fetchall() if cur.description else []
        return rows
    finally:
        conn.close()


def _run(cmd: list[str], what: str, timeout: float = 300) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def prepare_pgbench(pg: PostgresServer, settings: KafkaDemoSettings) -> None:
    """``pgbench -i`` (primary keys on accounts, branches, tellers), ``settings.accounts``
    accounts kept, a surrogate key on history, ``REPLICA IDENTITY FULL`` everywhere.

    Raises:
        RuntimeError: pgbench failed (its output in the message).
    """
    exe = pg.tool_path("pgbench")
    _run([exe, "-i", "-q", "-s", str(settings.scale), pg.libpq_url()], "pgbench -i")
    url = pg.url()
    _execute(
        url,
        f"DELETE FROM pgbench_accounts WHERE aid > {int(settings.accounts)}",
        "ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY",
        *(f"ALTER TABLE {t} REPLICA IDENTITY FULL" for t in SOURCE_TABLES),
        "VACUUM ANALYZE",
    )


def start_workload(
    pg: PostgresServer, settings: KafkaDemoSettings, work_dir: Path
) -> subprocess.Popen[str]:
    """pgbench in the background (module docstring, step 3): returns its process."""
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "tpcb.sql").write_text(TPCB_SCRIPT)
    (work_dir / "churn.sql").write_text(CHURN_SCRIPT)
    cmd = [
        pg.tool_path("pgbench"),
        "-n",
        "-T",
        str(int(settings.workload_s)),
        "-R",
        str(settings.rate),
        "-c",
        str(settings.clients),
        "-j",
        "1",
        "--max-tries",
        "20",
        "-D",
        f"accounts={int(settings.accounts)}",
        "-D",
        f"branches={settings.scale}",
        "-D",
        f"tellers={10 * settings.scale}",
        "-f",
        f"{work_dir / 'tpcb.sql'}@3",
        "-f",
        f"{work_dir / 'churn.sql'}@1",
        pg.libpq_url(),
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _workload_report(proc: subprocess.Popen[str], timeout_s: float, t0: float) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"the pgbench workload failed ({proc.returncode}):\n{out[-3000:]}")
    seconds = time.monotonic() - t0
    report: dict[str, Any] = {"seconds": seconds, "output": out.splitlines()[-12:]}
    for line in out.splitlines():
        if line.startswith("number of transactions actually processed:"):
            report["transactions"] = int(line.split(":")[1].split()[0])
        elif line.startswith("number of failed transactions:"):
            report["failed"] = int(line.split(":")[1].split()[0])
    return report


def wait_published(spark: SparkSession, kopts: KafkaOptions, url: str, timeout_s: float) -> float:
    """Commit a marker change (``pgbench_branches.filler`` of branch 1) and wait until Debezium
    has published it to Kafka; returns the seconds. Debezium publishes in commit order, so
    every change committed before the marker is in Kafka then. (Waiting for the replication
    slot's confirmed position to reach ``pg_current_wal_lsn()`` can wait forever: WAL written
    after the last commit, e.g. a running-transactions record, is never confirmed until the
    next commit.) The marker is a real change: the batch run applies it and reconciliation
    compares it like any other.

    Raises:
        TimeoutError: not within ``timeout_s`` (topic and marker named).
    """
    marker = f"acidflow-demo-end-{uuid.uuid4().hex[:12]}"
    _execute(url, f"UPDATE pgbench_branches SET filler = '{marker}' WHERE bid = 1")
    topic = next(t for t in kopts.topics if t.endswith(".public.pgbench_branches"))
    t0 = time.monotonic()
    while True:
        seen = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", kopts.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
            .where(F.col("value").cast("string").contains(marker))
            .limit(1)
            .count()
        )
        if seen:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout_s:
            raise TimeoutError(
                f"Debezium did not publish the marker change {marker} to {topic} in "
                f"{timeout_s:.0f} s"
            )
        time.sleep(0.5)


def _wait_slot_active(url: str, slot: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = _execute(url, f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'")
        if rows and rows[0][0]:
            return
        time.sleep(0.25)
    raise TimeoutError(f"Debezium's replication slot {slot} is not active after {timeout_s:.0f} s")


def catalog_url(catalog: Catalog) -> str:
    """The catalog's URL for the DAG run's jobs (a :class:`SqlCatalog` only).

    Raises:
        TypeError: another kind of catalog.
    """
    if not isinstance(catalog, SqlCatalog):
        raise TypeError(f"the Kafka demo runs on a SqlCatalog, not a {type(catalog).__name__}")
    return catalog.url.render_as_string(hide_password=False)


def run_batch_dag(
    catalog: Catalog, kopts: KafkaOptions, airflow_home: Path, db: str
) -> tuple[float, list[Any]]:
    """``airflow dags test acid_cdc`` with ``source: kafka`` on a private ``AIRFLOW_HOME``;
    returns the run's seconds and its batches (the cdc-upsert summary).

    Raises:
        RuntimeError: the run did not succeed (the end of its output in the message).
    """
    env = airflow_env(
        airflow_home,
        warehouse=catalog.warehouse,
        extra={"ACIDFLOW_CATALOG_URL": catalog_url(catalog)},
    )
    migrate(env)
    conf = {
        "source": "kafka",
        "format": "debezium",
        "tables_config": str(TABLES_YAML),
        "target_db": db,
        "quarantine_threshold": 0.0,
        "kafka_bootstrap_servers": kopts.bootstrap_servers,
        "kafka_source": kopts.source,
        "kafka_topics": list(kopts.topics),
        "kafka_transaction_topic": kopts.transaction_topic or "",
    }
    t0 = time.monotonic()
    r = dags_test("acid_cdc", env, conf=conf)
    seconds = time.monotonic() - t0
    text = r.stdout + r.stderr
    if r.returncode != 0 or "state=success" not in text:
        raise RuntimeError(
            f"airflow dags test acid_cdc failed (rc {r.returncode}):\n{text[-4000:]}"
        )
    summary = _last_json(text, "batches") or {"batches": []}
    return seconds, [SimpleNamespace(**b) for b in summary["batches"]]


def _topics_now(spark: SparkSession, kopts: KafkaOptions) -> Any:
    """Every record of the change topics up to their current ends (Spark's Kafka source in
    batch mode, a DataFrame of its columns: topic, partition, offset, key, value, ...)."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kopts.bootstrap_servers)
        .option("subscribe", ",".join(kopts.topics))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )


def _change_records(
    spark: SparkSession, kopts: KafkaOptions
) -> list[tuple[str, int, int, str, int]]:
    """``(topic, partition, offset, op, source.ts_ms)`` of every change record of the topics
    (tombstones left out), extracted by Spark (``get_json_object``) from the JSON values."""
    df = _topics_now(spark, kopts).where(F.col("value").isNotNull())
    v = F.col("value").cast("string")
    rows = df.select(
        "topic",
        "partition",
        "offset",
        F.get_json_object(v, "$.payload.op").alias("op"),
        F.get_json_object(v, "$.payload.source.ts_ms").cast("long").alias("ts_ms"),
    ).collect()
    return [(r[0], int(r[1]), int(r[2]), r[3] or "", int(r[4] or 0)) for r in rows]


def _end_offsets(spark: SparkSession, kopts: KafkaOptions) -> dict[str, dict[str, int]]:
    """Every partition's end offset (``max(offset) + 1``) of the change topics, tombstones
    included."""
    rows = (
        _topics_now(spark, kopts)
        .groupBy("topic", "partition")
        .agg(F.max("offset").alias("last"))
        .collect()
    )
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["topic"], {})[str(r["partition"])] = int(r["last"]) + 1
    return out


def measure(
    spark: SparkSession, catalog: Catalog, kopts: KafkaOptions, out: KafkaDemoSummary
) -> None:
    """Fill ``out``'s event counts, latencies and ``unapplied`` from the change topics and the
    source's committed batches (stream batches carry ``details["stream"]``)."""
    batches = [
        b
        for b in catalog.list_batches(kind="kafka")
        if b.source == kopts.source and b.state == "committed"
    ]
    ranges = []
    for b in batches:
        side = "stream" if (b.details or {}).get("stream") else "batch"
        offs = (b.details or {}).get("offsets", {})
        ranges.append((side, offs.get("start", {}), offs.get("end", {}), b.committed_at))
    counts = {"stream": 0, "batch": 0}
    latency: dict[str, list[float]] = {"stream": [], "batch": []}
    applied_end: dict[str, dict[str, int]] = {}
    for _, _, end, _ in ranges:
        for t, ps in end.items():
            for p, o in ps.items():
                applied_end.setdefault(t, {})[p] = max(applied_end.get(t, {}).get(p, 0), int(o))
    unapplied = 0
    for topic, part, offset, op, ts_ms in _change_records(spark, kopts):
        p = str(part)
        hit = next(
            (
                (side, committed)
                for side, start, end, committed in ranges
                if int(start.get(topic, {}).get(p, 0)) <= offset < int(end.get(topic, {}).get(p, 0))
            ),
            None,
        )
        if hit is None:
            unapplied += offset >= applied_end.get(topic, {}).get(p, 0)
            continue
        side, committed = hit
        counts[side] += 1
        if op in ("c", "u", "d") and ts_ms and committed is not None:
            visible = committed.replace(tzinfo=committed.tzinfo or timezone.utc)
            src = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc)
            latency[side].append((visible - src).total_seconds() * 1000)
    out.stream["events"] = counts["stream"]
    out.batch["events"] = counts["batch"]
    out.latency_ms = latency
    out.unapplied = unapplied
    ends = _end_offsets(spark, kopts)
    if any(applied_end.get(t, {}).get(p, 0) < o for t, ps in ends.items() for p, o in ps.items()):
        out.unapplied = max(out.unapplied, 1)


def reconcile_with_postgres(
    spark: SparkSession | None, catalog: Catalog, url: str, tables: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Reconcile each table with its live PostgreSQL table (row-for-row, by primary key)."""
    out: dict[str, dict[str, Any]] = {}
    for source, tdef in sorted(tables.items()):
        res = reconcile(spark, catalog, tdef.name, PostgresSource(url, source))
        out[tdef.name] = {
            "rows": res.table_rows,
            "source_rows": res.source_rows,
            "matches": res.matches,
            "differing_keys": res.differing_keys,
            "first_differing_keys": [str(k) for k in res.first_differing_keys[:3]],
        }
    return out


def run_kafka_demo(
    spark: SparkSession,
    catalog: Catalog,
    *,
    pg: PostgresServer,
    bootstrap_servers: str,
    connect_worker: ConnectWorker,
    work_dir: Path,
    settings: KafkaDemoSettings | None = None,
    prefix: str = TOPIC_PREFIX,
    slot: str = SLOT,
) -> KafkaDemoSummary:
    """The demo on running servers (module docstring). The catalog is fresh (a
    :class:`SqlCatalog`: the DAG run gets its URL); ``work_dir`` holds the stream's checkpoint,
    the pgbench scripts and the ``AIRFLOW_HOME``. The connector is removed at the end.

    Raises:
        RuntimeError: pgbench, the stream or the DAG run failed; TimeoutError: Debezium did not
            start or catch up.
    """
    s = settings or KafkaDemoSettings()
    t0 = time.monotonic()
    out = KafkaDemoSummary()
    url = pg.url()
    tables = load_tables_config(TABLES_YAML)
    db = next(iter(tables.values())).name.split(".")[0]
    for tdef in tables.values():
        catalog.create_table(with_position_column(tdef), if_not_exists=True)
    prepare_pgbench(pg, s)
    log.info("pgbench tables created (%d accounts); registering Debezium's connector", s.accounts)
    name = f"{CONNECTOR}-{prefix}"
    connect_worker.create_connector(name, connector_config(url, prefix, slot))
    try:
        connect_worker.wait_running(name)
        _wait_slot_active(url, slot)
        kopts = KafkaOptions(
            source=SOURCE_NAME,
            bootstrap_servers=bootstrap_servers,
            topics=topics(prefix),
            transaction_topic=f"{prefix}.transaction",
        )
        options = CdcOptions(fmt="debezium", tables=tables, target_db=db, quarantine_threshold=0.0)
        workload = start_workload(pg, s, work_dir / "pgbench")
        log.info(
            "pgbench runs %.0f s at %d tx/s; the stream runs %.0f s (%.0f s trigger)",
            s.workload_s, s.rate, s.stream_s, s.trigger_s,
        )  # fmt: skip
        t_work = time.monotonic()
        try:
            t = time.monotonic()
            run = run_kafka_stream(
                spark,
                catalog,
                options,
                kopts,
                trigger_seconds=s.trigger_s,
                checkpoint=str(work_dir / "checkpoint"),
                timeout_s=s.stream_s,
                batches_per_trigger=1,
            )
            out.stream.update(
                batches=len(run.reports),
                micro_batches=run.micro_batches,
                seconds=time.monotonic() - t,
                apply_seconds=sum(r.seconds for r in run.reports),
            )
            log.info("stream stopped: %d batches committed; waiting for pgbench", len(run.reports))
            out.workload = _workload_report(workload, s.workload_s + 120, t_work)
        finally:
            if workload.poll() is None:
                workload.kill()
                workload.wait()
        out.debezium_lag_s = wait_published(spark, kopts, url, s.lag_timeout_s)
        log.info("Debezium's lag is 0; airflow dags test acid_cdc (source: kafka)")
        seconds, reports = run_batch_dag(catalog, kopts, work_dir / "airflow", db)
        applied = [r for r in reports if getattr(r, "status", "") in ("applied", "empty")]
        out.batch.update(
            batches=len(applied),
            seconds=seconds,
            apply_seconds=sum(float(getattr(r, "seconds", 0.0)) for r in applied),
        )
        log.info("DAG run done (%.0f s); measuring and reconciling with PostgreSQL", seconds)
        measure(spark, catalog, kopts, out)
        out.tables = reconcile_with_postgres(spark, catalog, url, tables)
    finally:
        try:
            connect_worker.delete_connector(name)
        except Exception:  # best effort: the worker may be gone already (Ctrl-C)
            pass
    out.seconds = time.monotonic() - t0
    return out
