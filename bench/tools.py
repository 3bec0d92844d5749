"""One benchmark step of one tool, in this process; prints one JSON line with its timings.

``python -m bench.tools TOOL STEP --data DATA --work WORK [--batch I]`` where DATA is a
directory written by :mod:`bench.generate` and WORK the tool's own directory. The driver
(:mod:`bench.run`) starts each step in a new process and measures its wall time and peak memory
from outside; the JSON line carries the step's own phases in seconds:

* ``jvm_start``  -- building the SparkSession (Spark tools only), reported apart;
* ``work``       -- the measured operation, from reading the input to the committed result;
* ``check``      -- the result compared with the generator's expected table (not timed in
  ``work``): ``correct`` true/false and, when false, what differed.

Tools and steps:

=============  ==========================================================================
acidflow       ``prepare`` (table ``bench.items`` bucketed by ``id``, base loaded as INSERT
               OVERWRITE = ``base_1``), ``load`` (the same initial load into a fresh
               warehouse, timed and checked: the initial-load comparison),
               ``upsert --batch I`` (``acidflow.cdc.apply.apply_file`` of ``batch_I.jsonl``:
               the CDC job users run), ``read`` (snapshot read of every row and column through
               ``acidflow.read.table.read_table``, Spark ``noop`` sink), ``read-ds`` (the same read
               through the Spark data source, ``spark.read.format("acid")``), ``compact`` (major
               compaction through the compactor's queue and worker, then the cleaner)
acidflow-s3    ``prepare``, ``upsert``, ``read``: the acidflow steps with the warehouse on S3
               (``$BENCH_S3_WAREHOUSE``, e.g. ``s3://bench/n1000000``; endpoint and keys from
               the AWS environment the driver sets for its moto server); the SQLite catalog
               stays in the step's local work directory
spark-orc      ``prepare`` (plain ORC copies of the expected tables), ``scan --batch I``
               (full scan, ``noop`` sink), ``rewrite --batch I`` (read + write ORC),
               ``load`` (the base rows, with the same ``_cdc_position`` column acidflow
               stores, written as plain ORC: the reference of the initial load)
spark-cow      ``prepare`` (base as plain ORC), ``upsert --batch 1`` (copy-on-write: fold the
               events, full outer join with the table, write a new ORC version)
duckdb         ``prepare`` (base as Parquet), ``upsert --batch 1`` (copy-on-write in SQL to a
               new Parquet file)
delta          ``prepare`` (``write_deltalake`` of the base), ``upsert --batch 1`` (events folded
               in pyarrow, then delta-rs ``MERGE``)
=============  ==========================================================================

Every upsert follows the same rule: per key the latest event by ``(op_ts, pos)``, applied only
when newer than the stored row's ``updated_at`` (late events ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.generate import SCHEMA

COLUMNS = [c.name for c in SCHEMA]
TABLE = "bench.items"
SOURCE = "bench.items"  # GoldenGate "BENCH.ITEMS", lower-cased by the parser
NUM_BUCKETS = int(os.environ.get("BENCH_BUCKETS", "4"))


# -- correctness ------------------------------------------------------------------------------
def normalise(table: pa.Table) -> pa.Table:
    """The benchmark columns in order, ``updated_at`` as timestamp[us] without zone, sorted
    by ``id``."""
    cols = []
    for f in SCHEMA:
        col = table.column(f.name)
        if pa.types.is_timestamp(col.type) and col.type.tz is not None:
            col = pc.cast(col, pa.timestamp(col.type.unit))  # values are UTC
        cols.append(pc.cast(col, f.type))
    t = pa.Table.from_arrays(cols, schema=SCHEMA)
    return t.sort_by("id")


def expected_file(data: Path, batch: int) -> Path:
    """The expected table after ``batch`` (0 = the initial table, ``base.parquet``)."""
    return data / "base.parquet" if batch == 0 else data / f"expected_{batch:04d}.parquet"


#: False with ``--no-check``: results are not read back (later runs of a step whose first run
#: was checked; the input and the tool are the same).
CHECK = True


def compare(result, data: Path, batch: int) -> dict:
    """``{"correct": bool, "rows": n, "expected_rows": m, "first_difference": ...}`` of a
    tool's result (a callable returning an Arrow table) against ``expected_<batch>.parquet``;
    ``{"correct": None, "skipped": True}`` under ``--no-check``."""
    if not CHECK:
        return {"correct": None, "skipped": True}
    expected = pq.read_table(expected_file(data, batch)).sort_by("id")
    got = normalise(result())
    out = {"rows": got.num_rows, "expected_rows": expected.num_rows}
    if got.num_rows == expected.num_rows and got.equals(expected):
        return {**out, "correct": True}
    out["correct"] = False
    if got.num_rows != expected.num_rows:
        gi, ei = set(got["id"].to_pylist()), set(expected["id"].to_pylist())
        out["first_difference"] = {
            "missing_ids": sorted(ei - gi)[:5],
            "extra_ids": sorted(gi - ei)[:5],
        }
        return out
    for name in COLUMNS:
        neq = pc.invert(pc.fill_null(pc.equal(got[name], expected[name]), False))
        idx = pc.indices_nonzero(neq)
        if len(idx):
            i = idx[0].as_py()
            out["first_difference"] = {
                "column": name,
                "id": got["id"][i].as_py(),
                "got": str(got[name][i].as_py()),
                "expected": str(expected[name][i].as_py()),
            }
            break
    return out


# -- shared -----------------------------------------------------------------------------------
def _warm_worker(batches):
    import pyarrow.orc  # noqa: F401 - the library import every Arrow task pays once

    yield from batches


def spark_session():
    """(spark, seconds to start it): ``local[2]``, the project's defaults (``acidflow.spark``).

    Start = JVM up and a first job run, plus one ``mapInArrow`` task per core so that the
    Python workers are forked and have imported pyarrow (PySpark reuses them). This runtime
    start is reported apart from the measured work for every Spark tool alike."""
    from acidflow.spark import get_spark

    t0 = time.perf_counter()
    spark = get_spark("acidflow-bench", **{"spark.ui.enabled": "false"})
    spark.range(1).count()
    cores = spark.sparkContext.defaultParallelism
    spark.range(cores, numPartitions=cores).mapInArrow(_warm_worker, "id long").count()
    return spark, time.perf_counter() - t0


def batch_file(data: Path, batch: int) -> Path:
    return data / f"batch_{batch:04d}.jsonl"


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


# -- acidflow ---------------------------------------------------------------------------------
#: the warehouse URL of the ``acidflow-s3`` steps (None: ``WORK/warehouse`` on local disk)
S3_WAREHOUSE: str | None = None


def _acid_catalog_location(work: Path) -> tuple[str, str]:
    """(catalog URL, warehouse) of the step: ``WORK/warehouse`` on local disk (the SQLite
    catalog file inside it), or with :data:`S3_WAREHOUSE` the tables on S3 and the catalog
    file in ``WORK``."""
    if S3_WAREHOUSE:
        work.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{work}/_acidflow_catalog.db", S3_WAREHOUSE
    wh = work / "warehouse"
    wh.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{wh}/_acidflow_catalog.db", str(wh)


def _acid_catalog(work: Path):
    from acidflow.catalog import SqlCatalog

    url, warehouse = _acid_catalog_location(work)
    return SqlCatalog(url, warehouse=warehouse)


def _base_with_position(spark, data: Path):
    """The initial table as a DataFrame plus the ``_cdc_position`` acidflow stores for a base
    row (its ``updated_at`` as GoldenGate's ``op_ts|pos``)."""
    from pyspark.sql import functions as F

    return spark.read.parquet(str(data / "base.parquet")).withColumn(
        "_cdc_position",
        F.concat(
            F.date_format("updated_at", "yyyy-MM-dd HH:mm:ss.SSSSSS"),
            F.lit("|00000000000000000000"),
        ),
    )


def _acid_tdef():
    from acidflow.catalog import Column, TableDef
    from acidflow.cdc.tables import with_position_column

    return with_position_column(
        TableDef(
            name=TABLE,
            columns=[
                Column("id", "bigint"),
                Column("name", "string"),
                Column("age", "int"),
                Column("city", "string"),
                Column("updated_at", "timestamp"),
                Column("payload", "string"),
            ],
            primary_key=["id"],
            bucket_columns=["id"],
            num_buckets=NUM_BUCKETS,
        )
    )


def acidflow_prepare(data: Path, work: Path, batch: int) -> dict:
    from acidflow.engine.transaction import Transaction

    spark, jvm = spark_session()
    catalog = _acid_catalog(work)
    catalog.create_table(_acid_tdef())

    def load():
        with Transaction(catalog, agent_info="bench load") as txn:
            txn.insert_overwrite(TABLE, _base_with_position(spark, data))

    _, secs = timed(load)
    return {"jvm_start": jvm, "work": secs}


def acidflow_load(data: Path, work: Path, batch: int) -> dict:
    """The initial load (``prepare``) into a fresh warehouse, checked against the base."""
    if work.exists():
        shutil.rmtree(work)
    out = acidflow_prepare(data, work, batch)
    if CHECK:
        out["check"] = compare(lambda: _acid_read_local(_acid_catalog(work)), data, 0)
    return out


def acidflow_upsert(data: Path, work: Path, batch: int, check: bool = True) -> dict:
    from acidflow.cdc.apply import CdcOptions, apply_file

    spark, jvm = spark_session()
    catalog = _acid_catalog(work)
    options = CdcOptions(fmt="goldengate", tables={SOURCE: catalog.get_table(TABLE)})
    report, secs = timed(lambda: apply_file(spark, catalog, str(batch_file(data, batch)), options))
    out = {
        "jvm_start": jvm,
        "work": secs,
        "report": report.tables.get(TABLE, {}),
        "status": report.status,
    }
    if check and (data / f"expected_{batch:04d}.parquet").exists():
        out["check"] = _acid_check(catalog, data, batch)
    return out


def _acid_read_local(catalog) -> pa.Table:
    from acidflow.read.table import read_table

    return read_table(None, catalog, TABLE)


def _acid_check(catalog, data: Path, batch: int) -> dict:
    return compare(lambda: _acid_read_local(catalog), data, batch)


def acidflow_read(data: Path, work: Path, batch: int) -> dict:
    from acidflow.read.table import read_table

    spark, jvm = spark_session()
    catalog = _acid_catalog(work)

    def scan():
        read_table(spark, catalog, TABLE).write.format("noop").mode("overwrite").save()

    _, secs = timed(scan)
    return {"jvm_start": jvm, "work": secs, "check": _acid_check(catalog, data, batch)}


def acidflow_read_ds(data: Path, work: Path, batch: int) -> dict:
    """The snapshot read through the Spark data source (``acidflow.datasource``), catalog
    and warehouse given to it by the environment as a user's job would."""
    os.environ["ACIDFLOW_CATALOG_URL"], os.environ["ACIDFLOW_WAREHOUSE"] = _acid_catalog_location(
        work
    )
    catalog = _acid_catalog(work)
    spark, jvm = spark_session()

    def scan():
        spark.read.format("acid").load(TABLE).write.format("noop").mode("overwrite").save()

    _, secs = timed(scan)
    return {"jvm_start": jvm, "work": secs, "check": _acid_check(catalog, data, batch)}


def acidflow_compact(data: Path, work: Path, batch: int) -> dict:
    from acidflow.compactor.cleaner import run_cleaner
    from acidflow.compactor.initiator import request_compaction
    from acidflow.compactor.worker import run_worker

    spark, jvm = spark_session()
    catalog = _acid_catalog(work)

    def compact():
        entry = request_compaction(catalog, TABLE, None, "major", requester="bench")
        return run_worker(spark, catalog, cq_id=entry.id)

    outcome, secs = timed(compact)
    _, clean_secs = timed(lambda: run_cleaner(catalog))
    return {
        "jvm_start": jvm,
        "work": secs,
        "clean": clean_secs,
        "state": outcome.state,
        "report": {k: v for k, v in outcome.report.items() if k != "traceback"},
        "check": _acid_check(catalog, data, batch),
    }


# -- plain Spark ORC (reference) --------------------------------------------------------------
def spark_orc_prepare(data: Path, work: Path, batch: int) -> dict:
    spark, jvm = spark_session()
    for p in sorted(data.glob("expected_*.parquet")):
        spark.read.parquet(str(p)).repartition(NUM_BUCKETS).write.mode("overwrite").orc(
            str(work / p.stem)
        )
    return {"jvm_start": jvm, "work": 0.0}


def spark_orc_load(data: Path, work: Path, batch: int) -> dict:
    """The reference of the initial load: the same rows and columns as acidflow's load,
    written as plain ORC by Spark (zlib, ``NUM_BUCKETS`` files)."""
    spark, jvm = spark_session()
    dst = str(work / "load")
    _, secs = timed(
        lambda: (
            _base_with_position(spark, data)
            .repartition(NUM_BUCKETS)
            .write.mode("overwrite")
            .orc(dst)
        )
    )
    import pyarrow.dataset as ds

    return {
        "jvm_start": jvm,
        "work": secs,
        "check": compare(lambda: ds.dataset(dst, format="orc").to_table(), data, 0),
    }


def spark_orc_scan(data: Path, work: Path, batch: int) -> dict:
    spark, jvm = spark_session()
    src = str(work / f"expected_{batch:04d}")
    _, secs = timed(lambda: spark.read.orc(src).write.format("noop").mode("overwrite").save())
    return {"jvm_start": jvm, "work": secs}


def spark_orc_rewrite(data: Path, work: Path, batch: int) -> dict:
    spark, jvm = spark_session()
    src, dst = str(work / f"expected_{batch:04d}"), str(work / "rewrite")
    _, secs = timed(lambda: spark.read.orc(src).write.mode("overwrite").orc(dst))
    import pyarrow.dataset as ds

    return {
        "jvm_start": jvm,
        "work": secs,
        "check": compare(lambda: ds.dataset(dst, format="orc").to_table(), data, batch),
    }


# -- plain Spark copy-on-write ----------------------------------------------------------------
EVENT_DDL = (
    "op_type string, op_ts string, pos string, before struct<ID:bigint>, "
    "after struct<ID:bigint,NAME:string,AGE:int,CITY:string,UPDATED_AT:string,"
    "PAYLOAD:string>"
)


def spark_cow_prepare(data: Path, work: Path, batch: int) -> dict:
    spark, jvm = spark_session()
    _, secs = timed(
        lambda: (
            spark.read.parquet(str(data / "base.parquet"))
            .repartition(NUM_BUCKETS)
            .write.mode("overwrite")
            .orc(str(work / "v0"))
        )
    )
    return {"jvm_start": jvm, "work": secs}


def spark_cow_upsert(data: Path, work: Path, batch: int) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark, jvm = spark_session()
    src, dst = str(work / f"v{batch - 1}"), str(work / f"v{batch}")

    def run():
        ev = spark.read.schema(EVENT_DDL).json(str(batch_file(data, batch)))
        ev = ev.select(
            F.coalesce("after.ID", "before.ID").alias("id"),
            "op_type",
            F.to_timestamp("op_ts").alias("op_ts"),
            "pos",
            F.col("after.NAME").alias("name"),
            F.col("after.AGE").alias("age"),
            F.col("after.CITY").alias("city"),
            F.to_timestamp("after.UPDATED_AT").alias("updated_at"),
            F.col("after.PAYLOAD").alias("payload"),
        )
        w = Window.partitionBy("id").orderBy(F.desc("op_ts"), F.desc("pos"))
        latest = ev.withColumn("_n", F.row_number().over(w)).where("_n = 1").drop("_n")
        old = spark.read.orc(src)
        j = old.alias("t").join(latest.alias("s"), "id", "full_outer")
        newer = F.col("s.op_ts").isNotNull() & (
            F.col("t.updated_at").isNull() | (F.col("s.op_ts") > F.col("t.updated_at"))
        )
        keep_old = F.col("t.updated_at").isNotNull() & ~newer
        write_new = newer & (F.col("s.op_type") != "D")
        out = j.where(keep_old | write_new).select(
            "id",
            *[
                F.when(keep_old, F.col(f"t.{c}")).otherwise(F.col(f"s.{c}")).alias(c)
                for c in COLUMNS[1:]
            ],
        )
        out.repartition(NUM_BUCKETS).write.mode("overwrite").orc(dst)

    _, secs = timed(run)
    import pyarrow.dataset as ds

    return {
        "jvm_start": jvm,
        "work": secs,
        "check": compare(lambda: ds.dataset(dst, format="orc").to_table(), data, batch),
    }


# -- DuckDB copy-on-write ---------------------------------------------------------------------
def duckdb_prepare(data: Path, work: Path, batch: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data / "base.parquet", work / "v0.parquet")
    return {"work": 0.0}


def duckdb_upsert(data: Path, work: Path, batch: int) -> dict:
    import duckdb

    src, dst = work / f"v{batch - 1}.parquet", work / f"v{batch}.parquet"

    def run():
        con = duckdb.connect()
        con.execute(f"""
        COPY (
          WITH ev AS (
            SELECT coalesce(after.ID, before.ID) AS id, op_type,
                   CAST(op_ts AS TIMESTAMP) AS op_ts, pos,
                   after.NAME AS name, after.AGE AS age, after.CITY AS city,
                   CAST(after.UPDATED_AT AS TIMESTAMP) AS updated_at, after.PAYLOAD AS payload
            FROM read_json('{batch_file(data, batch)}', format='newline_delimited',
              columns={{op_type: 'VARCHAR', op_ts: 'VARCHAR', pos: 'VARCHAR',
                        before: 'STRUCT(ID BIGINT)',
                        after: 'STRUCT(ID BIGINT, NAME VARCHAR, AGE INTEGER, CITY VARCHAR,
                                       UPDATED_AT VARCHAR, PAYLOAD VARCHAR)'}})),
          latest AS (
            SELECT * FROM ev QUALIFY row_number() OVER (PARTITION BY id
                                                        ORDER BY op_ts DESC, pos DESC) = 1),
          t AS (SELECT * FROM read_parquet('{src}'))
          SELECT t.* FROM t LEFT JOIN latest s ON t.id = s.id
            WHERE s.id IS NULL OR s.op_ts <= t.updated_at
          UNION ALL
          SELECT s.id, s.name, s.age, s.city, s.updated_at, s.payload
            FROM latest s LEFT JOIN t ON t.id = s.id
            WHERE s.op_type <> 'D' AND (t.id IS NULL OR s.op_ts > t.updated_at)
        ) TO '{dst}' (FORMAT parquet, COMPRESSION zstd)""")
        con.close()

    _, secs = timed(run)
    return {"work": secs, "check": compare(lambda: pq.read_table(dst), data, batch)}


# -- delta-rs MERGE ---------------------------------------------------------------------------
def delta_prepare(data: Path, work: Path, batch: int) -> dict:
    from deltalake import write_deltalake

    _, secs = timed(
        lambda: write_deltalake(
            str(work / "table"), pq.read_table(data / "base.parquet"), mode="overwrite"
        )
    )
    return {"work": secs}


def fold_events_arrow(path: Path) -> pa.Table:
    """The latest event per key of a GoldenGate file, as columns ``id, op_type, op_ts, name,
    age, city, updated_at, payload`` (pyarrow only)."""
    import pyarrow.json as pj

    t = pj.read_json(str(path))
    after, before = t["after"], t["before"]
    ids = pc.coalesce(pc.struct_field(after, "ID"), pc.struct_field(before, "ID"))
    ev = pa.table(
        {
            "id": pc.cast(ids, pa.int64()),
            "op_type": t["op_type"],
            "op_ts": pc.cast(t["op_ts"], pa.timestamp("us")),
            "pos": t["pos"],
            "name": pc.struct_field(after, "NAME"),
            "age": pc.cast(pc.struct_field(after, "AGE"), pa.int32()),
            "city": pc.struct_field(after, "CITY"),
            "updated_at": pc.cast(pc.struct_field(after, "UPDATED_AT"), pa.timestamp("us")),
            "payload": pc.struct_field(after, "PAYLOAD"),
        }
    )
    ev = ev.sort_by([("id", "ascending"), ("op_ts", "ascending"), ("pos", "ascending")])
    ids = ev["id"].combine_chunks()
    last = pc.not_equal(ids.slice(0, len(ids) - 1), ids.slice(1))
    mask = pa.concat_arrays([last, pa.array([True])]) if len(ids) else pa.array([], pa.bool_())
    return ev.filter(mask).drop(["pos"])


def delta_upsert(data: Path, work: Path, batch: int) -> dict:
    from deltalake import DeltaTable

    path = str(work / "table")

    def run():
        src = fold_events_arrow(batch_file(data, batch))
        values = {c: f"s.{c}" for c in COLUMNS}
        (
            DeltaTable(path)
            .merge(src, predicate="t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_delete(predicate="s.op_type = 'D' AND s.op_ts > t.updated_at")
            .when_matched_update(
                updates=values, predicate="s.op_type <> 'D' AND s.op_ts > t.updated_at"
            )
            .when_not_matched_insert(updates=values, predicate="s.op_type <> 'D'")
            .execute()
        )

    _, secs = timed(run)
    from deltalake import DeltaTable as DT

    return {"work": secs, "check": compare(lambda: DT(path).to_pyarrow_table(), data, batch)}


STEPS = {
    ("acidflow", "prepare"): acidflow_prepare,
    ("acidflow", "upsert"): acidflow_upsert,
    ("acidflow", "read"): acidflow_read,
    ("acidflow", "compact"): acidflow_compact,
    ("acidflow", "load"): acidflow_load,
    ("acidflow", "read-ds"): acidflow_read_ds,
    ("acidflow-s3", "prepare"): acidflow_prepare,
    ("acidflow-s3", "upsert"): acidflow_upsert,
    ("acidflow-s3", "read"): acidflow_read,
    ("spark-orc", "prepare"): spark_orc_prepare,
    ("spark-orc", "scan"): spark_orc_scan,
    ("spark-orc", "rewrite"): spark_orc_rewrite,
    ("spark-orc", "load"): spark_orc_load,
    ("spark-cow", "prepare"): spark_cow_prepare,
    ("spark-cow", "upsert"): spark_cow_upsert,
    ("duckdb", "prepare"): duckdb_prepare,
    ("duckdb", "upsert"): duckdb_upsert,
    ("delta", "prepare"): delta_prepare,
    ("delta", "upsert"): delta_upsert,
}


#: steps that need a process of their own even in in-process mode: Spark's Python workers
#: take their environment from the JVM that started them, not from this process's later
#: ``os.environ`` -- the data source's planner reads the catalog from it, the S3 steps' tasks
#: the object store's endpoint and keys
OWN_PROCESS = frozenset(
    {
        ("acidflow", "read-ds"),
        ("acidflow-s3", "prepare"),
        ("acidflow-s3", "upsert"),
        ("acidflow-s3", "read"),
    }
)


def run_step_here(
    tool: str, step: str, data: Path, work: Path, batch: int = 1, check: bool = True
) -> dict:
    """Run one step in this process (on the active SparkSession, if any) and return its
    result document; ``os.environ`` is restored afterwards.

    Raises:
        ValueError: an unknown (tool, step), or ``acidflow-s3`` without
            ``$BENCH_S3_WAREHOUSE``.
    """
    global CHECK, S3_WAREHOUSE
    fn = STEPS.get((tool, step))
    if fn is None:
        raise ValueError(f"{tool} has no step {step}")
    saved = dict(os.environ)
    CHECK = check
    if tool == "acidflow-s3":
        S3_WAREHOUSE = os.environ.get("BENCH_S3_WAREHOUSE")
        if not S3_WAREHOUSE:
            raise ValueError("acidflow-s3 needs $BENCH_S3_WAREHOUSE (s3://bucket/prefix)")
    work.mkdir(parents=True, exist_ok=True)
    try:
        return fn(data.resolve(), work.resolve(), batch)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tool", choices=sorted({t for t, _ in STEPS}))
    ap.add_argument("step", choices=sorted({s for _, s in STEPS}))
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument(
        "--no-check", action="store_true", help="do not compare the result with the expected table"
    )
    a = ap.parse_args(argv)
    try:
        result = run_step_here(a.tool, a.step, a.data, a.work, a.batch, not a.no_check)
    except ValueError as exc:
        ap.error(str(exc))
    sys.stdout.flush()
    print("BENCH-RESULT " + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
