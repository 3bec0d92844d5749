"""The validate job: spark-submit subcommand ``validate`` (``jobs/submit.py`` calls
:func:`validate_main`) and ``acidflow validate``.

    spark-submit jobs/submit.py validate --table pgbench.pgbench_accounts [--table T2]
        [--suite-dir include/expectations] [--engine spark|pandas]

Validates each table after commit (:func:`validate`: its GX suite on the snapshot, the
compactor's fsck and the ACID invariants), prints one JSON summary as its last stdout line
(``{"success": bool, "tables": [summary per table]}``, what an Airflow task pushes to XCom) and
returns 1 when any table fails, 0 otherwise.

This job wires the checks together: ``acidflow.quality`` (suites, invariants) does not import
the compactor, whose ``fsck`` reports in its ``Finding`` shape.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from acidflow.catalog import Catalog
from acidflow.compactor.fsck import fsck_table
from acidflow.quality import validate as quality_validate
from acidflow.quality.validate import ValidationReport
from acidflow.spark import get_spark
from acidflow.tables_config import load_tables_config

#: the checks every validation runs besides the suite and the ACID invariants
CHECKS = (fsck_table,)


def validate(
    spark: Any, catalog: Any, table_name: str, *, suite_dir: str | None = None
) -> ValidationReport:
    """Validate one committed table: its GX suite on the snapshot, fsck, the ACID invariants
    (:func:`acidflow.quality.validate.validate` with :data:`CHECKS`).

    Returns:
        the :class:`acidflow.quality.validate.ValidationReport` (written to its ``report_path``).
    Raises:
        NoSuchTableError; acidflow.quality.gx.SuiteError for a broken suite file.
    """
    return quality_validate.validate(spark, catalog, table_name, suite_dir=suite_dir, checks=CHECKS)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="submit.py validate", description="GX suites on table snapshots plus ACID invariants."
    )
    p.add_argument("--table", action="append", default=[], help="<db>.<table> (repeatable)")
    p.add_argument(
        "--db", action="append", default=[], help="every table of this database (repeatable)"
    )
    p.add_argument(
        "--tables-config", default=None, help="every table named in this YAML file/dir that exists"
    )
    p.add_argument(
        "--suite-dir",
        default=None,
        help="directory of <db>.<table>.json suites (default include/expectations "
        "or ACIDFLOW_SUITE_DIR)",
    )
    p.add_argument(
        "--engine",
        default="spark",
        choices=["spark", "pandas"],
        help="run the suite in Spark (default) or on a pyarrow read in the driver",
    )
    return p


def run(
    tables: list[str], *, suite_dir: str | None, spark: Any = None, catalog: Any = None
) -> dict[str, Any]:
    """Validate ``tables``; returns ``{"success": bool, "tables": [ValidationReport.summary()]}``.

    A table that cannot be validated (no such table, broken suite) counts as failed with its
    error in ``error``.
    """
    catalog = catalog or Catalog.from_settings()
    out = []
    for name in tables:
        try:
            out.append(validate(spark, catalog, name, suite_dir=suite_dir).summary())
        except Exception as exc:  # noqa: BLE001 - report every table, fail at the end
            out.append({"table": name, "success": False, "error": f"{type(exc).__name__}: {exc}"})
    return {"success": all(t["success"] for t in out), "tables": out}


def resolve_tables(
    tables: list[str], dbs: list[str], tables_config: str | None, catalog: Any = None
) -> list[str]:
    """``tables`` plus every table of ``dbs`` plus every table of ``tables_config`` that exists,
    in order, without duplicates."""
    names = list(tables)
    if dbs or tables_config:
        catalog = catalog or Catalog.from_settings()
        for db in dbs:
            names += [t.name for t in catalog.list_tables(db)]
        if tables_config:
            names += [
                t.name
                for t in load_tables_config(tables_config).values()
                if catalog.table_exists(t.name)
            ]
    return list(dict.fromkeys(n.lower() for n in names))


def validate_main(argv: list[str]) -> int:
    """``validate``: see module doc. Exit code 0 all passed, 1 anything failed."""
    p = _parser()
    a = p.parse_args(argv)
    if not (a.table or a.db or a.tables_config):
        p.error("name tables with --table, --db or --tables-config")
    spark = None
    if a.engine == "spark":
        spark = get_spark("acidflow-validate")
    summary = run(
        resolve_tables(a.table, a.db, a.tables_config), suite_dir=a.suite_dir, spark=spark
    )
    print(json.dumps(summary, default=str))
    return 0 if summary["success"] else 1


def main(argv: list[str]) -> int:
    """``python -m acidflow.validation [validate] ...``."""
    if argv and argv[0] == "validate":
        argv = argv[1:]
    return validate_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
