"""Benchmark: a snapshot read through the ``acid`` Spark data source
(``spark.read.format("acid").load(...)``, PySpark's Python Data Source API) next to
``acidflow.read.table.read_table(spark, ...)`` (the same read tasks run by ``mapInArrow``), the
same ``read_table`` run as Spark's own ORC scans (``ACIDFLOW_SPARK_READER=engine``,
:mod:`acidflow.read.engine`), run by acidflow's JVM reader (``ACIDFLOW_SPARK_READER=jvm``,
:mod:`acidflow.read.jvm`) and a plain Spark ORC scan of the same rows (written once as plain
ORC files, 4 files, zlib): the warm-session ratios of the Spark-native read targets.

Table: ``bench.ds_read`` (``id bigint, name string, amount bigint, score double``, 4 buckets on
id), ``rows`` rows inserted in one statement, then ``deltas`` updates of 1% of the rows each
(a delete delta and an insert delta per update). Both reads run in the same SparkSession,
interleaved, ``runs`` times each; each is consumed whole by Spark's ``noop`` writer (every
column materialised) and timed end to end (planning included). The first run of each is
checked against the others: row count and the sum of ``xxhash64`` over all columns.

Run: ``python -m bench.datasource [--rows 1000000] [--deltas 3] [--runs 3] [--work DIR]``;
prints the result as JSON (``run()`` returns it for the harness).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

TABLE = "bench.ds_read"


def build(spark: Any, catalog: Any, rows: int, deltas: int) -> None:
    """Create and fill the table (see the module doc)."""
    from pyspark.sql import functions as F

    from acidflow.catalog import Column, TableDef
    from acidflow.engine.transaction import Transaction

    catalog.create_table(
        TableDef(
            name=TABLE,
            columns=[
                Column("id", "bigint"),
                Column("name", "string"),
                Column("amount", "bigint"),
                Column("score", "double"),
            ],
            num_buckets=4,
            bucket_columns=["id"],
        )
    )
    df = spark.range(rows).select(
        F.col("id"),
        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        (F.col("id") * 7).alias("amount"),
        (F.col("id") / 3.0).alias("score"),
    )
    with Transaction(catalog) as t:
        t.insert(TABLE, df)
    for k in range(deltas):
        with Transaction(catalog) as t:
            t.update(TABLE, f"id % 100 = {k}", set={"score": "score + 1"})


def _consume(make: Callable[[], Any]) -> float:
    """Seconds to build the DataFrame (planning: catalog, listing, read tasks) and consume it
    whole with Spark's ``noop`` writer."""
    start = time.perf_counter()
    make().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def _check(df: Any) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = df.agg(F.count(F.lit(1)), F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)"))).first()
    return int(row[0]), int(row[1])


def run(
    rows: int = 1_000_000,
    deltas: int = 3,
    runs: int = 3,
    work: str | None = None,
    spark: Any = None,
) -> dict[str, Any]:
    """Build the table under ``work`` (default a temp dir; a table already built there is
    reused) and time both reads.

    Returns:
        ``{"rows", "deltas", "runs", "datasource_s": [...], "read_table_s": [...],
        "engine_s": [...], "jvm_s": [...], "plain_orc_s": [...], "<name>_median_s" for each,
        "ratio"}`` (read_table: the arrow executor; jvm: acidflow's JVM reader,
        ``ACIDFLOW_SPARK_READER=jvm``; ratio
        = data source median / read_table median; ``vs_plain_orc``: each acidflow read's
        median / the plain ORC scan's; seconds of wall time).
    Raises:
        AssertionError: the two reads disagree (count or hash sum).
    """
    from acidflow import datasource
    from acidflow.catalog import SqlCatalog
    from acidflow.config import Settings
    from acidflow.read import engine
    from acidflow.read import table as reads
    from acidflow.spark import get_spark

    root = Path(work or tempfile.mkdtemp(prefix="bench-ds-"))
    wh = root / "warehouse"
    wh.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{wh / '_acidflow_catalog.db'}"
    catalog = SqlCatalog(url, warehouse=str(wh))
    spark = spark or get_spark("bench-datasource")
    datasource.register(spark, Settings(warehouse=str(wh), catalog_url=url))
    if not catalog.table_exists(TABLE):  # a work dir of an earlier run keeps its table
        build(spark, catalog, rows, deltas)

    def by_source() -> Any:
        return spark.read.format("acid").load(TABLE)

    def with_reader(value: str) -> Any:
        previous = os.environ.get(engine.READER_ENV)
        os.environ[engine.READER_ENV] = value
        try:
            return reads.read_table(spark, catalog, TABLE)
        finally:
            if previous is None:
                os.environ.pop(engine.READER_ENV, None)
            else:
                os.environ[engine.READER_ENV] = previous

    def by_read_table() -> Any:  # the arrow executor (mapInArrow + pyarrow)
        return with_reader(engine.ARROW)

    def by_engine() -> Any:
        return with_reader(engine.ENGINE)

    def by_jvm() -> Any:
        return with_reader(engine.JVM)

    plain = root / "plain_orc"
    if not plain.exists():  # the same rows as plain ORC files, written once
        by_read_table().repartition(4).write.orc(str(plain))

    def by_plain_orc() -> Any:
        return spark.read.orc(str(plain))

    reads_by = {
        "datasource_s": by_source,
        "read_table_s": by_read_table,
        "engine_s": by_engine,
        "jvm_s": by_jvm,
        "plain_orc_s": by_plain_orc,
    }
    checks = {name: _check(make()) for name, make in reads_by.items()}
    assert len(set(checks.values())) == 1 and checks["read_table_s"][0] == rows, checks
    times: dict[str, list[float]] = {name: [] for name in reads_by}
    for _ in range(runs):  # interleaved: a noisy minute hits all
        for name, make in reads_by.items():
            times[name].append(_consume(make))
    meds = {name: statistics.median(t) for name, t in times.items()}
    return {
        "rows": rows,
        "deltas": deltas,
        "runs": runs,
        **times,
        **{f"{name[:-2]}_median_s": round(m, 3) for name, m in meds.items()},
        "ratio": round(meds["datasource_s"] / meds["read_table_s"], 3),
        "vs_plain_orc": {
            name[:-2]: round(m / meds["plain_orc_s"], 3)
            for name, m in meds.items()
            if name != "plain_orc_s"
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--deltas", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=os.environ.get("BENCH_WORK"))
    args = ap.parse_args()
    print(json.dumps(run(args.rows, args.deltas, args.runs, args.work), indent=2))


if __name__ == "__main__":
    main()
