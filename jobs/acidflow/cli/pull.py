"""``acidflow cdc pull``: land the changes of a wal2json replication slot (Typer + Rich).

The ``cdc`` sub-app lives in ``acidflow.cli.app``; it calls :func:`register` to add this command
(the pull itself is ``acidflow.sources.postgres.pull.pull``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from acidflow.cli.console import console, emit_json_lines, err
from acidflow.sources.postgres.lsn import format_lsn
from acidflow.sources.postgres.pull import PullError, pull


def pull_command(
    dsn: str = typer.Option(
        ...,
        "--dsn",
        envvar="ACIDFLOW_CDC_DSN",
        help="PostgreSQL URL of the slot's database, e.g. postgresql://user@host:5432/db",
    ),
    slot: str = typer.Option(..., "--slot", help="logical replication slot (plugin wal2json)"),
    landing: Path = typer.Option(..., "--landing", help="landing directory for the files"),
    create_slot: bool = typer.Option(
        False, "--create-slot", help="create the slot if it does not exist"
    ),
    max_changes: int = typer.Option(
        50_000,
        "--max-changes",
        min=1,
        help="wal2json rows per file (a transaction is never split, so a file can hold more)",
    ),
    max_files: Optional[int] = typer.Option(
        None, "--max-files", min=1, help="stop after this many files"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the files as JSON lines"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log each step"),
) -> None:
    """Pull changes from a wal2json logical replication slot into gzip landing files
    (wal2json format-version 2 JSON lines, whole transactions, named by LSN range), advancing
    the slot only after each file is durably on disk."""
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        files = pull(
            dsn,
            slot,
            landing,
            max_changes_per_file=max_changes,
            create_slot=create_slot,
            max_files=max_files,
        )
    except PullError as exc:
        err.print(f"[red]cdc pull failed:[/] {exc}")
        raise typer.Exit(2)
    if as_json:
        emit_json_lines(
            {
                "file": str(f.path),
                "first_lsn": format_lsn(f.first_lsn),
                "last_lsn": format_lsn(f.last_lsn),
                "transactions": f.transactions,
                "changes": f.changes,
                "bytes": f.bytes,
            }
            for f in files
        )
        return
    if not files:
        console.print(f"slot {slot}: nothing to pull")
        return
    t = Table("file", "LSN range", "transactions", "changes", "bytes")
    for f in files:
        t.add_row(f.path.name, f.lsn_range, str(f.transactions), str(f.changes), str(f.bytes))
    console.print(t)
    console.print(
        f"{len(files)} files, {sum(f.changes for f in files)} changes; "
        f"slot {slot} advanced to {format_lsn(files[-1].last_lsn)}"
    )


def register(cdc_app: typer.Typer) -> None:
    """Add ``pull`` to the ``cdc`` Typer sub-app."""
    cdc_app.command("pull")(pull_command)
