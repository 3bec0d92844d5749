"""The demo commands: ``acidflow demo`` (the CDC pgbench demo, what ``make demo`` runs) and
``acidflow engine-demo``. Thin: the demos themselves live in :mod:`acidflow.demo`; these
functions run them and print what they did."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from acidflow.catalog import Catalog
from acidflow.cli import cdc as cdc_cli
from acidflow.cli.console import console, err
from acidflow.cli.context import cli_context
from acidflow.cli.timeline import timeline_table

if TYPE_CHECKING:
    from acidflow.demo.pgbench import DemoSummary


def print_summary(s: DemoSummary) -> None:
    """Print the CDC demo's batches, DAG steps, compactions, per-table reconciliation and
    history lines, and the totals."""
    cdc_cli.print_reports(s.batches)
    for step in s.steps:
        console.print(
            f"DAG {step['dag_id']}: {'success' if step['ok'] else 'FAILED'} "
            f"({step['seconds']:.0f} s)"
        )
    if s.compactions:
        ct = Table("id", "table", "type", "state", "highest write id", title="compactions")
        for c in s.compactions:
            ct.add_row(str(c.id), c.table, c.type, c.state, str(c.highest_write_id or ""))
        console.print(ct)
    t = Table(
        "table",
        "rows",
        "source rows",
        "high watermark",
        "base",
        "deltas",
        "delete deltas",
        "reconciled",
        title="pgbench tables",
    )
    for name, st in s.tables.items():
        t.add_row(
            name,
            str(st["rows"]),
            str(st["source_rows"]),
            str(st["high_watermark"]),
            st["base"] or "-",
            str(st["deltas"]),
            str(st["delete_deltas"]),
            "[green]exact[/]"
            if st["matches"]
            else f"[red]{st['differing_keys']} keys differ[/] {st['first_differing_keys']}",
        )
    console.print(t)
    for line in s.history:  # restore and rollback of one table
        console.print(line, markup=False, highlight=False)
    applied = sum(1 for b in s.batches if b.status in ("applied", "empty"))
    skipped = sum(1 for b in s.batches if b.status == "skipped")
    quarantined = sum(b.quarantined for b in s.batches if b.status != "skipped")
    console.print(
        f"batches: {applied} applied, {skipped} skipped (already applied), "
        f"{quarantined} records quarantined; {s.seconds:.1f} s"
    )


def show_timeline_and_incremental(
    catalog: Catalog, table: str | None = None, limit: int = 10
) -> bool:
    """Print the timeline of ``table`` (newest ``limit`` entries) and the demo's incremental
    check (:func:`acidflow.demo.timeline.incremental_check`); returns False when the check
    found a difference."""
    # deferred: the timeline reads the table (pyarrow); --help needs none of it
    from acidflow.demo.timeline import DEMO_TABLE, describe, incremental_check
    from acidflow.tableops.timeline import timeline

    table = table or DEMO_TABLE
    console.print(
        timeline_table(
            timeline(catalog, table, limit=limit),
            title=f"{table}: acidflow commits (newest {limit})",
        )
    )
    chk = incremental_check(catalog, table)
    if chk.skipped:
        console.print(f"incremental pull: skipped ({chk.skipped})")
        return True
    if chk.ok:
        console.print(describe(chk, table) + " [green]equal[/]")
    else:
        err.print(describe(chk, table) + " [red]DIFFERENT[/]")
    return chk.ok


def engine_demo(
    ctx: typer.Context, rows: int = typer.Option(20_000, help="rows in the first insert")
) -> None:
    """Run the engine end to end on embedded defaults (Spark local, SQLite catalog, local
    warehouse): create a bucketed table, insert, upsert (split-update), delete, then read the
    snapshot back and check it against the expected rows. Exits 1 on any mismatch."""
    # deferred: the engine and Spark; --help needs neither
    from acidflow.demo.engine import run_engine_demo
    from acidflow.spark import get_spark

    res = run_engine_demo(get_spark("acidflow-demo"), cli_context(ctx).catalog(), rows)
    summary = Table("step", "write id", "inserted", "updated", "deleted", "files")
    for step, w in res.steps:
        summary.add_row(
            step,
            str(w.write_id),
            str(w.rows_inserted),
            str(w.rows_updated),
            str(w.rows_deleted),
            str(w.files),
        )
    console.print(summary)
    console.print(
        f"table {res.table}: {res.visible_rows} visible rows, deltas: "
        + ", ".join(res.deltas)
        + f"; {res.seconds:.1f} s"
    )
    if not res.ok:
        err.print(
            f"[red]MISMATCH[/]: missing {res.missing}, unexpected {res.unexpected}, "
            f"different {res.different}"
        )
        raise typer.Exit(1)
    console.print("[green]snapshot matches the expected rows[/]")


def demo(
    ctx: typer.Context,
    sample_dir: Optional[Path] = typer.Option(
        None, help="sample data directory (default include/sample_data/pgbench)"
    ),
    direct: bool = typer.Option(
        False, "--direct", help="run the CDC job in this process, without Airflow"
    ),
    airflow_home: Optional[Path] = typer.Option(None, help="AIRFLOW_HOME (default .airflow)"),
    spark_remote: Optional[str] = typer.Option(
        None,
        envvar="SPARK_REMOTE",
        help="a Spark Connect server (sc://host:port): the DAGs' Spark tasks run on it "
        "(spark_mode=connect) instead of spark-submit; with --direct, the job's session",
    ),
) -> None:
    """The main job on embedded defaults: the acid_cdc DAG (``airflow dags test``,
    spark-submit on local[2], or a Spark Connect server with ``--spark-remote``) applies the pgbench change data captured from a real
    PostgreSQL 15 (wal2json) to the four pgbench tables, the acid_compaction DAG compacts
    them, and every table is reconciled against the source's saved final contents. Prints a
    summary; exits 1 on any mismatch; a second run skips every batch."""
    # deferred: the CDC job, Spark and Airflow; --help needs none of them
    from acidflow.demo.pgbench import SAMPLE_DIR, run_demo, run_demo_airflow
    from acidflow.spark import get_spark

    cat_ = cli_context(ctx).catalog()
    if direct:
        s = run_demo(
            get_spark("acidflow-demo", remote=spark_remote), cat_, sample_dir or SAMPLE_DIR
        )
    else:
        s = run_demo_airflow(
            cat_,
            airflow_home=airflow_home,
            sample_dir=sample_dir or SAMPLE_DIR,
            spark_remote=spark_remote,
        )
    print_summary(s)
    if not s.ok:
        err.print("[red]MISMATCH[/]: a table does not reconcile with its source")
        raise typer.Exit(1)
    console.print("[green]every table reconciled exactly with its source[/]")
    if not show_timeline_and_incremental(cat_):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``demo`` and ``engine-demo`` to ``app``."""
    app.command("engine-demo")(engine_demo)
    app.command()(demo)
