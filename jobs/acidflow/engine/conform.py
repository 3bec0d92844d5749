"""Incoming rows against a table's schema: which Hive types may be written into which, and the
DataFrame (or Arrow table) a writer gets, in table order and cast to the table's types.

Follows Hive's implicit conversions for INSERT (``FunctionRegistry.implicitConvertible``):
numeric widening, any string-like into ``string``/``varchar``/``char``, decimals into decimals
that keep the integer digits, integers into wide-enough decimals, decimals into floating point.
Column names match case-insensitively, as in Hive and Spark (``spark.sql.caseSensitive=false``).

Default partition: a NULL, an empty string and the literal ``__HIVE_DEFAULT_PARTITION__`` in a
partition column all mean Hive's default partition (``hive.exec.default.partition.name``) and
read back as NULL; the aligned rows carry NULL for all three (:func:`default_partition_nulls`),
so one batch holding several of them writes one partition and key lookups match the stored
rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.errors import AcidflowError
from acidflow.format import types as htypes
from acidflow.format.hivetypes import CharType, DecimalType, VarcharType
from acidflow.format.partitions import DEFAULT_PARTITION_NAME
from acidflow.format.table import TableDesc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


class SchemaMismatchError(AcidflowError, ValueError):
    """The DataFrame does not match the table's schema (raised before any file is written)."""


class DuplicateKeyError(AcidflowError, ValueError):
    """An upsert batch holds two rows with the same primary key."""


_WIDENING = {
    "tinyint": {"smallint", "int", "bigint", "float", "double"},
    "smallint": {"int", "bigint", "float", "double"},
    "int": {"bigint", "float", "double"},
    "bigint": {"float", "double"},
    "float": {"double"},
    "date": {"timestamp"},
}
_INTEGER_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}


def compatible(src: str, dst: str) -> bool:
    """May a column of Hive type ``src`` be written into one of type ``dst``? Equal types,
    numeric widening (Hive's implicit conversions), any string-like into string/varchar/char,
    decimals into decimals that keep the integer digits, integers into wide-enough decimals.

    Raises:
        acidflow.format.hivetypes.HiveTypeError: a type that does not parse or map.
    """
    src, dst = htypes.normalize(src), htypes.normalize(dst)
    if src == dst:
        return True
    s, d = htypes.mapped(src), htypes.mapped(dst)
    if dst in _WIDENING.get(src, set()):
        return True
    if isinstance(s, (VarcharType, CharType)) or src == "string":
        return isinstance(d, (VarcharType, CharType)) or dst == "string"
    if isinstance(d, DecimalType):
        if src in _INTEGER_DIGITS:
            return d.precision - d.scale >= _INTEGER_DIGITS[src]
        if isinstance(s, DecimalType):
            return d.precision - d.scale >= s.precision - s.scale and d.scale >= s.scale
    if isinstance(s, DecimalType) and dst in ("double", "float"):
        return True
    return False


def check_schema(
    df_schema: "StructType", table: TableDesc, *, require_all: bool = True
) -> list[str]:
    """Check a DataFrame schema against a table (columns + partition columns).

    Args:
        df_schema: Spark ``StructType``.
        table: the table (``acidflow.catalog.TableDef``).
        require_all: every table column must be present (inserts); otherwise only the present
            ones are checked (key batches for deletes).
    Returns:
        The DataFrame's column names in table order (columns, then partition columns).
    Raises:
        SchemaMismatchError: missing, extra or incompatible columns (all problems listed).
    """
    from acidflow import sparktypes  # deferred: it imports pyspark

    have = {f.name.lower(): f for f in df_schema.fields}
    wanted = [(c.name, c.hive_type) for c in [*table.columns, *table.partition_columns]]
    problems, order = [], []
    for name, hive_type in wanted:
        f = have.pop(name.lower(), None)
        if f is None:
            if require_all:
                problems.append(f"missing column {name} {hive_type}")
            continue
        try:
            src = sparktypes.hive_type_from_spark(f.dataType)
        except htypes.HiveTypeError as exc:
            problems.append(f"column {name}: {exc}")
            continue
        if not compatible(src, hive_type):
            problems.append(f"column {name}: {src} cannot be written as {hive_type}")
        order.append(f.name)
    if have:
        problems.append("columns not in the table: " + ", ".join(sorted(have)))
    if problems:
        raise SchemaMismatchError(f"schema mismatch for table {table.name}: " + "; ".join(problems))
    return order


def aligned(df: "DataFrame", table: TableDesc, require_all: bool = True) -> "DataFrame":
    """The DataFrame with the table's columns in table order, cast to the table's types.

    Raises:
        SchemaMismatchError: as :func:`check_schema`.
    """
    # deferred: pyspark stays out of the Arrow-only paths that import this module
    from pyspark.sql import functions as F

    from acidflow import sparktypes  # deferred: it imports pyspark

    names = check_schema(df.schema, table, require_all=require_all)
    by_lower = {n.lower(): n for n in names}
    defaults = set(default_partition_nulls(table))
    cols = []
    for c in [*table.columns, *table.partition_columns]:
        src = by_lower.get(c.name.lower())
        if src is not None:
            col = F.col(f"`{src}`").cast(sparktypes.spark_type(c.hive_type))
            if c.name in defaults:
                col = F.when(col.isin(*DEFAULT_PARTITION_VALUES), F.lit(None)).otherwise(col)
            cols.append(col.alias(c.name))
    return df.select(*cols)


def aligned_arrow(tbl: pa.Table, table: TableDesc) -> pa.Table:
    """An Arrow table with exactly the table's columns (data, then partition columns) and
    types (``acidflow.format.types.arrow_schema``).

    Raises:
        SchemaMismatchError: a column is missing or its values do not cast.
    """
    schema = htypes.arrow_schema(
        [(c.name, c.hive_type) for c in [*table.columns, *table.partition_columns]]
    )
    by_lower: dict[str, str] = {}
    for name in tbl.column_names:
        if name.lower() in by_lower:
            raise SchemaMismatchError(
                f"{table.name}: columns {by_lower[name.lower()]!r} and {name!r} differ only in "
                "case (column names are case-insensitive)"
            )
        by_lower[name.lower()] = name
    missing = [n for n in schema.names if n.lower() not in by_lower]
    if missing:
        raise SchemaMismatchError(
            f"{table.name}: insert rows do not fit the table: missing columns {missing}"
        )
    try:
        out = pa.Table.from_arrays(
            [tbl.column(by_lower[n.lower()]) for n in schema.names], names=schema.names
        ).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"{table.name}: insert rows do not fit the table: {e}") from e
    for name in default_partition_nulls(table):
        i = out.schema.get_field_index(name)
        col = out.column(i)
        is_default = pc.is_in(col, value_set=pa.array(DEFAULT_PARTITION_VALUES, col.type))
        if pc.any(is_default).as_py():
            nulls = pa.nulls(len(col), col.type)
            out = out.set_column(i, name, pc.if_else(is_default, nulls, col))
    return out


#: the values of a string partition column that mean Hive's default partition (besides NULL)
DEFAULT_PARTITION_VALUES = ("", DEFAULT_PARTITION_NAME)


def default_partition_nulls(table: TableDesc) -> list[str]:
    """The partition columns of ``table`` whose values :data:`DEFAULT_PARTITION_VALUES` become
    NULL when rows are aligned (the string-like ones: ``string``, ``varchar``, ``char``)."""
    out = []
    for c in table.partition_columns:
        t = c.hive_type.strip().lower()
        if t == "string" or t.startswith(("varchar", "char")):
            out.append(c.name)
    return out


def key_columns_present(keys_df: "DataFrame", table: TableDesc) -> "DataFrame":
    """The key batch of a delete: its primary-key (and partition) columns, aligned.

    Raises:
        ValueError: the table has no primary key.
        SchemaMismatchError: key columns missing or of incompatible types.
    """
    key = list(table.primary_key)
    if not key:
        raise ValueError(f"table {table.name} has no primary key; delete by key needs one")
    missing = [k for k in key if k.lower() not in {f.name.lower() for f in keys_df.schema.fields}]
    if missing:
        raise SchemaMismatchError(f"delete from {table.name}: key columns missing: {missing}")
    wanted = {c.lower() for c in key + [p.name for p in table.partition_columns]}
    return aligned(
        keys_df.select(*[k for k in keys_df.columns if k.lower() in wanted]),
        table,
        require_all=False,
    )


__all__ = [
    "SchemaMismatchError",
    "DuplicateKeyError",
    "compatible",
    "check_schema",
    "aligned",
    "aligned_arrow",
    "key_columns_present",
]
