"""Schema evolution rules of a full-ACID ORC table: which column type changes are metadata-only
widenings, and what a reader does with old files after a change.

Two sources of truth, and a change is allowed only when both accept it:

* **the metastore** (Hive 3.1 ``HiveAlterHandler.checkColTypeChangeCompatible`` with
  ``hive.metastore.disallow.incompatible.col.type.changes=true``, the default): column by
  column *by position*, on the type names stripped of their parameters
  (``ColumnType.getTypeName``: ``decimal(10,2)`` -> ``decimal``), ``ColumnType.areColTypesCompatible``
  accepts equal names, string group <-> string group (string, varchar, char), numeric to a later
  numeric of ``tinyint < smallint < int < bigint < decimal < float < double``, string group to
  double, ``void`` to anything, date/timestamp to the string group, numeric to the string group;
* **the ORC reader** (``SchemaEvolution`` + ``ConvertTreeReaderFactory``), which converts the
  file's type to the table's when reading old files -- and acidflow's own readers, which cast the
  file column to the table type with Arrow.

acidflow is stricter than the metastore where the metastore lets values change meaning on read
(a *narrowing*): integers only into floating point types that hold every value (``tinyint`` and
``smallint`` into ``float``, and ``int`` into ``double``), decimals not into floating point, ``decimal(p,s)`` only to a decimal with no fewer integer digits and no smaller
scale, integers into decimals only with enough integer digits, ``varchar(n)``/``char(n)`` only to
``string`` or a ``varchar(m)`` with ``m >= n``, ``string`` not to ``varchar``/``char``
(truncation), string group to ``double`` refused (values that do not parse would read as NULL),
and floating point, decimal, timestamp, boolean and binary values not to ``string`` (Hive's and
Arrow's text forms of those differ; a reader must give one answer). Complex types may not
change. Widening a bucketing column is refused: Hive's bucket hash (``ObjectInspectorUtils
.getBucketHashCode``, murmur3 in bucketing version 2) hashes an ``int`` over 4 bytes and a
``bigint`` over 8, so rows written after the change would land in other buckets than the rows
of the same value before it.

Reads after a change are positional, as Hive reads ACID files: the ``row`` struct's i-th field
is the table's i-th column whatever its name (``_col0`` in Hive-written files), so a rename costs
nothing, an added column reads NULL from older files, and a widened column is cast from the
file's type (``acidflow.read.snapshot``). Dropping or reordering columns breaks the positions of
every old file, so it needs a rewrite of the data (``acidflow.tableops.schema``).
"""

from __future__ import annotations

import pyarrow as pa

from acidflow.errors import AcidflowError
from acidflow.format import types as htypes
from acidflow.format.hivetypes import (
    CharType,
    DecimalType,
    HiveType,
    PrimitiveType,
    VarcharType,
    parse_hive_type,
)

__all__ = [
    "SchemaChangeError",
    "metastore_compatible",
    "type_change_problem",
    "check_type_change",
    "NUMERIC_CAST_ORDER",
    "read_as",
]


class SchemaChangeError(AcidflowError, ValueError):
    """A schema change refused before anything was written (names table, column, the old and
    the new type or layout, and why)."""


#: Hive ``ColumnType.NumericCastOrder``
NUMERIC_CAST_ORDER = {
    "tinyint": 1,
    "smallint": 2,
    "int": 3,
    "bigint": 4,
    "decimal": 5,
    "float": 6,
    "double": 7,
}
_STRING_GROUP = frozenset({"string", "varchar", "char"})
_DATETIME = frozenset({"date", "datetime", "timestamp", "timestamp with time zone"})
_PRIMITIVE = frozenset(
    {
        "void",
        "boolean",
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "float",
        "double",
        "string",
        "varchar",
        "char",
        "date",
        "datetime",
        "timestamp",
        "interval_year_month",
        "interval_day_time",
        "decimal",
        "binary",
        "timestamp with time zone",
    }
)
_INTEGER_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}
#: integer types every value of which a float / double holds exactly
_FLOAT_EXACT = {"float": {"tinyint", "smallint"}, "double": {"tinyint", "smallint", "int"}}
_MANTISSA = {"float": 24, "double": 53}


def _type_name(hive_type: str) -> str:
    """Hive ``ColumnType.getTypeName``: the lower-case name up to the first non-word char."""
    head = ""
    for ch in hive_type.strip().lower():
        if not (ch.isalnum() or ch == "_"):
            break
        head += ch
    return {"integer": "int", "numeric": "decimal"}.get(head, head)


def metastore_compatible(old: str, new: str) -> bool:
    """Hive 3.1's ``ColumnType.areColTypesCompatible(getTypeName(old), getTypeName(new))``:
    would the metastore accept changing a column of type ``old`` to ``new``?"""
    o, n = _type_name(old), _type_name(new)
    if o == n:
        return True
    if o in _PRIMITIVE and n in _PRIMITIVE:
        if o in _STRING_GROUP and n in _STRING_GROUP:
            return True
        if o in NUMERIC_CAST_ORDER and n in NUMERIC_CAST_ORDER:
            return NUMERIC_CAST_ORDER[o] < NUMERIC_CAST_ORDER[n]
        if o in _STRING_GROUP and n == "double":
            return True
        if o == "void":
            return True
        if o in _DATETIME and n in _STRING_GROUP:
            return True
        if o in NUMERIC_CAST_ORDER and n in _STRING_GROUP:
            return True
    return False


def _length(t: HiveType) -> int | None:
    return t.length if isinstance(t, (CharType, VarcharType)) else None


def type_change_problem(old: str, new: str) -> str | None:
    """Why changing a column from ``old`` to ``new`` is not a metadata-only widening, or
    ``None`` when it is (equal types included). Both strings are Hive types.

    Raises:
        acidflow.format.hivetypes.HiveTypeError: a type that does not parse or map.
    """
    old_n, new_n = htypes.normalize(old), htypes.normalize(new)
    if old_n == new_n:
        return None
    htypes.mapped(new_n)
    o, n = parse_hive_type(old_n), parse_hive_type(new_n)
    if not metastore_compatible(old_n, new_n):
        on_, nn_ = _type_name(old_n), _type_name(new_n)
        if on_ in NUMERIC_CAST_ORDER and nn_ in NUMERIC_CAST_ORDER:
            return (
                f"{on_} -> {nn_} is a narrowing (Hive's metastore refuses it too: "
                "ColumnType.areColTypesCompatible)"
            )
        return (
            "Hive's metastore refuses it (ColumnType.areColTypesCompatible, "
            "hive.metastore.disallow.incompatible.col.type.changes=true)"
        )
    if not isinstance(o, (PrimitiveType, DecimalType, CharType, VarcharType)) or not isinstance(
        n, (PrimitiveType, DecimalType, CharType, VarcharType)
    ):
        return "complex types cannot change (only primitive widenings are metadata-only)"
    on, nn = o.name, n.name
    if on in _STRING_GROUP:
        if nn == "string":
            return None
        if isinstance(n, VarcharType):
            have = _length(o)
            if have is None:
                return "string -> varchar would truncate longer values (a narrowing)"
            if n.length >= have:
                return None
            return (
                f"varchar/char of length {have} -> length {n.length} would truncate (a narrowing)"
            )
        if isinstance(n, CharType):
            return "-> char would pad or truncate values (a narrowing)"
        return f"{on} values that do not parse as {nn} would read as NULL (not a widening)"
    if nn in _STRING_GROUP:
        if on in _INTEGER_DIGITS or on == "date":
            if nn == "string":
                return None
            return f"{on} -> {nn} could truncate the text form (use string)"
        return (
            f"{on} -> {nn}: Hive's and Arrow's text forms of {on} values differ; refused "
            "so that every reader gives one answer (rewrite the column instead)"
        )
    if isinstance(n, DecimalType):
        if on in _INTEGER_DIGITS:
            if n.precision - n.scale >= _INTEGER_DIGITS[on]:
                return None
            return (
                f"{on} needs {_INTEGER_DIGITS[on]} integer digits, {new_n} has "
                f"{n.precision - n.scale} (a narrowing)"
            )
        if isinstance(o, DecimalType):
            if n.scale < o.scale:
                return f"scale {o.scale} -> {n.scale} would round values (a narrowing)"
            if n.precision - n.scale < o.precision - o.scale:
                return (
                    f"integer digits {o.precision - o.scale} -> {n.precision - n.scale} "
                    "would overflow values to NULL (a narrowing)"
                )
            return None
    if isinstance(o, DecimalType) and nn in ("float", "double"):
        return f"{old_n} -> {nn} rounds values to the nearest {nn} (a narrowing)"
    if on in _INTEGER_DIGITS and nn in _FLOAT_EXACT:
        if on in _FLOAT_EXACT[nn]:
            return None
        return f"{on} -> {nn} rounds values above 2^{_MANTISSA[nn]} (a narrowing)"
    if on in NUMERIC_CAST_ORDER and nn in NUMERIC_CAST_ORDER:
        if NUMERIC_CAST_ORDER[on] < NUMERIC_CAST_ORDER[nn]:
            return None
        return f"{on} -> {nn} is a narrowing"
    return f"no conversion from {on} to {nn}"


def check_type_change(
    table: str, column: str, old: str, new: str, *, bucket_column: bool = False
) -> str:
    """Check that column ``column`` of ``table`` may change from ``old`` to ``new`` without a
    rewrite; returns the normalised new type.

    Raises:
        SchemaChangeError: a narrowing or incompatible change, or a type change of a bucketing
            column (names table, column, both types and the reason).
    """
    try:
        new_n = htypes.normalize(new)
        problem = type_change_problem(old, new_n)
    except ValueError as exc:
        raise SchemaChangeError(f"table {table}: column {column}: {old} -> {new}: {exc}") from exc
    if problem is None and bucket_column and htypes.normalize(old) != new_n:
        problem = (
            "it is a bucketing (CLUSTERED BY) column: Hive's bucket hash depends on the "
            "type, so new rows would land in other buckets than old rows of the same value"
        )
    if problem is not None:
        raise SchemaChangeError(
            f"table {table}: cannot change column {column} from {old} to {new_n}: {problem}"
        )
    return new_n


def read_as(column: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """A file column read as the table's (possibly widened) type, converted as Hive's ORC
    reader converts it (``ConvertTreeReaderFactory``): ``float`` -> ``double`` goes through the
    float's shortest decimal text (``DoubleFromFloatTreeReader``: 0.1f reads as 0.1, not
    0.10000000149011612), everything else is a plain cast (integers and decimals widen exactly;
    integers and dates to string as their text)."""
    if column.type == target:
        return column
    if pa.types.is_float32(column.type) and pa.types.is_float64(target):
        return column.cast(pa.string()).cast(target)
    return column.cast(target)
