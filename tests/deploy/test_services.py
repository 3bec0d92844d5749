"""docker-compose.yml's JVM services, started for real through their entry point
(``include/deploy/services.py``, what the containers run) on 127.0.0.1 -- no Docker engine:

* on a private PostgreSQL 15 (``wal_level=logical``, as the compose service runs it) prepared by
  ``include/deploy/postgres-init.sh``, with password authentication for the CDC source role;
* ``hive-metastore``: schematool initialises the empty database once (a second start finds the
  schema and leaves it), the server opens a transaction (DbTxnManager on), its
  ``metastore-site.xml`` is the tests' metastore's properties and readable by its owner only;
* ``kafka`` (format idempotent across restarts, healthcheck), ``kafka-connect`` (distributed,
  Debezium on its plugin path), ``register-connector``: a committed row arrives as a Debezium
  envelope with its transaction's BEGIN/END events, the source password reached the connector
  through the worker's environment and appears in no Kafka topic.

Needs the PostgreSQL binaries and the ``make hive-jars`` / ``make kafka-jars`` artifacts (the
Dockerfile fetches the same poms into /opt/hive and /opt/kafka): skips without them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.conftest import REPO

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DEPLOY = REPO / "include" / "deploy"
SERVICES = DEPLOY / "services.py"
SOURCE_PASSWORD = "src-pw-Zq81"
SITE_ENV = {
    "AIRFLOW_DB_USER": "airflow",
    "AIRFLOW_DB_PASSWORD": "a",
    "AIRFLOW_DB_NAME": "airflow",
    "ACIDFLOW_DB_USER": "acidflow",
    "ACIDFLOW_DB_PASSWORD": "b",
    "ACIDFLOW_DB_NAME": "acidflow",
    "HIVE_METASTORE_DB_USER": "hive",
    "HIVE_METASTORE_DB_PASSWORD": "hive-pw",
    "HIVE_METASTORE_DB_NAME": "metastore",
    "SOURCE_DB_USER": "cdc",
    "SOURCE_DB_PASSWORD": SOURCE_PASSWORD,
    "SOURCE_DB_NAME": "source",
    "SOURCE_DB_PUBLICATION": "acidflow_cdc",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def pg() -> Iterator:
    from tests.support.postgres import PostgresCluster, require_postgres

    require_postgres()
    with PostgresCluster(settings={"wal_level": "logical"}, dbname="postgres") as cluster:
        env = {
            "PATH": f"{Path(cluster.tool_path('psql')).parent}{os.pathsep}/usr/bin:/bin",
            "PGHOST": cluster.host,
            "PGPORT": str(cluster.port),
            "POSTGRES_USER": "postgres",
            **SITE_ENV,
        }
        res = subprocess.run(
            ["bash", str(DEPLOY / "postgres-init.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        # the test cluster trusts every local login; the source role must show its password,
        # so that the connector only works when ${env:SOURCE_DB_PASSWORD} was resolved
        hba = cluster.data_dir / "pg_hba.conf"
        hba.write_text("host all cdc 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        cluster.execute("SELECT pg_reload_conf()")
        yield cluster


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(SERVICES), *args],
            env={**os.environ, "JAVA_HEAP_OPTS": "-Xmx384m", **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def _wait(check, proc: subprocess.Popen, log: Path, what: str, timeout_s: float = 180.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            result = check()
            if result:
                return result
        except (OSError, requests.RequestException):
            pass
        time.sleep(0.5)
    pytest.fail(f"{what} not ready in {timeout_s:.0f}s:\n{log.read_text()[-4000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


# ----------------------------------------------------------------------------- metastore


def test_metastore_initialises_its_schema_once_and_serves_transactions(pg, tmp_path):
    from pymetastore.hive_metastore.ttypes import AbortTxnsRequest, OpenTxnRequest

    from acidflow.catalog.hms.client import hms_client
    from devservers.hms import backing_db, site_properties
    from tests.support.hms import require_hive_artifacts

    arts = require_hive_artifacts()
    port = _free_port()
    warehouse = tmp_path / "warehouse"
    conf = tmp_path / "conf"
    args = [
        "hive-metastore",
        f"--home={arts.root}",
        f"--conf-dir={conf}",
        f"--warehouse={warehouse}",
        "--host=127.0.0.1",
        f"--port={port}",
        "--db-host=127.0.0.1",
        f"--db-port={pg.port}",
    ]
    env = {k: v for k, v in SITE_ENV.items() if k.startswith("HIVE_METASTORE_")}
    log = tmp_path / "metastore.log"
    url = f"thrift://127.0.0.1:{port}"

    def serves():
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    for start in (1, 2):
        proc = _start(args, log, env)
        try:
            _wait(serves, proc, log, f"metastore (start {start})")
            with hms_client(url) as client:
                assert "default" in client.get_all_databases()
                txns = client.open_txns(OpenTxnRequest(num_txns=1, user="t", hostname="h"))
                client.abort_txns(AbortTxnsRequest(txn_ids=txns.txn_ids))
        finally:
            _stop(proc)
    text = log.read_text()
    assert text.count("services: schematool -initSchema") == 1, text[-4000:]
    assert "the metastore schema is there" in text
    assert "hive-pw" not in text

    # the tests' metastore's properties (one home), on the deployment's database
    from xml.etree import ElementTree

    site = conf / "metastore-site.xml"
    assert site.stat().st_mode & 0o777 == 0o600
    props = {
        p.findtext("name"): p.findtext("value")
        for p in ElementTree.parse(site).getroot().iter("property")
    }
    db_url = f"postgresql://hive:hive-pw@127.0.0.1:{pg.port}/metastore"
    expected = site_properties(
        db=backing_db(db_url, conf),
        warehouse=warehouse,
        port=port,
        extra={"metastore.thrift.uris": url},
    )
    assert props == expected
    # Hive's postgres script quotes its JDO tables ("VERSION") but not its transaction tables
    tables = {r[0].lower() for r in pg.execute("SELECT tablename FROM pg_tables", "metastore")}
    assert {"version", "txns", "hive_locks"} <= tables


# ------------------------------------------------------------------- kafka, connect, debezium


def _consume(home: Path, bootstrap: str, topic: str, n: int) -> list[str]:
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            str(home / "server" / "*"),
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(n),
            "--timeout-ms",
            "60000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [ln for ln in done.stdout.splitlines() if ln.startswith("{")]


def test_kafka_connect_and_debezium_connector(pg, tmp_path):
    import psycopg2

    from tests.support.kafka import require_kafka_artifacts

    arts = require_kafka_artifacts()
    port, controller, rest = _free_port(), _free_port(), _free_port()
    bootstrap = f"127.0.0.1:{port}"
    kafka_args = [
        "kafka",
        f"--home={arts.root}",
        f"--data-dir={tmp_path / 'kafka-data'}",
        f"--conf-dir={tmp_path / 'kafka-conf'}",
        "--host=127.0.0.1",
        f"--port={port}",
        f"--controller-port={controller}",
    ]
    kafka_env = {"KAFKA_CLUSTER_ID": "q1Sh-9_ISia_zwGINzRvyQ"}
    klog, clog = tmp_path / "kafka.log", tmp_path / "connect.log"
    ready = [sys.executable, str(SERVICES), "kafka-ready", "--host=127.0.0.1", f"--port={port}"]

    procs: list[subprocess.Popen] = []
    try:
        # format, start, stop, start again: the second format keeps the log directory
        for _ in range(2):
            if procs:
                _stop(procs.pop())
            procs.append(_start(kafka_args, klog, kafka_env))
            _wait(
                lambda: subprocess.run(ready, timeout=30).returncode == 0,
                procs[-1],
                klog,
                "kafka",
            )
        meta = (tmp_path / "kafka-data" / "meta.properties").read_text()
        assert "cluster.id=q1Sh-9_ISia_zwGINzRvyQ" in meta

        connect_url = f"http://127.0.0.1:{rest}"
        procs.append(
            _start(
                [
                    "kafka-connect",
                    f"--home={arts.root}",
                    f"--conf-dir={tmp_path / 'connect-conf'}",
                    f"--bootstrap-servers={bootstrap}",
                    "--host=127.0.0.1",
                    f"--rest-port={rest}",
                ],
                clog,
                {"SOURCE_DB_PASSWORD": SOURCE_PASSWORD},
            )
        )
        _wait(
            lambda: requests.get(f"{connect_url}/connectors", timeout=5).ok,
            procs[-1],
            clog,
            "kafka-connect",
        )
        plugins = requests.get(f"{connect_url}/connector-plugins", timeout=30).json()
        assert "io.debezium.connector.postgresql.PostgresConnector" in {p["class"] for p in plugins}

        src = psycopg2.connect(
            host=pg.host, port=pg.port, user="cdc", password=SOURCE_PASSWORD, dbname="source"
        )
        src.autocommit = True
        with src.cursor() as cur:
            cur.execute("CREATE TABLE public.orders (id int PRIMARY KEY, item text)")

        register = subprocess.run(
            [
                sys.executable,
                str(SERVICES),
                "register-connector",
                f"--connect-url={connect_url}",
                "--db-host=127.0.0.1",
                f"--db-port={pg.port}",
            ],
            env={
                **os.environ,
                **{k: v for k, v in SITE_ENV.items() if k != "SOURCE_DB_PASSWORD"},
                "DEBEZIUM_TOPIC_PREFIX": "shop",
                "DEBEZIUM_SLOT_NAME": "debezium",
                "DEBEZIUM_TABLE_INCLUDE_LIST": "public.orders",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert register.returncode == 0, register.stdout + register.stderr
        assert SOURCE_PASSWORD not in register.stdout + register.stderr

        def running():
            status = requests.get(
                f"{connect_url}/connectors/acidflow-postgres-source/status", timeout=5
            ).json()
            # a 404 answer (no "connector") until the worker has started it
            tasks = status.get("tasks", [])
            assert not any(t["state"] == "FAILED" for t in tasks), tasks
            connector = status.get("connector", {}).get("state")
            return connector == "RUNNING" and tasks and tasks[0]["state"] == "RUNNING"

        _wait(running, procs[-1], clog, "the Debezium connector")
        # the slot exists once streaming started
        _wait(
            lambda: (
                pg.execute("SELECT active FROM pg_replication_slots WHERE slot_name = 'debezium'")
                == [(True,)]
            ),
            procs[-1],
            clog,
            "the replication slot",
        )
        with src.cursor() as cur:
            cur.execute("BEGIN; INSERT INTO public.orders VALUES (1, 'pen'); COMMIT")
        src.close()

        changes = [json.loads(v) for v in _consume(arts.root, bootstrap, "shop.public.orders", 1)]
        assert changes, clog.read_text()[-4000:]
        # JsonConverter with schemas: {"schema": ..., "payload": <Debezium envelope>}
        assert set(changes[0]) == {"schema", "payload"}
        payload = changes[0]["payload"]
        assert payload["op"] in ("c", "r") and payload["after"] == {"id": 1, "item": "pen"}
        events = [json.loads(v) for v in _consume(arts.root, bootstrap, "shop.transaction", 2)]
        assert [e["payload"]["status"] for e in events] == ["BEGIN", "END"]

        configs = _consume(arts.root, bootstrap, "acidflow-connect-configs", 3)
        assert configs and not any(SOURCE_PASSWORD in c for c in configs)
        assert any("${env:SOURCE_DB_PASSWORD}" in c for c in configs)
    finally:
        for p in reversed(procs):
            _stop(p)
