"""SparkSession construction with the settings acidflow relies on.

Sets, when not already set by the caller's environment: ``SPARK_LOCAL_IP=127.0.0.1`` (Spark
otherwise binds the external interface), ``PYSPARK_PYTHON`` = this interpreter (workers must see
our packages) and ``JAVA_HOME`` (derived from ``java`` on PATH). Spark's ORC codec is forced to
zlib: Spark 4 defaults to zstd, which Hive 3.1's ORC 1.5 readers cannot read. A new session
has the ``acid`` data source registered (:func:`acidflow.datasource.register`).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def prepare_environment() -> None:
    """Fill in ``SPARK_LOCAL_IP``, ``PYSPARK_PYTHON`` and ``JAVA_HOME`` if they are unset."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if "JAVA_HOME" not in os.environ:
        java = shutil.which("java")
        if java:
            os.environ["JAVA_HOME"] = str(Path(java).resolve().parent.parent)


def get_spark(app_name: str = "acidflow", master: str | None = None, **conf: str) -> SparkSession:
    """Return the active SparkSession or build one.

    Args:
        app_name: Spark application name.
        master: Spark master URL; default ``$ACIDFLOW_SPARK_MASTER`` or ``local[2]``. Ignored when
            running under spark-submit (the session already exists).
        **conf: extra Spark configuration (dots written as given, e.g. ``{"spark.ui.enabled": "false"}``).
    Returns:
        ``pyspark.sql.SparkSession`` with session time zone UTC and ORC codec zlib.
    """
    prepare_environment()
    # deferred: pyspark only when a session is wanted; CLI reads and catalog commands skip it
    from pyspark.sql import SparkSession

    # deferred: the data source module imports pyspark (see above)
    from acidflow.datasource import register

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the JVM gateway already exists (PYSPARK_GATEWAY_PORT) and carries --master.
    if master or not os.environ.get("PYSPARK_GATEWAY_PORT"):
        builder = builder.master(master or os.environ.get("ACIDFLOW_SPARK_MASTER", "local[2]"))
    defaults = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.orc.compression.codec": "zlib",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": os.environ.get("ACIDFLOW_DRIVER_MEMORY", "4g"),
    }
    defaults.update(conf)
    for key, value in defaults.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)  # spark.read.format("acid") / df.write.format("acid")
    return spark
