"""SparkSession construction with the settings acidflow relies on: a classic session (a local
JVM, or spark-submit's), or a Spark Connect one when a server is named (``$SPARK_REMOTE`` /
``get_spark(remote=...)``; ``docs/spark-connect.md``). The settings live in
:func:`session_conf`, shared with the Connect server ``devservers.sparkconnect`` starts.

Sets, when not already set by the caller's environment: ``SPARK_LOCAL_IP=127.0.0.1`` (Spark
otherwise binds the external interface), ``PYSPARK_PYTHON`` = this interpreter (workers must see
our packages) and ``JAVA_HOME`` (derived from ``java`` on PATH). Spark's ORC codec is forced to
zlib: Spark 4 defaults to zstd, which Hive 3.1's ORC 1.5 readers cannot read. A new session
has the ``acid`` data source registered (:func:`acidflow.datasource.register`);
:func:`register` gives every catalog table its Spark SQL name ``db.t``.

Object storage: when ``make hadoop-aws`` has fetched Hadoop's S3A connector (hadoop-aws
matching PySpark's Hadoop, 3.5.0, and the AWS SDK v2 bundle) into ``.cache/hadoop-aws/`` (or
``$ACIDFLOW_HADOOP_AWS_JARS`` names another folder), its jars go on the driver's and executors' class path
(``spark.driver.extraClassPath`` / ``spark.executor.extraClassPath``), ``s3://``
and ``s3a://`` map to ``org.apache.hadoop.fs.s3a.S3AFileSystem`` (``spark.hadoop.fs.s3.impl``),
and the S3A settings come from the same AWS environment s3fs reads (:func:`s3a_settings`), so
Spark reads landing files and table locations on S3 like the Python paths do.

Kafka: when ``make kafka-jars`` has fetched Spark's Kafka connector (``tools/kafka/spark/pom.xml``)
into ``.cache/kafka/spark/`` (or ``$ACIDFLOW_KAFKA_SPARK_JARS`` names another folder), its jars go
on the same class paths, so ``spark.read.format("kafka")`` / ``readStream.format("kafka")`` work
(``acidflow.cdc.kafka``). Under ``spark-submit`` the JVM already runs: the Airflow operator passes
them with ``--jars`` (``acidflow_airflow.operator``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, cast

from acidflow.config import Settings
from acidflow.read.readerjar import acid_reader_jar as acid_reader_jar
from acidflow.sparkmode import REMOTE_ENV, is_connect

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


#: where ``make hadoop-aws`` leaves the S3A jars (repository root/.cache/hadoop-aws)
HADOOP_AWS_DIR = Path(__file__).resolve().parents[2] / ".cache" / "hadoop-aws"


def hadoop_aws_jars() -> list[str]:
    """The S3A jars (absolute paths, sorted): ``*.jar`` of ``$ACIDFLOW_HADOOP_AWS_JARS`` or
    :data:`HADOOP_AWS_DIR`; empty when not fetched."""
    folder = Path(os.environ.get("ACIDFLOW_HADOOP_AWS_JARS") or HADOOP_AWS_DIR)
    return sorted(str(p) for p in folder.glob("*.jar")) if folder.is_dir() else []


#: ``spark.driver.memory`` when ``$ACIDFLOW_DRIVER_MEMORY`` is unset. In ``local[*]`` the driver
#: JVM is the executor too, and its heap grows to what it may use: 3g keeps a 10M-row initial
#: load (the largest step) under 4 GB of process-tree RSS, 4g did not (bench/NOTES.md, "Targets not met").
DEFAULT_DRIVER_MEMORY = "3g"


def driver_memory() -> str:
    """``spark.driver.memory`` of acidflow's sessions: ``$ACIDFLOW_DRIVER_MEMORY``, else
    :data:`DEFAULT_DRIVER_MEMORY` (a JVM size string such as ``3g`` or ``2560m``)."""
    return os.environ.get("ACIDFLOW_DRIVER_MEMORY") or DEFAULT_DRIVER_MEMORY


#: where ``make kafka-jars`` leaves Spark's Kafka connector (repository root/.cache/kafka/spark)
KAFKA_SPARK_DIR = Path(__file__).resolve().parents[2] / ".cache" / "kafka" / "spark"


def kafka_spark_jars() -> list[str]:
    """Spark's Kafka connector jars (absolute paths, sorted): ``*.jar`` of
    ``$ACIDFLOW_KAFKA_SPARK_JARS`` or :data:`KAFKA_SPARK_DIR`; empty when not fetched."""
    folder = Path(os.environ.get("ACIDFLOW_KAFKA_SPARK_JARS") or KAFKA_SPARK_DIR)
    return sorted(str(p) for p in folder.glob("*.jar")) if folder.is_dir() else []


def s3a_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Hadoop S3A settings (``fs.s3a.*`` keys, without the ``spark.hadoop.`` prefix) from the
    standard AWS environment, so Spark sees the store s3fs/botocore see:

    * ``fs.s3.impl`` / ``fs.s3a.impl`` = ``S3AFileSystem`` (``s3://`` URLs are S3A's too);
    * ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` -> ``fs.s3a.endpoint``, with path-style
      access (``fs.s3a.path.style.access``; a custom endpoint such as MinIO or moto rarely
      serves virtual-host buckets) and ``fs.s3a.connection.ssl.enabled=false`` for http://;
    * ``AWS_REGION`` or ``AWS_DEFAULT_REGION`` -> ``fs.s3a.endpoint.region``;
    * ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` ->
      ``fs.s3a.access.key`` / ``secret.key`` / ``session.token`` (without them S3A's default
      provider chain applies: profile, instance role...).

    Args:
        env: the environment (default ``os.environ``).
    Returns:
        ``{hadoop key: value}``.
    """
    env = os.environ if env is None else env
    impl = "org.apache.hadoop.fs.s3a.S3AFileSystem"
    out = {"fs.s3.impl": impl, "fs.s3a.impl": impl}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        out["fs.s3a.endpoint"] = endpoint
        out["fs.s3a.path.style.access"] = "true"
        if endpoint.startswith("http://"):
            out["fs.s3a.connection.ssl.enabled"] = "false"
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        out["fs.s3a.endpoint.region"] = region
    for var, key in (
        ("AWS_ACCESS_KEY_ID", "fs.s3a.access.key"),
        ("AWS_SECRET_ACCESS_KEY", "fs.s3a.secret.key"),
        ("AWS_SESSION_TOKEN", "fs.s3a.session.token"),
    ):
        if env.get(var):
            out[key] = env[var]
    return out


def apply_s3a_settings(spark: "SparkSession", env: Mapping[str, str] | None = None) -> None:
    """Set :func:`s3a_settings` on a running session (for an S3 environment that appeared after
    the session was built; file systems opened from then on use it).

    Classic: the SparkContext's Hadoop configuration. Spark Connect (no JVM here): the same keys
    as session settings (``spark.conf.set("fs.s3a.endpoint", ...)``), which Spark copies into
    the Hadoop configuration of that session's queries (``SessionState.newHadoopConf``).
    """
    if is_connect(spark):
        for key, value in s3a_settings(env).items():
            spark.conf.set(key, value)
        return
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in s3a_settings(env).items():
        conf.set(key, value)


def session_conf(**conf: str) -> dict[str, str]:
    """The Spark settings of every acidflow session: the classic session :func:`get_spark`
    builds, and the Spark Connect server ``devservers.sparkconnect`` starts (one list for both).

    Session time zone UTC, ORC codec zlib (Hive 3.1 cannot read zstd), 4 shuffle partitions,
    Arrow on, Python data source filter pushdown on, no console progress bar, ``spark.driver.memory`` from :func:`driver_memory`
    (``$ACIDFLOW_DRIVER_MEMORY``, default 3g), and the S3A and Kafka connector jars and acidflow's JVM reader
    (:func:`acid_reader_jar`) on the driver's and executors' class path when fetched / built (module doc), with :func:`s3a_settings` as ``spark.hadoop.*``.

    Args:
        **conf: extra settings, applied last (they win).
    Returns:
        ``{spark key: value}``.
    """
    out = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.orc.compression.codec": "zlib",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # the acid data source's reader implements pushFilters (acidflow.datasource.register)
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory(),
    }
    aws = hadoop_aws_jars()
    reader = acid_reader_jar()
    jars = aws + kafka_spark_jars() + ([reader] if reader else [])
    if jars:
        # on the class path of the driver and executors, not spark.jars: spark.jars would make
        # every executor copy the ~650 MB SDK bundle into its work folder first
        out["spark.driver.extraClassPath"] = ":".join(jars)
        out["spark.executor.extraClassPath"] = ":".join(jars)
    if aws:
        out.update({f"spark.hadoop.{k}": v for k, v in s3a_settings().items()})
    out.update(conf)
    return out


def remote_url(remote: str | None = None) -> str | None:
    """The Spark Connect server a session should use: ``remote``, else ``$SPARK_REMOTE``
    (Spark's own variable, :data:`acidflow.sparkmode.REMOTE_ENV`), else ``None`` (classic)."""
    return remote or os.environ.get(REMOTE_ENV) or None


def get_spark(
    app_name: str = "acidflow", master: str | None = None, remote: str | None = None, **conf: str
) -> SparkSession:
    """Return the active SparkSession or build one: classic, or Spark Connect when a server is
    named (``remote`` or ``$SPARK_REMOTE``, :func:`remote_url`).

    Args:
        app_name: Spark application name.
        master: Spark master URL; default ``$ACIDFLOW_SPARK_MASTER`` or ``local[2]``. Ignored when
            running under spark-submit (the session already exists) or on Connect.
        remote: a Spark Connect URL ``sc://host:port`` (default ``$SPARK_REMOTE``).
        **conf: extra Spark configuration (dots written as given, e.g. ``{"spark.ui.enabled": "false"}``).
    Returns:
        ``pyspark.sql.SparkSession`` with session time zone UTC and ORC codec zlib, and S3A
        on ``s3://`` when its jars are fetched (module doc); on Connect a
        ``pyspark.sql.connect.session.SparkSession`` with the ``spark.sql.*`` ones of
        :func:`session_conf` set on the session (the server was started with the rest:
        ``devservers.sparkconnect``). Either has the ``acid`` data source registered.
    """
    prepare_environment()
    url = remote_url(remote)
    if url:
        return _remote_session(url, conf)
    # deferred: pyspark only when a session is wanted; CLI reads and catalog commands skip it
    from pyspark.sql import SparkSession

    # deferred: the data source module imports pyspark (see above)
    from acidflow.datasource import register as register_source

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the JVM gateway already exists (PYSPARK_GATEWAY_PORT) and carries --master.
    if master or not os.environ.get("PYSPARK_GATEWAY_PORT"):
        builder = builder.master(master or os.environ.get("ACIDFLOW_SPARK_MASTER", "local[2]"))
    for key, value in session_conf(**conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register_source(spark)  # spark.read.format("acid") / df.write.format("acid")
    return spark


def _remote_session(url: str, conf: Mapping[str, str]) -> SparkSession:
    """A Spark Connect session on ``url``; the active Connect session of this thread when there
    is one (a job calls get_spark again: it keeps the session it was started with)."""
    # deferred: the Connect client needs grpc; loaded only when a server is named
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    # deferred: the data source module imports pyspark (see get_spark)
    from acidflow.datasource import register as register_source

    # What SparkSession.builder.remote() sets before it builds a Connect session: pyspark's
    # functions and columns then build Connect plans. Set here because that builder refuses a
    # remote session while a classic one lives in the process (a test run holds both). It is
    # process-wide and stop() leaves it set: a process runs its jobs in one mode (the tests'
    # connect_spark fixture restores it).
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    active = RemoteSession.getActiveSession()
    if active is not None:
        return cast("SparkSession", active)
    runtime: dict[str, bool | float | int | str | None] = {
        k: v for k, v in session_conf(**conf).items() if k.startswith("spark.sql.")
    }
    # the app name is the server's (a Connect session is one of its sessions): not sent
    remote = RemoteSession.builder.remote(url).config(map=runtime).getOrCreate()
    # the Connect session offers the classic one's API (pyspark types them apart)
    spark = cast("SparkSession", remote)
    register_source(spark)  # spark.read.format("acid") / df.write.format("acid")
    return spark


def register(spark: SparkSession, settings: Settings | None = None) -> list[str]:
    """Make every table of the acidflow catalog reachable by its name in Spark SQL:
    ``spark.table("db.t")``, ``spark.sql("select ... from db.t")``, ``INSERT INTO db.t``,
    each query reading the latest committed snapshot through the ``acid`` data source.

    The choice (measured on PySpark 4.3, :mod:`acidflow.datasource.names`): a Spark database
    per acidflow database and a Spark table ``db.t`` in the session catalog whose provider
    ``acid.db.t`` is a Python data source bound to that table. Temporary views cannot have
    two-part names, persistent views cannot select from a Python source, a catalog plugin
    must be a JVM class, and Spark passes a catalog table no OPTIONS at read time, so the
    table travels in the provider name. Spark resolves a catalog table again for every query,
    so no name pins an old snapshot.

    Call it again after creating tables (a table created after the call has no name until
    then) or changing a table's columns; it also rebinds the ``acid`` format to
    ``settings``. :func:`get_spark` does not call it: building a session never opens the
    catalog.

    Args:
        spark: the session.
        settings: catalog settings (default :func:`acidflow.config.load_settings` now).
    Returns:
        The ``db.t`` names registered, sorted.
    Raises:
        acidflow.catalog.errors.CatalogDatabaseError: the catalog cannot be used (names its
            URL, password masked, and the command that fixes it).
    """
    # deferred: the data source modules import pyspark (module doc of get_spark)
    from acidflow.datasource.names import register_tables

    return register_tables(spark, settings)
