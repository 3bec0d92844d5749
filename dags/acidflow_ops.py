"""Schedules, alerts and the health check of the acidflow DAGs (not a DAG file; listed in
``.airflowignore``). Issue 12, deliverable 8.

Configuration, Airflow config section ``[acidflow]`` (``AIRFLOW__ACIDFLOW__<KEY>``), read when
the DAG files are parsed:

=======================  =====================  ================================================
key                      default                meaning
=======================  =====================  ================================================
cdc_schedule             ``*/5 * * * *``        ``acid_cdc``: cron or preset, a number of
                                                seconds (fixed interval), ``@continuous``, or
                                                ``none`` (trigger only)
cdc_params               ``{}``                 JSON object: defaults of ``acid_cdc``'s params
                                                for its scheduled runs (``source``, ``format``,
                                                ``input_path``, ``target_db`` ...)
health_schedule          ``*/15 * * * *``       ``acid_health`` (same forms)
health_params            ``{}``                 JSON: defaults of ``acid_health``'s params
compaction_schedule      ``0 2 * * *``          ``acid_compaction``'s cron
compaction_on_writes     ``false``              also run ``acid_compaction`` when a DAG wrote a
                                                table (asset events of the alias
                                                ``acidflow-tables``)
alert_notifier           ``smtp``               ``smtp``, ``none``, or ``module:callable``
                                                returning a notifier (any ``BaseNotifier`` or
                                                callable taking the context)
alert_to                 (empty)                recipients, comma-separated; with ``smtp`` and
                                                no recipients no notifier is attached
alert_smtp_conn_id       ``smtp_default``       the SMTP connection (host, port, login, TLS)
alert_from               ``acidflow@localhost`` sender address
=======================  =====================  ================================================

Every task of every acidflow DAG gets the notifier as ``on_failure_callback`` (it fires once a
task failed for good, after its retries).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
from datetime import timedelta
from typing import Any, Callable

from acidflow_common import DEFAULT_ARGS, _conf, job_env, python_bin, repo
from airflow.configuration import conf
from airflow.sdk import AssetAlias, AssetOrTimeSchedule, BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from airflow.timetables.trigger import CronTriggerTimetable

#: the asset alias every table-writing task declares as outlet; its asset events name the
#: tables written (``acid://<catalog id>/<db.table>``)
TABLES_ALIAS = "acidflow-tables"
DEFAULT_CDC_SCHEDULE = "*/5 * * * *"
DEFAULT_HEALTH_SCHEDULE = "*/15 * * * *"
DEFAULT_COMPACTION_SCHEDULE = "0 2 * * *"

EMAIL_SUBJECT = ("[acidflow] {{ dag.dag_id }}.{{ ti.task_id }} failed "
                 "({{ run_id }})")
EMAIL_HTML = ("<p>Task <b>{{ ti.task_id }}</b> of DAG <b>{{ dag.dag_id }}</b> failed "
              "(run {{ run_id }}, try {{ ti.try_number }}).</p>"
              "<pre>{{ exception }}</pre>"
              "<p>Log: {{ ti.log_url }}</p>")


def schedule(key: str, default: str) -> Any:
    """The schedule configured under ``[acidflow] <key>``: ``None`` for ``none``, a
    ``timedelta`` for a number of seconds, else the string (cron, ``@daily``,
    ``@continuous``).

    Raises:
        ValueError: a non-positive number of seconds (names the key).
    """
    text = _conf(key, default).strip()
    if text.lower() in ("none", "", "manual"):
        return None
    if text.replace(".", "", 1).isdigit():
        seconds = float(text)
        if seconds <= 0:
            raise ValueError(f"[acidflow] {key}={text!r}: the interval must be > 0 seconds")
        return timedelta(seconds=seconds)
    return text


def compaction_schedule() -> Any:
    """``acid_compaction``'s schedule: the cron of ``compaction_schedule``, or with
    ``compaction_on_writes`` that cron OR any table write (``AssetOrTimeSchedule`` on the
    alias :data:`TABLES_ALIAS`)."""
    cron = _conf("compaction_schedule", DEFAULT_COMPACTION_SCHEDULE).strip()
    if conf.getboolean("acidflow", "compaction_on_writes", fallback=False):
        return AssetOrTimeSchedule(timetable=CronTriggerTimetable(cron, timezone="UTC"),
                                   assets=AssetAlias(TABLES_ALIAS))
    return cron


def param_defaults(key: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with the JSON object of ``[acidflow] <key>`` (the values the
    scheduled runs use; a trigger's conf still overrides them).

    Raises:
        ValueError: not a JSON object, or a name that is not a param (names the key).
    """
    text = _conf(key, "").strip()
    if not text:
        return defaults
    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"[acidflow] {key}: not JSON: {exc}") from None
    if not isinstance(given, dict):
        raise ValueError(f"[acidflow] {key}: expected a JSON object, got {type(given).__name__}")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"[acidflow] {key}: unknown params {unknown} (known: {sorted(defaults)})")
    return {**defaults, **given}


def alert_callbacks() -> list[Any]:
    """The failure notifiers of ``[acidflow] alert_notifier`` (see the module doc); empty when
    none is configured.

    Raises:
        ValueError: an unknown notifier name or a ``module:callable`` that cannot be loaded.
    """
    kind = _conf("alert_notifier", "smtp").strip()
    if kind.lower() in ("none", ""):
        return []
    if kind.lower() == "smtp":
        to = [a.strip() for a in _conf("alert_to", "").split(",") if a.strip()]
        if not to:
            return []
        # deferred: the SMTP provider is needed only when e-mail alerts are configured
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        return [SmtpNotifier(to=to, from_email=_conf("alert_from", "acidflow@localhost"),
                             smtp_conn_id=_conf("alert_smtp_conn_id", "smtp_default"),
                             subject=EMAIL_SUBJECT, html_content=EMAIL_HTML)]
    if ":" not in kind:
        raise ValueError(f"[acidflow] alert_notifier={kind!r}: expected smtp, none or "
                         "module:callable")
    mod, _, attr = kind.partition(":")
    try:
        factory: Callable[[], Any] = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"[acidflow] alert_notifier={kind!r}: cannot load it: {exc}") from None
    made = factory()
    return list(made) if isinstance(made, (list, tuple)) else [made]


def default_args(**extra: Any) -> dict[str, Any]:
    """The acidflow DAGs' ``default_args``: owner, 2 retries, the failure notifiers."""
    args: dict[str, Any] = {**DEFAULT_ARGS, **extra}
    callbacks = alert_callbacks()
    if callbacks:
        args["on_failure_callback"] = callbacks
    return args


#: acid_health's params: ``None`` = the command's default (``ACIDFLOW_HEALTH_*`` or built in)
HEALTH_OPTIONS = {"initiated_max_s": "--initiated-max", "working_max_s": "--working-max",
                  "failed_max": "--failed-max", "failed_window_s": "--failed-window",
                  "txn_max_age_s": "--txn-max-age", "slot_lag_max_bytes": "--slot-lag-max"}


def health_argv(params: dict[str, Any]) -> list[str]:
    """``acidflow health --json`` arguments from the DAG's params (thresholds that are set;
    the slot check when ``postgres_conn_id`` is)."""
    argv = ["health", "--json"]
    for name, opt in HEALTH_OPTIONS.items():
        if params.get(name) is not None:
            argv += [opt, str(params[name])]
    if params.get("postgres_conn_id"):
        argv += ["--slot", ",".join(params.get("slots") or ["acidflow"])]
    return argv


def run_health_check(params: dict[str, Any]) -> dict[str, Any]:
    """Run ``acidflow health --json`` with the jobs' Python and environment; returns its
    report (to XCom) when healthy.

    Raises:
        AirflowFailException: findings (no retry: the failure is the alert); the message lists
            each finding's text.
        AirflowException: the check could not run (catalog or source unreachable; retried).
    """
    env = job_env()
    if params.get("postgres_conn_id"):
        env["ACIDFLOW_HEALTH_SLOT_DSN"] = BaseHook.get_connection(
            params["postgres_conn_id"]).get_uri()
    proc = subprocess.run([python_bin(), "-m", "acidflow.cli", *health_argv(params)],
                          cwd=str(repo()), env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=600)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode == 0:
        return json.loads(last)
    if proc.returncode == 1 and last.startswith("{"):
        report = json.loads(last)
        lines = [f"- [{f['kind']}] {f['message']}" for f in report["findings"]]
        raise AirflowFailException(f"acidflow health: {len(lines)} finding(s) in "
                                   f"{report['catalog']}:\n" + "\n".join(lines))
    raise AirflowException(f"acidflow health could not run (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
