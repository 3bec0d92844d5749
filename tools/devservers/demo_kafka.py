"""``make demo-kafka``: start a private PostgreSQL 15 (``wal_level=logical``), a Kafka broker and
a Kafka Connect worker with Debezium's PostgreSQL connector, a fresh warehouse and catalog, all
in one new temporary folder; run :func:`acidflow.demo.kafka.run_kafka_demo` on them; print its
summary; stop everything and remove the folder (also on Ctrl-C, SIGTERM or an error). Exits 1
when a table does not reconcile exactly with PostgreSQL or a change record was left unapplied.

    python -m devservers.demo_kafka [--workload-seconds 60] [--stream-seconds 45] [--rate 40]

A development tool (``tools/`` on ``sys.path``): the servers are not part of the shipped
package; the demo itself (stream, DAG run, reconciliation) is ``acidflow.demo.kafka``.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from types import FrameType

from acidflow.catalog import SqlCatalog
from acidflow.demo.kafka import KafkaDemoSettings, run_kafka_demo
from acidflow.spark import get_spark
from devservers.kafka import KafkaArtifacts, start_connect, start_kafka
from devservers.postgres import LOGICAL_SETTINGS, PostgresCluster


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo (module docstring); returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m devservers.demo_kafka", description=__doc__)
    d = KafkaDemoSettings()
    p.add_argument("--workload-seconds", type=float, default=d.workload_s)
    p.add_argument("--stream-seconds", type=float, default=d.stream_s)
    p.add_argument("--rate", type=int, default=d.rate, help="pgbench transactions/s")
    p.add_argument("--accounts", type=int, default=d.accounts, help="pgbench_accounts rows")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = p.parse_args(argv)
    settings = KafkaDemoSettings(
        workload_s=a.workload_seconds, stream_s=a.stream_seconds, rate=a.rate, accounts=a.accounts
    )
    logging.basicConfig(format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stdout)
    logging.getLogger("acidflow.demo.kafka").setLevel(logging.INFO)
    signal.signal(signal.SIGTERM, _terminate)
    t0 = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="acidflow-demo-kafka-"))
    try:
        with ExitStack() as stack:
            pg = stack.enter_context(PostgresCluster(settings=LOGICAL_SETTINGS))
            print(f"PostgreSQL 15: {pg.url()}", flush=True)
            kafka = start_kafka(root / "kafka", artifacts=KafkaArtifacts.locate())
            stack.callback(kafka.stop)
            connect = start_connect(kafka, root / "connect")
            stack.callback(connect.stop)
            print(f"Kafka: {kafka.bootstrap_servers}; Kafka Connect: {connect.url}", flush=True)
            warehouse = root / "warehouse"
            warehouse.mkdir()
            catalog = SqlCatalog(
                f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse)
            )
            stack.callback(catalog.close)
            spark = get_spark(
                "acidflow-demo-kafka", master="local[2]", **{"spark.ui.enabled": "false"}
            )
            stack.callback(spark.stop)
            print(
                f"warehouse {warehouse}; pgbench for {settings.workload_s:.0f} s at "
                f"{settings.rate} tx/s, the stream for {settings.stream_s:.0f} s, then acid_cdc",
                flush=True,
            )
            summary = run_kafka_demo(
                spark,
                catalog,
                pg=pg,
                bootstrap_servers=kafka.bootstrap_servers,
                connect_worker=connect,
                work_dir=root / "work",
                settings=settings,
            )
            print(*summary.lines(), sep="\n", flush=True)
    except KeyboardInterrupt:
        print("interrupted: servers stopped", file=sys.stderr)
        return 130
    finally:
        if a.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"make demo-kafka: {time.monotonic() - t0:.0f} s wall time", flush=True)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
