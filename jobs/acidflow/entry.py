"""The one ``spark-submit`` entry point: ``spark-submit jobs/submit.py <subcommand> [args...]``
(``jobs/submit.py`` calls :func:`main`; ``python -m acidflow.entry`` does the same).

Airflow's ``SparkSubmitOperator`` runs ``jobs/submit.py`` as its ``application`` with
``application_args=[<subcommand>, ...]`` and the ``acidflow`` package shipped as a zip in
``py_files``. Every subcommand is a function ``<name>_main(argv: list[str]) -> int`` (the process
exit code) in the module that owns its logic. The job modules are imported here at the top: they
keep pyspark and Great Expectations deferred until a job runs, so importing all of them costs
about 0.2 s more than importing one (measured), against 13-15 s for a ``spark-submit``.

Subcommands (function that implements each):
    cdc-upsert   acidflow.cdc.entry.cdc_upsert_main
    ingest       acidflow.ingest.entry.ingest_main
    compact      acidflow.compactor.entry.compact_main
    clean        acidflow.compactor.entry.clean_main
    validate     acidflow.validation.validate_main
"""

from __future__ import annotations

import sys
from typing import Callable

from acidflow import validation
from acidflow.cdc import entry as cdc_entry
from acidflow.compactor import entry as compactor_entry
from acidflow.ingest import entry as ingest_entry

#: subcommand -> ``main(argv) -> exit code``
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "cdc-upsert": cdc_entry.cdc_upsert_main,
    "ingest": ingest_entry.ingest_main,
    "compact": compactor_entry.compact_main,
    "clean": compactor_entry.clean_main,
    "validate": validation.validate_main,
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` to its subcommand's function with ``argv[1:]``; returns the exit code.

    Args:
        argv: ``[subcommand, *args]``; default ``sys.argv[1:]``.
    Returns:
        0 success (or ``--help``), 1 job error, 2 usage error (unknown or missing subcommand).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        known = ", ".join(sorted(SUBCOMMANDS))
        what = (
            f"unknown subcommand {argv[0]!r}; " if argv and argv[0] not in ("-h", "--help") else ""
        )
        print(f"usage: submit.py SUBCOMMAND [ARGS...]\n{what}subcommands: {known}", file=sys.stderr)
        return 2 if what or not argv else 0
    return int(SUBCOMMANDS[argv[0]](argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
