"""spark-submit subcommands ``cdc-upsert`` and ``ingest`` (see ``jobs/submit.py``:
``cdc_upsert_main`` and ``ingest_main``).

Each prints one JSON summary as its last stdout line (what an Airflow task pushes to XCom) and
returns 0; errors propagate (non-zero exit, message on stderr) with the transaction aborted.
"""
from __future__ import annotations

import argparse
import json
import sys


def _cdc_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="submit.py cdc-upsert",
                                description="Apply change files, one batch per file.")
    p.add_argument("--input", required=True, help="change file or directory")
    p.add_argument("--format", dest="fmt", default="wal2json",
                   choices=["wal2json", "debezium", "goldengate"])
    p.add_argument("--tables-config", default=None, help="YAML file or directory")
    p.add_argument("--auto-create", nargs="?", const="true", default="false", type=_flag,
                   help="register unknown tables (optionally =true/false, for templates)")
    p.add_argument("--target-db", default="default")
    p.add_argument("--num-buckets", type=int, default=4)
    p.add_argument("--schema-drift", default="add", choices=["add", "fail"])
    p.add_argument("--update-missing", default="insert", choices=["insert", "quarantine"])
    p.add_argument("--insert-existing", default="update", choices=["update", "quarantine"])
    p.add_argument("--delete-missing", default="count", choices=["count", "quarantine"])
    p.add_argument("--quarantine-threshold", type=float, default=0.01)
    p.add_argument("--table", action="append", default=None, help="only this source table")
    p.add_argument("--tables", default="", help="comma-separated source tables (templates)")
    return p


def _flag(text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("1", "true", "yes", "y", "on"):
        return True
    if t in ("0", "false", "no", "n", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def cdc_upsert_main(argv: list[str]) -> int:
    """``cdc-upsert``: :func:`acidflow.cdc.apply.apply_path` with the options of the CLI."""
    from acidflow.catalog import Catalog
    from acidflow.cdc.apply import apply_path
    from acidflow.cdc.apply import build_options
    from acidflow.spark import get_spark

    a = _cdc_parser().parse_args(argv)
    options = build_options(a.fmt, tables_config=a.tables_config, auto_create=a.auto_create,
                            target_db=a.target_db, num_buckets=a.num_buckets,
                            schema_drift=a.schema_drift, update_missing=a.update_missing,
                            insert_existing=a.insert_existing, delete_missing=a.delete_missing,
                            quarantine_threshold=a.quarantine_threshold,
                            tables=(a.table or []) + [t for t in a.tables.split(",") if t.strip()])
    reports = apply_path(get_spark("acidflow-cdc-upsert"), Catalog.from_settings(), a.input,
                         options)
    print(json.dumps({"batches": [r.__dict__ for r in reports]}, default=str))
    return 0


def ingest_main(argv: list[str]) -> int:
    """``ingest``: :func:`acidflow.ingest.ingest` for one table and data interval."""
    from acidflow.catalog import Catalog
    from acidflow.ingest import ingest as run
    from acidflow.spark import get_spark

    p = argparse.ArgumentParser(prog="submit.py ingest",
                                description="Load landing files of one data interval.")
    p.add_argument("--table", required=True)
    p.add_argument("--path", required=True, help="file, glob or directory")
    p.add_argument("--format", dest="fmt", required=True, choices=["csv", "jsonl", "parquet"])
    p.add_argument("--data-interval", required=True)
    p.add_argument("--mode", default="append", choices=["append", "overwrite"])
    p.add_argument("--partition", action="append", default=[], help="col=value (repeatable)")
    p.add_argument("--quarantine-threshold", type=float, default=0.01)
    p.add_argument("--tables-config", default=None,
                   help="YAML file/dir: create the table from it when it does not exist")
    a = p.parse_args(argv)
    partition = dict(kv.split("=", 1) for kv in a.partition) or None
    catalog = Catalog.from_settings()
    if a.tables_config and not catalog.table_exists(a.table):
        from acidflow.cdc.tables import find_table, load_tables_config

        tdef = find_table(load_tables_config(a.tables_config), a.table)
        if tdef is None:
            raise SystemExit(f"table {a.table} is neither in the catalog nor in {a.tables_config}")
        catalog.create_table(tdef, if_not_exists=True)
    report = run(get_spark("acidflow-ingest"), catalog, a.table, a.path, a.fmt,
                 a.data_interval, mode=a.mode, partition=partition,
                 quarantine_threshold=a.quarantine_threshold)
    print(json.dumps(report.__dict__, default=str))
    return 0


def main(argv: list[str]) -> int:
    """``python -m acidflow.cdc.entry {cdc-upsert|ingest} ...`` (``jobs/submit.py`` calls the
    ``<subcommand>_main`` functions directly)."""
    return {"cdc-upsert": cdc_upsert_main, "ingest": ingest_main}[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
