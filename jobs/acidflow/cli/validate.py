"""``acidflow validate TABLE...``: expectation suites on snapshots plus ACID invariants.

``acidflow.cli.app`` calls :func:`register` with its top-level app; the job is
``acidflow.validation``::

    acidflow validate pgbench.pgbench_accounts pgbench.pgbench_history
    acidflow validate --suite-dir include/expectations --json db.t

Runs in this process (pyarrow read, GX pandas engine) unless ``--spark``. Exit status: 0 when
every table passes, 1 when one fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from acidflow.cli.console import console, emit_json
from acidflow.cli.context import cli_context
from acidflow.spark import get_spark


def validate_cmd(
    ctx: typer.Context,
    tables: List[str] = typer.Argument(..., help="<db>.<table> ..."),
    suite_dir: Optional[Path] = typer.Option(
        None,
        "--suite-dir",
        help="suites directory (default include/expectations or ACIDFLOW_SUITE_DIR)",
    ),
    spark: bool = typer.Option(False, "--spark", help="run the suites in Spark"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary"),
) -> None:
    """Validate committed tables: their GX suite (include/expectations/<db>.<table>.json)
    on the snapshot, fsck, and the ACID invariants (sorted events, events in the right
    bucket file, key index). Reports go to <warehouse>/_quality/<table>/<run id>/."""
    # deferred: validation imports the readers, the compactor's fsck and the quality suites
    from acidflow.validation import run

    session = None
    if spark:
        session = get_spark("acidflow-validate")
    summary = run(
        list(tables),
        suite_dir=str(suite_dir) if suite_dir else None,
        spark=session,
        catalog=cli_context(ctx).catalog(),
    )
    if as_json:
        emit_json(summary)
    else:
        t = Table("table", "result", "expectations", "failed", "invariant errors", "report")
        for s in summary["tables"]:
            if "error" in s:
                t.add_row(s["table"], "[red]error[/]", "-", s["error"], "-", "-")
                continue
            t.add_row(
                s["table"],
                "[green]passed[/]" if s["success"] else "[red]FAILED[/]",
                str(s["expectations"]) if s["suite"] else "no suite",
                "\n".join(s["failed_expectations"]) or "-",
                "\n".join(s["invariant_errors"]) or "-",
                s["report"],
            )
        console.print(t)
    if not summary["success"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``validate`` command to ``app``."""
    app.command("validate")(validate_cmd)
