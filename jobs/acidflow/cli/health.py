"""``acidflow health``: the catalog's operational health check (stuck or failing compactions,
partitions over the initiator's thresholds with nothing queued, transactions open past the
timeout, replication slots lagging), added by :func:`register`.

Exit codes: 0 healthy, 1 findings (each printed with its reason), 2 the check could not run
(catalog or source database unreachable). The ``acid_health`` DAG runs this command; the rules
are :mod:`acidflow.quality.health`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

import typer
from rich.table import Table

from acidflow.cli.console import console, emit_json, err
from acidflow.cli.context import cli_context
from acidflow.sources.postgres.connection import PullError
from acidflow.sources.postgres.slotlag import slot_lags

EXIT_FINDINGS, EXIT_ERROR = 1, 2


def health(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="one JSON object (last line)"),
    initiated_max: Optional[float] = typer.Option(
        None,
        "--initiated-max",
        min=0,
        help="seconds a compaction may stay initiated [ACIDFLOW_HEALTH_INITIATED_MAX_S; 7200]",
    ),
    working_max: Optional[float] = typer.Option(
        None,
        "--working-max",
        min=0,
        help="seconds a compaction may stay working [ACIDFLOW_HEALTH_WORKING_MAX_S; 7200]",
    ),
    failed_max: Optional[int] = typer.Option(
        None,
        "--failed-max",
        min=0,
        help="failed compactions in the window that alert, 0 = off [ACIDFLOW_HEALTH_FAILED_MAX; 2]",
    ),
    failed_window: Optional[float] = typer.Option(
        None,
        "--failed-window",
        min=0,
        help="window of --failed-max in seconds [ACIDFLOW_HEALTH_FAILED_WINDOW_S; 86400]",
    ),
    txn_max_age: Optional[float] = typer.Option(
        None,
        "--txn-max-age",
        min=0,
        help="seconds a transaction may stay open [ACIDFLOW_HEALTH_TXN_MAX_AGE_S; 21600]",
    ),
    slot_lag_max: Optional[int] = typer.Option(
        None,
        "--slot-lag-max",
        min=0,
        help="WAL bytes a slot may lag [ACIDFLOW_HEALTH_SLOT_LAG_MAX_BYTES; 1 GiB]",
    ),
    unqueued_max: Optional[float] = typer.Option(
        None,
        "--unqueued-max",
        min=0,
        help="seconds a partition may stay eligible for compaction with nothing queued "
        "[ACIDFLOW_HEALTH_UNQUEUED_MAX_S; 3600]",
    ),
    slot_dsn: Optional[str] = typer.Option(
        None,
        "--slot-dsn",
        envvar="ACIDFLOW_HEALTH_SLOT_DSN",
        help="PostgreSQL URL of the CDC source; checks its replication slots",
    ),
    slots: str = typer.Option(
        "acidflow",
        "--slot",
        envvar="ACIDFLOW_HEALTH_SLOTS",
        help="comma-separated slot names checked with --slot-dsn",
    ),
) -> None:
    """Check the catalog: compactions initiated or working too long, failed compactions in
    a window, partitions over the initiator's thresholds not queued in time, open
    transactions past the heartbeat timeout or too old, replication slots lagging (with
    --slot-dsn). Exit 1 when anything is found."""
    # deferred: acidflow.quality and the compactor import the readers (pyarrow); --help needs
    # none of it
    from acidflow.compactor.unqueued import unqueued_partitions
    from acidflow.quality.health import HealthThresholds, check_health

    try:
        th = HealthThresholds.from_env(
            initiated_max_s=initiated_max,
            working_max_s=working_max,
            failed_max=failed_max,
            failed_window_s=failed_window,
            txn_max_age_s=txn_max_age,
            slot_lag_max_bytes=slot_lag_max,
            unqueued_max_s=unqueued_max,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc))
    lags: dict[str, int | None] = {}
    if slot_dsn:
        names = [s.strip() for s in slots.split(",") if s.strip()]
        try:
            lags = slot_lags(slot_dsn, names)
        except PullError as exc:
            err.print(f"[red]health check failed:[/] replication slots {names}: {exc}")
            raise typer.Exit(EXIT_ERROR)
    now = datetime.now(timezone.utc)
    cat = cli_context(ctx).catalog()
    try:
        unqueued = unqueued_partitions(cat)
    except OSError as exc:
        err.print(f"[red]health check failed:[/] listing partitions for the initiator: {exc}")
        raise typer.Exit(EXIT_ERROR)
    findings = check_health(cat, th, now, slot_lag=lags, unqueued=unqueued)
    if as_json:
        emit_json(
            {
                "healthy": not findings,
                "catalog": cat.display_url(),
                "checked_at": now.isoformat(),
                "thresholds": th.to_dict(),
                "txn_timeout_s": cat.txn_timeout_s,
                "slots": lags,
                "unqueued": [p.to_dict() for p in unqueued],
                "findings": [f.to_dict() for f in findings],
            },
        )
    elif findings:
        t = Table("Kind", "Subject", "Message")
        for f in findings:
            t.add_row(f.kind, f.subject, f.message)
        console.print(t)
    else:
        console.print(
            f"healthy: {cat.display_url()} at {now:%Y-%m-%d %H:%M:%S} UTC"
            + (f"; slots {lags}" if lags else "")
        )
    if findings:
        raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    """Add ``health`` to ``app``."""
    app.command("health")(health)
