"""A real Apache Kafka 4.3.0 broker (KRaft) and Kafka Connect with Debezium's PostgreSQL
connector on 127.0.0.1, for the tests and for a person.

The artifacts come from ``make kafka-jars`` (``tools/kafka/pom.xml``) in a cache folder,
``.cache/kafka/`` at the repository root unless ``$ACIDFLOW_KAFKA_CACHE`` says otherwise::

    server/   Kafka 4.3.0's jars as its binary release's libs/ holds them (broker, tools,
              Connect runtime, JsonConverter, Log4j 2)
    plugins/  Connect's plugin.path; debezium-connector-postgres/ is Debezium 3.6.1.Final's
              PostgreSQL connector plugin archive, unpacked

:func:`start_kafka` lays out a work folder (``server.properties``, ``log4j2.properties``, the
log directory, ``kafka.log``) and runs a single KRaft node that is broker and controller at
once, as Kafka's quickstart does: ``kafka.tools.StorageTool format`` (``kafka-storage.sh
format``) with a fresh cluster id, then ``kafka.Kafka server.properties`` with the PLAINTEXT
listener and the CONTROLLER listener on free ports, topics created on first use
(``auto.create.topics.enable=true``) and every internal topic at replication factor 1. It is
ready when a Kafka protocol ``Metadata`` request (:func:`devservers.kafka_wire.metadata`, on a
plain socket: no Python Kafka client is needed) lists the broker.

:func:`start_connect` runs a standalone Connect worker (``ConnectStandalone``) on that broker:
``JsonConverter`` with schemas for keys and values (each record is ``{"schema": ...,
"payload": ...}``), source offsets in a file, ``plugin.path`` = the plugins folder, the REST API
on a free port. It starts with no connector; :meth:`ConnectServer.create_connector` adds one
through ``POST /connectors``. It is ready when ``GET /`` answers.

Both JVMs get a small heap (``-Xmx512m``) and log through Log4j 2 to their log file. Java 17
is enough (Kafka 4's broker and Connect need 17+; Debezium 3.6 targets 17).

``python -m devservers.kafka`` (``make kafka``, with ``tools/`` on ``sys.path``) runs a broker
and a Connect worker in the foreground until Ctrl-C and prints the bootstrap servers and the
Connect REST URL; the test suite's ``kafka`` and ``kafka_connect`` fixtures
(``tests/conftest.py``) start one of each per test session. A development tool: not part of
the shipped ``acidflow`` package.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from devservers.kafka_wire import metadata
from devservers.process import JvmServer, cache_dir, free_port, serve_foreground, tail

__all__ = [
    "DEBEZIUM_VERSION",
    "KAFKA_CACHE_ENV",
    "KAFKA_VERSION",
    "ConnectServer",
    "KafkaArtifacts",
    "KafkaArtifactsMissing",
    "KafkaServer",
    "KafkaStartError",
    "broker_properties",
    "default_cache_dir",
    "main",
    "start_connect",
    "start_kafka",
    "worker_properties",
]

KAFKA_VERSION = "4.3.0"
DEBEZIUM_VERSION = "3.6.1.Final"
KAFKA_CACHE_ENV = "ACIDFLOW_KAFKA_CACHE"
BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"
CONSOLE_CONSUMER_MAIN = "org.apache.kafka.tools.consumer.ConsoleConsumer"
#: The connector class of Debezium's PostgreSQL connector.
DEBEZIUM_POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
#: JVM flags of both servers: a small heap (a test broker holds a few topics).
JAVA_OPTIONS: tuple[str, ...] = ("-Xms64m", "-Xmx512m", "-Djava.awt.headless=true")
_DEBEZIUM_PLUGIN = "debezium-connector-postgres"
_LOG4J2 = """\
# written by devservers.kafka: INFO from Kafka, WARN from the libraries, to stdout (the log)
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = INFO
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.debezium.name = io.debezium
logger.debezium.level = INFO
"""


class KafkaArtifactsMissing(RuntimeError):
    """The jars of ``make kafka-jars`` are not in the cache folder (named)."""


class KafkaStartError(RuntimeError):
    """The storage format, the broker or the Connect worker failed or was not ready in time;
    the message names the log file and carries its tail."""


def default_cache_dir() -> Path:
    """``$ACIDFLOW_KAFKA_CACHE`` or ``<repository root>/.cache/kafka`` (where ``make
    kafka-jars`` puts the artifacts)."""
    env = os.environ.get(KAFKA_CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return cache_dir() / "kafka"


@dataclass(frozen=True)
class KafkaArtifacts:
    """The fetched Kafka and Debezium artifacts under ``root`` (layout: module doc)."""

    root: Path

    @property
    def server_dir(self) -> Path:
        """Folder of Kafka's jars (broker, tools, Connect, their dependencies)."""
        return self.root / "server"

    @property
    def plugins_dir(self) -> Path:
        """Connect's ``plugin.path``: one folder per plugin."""
        return self.root / "plugins"

    @property
    def debezium_postgres_dir(self) -> Path:
        """The unpacked Debezium PostgreSQL connector plugin."""
        return self.plugins_dir / _DEBEZIUM_PLUGIN

    def classpath(self) -> str:
        """The JVMs' classpath: every jar of :attr:`server_dir`."""
        return str(self.server_dir / "*")

    def missing(self) -> list[Path]:
        """The expected files that are absent (empty when all are there)."""
        wanted = [
            self.server_dir / f"kafka_2.13-{KAFKA_VERSION}.jar",
            self.server_dir / f"kafka-tools-{KAFKA_VERSION}.jar",
            self.server_dir / f"connect-runtime-{KAFKA_VERSION}.jar",
            self.server_dir / f"connect-json-{KAFKA_VERSION}.jar",
            self.debezium_postgres_dir / f"debezium-connector-postgres-{DEBEZIUM_VERSION}.jar",
        ]
        return [p for p in wanted if not p.exists()]

    @classmethod
    def locate(cls, root: Path | None = None) -> "KafkaArtifacts":
        """The artifacts under ``root`` (default :func:`default_cache_dir`).

        Raises:
            KafkaArtifactsMissing: naming the folder and the first missing file, and the fix.
        """
        found = cls((root or default_cache_dir()).resolve())
        gone = found.missing()
        if gone:
            raise KafkaArtifactsMissing(
                f"Kafka {KAFKA_VERSION} / Debezium {DEBEZIUM_VERSION} artifacts not found in"
                f" {found.root} ({gone[0]} is missing): run 'make kafka-jars' (Maven,"
                f" tools/kafka/pom.xml) or set ${KAFKA_CACHE_ENV}"
            )
        return found


def write_properties(path: Path, props: Mapping[str, str]) -> Path:
    """Write ``props`` as a Java ``.properties`` file at ``path`` (values escaped for
    ``java.util.Properties``); returns ``path``."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n")

    path.write_text("".join(f"{k}={esc(v)}\n" for k, v in props.items()))
    return path


def broker_properties(
    *,
    port: int,
    controller_port: int,
    log_dir: Path,
    host: str = "127.0.0.1",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``server.properties`` of a single KRaft node that is broker and controller (node id 1,
    itself the only voter), PLAINTEXT on ``port`` and CONTROLLER on ``controller_port``,
    topics created on first use with one partition, every internal topic (consumer offsets,
    transaction state, share-group state) at replication factor 1 and min ISR 1, no initial
    consumer-group rebalance delay; then ``extra`` on top."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "true",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    props.update(extra or {})
    return props


def worker_properties(
    *,
    bootstrap_servers: str,
    rest_port: int,
    offsets_file: Path,
    plugin_path: Path,
    host: str = "127.0.0.1",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The standalone Connect worker's properties: the broker, ``JsonConverter`` with schemas
    for keys and values, source offsets in ``offsets_file`` (flushed every second), the plugins
    of ``plugin_path`` found through their ServiceLoader manifests, the REST API on
    ``host:rest_port``; then ``extra`` on top."""
    props = {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
        "offset.storage.file.filename": str(offsets_file),
        "offset.flush.interval.ms": "1000",
        "plugin.path": str(plugin_path),
        # every plugin here (Kafka's own, Debezium's) has ServiceLoader manifests: Connect then
        # skips its reflective class scan of the plugin path (about 7 s of a 10 s start here)
        "plugin.discovery": "service_load",
        "listeners": f"http://{host}:{rest_port}",
        "rest.advertised.host.name": host,
        "rest.advertised.port": str(rest_port),
    }
    props.update(extra or {})
    return props


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise KafkaStartError("no 'java' on PATH and none in $JAVA_HOME: Kafka needs Java 17+")
    return found


def _java_command(artifacts: KafkaArtifacts, log4j: Path, main_class: str) -> list[str]:
    return [
        _java(),
        *JAVA_OPTIONS,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        artifacts.classpath(),
        main_class,
    ]


def new_cluster_id() -> str:
    """A fresh KRaft cluster id: 16 random bytes in URL-safe base64 without padding (Kafka's
    ``Uuid.toString``, what ``kafka-storage.sh random-uuid`` prints). Like Kafka's
    ``Uuid.randomUuid``, an id starting with ``-`` is drawn again: the storage tool would read
    it as an option (``--cluster-id -x...``: "expected one argument", 1 draw in 32)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


@dataclass
class KafkaServer(JvmServer):
    """A running single-node KRaft broker+controller (from :func:`start_kafka`); a context
    manager that stops it on exit."""

    host: str
    port: int
    controller_port: int
    cluster_id: str
    workdir: Path
    log: Path
    artifacts: KafkaArtifacts
    process: "subprocess.Popen[bytes]" = field(repr=False)

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``: a client's ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Wait until a Metadata request on the client port answers with this cluster's id and
        lists this broker.

        Raises:
            KafkaStartError: the JVM exited, or no such answer within ``timeout_s`` (the broker
                is stopped then); the message names the log and carries its tail.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise KafkaStartError(
                    f"the Kafka broker on port {self.port} exited with"
                    f" {self.process.returncode} before it was ready; {self.log}:\n{tail(self.log)}"
                )
            try:
                answered_id, brokers = metadata(self.host, self.port, timeout_s=2.0)
                if answered_id == self.cluster_id and self.bootstrap_servers in brokers:
                    return
            except (OSError, struct.error):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise KafkaStartError(
                    f"the Kafka broker on {self.bootstrap_servers} did not answer a Metadata"
                    f" request listing itself within {timeout_s:.0f}s; {self.log}:\n"
                    f"{tail(self.log)}"
                )
            time.sleep(0.25)

    def restart(self, *, down_s: float = 0.0, kill: bool = False, timeout_s: float = 120.0) -> None:
        """Stop the broker and start the same node again: the same ports, log directory and
        cluster id, so its topics and their records survive (a broker restart as clients see
        it: connections drop, then the same ``bootstrap.servers`` answers again).

        Args:
            down_s: seconds to stay down between the stop and the start.
            kill: SIGKILL instead of a controlled shutdown (SIGTERM).
            timeout_s: how long the start may take (:meth:`wait_ready`).
        Raises:
            KafkaStartError: the broker did not come back.
        """
        if kill:
            self.process.kill()
            self.process.wait(timeout=30)
        else:
            self.stop()
        time.sleep(down_s)
        self.process = _launch_broker(self.artifacts, self.workdir, self.log)
        self.wait_ready(timeout_s)

    def consume(
        self,
        topic: str,
        *,
        max_messages: int,
        timeout_s: float = 30.0,
    ) -> list[tuple[str | None, str | None]]:
        """Read ``topic`` from its beginning with Kafka's own console consumer
        (``ConsoleConsumer`` in a JVM), until ``max_messages`` records or ``timeout_s`` seconds
        without a new one.

        Returns:
            ``(key, value)`` per record in offset order, as the record's bytes decoded as
            UTF-8; ``None`` for a null key or value (a tombstone's value).

        Raises:
            KafkaStartError: the consumer failed (its output is in the message).
        """
        null = "<acidflow:null>"
        sep = "<acidflow:sep>"
        cmd = [
            _java(),
            "-Xmx256m",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp",
            self.artifacts.classpath(),
            CONSOLE_CONSUMER_MAIN,
            "--bootstrap-server",
            self.bootstrap_servers,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(max_messages),
            "--timeout-ms",
            str(int(timeout_s * 1000)),
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            f"key.separator={sep}",
            "--formatter-property",
            f"null.literal={null}",
        ]
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s + 60, check=False
        )
        out = [line for line in done.stdout.splitlines() if sep in line]
        if done.returncode != 0 and not out:
            raise KafkaStartError(
                f"the console consumer on {topic} failed ({done.returncode}):\n{done.stderr}"
            )
        records: list[tuple[str | None, str | None]] = []
        for line in out:
            key, value = line.split(sep, 1)
            records.append((None if key == null else key, None if value == null else value))
        return records


def start_kafka(
    work_dir: Path,
    *,
    port: int | None = None,
    controller_port: int | None = None,
    artifacts: KafkaArtifacts | None = None,
    extra_conf: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
) -> KafkaServer:
    """Format a KRaft log directory and start a single-node Kafka broker+controller on
    127.0.0.1 (module doc: settings, readiness).

    Args:
        work_dir: folder for ``server.properties``, ``log4j2.properties``, ``data/`` (the log
            directory), ``format.log`` and ``kafka.log``; created if needed.
        port: the PLAINTEXT (client) port; default a free one.
        controller_port: the CONTROLLER port; default a free one.
        artifacts: the Kafka artifacts; default :meth:`KafkaArtifacts.locate`.
        extra_conf: more ``server.properties`` entries, applied last.
        timeout_s: how long the format and then the broker each may take.

    Returns:
        The running :class:`KafkaServer` (stop it, or use it as a context manager).

    Raises:
        KafkaArtifactsMissing: no ``make kafka-jars`` artifacts.
        KafkaStartError: the format failed, the JVM exited, or no Metadata answer listed the
            broker within ``timeout_s``; the message names the log and carries its tail.
    """
    arts = artifacts or KafkaArtifacts.locate()
    work_dir = work_dir.resolve()
    data = work_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    controller_port = controller_port or free_port()
    while controller_port == port:
        controller_port = free_port()
    props_file = write_properties(
        work_dir / "server.properties",
        broker_properties(
            port=port, controller_port=controller_port, log_dir=data, extra=extra_conf
        ),
    )
    log4j = work_dir / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    cluster_id = new_cluster_id()

    format_log = work_dir / "format.log"
    with format_log.open("wb") as out:
        try:
            done = subprocess.run(
                [
                    *_java_command(arts, log4j, STORAGE_TOOL_MAIN),
                    "format",
                    "--cluster-id",
                    cluster_id,
                    "--config",
                    str(props_file),
                ],
                cwd=work_dir,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise KafkaStartError(
                f"kafka-storage format did not finish in {timeout_s:.0f}s;"
                f" {format_log}:\n{tail(format_log)}"
            ) from None
    if done.returncode != 0:
        raise KafkaStartError(
            f"kafka-storage format of {data} failed (exit {done.returncode});"
            f" {format_log}:\n{tail(format_log)}"
        )

    log = work_dir / "kafka.log"
    server = KafkaServer(
        "127.0.0.1",
        port,
        controller_port,
        cluster_id,
        work_dir,
        log,
        arts,
        _launch_broker(arts, work_dir, log),
    )
    server.wait_ready(timeout_s)
    return server


def _launch_broker(arts: KafkaArtifacts, work_dir: Path, log: Path) -> "subprocess.Popen[bytes]":
    """Start the broker JVM on ``work_dir``'s ``server.properties`` (a formatted log
    directory), appending its output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                *_java_command(arts, work_dir / "log4j2.properties", BROKER_MAIN),
                str(work_dir / "server.properties"),
            ],
            cwd=work_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


@dataclass
class ConnectServer(JvmServer):
    """A running standalone Kafka Connect worker (from :func:`start_connect`) with its REST
    API; a context manager that stops it on exit."""

    host: str
    rest_port: int
    kafka: KafkaServer
    workdir: Path
    log: Path
    process: "subprocess.Popen[bytes]" = field(repr=False)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<rest port>``: the REST API."""
        return f"http://{self.host}:{self.rest_port}"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        resp = requests.request(method, f"{self.url}{path}", json=body, timeout=60)
        if resp.status_code >= 400:
            raise KafkaStartError(
                f"Kafka Connect {method} {path}: HTTP {resp.status_code} {resp.text}"
            )
        return resp.json() if resp.content else None

    def connector_plugins(self) -> list[str]:
        """The connector classes the worker found (``GET /connector-plugins``)."""
        return [p["class"] for p in self._call("GET", "/connector-plugins")]

    def create_connector(self, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """Add connector ``name`` with ``config`` (``POST /connectors``); returns Connect's
        answer (name, config, tasks).

        Raises:
            KafkaStartError: Connect refused it (its HTTP status and message).
        """
        created: dict[str, Any] = self._call(
            "POST", "/connectors", {"name": name, "config": dict(config)}
        )
        return created

    def delete_connector(self, name: str) -> None:
        """Remove connector ``name`` (``DELETE /connectors/<name>``)."""
        self._call("DELETE", f"/connectors/{name}")

    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/<name>/status``: the connector's and its tasks' states."""
        status: dict[str, Any] = self._call("GET", f"/connectors/{name}/status")
        return status

    def wait_running(self, name: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """Wait until connector ``name`` and at least one task are ``RUNNING``.

        Raises:
            KafkaStartError: a task ``FAILED`` (its trace is in the message), or not running
                within ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                status = self.connector_status(name)
            except KafkaStartError:
                status = {}
            tasks = status.get("tasks", [])
            for task in tasks:
                if task.get("state") == "FAILED":
                    raise KafkaStartError(
                        f"Kafka Connect connector {name} task {task.get('id')} failed:"
                        f" {task.get('trace')}"
                    )
            running = status.get("connector", {}).get("state") == "RUNNING"
            if running and tasks and all(t.get("state") == "RUNNING" for t in tasks):
                return status
            time.sleep(0.25)
        raise KafkaStartError(
            f"Kafka Connect connector {name} not running within {timeout_s:.0f}s: {status};"
            f" {self.log}:\n{tail(self.log)}"
        )


def start_connect(
    kafka: KafkaServer,
    work_dir: Path,
    *,
    rest_port: int | None = None,
    plugin_path: Path | None = None,
    extra_conf: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
) -> ConnectServer:
    """Start a standalone Kafka Connect worker (``ConnectStandalone``) on ``kafka``, with no
    connector yet (module doc: converters, offsets, plugins).

    Args:
        kafka: the broker.
        work_dir: folder for ``worker.properties``, ``log4j2.properties``, ``offsets`` and
            ``connect.log``; created if needed.
        rest_port: the REST API's port; default a free one.
        plugin_path: Connect's ``plugin.path``; default the artifacts' plugins folder (with
            Debezium's PostgreSQL connector).
        extra_conf: more worker properties, applied last.
        timeout_s: how long the worker may take until ``GET /`` answers.

    Returns:
        The running :class:`ConnectServer` (stop it, or use it as a context manager).

    Raises:
        KafkaStartError: the JVM exited, or the REST API did not answer within ``timeout_s``;
            the message names the log and carries its tail.
    """
    work_dir = work_dir.resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    rest_port = rest_port or free_port()
    props_file = write_properties(
        work_dir / "worker.properties",
        worker_properties(
            bootstrap_servers=kafka.bootstrap_servers,
            rest_port=rest_port,
            offsets_file=work_dir / "offsets",
            plugin_path=plugin_path or kafka.artifacts.plugins_dir,
            extra=extra_conf,
        ),
    )
    log4j = work_dir / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    log = work_dir / "connect.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*_java_command(kafka.artifacts, log4j, CONNECT_MAIN), str(props_file)],
            cwd=work_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    connect = ConnectServer("127.0.0.1", rest_port, kafka, work_dir, log, proc)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise KafkaStartError(
                f"Kafka Connect (REST port {rest_port}) exited with {proc.returncode} before"
                f" it was ready; {log}:\n{tail(log)}"
            )
        try:
            if requests.get(f"{connect.url}/", timeout=2).status_code == 200:
                return connect
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            connect.stop()
            raise KafkaStartError(
                f"Kafka Connect's REST API {connect.url} did not answer within"
                f" {timeout_s:.0f}s; {log}:\n{tail(log)}"
            )
        time.sleep(0.25)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m devservers.kafka`` / ``make kafka``: start a broker and a Connect worker,
    print the bootstrap servers and the REST URL, serve in the foreground until Ctrl-C (or
    SIGTERM), then stop both. Returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m devservers.kafka",
        description=(
            f"Run a Kafka {KAFKA_VERSION} broker (KRaft, one node) and Kafka Connect with"
            f" Debezium {DEBEZIUM_VERSION}'s PostgreSQL connector on 127.0.0.1 until Ctrl-C."
        ),
    )
    ap.add_argument("--port", type=int, default=None, help="broker port (default: a free one)")
    ap.add_argument(
        "--connect-port", type=int, default=None, help="Connect REST port (default: a free one)"
    )
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="work folder (default: a temporary one, removed at exit)",
    )
    args = ap.parse_args(argv)
    tmp = None if args.dir else tempfile.mkdtemp(prefix="acidflow-kafka-")
    workdir = args.dir or Path(tmp or ".")
    if args.dir and (workdir / "kafka" / "server.properties").exists():
        print(f"error: {workdir} already holds a broker; pick an empty --dir", file=sys.stderr)
        return 2
    try:
        started = time.monotonic()
        try:
            kafka = start_kafka(workdir / "kafka", port=args.port)
        except (KafkaArtifactsMissing, KafkaStartError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        broker_s = time.monotonic() - started
        try:
            started = time.monotonic()
            try:
                connect = start_connect(kafka, workdir / "connect", rest_port=args.connect_port)
            except KafkaStartError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            try:
                print(
                    f"Kafka {KAFKA_VERSION} broker: bootstrap servers {kafka.bootstrap_servers}"
                    f"  (KRaft cluster {kafka.cluster_id}, started in {broker_s:.1f}s)\n"
                    f"  log: {kafka.log}\n"
                    f"Kafka Connect REST API: {connect.url}  (Debezium {DEBEZIUM_VERSION}"
                    f" PostgreSQL connector; started in {time.monotonic() - started:.1f}s)\n"
                    f"  add a connector: curl -X POST -H 'Content-Type: application/json'"
                    f' {connect.url}/connectors -d \'{{"name": ..., "config": {{...}}}}\'\n'
                    f"  log: {connect.log}   (Ctrl-C stops both)",
                    flush=True,
                )
                return serve_foreground(
                    connect.process,
                    connect.log,
                    "Kafka Connect",
                    companions=[(kafka.process, kafka.log, "the Kafka broker")],
                )
            finally:
                connect.stop()
        finally:
            kafka.stop()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
