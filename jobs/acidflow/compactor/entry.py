"""spark-submit subcommands ``compact`` and ``clean`` (``jobs/submit.py`` dispatches here).

::

    submit.py compact --initiate [--dry-run] [--table-filter 'db.*']
        # initiator pass; last stdout line = JSON list of queued ids (Airflow dynamic mapping)
    submit.py compact --worker --id N      # run queue entry N (one mapped task per id)
    submit.py compact --run-queue          # run every claimable entry
    submit.py compact --request TABLE [--partition SPEC] --type major|minor [--run]
    submit.py clean                        # one cleaner pass; last stdout line = JSON report

Exit codes: 0 success, 1 a compaction failed / error, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from acidflow import lineage
from acidflow.catalog import Catalog
from acidflow.catalog.records import CompactionState
from acidflow.compactor import worker
from acidflow.compactor.cleaner import run_cleaner
from acidflow.compactor.initiator import (
    queued_ids_json,
    request_compaction,
    run_initiator,
)
from acidflow.spark import get_spark


def _catalog() -> Catalog:
    return Catalog.from_settings()


def compact_main(argv: list[str]) -> int:
    """``compact`` subcommand; see the module doc. Returns the exit code."""
    p = argparse.ArgumentParser(prog="submit.py compact")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--initiate", action="store_true", help="run the initiator")
    mode.add_argument("--worker", action="store_true", help="run one queue entry (--id)")
    mode.add_argument("--run-queue", action="store_true", help="run every claimable entry")
    mode.add_argument("--request", metavar="TABLE", help="queue a manual compaction")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--table-filter", default=None)
    p.add_argument("--id", type=int, default=None)
    p.add_argument("--partition", default=None)
    p.add_argument("--type", choices=("major", "minor"), default="major")
    p.add_argument("--run", action="store_true", help="with --request: run it now")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    catalog = _catalog()
    if args.initiate:
        report = run_initiator(catalog, table_filter=args.table_filter, dry_run=args.dry_run)
        for d in report.decisions:
            print(f"{d.table} {d.partition or '-'}: {d.action or 'skip'} ({d.reason})")
        print(queued_ids_json(report), flush=True)
        return 0
    if args.worker and args.id is None:
        print("--worker needs --id N", file=sys.stderr)
        return 2
    if args.request:
        info = request_compaction(catalog, args.request, args.partition, args.type)
        print(json.dumps({"id": info.id, "state": info.state}))
        if not args.run:
            return 0
        args.worker, args.id = True, info.id
    spark = get_spark("acidflow-compactor")
    if args.worker:
        out = worker.run_worker(spark, catalog, cq_id=args.id)
        if out is None:
            state = catalog.get_compaction(args.id).state
            print(json.dumps({"id": args.id, "state": state, "claimed": False}))
            return (
                0
                if state
                in (
                    CompactionState.READY_FOR_CLEANING,
                    CompactionState.SUCCEEDED,
                    CompactionState.WORKING,
                )
                else 1
            )
        # lineage: the table in, the table out, rows same
        if out.state == CompactionState.READY_FOR_CLEANING:
            tbl = lineage.table_dataset(
                catalog.catalog_id(), catalog.get_compaction(out.cq_id).table, changed=False
            )
            lineage.report_lineage("compact", [tbl], [tbl])
        print(json.dumps(out.to_dict(), default=str))
        return 0 if out.state == CompactionState.READY_FOR_CLEANING else 1
    outs = worker.run_queue(spark, catalog)
    print(json.dumps([o.to_dict() for o in outs], default=str))
    return 0 if all(o.state == CompactionState.READY_FOR_CLEANING for o in outs) else 1


def clean_main(argv: list[str]) -> int:
    """``clean`` subcommand: one cleaner pass; prints the JSON report. Returns the exit code."""
    p = argparse.ArgumentParser(prog="submit.py clean")
    try:
        p.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    report = run_cleaner(_catalog())
    print(json.dumps(report.to_dict()))
    return 1 if report.errors else 0


def main(argv: list[str]) -> int:
    """Fallback target: ``jobs/submit.py`` calls :func:`compact_main` / :func:`clean_main`
    (``<subcommand>_main``) directly; ``main(["clean", ...])`` / ``main(["compact", ...])``
    and ``main([...compact args...])`` work too."""
    if argv and argv[0] == "clean":
        return clean_main(argv[1:])
    if argv and argv[0] == "compact":
        return compact_main(argv[1:])
    return compact_main(argv)
