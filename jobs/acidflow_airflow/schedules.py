"""Schedules and scheduled runs' param defaults of the acidflow DAGs, read when the DAG files
are parsed.

Configuration, Airflow config section ``[acidflow]`` (``AIRFLOW__ACIDFLOW__<KEY>``):

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
=======================  =====================  ================================================
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from airflow.configuration import conf
from airflow.sdk import AssetAlias, AssetOrTimeSchedule, CronTriggerTimetable

from acidflow_airflow.config import setting
from acidflow_airflow.operator import TABLES_ALIAS

DEFAULT_CDC_SCHEDULE = "*/5 * * * *"
DEFAULT_HEALTH_SCHEDULE = "*/15 * * * *"
DEFAULT_COMPACTION_SCHEDULE = "0 2 * * *"


def schedule(key: str, default: str) -> str | timedelta | None:
    """The schedule configured under ``[acidflow] <key>``: ``None`` for ``none``, a
    ``timedelta`` for a number of seconds, else the string (cron, ``@daily``,
    ``@continuous``).

    Raises:
        ValueError: a non-positive number of seconds (names the key).
    """
    text = setting(key, default).strip()
    if text.lower() in ("none", "", "manual"):
        return None
    if text.replace(".", "", 1).isdigit():
        seconds = float(text)
        if seconds <= 0:
            raise ValueError(f"[acidflow] {key}={text!r}: the interval must be > 0 seconds")
        return timedelta(seconds=seconds)
    return text


def compaction_schedule() -> str | AssetOrTimeSchedule:
    """``acid_compaction``'s schedule: the cron of ``compaction_schedule``, or with
    ``compaction_on_writes`` that cron OR any table write (``AssetOrTimeSchedule`` on the
    alias :data:`~acidflow_airflow.operator.TABLES_ALIAS`)."""
    cron = setting("compaction_schedule", DEFAULT_COMPACTION_SCHEDULE).strip()
    if conf.getboolean("acidflow", "compaction_on_writes", fallback=False):
        return AssetOrTimeSchedule(
            timetable=CronTriggerTimetable(cron, timezone="UTC"), assets=AssetAlias(TABLES_ALIAS)
        )
    return cron


def param_defaults(key: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with the JSON object of ``[acidflow] <key>`` (the values the
    scheduled runs use; a trigger's conf still overrides them).

    Raises:
        ValueError: not a JSON object, or a name that is not a param (names the key).
    """
    text = setting(key, "").strip()
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
