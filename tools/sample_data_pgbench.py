"""Regenerate ``include/sample_data/pgbench``: real wal2json change data from PostgreSQL 15.

    PYTHONPATH=. .venv/bin/python tools/sample_data_pgbench.py [--out DIR] [--duration 40]
    make sample-data

Steps (a private cluster under a temp dir, ``tests.support.postgres.PostgresCluster``):

1. create the wal2json slot
   (``acidflow.sources.postgres.pull.pull(..., create_slot=True)``), so everything after
   it is in the change stream;
2. ``pgbench -i -s 1 -I dtpgv``: tables, primary keys *before* the data (so the initial inserts
   carry ``pk``), client-side COPY of the data, vacuum; then
   ``ALTER TABLE pgbench_history REPLICA IDENTITY FULL`` (churn.sql deletes from this keyless
   table); pull -> the initial-load landing file(s);
3. concurrently: the default TPC-B-like workload (``pgbench -c 2 -R 20 -T <duration>``) and
   ``churn.sql`` (``pgbench -c 1 -R 5 -f churn.sql -T <duration>``), pulling every
   ``--pull-every`` seconds; a final pull when both are done;
4. saves each table's final contents as ``source/<table>.csv.gz``
   (``COPY ... TO STDOUT WITH CSV HEADER``, ordered by key) and ``manifest.json`` (tables, row
   counts, primary keys, PostgreSQL column types, replica identity, the landing files with their
   LSN ranges and record counts per table and action).

Needs the PostgreSQL 15 server binaries, pgbench and wal2json (``make system-deps``).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from acidflow.sources.postgres import snapshot as pgsource
from acidflow.sources.postgres.connection import connect
from acidflow.sources.postgres.lsn import format_lsn
from acidflow.sources.postgres.pull import WAL2JSON_OPTIONS, landing_files, pull, read_landing_lines
from tests.support.postgres import LOGICAL_SETTINGS, PostgresCluster, wal2json_unavailable_reason

REPO = Path(__file__).resolve().parent.parent

TABLES = [
    "public.pgbench_accounts",
    "public.pgbench_branches",
    "public.pgbench_tellers",
    "public.pgbench_history",
]
SLOT = "acidflow_sample"
DB = "pgbench"


def run_pgbench(pg: PostgresCluster, *args: str, log: Path) -> subprocess.Popen:
    cmd = [pg.tool_path("pgbench"), "-h", pg.host, "-p", str(pg.port), "-U", "postgres", *args, DB]
    print("$", " ".join(cmd[0:1] + ["..."] + list(args)), flush=True)
    return subprocess.Popen(cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def file_stats(path: Path) -> dict:
    """Record counts of one landing file per table and action, plus transactions."""
    per = collections.Counter()
    txns = 0
    for line in read_landing_lines(path):
        rec = json.loads(line)
        act = rec["action"]
        if act == "B":
            txns += 1
        elif act in ("I", "U", "D", "T"):
            per[f"{rec['schema']}.{rec['table']}:{act}"] += 1
    return {"transactions": txns, "records": dict(sorted(per.items()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "include/sample_data/pgbench"))
    ap.add_argument("--duration", type=int, default=40, help="seconds of workload")
    ap.add_argument("--pull-every", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=20, help="TPC-B-like transactions per second")
    ap.add_argument("--churn-rate", type=int, default=5, help="churn.sql transactions per second")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args(argv)

    reason = wal2json_unavailable_reason()
    if reason:
        print(f"cannot make sample data: {reason}", file=sys.stderr)
        return 2
    out = Path(args.out)
    churn = out / "churn.sql"
    if not churn.is_file():
        print(f"missing {churn}", file=sys.stderr)
        return 2
    landing = out / "landing"
    source = out / "source"
    for d in (landing, source):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    logf = Path(out / ".pgbench.log")
    logf.unlink(missing_ok=True)

    with PostgresCluster(settings=LOGICAL_SETTINGS, dbname=DB) as pg:
        dsn = pg.libpq_url(DB)
        pull(dsn, SLOT, landing, create_slot=True)
        steps = []
        p = run_pgbench(pg, "-i", "-s", "1", "-I", "dtpgv", "-q", log=logf)
        if p.wait() != 0:
            print(logf.read_text(), file=sys.stderr)
            return 1
        pg.execute("ALTER TABLE pgbench_history REPLICA IDENTITY FULL", DB)
        files = pull(dsn, SLOT, landing)
        steps.append(
            {
                "step": "init: pgbench -i -s 1 -I dtpgv; "
                "ALTER TABLE pgbench_history REPLICA IDENTITY FULL",
                "files": [f.path.name for f in files],
            }
        )

        common = ["-n", "-T", str(args.duration), "-j", "1", f"--random-seed={args.seed}"]
        bench = run_pgbench(pg, "-c", "2", "-R", str(args.rate), *common, log=logf)
        churner = run_pgbench(
            pg, "-c", "1", "-R", str(args.churn_rate), "-f", str(churn), *common, log=logf
        )
        start = time.monotonic()
        while bench.poll() is None or churner.poll() is None:
            time.sleep(max(0.0, args.pull_every - (time.monotonic() - start) % args.pull_every))
            files = pull(dsn, SLOT, landing)
            steps.append(
                {
                    "step": f"pull at {time.monotonic() - start:.0f} s of the workload",
                    "files": [f.path.name for f in files],
                }
            )
        if bench.returncode or churner.returncode:
            print(logf.read_text(), file=sys.stderr)
            return 1
        files = pull(dsn, SLOT, landing)
        steps.append({"step": "final pull", "files": [f.path.name for f in files]})

        conn = connect(dsn)
        tables = []
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT version()")
                version = cur.fetchone()[0]
                cur.execute(
                    "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                    "WHERE slot_name = %s",
                    (SLOT,),
                )
                slot_lsn = cur.fetchone()[0]
            for name in TABLES:
                t = pgsource.describe(conn, name)
                buf = io.BytesIO()
                pgsource.copy_csv(conn, t, buf)
                csv_name = f"{name.split('.')[1]}.csv.gz"
                with (
                    open(source / csv_name, "wb") as raw,
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
                ):
                    gz.write(buf.getvalue())
                rows = buf.getvalue().count(b"\n") - 1  # no newlines inside pgbench values
                tables.append(
                    {
                        **t.to_json(),
                        "acidflow_table": f"pgbench.{name.split('.')[1]}",
                        "rows": rows,
                        "csv": f"source/{csv_name}",
                    }
                )
        finally:
            conn.close()

    for hidden in (".pull.lock", ".pull.landed_lsn"):  # pull's lock and state: not sample data
        (landing / hidden).unlink(missing_ok=True)
    landed = []
    totals = collections.Counter()
    for path, first, last in landing_files(landing):
        st = file_stats(path)
        totals.update(st["records"])
        landed.append(
            {
                "file": f"landing/{path.name}",
                "first_lsn": format_lsn(first),
                "last_lsn": format_lsn(last),
                "bytes": path.stat().st_size,
                **st,
            }
        )
    manifest = {
        "description": "wal2json format-version 2 change data of pgbench on PostgreSQL 15, "
        "and the source tables' final contents",
        "postgres_version": version,
        "database": DB,
        "slot": SLOT,
        "wal2json_options": dict(WAL2JSON_OPTIONS),
        "slot_confirmed_flush_lsn": slot_lsn,
        "workload": {
            "init": "pgbench -i -s 1 -I dtpgv",
            "tpcb": f"pgbench -c 2 -j 1 -R {args.rate} -T {args.duration} -n "
            f"--random-seed={args.seed}",
            "churn": f"pgbench -c 1 -j 1 -R {args.churn_rate} -T {args.duration} -n "
            f"--random-seed={args.seed} -f churn.sql",
            "pull_every_s": args.pull_every,
        },
        "tables": tables,
        "landing_files": landed,
        "record_totals": dict(sorted(totals.items())),
        "steps": steps,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    logf.unlink(missing_ok=True)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(
        f"{len(landed)} landing files, {sum(f['transactions'] for f in landed)} transactions, "
        f"{sum(totals.values())} records; {size / 1e6:.2f} MB in {out}"
    )
    for k, v in sorted(totals.items()):
        print(f"  {k:36s} {v}")
    for t in tables:
        print(f"  {t['name']:36s} {t['rows']} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
