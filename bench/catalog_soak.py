"""Catalog soak: many small upserts on one table with the compactor running as the
``acid_compaction`` DAG runs it (initiator, worker queue, cleaner) every few batches, printing
per-hundred batch times and the catalog's size (rows per catalog table, SQLite file size).

The requirement it checks (``make stress``): the last hundred batches take at most 1.3x the
first hundred, and the catalog's history tables stay bounded (bench/NOTES.md, "Catalog soak").

    python -m bench.catalog_soak --batches 1000 [--every 10] [--rows 20] [--profile 5,950]

No Spark: the upserts and the compactions run in this process with pyarrow.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa

#: the catalog tables whose rows grow with commits (reported every hundred batches)
TABLES = (
    "txns",
    "txn_to_write_id",
    "completed_txn_components",
    "commit_records",
    "write_set",
    "write_set_keys",
    "cdc_tombstones",
    "batches",
    "batch_watermarks",
    "compaction_queue",
    "reader_registrations",
    "schema_history",
)


def row_counts(catalog) -> dict[str, int]:
    """Rows per catalog table (the ones in :data:`TABLES` that exist)."""
    out = {}
    with catalog.db.engine.connect() as conn:
        names = set(sa.inspect(conn).get_table_names())
        for t in TABLES:
            if t in names:
                out[t] = conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
    return out


def run(batches: int, every: int, rows: int, profile: set[int], work: Path) -> dict:
    """The soak; returns the per-hundred figures (and prints them as it goes)."""
    os.environ["ACIDFLOW_WAREHOUSE"] = str(work)
    # batch records older than 0 h go (each source's newest stays), so the ledger's bound shows
    # within the run; the default keeps them 30 days
    os.environ.setdefault("ACIDFLOW_BATCH_RETAIN_HOURS", "0")
    # imported here: the environment above is read when the catalog module first loads
    from acidflow.catalog import Column, SqlCatalog, TableDef
    from acidflow.compactor.cleaner import run_cleaner
    from acidflow.compactor.initiator import run_initiator
    from acidflow.compactor.worker import run_queue
    from acidflow.engine.transaction import Transaction

    db_file = work / "_acidflow_catalog.db"
    catalog = SqlCatalog(f"sqlite:///{db_file}", warehouse=str(work))
    name = "soak.t"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("v", "string"), Column("n", "bigint")],
            primary_key=["id"],
            num_buckets=2,
            properties={
                "acidflow.history.retain.commits": "10",
                "acidflow.history.retain.hours": "0",
            },
        )
    )
    times: list[float] = []
    report: dict = {"hundreds": []}
    t_block = 0.0
    for i in range(1, batches + 1):
        ids = [(i * 7 + k * 13) % 2000 for k in range(rows)]  # half new keys, half updates
        data = pa.table(
            {
                "id": pa.array(ids, pa.int32()),
                "v": pa.array([f"b{i}" for _ in ids], pa.string()),
                "n": pa.array([i] * rows, pa.int64()),
            }
        )
        prof = cProfile.Profile() if i in profile else None
        t0 = time.perf_counter()
        if prof is not None:
            prof.enable()
        with Transaction(catalog, heartbeat_s=0, agent_info="soak") as txn:
            catalog.register_batch(txn.txn_id, f"soak:{i}", "ingest", source="soak")
            txn.upsert(name, data)
        if prof is not None:
            prof.disable()
            print(f"--- profile of batch {i}", flush=True)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        dt = time.perf_counter() - t0
        times.append(dt)
        t_block += dt
        if i % every == 0:  # the acid_compaction DAG: initiator, worker queue, cleaner
            run_initiator(catalog)
            run_queue(None, catalog)
            run_cleaner(catalog)
        if i % 100 == 0:
            hundred = times[-100:]
            counts = row_counts(catalog)
            entry = {
                "batches": f"{i - 99}-{i}",
                "mean_s": round(sum(hundred) / len(hundred), 4),
                "db_bytes": db_file.stat().st_size,
                "files": sum(1 for p in (work / "soak.db" / "t").rglob("*") if p.is_file()),
                "rows": counts,
            }
            report["hundreds"].append(entry)
            print(json.dumps(entry), flush=True)
    first, last = report["hundreds"][0]["mean_s"], report["hundreds"][-1]["mean_s"]
    report["ratio"] = round(last / first, 3)
    # bounded: no history table has more rows at the end than at the second hundred (+ slack
    # for the batches between two cleaner passes)
    if len(report["hundreds"]) >= 3:
        early, end = report["hundreds"][1]["rows"], report["hundreds"][-1]["rows"]
        report["grew"] = {t: end[t] - early[t] for t in end if end[t] > early[t] + 2 * every}
    else:
        report["grew"] = {}
    catalog.close()
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the soak; exit 1 when the last hundred is over 1.3x the first or a history table
    kept growing after the second hundred."""
    p = argparse.ArgumentParser(prog="python -m bench.catalog_soak")
    p.add_argument("--batches", type=int, default=1000)
    p.add_argument("--every", type=int, default=10, help="compactor passes every N batches")
    p.add_argument("--rows", type=int, default=20)
    p.add_argument("--profile", default="", help="batch numbers to cProfile, e.g. 5,950")
    p.add_argument("--work", default=None, help="directory (default a temporary one)")
    args = p.parse_args(argv)
    profile = {int(x) for x in args.profile.split(",") if x.strip()}
    if args.work:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        report = run(args.batches, args.every, args.rows, profile, work)
    else:
        with tempfile.TemporaryDirectory(prefix="acidflow-soak-") as tmp:
            report = run(args.batches, args.every, args.rows, profile, Path(tmp))
    print(json.dumps({"ratio_last_to_first": report["ratio"], "tables_grown": report["grew"]}))
    return 0 if report["ratio"] <= 1.3 and not report["grew"] else 1


if __name__ == "__main__":
    sys.exit(main())
