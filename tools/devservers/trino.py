"""A Trino server on 127.0.0.1 whose Hive connector uses a Hive metastore.

The server comes from ``make trino-server`` (``tools/trino/pom.xml``: ``io.trino:trino-server``
476's tar.gz from Maven Central, unpacked with the Hive connector's plugin only) in
``.cache/trino/trino-server-<version>/`` at the repository root, unless ``$ACIDFLOW_TRINO_HOME``
names a server folder. Trino 476 runs on Java 24+: the JDK is ``$ACIDFLOW_TRINO_JAVA_HOME``, else
``/usr/lib/jvm/temurin-25-jdk-amd64`` (the metastore and Spark stay on Java 17).

:func:`start_trino` writes a Trino ``etc/`` folder and runs ``bin/launcher run`` (Airlift's
launcher: it execs the JVM in the foreground, so the process we start is the server):

- ``node.properties``: one node (``node.environment``, ``node.id``, ``node.data-dir``,
  ``node.internal-address=127.0.0.1``);
- ``jvm.config``: G1, ``-Xmx`` (default 1G: enough for the tests' small tables, measured in
  ``docs/trino.md``), exit on OOM;
- ``config.properties``: coordinator and worker in one process
  (``coordinator=true``, ``node-scheduler.include-coordinator=true``), HTTP on a free port,
  ``discovery.uri`` pointing at itself, query memory from Trino's heap-relative defaults;
- ``catalog/hive.properties``: ``connector.name=hive``, ``hive.metastore.uri=thrift://...``,
  Hadoop's local file system for ``file:`` locations (``fs.hadoop.enabled=true``; Trino's
  native local one names listed files ``local://...`` while the metastore says ``file:...``,
  and Trino's ACID DELETE then fails: ``docs/trino.md``), and writes to external tables allowed
  (``hive.non-managed-table-writes-enabled=true``).

It waits until ``GET /v1/info`` says ``"starting": false`` (catalogs loaded), then until
``system.runtime.nodes`` lists the node as active and the schedulers' 5 s node-map memo has
expired (before that a write fails with "nodes is empty"), and stops the JVM
(SIGTERM, then SIGKILL) on exit. :meth:`TrinoServer.execute` runs one SQL statement through
Trino's client REST protocol (``POST /v1/statement``, then ``nextUri`` until done) with
``requests``: no Trino client library is needed.

``python -m devservers.trino --metastore thrift://127.0.0.1:9083`` (with ``tools/`` on
``sys.path``) runs one in the foreground until Ctrl-C and prints its HTTP URL (``make hms``
starts a metastore). A development tool: not part of the shipped ``acidflow`` package.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests

from devservers.process import JvmServer, cache_dir, free_port, serve_foreground, tail

TRINO_VERSION = "476"
TRINO_HOME_ENV = "ACIDFLOW_TRINO_HOME"
TRINO_JAVA_HOME_ENV = "ACIDFLOW_TRINO_JAVA_HOME"
#: The JDK Trino 476 runs on when ``$ACIDFLOW_TRINO_JAVA_HOME`` is unset (Trino needs Java 24+).
DEFAULT_TRINO_JAVA_HOME = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
#: The Trino catalog name the metastore is mounted as (``SELECT * FROM hive.db.t``).
HIVE_CATALOG = "hive"
#: How long Trino's node schedulers keep a memoized active-node map (UniformNodeSelectorFactory,
#: 5 s), plus a margin: :func:`start_trino` waits this long after the node turned active.
NODE_MAP_MEMO_S = 5.5


class TrinoMissing(RuntimeError):
    """The ``make trino-server`` folder or a Java 24+ JDK is absent (names what and the fix)."""


class TrinoStartError(RuntimeError):
    """The server exited or did not report started in time; names the log and carries its
    tail."""


class TrinoQueryError(RuntimeError):
    """Trino failed a statement: carries Trino's error name and message and the SQL."""

    def __init__(self, sql: str, error: Mapping[str, Any]) -> None:
        self.error = dict(error)
        self.error_name = str(error.get("errorName", "?"))
        self.trino_message = str(error.get("message", ""))
        super().__init__(f"Trino {self.error_name}: {self.trino_message} -- in: {sql}")


def default_trino_home() -> Path:
    """``$ACIDFLOW_TRINO_HOME``, else ``<repository root>/.cache/trino/trino-server-476``."""
    env = os.environ.get(TRINO_HOME_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return cache_dir() / "trino" / f"trino-server-{TRINO_VERSION}"


def trino_java_home() -> Path:
    """The JDK for Trino: ``$ACIDFLOW_TRINO_JAVA_HOME``, else :data:`DEFAULT_TRINO_JAVA_HOME`.

    Raises:
        TrinoMissing: that folder has no ``bin/java`` (names it).
    """
    home = Path(os.environ.get(TRINO_JAVA_HOME_ENV) or DEFAULT_TRINO_JAVA_HOME)
    if not (home / "bin" / "java").exists():
        raise TrinoMissing(
            f"no Java for Trino {TRINO_VERSION} at {home} (it needs Java 24+):"
            f" install one and/or set ${TRINO_JAVA_HOME_ENV}"
        )
    return home


def locate_trino(home: Path | None = None) -> Path:
    """The Trino server folder (default :func:`default_trino_home`), checked for
    ``bin/launcher`` and the Hive connector's plugin.

    Raises:
        TrinoMissing: naming the folder, what is missing, and ``make trino-server``.
    """
    found = (home or default_trino_home()).resolve()
    for need in (found / "bin" / "launcher", found / "plugin" / "hive"):
        if not need.exists():
            raise TrinoMissing(
                f"Trino server not found in {found} ({need} is missing): run"
                f" 'make trino-server' (Maven, tools/trino/pom.xml) or set"
                f" ${TRINO_HOME_ENV}"
            )
    return found


def _properties(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def server_properties(port: int) -> dict[str, str]:
    """``config.properties`` of a one-process coordinator + worker on 127.0.0.1:``port``.
    Query memory is left to Trino's defaults, which follow the heap
    (``query.max-memory-per-node`` = 30% of it, ``memory.heap-headroom-per-node`` 30%)."""
    return {
        "coordinator": "true",
        "node-scheduler.include-coordinator": "true",
        "http-server.http.port": str(port),
        "discovery.uri": f"http://127.0.0.1:{port}",
    }


def hive_catalog_properties(
    metastore_url: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``catalog/hive.properties`` for the metastore at ``metastore_url`` (``thrift://h:p``):
    the Hive connector with Trino's native local file system for ``file:`` locations, then
    ``extra`` on top.

    Raises:
        ValueError: ``metastore_url`` is not ``thrift://host:port`` (names it).
    """
    parsed = urlparse(metastore_url)
    if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
        raise ValueError(f"not a Hive metastore URL (thrift://host:port): {metastore_url!r}")
    props = {
        "connector.name": "hive",
        "hive.metastore.uri": metastore_url,
        "fs.hadoop.enabled": "true",
        "hive.non-managed-table-writes-enabled": "true",
    }
    props.update(extra or {})
    return props


def jvm_options(heap: str) -> list[str]:
    """``jvm.config`` lines: ``-Xmx<heap>``, G1, exit on OOM (no heap dump), and what Trino's docs ask of a
    server JVM (``-Djdk.attach.allowAttachSelf=true``)."""
    return [
        "-server",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:+EnableDynamicAgentLoading",
        "-Djdk.attach.allowAttachSelf=true",
        "-Dfile.encoding=UTF-8",
    ]


def rss_mib(pid: int) -> float | None:
    """Resident memory of process ``pid`` in MiB (``VmRSS`` of ``/proc/<pid>/status``), or None
    where that file is absent."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


@dataclass
class TrinoServer(JvmServer):
    """A running Trino server (from :func:`start_trino`); a context manager that stops it."""

    host: str
    port: int
    metastore_url: str
    workdir: Path
    log: Path
    process: "subprocess.Popen[bytes]" = field(repr=False)
    started_in_s: float = 0.0
    user: str = "acidflow"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the coordinator's HTTP endpoint."""
        return f"http://{self.host}:{self.port}"

    def rss_mib(self) -> float | None:
        """The server JVM's resident memory in MiB (None where /proc is absent)."""
        return rss_mib(self.process.pid)

    def execute(
        self,
        sql: str,
        *,
        catalog: str = HIVE_CATALOG,
        schema: str | None = None,
        timeout_s: float = 300.0,
    ) -> list[list[Any]]:
        """Run one statement and return its rows (JSON values as Trino's REST protocol gives
        them: bigint/integer/boolean as Python values, decimal/date/timestamp as strings).
        DDL and DML return Trino's answer row (e.g. ``[[rows inserted]]``) or no row.

        Raises:
            TrinoQueryError: the query failed (Trino's error name and message, the SQL).
            TimeoutError: not finished within ``timeout_s`` seconds.
            requests.RequestException: the server does not answer.
        """
        headers = {"X-Trino-User": self.user, "X-Trino-Catalog": catalog}
        if schema:
            headers["X-Trino-Schema"] = schema
        deadline = time.monotonic() + timeout_s
        resp = requests.post(
            f"{self.url}/v1/statement", data=sql.encode(), headers=headers, timeout=60
        )
        resp.raise_for_status()
        doc = resp.json()
        rows: list[list[Any]] = []
        while True:
            if doc.get("error"):
                raise TrinoQueryError(sql, doc["error"])
            rows.extend(doc.get("data") or [])
            next_uri = doc.get("nextUri")
            if not next_uri:
                return rows
            if time.monotonic() > deadline:
                requests.delete(next_uri, headers=headers, timeout=10)
                raise TimeoutError(f"Trino query not finished in {timeout_s:.0f}s: {sql}")
            resp = requests.get(next_uri, headers=headers, timeout=60)
            if resp.status_code == 503:  # Trino's "busy, retry"
                time.sleep(0.05)
                continue
            resp.raise_for_status()
            doc = resp.json()


def write_etc(
    etc: Path,
    *,
    port: int,
    metastore_url: str,
    data_dir: Path,
    heap: str,
    catalog_extra: Mapping[str, str] | None = None,
) -> Path:
    """Write Trino's ``etc/`` folder (module doc: the four files) at ``etc``; returns it."""
    (etc / "catalog").mkdir(parents=True, exist_ok=True)
    (etc / "node.properties").write_text(
        _properties(
            {
                "node.environment": "acidflow",
                "node.id": str(uuid.uuid4()),
                "node.data-dir": str(data_dir),
                "node.internal-address": "127.0.0.1",
            }
        )
    )
    (etc / "jvm.config").write_text("\n".join(jvm_options(heap)) + "\n")
    (etc / "config.properties").write_text(_properties(server_properties(port)))
    (etc / "log.properties").write_text("io.trino=INFO\n")
    (etc / "catalog" / f"{HIVE_CATALOG}.properties").write_text(
        _properties(hive_catalog_properties(metastore_url, catalog_extra))
    )
    return etc


def _started(url: str) -> bool:
    try:
        resp = requests.get(f"{url}/v1/info", timeout=2)
        return resp.ok and resp.json().get("starting") is False
    except (requests.RequestException, ValueError):
        return False


def _node_active(server: TrinoServer) -> bool:
    """True once the node manager lists this node as an active worker (right after ``/v1/info``
    says started, a query can still fail with "nodes is empty" until discovery's first
    refresh)."""
    try:
        rows = server.execute(
            "SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'",
            catalog="system",
            timeout_s=10,
        )
    except (TrinoQueryError, TimeoutError, requests.RequestException):
        return False
    return bool(rows) and int(rows[0][0]) >= 1


def start_trino(
    workdir: Path,
    metastore_url: str,
    *,
    port: int | None = None,
    heap: str = "1G",
    trino_home: Path | None = None,
    java_home: Path | None = None,
    catalog_extra: Mapping[str, str] | None = None,
    timeout_s: float = 240.0,
) -> TrinoServer:
    """Start a Trino 476 coordinator+worker on 127.0.0.1 with a ``hive`` catalog on the
    metastore at ``metastore_url`` (module doc: configuration, Java).

    Args:
        workdir: folder for ``etc/``, ``data/`` and ``server.log``; created if needed.
        metastore_url: ``thrift://host:port`` of a Hive 3.1 metastore.
        port: the HTTP port; default a free one.
        heap: the JVM's ``-Xmx`` (``1G`` default; Trino reserves 30% of it as headroom).
        trino_home: the server folder; default :func:`locate_trino`'s.
        java_home: a Java 24+ JDK; default :func:`trino_java_home`.
        catalog_extra: more ``hive.properties`` keys, applied last.
        timeout_s: how long the server may take to report started.

    Returns:
        The running :class:`TrinoServer` (stop it, or use it as a context manager).

    Raises:
        TrinoMissing: no server folder or no Java 24+.
        ValueError: ``metastore_url`` is not a thrift URL.
        TrinoStartError: the JVM exited, or ``/v1/info`` did not say started within
            ``timeout_s``; names the log and carries its tail.
    """
    home = locate_trino(trino_home)
    jdk = java_home or trino_java_home()
    workdir = workdir.resolve()
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    etc = write_etc(
        workdir / "etc",
        port=port,
        metastore_url=metastore_url,
        data_dir=data_dir,
        heap=heap,
        catalog_extra=catalog_extra,
    )
    env = dict(
        os.environ,
        JAVA_HOME=str(jdk),
        PATH=f"{jdk / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    cmd = [
        str(home / "bin" / "launcher"),
        "run",
        f"--etc-dir={etc}",
        f"--data-dir={data_dir}",
        f"--jvm-dir={jdk}",
    ]
    log = workdir / "server.log"
    began = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = TrinoServer("127.0.0.1", port, metastore_url, workdir, log, proc)
    deadline = began + timeout_s
    while not (_started(server.url) and _node_active(server)):
        if proc.poll() is not None:
            raise TrinoStartError(
                f"Trino exited with {proc.returncode} before it started; {log}:\n{tail(log)}"
            )
        if time.monotonic() > deadline:
            server.stop()
            raise TrinoStartError(
                f"Trino on {server.url} did not report started within"
                f" {timeout_s:.0f}s; {log}:\n{tail(log)}"
            )
        time.sleep(0.5)
    # The node schedulers memoize the active-node map for 5 s: one computed before this node
    # was active ("nodes is empty" at NodePartitioningManager.createArbitraryBucketToNode, seen
    # on INSERT) expires within 5 s of the node turning active.
    time.sleep(NODE_MAP_MEMO_S)
    server.started_in_s = time.monotonic() - began
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m devservers.trino --metastore thrift://...``: start Trino on that metastore,
    print its URL, serve in the foreground until Ctrl-C (or SIGTERM). Returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m devservers.trino",
        description=(
            f"Run Trino {TRINO_VERSION} with a 'hive' catalog on a Hive metastore until Ctrl-C."
        ),
    )
    ap.add_argument("--metastore", required=True, metavar="URL", help="thrift://host:port")
    ap.add_argument("--port", type=int, default=None, help="HTTP port (default: a free one)")
    ap.add_argument("--heap", default="1G", help="JVM -Xmx (default 1G)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acidflow-trino-") as tmp:
        try:
            server = start_trino(Path(tmp), args.metastore, port=args.port, heap=args.heap)
        except (TrinoMissing, TrinoStartError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1

        print(
            f"Trino {TRINO_VERSION}: {server.url}  (started in {server.started_in_s:.1f}s)\n"
            f"  catalog '{HIVE_CATALOG}' on {args.metastore}\n  log: {server.log}\n"
            "  (Ctrl-C stops it)",
            flush=True,
        )
        try:
            return serve_foreground(server.process, server.log, "Trino")
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
