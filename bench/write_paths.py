"""Benchmark: ways to produce Hive ACID event files from a Spark DataFrame.

Same input (N rows: int, bigint, string, double), same SparkSession, each path timed end to end
(Spark job included), best of R runs; figures are reported as ratios against Spark's own ORC
writer on the same event-shaped data (which cannot write Hive's footer metadata nor choose file
names, so it is only the reference):

* spark-native    -- ``df.write.orc`` of the six-column event struct (reference; not usable).
* pyarrow-mapInArrow -- pyarrow ORC writer inside ``mapInArrow`` (no user metadata: not usable).
* pyorc-mapPartitions -- ``rdd.mapPartitions`` + our ``EventFileWriter`` (pickled Rows).
* pyorc-mapInArrow -- ``mapInArrow`` + our ``EventFileWriter`` (what ``acidflow.engine.writer`` uses).

Run: ``make bench`` or ``.venv/bin/python bench/write_paths.py [rows] [runs]``.
Writes ``bench/results/write_paths.json``.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc

from acidflow.format.orc import files as acid_files
from acidflow.spark import get_spark
from acidflow.storage.fs import TableFS

COLUMNS = [("id", "int"), ("amount", "bigint"), ("name", "string"), ("score", "double")]
BPROP = 536870912


def make_df(spark, n: int):
    from pyspark.sql import functions as F

    return (
        spark.range(n)
        .repartition(2)
        .select(
            F.col("id").cast("int").alias("id"),
            (F.col("id") * 7).alias("amount"),
            F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
            (F.col("id") / 3.0).alias("score"),
        )
        .sortWithinPartitions("id")
        .cache()
    )


def spark_native(spark, df, out: Path):
    from pyspark.sql import functions as F

    ev = df.select(
        F.lit(0).alias("operation"),
        F.lit(1).cast("bigint").alias("originalTransaction"),
        F.lit(BPROP).alias("bucket"),
        F.col("id").cast("bigint").alias("rowId"),
        F.lit(1).cast("bigint").alias("currentTransaction"),
        F.struct("id", "amount", "name", "score").alias("row"),
    )
    ev.write.option("compression", "zlib").mode("overwrite").orc(str(out))


def _events(ids, amounts, names, scores, start):
    return [
        (0, 1, BPROP, start + i, 1, (a, b, c, d))
        for i, (a, b, c, d) in enumerate(zip(ids, amounts, names, scores))
    ]


def pyorc_map_in_arrow(spark, df, out: Path):
    from pyspark import TaskContext

    root = str(out)

    def run(batches):
        pid = TaskContext.get().partitionId()
        w = acid_files.EventFileWriter(TableFS(root), f"{root}/bucket_{pid:05d}", COLUMNS)
        n = 0
        for b in batches:
            cols = [c.to_pylist() for c in b.columns]
            w.write(_events(*cols, n))
            n += b.num_rows
        w.close()
        yield pa.RecordBatch.from_pydict({"n": [n]})

    df.mapInArrow(run, "n long").collect()


def pyorc_map_partitions(spark, df, out: Path):
    from pyspark import TaskContext

    root = str(out)

    def run(rows):
        pid = TaskContext.get().partitionId()
        w = acid_files.EventFileWriter(TableFS(root), f"{root}/bucket_{pid:05d}", COLUMNS)
        w.write((0, 1, BPROP, i, 1, (r[0], r[1], r[2], r[3])) for i, r in enumerate(rows))
        w.close()
        yield 1

    df.rdd.mapPartitions(run).collect()


def pyarrow_map_in_arrow(spark, df, out: Path):
    from pyspark import TaskContext

    root = str(out)

    def run(batches):
        pid = TaskContext.get().partitionId()
        tables = [pa.Table.from_batches([b]) for b in batches]
        t = pa.concat_tables(tables)
        n = t.num_rows
        ev = pa.table(
            {
                "operation": pa.array([0] * n, pa.int32()),
                "originalTransaction": pa.array([1] * n, pa.int64()),
                "bucket": pa.array([BPROP] * n, pa.int32()),
                "rowId": pa.array(range(n), pa.int64()),
                "currentTransaction": pa.array([1] * n, pa.int64()),
                "row": pa.StructArray.from_arrays(
                    [c.combine_chunks() for c in t.columns], names=t.column_names
                ),
            }
        )
        Path(root).mkdir(parents=True, exist_ok=True)
        paorc.write_table(ev, f"{root}/bucket_{pid:05d}", compression="zlib")
        yield pa.RecordBatch.from_pydict({"n": [n]})

    df.mapInArrow(run, "n long").collect()


PATHS = {
    "spark-native": spark_native,
    "pyarrow-mapInArrow": pyarrow_map_in_arrow,
    "pyorc-mapPartitions": pyorc_map_partitions,
    "pyorc-mapInArrow": pyorc_map_in_arrow,
}


def main(n: int = 1_000_000, runs: int = 2) -> dict:
    spark = get_spark("acidflow-bench", master="local[2]", **{"spark.ui.enabled": "false"})
    df = make_df(spark, n)
    df.count()
    tmp = Path(tempfile.mkdtemp(prefix="acidflow-bench-"))
    results = {}
    try:
        for name, fn in PATHS.items():
            best = None
            for r in range(runs):
                out = tmp / f"{name}-{r}"
                t0 = time.perf_counter()
                fn(spark, df, out)
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
            results[name] = best
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ref = results["spark-native"]
    report = {
        "rows": n,
        "runs": runs,
        "seconds": results,
        "ratio_vs_spark_native": {k: round(v / ref, 2) for k, v in results.items()},
        "rows_per_second": {k: round(n / v) for k, v in results.items()},
    }
    print(f"{'path':22s} {'seconds':>8s} {'x spark':>8s} {'rows/s':>10s}")
    for k, v in results.items():
        print(f"{k:22s} {v:8.2f} {v / ref:8.2f} {n / v:10.0f}")
    out = Path(__file__).parent / "results" / "write_paths.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
