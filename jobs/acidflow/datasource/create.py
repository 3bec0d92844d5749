"""Tables a write creates: ``df.write.format("acid").save("db.t")`` into a table the catalog
does not have creates it first, as Delta Lake's writer does, with the definition
``catalog.create_table`` stores for the Python API (``TableDef``; the same call
``acidflow ingest --tables-config`` and the CDC job's auto-create make), then writes into it
in the same write::

    (df.write.format("acid").mode("overwrite")
       .option("primaryKey", "id,ds")      # composite keys: comma-separated
       .option("buckets", "4")             # CLUSTERED BY the key (or clusteredBy) INTO 4 BUCKETS
       .option("partitionBy", "ds")        # PARTITIONED BY, in this order
       .save("db.accounts"))

The columns and their types come from the DataFrame (Spark types as Hive types:
:func:`acidflow.sparktypes.hive_type_from_spark`; names lower-cased), the partition columns
(``partitionBy``) move to the end in the option's order. The options, Spark-style camelCase
names of ``TableDef``'s fields (``acidflow table adopt`` / ``convert`` take the same as
``--primary-key``, ``--buckets``, ``--clustered-by``, ``--partitioned-by``):

* ``primaryKey`` -- key columns, comma-separated (``TableDef.primary_key``);
* ``buckets`` -- bucket count, 0 = unbucketed (``num_buckets``);
* ``clusteredBy`` -- bucket columns, default the key's data columns (``bucket_columns``);
* ``partitionBy`` -- partition columns, comma-separated (``partition_columns``);
* ``orderingColumn`` -- the column whose larger value wins among events of one key in CDC
  (``ordering_column``);
* ``bucketingVersion`` -- Hive's bucketing hash, 1 or 2 (default 2).

On an existing table these options are checked, not applied: one that differs from the
table's definition is refused (:class:`~acidflow.datasource.common.TableOptionConflictError`
names the table, the option, the table's value and the given one); the same value, or no
option, writes.

Why an option and not ``DataFrameWriter.partitionBy``: PySpark 4.3 refuses
``.partitionBy(...)`` for every Python data source before the source sees the write
(``DataFrameWriter`` compares it with the partitioning of the source's ``PythonTable``, which
is always empty: "The provided partitioning or clustering columns do not match the existing
table's"). Likewise only ``mode("append")`` and ``mode("overwrite")`` reach a Python data
source (``writer(schema, overwrite)``); Spark refuses ``error`` / ``errorifexists`` (the
default) and ``ignore`` with ``UNSUPPORTED_DATA_SOURCE_SAVE_MODE`` whether or not the table
exists, so both modes create a missing table and neither can mean "fail / skip if it exists".
"""

from __future__ import annotations

import dataclasses
import logging

from pyspark.sql import types as T

from acidflow import sparktypes
from acidflow.catalog import Catalog, Column, NoSuchTableError, TableDef
from acidflow.datasource.common import AcidDataSourceError, TableOptionConflictError, int_option
from acidflow.format.hivetypes import HiveTypeError

log = logging.getLogger(__name__)

#: the table-definition options: lower-case key (as checked) -> the name users write
CREATE_OPTIONS = {
    "primarykey": "primaryKey",
    "buckets": "buckets",
    "clusteredby": "clusteredBy",
    "partitionby": "partitionBy",
    "orderingcolumn": "orderingColumn",
    "bucketingversion": "bucketingVersion",
}


@dataclasses.dataclass(frozen=True)
class TableOptions:
    """The table-definition options of a write (None: not given)."""

    primary_key: list[str] | None = None
    buckets: int | None = None
    clustered_by: list[str] | None = None
    partition_by: list[str] | None = None
    ordering_column: str | None = None
    bucketing_version: int | None = None

    @classmethod
    def parsed(cls, opts: dict[str, str], table: str) -> "TableOptions":
        """The options of ``opts`` (checked, lower-case keys).

        Raises:
            AcidDataSourceError: ``buckets`` / ``bucketingVersion`` not an integer, a column
                list with an empty name (names the option and the table).
        """

        def names(key: str) -> list[str] | None:
            if key not in opts:
                return None
            out = [n.strip().lower() for n in opts[key].split(",")]
            if opts[key].strip() and not all(out):
                raise AcidDataSourceError(
                    f"acid data source, table {table}: option {CREATE_OPTIONS[key]}="
                    f"{opts[key]!r} is not a comma-separated list of column names"
                )
            return [n for n in out if n]

        ordering = opts.get("orderingcolumn")
        return cls(
            primary_key=names("primarykey"),
            buckets=int_option(opts, "buckets", table),
            clustered_by=names("clusteredby"),
            partition_by=names("partitionby"),
            ordering_column=ordering.strip().lower() if ordering is not None else None,
            bucketing_version=int_option(opts, "bucketingversion", table),
        )


def definition(name: str, schema: T.StructType, options: TableOptions) -> TableDef:
    """The definition of a table created by a write of ``schema`` (module doc).

    Raises:
        AcidDataSourceError: a ``partitionBy`` column not in the DataFrame, a Spark type
            with no Hive type, or a definition ``TableDef.validate`` refuses (unknown key
            column, ``buckets`` without key or ``clusteredBy``...): names the table and the
            reason.
    """
    fields = {f.name.lower(): f for f in schema.fields}
    pnames = options.partition_by or []
    missing = [p for p in pnames if p not in fields]
    if missing:
        raise AcidDataSourceError(
            f"acid data source, table {name}: option partitionBy names "
            f"{', '.join(missing)}, not a column of the DataFrame "
            f"({', '.join(fields)})"
        )

    def column(key: str) -> Column:
        try:
            return Column(key, sparktypes.hive_type_from_spark(fields[key].dataType))
        except HiveTypeError as exc:
            raise AcidDataSourceError(
                f"acid data source, table {name}: cannot create the table: column {key}: {exc}"
            ) from None

    tdef = TableDef(
        name=name,
        columns=[column(k) for k in fields if k not in pnames],
        partition_columns=[column(p) for p in pnames],
        primary_key=options.primary_key or [],
        ordering_column=options.ordering_column,
        bucket_columns=options.clustered_by or [],
        num_buckets=options.buckets or 0,
        bucketing_version=options.bucketing_version or 2,
    )
    try:
        tdef.validate()
    except ValueError as exc:
        raise AcidDataSourceError(
            f"acid data source, table {name}: cannot create the table from the write's "
            f"options: {exc}"
        ) from None
    return tdef


def check_matches(table: TableDef, options: TableOptions) -> None:
    """Refuse table-definition options that differ from the existing ``table``'s.

    Raises:
        TableOptionConflictError: the first differing option (names the table, the option,
            the table's value and the given one).
    """

    def text(value: object) -> str:
        return ",".join(value) if isinstance(value, list) else str(value)

    pairs: list[tuple[str, object, object]] = [
        ("primaryKey", table.primary_key, options.primary_key),
        ("buckets", table.num_buckets, options.buckets),
        ("clusteredBy", table.bucket_columns, options.clustered_by),
        ("partitionBy", table.partition_column_names(), options.partition_by),
        ("orderingColumn", table.ordering_column or "", options.ordering_column),
        ("bucketingVersion", table.bucketing_version, options.bucketing_version),
    ]
    for option, have, given in pairs:
        if given is not None and given != have:
            raise TableOptionConflictError(table.name, option, text(have), text(given))


def table_for_write(
    catalog: Catalog, name: str, schema: T.StructType, opts: dict[str, str]
) -> TableDef:
    """The table a write of ``schema`` goes into: the catalog's, checked against the write's
    table-definition options, or created from the DataFrame's schema and those options when
    the catalog has none (``create_table(..., if_not_exists=True)``: a concurrent creator's
    table wins and is checked like any existing one).

    Args:
        opts: the write's options (checked, lower-case keys).
    Returns:
        The stored definition.
    Raises:
        AcidDataSourceError; TableOptionConflictError (see :func:`definition`,
        :func:`check_matches`); WarehouseOwnedError / TableLocationError from
        ``create_table``.
    """
    options = TableOptions.parsed(opts, name)
    try:
        table = catalog.get_table(name)
    except NoSuchTableError:
        table = catalog.create_table(definition(name, schema, options), if_not_exists=True)
        log.info("acid data source: created table %s for a write", table.name)
    check_matches(table, options)
    return table
