"""acidflow's "ACID tables" page for the Airflow UI: a FastAPI app (:mod:`.app`) over a
read-only data layer (:mod:`.data`) and an HTML renderer (:mod:`.render`), authenticated with
Airflow's JWTs (:mod:`.auth`). The Airflow plugin class lives in ``plugins/acidflow_plugin.py``.

This package is skipped by Airflow's plugin scan (``plugins/.airflowignore``) and imported as a
package by the plugin module.
"""
