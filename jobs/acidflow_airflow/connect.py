"""Spark tasks on a long-lived Spark Connect server instead of ``spark-submit``.

A Spark task runs in one of two modes:

* ``submit`` (the default): ``spark-submit jobs/submit.py <subcommand> ...``, a new JVM per
  task (:class:`acidflow_airflow.operator.AcidflowSparkSubmitOperator`);
* ``connect``: the same ``acidflow.entry`` job function, in the Airflow worker's process, with
  a Spark Connect session (``SPARK_REMOTE``, :func:`acidflow.spark.get_spark`) on the server
  an Airflow connection of type ``spark_connect`` names (``SparkConnectHook`` builds its
  ``sc://host:port`` URL). No JVM starts in the worker.

The mode: the DAG run's param ``spark_mode`` (``submit`` / ``connect``; empty: the Airflow
Variable ``acidflow_spark_mode``, default ``submit``); the connection: the param
``spark_connect_conn_id`` (empty: the Variable ``acidflow_spark_connect_conn_id``, default
``spark_connect_default``). Every DAG with Spark tasks carries both params
(:func:`spark_params`). The server must import acidflow in its Python workers
(``docs/spark-connect.md``; ``make connect`` starts one that does).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
from airflow.sdk import Param, Variable
from airflow.sdk.exceptions import AirflowException

from acidflow.lineage import LINEAGE_ENV, read_lineage
from acidflow.spark import get_spark
from acidflow.sparkmode import REMOTE_ENV
from acidflow_airflow.config import job_env

#: the DAG params choosing the mode and the Connect server's Airflow connection
SPARK_MODE_PARAM, CONN_ID_PARAM = "spark_mode", "spark_connect_conn_id"
#: the Airflow Variables used when those params are empty
MODE_VARIABLE, CONN_ID_VARIABLE = "acidflow_spark_mode", "acidflow_spark_connect_conn_id"
#: the modes
SUBMIT, CONNECT = "submit", "connect"


def spark_params() -> dict[str, Param]:
    """The two params of a DAG with Spark tasks (``params={..., **spark_params()}``)."""
    return {
        SPARK_MODE_PARAM: Param(
            "",
            enum=["", SUBMIT, CONNECT],
            description="submit: spark-submit per task; connect: a Spark Connect server; "
            f"empty: the Variable {MODE_VARIABLE} (default submit)",
        ),
        CONN_ID_PARAM: Param(
            "",
            type="string",
            description="with connect: the Airflow connection (type spark_connect) of the "
            f"server; empty: the Variable {CONN_ID_VARIABLE} (default "
            f"{SparkConnectHook.default_conn_name})",
        ),
    }


def spark_mode(params: Mapping[str, Any]) -> tuple[str, str]:
    """``(mode, connection id)`` for a run's params (module doc: params, then Variables).

    Raises:
        AirflowException: the mode is neither ``submit`` nor ``connect`` (names it).
    """
    mode = params.get(SPARK_MODE_PARAM) or Variable.get(MODE_VARIABLE, default=SUBMIT)
    if mode not in (SUBMIT, CONNECT):
        raise AirflowException(
            f"spark_mode {mode!r} is not one of {SUBMIT!r}, {CONNECT!r} (the param "
            f"{SPARK_MODE_PARAM} or the Variable {MODE_VARIABLE})"
        )
    conn_id = params.get(CONN_ID_PARAM) or Variable.get(
        CONN_ID_VARIABLE, default=SparkConnectHook.default_conn_name
    )
    return str(mode), str(conn_id)


def run_connect_job(subcommand: str, args: Sequence[str], conn_id: str) -> dict[str, Any] | None:
    """Run ``acidflow.entry``'s ``subcommand`` in this process on the Spark Connect server of
    the Airflow connection ``conn_id``; the session is stopped afterwards and the process
    environment restored.

    The job sees the environment of a spark-submit job (the ``ACIDFLOW_*`` of
    :func:`acidflow_airflow.config.job_env`), ``SPARK_REMOTE`` = the server's URL and a
    lineage report file (``acidflow.lineage``).

    Args:
        subcommand: an ``acidflow.entry`` subcommand (``cdc-upsert``, ``validate`` ...).
        args: its arguments.
        conn_id: an Airflow connection of type ``spark_connect``.
    Returns:
        The job's lineage report, or ``None`` when it wrote none.
    Raises:
        AirflowException: the job's exit code was not 0.
    """
    # deferred: the job modules load only in a task that runs a job, never at DAG parsing
    from acidflow.entry import main as run_entry

    url = SparkConnectHook(conn_id=conn_id).get_connection_url()
    fd, report = tempfile.mkstemp(prefix=f"acidflow-lineage-{subcommand}-", suffix=".json")
    os.close(fd)
    env = {k: v for k, v in job_env().items() if k.startswith("ACIDFLOW_")}
    env.update({LINEAGE_ENV: report, REMOTE_ENV: url})
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        spark = get_spark(remote=url)  # the job's own get_spark() returns this session
        try:
            print(f"acidflow {subcommand} on Spark Connect {url} (connection {conn_id})")
            code = run_entry([subcommand, *args])
        finally:
            spark.stop()
        if code:
            raise AirflowException(f"acidflow {subcommand} on {url} failed (exit {code})")
        return read_lineage(report)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        os.unlink(report)
