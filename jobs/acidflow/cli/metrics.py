"""``acidflow metrics [--json] [--push]``: measure what an operator graphs (commits, deltas per
partition, the compaction queue, unqueued eligible partitions, quarantined records, Kafka
offsets, slot lag) and, with ``--push``, export it once over OTLP, added by :func:`register`.

The measures are :mod:`acidflow.metrics.collect`'s, the push :mod:`acidflow.metrics.export`'s
(``OTEL_EXPORTER_OTLP_*``). Exit codes: 0 done, 1 the push failed, 2 the replication slots
could not be measured.
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from acidflow._extras import require
from acidflow.cli.console import console, emit_json_lines, err
from acidflow.cli.context import cli_context
from acidflow.sources.postgres.connection import PullError
from acidflow.sources.postgres.slotlag import slot_lags

EXIT_PUSH_FAILED, EXIT_ERROR = 1, 2


def metrics(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="JSON lines: one per metric point"),
    push: bool = typer.Option(
        False, "--push", help="export once over OTLP (OTEL_EXPORTER_OTLP_* environment)"
    ),
    slot_dsn: Optional[str] = typer.Option(
        None,
        "--slot-dsn",
        envvar="ACIDFLOW_HEALTH_SLOT_DSN",
        help="PostgreSQL URL of the CDC source; measures its replication slots' lag",
    ),
    slots: str = typer.Option(
        "acidflow",
        "--slot",
        envvar="ACIDFLOW_HEALTH_SLOTS",
        help="comma-separated slot names measured with --slot-dsn",
    ),
) -> None:
    """Measure the catalog's metrics (commits, commit durations, deltas per partition,
    compaction queue, partitions eligible and not queued, quarantined records, Kafka offsets,
    slot lag) and print them; with --push export them once via OTLP."""
    # deferred: the collection imports the compactor and the readers (pyarrow); --help needs
    # none of it
    from acidflow.metrics.collect import collect_metrics

    lags: dict[str, int | None] = {}
    if slot_dsn:
        names = [s.strip() for s in slots.split(",") if s.strip()]
        try:
            lags = slot_lags(slot_dsn, names)
        except PullError as exc:
            err.print(f"[red]metrics failed:[/] replication slots {names}: {exc}")
            raise typer.Exit(EXIT_ERROR)
    snapshot = collect_metrics(cli_context(ctx).catalog(), slot_lag=lags)
    points = snapshot.to_dicts()
    if as_json:
        emit_json_lines(points)
    else:
        t = Table("Metric", "Unit", "Attributes", "Value")
        for p in points:
            attrs = ", ".join(f"{k}={v}" for k, v in p["attributes"].items())
            value = (
                p["value"]
                if "value" in p
                else f"count={p['count']} sum={p['sum']:.3f} max={p['max']:.3f}"
            )
            t.add_row(p["metric"], p["unit"], attrs, str(value))
        console.print(t)
    if not push:
        return
    require("opentelemetry.sdk.metrics", "metrics", "acidflow metrics --push")
    # deferred: the OpenTelemetry SDK and exporter are the optional 'metrics' extra
    from acidflow.metrics.export import MetricsExportError, export_metrics

    try:
        sent = export_metrics(snapshot)
    except MetricsExportError as exc:
        err.print(f"[red]metrics push failed:[/] {exc}")
        raise typer.Exit(EXIT_PUSH_FAILED)
    err.print(f"pushed {sent} metric points over OTLP", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``metrics`` to ``app``."""
    app.command("metrics")(metrics)
