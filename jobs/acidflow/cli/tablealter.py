"""``acidflow table alter``: schema evolution with Hive's rules (``acidflow.tableops.schema``).

Registered into the ``table`` group by :func:`acidflow.cli.table.register`. Errors go up to
``acidflow.cli.app.main`` (one line naming the table, column, types and the reason; exit 1).
"""

from __future__ import annotations

from typing import Optional

import typer

from acidflow.cli.console import console, emit_json
from acidflow.cli.context import cli_context

ALTER_HELP = """Change a table's schema, one change per call, in one transaction whose write id
starts the new schema version (reads of older write ids keep the old names and types; the
commit record's operation is 'schema').

Metadata-only (no file is rewritten; old files are read by position, as Hive reads ACID
files): --rename-column OLD NEW, --change-type COL TYPE (Hive's widenings: tinyint < smallint <
int < bigint, float -> double, integers -> double or a wide-enough decimal, decimal precision
up with the scale kept, varchar(n) -> varchar(m>=n) or string, integers/date/varchar -> string;
narrowing and incompatible changes are refused, so is any type change of a bucketing column),
--comment COL TEXT, --add-column 'name type'.

Moving positions needs --rewrite (every partition gets a new base in the new layout, ROW__IDs
kept): --drop-column COL, --reorder a,b,c (every data column once). Partition columns cannot
change. Prints the new schema and the write id."""


def alter(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    rename_column: Optional[tuple[str, str]] = typer.Option(
        None, "--rename-column", help="OLD NEW"
    ),
    change_type: Optional[tuple[str, str]] = typer.Option(None, "--change-type", help="COL TYPE"),
    comment: Optional[tuple[str, str]] = typer.Option(
        None, "--comment", help="COL TEXT (empty TEXT removes it)"
    ),
    add_column: Optional[str] = typer.Option(None, "--add-column", help="'name type'"),
    drop_column: Optional[str] = typer.Option(
        None, "--drop-column", help="COL[,COL2] (needs --rewrite)"
    ),
    reorder: Optional[str] = typer.Option(None, "--reorder", help="a,b,c (needs --rewrite)"),
    rewrite: bool = typer.Option(False, "--rewrite", help="rewrite the data for a drop or reorder"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON line"),
) -> None:
    # deferred: a rewrite runs the engine (pyarrow, pyspark); --help needs none of it
    from acidflow.tableops.schema import SchemaChangeError, alter_table

    added = None
    if add_column is not None:
        parts = add_column.split(None, 1)
        if len(parts) != 2:
            raise SchemaChangeError(f"--add-column wants 'name type', got {add_column!r}")
        added = [{"name": parts[0], "type": parts[1]}]
    result = alter_table(
        cli_context(ctx).catalog(),
        table,
        rename_column=rename_column,
        change_type=change_type,
        comment=comment,
        add_columns=added,
        drop_columns=_names(drop_column) if drop_column is not None else None,
        reorder=_names(reorder) if reorder is not None else None,
        rewrite=rewrite,
    )
    info = {
        "table": result.table.name,
        "write_id": result.write_id,
        "txn_id": result.txn_id,
        "change": result.change.get("op"),
        "rows_rewritten": result.rows_rewritten,
        "columns": [c.to_dict() for c in result.table.columns],
        "partition_columns": [c.to_dict() for c in result.table.partition_columns],
    }
    if as_json:
        emit_json(info)
        return
    console.print(
        f"{info['table']}: {info['change']} committed at write id "
        f"{result.write_id} (transaction {result.txn_id})"
        + (f", {result.rows_rewritten} rows rewritten" if rewrite else "")
    )
    for c in result.table.columns:
        console.print(
            f"  {c.name} {c.hive_type}" + (f"  -- {c.comment}" if c.comment else ""),
            markup=False,
            highlight=False,
        )
    for c in result.table.partition_columns:
        console.print(f"  {c.name} {c.hive_type}  (partition)", markup=False, highlight=False)


def register_alter(table_app: typer.Typer) -> None:
    """Add ``alter`` to the ``table`` command group."""
    table_app.command(
        "alter", help="\n\n".join(" ".join(p.split()) for p in ALTER_HELP.split("\n\n"))
    )(alter)


def _names(text: str) -> list[str]:
    return [p.strip().lower() for p in text.split(",") if p.strip()]
