"""Compactor commands of the ``acidflow`` CLI, added by :func:`register`:

::

    acidflow compact TABLE [--partition SPEC] --type major|minor [--run | --wait] [--spark] [--json]
    acidflow initiate [--dry-run] [--table FILTER] [--json]
    acidflow clean [--json]
    acidflow fsck TABLE [--json] [--repair [--dry-run] [--note TEXT]]

``compact`` queues a manual request (Hive ``ALTER TABLE ... COMPACT``); ``--run`` runs it now in
this process (pyarrow tasks, or Spark with ``--spark``) and then one cleaner pass; ``--wait``
polls until a worker elsewhere (the Airflow DAG) finished it. ``fsck`` exits 1 when it finds an
error.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from acidflow.catalog.records import CompactionState, CompactionType
from acidflow.cli.console import console, emit_json, emit_json_lines, err, time_cell
from acidflow.cli.context import cli_context
from acidflow.spark import get_spark

if TYPE_CHECKING:
    from acidflow.compactor.fsck import RepairReport

JSON_LINES = "JSON lines, one object per finding"


def compact(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    partition: Optional[str] = typer.Option(None, "--partition", help="e.g. ds=2024-01-01"),
    type_: str = typer.Option(..., "--type", help="major or minor"),
    run: bool = typer.Option(False, "--run", help="run the worker (and cleaner) now"),
    wait: bool = typer.Option(False, "--wait", help="wait for a worker elsewhere"),
    timeout: float = typer.Option(3600, help="--wait limit in seconds"),
    use_spark: bool = typer.Option(False, "--spark", help="--run in Spark"),
    as_json: bool = typer.Option(
        False, "--json", help="one JSON line: the compaction at the end (SHOW COMPACTIONS keys)"
    ),
) -> None:
    """Queue a manual compaction (Hive ALTER TABLE ... COMPACT), regardless of thresholds."""
    say = err.print if as_json else console.print  # --json: stdout holds the JSON line only
    if type_ not in (CompactionType.MAJOR, CompactionType.MINOR):
        raise typer.BadParameter("--type must be major or minor")
    # deferred: the compactor imports duckdb, pyarrow and the ORC codec; --help needs none
    from acidflow.compactor.cleaner import run_cleaner
    from acidflow.compactor.initiator import request_compaction
    from acidflow.compactor.worker import run_worker

    cat = cli_context(ctx).catalog()
    info = request_compaction(cat, table, partition, type_)
    say(
        f"compaction {info.id} {info.state} ({info.type}) for {info.table}"
        + (f" partition {info.partition}" if info.partition else "")
    )
    if run:
        spark = None
        if use_spark:
            spark = get_spark("acidflow-compact")
        out = run_worker(spark, cat, cq_id=info.id)
        state = out.state if out else cat.get_compaction(info.id).state
        if out and out.state == CompactionState.FAILED:
            err.print(f"[red]compaction {info.id} failed:[/] {out.report.get('error')}")
            raise typer.Exit(1)
        rep = run_cleaner(cat)
        state = cat.get_compaction(info.id).state
        say(
            f"compaction {info.id}: {state}"
            + (f" (waiting for {rep.waiting[info.id]})" if info.id in rep.waiting else "")
        )
    elif wait:
        deadline = time.monotonic() + timeout
        while True:
            state = cat.get_compaction(info.id).state
            if state not in (CompactionState.INITIATED, CompactionState.WORKING):
                break
            if time.monotonic() > deadline:
                err.print(f"compaction {info.id} still {state} after {timeout} s")
                raise typer.Exit(1)
            time.sleep(2)
        say(f"compaction {info.id}: {state}")
    if as_json:
        emit_json(cat.get_compaction(info.id).to_dict())
    if wait and state == CompactionState.FAILED:
        raise typer.Exit(1)


def initiate(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="decide, queue nothing"),
    table: Optional[str] = typer.Option(None, "--table", help="fnmatch filter, e.g. 'sales.*'"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the initiator once: print each candidate, the decision and why."""
    # deferred: the compactor imports duckdb, pyarrow and the ORC codec; --help needs none
    from acidflow.compactor.initiator import run_initiator

    report = run_initiator(cli_context(ctx).catalog(), table_filter=table, dry_run=dry_run)
    if as_json:
        emit_json(report.to_dict())
        return
    t = Table("Table", "Partition", "Decision", "Reason", "Queued")
    for d in report.decisions:
        t.add_row(
            d.table, d.partition or "---", d.action or "none", d.reason, time_cell(d.queued_id)
        )
    console.print(t)
    console.print(("dry run: nothing queued" if dry_run else f"queued: {report.queued_ids}"))


def clean(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Run the cleaner once (obsolete dirs of ready-for-cleaning compactions, aborted dirs)."""
    # deferred: the compactor imports duckdb, pyarrow and the ORC codec; --help needs none
    from acidflow.compactor.cleaner import run_cleaner

    rep = run_cleaner(cli_context(ctx).catalog())
    if as_json:
        emit_json(rep.to_dict())
        return
    for cq, names in rep.cleaned.items():
        console.print(f"compaction {cq}: succeeded, removed {len(names)}: {', '.join(names)}")
    for cq, who in rep.waiting.items():
        console.print(
            f"compaction {cq}: ready for cleaning, waiting for readers "
            f"{who['readers']} / open txns {who['txns']}"
        )
    for name in rep.schema_reverted:
        console.print(f"{name}: an aborted schema change's columns reverted")
    for where, names in rep.aborted.items():
        console.print(f"{where}: removed aborted {', '.join(names)}")
    purged = {k: n for k, n in sorted(rep.purged.items()) if n}
    if purged:
        console.print("catalog history purged: " + ", ".join(f"{n} {k}" for k, n in purged.items()))
    if not (rep.cleaned or rep.waiting or rep.aborted):
        console.print("nothing to clean")
    if rep.errors:
        err.print(f"[red]errors:[/] {rep.errors}")
        raise typer.Exit(1)


def fsck(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    as_json: bool = typer.Option(False, "--json", help=JSON_LINES),
    rebuild_index: bool = typer.Option(
        False,
        "--rebuild-index",
        help="instead of the checks: (re)build the sidecar key index of each base "
        "(base_N/_acidflow_key_index.parquet, derived data: lookups fall back to reading the "
        "base without it) and report the stripe index of each data file (min/max statistics "
        "and bloom filters of the primary key columns per stripe, in the ORC files "
        "themselves: files without it are read whole by key lookups until compacted).",
    ),
    repair: bool = typer.Option(
        False,
        "--repair",
        help="instead of the checks: mark the recorded files that are missing, resized or "
        "unreadable as lost so reads go on without them, and print what is lost (partition, "
        "bucket, write id, rows; a lost delete delta's rows are visible again). Marks, never "
        "invents: no file is written or deleted, nothing committed is aborted",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="--repair: report, mark nothing"),
    note: Optional[str] = typer.Option(
        None, "--note", help="--repair: kept with each lost record (default: who and when)"
    ),
) -> None:
    """Check a table: orphan, aborted and open dirs (a killed or running writer's, by
    write-id state), missing metadata of committed dirs, overlapping write-id ranges,
    duplicate ROW__IDs, duplicate primary keys, and each data file against the catalog's
    record of it (missing, resized, unexpected, corrupt). Exit code 1 when an error is found
    (with --repair: when a finding could not be marked)."""
    # deferred: the compactor imports duckdb, pyarrow and the ORC codec; --help needs none
    from acidflow.compactor import fsck as checks

    if (dry_run or note is not None) and not repair:
        raise typer.BadParameter("--dry-run and --note go with --repair")
    if repair and rebuild_index:
        raise typer.BadParameter("--repair and --rebuild-index are separate runs")
    cat = cli_context(ctx).catalog()
    if repair:
        _print_repair(checks.repair(cat, table, note=note, dry_run=dry_run), as_json)
        return
    findings = (
        checks.key_index_report(cat, table) if rebuild_index else checks.fsck_table(cat, table)
    )
    if as_json:
        emit_json_lines(f.to_dict() for f in findings)
    else:
        t = Table("Partition", "Kind", "Severity", "Path", "Detail")
        for f in findings:
            t.add_row(f.partition or "---", f.kind, f.severity, f.path, f.detail)
        console.print(t)
        console.print(f"{len(findings)} findings")
    if any(f.severity == checks.ERROR for f in findings):
        raise typer.Exit(1)


def _print_repair(report: RepairReport, as_json: bool) -> None:
    """``fsck --repair``'s output (one JSON line with --json); exit 1 when something could
    not be marked."""
    doc = report.to_dict()
    if as_json:
        emit_json(doc)
    else:
        verb = "would mark" if report.dry_run else "marked"
        for lost in report.lost:
            console.print(f"{verb} lost: {lost.describe()}", markup=False, highlight=False)
        for rec in report.already_lost:
            console.print(f"already lost: {rec.path}", markup=False, highlight=False)
        for f in report.not_repaired:
            err.print(f"not repaired: {f.kind} {f.path}: {f.detail}", markup=False)
        console.print(
            f"{report.table}: {len(report.lost)} file(s) {verb} lost, {doc['rows_lost']} rows "
            f"lost, {doc['deletes_lost']} delete events lost; {len(report.not_repaired)} "
            "finding(s) need a person"
        )
    if report.not_repaired:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``compact``, ``initiate``, ``clean`` and ``fsck`` to ``app``."""
    app.command("compact")(compact)
    app.command("initiate")(initiate)
    app.command("clean")(clean)
    app.command("fsck")(fsck)
