"""``acidflow reconcile``: compare acidflow tables with their PostgreSQL source (Typer + Rich).

``acidflow.cli.app`` calls :func:`register` with its top-level app. This command picks the source
(``acidflow.sources.postgres``: ``PostgresSource`` for ``--dsn``, ``SavedSource`` for
``--source-dir``) and hands it to ``acidflow.quality.reconcile.reconcile``:

    acidflow reconcile --dsn postgresql://u@h/pgbench pgbench.pgbench_accounts
    acidflow reconcile --source-dir include/sample_data/pgbench          # every table it holds
    acidflow reconcile --dsn URL 'pgbench.accounts=public.pgbench_accounts'

Exit status: 0 when every table matches, 1 when one differs, 2 on errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, cast

import typer
from rich.table import Table

from acidflow.catalog.errors import NoSuchTableError
from acidflow.cli.console import console, emit_json_lines, err
from acidflow.cli.context import cli_context
from acidflow.sources.postgres.connection import PullError, connect
from acidflow.sources.postgres.snapshot import PostgresSource, SavedSource, list_tables
from acidflow.spark import get_spark

if TYPE_CHECKING:
    from acidflow.quality.reconcile import ReconcileSource


def _pairs(
    tables: list[str],
    *,
    dsn: Optional[str],
    source_dir: Optional[Path],
    db: Optional[str],
    schema: str,
    catalog: Any,
) -> list[tuple[str, str]]:
    """(acidflow table, source table) pairs from the arguments or, when none, from the source."""
    # deferred: acidflow.quality imports the readers (pyarrow); --help needs none of it
    from acidflow.quality.reconcile import acidflow_table_for, source_table_for

    if tables:
        out = []
        for t in tables:
            left, sep, right = t.partition("=")
            if sep and not right:
                raise typer.BadParameter(f"{t!r}: expected TABLE or TABLE=SCHEMA.SOURCE_TABLE")
            if "." not in left:
                if not db:
                    raise typer.BadParameter(
                        f"{left!r}: name the table as <db>.<table> or pass --db"
                    )
                left = f"{db}.{left}"
            out.append((left.lower(), right or source_table_for(left, schema)))
        return out
    if source_dir is not None:
        manifest = source_dir / "manifest.json"
        if not manifest.is_file():
            raise typer.BadParameter(f"no manifest.json in {source_dir}: name the tables")
        m = json.loads(manifest.read_text())
        out = []
        for t in m.get("tables", []):
            target = (
                acidflow_table_for(t["name"], db)
                if db
                else t.get("acidflow_table") or acidflow_table_for(t["name"], m["database"])
            )
            out.append((target, t["name"]))
        return out
    assert dsn is not None  # the command checked that exactly one of dsn / source_dir is given
    conn = connect(dsn)
    try:
        dbname = db or conn.get_dsn_parameters().get("dbname")
        names = list_tables(conn, schema)
    finally:
        conn.close()
    out = []
    for n in names:
        target = acidflow_table_for(n, dbname)
        if catalog.table_exists(target):
            out.append((target, n))
        else:
            err.print(f"[dim]skipping {n}: no acidflow table {target}[/]")
    return out


def reconcile_command(
    ctx: typer.Context,
    tables: Optional[List[str]] = typer.Argument(
        None,
        help="acidflow tables (<db>.<table>, source <schema>.<table>), or "
        "<db>.<table>=<schema>.<source_table>; default: every source table",
    ),
    dsn: Optional[str] = typer.Option(None, "--dsn", help="PostgreSQL URL of the source database"),
    source_dir: Optional[Path] = typer.Option(
        None,
        "--source-dir",
        help="saved source contents: CSV.gz from COPY ... WITH CSV HEADER "
        "(+ manifest.json with types and keys)",
    ),
    db: Optional[str] = typer.Option(
        None, "--db", help="acidflow database of the tables (default: the source database's name)"
    ),
    schema: str = typer.Option("public", "--schema", help="PostgreSQL schema of the source tables"),
    max_keys: int = typer.Option(10, "--max-keys", min=0, help="differing keys to show"),
    use_spark: bool = typer.Option(False, "--spark", help="read and hash the tables in Spark"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per table"),
) -> None:
    """Compare acidflow tables with their PostgreSQL source: row counts and an
    order-independent checksum of type-normalised rows; on a difference, the first differing
    keys on each side."""
    if (dsn is None) == (source_dir is None):
        raise typer.BadParameter("give exactly one of --dsn and --source-dir")
    # deferred: acidflow.quality imports the readers (pyarrow); --help needs none of it
    from acidflow.quality.reconcile import ReconcileError, reconcile

    catalog = cli_context(ctx).catalog()
    spark = None
    if use_spark:
        spark = get_spark("acidflow-reconcile")
    failed = mismatched = 0
    results = []
    try:
        pairs = _pairs(
            tables or [], dsn=dsn, source_dir=source_dir, db=db, schema=schema, catalog=catalog
        )
    except PullError as exc:
        err.print(f"[red]reconcile failed:[/] {exc}")
        raise typer.Exit(2)
    if not pairs:
        err.print("[red]nothing to reconcile[/]")
        raise typer.Exit(2)
    for target, src_name in pairs:
        try:
            source: ReconcileSource = (
                PostgresSource(dsn, src_name)
                if dsn
                # no dsn: the command checked --source-dir is given
                else SavedSource.from_dir(cast(Path, source_dir), src_name)
            )
            r = reconcile(spark, catalog, target, source, max_keys=max_keys)
        except (ReconcileError, NoSuchTableError, PullError, LookupError) as exc:
            failed += 1
            err.print(f"[red]{target}:[/] {exc}")
            continue
        results.append(r)
        mismatched += not r.matches
    if as_json:
        emit_json_lines(r.to_json() for r in results)
    else:
        t = Table(
            "table",
            "source",
            "source rows",
            "table rows",
            "source checksum",
            "table checksum",
            "status",
        )
        for r in results:
            t.add_row(
                r.table,
                r.source,
                str(r.source_rows),
                str(r.table_rows),
                f"{r.source_checksum:016x}",
                f"{r.table_checksum:016x}",
                "[green]match[/]" if r.matches else "[red]DIFFERENT[/]",
            )
        console.print(t)
        for r in results:
            if r.matches:
                continue
            console.print(
                f"[bold]{r.table}[/]: {r.differing_keys} differing keys "
                f"(by {', '.join(r.key_columns) or 'whole row'}); first "
                f"{len(r.first_differing_keys)}:"
            )
            for k in r.first_differing_keys:
                j = k.to_json()
                console.print(
                    f"  {json.dumps(j['key'])}  {k.kind}  source {k.source_rows} "
                    f"row(s) {json.dumps(j['source_values'])}  table {k.table_rows} "
                    f"row(s) {json.dumps(j['table_values'])}",
                    markup=False,
                )
    if failed:
        raise typer.Exit(2)
    if mismatched:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``reconcile`` to the top-level ``acidflow`` Typer app."""
    app.command("reconcile")(reconcile_command)
