"""Benchmark: a 10M-row initial load through acidflow vs a plain Spark ORC write.

Same SparkSession (``acidflow.spark.get_spark``, ``local[2]``), same DataFrame (the rows of
:mod:`bench.generate`'s schema -- ``id`` bigint, ``name`` string, ``age`` int, ``city`` string,
``updated_at`` timestamp, ``payload`` 60-character string -- read from one Parquet file written
once per ``out_dir``), each step timed end to end, the steps of a run side by side:

* ``spark_orc``           -- ``df.write.orc`` (zlib), the reference;
* ``acid_bucketed``       -- ``Transaction.insert_overwrite`` into a table CLUSTERED BY ``id``
  INTO 4 BUCKETS (``base_1``), primary key ``id``;
* ``acid_unbucketed``     -- ``Transaction.insert`` into an unbucketed table with primary key
  ``id`` (``delta_1_1_0``, one writer per Spark partition).

Peak memory: the largest summed RSS of this process and its children (the JVM, Python
workers) during the step, sampled every 50 ms with psutil. The machine is shared: compare the
ratios of one run, not absolute times across runs.

Run: ``python -m bench.initial_load [--rows N] [--runs R] [--out DIR]`` (prints and writes
``<out>/initial_load.json``). To measure another checkout's acidflow, put its ``jobs`` first on
``PYTHONPATH`` (the script itself only needs :mod:`bench.generate`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import psutil
import pyarrow.parquet as pq

from bench.generate import BASE_START_US, CHUNK, SCHEMA, rows_table
from bench.run import tree_rss

NUM_BUCKETS = 4
STEPS = ("spark_orc", "acid_bucketed", "acid_unbucketed")


class _PeakRss:
    """Background sampler of the summed RSS of this process tree (bytes); ``reset`` starts a
    new step."""

    def __init__(self, interval: float = 0.05):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(me))
            time.sleep(self.interval)

    def reset(self) -> None:
        self.peak = 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def write_input(path: Path, rows: int) -> None:
    """The benchmark rows ``0..rows-1`` (version 1, one second apart) as one Parquet file."""
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, SCHEMA) as w:
        for start in range(0, rows, CHUNK):
            ids = np.arange(start, min(rows, start + CHUNK), dtype=np.int64)
            w.write_table(
                rows_table(ids, np.ones(len(ids), np.int64), BASE_START_US + ids * 1_000_000)
            )


def _tables(work: Path) -> Any:
    from acidflow.catalog import Column, SqlCatalog, TableDef

    wh = work / "warehouse"
    wh.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=str(wh))
    cols = [
        Column("id", "bigint"),
        Column("name", "string"),
        Column("age", "int"),
        Column("city", "string"),
        Column("updated_at", "timestamp"),
        Column("payload", "string"),
    ]
    catalog.create_table(
        TableDef(
            name="bench.loadb",
            columns=cols,
            primary_key=["id"],
            bucket_columns=["id"],
            num_buckets=NUM_BUCKETS,
        )
    )
    catalog.create_table(TableDef(name="bench.loadu", columns=cols, primary_key=["id"]))
    return catalog


def run(rows: int, runs: int, out_dir: str | Path) -> dict:
    """Time the three steps ``runs`` times on ``rows`` rows (work files under ``out_dir``).

    Returns:
        ``{"rows", "runs", "partitions", "times": {step: [s, ...]}, "peak_rss_mb": {step:
        [MB, ...]}, "median": {step: s}, "ratio_to_spark_orc": {step: [per run]},
        "median_ratio": {step: x}}``; times in seconds, ratios of the same run.
    """
    from acidflow.engine.transaction import Transaction
    from acidflow.spark import get_spark

    out = Path(out_dir)
    data = out / f"input_{rows}.parquet"
    write_input(data, rows)
    spark = get_spark("acidflow-initial-load", **{"spark.ui.enabled": "false"})
    df = spark.read.parquet(str(data))
    df.limit(1).collect()  # the first job pays the JVM warm-up, not a step
    times: dict[str, list[float]] = {s: [] for s in STEPS}
    peaks: dict[str, list[float]] = {s: [] for s in STEPS}
    sampler = _PeakRss()
    try:
        for i in range(runs):
            work = out / f"run_{i}"
            shutil.rmtree(work, ignore_errors=True)
            catalog = _tables(work)

            def acid(name: str, overwrite: bool) -> Callable[[], None]:
                def body() -> None:
                    with Transaction(catalog, agent_info="bench initial load") as txn:
                        (txn.insert_overwrite if overwrite else txn.insert)(name, df)

                return body

            steps: dict[str, Callable[[], None]] = {
                "spark_orc": lambda: (
                    df.write.option("compression", "zlib")
                    .mode("overwrite")
                    .orc(str(work / "plain_orc"))
                ),
                "acid_bucketed": acid("bench.loadb", True),
                "acid_unbucketed": acid("bench.loadu", False),
            }
            for name, fn in steps.items():
                sampler.reset()
                t0 = time.perf_counter()
                fn()
                times[name].append(round(time.perf_counter() - t0, 3))
                peaks[name].append(round(sampler.peak / 2**20, 1))
                print(
                    f"run {i} {name}: {times[name][-1]:.2f} s, peak {peaks[name][-1]:.0f} MB",
                    flush=True,
                )
            shutil.rmtree(work, ignore_errors=True)
    finally:
        sampler.stop()
    ratios = {s: [round(t / r, 3) for t, r in zip(times[s], times["spark_orc"])] for s in STEPS}
    return {
        "rows": rows,
        "runs": runs,
        "partitions": df.rdd.getNumPartitions(),
        "times": times,
        "peak_rss_mb": peaks,
        "median": {s: statistics.median(v) for s, v in times.items()},
        "ratio_to_spark_orc": ratios,
        "median_ratio": {s: statistics.median(v) for s, v in ratios.items()},
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", default="/tmp/acidflow-initial-load")
    a = p.parse_args(argv)
    import acidflow

    result = run(a.rows, a.runs, a.out)
    result["acidflow"] = acidflow.__file__
    text = json.dumps(result, indent=1)
    print(text)
    Path(a.out, "initial_load.json").write_text(text)


if __name__ == "__main__":
    main()
