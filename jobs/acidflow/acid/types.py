"""Hive column types and their ORC, Arrow and Spark counterparts.

A Hive type is the string Hive keeps in ``columns.types`` (``int``, ``decimal(10,2)``,
``varchar(20)``, ``array<string>``, ``struct<a:int,b:string>`` ...). acidflow stores table
schemas as Hive types (the catalog) and derives the rest here, in one place:

* ORC type strings for the ``row`` struct of ACID event files (Hive's
  ``OrcRecordUpdater.createEventSchemaFromTableProperties`` builds it from the same strings);
* Arrow types (pyarrow reads and writes the data path);
* Spark SQL types (DataFrames handed to and returned from users);
* Hive types back from an ORC/Arrow schema, to read a bare directory with no catalog entry.

Pure Python apart from importing pyarrow; Spark types are imported lazily.
"""
from __future__ import annotations

import functools
import re

import pyarrow as pa

PRIMITIVES = {
    "tinyint", "smallint", "int", "bigint", "boolean", "float", "double", "string",
    "date", "timestamp", "binary",
}
_PARAM = re.compile(r"^(decimal|varchar|char)\s*\((.*)\)$")


class HiveTypeError(ValueError):
    """A Hive type string that acidflow cannot parse or map."""


@functools.lru_cache(maxsize=4096)
def normalize(hive_type: str) -> str:
    """Lower-case a Hive type and drop blanks: ``'DECIMAL(10, 2)'`` -> ``'decimal(10,2)'``.

    ``integer`` becomes ``int`` and ``decimal`` without parameters becomes ``decimal(10,0)``
    (Hive's default precision and scale, ``HiveDecimal.USER_DEFAULT_PRECISION``).
    """
    t = re.sub(r"\s+", "", hive_type.strip().lower())
    if t == "integer":
        return "int"
    if t == "decimal":
        return "decimal(10,0)"
    return t


def _split_top(s: str) -> list[str]:
    """Split on commas that are not nested inside ``<>`` or ``()``."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return parts


@functools.lru_cache(maxsize=4096)
def parse(hive_type: str) -> tuple:
    """Parse a Hive type into a nested tuple.

    Returns one of ``("prim", name)``, ``("decimal", p, s)``, ``("varchar", n)``,
    ``("char", n)``, ``("array", elem)``, ``("map", key, value)``,
    ``("struct", ((name, type), ...))``.

    Raises:
        HiveTypeError: unknown or malformed type.
    """
    t = normalize(hive_type)
    if t in PRIMITIVES:
        return ("prim", t)
    m = _PARAM.match(t)
    if m:
        args = [a for a in m.group(2).split(",") if a]
        try:
            nums = [int(a) for a in args]
        except ValueError as exc:
            raise HiveTypeError(f"bad parameters in Hive type {hive_type!r}") from exc
        if m.group(1) == "decimal":
            p, s = (nums + [0])[:2] if len(nums) == 1 else nums
            if not (1 <= p <= 38 and 0 <= s <= p):
                raise HiveTypeError(f"decimal precision/scale out of range in {hive_type!r}")
            return ("decimal", p, s)
        if len(nums) != 1:
            raise HiveTypeError(f"{m.group(1)} needs one length in {hive_type!r}")
        return (m.group(1), nums[0])
    if t.startswith("array<") and t.endswith(">"):
        return ("array", parse(t[6:-1]))
    if t.startswith("map<") and t.endswith(">"):
        kv = _split_top(t[4:-1])
        if len(kv) != 2:
            raise HiveTypeError(f"bad map type {hive_type!r}")
        return ("map", parse(kv[0]), parse(kv[1]))
    if t.startswith("struct<") and t.endswith(">"):
        fields = []
        for part in _split_top(t[7:-1]):
            name, _, ftype = part.partition(":")
            if not name or not ftype:
                raise HiveTypeError(f"bad struct field {part!r} in {hive_type!r}")
            fields.append((name, parse(ftype)))
        return ("struct", tuple(fields))
    raise HiveTypeError(f"unknown Hive type {hive_type!r}")


def _render(node: tuple) -> str:
    kind = node[0]
    if kind == "prim":
        return node[1]
    if kind == "decimal":
        return f"decimal({node[1]},{node[2]})"
    if kind in ("varchar", "char"):
        return f"{kind}({node[1]})"
    if kind == "array":
        return f"array<{_render(node[1])}>"
    if kind == "map":
        return f"map<{_render(node[1])},{_render(node[2])}>"
    return "struct<" + ",".join(f"{n}:{_render(t)}" for n, t in node[1]) + ">"


def orc_type(hive_type: str) -> str:
    """ORC type string for a Hive type (ORC's ``TypeDescription`` syntax is Hive's)."""
    return _render(parse(hive_type))


def orc_struct(columns: list[tuple[str, str]]) -> str:
    """``struct<name:type,...>`` for (name, hive_type) pairs, in order."""
    return "struct<" + ",".join(f"{n}:{orc_type(t)}" for n, t in columns) + ">"


def _arrow(node: tuple) -> pa.DataType:
    kind = node[0]
    if kind == "prim":
        return {
            "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
            "bigint": pa.int64(), "boolean": pa.bool_(), "float": pa.float32(),
            "double": pa.float64(), "string": pa.string(), "date": pa.date32(),
            "timestamp": pa.timestamp("us"), "binary": pa.binary(),
        }[node[1]]
    if kind == "decimal":
        return pa.decimal128(node[1], node[2])
    if kind in ("varchar", "char"):
        return pa.string()
    if kind == "array":
        return pa.list_(_arrow(node[1]))
    if kind == "map":
        return pa.map_(_arrow(node[1]), _arrow(node[2]))
    return pa.struct([pa.field(n, _arrow(t)) for n, t in node[1]])


def arrow_type(hive_type: str) -> pa.DataType:
    """Arrow type for a Hive type. Timestamps are ``timestamp[us]`` without zone (Hive
    timestamps are wall-clock values; Spark's microsecond precision is the common ground)."""
    return _arrow(parse(hive_type))


def arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """Arrow schema for (name, hive_type) pairs."""
    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])


def spark_type(hive_type: str):
    """Spark SQL ``DataType`` for a Hive type (varchar/char become ``StringType``).

    Raises:
        HiveTypeError: unknown type.
    """
    from pyspark.sql import types as T

    def conv(node):
        kind = node[0]
        if kind == "prim":
            return {
                "tinyint": T.ByteType(), "smallint": T.ShortType(), "int": T.IntegerType(),
                "bigint": T.LongType(), "boolean": T.BooleanType(), "float": T.FloatType(),
                "double": T.DoubleType(), "string": T.StringType(), "date": T.DateType(),
                "timestamp": T.TimestampNTZType(), "binary": T.BinaryType(),
            }[node[1]]
        if kind == "decimal":
            return T.DecimalType(node[1], node[2])
        if kind in ("varchar", "char"):
            return T.StringType()
        if kind == "array":
            return T.ArrayType(conv(node[1]))
        if kind == "map":
            return T.MapType(conv(node[1]), conv(node[2]))
        return T.StructType([T.StructField(n, conv(t)) for n, t in node[1]])

    return conv(parse(hive_type))


def spark_schema(columns: list[tuple[str, str]]):
    """Spark ``StructType`` for (name, hive_type) pairs."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, spark_type(t)) for n, t in columns])


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
        return "struct<" + ",".join(
            f"{dt.field(i).name}:{hive_type_from_arrow(dt.field(i).type)}"
            for i in range(dt.num_fields)) + ">"
    raise HiveTypeError(f"no Hive type for Arrow type {dt}")


def hive_type_from_spark(dt) -> str:
    """Hive type for a Spark ``DataType`` (used to check and describe incoming DataFrames).

    Raises:
        HiveTypeError: a Spark type with no Hive counterpart (e.g. interval types).
    """
    from pyspark.sql import types as T

    simple = {
        T.ByteType: "tinyint", T.ShortType: "smallint", T.IntegerType: "int",
        T.LongType: "bigint", T.BooleanType: "boolean", T.FloatType: "float",
        T.DoubleType: "double", T.StringType: "string", T.DateType: "date",
        T.TimestampType: "timestamp", T.TimestampNTZType: "timestamp",
        T.BinaryType: "binary",
    }
    for cls, name in simple.items():
        if isinstance(dt, cls):
            return name
    if isinstance(dt, T.DecimalType):
        return f"decimal({dt.precision},{dt.scale})"
    if isinstance(dt, T.ArrayType):
        return f"array<{hive_type_from_spark(dt.elementType)}>"
    if isinstance(dt, T.MapType):
        return f"map<{hive_type_from_spark(dt.keyType)},{hive_type_from_spark(dt.valueType)}>"
    if isinstance(dt, T.StructType):
        return "struct<" + ",".join(
            f"{f.name}:{hive_type_from_spark(f.dataType)}" for f in dt.fields) + ">"
    raise HiveTypeError(f"no Hive type for Spark type {dt}")
