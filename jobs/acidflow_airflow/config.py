"""Where the jobs are and how they run: the ``[acidflow]`` keys that locate the checkout and the
jobs' Python, and the environment of a spark-submit or CLI job.

Configuration (Airflow config section ``[acidflow]``, i.e. ``AIRFLOW__ACIDFLOW__<KEY>``;
environment and defaults otherwise) -- nothing is set by hand in a task:

==================  ====================================  =================================
key                 default                               used for
==================  ====================================  =================================
pyspark_python      the Python running Airflow            ``PYSPARK_PYTHON`` of driver/executors
java_home           ``$JAVA_HOME`` or Debian's JDK 17      ``JAVA_HOME`` of spark-submit
spark_local_ip      ``$SPARK_LOCAL_IP`` or 127.0.0.1      ``SPARK_LOCAL_IP``
repo                the checkout holding this package     ``jobs/submit.py``, ``include/``
==================  ====================================  =================================

``ACIDFLOW_WAREHOUSE`` / ``ACIDFLOW_CATALOG_URL`` / ``ACIDFLOW_TXN_TIMEOUT`` /
``ACIDFLOW_BUILD_DIR`` are passed through to the jobs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from airflow.configuration import conf

#: ``<repo>/jobs/acidflow_airflow/config.py`` -> ``<repo>``
_DEFAULT_REPO = Path(__file__).resolve().parents[2]
DEFAULT_JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
#: variables of the worker's environment handed to the jobs when set
PASS_THROUGH = (
    "ACIDFLOW_WAREHOUSE",
    "ACIDFLOW_CATALOG_URL",
    "ACIDFLOW_TXN_TIMEOUT",
    "ACIDFLOW_BUILD_DIR",
)
#: owner and retries of every acidflow task (``notifiers.default_args`` adds the notifiers)
DEFAULT_ARGS: dict[str, Any] = {"owner": "data-platform", "retries": 2}


def setting(key: str, fallback: str) -> str:
    """``[acidflow] <key>`` of the Airflow configuration, ``fallback`` when unset."""
    return str(conf.get("acidflow", key, fallback=fallback))


def repo() -> Path:
    """The acidflow checkout (``[acidflow] repo``; default the folder holding ``jobs/``)."""
    return Path(setting("repo", str(_DEFAULT_REPO)))


def include(*parts: str) -> str:
    """A path under ``<repo>/include``."""
    return str(repo().joinpath("include", *parts))


def python_bin() -> str:
    """The Python that runs jobs in the worker and on executors (``[acidflow] pyspark_python``)."""
    return setting("pyspark_python", sys.executable)


def job_env() -> dict[str, str]:
    """Environment of a spark-submit or CLI job: PYSPARK_PYTHON, JAVA_HOME, SPARK_LOCAL_IP,
    PATH with the venv's ``bin`` first (``spark-submit``, ``acidflow``), ACIDFLOW_* settings."""
    py = python_bin()
    env = {
        "PYSPARK_PYTHON": py,
        "PYSPARK_DRIVER_PYTHON": py,
        "JAVA_HOME": setting("java_home", os.environ.get("JAVA_HOME") or DEFAULT_JAVA_HOME),
        "SPARK_LOCAL_IP": setting("spark_local_ip", os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")),
        "PATH": os.path.dirname(py) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONUNBUFFERED": "1",
    }
    env["ACIDFLOW_SUITE_DIR"] = os.environ.get("ACIDFLOW_SUITE_DIR") or include("expectations")
    for k in PASS_THROUGH:
        if os.environ.get(k):
            env[k] = os.environ[k]
    return env
