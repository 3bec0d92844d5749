"""Hive column types and their Spark SQL counterparts.

The Spark side of :mod:`acidflow.format.types` (which maps Hive types to ORC and Arrow and
never imports pyspark): DataFrames handed to and returned from users carry these types.
varchar/char become ``StringType`` and Hive's ``timestamp`` (no time zone) becomes
``TimestampNTZType``, as Spark's own Hive support reads them.
"""

from __future__ import annotations

from pyspark.sql import types as T

from acidflow.format.hivetypes import (
    ArrayType,
    CharType,
    DecimalType,
    HiveType,
    HiveTypeError,
    MapType,
    StructType,
    VarcharType,
)
from acidflow.format.types import mapped

__all__ = ["spark_type", "spark_schema", "hive_type_from_spark"]


def _spark(ht: HiveType) -> T.DataType:
    if isinstance(ht, DecimalType):
        return T.DecimalType(ht.precision, ht.scale)
    if isinstance(ht, (CharType, VarcharType)):
        return T.StringType()
    if isinstance(ht, ArrayType):
        return T.ArrayType(_spark(ht.element))
    if isinstance(ht, MapType):
        return T.MapType(_spark(ht.key), _spark(ht.value))
    if isinstance(ht, StructType):
        return T.StructType([T.StructField(n, _spark(t)) for n, t in ht.fields])
    simple: dict[str, T.DataType] = {
        "tinyint": T.ByteType(),
        "smallint": T.ShortType(),
        "int": T.IntegerType(),
        "bigint": T.LongType(),
        "boolean": T.BooleanType(),
        "float": T.FloatType(),
        "double": T.DoubleType(),
        "string": T.StringType(),
        "date": T.DateType(),
        "timestamp": T.TimestampNTZType(),
        "binary": T.BinaryType(),
    }
    return simple[ht.name]


def spark_type(hive_type: str) -> T.DataType:
    """Spark SQL ``DataType`` for a Hive type (varchar/char become ``StringType``, timestamp
    ``TimestampNTZType``).

    Raises:
        HiveTypeError: as :func:`acidflow.format.types.mapped`.
    """
    return _spark(mapped(hive_type))


def spark_schema(columns: list[tuple[str, str]]) -> T.StructType:
    """Spark ``StructType`` for (name, hive_type) pairs.

    Raises:
        HiveTypeError: as :func:`acidflow.format.types.mapped`.
    """
    return T.StructType([T.StructField(n, spark_type(t)) for n, t in columns])


def hive_type_from_spark(dt: T.DataType) -> str:
    """Hive type for a Spark ``DataType`` (used to check and describe incoming DataFrames).

    Raises:
        HiveTypeError: a Spark type with no Hive counterpart (e.g. interval types).
    """
    simple = {
        T.ByteType: "tinyint",
        T.ShortType: "smallint",
        T.IntegerType: "int",
        T.LongType: "bigint",
        T.BooleanType: "boolean",
        T.FloatType: "float",
        T.DoubleType: "double",
        T.StringType: "string",
        T.DateType: "date",
        T.TimestampType: "timestamp",
        T.TimestampNTZType: "timestamp",
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
        return (
            "struct<"
            + ",".join(f"{f.name}:{hive_type_from_spark(f.dataType)}" for f in dt.fields)
            + ">"
        )
    raise HiveTypeError(f"no Hive type for Spark type {dt}")
