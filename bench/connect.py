"""acid_cdc's Spark task on a warm Spark Connect server next to the same task through
spark-submit: one small change file (``--events`` GoldenGate events) applied per run, same
machine, same table, the two modes interleaved within each run.

* ``submit``: what ``AcidflowSparkSubmitOperator`` runs: ``spark-submit --master local[2]
  --py-files <acidflow zip> jobs/submit.py cdc-upsert --input <file> ...`` (a new JVM each time);
* ``connect``: ``python jobs/submit.py --remote sc://... cdc-upsert --input <file> ...`` on a
  Connect server started once (``devservers.sparkconnect``) and warmed by a first, unmeasured
  batch. A new Python process each time, so interpreter start and imports are counted: what
  the Airflow operator runs in ``connect`` mode (``acidflow_airflow.connect``).

Each timed step is the wall time of the whole command. The first batch (which creates the
table) runs once per mode unmeasured. Prints both series and the ratio of medians; writes
``bench/results/connect_e<E>.json``.

Run: ``PYTHONPATH=jobs:tools python -m bench.connect --runs 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: ``devservers`` lives in tools/ (the tests get it from pytest's ``pythonpath``)
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

import pyspark  # noqa: E402

from acidflow.jobszip import build_jobs_zip  # noqa: E402
from acidflow.spark import prepare_environment  # noqa: E402
from devservers.sparkconnect import start_connect_server  # noqa: E402

RESULTS = REPO / "bench" / "results"
SUBMIT, CONNECT = "submit", "connect"


def change_file(path: Path, batch: int, events: int) -> Path:
    """A GoldenGate change file of ``events`` inserts/updates on ``SHOP.CUST`` (ids of batch
    ``batch``, positions after every earlier batch's)."""
    lines = []
    for i in range(events):
        key = batch * 1000 + i // 2
        op = "I" if i % 2 == 0 else "U"
        lines.append(
            json.dumps(
                {
                    "table": "SHOP.CUST",
                    "op_type": op,
                    "op_ts": "2024-01-01 00:00:00",
                    "current_ts": "2024-01-01 00:00:00",
                    "pos": f"{batch:06d}{i:06d}",
                    "primary_keys": ["ID"],
                    "before": {"ID": key} if op == "U" else None,
                    "after": {"ID": key, "NAME": f"n{batch}-{i}", "AGE": i},
                }
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def job_args(landing: Path) -> list[str]:
    """``cdc-upsert``'s arguments for one landing folder (auto-created ``shop.cust``)."""
    return [
        "cdc-upsert",
        "--input",
        str(landing),
        "--input-format",
        "goldengate",
        "--target-db",
        "shop",
        "--auto-create",
    ]


def command(mode: str, landing: Path, url: str, zip_path: Path) -> list[str]:
    """The task's command in ``mode`` (module doc)."""
    submit_py = str(REPO / "jobs" / "submit.py")
    if mode == CONNECT:
        return [sys.executable, submit_py, "--remote", url, *job_args(landing)]
    spark_submit = str(Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit")
    return [
        spark_submit,
        "--master",
        "local[2]",
        "--conf",
        "spark.sql.session.timeZone=UTC",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--py-files",
        str(zip_path),
        submit_py,
        *job_args(landing),
    ]


def timed(cmd: list[str], env: dict[str, str], log: Path) -> float:
    """Run ``cmd``; its wall time in seconds.

    Raises:
        RuntimeError: it failed (names the log, with its tail).
    """
    t = time.monotonic()
    with log.open("wb") as out:
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - t
    if rc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{cmd[0]} failed (exit {rc.returncode}); {log}:\n{tail}")
    return seconds


def bench_connect(runs: int, events: int, work: Path) -> dict:
    """Both modes ``runs`` times each (module doc); returns the result document."""
    prepare_environment()
    wh = work / "warehouse"
    wh.mkdir(parents=True)
    env = dict(os.environ)
    env.update(
        ACIDFLOW_WAREHOUSE=str(wh),
        ACIDFLOW_CATALOG_URL=f"sqlite:///{wh / '_acidflow_catalog.db'}",
        PYTHONPATH=str(REPO / "jobs"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("SPARK_REMOTE", None)
    zip_path = build_jobs_zip()
    server = start_connect_server(work / "server")
    series: dict[str, list[float]] = {SUBMIT: [], CONNECT: []}
    try:
        batch = 0
        for run in range(-1, runs):  # run -1: the unmeasured warm-up of each mode
            for mode in (SUBMIT, CONNECT):
                batch += 1
                landing = work / "landing" / f"b{batch}"
                change_file(landing / f"batch-{batch}.json", batch, events)
                cmd = command(mode, landing, server.url, zip_path)
                seconds = timed(cmd, env, work / f"{mode}-{batch}.log")
                print(f"run {run:2d} {mode:8s} {seconds:6.2f}s", flush=True)
                if run >= 0:
                    series[mode].append(seconds)
    finally:
        server.stop()
    med = {m: statistics.median(v) for m, v in series.items()}
    return {
        "events_per_file": events,
        "runs": runs,
        "seconds": series,
        "median_seconds": med,
        "ratio_connect_to_submit": med[CONNECT] / med[SUBMIT],
        "command": f"PYTHONPATH=jobs:tools python -m bench.connect --runs {runs} --events {events}",
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.connect``: run, print, write the JSON; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=20, help="change events per file")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="acidflow-bench-connect-"))
    try:
        doc = bench_connect(args.runs, args.events, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / f"connect_e{args.events}.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    med = doc["median_seconds"]
    print(
        f"median: submit {med[SUBMIT]:.2f}s, connect {med[CONNECT]:.2f}s, "
        f"ratio {doc['ratio_connect_to_submit']:.2f}x -> {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
