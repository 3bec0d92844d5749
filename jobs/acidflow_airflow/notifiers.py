"""Failure alerts of the acidflow DAGs and their ``default_args``.

Configuration, Airflow config section ``[acidflow]`` (``AIRFLOW__ACIDFLOW__<KEY>``), read when
the DAG files are parsed:

=======================  =====================  ================================================
key                      default                meaning
=======================  =====================  ================================================
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
from typing import Any, Callable

from acidflow_airflow.config import DEFAULT_ARGS, setting

EMAIL_SUBJECT = "[acidflow] {{ dag.dag_id }}.{{ ti.task_id }} failed ({{ run_id }})"
EMAIL_HTML = (
    "<p>Task <b>{{ ti.task_id }}</b> of DAG <b>{{ dag.dag_id }}</b> failed "
    "(run {{ run_id }}, try {{ ti.try_number }}).</p>"
    "<pre>{{ exception }}</pre>"
    "<p>Log: {{ ti.log_url }}</p>"
)


def alert_callbacks() -> list[Any]:
    """The failure notifiers of ``[acidflow] alert_notifier`` (see the module doc); empty when
    none is configured.

    Raises:
        ValueError: an unknown notifier name or a ``module:callable`` that cannot be loaded.
    """
    kind = setting("alert_notifier", "smtp").strip()
    if kind.lower() in ("none", ""):
        return []
    if kind.lower() == "smtp":
        to = [a.strip() for a in setting("alert_to", "").split(",") if a.strip()]
        if not to:
            return []
        # deferred: the SMTP provider is needed only when e-mail alerts are configured
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        return [
            SmtpNotifier(
                to=to,
                from_email=setting("alert_from", "acidflow@localhost"),
                smtp_conn_id=setting("alert_smtp_conn_id", "smtp_default"),
                subject=EMAIL_SUBJECT,
                html_content=EMAIL_HTML,
            )
        ]
    if ":" not in kind:
        raise ValueError(
            f"[acidflow] alert_notifier={kind!r}: expected smtp, none or module:callable"
        )
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
