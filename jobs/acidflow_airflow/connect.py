"""Spark tasks on a long-lived Spark Connect server instead of ``spark-submit``.

A Spark task runs in one of two modes:

* ``submit`` (the default): ``spark-submit jobs/submit.py <subcommand> ...``, a new JVM per
  task (:class:`acidflow_airflow.operator.AcidflowSparkSubmitOperator`);
* ``connect``: the same ``jobs/submit.py`` job, run by the worker's Python (no
  ``spark-submit``, no JVM) with ``--remote``: its session is a Spark Connect one
  (:func:`acidflow.spark.get_spark`) on the server an Airflow connection of type
  ``spark_connect`` names (``SparkConnectHook`` builds its ``sc://host:port`` URL). A child
  process rather than a call in the task's process: ``acidflow_airflow`` never imports the job
  modules (the import contract ``airflow-package-uses-public-names``), and a job's process-wide
  state (Spark's Connect mode, the environment) ends with it.

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
from airflow.providers.standard.hooks.subprocess import SubprocessHook
from airflow.sdk import Param, Variable
from airflow.sdk.exceptions import AirflowException

from acidflow.lineage import LINEAGE_ENV, read_lineage
from acidflow.sparkmode import REMOTE_ENV
from acidflow_airflow.config import job_env, python_bin, repo

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


def connect_command(subcommand: str, args: Sequence[str], url: str) -> list[str]:
    """``<jobs' Python> <repo>/jobs/submit.py --remote <url> <subcommand> <args>``."""
    submit_py = str(repo() / "jobs" / "submit.py")
    return [python_bin(), submit_py, "--remote", url, subcommand, *args]


def run_connect_job(subcommand: str, args: Sequence[str], conn_id: str) -> dict[str, Any] | None:
    """Run ``jobs/submit.py <subcommand> <args>`` on the Spark Connect server of the Airflow
    connection ``conn_id`` (:func:`connect_command`, module doc), its output in the task log.

    The job gets a spark-submit job's environment (:func:`acidflow_airflow.config.job_env`)
    and a lineage report file (``acidflow.lineage``).

    Args:
        subcommand: an ``acidflow.entry`` subcommand (``cdc-upsert``, ``validate`` ...).
        args: its arguments.
        conn_id: an Airflow connection of type ``spark_connect``.
    Returns:
        The job's lineage report, or ``None`` when it wrote none.
    Raises:
        AirflowException: the job's exit status was not 0.
    """
    url = SparkConnectHook(conn_id=conn_id).get_connection_url()
    fd, report = tempfile.mkstemp(prefix=f"acidflow-lineage-{subcommand}-", suffix=".json")
    os.close(fd)
    env = {**os.environ, **job_env(), LINEAGE_ENV: report}
    env.pop(REMOTE_ENV, None)  # --remote names the server
    print(f"acidflow {subcommand} on Spark Connect {url} (connection {conn_id})")
    try:
        result = SubprocessHook().run_command(
            connect_command(subcommand, args, url), env=env, cwd=str(repo())
        )
        if result.exit_code != 0:
            raise AirflowException(
                f"acidflow {subcommand} on {url} failed (exit {result.exit_code}): {result.output}"
            )
        return read_lineage(report)
    finally:
        os.unlink(report)
