"""The one ``spark-submit`` entry point: ``spark-submit jobs/submit.py <subcommand> [args...]``
(``jobs/submit.py`` calls :func:`main`; ``python -m acidflow.entry`` does the same).

Airflow's ``SparkSubmitOperator`` runs ``jobs/submit.py`` as its ``application`` with
``application_args=[<subcommand>, ...]`` and the ``acidflow`` package shipped as a zip in
``py_files``.
Each subcommand lives in the module that owns its logic and is imported only when chosen, so
starting one job does not import the others. Every subcommand module exposes
``main(argv: list[str]) -> int`` (the process exit code).

Subcommands (module that implements each):
    cdc-upsert           acidflow.cdc.entry
    ingest               acidflow.ingest.entry
    compact, clean       acidflow.compactor.entry
    validate             acidflow.validation
"""
from __future__ import annotations

import importlib
import sys

#: subcommand -> module exposing ``main(argv) -> int``
SUBCOMMANDS: dict[str, str] = {
    "cdc-upsert": "acidflow.cdc.entry",
    "ingest": "acidflow.ingest.entry",
    "compact": "acidflow.compactor.entry",
    "clean": "acidflow.compactor.entry",
    "validate": "acidflow.validation",
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` to its module's ``main(argv[1:])``; returns the exit code.

    Exit codes: 0 success, 1 job error, 2 usage error (unknown or missing subcommand).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        known = ", ".join(sorted(SUBCOMMANDS))
        what = f"unknown subcommand {argv[0]!r}; " if argv and argv[0] not in ("-h", "--help") else ""
        print(f"usage: submit.py SUBCOMMAND [ARGS...]\n{what}subcommands: {known}",
              file=sys.stderr)
        return 2 if what or not argv else 0
    module = importlib.import_module(SUBCOMMANDS[argv[0]])
    # a module serving several subcommands may name a function per subcommand
    fn = getattr(module, argv[0].replace("-", "_") + "_main", None) or module.main
    return int(fn(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
