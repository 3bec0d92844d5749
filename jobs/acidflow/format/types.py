"""Hive column types and their ORC, Arrow and Spark counterparts.

A Hive type is the string Hive keeps in ``columns.types`` (``int``, ``decimal(10,2)``,
``varchar(20)``, ``array<string>``, ``struct<a:int,b:string>`` ...). acidflow stores table
schemas as Hive types (the catalog) and derives the rest here, in one place, from the typed
form :func:`acidflow.format.hivetypes.parse_hive_type` returns (the one Hive type parser):

* ORC type strings for the ``row`` struct of ACID event files (Hive's
  ``OrcRecordUpdater.createEventSchemaFromTableProperties`` builds it from the same strings);
* Arrow types (pyarrow reads and writes the data path);
* Hive types back from an ORC/Arrow schema, to read a bare directory with no catalog entry.

Mapped types: the primitives of :data:`PRIMITIVES`, ``decimal(p,s)``, ``varchar(n)``,
``char(n)``, ``array``, ``map`` and ``struct``. ``uniontype``, ``void``, the interval types and
``timestamp with local time zone`` parse but have no mapping (:class:`HiveTypeError`).

Pure Python apart from importing pyarrow; the Spark SQL counterparts are in
:mod:`acidflow.sparktypes` (this package never imports pyspark).
"""

from __future__ import annotations

import functools

import pyarrow as pa

from acidflow.format.hivetypes import (
    ArrayType,
    CharType,
    DecimalType,
    HiveType,
    HiveTypeError,
    MapType,
    PrimitiveType,
    StructType,
    VarcharType,
    normalize_hive_type,
    parse_hive_type,
)

__all__ = [
    "PRIMITIVES",
    "HiveTypeError",
    "normalize",
    "mapped",
    "orc_type",
    "orc_struct",
    "arrow_type",
    "arrow_schema",
    "hive_type_from_arrow",
]

#: the parameterless primitives acidflow maps to ORC / Arrow (and Spark, acidflow.sparktypes)
PRIMITIVES = frozenset(
    {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "boolean",
        "float",
        "double",
        "string",
        "date",
        "timestamp",
        "binary",
    }
)

_ARROW_PRIMITIVES: dict[str, pa.DataType] = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "binary": pa.binary(),
}


def normalize(hive_type: str) -> str:
    """Canonical Hive type string: ``'DECIMAL(10, 2)'`` -> ``'decimal(10,2)'``, ``integer`` ->
    ``int``, ``decimal`` -> ``decimal(10,0)`` (``HiveDecimal.USER_DEFAULT_PRECISION``).

    Raises:
        HiveTypeError: the string does not parse.
    """
    return normalize_hive_type(hive_type)


@functools.lru_cache(maxsize=4096)
def mapped(hive_type: str) -> HiveType:
    """The typed form of a Hive type that acidflow can map (see the module docstring).

    Raises:
        HiveTypeError: the string does not parse, or the type (or a nested one) has no
            ORC/Arrow/Spark mapping.
    """
    ht = parse_hive_type(hive_type)
    _check_mapped(ht, hive_type)
    return ht


def _check_mapped(ht: HiveType, text: str) -> None:
    if isinstance(ht, PrimitiveType):
        if ht.name not in PRIMITIVES:
            raise HiveTypeError(f"unknown Hive type {text!r}")
    elif isinstance(ht, ArrayType):
        _check_mapped(ht.element, text)
    elif isinstance(ht, MapType):
        _check_mapped(ht.key, text)
        _check_mapped(ht.value, text)
    elif isinstance(ht, StructType):
        for _, ft in ht.fields:
            _check_mapped(ft, text)
    elif not isinstance(ht, (DecimalType, CharType, VarcharType)):
        raise HiveTypeError(f"unknown Hive type {text!r}")


def orc_type(hive_type: str) -> str:
    """ORC type string for a Hive type (ORC's ``TypeDescription`` syntax is Hive's).

    Raises:
        HiveTypeError: as :func:`mapped`.
    """
    return mapped(hive_type).type_name


def orc_struct(columns: list[tuple[str, str]]) -> str:
    """``struct<name:type,...>`` for (name, hive_type) pairs, in order.

    Raises:
        HiveTypeError: as :func:`mapped`.
    """
    return "struct<" + ",".join(f"{n}:{orc_type(t)}" for n, t in columns) + ">"


def _arrow(ht: HiveType) -> pa.DataType:
    if isinstance(ht, DecimalType):
        return pa.decimal128(ht.precision, ht.scale)
    if isinstance(ht, (CharType, VarcharType)):
        return pa.string()
    if isinstance(ht, ArrayType):
        return pa.list_(_arrow(ht.element))
    if isinstance(ht, MapType):
        return pa.map_(_arrow(ht.key), _arrow(ht.value))
    if isinstance(ht, StructType):
        return pa.struct([pa.field(n, _arrow(t)) for n, t in ht.fields])
    return _ARROW_PRIMITIVES[ht.name]


def arrow_type(hive_type: str) -> pa.DataType:
    """Arrow type for a Hive type. Timestamps are ``timestamp[us]`` without zone (Hive
    timestamps are wall-clock values; Spark's microsecond precision is the common ground).

    Raises:
        HiveTypeError: as :func:`mapped`.
    """
    return _arrow(mapped(hive_type))


def arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """Arrow schema for (name, hive_type) pairs.

    Raises:
        HiveTypeError: as :func:`mapped`.
    """
    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])


def hive_type_from_arrow(dt: pa.DataType) -> str:
    """Hive type for an Arrow type read from an ORC file (inverse of :func:`arrow_type`).

    Raises:
        HiveTypeError: an Arrow type with no Hive counterpart.
    """
    if pa.types.is_int8(dt):
        return "tinyint"
    if pa.types.is_int16(dt):
        return "smallint"
    if pa.types.is_int32(dt):
        return "int"
    if pa.types.is_int64(dt):
        return "bigint"
    if pa.types.is_boolean(dt):
        return "boolean"
    if pa.types.is_float32(dt):
        return "float"
    if pa.types.is_float64(dt):
        return "double"
    if pa.types.is_string(dt) or pa.types.is_large_string(dt):
        return "string"
    if pa.types.is_binary(dt) or pa.types.is_large_binary(dt):
        return "binary"
    if pa.types.is_date(dt):
        return "date"
    if pa.types.is_timestamp(dt):
        return "timestamp"
    if pa.types.is_decimal(dt):
        return f"decimal({dt.precision},{dt.scale})"
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        return f"array<{hive_type_from_arrow(dt.value_type)}>"
    if pa.types.is_map(dt):
        return f"map<{hive_type_from_arrow(dt.key_type)},{hive_type_from_arrow(dt.item_type)}>"
    if pa.types.is_struct(dt):
        return (
            "struct<"
            + ",".join(
                f"{dt.field(i).name}:{hive_type_from_arrow(dt.field(i).type)}"
                for i in range(dt.num_fields)
            )
            + ">"
        )
    raise HiveTypeError(f"no Hive type for Arrow type {dt}")
