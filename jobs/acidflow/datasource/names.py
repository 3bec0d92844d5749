"""Spark SQL names for acidflow tables: after :func:`register_tables` every table of the
catalog is ``db.t`` in ``spark.table("db.t")``, ``spark.sql("select ... from db.t")`` and
``INSERT INTO / INSERT OVERWRITE db.t``, read and written through the ``acid`` data source
(snapshot isolation, delete events applied, one transaction per INSERT).

How (measured on PySpark 4.3): per acidflow table a Spark database of the same name
(``CREATE DATABASE IF NOT EXISTS``, in the session catalog) and a Spark table
``CREATE TABLE db.t (<columns>) USING `acid.db.t` TBLPROPERTIES ('acidflow.table'='db.t')``,
whose provider ``acid.db.t`` is a Python data source registered for that one table
(:func:`acidflow.datasource.bound_source`).

Why so:

* A temporary view cannot have a two-part name, a global temporary view lives in
  ``global_temp``, and a persistent view cannot select from a temporary view or from a Python
  data source directly (``UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY``).
* A catalog plugin (``spark.sql.catalog.<name>``) must be a JVM class: PySpark has no Python
  one.
* A Spark table ``USING acid OPTIONS (table 'db.t')`` resolves, but Spark passes a catalog
  table's reads and INSERTs none of its OPTIONS (the Python source sees an empty option
  map), so one shared ``acid`` format could not tell the tables apart: the table is carried
  by the provider name instead.
* Spark looks a catalog table up again for every query and calls the source's ``reader()``
  in a new instance, so each query plans its own snapshot (the catalog's latest committed
  state, a reader registration for the cleaner): a commit after registering is seen by the
  next query, nothing pins an old snapshot. A DataFrame keeps the snapshot it planned.

What it does not do: a table created (in acidflow) after registering has no Spark name until
:func:`register_tables` runs again (Spark offers a Python source no lazy table discovery); a
table whose schema changed after registering refuses reads with a message saying to register
again (Spark stores the columns given at ``CREATE TABLE`` and hands them to the reader).
Registering again drops and recreates the Spark tables it made before (recognised by their
provider ``acid.db.t``) and drops those of tables no longer in the catalog; a
Spark table or view of the same name that is not one of these is left alone and logged.

Spark side effects: the session catalog (in memory by default; a Hive metastore when the
session has Hive support) keeps the databases and tables; ``CREATE DATABASE`` makes its
directory under ``spark.sql.warehouse.dir`` and each managed Spark table an empty directory
there (never the acidflow table's files: ``DROP TABLE db.t`` drops the Spark name only).
The format registrations belong to the session (``spark.newSession()`` has none).
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from acidflow import sparktypes
from acidflow.catalog import TableDef
from acidflow.config import Settings, load_settings
from acidflow.datasource import bound_source, register
from acidflow.datasource.common import NAME, open_catalog
from acidflow.format.hivetypes import HiveTypeError

log = logging.getLogger(__name__)

#: table property of a Spark table made by :func:`register_tables` (value: the table), for
#: people reading ``SHOW TABLE EXTENDED``
TABLE_PROPERTY = "acidflow.table"
#: session configuration key listing the names the last :func:`register_tables` made
REGISTERED_CONF = "spark.acidflow.registeredTables"


def ident(name: str) -> str:
    """``db.t`` as a Spark SQL identifier: each part in backquotes (a backquote doubled)."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in name.split("."))


def _column_ddl(table: TableDef) -> str:
    """The Spark column list of ``table`` (data then partition columns, Spark types).

    Raises:
        HiveTypeError: a column type Spark has no counterpart for.
    """
    schema = sparktypes.spark_schema(
        [(c.name, c.hive_type) for c in [*table.columns, *table.partition_columns]]
    )
    return ", ".join(f"{ident(f.name)} {f.dataType.simpleString()}" for f in schema.fields)


def _ours(spark: SparkSession, name: str) -> bool | None:
    """True: the Spark table ``name`` was made by :func:`register_tables` (its provider is
    ``acid.<name>``); False: something else has the name; None: nothing has it.

    ``SHOW TABLE EXTENDED`` is where PySpark 4.3 shows a Python-provider table's provider:
    ``DESCRIBE`` and ``SHOW TBLPROPERTIES`` describe the source's table, whose properties
    are empty."""
    if not spark.catalog.tableExists(name):
        return None
    db, tbl = name.split(".", 1)
    for row in spark.sql(f"SHOW TABLE EXTENDED IN {ident(db)} LIKE '{tbl}'").collect():
        if row["tableName"] == tbl:
            return f"Provider: {NAME}.{name}\n" in row["information"]
    return False


def register_tables(spark: SparkSession, settings: Settings | None = None) -> list[str]:
    """Give every table of the catalog its Spark SQL name ``db.t`` (module doc); also binds
    the plain ``acid`` format to ``settings`` (:func:`acidflow.datasource.register`).

    Args:
        spark: the session (the names and formats are registered in it).
        settings: the catalog settings (default :func:`acidflow.config.load_settings` now).
            An embedded catalog never used before is created.
    Returns:
        The names registered, sorted (tables left out because another Spark table or view
        has the name, or a column type Spark cannot hold, are logged, not returned).
    Raises:
        acidflow.catalog.errors.CatalogDatabaseError: the catalog cannot be used (names its
            URL and the command that fixes it).
    """
    settings = settings or load_settings()
    register(spark, settings)
    with open_catalog(settings, planning=True) as catalog:
        tables = {t.name: t for t in catalog.list_tables()}
    before = [n for n in (spark.conf.get(REGISTERED_CONF, "") or "").split(",") if n]
    for name in sorted(set(before) - set(tables)):
        if _ours(spark, name):
            spark.sql(f"DROP TABLE {ident(name)}")
    done: list[str] = []
    for name, table in sorted(tables.items()):
        try:
            columns = _column_ddl(table)
        except HiveTypeError as exc:
            log.warning("acidflow table %s gets no Spark name: %s", name, exc)
            continue
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {ident(table.db_name)}")
        ours = _ours(spark, name)
        if ours is False:
            log.warning(
                "acidflow table %s gets no Spark name: a Spark table or view %s exists "
                "that acidflow did not make",
                name,
                name,
            )
            continue
        if ours:
            spark.sql(f"DROP TABLE {ident(name)}")
        spark.dataSource.register(bound_source(settings, name))
        spark.sql(
            f"CREATE TABLE {ident(name)} ({columns}) USING `{NAME}.{name}` "
            f"TBLPROPERTIES ('{TABLE_PROPERTY}' = '{name}')"
        )
        done.append(name)
    spark.conf.set(REGISTERED_CONF, ",".join(done))
    return done
