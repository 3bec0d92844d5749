"""``acid_health``'s tasks: the check (run ``acidflow health --json`` with the jobs' Python and
read its report) and the metrics push (``acidflow metrics --push --json`` when an OTLP endpoint is
configured, :func:`run_metrics_push`).

The command prints its report as one JSON line last on stdout and exits 0 (healthy), 1 (findings)
or anything else (it could not run). :func:`read_health_report` turns that into the report, an
``AirflowFailException`` listing the findings (no retry: the failure is the alert), or an
``AirflowException`` (retried) -- also when the output is not the JSON report it should be.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from acidflow_airflow.config import job_env, python_bin, repo

#: acid_health's params -> the command's options (``None`` = the command's default:
#: ``ACIDFLOW_HEALTH_*`` or built in)
HEALTH_OPTIONS = {
    "initiated_max_s": "--initiated-max",
    "working_max_s": "--working-max",
    "failed_max": "--failed-max",
    "failed_window_s": "--failed-window",
    "txn_max_age_s": "--txn-max-age",
    "slot_lag_max_bytes": "--slot-lag-max",
    "unqueued_max_s": "--unqueued-max",
}
#: seconds the command may take
HEALTH_TIMEOUT_S = 600


class HealthOutputError(AirflowException):
    """``acidflow health --json`` exited 0 or 1 without a JSON report as its last stdout line
    (retried like any check that could not run)."""


def health_argv(params: Mapping[str, Any]) -> list[str]:
    """``acidflow health --json`` arguments from the DAG's params (thresholds that are set;
    the slot check when ``postgres_conn_id`` is)."""
    argv = ["health", "--json"]
    for name, opt in HEALTH_OPTIONS.items():
        if params.get(name) is not None:
            argv += [opt, str(params[name])]
    if params.get("postgres_conn_id"):
        argv += ["--slot", ",".join(params.get("slots") or ["acidflow"])]
    return argv


def _report(last_line: str, returncode: int) -> dict[str, Any]:
    """The JSON object of the command's last stdout line.

    Raises:
        HealthOutputError: not JSON, not an object, or (exit 1) without ``findings``.
    """
    try:
        report = json.loads(last_line)
    except json.JSONDecodeError as exc:
        raise HealthOutputError(
            f"acidflow health --json (exit {returncode}): the last stdout line is not JSON "
            f"({exc}): {last_line[:500]!r}"
        ) from None
    if not isinstance(report, dict):
        raise HealthOutputError(
            f"acidflow health --json (exit {returncode}): expected a JSON object, got "
            f"{type(report).__name__}: {last_line[:500]!r}"
        )
    if returncode == 1 and not isinstance(report.get("findings"), list):
        raise HealthOutputError(
            f"acidflow health --json (exit 1): the report has no 'findings' list: "
            f"{last_line[:500]!r}"
        )
    return report


def read_health_report(returncode: int, stdout: str, stderr: str = "") -> dict[str, Any]:
    """The report of a finished ``acidflow health --json`` when healthy.

    Args:
        returncode: the command's exit status.
        stdout: its standard output (the report is the last line).
        stderr: its standard error (quoted when it could not run).
    Returns:
        the report (a JSON object) of a healthy catalog.
    Raises:
        AirflowFailException: exit 1 with a report: findings; the message lists each one's
            ``[kind] message``.
        HealthOutputError: exit 0 or 1 without a JSON report on the last stdout line.
        AirflowException: any other exit (catalog or source unreachable), with the end of the
            command's output.
    """
    text = stdout.strip()
    last = text.splitlines()[-1] if text else ""
    if returncode == 0:
        return _report(last, returncode)
    if returncode == 1 and last.startswith("{"):
        report = _report(last, returncode)
        lines = [f"- [{f.get('kind')}] {f.get('message')}" for f in report["findings"]]
        raise AirflowFailException(
            f"acidflow health: {len(lines)} finding(s) in "
            f"{report.get('catalog')}:\n" + "\n".join(lines)
        )
    raise AirflowException(
        f"acidflow health could not run (exit {returncode}): {(stderr or stdout).strip()[-2000:]}"
    )


def run_health_check(params: Mapping[str, Any]) -> dict[str, Any]:
    """Run ``acidflow health --json`` with the jobs' Python and environment; returns its
    report (to XCom) when healthy.

    Args:
        params: the DAG run's params (thresholds, ``postgres_conn_id``, ``slots``).
    Raises:
        AirflowFailException: findings (no retry: the failure is the alert).
        AirflowException: the check could not run or printed no report (retried).
    """
    env = job_env()
    if params.get("postgres_conn_id"):
        env["ACIDFLOW_HEALTH_SLOT_DSN"] = BaseHook.get_connection(
            params["postgres_conn_id"]
        ).get_uri()
    proc = subprocess.run(
        [python_bin(), "-m", "acidflow.cli", *health_argv(params)],
        cwd=str(repo()),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=HEALTH_TIMEOUT_S,
    )
    return read_health_report(proc.returncode, proc.stdout, proc.stderr)


#: the variables naming an OTLP endpoint (OpenTelemetry's standard ones); one set = push
OTLP_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
#: seconds the push may take (the collection lists every candidate partition)
METRICS_TIMEOUT_S = 600


def metrics_argv(params: Mapping[str, Any]) -> list[str]:
    """``acidflow metrics --push --json`` arguments (the slot lag too when
    ``postgres_conn_id`` is set)."""
    argv = ["metrics", "--push", "--json"]
    if params.get("postgres_conn_id"):
        argv += ["--slot", ",".join(params.get("slots") or ["acidflow"])]
    return argv


def run_metrics_push(params: Mapping[str, Any]) -> dict[str, Any]:
    """Push acidflow's metrics once over OTLP: ``acidflow metrics --push --json`` with the jobs'
    Python and environment, the ``OTEL_*`` variables of the worker passed on.

    Args:
        params: the DAG run's params (``postgres_conn_id``, ``slots`` for the slot lag).
    Returns:
        ``{"samples": <measured values pushed: one per metric and attribute set>}`` (to XCom).
    Raises:
        AirflowSkipException: no OTLP endpoint (:data:`OTLP_ENDPOINT_VARS`) is set.
        AirflowException: the command failed (collector unreachable or refusing, catalog
            unreachable): retried.
    """
    env = {**os.environ, **job_env()}
    if not any(env.get(v, "").strip() for v in OTLP_ENDPOINT_VARS):
        raise AirflowSkipException(
            "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT to push acidflow's metrics"
        )
    if params.get("postgres_conn_id"):
        env["ACIDFLOW_HEALTH_SLOT_DSN"] = BaseHook.get_connection(
            params["postgres_conn_id"]
        ).get_uri()
    proc = subprocess.run(
        [python_bin(), "-m", "acidflow.cli", *metrics_argv(params)],
        cwd=str(repo()),
        env=env,
        capture_output=True,
        text=True,
        timeout=METRICS_TIMEOUT_S,
    )
    if proc.returncode != 0:
        raise AirflowException(
            f"acidflow metrics --push failed (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )
    return {"samples": len([line for line in proc.stdout.splitlines() if line.startswith("{")])}
