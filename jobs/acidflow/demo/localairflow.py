"""Run acidflow's DAGs on embedded defaults, as ``make demo`` and the tests do: a private
``AIRFLOW_HOME`` (SQLite metadata), the repo's ``dags/`` and ``plugins/``, ``spark_default`` =
``local[2]``, the venv's ``bin`` first on ``PATH``. Only builds environments and runs the
``airflow`` command in subprocesses: nothing here imports Airflow. Driver-side only (never in
the executor zip), like the rest of :mod:`acidflow.demo`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DEFAULT_HOME = REPO / ".airflow"


def airflow_env(
    home: str | os.PathLike = DEFAULT_HOME,
    *,
    warehouse: str | None = None,
    spark_master: str = "local[2]",
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """Environment for ``airflow`` commands on embedded defaults.

    Args:
        home: ``AIRFLOW_HOME`` (created); metadata in ``<home>/airflow.db``.
        warehouse: ``ACIDFLOW_WAREHOUSE`` for the jobs (default: inherited / ``./warehouse``).
        spark_master: host of the ``spark_default`` connection (``local[2]`` or
            ``spark://127.0.0.1:7077``).
        extra: more variables.
    """
    home = Path(home).resolve()
    home.mkdir(parents=True, exist_ok=True)
    venv_bin = os.path.dirname(sys.executable)
    if spark_master.startswith("spark://"):
        host, port = spark_master.rsplit(":", 1)
        conn = {"conn_type": "spark", "host": host, "port": int(port)}
    else:
        conn = {"conn_type": "spark", "host": spark_master}
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(conn),
            "AIRFLOW__ACIDFLOW__PYSPARK_PYTHON": sys.executable,
            "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
            "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            "PYTHONWARNINGS": "ignore",
        }
    )
    if warehouse:
        env["ACIDFLOW_WAREHOUSE"] = str(Path(warehouse).resolve())
    env.update(extra or {})
    return env


def airflow(
    *args: str,
    env: dict[str, str],
    check: bool = True,
    capture: bool = False,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``airflow <args>`` with the venv's Airflow.

    Raises:
        subprocess.CalledProcessError: non-zero exit when ``check``.
    """
    exe = str(Path(sys.executable).with_name("airflow"))
    return subprocess.run(
        [exe, *args], env=env, check=check, text=True, timeout=timeout, capture_output=capture
    )


def migrate(env: dict[str, str]) -> None:
    """``airflow db migrate`` (idempotent; about 4 s on SQLite)."""
    airflow("db", "migrate", env=env, capture=True)


def dags_test(
    dag_id: str,
    env: dict[str, str],
    conf: dict[str, Any] | None = None,
    logical_date: str | None = None,
    timeout: float | None = 1800,
) -> subprocess.CompletedProcess[str]:
    """``airflow dags test DAG [DATE] [-c CONF]``: one in-process run; returns the result
    (its output captured). The run's state is in the output's last lines."""
    args = ["dags", "test", dag_id]
    if logical_date:
        args.append(logical_date)
    if conf:
        args += ["-c", json.dumps(conf)]
    return airflow(*args, env=env, check=False, capture=True, timeout=timeout)
