"""The acidflow tasks' operators: :class:`AcidflowSparkSubmitOperator` for everything Spark does
(on spark-submit, or a Spark Connect server when the run asks: :mod:`acidflow_airflow.connect`),
:class:`AcidflowSparkConnectOperator` for a task always on Connect, :func:`cli_command` for
catalog-only steps of the command line.

``AcidflowSparkSubmitOperator`` is a ``SparkSubmitOperator`` that submits
``jobs/submit.py <subcommand> ...`` on the connection ``spark_default`` (``local[2]`` by default,
a standalone master when configured) with the ``acidflow`` package shipped as a zip in
``py_files`` (``acidflow.jobszip``: the package only, never this one). Catalog-only steps
(initiator, cleaner) run the same package's command line in the worker: ``@task.bash`` tasks
returning :func:`cli_command` for the arguments their params pick.
Paths and the jobs' environment: :mod:`acidflow_airflow.config`.

Lineage: a job reports what it read and wrote to a file the operator names in
``ACIDFLOW_LINEAGE_FILE`` (:mod:`acidflow.lineage`). The operator then adds an asset event per
table whose rows changed to its outlet alias ``acidflow-tables`` (asset
``acid://<catalog id>/<db.table>``) and hands the datasets to the OpenLineage provider through
``get_openlineage_facets_on_complete`` (inputs: the batch's landing files; outputs: the tables).
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, AssetAlias, BaseOperator, Context, XComArg

from acidflow.jobszip import build_jobs_zip
from acidflow.lineage import LINEAGE_ENV, read_lineage
from acidflow.spark import acid_reader_jar, kafka_spark_jars
from acidflow_airflow.config import job_env, python_bin, repo
from acidflow_airflow.connect import CONNECT, run_connect_job, spark_mode

#: the asset alias every table-writing task declares as outlet; its asset events name the
#: tables written (``acid://<catalog id>/<db.table>``)
TABLES_ALIAS = "acidflow-tables"
#: subcommands that change tables' rows: their tasks declare the alias as outlet
WRITING_SUBCOMMANDS = ("cdc-upsert", "ingest")
#: subcommands that may read Kafka (``cdc-upsert`` with a Kafka source): their spark-submit
#: gets Spark's Kafka connector jars (``acidflow.spark.kafka_spark_jars``) unless ``jars`` is set;
#: every subcommand gets acidflow's JVM reader (``acidflow.spark.acid_reader_jar``) when built
KAFKA_SUBCOMMANDS = ("cdc-upsert",)
#: Spark settings of every job unless the task passes ``conf``
DEFAULT_SPARK_CONF = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4"}


class _TableLineage:
    """Asset events and OpenLineage datasets from a job's lineage report (``self.lineage``),
    shared by the spark-submit and the Spark Connect operators."""

    lineage: dict[str, Any] | None
    outlets: Any

    def _emit_asset_events(self, context: Context) -> None:
        """One asset event per table whose rows the job changed, through the outlet alias."""
        if not self.lineage or not any(isinstance(o, AssetAlias) for o in self.outlets):
            return
        for out in self.lineage["outputs"]:
            if out.get("changed"):
                context["outlet_events"][AssetAlias(TABLES_ALIAS)].add(
                    Asset(f"{out['namespace']}/{out['name']}"),
                    extra={"job": self.lineage.get("job"), "table": out["name"]},
                )

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
            outputs=[Dataset(namespace=d["namespace"], name=d["name"]) for d in rep["outputs"]],
        )


class AcidflowSparkSubmitOperator(_TableLineage, SparkSubmitOperator):
    """``spark-submit <repo>/jobs/submit.py <subcommand> <args>`` on ``spark_default``.

    The package zip (``acidflow.jobszip.build_jobs_zip``) is built when the task runs, never when
    the DAG file is parsed. ``application_args`` stay templated (``{{ ds }}``, params).

    Everything run-specific (the zip in ``py_files``, the jobs' environment and the lineage
    report's path in ``env_vars``, the subcommand in front of the resolved ``application_args``)
    goes into the parent's public, templated attributes before the parent's ``execute`` builds
    its hook from them; the hook itself is never touched here.

    Args:
        subcommand: ``ingest``, ``cdc-upsert``, ``compact``, ``clean`` or ``validate``.
        args: its arguments (templated), or an XComArg resolving to the list.
        **kwargs: passed to ``SparkSubmitOperator`` (``task_id``, ``conn_id``, ``conf`` ...).
    """

    def __init__(
        self, *, subcommand: str, args: Sequence[str] | XComArg | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("name", f"acidflow-{subcommand}")
        kwargs.setdefault("conf", dict(DEFAULT_SPARK_CONF))
        if subcommand in WRITING_SUBCOMMANDS:
            kwargs.setdefault("outlets", [AssetAlias(TABLES_ALIAS)])
        self.subcommand = subcommand
        self.lineage: dict[str, Any] | None = None
        application_args: Any
        if args is None or isinstance(args, (list, tuple)):
            application_args = [subcommand, *(args or [])]
        else:
            # an XComArg, resolved to the list when the task runs: the subcommand goes in front
            # of it in execute()
            application_args = args
        super().__init__(
            application=str(repo() / "jobs" / "submit.py"),
            application_args=application_args,
            **kwargs,
        )

    def execute(self, context: Context) -> None:
        """Put the subcommand in front of the resolved arguments, build the package zip for
        ``py_files``, set the jobs' environment, then run ``spark-submit``; or, when the run's
        ``spark_mode`` is ``connect`` (:func:`acidflow_airflow.connect.spark_mode`), run the
        job with the worker's Python on the Spark Connect server instead."""
        args = list(self.application_args or [])
        if not args or args[0] != self.subcommand:
            args = [self.subcommand, *args]
            self.application_args = args
        mode, conn_id = spark_mode(context.get("params") or {})
        if mode == CONNECT:
            self.lineage = run_connect_job(self.subcommand, [str(a) for a in args[1:]], conn_id)
            self._emit_asset_events(context)
            return
        self.py_files = str(build_jobs_zip())
        if not self.jars:
            # Spark's Kafka connector (make kafka-jars) and acidflow's JVM snapshot reader
            # (make jvm-reader): the JVM of spark-submit starts with them
            jars = kafka_spark_jars() if self.subcommand in KAFKA_SUBCOMMANDS else []
            reader = acid_reader_jar()
            jars += [reader] if reader else []
            if jars:
                self.jars = ",".join(jars)
        fd, report = tempfile.mkstemp(prefix=f"acidflow-lineage-{self.task_id}-", suffix=".json")
        os.close(fd)
        self.env_vars = {**job_env(), **(self.env_vars or {}), LINEAGE_ENV: report}
        try:
            super().execute(context)
            self.lineage = read_lineage(report)
        finally:
            os.unlink(report)
        self._emit_asset_events(context)


class AcidflowSparkConnectOperator(_TableLineage, BaseOperator):
    """``jobs/submit.py <subcommand> <args>`` run by the worker's Python (no spark-submit) on the
    Spark Connect server of the Airflow connection ``conn_id`` (type ``spark_connect``), whatever the run's
    ``spark_mode`` (:func:`acidflow_airflow.connect.run_connect_job`). Lineage as
    :class:`AcidflowSparkSubmitOperator`'s.

    Args:
        subcommand: ``ingest``, ``cdc-upsert``, ``compact``, ``clean`` or ``validate``.
        args: its arguments (templated).
        conn_id: the server's connection (default ``spark_connect_default``).
        **kwargs: passed to ``BaseOperator``.
    """

    template_fields = ("args",)

    def __init__(
        self,
        *,
        subcommand: str,
        args: Sequence[str] | None = None,
        conn_id: str = SparkConnectHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        if subcommand in WRITING_SUBCOMMANDS:
            kwargs.setdefault("outlets", [AssetAlias(TABLES_ALIAS)])
        super().__init__(**kwargs)
        self.subcommand, self.args, self.conn_id = subcommand, args or [], conn_id
        self.lineage: dict[str, Any] | None = None

    def execute(self, context: Context) -> None:
        """Run the job on the server, then emit the asset events of the tables it changed."""
        self.lineage = run_connect_job(self.subcommand, [str(a) for a in self.args], self.conn_id)
        self._emit_asset_events(context)


def cli_command(*args: str) -> str:
    """The shell command running ``<jobs' Python> <args>`` in the checkout, each argument
    quoted: ``cli_command("jobs/submit.py", "clean")``. For ``@task.bash`` tasks whose Python
    function picks the arguments (with :func:`acidflow_airflow.config.job_env` as ``env``)."""
    argv = " ".join(shlex.quote(a) for a in (python_bin(), *args))
    return f"cd {shlex.quote(str(repo()))} && {argv}"
