"""Shared wiring for the acidflow DAGs (not a DAG file; listed in ``.airflowignore``).

Everything Spark does runs through :class:`AcidflowSparkSubmitOperator`, a
``SparkSubmitOperator`` that submits ``jobs/submit.py <subcommand> ...`` on the connection
``spark_default`` (``local[2]`` by default, a standalone master when configured) with the
``acidflow`` package shipped as a zip in ``py_files``. Catalog-only steps (initiator, cleaner, slot
pull) run the same package's command line in the worker with ``BashOperator``.

Configuration (Airflow config section ``[acidflow]``, i.e. ``AIRFLOW__ACIDFLOW__<KEY>``;
environment and defaults otherwise) -- nothing is set by hand in a task:

==================  ====================================  =================================
key                 default                               used for
==================  ====================================  =================================
pyspark_python      the Python running Airflow            ``PYSPARK_PYTHON`` of driver/executors
java_home           ``$JAVA_HOME`` or Debian's JDK 17      ``JAVA_HOME`` of spark-submit
spark_local_ip      ``$SPARK_LOCAL_IP`` or 127.0.0.1      ``SPARK_LOCAL_IP``
repo                the checkout holding this file       ``jobs/submit.py``, ``include/``
==================  ====================================  =================================

``ACIDFLOW_WAREHOUSE`` / ``ACIDFLOW_CATALOG_URL`` / ``ACIDFLOW_TXN_TIMEOUT`` are passed through
to the jobs. Nothing here touches a table: DAG files only name entry points and arguments.

Lineage: a job reports what it read and wrote to a file the operator names in
``ACIDFLOW_LINEAGE_FILE`` (:mod:`acidflow.lineage`). The operator then adds an asset event per
table whose rows changed to its outlet alias ``acidflow-tables`` (asset
``acid://<catalog id>/<db.table>``) and hands the datasets to the OpenLineage provider through
``get_openlineage_facets_on_complete`` (inputs: the batch's landing files; outputs: the tables).
"""
from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from airflow.configuration import conf
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import Asset, AssetAlias, Context

from acidflow.jobszip import build_jobs_zip
from acidflow.lineage import LINEAGE_ENV, read_lineage

#: the asset alias of table writes (see :mod:`acidflow_ops`)
TABLES_ALIAS = "acidflow-tables"
#: subcommands that change tables' rows: their tasks declare the alias as outlet
WRITING_SUBCOMMANDS = ("cdc-upsert", "ingest")

_HERE = Path(__file__).resolve().parent
DEFAULT_JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
PASS_THROUGH = ("ACIDFLOW_WAREHOUSE", "ACIDFLOW_CATALOG_URL", "ACIDFLOW_TXN_TIMEOUT",
                "ACIDFLOW_BUILD_DIR")

DEFAULT_ARGS = {"owner": "data-platform", "retries": 2}


def _conf(key: str, fallback: str) -> str:
    return conf.get("acidflow", key, fallback=fallback)


def repo() -> Path:
    """The acidflow checkout (``[acidflow] repo``; default the parent of ``dags/``)."""
    return Path(_conf("repo", str(_HERE.parent)))


def include(*parts: str) -> str:
    """A path under ``<repo>/include``."""
    return str(repo().joinpath("include", *parts))


def python_bin() -> str:
    """The Python that runs jobs in the worker and on executors (``[acidflow] pyspark_python``)."""
    return _conf("pyspark_python", sys.executable)


def job_env() -> dict[str, str]:
    """Environment of a spark-submit or CLI job: PYSPARK_PYTHON, JAVA_HOME, SPARK_LOCAL_IP,
    PATH with the venv's ``bin`` first (``spark-submit``, ``acidflow``), ACIDFLOW_* settings."""
    py = python_bin()
    env = {
        "PYSPARK_PYTHON": py,
        "PYSPARK_DRIVER_PYTHON": py,
        "JAVA_HOME": _conf("java_home", os.environ.get("JAVA_HOME") or DEFAULT_JAVA_HOME),
        "SPARK_LOCAL_IP": _conf("spark_local_ip", os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")),
        "PATH": os.path.dirname(py) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONUNBUFFERED": "1",
    }
    env["ACIDFLOW_SUITE_DIR"] = os.environ.get("ACIDFLOW_SUITE_DIR") or include("expectations")
    for k in PASS_THROUGH:
        if os.environ.get(k):
            env[k] = os.environ[k]
    return env


class AcidflowSparkSubmitOperator(SparkSubmitOperator):
    """``spark-submit <repo>/jobs/submit.py <subcommand> <args>`` on ``spark_default``.

    The package zip (``acidflow.jobszip.build_jobs_zip``) is built when the task runs, never when
    the DAG file is parsed. ``application_args`` stay templated (``{{ ds }}``, params).

    Args:
        subcommand: ``ingest``, ``cdc-upsert``, ``compact``, ``clean`` or ``validate``.
        args: its arguments (templated), or an XComArg resolving to the list.
        **kwargs: passed to ``SparkSubmitOperator`` (``task_id``, ``conn_id``, ``conf`` ...).
    """

    def __init__(self, *, subcommand: str, args: list[str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("name", f"acidflow-{subcommand}")
        kwargs.setdefault("conf", {"spark.sql.session.timeZone": "UTC",
                                   "spark.sql.shuffle.partitions": "4"})
        if subcommand in WRITING_SUBCOMMANDS:
            kwargs.setdefault("outlets", [AssetAlias(TABLES_ALIAS)])
        self.subcommand = subcommand
        self.lineage: dict[str, Any] | None = None
        # args may be an XComArg (resolved when the task runs): the subcommand goes in front
        # of the resolved list in execute()
        listed = args is None or isinstance(args, (list, tuple))
        super().__init__(application=str(repo() / "jobs" / "submit.py"),
                         application_args=[subcommand, *(args or [])] if listed else args,
                         **kwargs)

    def execute(self, context: Context) -> None:
        """Put the subcommand in front of the resolved arguments, build the package zip for
        ``py_files``, set the jobs' environment, then run ``spark-submit``."""
        args = list(self.application_args or [])
        if not args or args[0] != self.subcommand:
            self.application_args = [self.subcommand, *args]
        self.py_files = str(build_jobs_zip())
        fd, report = tempfile.mkstemp(prefix=f"acidflow-lineage-{self.task_id}-", suffix=".json")
        os.close(fd)
        self.env_vars = {**job_env(), **(self.env_vars or {}), LINEAGE_ENV: report}
        self._hook = None  # rebuild the hook with the values above
        try:
            super().execute(context)
            self.lineage = read_lineage(report)
        finally:
            os.unlink(report)
        self._emit_asset_events(context)

    def _emit_asset_events(self, context: Context) -> None:
        """One asset event per table whose rows the job changed, through the outlet alias."""
        if not self.lineage or not any(isinstance(o, AssetAlias) for o in self.outlets):
            return
        for out in self.lineage["outputs"]:
            if out.get("changed"):
                context["outlet_events"][AssetAlias(TABLES_ALIAS)].add(
                    Asset(f"{out['namespace']}/{out['name']}"),
                    extra={"job": self.lineage.get("job"), "table": out["name"]})

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage datasets of the run (the OpenLineage provider calls this after the
        task succeeded): inputs = landing files (namespace ``file``) or tables, outputs =
        tables (namespace ``acid://<catalog id>``, name ``db.table``), from the job's report.
        """
        # deferred: the OpenLineage provider is loaded only when lineage is collected
        from airflow.providers.common.compat.openlineage.facet import Dataset
        from airflow.providers.openlineage.extractors import OperatorLineage

        rep = self.lineage or {"inputs": [], "outputs": []}
        return OperatorLineage(
            inputs=[Dataset(namespace=d["namespace"], name=d["name"]) for d in rep["inputs"]],
            outputs=[Dataset(namespace=d["namespace"], name=d["name"]) for d in rep["outputs"]])


def has_change_files(input_path: str) -> bool:
    """Whether the landing path holds change files (``acidflow.cdc.apply.change_files``).

    Raises:
        FileNotFoundError: the path does not exist (names it).
    """
    # deferred: the CDC package is not loaded when the DAG files are parsed
    from acidflow.cdc.apply import change_files

    return bool(change_files(input_path))


def cli_task(task_id: str, command: str, env_extra: dict[str, str] | None = None,
             **kwargs: Any) -> BashOperator:
    """A ``BashOperator`` running a catalog-only step of the package in the worker with the
    jobs' Python, e.g. ``jobs/submit.py compact --initiate`` (templated); its last stdout line
    goes to XCom. ``env_extra`` adds (templated) environment variables."""
    env = {**job_env(), **(env_extra or {})}
    cmd = f"cd {shlex.quote(str(repo()))} && {shlex.quote(python_bin())} {command}"
    return BashOperator(task_id=task_id, bash_command=cmd, env=env, append_env=True, **kwargs)
