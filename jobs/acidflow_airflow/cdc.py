"""``acid_cdc``'s steps before the Spark job: the pull from a PostgreSQL replication slot and the
test for pending change files.

Both are plain Python run by Airflow's ``@task`` decorators: what the DAG does depends on its
params here, not in a Jinja template of a shell command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from airflow.providers.standard.hooks.subprocess import SubprocessHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

from acidflow_airflow.config import job_env, python_bin, repo

#: the variable the ``acidflow cdc pull`` command reads its ``--dsn`` from
DSN_ENV = "ACIDFLOW_CDC_DSN"
#: the ``source`` param's value that pulls from a replication slot
POSTGRES = "postgres"


def pull_argv(params: Mapping[str, Any]) -> list[str]:
    """``python -m acidflow.cli cdc pull`` arguments for the DAG's params (the DSN goes through
    :data:`DSN_ENV`, never the command line)."""
    return [
        "-m",
        "acidflow.cli",
        "cdc",
        "pull",
        "--slot",
        str(params["slot"]),
        "--landing",
        str(params["input_path"]),
        "--create-slot",
    ]


def pull_changes(params: Mapping[str, Any]) -> str:
    """Land the changes of the slot ``params["slot"]`` in ``params["input_path"]`` when
    ``params["source"]`` is ``postgres`` (``acidflow cdc pull``, the DSN from the Airflow
    connection ``params["postgres_conn_id"]``); with any other source there is nothing to pull
    and nothing runs.

    Returns:
        the command's last output line, or a line saying there was nothing to pull (to XCom).
    Raises:
        AirflowException: ``postgres`` without ``postgres_conn_id``, or the pull failed (its
            exit status; the output is in the task log).
    """
    if params.get("source") != POSTGRES:
        message = "source is the landing path: nothing to pull"
        print(message)
        return message
    conn_id = params.get("postgres_conn_id")
    if not conn_id:
        raise AirflowException(
            "source=postgres needs the param postgres_conn_id (the Airflow "
            "connection of the source database)"
        )
    env = {**os.environ, **job_env(), DSN_ENV: BaseHook.get_connection(conn_id).get_uri()}
    result = SubprocessHook().run_command(
        [python_bin(), *pull_argv(params)], env=env, cwd=str(repo())
    )
    if result.exit_code != 0:
        raise AirflowException(
            f"acidflow cdc pull failed (exit {result.exit_code}): {result.output}"
        )
    return str(result.output)


def has_change_files(input_path: str) -> bool:
    """Whether the landing path holds change files (``acidflow.cdc.files.change_files``).

    Raises:
        FileNotFoundError: the path does not exist (names it).
    """
    # deferred: the CDC package is not loaded when the DAG files are parsed
    from acidflow.cdc.files import change_files

    return bool(change_files(input_path))
