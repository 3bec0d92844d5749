"""Benchmark: a selective key predicate (a range touching ~0.1 % of the rows) next to the full
read, for ``read_table``'s pyarrow path (``read_table(None, ..., where=...)``) and for the
``acid`` Spark data source (``spark.read.format("acid").load(...).filter(...)``, pushed through
``AcidReader.pushFilters``).

Table: ``bench.pushdown`` (``id bigint, name string, amount decimal(12,2), day date``, no
buckets), ``rows`` rows in id order written in one transaction with ``stripe_rows`` rows per
stripe, then ``deltas`` upserts of 0.5 % of the keys each (a delete delta and an insert delta
each). Each read runs ``runs`` times, the filtered and the full read interleaved in the same
process; the pyarrow reads are materialised as Arrow tables, the Spark reads consumed by the
``noop`` writer. The filtered reads are checked against the full read filtered in Python
(pyarrow) or by Spark without the source's help (row counts).

Run: ``python -m bench.pushdown [--rows 500000] [--stripe-rows 20000] [--deltas 2] [--runs 3]
[--work DIR] [--no-spark]``; prints the result as JSON (``run()`` returns it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

TABLE = "bench.pushdown"


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"{tag}-{i}" for i in ids]),
            "amount": pa.array([Decimal(i % 100_000) / 100 for i in ids], pa.decimal128(12, 2)),
            "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 3000) for i in ids]),
        }
    )


def build(catalog: Any, rows: int, stripe_rows: int, deltas: int) -> None:
    """Create and fill the table (module doc)."""
    from acidflow.catalog import Column, TableDef
    from acidflow.engine.transaction import Transaction

    catalog.create_table(
        TableDef(
            name=TABLE,
            columns=[
                Column("id", "bigint"),
                Column("name", "string"),
                Column("amount", "decimal(12,2)"),
                Column("day", "date"),
            ],
            primary_key=["id"],
        )
    )
    with Transaction(catalog) as t:
        t.upsert(TABLE, _rows(list(range(rows)), "a"), stripe_rows=stripe_rows)
    for k in range(deltas):
        with Transaction(catalog) as t:
            t.upsert(TABLE, _rows(list(range(k, rows, 200)), f"u{k}"), stripe_rows=stripe_rows)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(
    rows: int = 500_000,
    stripe_rows: int = 20_000,
    deltas: int = 2,
    runs: int = 3,
    work: str | None = None,
    spark: Any = None,
    with_spark: bool = True,
) -> dict[str, Any]:
    """Build the table under ``work`` (default a temp dir; reused when already built) and time
    the reads.

    Returns:
        ``{"rows", "stripes", "selected_rows", "arrow": {...}, "spark": {...}}``: per path
        the filtered and full reads' seconds (``filtered_s``, ``full_s`` lists, medians) and
        ``ratio`` = full median / filtered median (wall time).
    Raises:
        AssertionError: a filtered read returns other rows than the full read filtered.
    """
    from acidflow import datasource
    from acidflow.catalog import SqlCatalog
    from acidflow.config import Settings
    from acidflow.read import table as reads

    root = Path(work or tempfile.mkdtemp(prefix="bench-pushdown-"))
    wh = root / "warehouse"
    wh.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{wh / '_acidflow_catalog.db'}"
    catalog = SqlCatalog(url, warehouse=str(wh))
    if not catalog.table_exists(TABLE):
        build(catalog, rows, stripe_rows, deltas)
    lo = rows // 2 + 123
    hi = lo + max(1, rows // 1000)
    where = [("id", ">=", lo), ("id", "<", hi)]
    plan = reads.plan_table(catalog, TABLE)
    stripes = _stripe_count(plan)

    full = reads.read_table(None, catalog, TABLE)
    expect = full.filter(pc.and_(pc.greater_equal(full["id"], lo), pc.less(full["id"], hi)))
    got = reads.read_table(None, catalog, TABLE, where=where)
    assert sorted(got.column("id").to_pylist()) == sorted(expect.column("id").to_pylist())
    out: dict[str, Any] = {"rows": rows, "stripes": stripes, "selected_rows": got.num_rows}
    arrow: dict[str, list[float]] = {"filtered_s": [], "full_s": []}
    for _ in range(runs):  # interleaved: a noisy minute hits both
        arrow["filtered_s"].append(
            _timed(lambda: reads.read_table(None, catalog, TABLE, where=where))[0]
        )
        arrow["full_s"].append(_timed(lambda: reads.read_table(None, catalog, TABLE))[0])
    out["arrow"] = _summary(arrow)
    if with_spark:
        from pyspark.sql import functions as F

        from acidflow.spark import get_spark

        spark = spark or get_spark("bench-pushdown")
        datasource.register(spark, Settings(warehouse=str(wh), catalog_url=url))

        def filtered() -> Any:
            return (
                spark.read.format("acid")
                .load(TABLE)
                .filter((F.col("id") >= lo) & (F.col("id") < hi))
            )

        def whole() -> Any:
            return spark.read.format("acid").load(TABLE)

        assert filtered().count() == expect.num_rows
        sp: dict[str, list[float]] = {"filtered_s": [], "full_s": []}
        for _ in range(runs):
            sp["filtered_s"].append(_timed(lambda: _noop(filtered()))[0])
            sp["full_s"].append(_timed(lambda: _noop(whole()))[0])
        out["spark"] = _summary(sp)
    return out


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _summary(times: dict[str, list[float]]) -> dict[str, Any]:
    f, a = statistics.median(times["filtered_s"]), statistics.median(times["full_s"])
    return {
        **{k: [round(x, 3) for x in v] for k, v in times.items()},
        "filtered_median_s": round(f, 3),
        "full_median_s": round(a, 3),
        "ratio": round(a / f, 1),
    }


def _stripe_count(plan: Any) -> int:
    """Stripes of the plan's data files (from their ORC footers)."""
    from acidflow.format.orc import orcindex

    n = 0
    for task in plan.tasks:
        for f in task.data_files:
            with open(f.path, "rb") as fh:
                fh.seek(0, 2)
                n += len(orcindex.read_tail_index(fh, fh.tell()).stripes)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--stripe-rows", type=int, default=20_000)
    ap.add_argument("--deltas", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=os.environ.get("BENCH_WORK"))
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the result to RESULTS/pushdown_n<rows>.json (bench/report.py reads it)",
    )
    args = ap.parse_args()
    doc = run(
        args.rows, args.stripe_rows, args.deltas, args.runs, args.work, with_spark=not args.no_spark
    )
    doc["command"] = "python -m bench.pushdown " + " ".join(sys.argv[1:])
    print(json.dumps(doc, indent=2))
    if args.results is not None:
        args.results.mkdir(parents=True, exist_ok=True)
        (args.results / f"pushdown_n{args.rows}.json").write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
