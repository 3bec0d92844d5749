"""``acidflow restore TABLE --to-write-id W | --to-savepoint NAME`` and ``acidflow rollback TABLE``
(``acidflow.tableops.restore``): one new transaction that makes the table equal to an earlier
snapshot, run in this process with pyarrow (no JVM).

``acidflow.cli.app`` calls :func:`register` with its top-level app.
Refusals (unknown write id, outside retention, history cleaned) go up to
``acidflow.cli.app.main`` as one line, exit 1; "nothing to do" prints and exits 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from acidflow.cli.console import console, emit_json
from acidflow.cli.context import cli_context

if TYPE_CHECKING:
    from acidflow.tableops.restore import RestoreResult

RESTORE_HELP = """Make TABLE equal to its snapshot at write id W (what 'acidflow cat TABLE
--as-of W' shows) in one new transaction: delete events for the row versions visible now but
not at W, the rows of W inserted again, or a new base per partition when more than half its
rows change. The commit is recorded as 'restore' with restored_to_write_id=W; time travel to
the write ids before it still works. Refused when W was never allocated, was aborted, is not
committed, or lies outside history retention (acidflow.history.retain.commits / .hours, see
'acidflow describe TABLE') and no savepoint pins it. --to-savepoint NAME restores to the write id
of savepoint NAME ('acidflow savepoint list TABLE'), however old. Nothing is committed when TABLE
already equals W."""

ROLLBACK_HELP = """Undo TABLE's latest commit that changed data: a restore to the committed
write id before it, recorded as 'rollback'. A rollback of a rollback brings the undone rows
back."""


def _print(result: RestoreResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
    else:
        console.print(result.summary(), markup=False, highlight=False)


def restore(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    to_write_id: Optional[int] = typer.Option(None, "--to-write-id", help="W: committed write id"),
    to_savepoint: Optional[str] = typer.Option(
        None, "--to-savepoint", help="the write id of this savepoint ('acidflow savepoint')"
    ),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    # deferred: restore imports the engine and the readers (pyarrow, pyspark)
    from acidflow.tableops.restore import restore as restore_table
    from acidflow.tableops.savepoint import savepoint_write_id

    catalog = cli_context(ctx).catalog()
    if to_savepoint is not None and to_write_id is None:
        w = savepoint_write_id(catalog, table, to_savepoint)
    elif to_write_id is not None and to_savepoint is None:
        w = to_write_id
    else:
        raise typer.BadParameter("give exactly one of --to-write-id and --to-savepoint")
    _print(restore_table(catalog, table, w), as_json)


def rollback(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    # deferred: rollback imports the engine and the readers (pyarrow, pyspark)
    from acidflow.tableops.restore import rollback as rollback_table

    _print(rollback_table(cli_context(ctx).catalog(), table), as_json)


def register(app: typer.Typer) -> None:
    """Add ``restore`` and ``rollback`` to ``app``."""
    app.command("restore", help=RESTORE_HELP)(restore)
    app.command("rollback", help=ROLLBACK_HELP)(rollback)
