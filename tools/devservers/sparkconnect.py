"""A local Spark Connect server for acidflow (``make connect``, the tests' ``spark_connect``
fixture, ``make demo SPARK_MODE=connect``, ``python -m bench.connect``).

It is PySpark's own: ``<pyspark>/bin/spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` (what ``sbin/start-connect-server.sh``
runs, without the daemon wrapper) with the jars PySpark ships (``spark-connect_2.13``), on
127.0.0.1 and a free port (``spark.connect.grpc.binding.address`` / ``.port``), master
``local[2]`` by default, and the settings every acidflow session has
(:func:`acidflow.spark.session_conf`: the one list the classic session builder uses too).

Its Python workers (``mapInArrow``, UDFs, the ``acid`` data source) run
``$PYSPARK_PYTHON`` = this interpreter with the repository's ``jobs/`` first on ``PYTHONPATH``,
so they import the same ``acidflow`` package as the client. Clients connect with
``SPARK_REMOTE=sc://127.0.0.1:<port>`` (``acidflow.spark.get_spark``).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from acidflow.errors import AcidflowError
from acidflow.spark import prepare_environment, session_conf
from devservers.process import REPO_ROOT, JvmServer, free_port, serve_foreground, tail

#: the server's main class (``sbin/start-connect-server.sh``)
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectStartError(AcidflowError, RuntimeError):
    """The Spark Connect server exited or did not answer in time (names its log, with the
    tail)."""


@dataclass
class SparkConnectServer(JvmServer):
    """A running Spark Connect server (from :func:`start_connect_server`); a context manager
    that stops it on exit."""

    host: str
    port: int
    log: Path
    process: "subprocess.Popen[bytes]" = field(repr=False)

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:<port>``: what ``SPARK_REMOTE`` is set to."""
        return f"sc://{self.host}:{self.port}"


def server_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: ``base`` (default ``os.environ``) with ``SPARK_LOCAL_IP``,
    ``JAVA_HOME`` and ``PYSPARK_PYTHON`` filled in (:func:`acidflow.spark.prepare_environment`)
    and ``<repo>/jobs`` first on ``PYTHONPATH`` (its Python workers import ``acidflow``)."""
    prepare_environment()
    env = dict(os.environ if base is None else base)
    for key in ("SPARK_LOCAL_IP", "JAVA_HOME", "PYSPARK_PYTHON"):
        if key in os.environ:
            env.setdefault(key, os.environ[key])
    jobs = str(REPO_ROOT / "jobs")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (jobs, env.get("PYTHONPATH", "")) if p)
    # the server is a JVM started here, not a client: never let it see a Connect URL
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return env


def server_command(port: int, master: str, conf: Mapping[str, str]) -> list[str]:
    """``spark-submit --class SparkConnectServer`` with acidflow's settings
    (:func:`acidflow.spark.session_conf`, then ``conf``) bound to 127.0.0.1:``port``."""
    spark_home = Path(pyspark.__file__).resolve().parent
    settings = session_conf(
        **{
            "spark.ui.enabled": "false",
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            **conf,
        }
    )
    cmd = [str(spark_home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", master]
    cmd += ["--name", "acidflow Spark Connect server"]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd


def start_connect_server(
    workdir: Path,
    *,
    port: int | None = None,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
) -> SparkConnectServer:
    """Start a Spark Connect server on 127.0.0.1 (module doc) and wait until its gRPC port
    accepts connections (the server opens it after its SparkContext is up).

    Args:
        workdir: folder for ``connect.log`` (and the server's working directory).
        port: the gRPC port; default a free one.
        master: its Spark master (``local[2]``).
        conf: more Spark settings, applied last.
        timeout_s: how long it may take to answer.
    Returns:
        The running :class:`SparkConnectServer` (stop it, or use it as a context manager).
    Raises:
        ConnectStartError: the JVM exited, or the port did not accept a connection within
            ``timeout_s``; the message names the log and carries its tail.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = workdir / "connect.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            server_command(port, master, conf or {}),
            cwd=workdir,
            env=server_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = SparkConnectServer("127.0.0.1", port, log, proc)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise ConnectStartError(
                f"Spark Connect server on port {port} exited with {proc.returncode} before"
                f" listening; {log}:\n{tail(log)}"
            )
        try:
            with socket.create_connection((server.host, port), timeout=1.0):
                return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise ConnectStartError(
                f"Spark Connect server did not accept connections on {server.url} within"
                f" {timeout_s:.0f}s; {log}:\n{tail(log)}"
            )
        time.sleep(0.5)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m devservers.sparkconnect`` / ``make connect``: start a Connect server, print
    its URL, serve in the foreground until Ctrl-C (or SIGTERM), then stop it. Returns the exit
    status."""
    ap = argparse.ArgumentParser(
        prog="python -m devservers.sparkconnect",
        description="Run a Spark Connect server with acidflow's settings on 127.0.0.1 until Ctrl-C.",
    )
    ap.add_argument("--port", type=int, default=None, help="gRPC port (default: a free one)")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument(
        "--dir", type=Path, default=None, help="work folder for the log (default: a temporary one)"
    )
    args = ap.parse_args(argv)
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="acidflow-connect-"))
    started = time.monotonic()
    try:
        server = start_connect_server(workdir, port=args.port, master=args.master)
    except ConnectStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"Spark Connect server: {server.url}  (started in {time.monotonic() - started:.1f}s)\n"
        f"  log: {server.log}\n  clients: export SPARK_REMOTE={server.url}   (Ctrl-C stops it)",
        flush=True,
    )
    try:
        return serve_foreground(server.process, server.log, "the Spark Connect server")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
