"""acidflow tables as a Spark data source named ``acid`` (PySpark 4's Python Data Source API,
``pyspark.sql.datasource``)::

    spark.read.format("acid").load("db.accounts")                        # current snapshot
    spark.read.format("acid").option("asOfWriteId", 7).load("db.accounts")   # time travel
    spark.read.format("acid").option("fromWriteId", 5).load("db.accounts")   # changes after 5
    df.write.format("acid").mode("append").save("db.accounts")               # one transaction
    (df.writeStream.format("acid").option("table", "db.accounts")           # one transaction
       .option("checkpointLocation", "/ckpt/q1").start())                   # per micro-batch

Read options: ``asOfWriteId`` (the committed state right after that write id's commit),
``asOfTimestamp`` (ISO 8601, UTC unless it names an offset: the state after the last commit at
or before it), ``readOptimized`` (base only), ``rowId`` (adds ``ROW__ID``), ``fileName`` (adds
``INPUT__FILE__NAME``), ``columns`` (the output columns, comma-separated), ``fromWriteId`` / ``toWriteId`` or ``fromTimestamp`` /
``toTimestamp`` (the rows and columns of :func:`acidflow.read.table.read_incremental`: ``op``,
``write_id``, the columns, ``ROW__ID``). Write options: ``compression``, ``stripeRows``,
``onExisting`` (``error`` | ``upsert`` | ``ignore``: what an append into a table with a
primary key does with a stored key, ``Transaction.insert``'s ``on_existing``), ``txnAppId`` /
``txnVersion`` (an idempotent write, Delta Lake's options: a version at most the last one
applied for the application on the table commits nothing; :mod:`acidflow.datasource.write`).
Table-definition options of a write into a table the catalog does not have, which creates
it (checked against an existing table's definition): ``primaryKey``, ``buckets``,
``clusteredBy``, ``partitionBy``, ``orderingColumn``, ``bucketingVersion``
(:mod:`acidflow.datasource.create`). Both:
``table`` (instead of the load/save path), ``catalog`` / ``warehouse`` (default: the settings
:func:`register` captured, else the environment, :mod:`acidflow.config`). The planning side
creates and migrates an embedded (SQLite) catalog on first use; a server catalog must be
initialised (``acidflow catalog init``; the error names its URL). Spark SQL names ``db.t``
for every table: :func:`acidflow.spark.register` (:mod:`acidflow.datasource.names`).

Where the API runs what: ``schema()``, ``reader()``/``partitions()``, ``writer()`` and
``commit()``/``abort()`` run in Python workers that the driver's JVM starts (not in the
driver's Python process, whose later ``os.environ`` changes they do not see -- hence the
settings captured by :func:`register`); ``read()``/``write()`` run in Spark tasks.

Reads: ``schema()`` plans once with the catalog (:func:`acidflow.read.table.plan_table`: the
snapshot, its schema version, the read tasks) and registers the snapshot as a reader for the
cleaner (expiring after the catalog's heartbeat timeout unless read tasks are running: they
heartbeat it); the DataFrame keeps that snapshot (Spark plans a Python source once per
DataFrame or view). One Spark partition per read task; tasks only read files
(:func:`acidflow.read.snapshot.read_task`). Filters are pushed (``AcidReader.pushFilters``:
partition pruning, stripe skipping, exact filters consumed -- ``explain("formatted")`` lists
them as ``PushedFilters``). The API has no column pruning hook: the ``columns`` read option
(comma-separated) names the columns decoded; without it Spark drops unused columns after the
scan.

Writes (Hive INSERT INTO / INSERT OVERWRITE, the rules of ``Transaction.insert`` /
``insert_overwrite``): ``writer()`` checks the schema (``SchemaMismatchError`` naming the table
and columns, before anything is written), opens one transaction, takes the lock and the write
id W (``acidflow.engine.statements.external.begin_insert``). Each Spark task p sorts its rows by (partition, bucket) and
writes event files: unbucketed tables into the statement's ``delta_W_W_S`` / ``base_W`` as
``bucket_<p>`` (the writer id, as ``Transaction.insert`` does); bucketed tables, whose bucket N
comes from the row, under a statement id of their own, ``delta_W_W_<S+p>/bucket_N`` (Hive
numbers several statements of one write id; the statement id is in every ROW__ID's bucket
property), so no two tasks write one file. An overwrite of a bucketed table stages so and
``commit()`` moves each bucket's files into ``base_W/bucket_N`` (several tasks' files of one
bucket are concatenated, ROW__IDs kept). ``commit()`` ends the statement
(``external.end_insert``) and commits: nothing is visible before. ``abort()`` (a task
failed) aborts and removes the files of the tasks that finished (a failed task removed its
own; the cleaner removes what a task still running writes later).

Streaming writes (``streamWriter()``, :mod:`acidflow.datasource.stream`): the same tasks and
commit, one transaction per micro-batch, claiming ``(query id, batch id)`` in the batch ledger
so that a replayed micro-batch commits nothing; output mode append only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource

from acidflow.config import Settings, load_settings
from acidflow.datasource.common import (
    NAME,
    AcidDataSourceError,
    checked_options,
    resolve_settings,
)
from acidflow.datasource.read import AcidReader, Scan, plan_scan
from acidflow.datasource.stream import AcidStreamWriter
from acidflow.datasource.write import AcidWriter, AppliedWriter

__all__ = [
    "AcidDataSource",
    "AcidDataSourceError",
    "AcidReader",
    "AcidStreamWriter",
    "AcidWriter",
    "NAME",
    "bound_source",
    "create_temp_view",
    "register",
]

#: the Spark SQL setting that lets Python data sources receive filters (``pushFilters``)
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class AcidDataSource(DataSource):
    """The ``acid`` format (package doc). ``settings``: the catalog settings :func:`register`
    captured in the driver (None: the environment of the worker). ``table`` / ``format``:
    a source bound to one table under its own format name (``acid.db.t``, the provider of
    the Spark table :func:`acidflow.datasource.names.register_tables` makes), which reads and
    writes that table when the options name none -- Spark passes a catalog table's reads
    and INSERTs no options."""

    settings: ClassVar[Settings | None] = None
    table: ClassVar[str | None] = None
    format: ClassVar[str] = NAME

    @classmethod
    def name(cls) -> str:
        return cls.format

    def _options(self) -> dict[str, str]:
        """The options, with ``table`` = the bound table when they name none."""
        opts = dict(self.options)
        if self.table is not None and not {str(k).lower() for k in opts} & {"table", "path"}:
            opts["table"] = self.table
        return opts

    def _plan(self) -> tuple[Scan, list[Any]]:
        if getattr(self, "_planned", None) is None:
            options = self._options()
            settings = resolve_settings(self.settings, checked_options(options))
            self._planned = plan_scan(settings, options)
        return self._planned

    def schema(self) -> T.StructType:
        """The snapshot's columns (its schema version), partition columns, then ``ROW__ID``
        / ``INPUT__FILE__NAME`` when asked; ``op``, ``write_id`` first when incremental."""
        return self._plan()[0].spark_schema()

    def reader(self, schema: T.StructType) -> AcidReader:
        """Raises: AcidDataSourceError: a user-given schema that is not the table's."""
        scan, values = self._plan()
        if [(f.name, f.dataType) for f in schema.fields] != [
            (f.name, f.dataType) for f in scan.spark_schema().fields
        ]:
            hint = (
                "the Spark table was registered with an earlier schema: run "
                "acidflow.spark.register(spark) again"
                if self.table is not None
                else "read without .schema()"
            )
            raise AcidDataSourceError(
                f"acid data source, table {scan.table}: the schema given "
                f"({schema.simpleString()}) is not the table's "
                f"({scan.spark_schema().simpleString()}); {hint}"
            )
        return AcidReader(scan, values, schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> AcidWriter | AppliedWriter:
        """Raises: see :meth:`AcidWriter.open`."""
        options = self._options()
        return AcidWriter.open(
            resolve_settings(self.settings, checked_options(options)), options, schema, overwrite
        )

    def streamWriter(self, schema: T.StructType, overwrite: bool) -> AcidStreamWriter:  # noqa: N802 - PySpark's name
        """``df.writeStream.format("acid")``: one transaction per micro-batch, exactly once
        (:mod:`acidflow.datasource.stream`).

        Raises: see :meth:`AcidStreamWriter.open`."""
        options = self._options()
        return AcidStreamWriter.open(
            resolve_settings(self.settings, checked_options(options)), options, schema, overwrite
        )


def register(spark: SparkSession, settings: Settings | None = None) -> None:
    """Register the ``acid`` format in ``spark`` (``spark.dataSource.register``), bound to
    ``settings`` (default :func:`acidflow.config.load_settings` now, in the driver): the
    source's workers use that catalog and warehouse unless options say otherwise. Call again
    after changing ``ACIDFLOW_*`` to rebind. ``acidflow.spark.get_spark`` calls it.

    Also sets ``spark.sql.python.filterPushdown.enabled=true`` (default false in Spark 4.x):
    the reader implements ``pushFilters``, and PySpark refuses to plan a reader that does
    while the setting is off (``DATA_SOURCE_PUSHDOWN_DISABLED``)."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(bound_source(settings or load_settings()))


def bound_source(settings: Settings, table: str | None = None) -> type[AcidDataSource]:
    """A subclass of :class:`AcidDataSource` bound to ``settings``, and to ``table`` (its
    format then ``acid.<db>.<table>``) when given.

    Args:
        settings: the catalog settings its workers use unless options say otherwise.
        table: the normalised ``db.table`` it reads and writes when no option names one.
    Returns:
        The class, ready for ``spark.dataSource.register``.
    """
    attrs: dict[str, Any] = {"settings": settings, "__module__": __name__}
    if table is not None:
        attrs.update(table=table, format=f"{NAME}.{table}")
    # a class that is not a module attribute: cloudpickle ships it by value, settings included
    return type("AcidDataSourceBound", (AcidDataSource,), attrs)


def create_temp_view(
    spark: SparkSession, table: str, view: str | None = None, **options: Any
) -> str:
    """``CREATE OR REPLACE TEMPORARY VIEW <view> USING acid OPTIONS (table ..., ...)``: a Spark
    SQL name for an acidflow table (SELECT, INSERT INTO, INSERT OVERWRITE; ``spark.table``).
    The view reads the snapshot taken when it is created: create it again to see later
    commits. ``view`` defaults to the table name without its database. For ``db.table``
    names that read the latest snapshot on every query, see :func:`acidflow.spark.register`.

    Returns:
        The view name.
    """
    name = view or table.split(".")[-1]
    quoted = {
        k: str(v).replace("\\", "\\\\").replace("'", "\\'")
        for k, v in {"table": table, **options}.items()
    }
    opts = ", ".join(f"{k} '{v}'" for k, v in quoted.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` USING {NAME} OPTIONS ({opts})")
    return name
