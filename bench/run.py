"""The benchmark driver: every tool on the same generated files, each step in its own process.

For each size ``(N, K)``:

1. generate the data (:mod:`bench.generate`; cached under ``WORK/data/n<N>_k<K>_b<B>_s<seed>``);
2. ``prepare`` every tool once (initial table of N rows) and keep that state as pristine;
3. ``runs`` times, each tool's upsert of batch 1 from the pristine state (tools interleaved
   within a run, so that a noisy minute hits all of them);
4. acidflow applies batches 1..B; after batch 1 and after batch B: ``runs`` snapshot reads
   (``read_table``, and the Spark data source ``spark.read.format("acid")``), each next to a
   plain Spark ORC full scan of the same rows;
5. ``runs`` times, from the state after batch B: acidflow major compaction next to a plain
   Spark ORC rewrite of the same rows.

Apart from the sizes (``--load N ...``): ``runs`` times, acidflow's initial load of the N base
rows into a fresh table next to a plain Spark ORC write of the same rows
(``bench/results/load_n<N>.json``); (``--s3 N:K ...``) acidflow's upsert of batch 1 and a
snapshot read with the warehouse on S3 (a moto server on loopback) next to local disk
(``bench/results/s3_n<N>_k<K>.json``); (``--kafka E ...``) the Kafka phase, :mod:`bench.kafka`:
the same E Debezium change events through the file path and the Kafka path, and the streaming
latency at a steady offered load (``bench/results/kafka_e<E>.json``); (``--spark-native N ...``)
the warm-session reads of :mod:`bench.datasource` (``read_table``, its engine executor and
``format("acid")`` next to a plain Spark ORC scan of the same rows, in one SparkSession) on a
table of N rows after ``--batches`` updates of 1 % (``bench/results/spark_native_n<N>.json``).

Results are checked against the expected table in the first run of each step and after
acidflow's batches 1 and B (the later runs repeat the same input with the same tool).

Each step runs as ``python -m bench.tools`` in a new process (``setsid``); the driver measures
its wall time and its peak memory (largest sum of RSS over the process and all its children,
sampled every 50 ms with psutil: the JVM and Python workers included). Results go to
``bench/results/bench_n<N>_k<K>.json``; ``bench/report.py`` turns them into ``RESULTS.md``.

Run: ``make bench`` or ``python -m bench.run --rows 1000000 --events 10000 --runs 3``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from acidflow.spark import driver_memory
from bench import tools as bench_tools
from bench.generate import generate
from bench.kafka import bench_kafka

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
UPSERT_TOOLS = ("acidflow", "delta", "duckdb", "spark-cow")


class StepFailed(RuntimeError):
    """A benchmark step exited non-zero or printed no result (message has its output tail)."""


def tree_rss(root: psutil.Process) -> int:
    """Summed RSS in bytes of ``root`` and its descendants (processes that ended meanwhile
    count 0)."""
    total = 0
    try:
        for p in [root, *root.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


def peak_rss_sampler(proc: subprocess.Popen, out: dict, interval: float = 0.05) -> threading.Thread:
    """Thread that records ``out["peak_rss_mb"]``: max over time of the summed RSS of ``proc``
    and its descendants."""

    def sample():
        peak = 0
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while proc.poll() is None:
            total = tree_rss(root)
            peak = max(peak, total)
            out["peak_rss_mb"] = round(peak / 2**20, 1)
            time.sleep(interval)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    return t


#: run steps in the driver's own process (``BENCH_IN_PROCESS=1``): the smoke tests check the
#: harness's correctness on the test session's SparkSession without a JVM start per step;
#: ``make bench`` always measures each step in a new process
IN_PROCESS = os.environ.get("BENCH_IN_PROCESS") == "1"


def run_step(
    tool: str,
    step: str,
    data: Path,
    work: Path,
    batch: int = 1,
    log: Path | None = None,
    check: bool = True,
) -> dict:
    """Run one step in a new process (in this one when :data:`IN_PROCESS`, except the
    steps of ``bench.tools.OWN_PROCESS``); returns its JSON result plus ``wall`` (s) and
    ``peak_rss_mb`` (in-process: this process's resident set after the step).

    Raises:
        StepFailed: non-zero exit or no ``BENCH-RESULT`` line; in-process, any error.
    """
    if IN_PROCESS and (tool, step) not in bench_tools.OWN_PROCESS:
        t0 = time.perf_counter()
        try:
            result = bench_tools.run_step_here(tool, step, data, work, batch, check)
        except Exception as exc:  # noqa: BLE001 - reported as the subprocess path reports
            raise StepFailed(f"{tool} {step} (batch {batch}) failed in-process: {exc!r}") from exc
        result = json.loads(json.dumps(result, default=str))
        result.update(
            wall=round(time.perf_counter() - t0, 3),
            peak_rss_mb=round(psutil.Process().memory_info().rss / 2**20),
        )
        if log is not None:
            with log.open("a") as f:
                f.write(f"$ (in-process) {tool} {step} --batch {batch}\n{result}\n")
        return result
    cmd = [
        sys.executable,
        "-m",
        "bench.tools",
        tool,
        step,
        "--data",
        str(data),
        "--work",
        str(work),
        "--batch",
        str(batch),
    ] + ([] if check else ["--no-check"])
    # the caller's PYTHONPATH stays after the repository (a worktree's jobs/ must win over
    # the virtualenv's editable install of another checkout)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="ignore")
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
    output, _ = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.join(timeout=1)
    if log is not None:
        with log.open("a") as f:
            f.write(f"$ {' '.join(cmd)}\n{output}\n")
    lines = [ln for ln in output.splitlines() if ln.startswith("BENCH-RESULT ")]
    if proc.returncode != 0 or not lines:
        raise StepFailed(
            f"{tool} {step} (batch {batch}) exited {proc.returncode}:\n" + output[-4000:]
        )
    result = json.loads(lines[-1][len("BENCH-RESULT ") :])
    result.update(wall=round(wall, 3), peak_rss_mb=mem.get("peak_rss_mb"))
    return result


def snapshot_dir(src: Path, dst: Path) -> None:
    """``dst`` := a copy of ``src`` (hard links for data files, real copies of SQLite
    databases, which are written in place)."""
    if dst.exists():
        shutil.rmtree(dst)

    def copy(s, d):
        if s.endswith((".db", ".db-journal", ".db-wal")):
            return shutil.copy2(s, d)
        return os.link(s, d)

    shutil.copytree(src, dst, copy_function=copy)


def versions() -> dict[str, str]:
    """Versions of the tools compared."""
    from importlib.metadata import version

    out = {p: version(p) for p in ("pyspark", "deltalake", "duckdb", "pyarrow", "pyorc")}
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    out["java"] = java.splitlines()[0] if java else "?"
    out["python"] = platform.python_version()
    return out


def machine() -> dict:
    """CPU count, memory and CPU model of this machine."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu_model": model,
        "os": platform.platform(),
        "driver_memory": driver_memory(),
    }


def bench_size(
    rows: int,
    events: int,
    *,
    runs: int,
    batches: int,
    seed: int,
    work: Path,
    tools: tuple[str, ...] = UPSERT_TOOLS,
    log=None,
    upsert_only: bool = False,
    checkpoint: Path | None = None,
    extra: dict | None = None,
) -> dict:
    """Run every phase of one size (only the upserts of batch 1 with ``upsert_only``);
    returns the result document (see module docstring). The prepared initial tables depend
    only on N and the seed, so they are kept under ``WORK/n<N>_s<seed>/<tool>.pristine`` and
    reused by the other K of the same N (and by later runs: delete WORK to start afresh).
    ``checkpoint``: a JSON file rewritten before every step with the document so far plus
    ``extra`` (``"partial": true``), so a stopped run keeps what it measured."""
    log = log or (lambda msg: print(msg, flush=True))
    data = work / "data" / f"n{rows}_k{events}_b{batches}_s{seed}"
    t0 = time.perf_counter()
    if not (data / "meta.json").exists():
        generate(data, rows, events, batches, seed)
    meta = json.loads((data / "meta.json").read_text())
    log(f"[{rows:,} rows, {events:,} events] data ready ({time.perf_counter() - t0:.0f} s)")
    # the tools' tables live under one directory per N (the acidflow catalog records absolute
    # locations, so a table is always used where it was prepared)
    root = work / f"n{rows}_s{seed}"
    root.mkdir(parents=True, exist_ok=True)
    steplog = root / f"steps_k{events}.log"
    doc = {
        "rows": rows,
        "events": events,
        "batches": batches,
        "seed": seed,
        "runs": runs,
        "meta": meta,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "prepare": {},
        "upsert": {t: [] for t in tools},
        "acidflow_batches": [],
        "read": {},
        "compact": {"acidflow": [], "spark-orc": []},
    }

    def step(tool, name, batch=1, workdir=None, check=True):
        if checkpoint is not None:  # everything measured so far
            checkpoint.write_text(
                json.dumps({**doc, **(extra or {}), "partial": True}, indent=1, default=str)
            )
        r = run_step(tool, name, data, workdir or root / tool, batch, steplog, check)
        check = r.get("check", {})
        log(
            f"  {tool:9s} {name:8s} b{batch:<3d} wall {r['wall']:7.2f} s  work "
            f"{r.get('work', 0):7.2f} s  jvm {r.get('jvm_start', 0):5.1f} s  peak "
            f"{r['peak_rss_mb'] or 0:7.0f} MB  {'' if not check else 'unchecked' if check.get('skipped') else 'correct' if check.get('correct') else 'WRONG ' + json.dumps(check)}"
        )
        return r

    for tool in tools:
        kept = root / f"{tool}.pristine"
        if (kept / ".prepared.json").exists():
            doc["prepare"][tool] = json.loads((kept / ".prepared.json").read_text())
            continue
        if (root / tool).exists():
            shutil.rmtree(root / tool)
        doc["prepare"][tool] = step(tool, "prepare")
        snapshot_dir(root / tool, kept)
        (kept / ".prepared.json").write_text(json.dumps(doc["prepare"][tool]))
    with_datasource = importlib.util.find_spec("acidflow.datasource") is not None
    if not upsert_only:
        doc["prepare"]["spark-orc"] = step("spark-orc", "prepare")
    for i in range(runs):
        for tool in tools:
            snapshot_dir(root / f"{tool}.pristine", root / tool)
            doc["upsert"][tool].append(step(tool, "upsert", check=i == 0))
    if upsert_only:
        doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc["seconds"] = round(time.perf_counter() - t0, 1)
        return doc
    # acidflow: batches 1..B, reads after 1 and after B next to plain ORC scans
    snapshot_dir(root / "acidflow.pristine", root / "acidflow")
    for b in range(1, batches + 1):
        doc["acidflow_batches"].append(step("acidflow", "upsert", b))
        if b in (1, batches):
            reads = doc["read"][str(b)] = {"acidflow": [], "spark-orc": []}
            if with_datasource:
                reads["acidflow-ds"] = []
            for i in range(runs):
                reads["acidflow"].append(step("acidflow", "read", b, check=i == 0))
                if with_datasource:
                    reads["acidflow-ds"].append(step("acidflow", "read-ds", b, check=i == 0))
                reads["spark-orc"].append(step("spark-orc", "scan", b))
    snapshot_dir(root / "acidflow", root / "acidflow.after")
    for i in range(runs):
        snapshot_dir(root / "acidflow.after", root / "acidflow")
        doc["compact"]["acidflow"].append(step("acidflow", "compact", batches, check=i == 0))
        doc["compact"]["spark-orc"].append(step("spark-orc", "rewrite", batches, check=i == 0))
    doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    return doc


def bench_load(rows: int, *, runs: int, seed: int, work: Path, log=None) -> dict:
    """``runs`` times: acidflow's initial load of the N base rows (``acidflow load``: INSERT
    OVERWRITE into a fresh table bucketed by ``id``) next to a plain Spark ORC write of the
    same rows and columns (``spark-orc load``); both checked against the base in the first
    run. Returns ``{"rows", "runs", "acidflow": [...], "spark-orc": [...]}``."""
    log = log or (lambda msg: print(msg, flush=True))
    data = work / "data" / f"n{rows}_k1000_b1_s{seed}"  # only base.parquet is used
    if not (data / "meta.json").exists():
        generate(data, rows, 1000, 1, seed)
    root = work / f"load_n{rows}_s{seed}"
    root.mkdir(parents=True, exist_ok=True)
    doc: dict = {
        "rows": rows,
        "runs": runs,
        "seed": seed,
        "acidflow": [],
        "spark-orc": [],
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    t0 = time.perf_counter()
    for i in range(runs):
        for tool in ("acidflow", "spark-orc"):
            if (root / tool).exists():
                shutil.rmtree(root / tool)
            r = run_step(tool, "load", data, root / tool, 0, root / "steps.log", check=i == 0)
            doc[tool].append(r)
            log(
                f"  {tool:9s} load     wall {r['wall']:7.2f} s  work {r['work']:7.2f} s  peak "
                f"{r['peak_rss_mb'] or 0:7.0f} MB  {r.get('check', {})}"
            )
    for tool in ("acidflow", "spark-orc"):
        shutil.rmtree(root / tool, ignore_errors=True)
    doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    return doc


def _s3_copy_prefix(client, bucket: str, src: str, dst: str) -> int:
    """Server-side copy of every object under ``src/`` to ``dst/`` (after deleting what is
    under ``dst/``) in one bucket; returns the number of objects copied."""

    def keys(prefix):
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix + "/"
        ):
            yield from (o["Key"] for o in page.get("Contents", []))

    old = list(keys(dst))
    for i in range(0, len(old), 1000):
        client.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": k} for k in old[i : i + 1000]]}
        )
    n = 0
    for key in keys(src):
        client.copy_object(
            Bucket=bucket, Key=dst + key[len(src) :], CopySource={"Bucket": bucket, "Key": key}
        )
        n += 1
    return n


def bench_s3(rows: int, events: int, *, runs: int, seed: int, work: Path, log=None) -> dict:
    """acidflow with its warehouse on S3 next to local disk: a moto server on 127.0.0.1
    (``tests.support.s3.start_s3_server``), the same data, each tool's table prepared once and
    restored before every run (local: hard-link copy; S3: server-side copy of the prefix), then
    ``runs`` times the upsert of batch 1 and a snapshot read, local and S3 interleaved.
    Returns ``{"rows", "events", "runs", "local": {"upsert": [...], "read": [...]},
    "s3": {...}}``."""
    from tests.support.s3 import start_s3_server  # the same moto server the tests use

    log = log or (lambda msg: print(msg, flush=True))
    data = work / "data" / f"n{rows}_k{events}_b1_s{seed}"
    if not (data / "meta.json").exists():
        generate(data, rows, events, 1, seed)
    root = work / f"s3_n{rows}_k{events}_s{seed}"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    server = start_s3_server()
    old_env = {k: os.environ.get(k) for k in [*server.env, "BENCH_S3_WAREHOUSE"]}
    try:
        bucket = server.make_bucket("acidflow-bench")
        os.environ.update(server.env, BENCH_S3_WAREHOUSE=f"s3://{bucket}/wh")
        client = server.client()
        doc: dict = {
            "rows": rows,
            "events": events,
            "runs": runs,
            "seed": seed,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "local": {"upsert": [], "read": []},
            "s3": {"upsert": [], "read": []},
        }
        t0 = time.perf_counter()
        steplog = root / "steps.log"
        tools = {"local": "acidflow", "s3": "acidflow-s3"}
        for where, tool in tools.items():
            run_step(tool, "prepare", data, root / where, 0, steplog)
            snapshot_dir(root / where, root / f"{where}.pristine")
        _s3_copy_prefix(client, bucket, "wh", "wh-pristine")
        for i in range(runs):
            for where, tool in tools.items():
                snapshot_dir(root / f"{where}.pristine", root / where)
                if where == "s3":
                    _s3_copy_prefix(client, bucket, "wh-pristine", "wh")
                for step in ("upsert", "read"):
                    r = run_step(tool, step, data, root / where, 1, steplog, check=i == 0)
                    doc[where][step].append(r)
                    log(
                        f"  {tool:11s} {step:6s} wall {r['wall']:7.2f} s  work "
                        f"{r['work']:7.2f} s  {r.get('check', {}).get('correct')}"
                    )
        doc["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc["seconds"] = round(time.perf_counter() - t0, 1)
        return doc
    finally:
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def doc_from_logs(
    steps_log: Path, console_log: Path, rows: int, events: int, batches: int, runs: int
) -> dict:
    """Rebuild the result document of a size whose run was stopped before it finished, from
    its step log (each step's command and ``BENCH-RESULT`` line) and the driver's console log
    (wall time and peak memory of each step, same order). The document says ``partial``."""
    import re

    results, current = [], None
    for line in steps_log.read_text().splitlines():
        if line.startswith("$ "):
            parts = line.split()
            current = {
                "tool": parts[4],
                "step": parts[5],
                "batch": int(parts[parts.index("--batch") + 1]),
            }
        elif line.startswith("BENCH-RESULT ") and current is not None:
            results.append({**current, **json.loads(line[len("BENCH-RESULT ") :])})
            current = None
    pattern = re.compile(r"^\s+(\S+)\s+(\S+)\s+b(\d+)\s+wall\s+([\d.]+) s .*peak\s+([\d.]+) MB")
    walls = [m.groups() for m in map(pattern.match, console_log.read_text().splitlines()) if m]
    walls = [w for w in walls if w[0] in {r["tool"] for r in results}]
    doc = {
        "rows": rows,
        "events": events,
        "batches": batches,
        "runs": runs,
        "partial": True,
        "prepare": {},
        "upsert": {t: [] for t in UPSERT_TOOLS},
        "acidflow_batches": [],
        "read": {},
        "compact": {"acidflow": [], "spark-orc": []},
    }
    after_batches = False
    for r, w in zip(results, walls[-len(results) :]):
        r.update(wall=float(w[3]), peak_rss_mb=float(w[4]))
        tool, step, b = r.pop("tool"), r.pop("step"), r.pop("batch")
        if step == "prepare":
            doc["prepare"][tool] = r
        elif (
            step == "upsert"
            and tool == "acidflow"
            and (after_batches or len(doc["upsert"]["acidflow"]) >= runs)
        ):
            after_batches = True
            doc["acidflow_batches"].append(r)
        elif step == "upsert":
            doc["upsert"][tool].append(r)
        elif step in ("read", "scan"):
            doc["read"].setdefault(str(b), {"acidflow": [], "spark-orc": []})[tool].append(r)
        elif step in ("compact", "rewrite"):
            doc["compact"][tool].append(r)
    return doc


def bench_spark_native(rows: int, *, deltas: int, runs: int, work: Path) -> dict:
    """:mod:`bench.datasource` in its own process on a table of ``rows`` rows after ``deltas``
    updates of 1 % (built once under ``work/spark_native_n<rows>_d<deltas>``, then reused).

    Returns:
        :func:`bench.datasource.run`'s document.
    Raises:
        subprocess.CalledProcessError: the run failed (its stderr is shown).
    """
    table_dir = work / f"spark_native_n{rows}_d{deltas}"
    cmd = [
        sys.executable,
        "-m",
        "bench.datasource",
        "--rows",
        str(rows),
        "--deltas",
        str(deltas),
        "--runs",
        str(runs),
        "--work",
        str(table_dir),
    ]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--rows", type=int, nargs="*", default=[1_000_000, 10_000_000], help="table sizes N"
    )
    ap.add_argument(
        "--events",
        nargs="+",
        default=["1%", "0.1%"],
        help="batch sizes K: counts, or percentages of N",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--work",
        type=Path,
        default=REPO / "build" / "bench",
        help="scratch directory (data and tables)",
    )
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument(
        "--sizes",
        nargs="*",
        default=None,
        metavar="N:K",
        help="explicit (N, K) sizes; replaces the --rows x --events matrix",
    )
    ap.add_argument(
        "--upsert-only",
        nargs="*",
        default=[],
        metavar="N:K",
        help="sizes (e.g. 10000000:10000) for which only the upserts run",
    )
    ap.add_argument(
        "--load",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="initial-load comparison at these N (acidflow vs plain Spark ORC)",
    )
    ap.add_argument(
        "--s3",
        nargs="*",
        default=[],
        metavar="N:K",
        help="upsert and read with the warehouse on S3 (moto) vs local disk",
    )
    ap.add_argument(
        "--kafka",
        type=int,
        nargs="*",
        default=[],
        metavar="E",
        help="Kafka phase with E change events: file path vs Kafka path, streaming latency "
        "(bench/kafka.py)",
    )
    ap.add_argument(
        "--spark-native",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="warm-session reads (read_table, engine executor, format('acid'), plain ORC) "
        "on N rows (bench/datasource.py)",
    )
    ap.add_argument("--kafka-per-file", type=int, default=10_000, help="events per change file")
    ap.add_argument("--kafka-rate", type=float, default=1000.0, help="offered events/s (stream)")
    ap.add_argument("--kafka-duration", type=float, default=60.0, help="seconds offered (stream)")
    a = ap.parse_args(argv)
    upsert_only = {tuple(int(x) for x in spec.split(":")) for spec in a.upsert_only}
    a.results.mkdir(parents=True, exist_ok=True)
    env = {
        "machine": machine(),
        "versions": versions(),
        "command": " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
    }
    sizes = (
        [tuple(int(x) for x in spec.split(":")) for spec in a.sizes]
        if a.sizes is not None
        else [
            (n, round(n * float(k_text[:-1]) / 100) if k_text.endswith("%") else int(k_text))
            for n in a.rows
            for k_text in a.events
        ]
    )
    for n, k in sizes:
        out = a.results / f"bench_n{n}_k{k}.json"
        doc = bench_size(
            n,
            k,
            runs=a.runs,
            batches=a.batches,
            seed=a.seed,
            work=a.work,
            upsert_only=(n, k) in upsert_only,
            checkpoint=out,
            extra=env,
        )
        doc.update(env)
        out.write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out}")
    for spec in a.s3:
        n, k = (int(x) for x in spec.split(":"))
        doc = bench_s3(n, k, runs=a.runs, seed=a.seed, work=a.work)
        doc.update(env)
        out = a.results / f"s3_n{n}_k{k}.json"
        out.write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out}")
    for n in a.load:
        doc = bench_load(n, runs=a.runs, seed=a.seed, work=a.work)
        doc.update(env)
        out = a.results / f"load_n{n}.json"
        out.write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out}")

    for n in a.spark_native:
        doc = bench_spark_native(n, deltas=a.batches, runs=a.runs, work=a.work)
        doc.update(env)
        out = a.results / f"spark_native_n{n}.json"
        out.write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out}")

    for e in a.kafka:
        doc = bench_kafka(
            e,
            work=a.work,
            seed=a.seed,
            per_file=a.kafka_per_file,
            rate=a.kafka_rate,
            duration=a.kafka_duration,
        )
        doc.update(env)
        out = a.results / f"kafka_e{e}.json"
        out.write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out}")

    return 0


if __name__ == "__main__":
    sys.exit(main())
