"""acid_health: is the ACID machinery moving? Every 15 minutes, ``acidflow health``, and the
metrics pushed over OTLP.

Task ``check``: it fails -- and so notifies through the configured notifier (the SMTP
provider's ``SmtpNotifier`` by default; ``[acidflow] alert_*``) -- when a compaction has been
``initiated`` or ``working`` longer than its threshold, failed compactions within a window pass
their count, a transaction is open past the heartbeat timeout or too long, or (with
``postgres_conn_id``) a replication slot lags by more than a threshold or is missing. The
failure message lists every finding; a check that finds something fails at once (no retries:
the failure is the alert), one that cannot reach the catalog or the source is retried first.
It also fails when a partition over the initiator's thresholds has had nothing queued for an
hour (``unqueued_max_s``).

Task ``push_metrics`` (independent of ``check``: the metrics go out when there are findings too):
``acidflow metrics --push`` when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``) is set in the worker's environment, skipped otherwise;
headers, protocol and the rest from the standard ``OTEL_EXPORTER_OTLP_*`` variables.

Thresholds: the params below (empty = ``ACIDFLOW_HEALTH_*`` in the worker's environment, else
the defaults of ``acidflow.quality.health``: 2 h initiated, 2 h working, 2 failed in 24 h, 6 h
open, 1 GiB of WAL, 1 h unqueued); ``[acidflow] health_params`` (JSON) sets them for the scheduled runs.
Schedule ``[acidflow] health_schedule`` (default ``*/15 * * * *``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, Param, task

from acidflow_airflow.health import run_health_check, run_metrics_push
from acidflow_airflow.notifiers import default_args
from acidflow_airflow.schedules import DEFAULT_HEALTH_SCHEDULE, param_defaults, schedule

DEFAULTS = param_defaults(
    "health_params",
    {
        "initiated_max_s": None,
        "working_max_s": None,
        "failed_max": None,
        "failed_window_s": None,
        "txn_max_age_s": None,
        "slot_lag_max_bytes": None,
        "unqueued_max_s": None,
        "postgres_conn_id": "",
        "slots": ["acidflow"],
    },
)


def _limit(name: str, what: str, integer: bool = False) -> Param:
    return Param(
        DEFAULTS[name],
        type=["null", "integer" if integer else "number"],
        minimum=0,
        description=f"{what} (empty: the command's default)",
    )


with DAG(
    dag_id="acid_health",
    description="Alert on stuck, failing or unqueued compactions, stale transactions, lagging "
    "slots; push metrics",
    schedule=schedule("health_schedule", DEFAULT_HEALTH_SCHEDULE),
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=default_args(),
    tags=["acidflow", "health"],
    params={
        "initiated_max_s": _limit("initiated_max_s", "seconds a compaction may stay initiated"),
        "working_max_s": _limit("working_max_s", "seconds a compaction may stay working"),
        "failed_max": _limit(
            "failed_max", "failed compactions in the window that alert", integer=True
        ),
        "failed_window_s": _limit("failed_window_s", "window of failed_max in seconds"),
        "txn_max_age_s": _limit("txn_max_age_s", "seconds a transaction may stay open"),
        "slot_lag_max_bytes": _limit(
            "slot_lag_max_bytes", "WAL bytes a slot may lag", integer=True
        ),
        "unqueued_max_s": _limit(
            "unqueued_max_s", "seconds a partition may stay eligible for compaction, not queued"
        ),
        "postgres_conn_id": Param(
            DEFAULTS["postgres_conn_id"],
            type="string",
            description="connection of the CDC source (empty: no slot check)",
        ),
        "slots": Param(
            DEFAULTS["slots"],
            type="array",
            items={"type": "string", "pattern": "^[a-z0-9_]+$"},
            description="replication slots checked with postgres_conn_id",
        ),
    },
    doc_md=__doc__,
) as dag:

    @task
    def check(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """``acidflow health --json``; fails with the findings (see the DAG doc)."""
        return run_health_check(params or {})

    @task
    def push_metrics(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """``acidflow metrics --push`` when an OTLP endpoint is set, else skipped."""
        return run_metrics_push(params or {})

    check()
    push_metrics()
