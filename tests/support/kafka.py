"""Test helpers for Kafka and Kafka Connect with Debezium's PostgreSQL connector.

The servers are ``devservers.kafka``'s (one broker and one Connect worker per test session: the
``kafka`` and ``kafka_connect`` fixtures of ``tests/conftest.py``, started only when a test asks
for them). Here:

- :func:`require_kafka_artifacts`: the ``make kafka-jars`` artifacts, else a skip (a failure when
  ``CI=true``), as ``tests/support/hms.py`` does for the metastore;
- :func:`debezium_postgres_config`: a Debezium PostgreSQL connector's configuration for a
  database of the session's PostgreSQL cluster (the ``postgres_url`` fixture's server);
- :func:`json_records`: a topic's records (from :meth:`devservers.kafka.KafkaServer.consume`)
  with their JSON keys and values parsed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from devservers.kafka import DEBEZIUM_POSTGRES_CONNECTOR, KafkaArtifacts, KafkaArtifactsMissing


def require_kafka_artifacts() -> KafkaArtifacts:
    """The ``make kafka-jars`` artifacts; without them: a skip, or a failure when ``CI=true``
    (CI must run the Kafka tests, not skip them)."""
    try:
        return KafkaArtifacts.locate()
    except KafkaArtifactsMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))
        raise  # unreachable: pytest.skip raises


def debezium_postgres_config(
    url: str,
    *,
    topic_prefix: str,
    tables: Sequence[str],
    slot_name: str,
    snapshot_mode: str = "no_data",
) -> dict[str, str]:
    """The configuration of a Debezium PostgreSQL connector on the database of the SQLAlchemy
    ``url`` (superuser, trust auth: the ``postgres_url`` fixture's server), streaming the
    ``schema.table`` names of ``tables`` with ``pgoutput`` (PostgreSQL's built-in logical
    decoding plugin; Debezium creates the replication slot ``slot_name`` and a publication of
    just those tables), transaction metadata on (BEGIN/END events on ``<topic_prefix>
    .transaction``, a ``transaction`` block in each change event), tombstones after deletes
    (Debezium's default, spelled out) and ``snapshot_mode`` (``no_data``: changes from the
    slot's creation on; ``initial``: the tables' rows first)."""
    u = make_url(url)
    return {
        "connector.class": DEBEZIUM_POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "database.hostname": u.host or "127.0.0.1",
        "database.port": str(u.port or 5432),
        "database.user": u.username or "postgres",
        "database.password": u.password or "",
        "database.dbname": u.database or "postgres",
        "topic.prefix": topic_prefix,
        "plugin.name": "pgoutput",
        "slot.name": slot_name,
        "publication.name": f"{slot_name}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        "snapshot.mode": snapshot_mode,
        "provide.transaction.metadata": "true",
        "tombstones.on.delete": "true",
    }


def json_records(
    records: Sequence[tuple[str | None, str | None]],
) -> list[tuple[Any, Any]]:
    """``(key, value)`` pairs with each non-null side parsed as JSON (``None`` stays: a
    tombstone's value)."""
    return [
        (None if k is None else json.loads(k), None if v is None else json.loads(v))
        for k, v in records
    ]


def require_kafka_spark_jars() -> list[str]:
    """Spark's Kafka connector jars (``make kafka-jars``: ``.cache/kafka/spark``); without them a
    skip, or a failure when ``CI=true``."""
    from acidflow.spark import KAFKA_SPARK_DIR, kafka_spark_jars

    jars = kafka_spark_jars()
    if not any("spark-sql-kafka" in j for j in jars):
        msg = f"Spark's Kafka connector is not in {KAFKA_SPARK_DIR}: run 'make kafka-jars'"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {msg}", pytrace=False)
        pytest.skip(msg)
    return jars


def produce(spark: Any, bootstrap_servers: str, topic: str, values: Sequence[Any]) -> None:
    """Write ``values`` to ``topic`` (partition 0 of a new topic) with Spark's Kafka sink: each a
    JSON document, or ``bytes`` as they are."""
    rows = [(None, v if isinstance(v, bytes) else json.dumps(v).encode()) for v in values]
    (
        spark.createDataFrame(rows, "key binary, value binary")
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("topic", topic)
        .save()
    )


def delete_records(kafka: Any, topic: str, partition: int, before: int) -> None:
    """Delete the records of ``topic``/``partition`` below offset ``before``, as retention does
    (Kafka's ``kafka-delete-records.sh``: ``DeleteRecordsCommand`` in a JVM)."""
    import subprocess
    import tempfile

    spec = {"partitions": [{"topic": topic, "partition": partition, "offset": before}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    done = subprocess.run(
        [
            "java",
            "-cp",
            kafka.artifacts.classpath(),
            "org.apache.kafka.tools.DeleteRecordsCommand",
            "--bootstrap-server",
            kafka.bootstrap_servers,
            "--offset-json-file",
            f.name,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    os.unlink(f.name)
    if done.returncode != 0:
        raise AssertionError(f"DeleteRecordsCommand failed: {done.stdout}\n{done.stderr}")
