"""``make demo-kafka``'s core at a tiny scale (``acidflow.demo.kafka.run_kafka_demo``): a pgbench
workload on a database of the session's PostgreSQL 15 -> Debezium -> the session's Kafka ->
acidflow's stream for a few seconds, then the ``acid_cdc`` DAG (``source: kafka``) through
``airflow dags test``; every table reconciled exactly with PostgreSQL."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from sqlalchemy.engine import make_url

from acidflow.demo.kafka import KafkaDemoSettings, run_kafka_demo
from acidflow.sources.postgres.connection import connect
from tests.support.kafka import require_kafka_spark_jars
from tests.support.postgres import (
    bindir,
    create_database,
    drop_database,
    drop_replication_slot,
)

pytestmark = pytest.mark.postgres


@dataclass
class _Database:
    """One database of the session's cluster, as the demo sees a PostgreSQL server."""

    sqlalchemy_url: str

    def url(self, dbname: str | None = None) -> str:
        return self.sqlalchemy_url

    def libpq_url(self, dbname: str | None = None) -> str:
        u = make_url(self.sqlalchemy_url)
        return f"postgresql://{u.username}@{u.host}:{u.port}/{u.database}"

    def tool_path(self, tool: str) -> str:
        return str(bindir() / tool)


def _drop_slot(url: str, slot: str) -> None:
    conn = connect(url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            drop_replication_slot(cur, slot)
    finally:
        conn.close()


@pytest.mark.slow
def test_kafka_demo_stream_then_batch_reconciles_exactly(
    spark, catalog, postgres_url, kafka, kafka_connect, tmp_path
):
    require_kafka_spark_jars()
    suffix = uuid.uuid4().hex[:8]
    dbname, slot, prefix = f"kdemo_{suffix}", f"kdemo_{suffix}", f"kd{suffix}"
    url = create_database(postgres_url, dbname)
    try:
        s = run_kafka_demo(
            spark,
            catalog,
            pg=_Database(url),
            bootstrap_servers=kafka.bootstrap_servers,
            connect_worker=kafka_connect,
            work_dir=tmp_path / "work",
            settings=KafkaDemoSettings(
                workload_s=10, stream_s=8, rate=20, accounts=500, trigger_s=2
            ),
            prefix=prefix,
            slot=slot,
        )
    finally:
        _drop_slot(postgres_url, slot)
        drop_database(postgres_url, dbname)
    print(*s.lines(), sep="\n")
    assert set(s.tables) == {
        "pgbench_kafka.pgbench_accounts",
        "pgbench_kafka.pgbench_branches",
        "pgbench_kafka.pgbench_tellers",
        "pgbench_kafka.pgbench_history",
    }
    assert all(t["matches"] for t in s.tables.values()), s.tables
    assert s.unapplied == 0 and s.ok
    # both sides applied change events; the workload ran and its transactions reached the table
    assert s.stream["events"] > 0 and s.stream["batches"] >= 1
    assert s.batch["events"] > 0 and s.batch["batches"] >= 1
    assert s.workload["transactions"] > 0
    assert s.tables["pgbench_kafka.pgbench_history"]["rows"] > 0
    assert s.latency_ms["stream"] and min(s.latency_ms["stream"]) >= 0
