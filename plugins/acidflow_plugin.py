"""The ``acidflow`` Airflow plugin: the "ACID tables" page in the Airflow UI.

Airflow 3 mounts the FastAPI app of :mod:`acidflow_ui.app` under ``/acidflow`` and shows an
"ACID tables" entry in the navigation that opens it inside the Airflow UI (``/plugin/acid-tables``,
an iframe of ``/acidflow/``). The page reads the transaction catalog named by
``ACIDFLOW_CATALOG_URL`` / ``ACIDFLOW_WAREHOUSE`` and is read-only. Airflow does not protect plugin
apps; the app checks Airflow's JWT itself (``acidflow_ui.auth``).

Needs the ``acidflow`` package installed in Airflow's environment (``pip install -e .`` of this
repository, which ``make setup`` does). Airflow puts the plugins folder on ``sys.path``, which
is how ``acidflow_ui`` is found.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from acidflow_ui.app import create_app

URL_PREFIX = "/acidflow"

# A small table glyph for the navigation (data URL: no unauthenticated asset route needed).
_ICON = (
    "data:image/svg+xml;utf8,"
    "%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24' fill='none' "
    "stroke='%23017cee' stroke-width='2'%3E%3Crect x='3' y='4' width='18' height='16' rx='2'/%3E"
    "%3Cpath d='M3 9h18M3 14h18M9 9v11'/%3E%3C/svg%3E"
)


class AcidflowPlugin(AirflowPlugin):
    """Registers the FastAPI app (``/acidflow``) and the "ACID tables" external view."""

    name = "acidflow"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "acidflow"}]
    external_views = [
        {
            "name": "ACID tables",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "url_route": "acid-tables",
            "nav_top_level": True,
            "icon": _ICON,
        }
    ]
