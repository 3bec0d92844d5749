"""The one ``spark-submit`` entry point: ``spark-submit jobs/submit.py <subcommand> [args...]``
(``jobs/submit.py`` calls :func:`main`; ``python -m acidflow.entry`` does the same).

Airflow's ``SparkSubmitOperator`` runs ``jobs/submit.py`` as its ``application`` with
``application_args=[<subcommand>, ...]`` and the ``acidflow`` package shipped as a zip in
``py_files``. Every subcommand is a function ``<name>_main(argv: list[str]) -> int`` (the process
exit code) in the module that owns its logic. The job modules are imported here at the top: they
keep pyspark and Great Expectations deferred until a job runs, so importing all of them costs
about 0.2 s more than importing one (measured), against 13-15 s for a ``spark-submit``.

``submit.py --remote sc://host:port <subcommand> ...`` (or ``$SPARK_REMOTE``) runs the job on a
Spark Connect server instead of the local JVM (:func:`acidflow.spark.get_spark`).

Subcommands (function that implements each):
    cdc-upsert   acidflow.cdc.entry.cdc_upsert_main
    ingest       acidflow.ingest.entry.ingest_main
    compact      acidflow.compactor.entry.compact_main
    clean        acidflow.compactor.entry.clean_main
    validate     acidflow.validation.validate_main
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from acidflow import validation
from acidflow.cdc import entry as cdc_entry
from acidflow.compactor import entry as compactor_entry
from acidflow.ingest import entry as ingest_entry
from acidflow.sparkmode import REMOTE_ENV

#: the global option naming a Spark Connect server (before the subcommand)
REMOTE_OPTION = "--remote"

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
        argv: ``[--remote URL] [subcommand, *args]``; default ``sys.argv[1:]``. ``--remote
            sc://host:port`` (or ``--remote=...``) sets ``$SPARK_REMOTE`` for the job: its
            session is a Spark Connect one on that server.
    Returns:
        0 success (or ``--help``), 1 job error, 2 usage error (unknown or missing subcommand,
        ``--remote`` without a URL).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith(REMOTE_OPTION + "="):
        argv = [REMOTE_OPTION, argv[0].split("=", 1)[1], *argv[1:]]
    if argv and argv[0] == REMOTE_OPTION:
        if len(argv) < 2 or not argv[1]:
            print(
                f"usage: submit.py {REMOTE_OPTION} sc://HOST:PORT SUBCOMMAND ...", file=sys.stderr
            )
            return 2
        os.environ[REMOTE_ENV] = argv[1]
        argv = argv[2:]
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        known = ", ".join(sorted(SUBCOMMANDS))
        what = (
            f"unknown subcommand {argv[0]!r}; " if argv and argv[0] not in ("-h", "--help") else ""
        )
        print(
            f"usage: submit.py [--remote sc://HOST:PORT] SUBCOMMAND [ARGS...]\n{what}subcommands: {known}",
            file=sys.stderr,
        )
        return 2 if what or not argv else 0
    return int(SUBCOMMANDS[argv[0]](argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
