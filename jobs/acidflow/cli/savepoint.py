"""``acidflow savepoint create|list|delete`` (``acidflow.tableops.savepoint``): named states of
a table that the cleaner keeps past history retention, for ``acidflow restore --to-savepoint``
and time travel (Hudi CLI ``savepoint create / show / delete``, Iceberg's tags).

``acidflow.cli.app`` calls :func:`register` with its top-level app. Refusals (a write id
outside retention, a taken name, an unknown savepoint) go up to ``acidflow.cli.app.main`` as
one line, exit 1.
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from acidflow.catalog.records import SavepointInfo
from acidflow.cli.console import console, emit_json, emit_json_lines
from acidflow.cli.context import cli_context

CREATE_HELP = """Pin the state of TABLE as of write id W (default: its latest committed write
id) under NAME (default sp-w<W>-<UTC time>): the cleaner keeps every directory that state reads
and the commit records from W on, so 'acidflow cat TABLE --as-of W' and 'acidflow restore TABLE
--to-savepoint NAME' work past history retention. Refused for a write id outside retention
(the message names the retained range) or not committed. --json prints the savepoint as a
JSON line (table, name, write_id, valid_write_ids, created_at, created_by)."""

LIST_HELP = """The savepoints of TABLE in write-id order: name, write id, creation time (UTC),
who made it and the snapshot it pins (its ValidWriteIdList). --json prints JSON lines."""

DELETE_HELP = """Delete savepoint NAME of TABLE: the next 'acidflow clean' removes the
directories only it kept. --json prints the deleted savepoint as a JSON line."""


def _print_one(verb: str, sp: SavepointInfo, as_json: bool) -> None:
    if as_json:
        emit_json(sp.to_dict())
        return
    console.print(
        f"{verb} savepoint {sp.name} of {sp.table} at write id {sp.write_id} "
        f"(snapshot {sp.valid_write_ids})",
        markup=False,
        highlight=False,
    )


def create(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    write_id: Optional[int] = typer.Option(
        None, "--write-id", help="W: a committed write id (default: the latest)"
    ),
    name: Optional[str] = typer.Option(None, "--name", help="savepoint name (unique per table)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    # deferred: the savepoint rules import the readers (pyarrow); --help needs none of it
    from acidflow.tableops import savepoint as savepoints

    sp = savepoints.create_savepoint(
        cli_context(ctx).catalog(), table, write_id=write_id, name=name
    )
    _print_one("created", sp, as_json)


def list_cmd(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    as_json: bool = typer.Option(False, "--json", help="JSON lines, one per savepoint"),
) -> None:
    # deferred: the savepoint rules import the readers (pyarrow); --help needs none of it
    from acidflow.tableops import savepoint as savepoints

    found = savepoints.list_savepoints(cli_context(ctx).catalog(), table)
    if as_json:
        emit_json_lines(sp.to_dict() for sp in found)
        return
    t = Table("name", "write id", "created at (UTC)", "created by", "pins", title=table)
    for sp in found:
        t.add_row(
            sp.name,
            str(sp.write_id),
            sp.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            sp.created_by or "-",
            sp.valid_write_ids,
        )
    console.print(t)


def delete(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    name: str = typer.Argument(..., help="savepoint name"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    # deferred: the savepoint rules import the readers (pyarrow); --help needs none of it
    from acidflow.tableops import savepoint as savepoints

    sp = savepoints.delete_savepoint(cli_context(ctx).catalog(), table, name)
    _print_one("deleted", sp, as_json)


def register(app: typer.Typer) -> None:
    """Add the ``savepoint`` command group (create, list, delete) to ``app``."""
    sp_app = typer.Typer(
        help="Savepoints: named table states kept past history retention.", no_args_is_help=True
    )
    app.add_typer(sp_app, name="savepoint")
    sp_app.command("create", help=CREATE_HELP)(create)
    sp_app.command("list", help=LIST_HELP)(list_cmd)
    sp_app.command("delete", help=DELETE_HELP)(delete)
