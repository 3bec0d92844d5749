"""spark-submit subcommand ``ingest`` (see ``jobs/submit.py`` and ``acidflow.entry``:
``ingest_main``).

Prints one JSON summary as its last stdout line (what an Airflow task pushes to XCom) and
returns 0; errors propagate (non-zero exit, message on stderr) with the transaction aborted.
"""

from __future__ import annotations

import argparse
import json
import sys

from acidflow import lineage
from acidflow.catalog import Catalog
from acidflow.ingest.job import ingest
from acidflow.spark import get_spark
from acidflow.tables_config import find_table, load_tables_config


def ingest_main(argv: list[str]) -> int:
    """``ingest``: :func:`acidflow.ingest.ingest` for one table and data interval."""
    p = argparse.ArgumentParser(
        prog="submit.py ingest", description="Load landing files of one data interval."
    )
    p.add_argument("--table", required=True)
    p.add_argument("--path", required=True, help="file, glob or directory")
    p.add_argument("--input-format", dest="fmt", required=True, choices=["csv", "jsonl", "parquet"])
    p.add_argument("--data-interval", required=True)
    p.add_argument(
        "--mode",
        default="append",
        choices=["append", "overwrite", "upsert"],
        help="append refuses primary keys already in the table; upsert updates them",
    )
    p.add_argument("--upsert", action="store_true", help="same as --mode upsert")
    p.add_argument("--partition", action="append", default=[], help="col=value (repeatable)")
    p.add_argument("--quarantine-threshold", type=float, default=0.01)
    p.add_argument(
        "--tables-config",
        default=None,
        help="YAML file/dir: create the table from it when it does not exist",
    )
    a = p.parse_args(argv)
    if a.upsert:
        if a.mode not in ("append", "upsert"):
            p.error(f"--upsert does not combine with --mode {a.mode}")
        a.mode = "upsert"
    partition = dict(kv.split("=", 1) for kv in a.partition) or None
    catalog = Catalog.from_settings()
    if a.tables_config and not catalog.table_exists(a.table):
        tdef = find_table(load_tables_config(a.tables_config), a.table)
        if tdef is None:
            raise SystemExit(f"table {a.table} is neither in the catalog nor in {a.tables_config}")
        catalog.create_table(tdef, if_not_exists=True)
    report = ingest(
        get_spark("acidflow-ingest"),
        catalog,
        a.table,
        a.path,
        a.fmt,
        a.data_interval,
        mode=a.mode,
        partition=partition,
        quarantine_threshold=a.quarantine_threshold,
    )
    lineage.report_lineage(  # for the Airflow operator (acidflow.lineage): files -> table
        "ingest",
        [lineage.file_dataset(str(f["path"])) for f in report.files if "path" in f],
        [
            lineage.table_dataset(
                catalog.catalog_id(), report.table, changed=report.status == "applied"
            )
        ],
    )
    print(json.dumps(report.__dict__, default=str))
    return 0


def main(argv: list[str]) -> int:
    """``python -m acidflow.ingest.entry [ingest] ...``."""
    if argv and argv[0] == "ingest":
        argv = argv[1:]
    return ingest_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
