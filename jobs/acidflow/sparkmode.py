"""Classic or Spark Connect: which kind of SparkSession a job holds, and the one error a
classic-only feature raises on Connect.

A Spark Connect session (``pyspark.sql.connect.session.SparkSession``, built by
``SparkSession.builder.remote("sc://host:port")`` or ``$SPARK_REMOTE``) has no driver JVM in
this process: ``spark.sparkContext``, ``spark._jvm``, ``spark._jsc`` and RDDs raise
``PySparkNotImplementedError`` there. Job code asks :func:`is_connect` instead of touching them,
and a feature that needs the JVM calls :func:`require_classic` first.

This module imports neither pyspark, pyarrow nor the rest of acidflow (only
:mod:`acidflow.errors`), so every package that takes a session may import it, the CLI too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acidflow.errors import AcidflowError

if TYPE_CHECKING:
    import pyarrow as pa

#: Spark's own variable naming a Connect server (``sc://host:port``); ``acidflow.spark.get_spark``
#: builds a remote session when it is set
REMOTE_ENV = "SPARK_REMOTE"


class ConnectUnsupportedError(AcidflowError, NotImplementedError):
    """A classic-only feature (one that needs the driver's JVM) was asked of a Spark Connect
    session; the message names the feature and what to do instead."""


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its class lives in
    ``pyspark.sql.connect``), told without importing the Connect client (grpc)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def require_classic(spark: Any, feature: str, instead: str) -> None:
    """Refuse a classic-only feature on a Spark Connect session.

    Args:
        spark: the session.
        feature: what needs the driver's JVM (e.g. ``"the engine reader"``).
        instead: what to do instead (a setting, or "use a classic session").
    Raises:
        ConnectUnsupportedError: ``spark`` is a Connect session.
    """
    if is_connect(spark):
        raise ConnectUnsupportedError(
            f"{feature} needs the Spark driver's JVM in this process, which a Spark Connect "
            f"session does not have; {instead}"
        )


def task_frame(spark: Any, payloads: list[str], column: str) -> Any:
    """A one-column DataFrame of ``payloads`` (``<column> string``), one row per partition:
    the input of a ``mapInArrow`` that runs one task per payload, on a classic session and on
    Spark Connect alike (``spark.createDataFrame`` of a local list, then a round-robin
    ``repartition(n)``, which adaptive execution never coalesces; no RDD, no SparkContext).

    Args:
        spark: the session.
        payloads: the tasks' texts (JSON), at least one.
        column: the column's name.
    Returns:
        The DataFrame.
    """
    df = spark.createDataFrame([(p,) for p in payloads], f"{column} string")
    return df.repartition(len(payloads)) if len(payloads) > 1 else df


def arrow_frame(spark: Any, table: pa.Table) -> Any:
    """``spark.createDataFrame`` of an Arrow table, empty ones included: the Connect client
    cannot infer a schema from zero rows, so the Spark schema is derived from the Arrow one
    (``pyspark.sql.pandas.types.from_arrow_schema``) and passed along.

    Args:
        spark: the session (classic or Connect).
        table: the rows.
    Returns:
        The DataFrame.
    """
    if table.num_rows:
        return spark.createDataFrame(table)
    # deferred: this module stays importable without pyspark (module doc)
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame([], from_arrow_schema(table.schema))
