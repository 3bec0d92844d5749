"""Hive's bucketing hash: which bucket a row of a ``CLUSTERED BY`` table belongs to.

Pure Python (numpy and Arrow for the vectorised path), no Spark; Hive type strings are read by
:mod:`acidflow.format.hivetypes`. :func:`bucket_hash_code` / :func:`bucket_number` /
:func:`hive_bucket` / :func:`bucket_numbers` follow Hive's
``serde/.../objectinspector/ObjectInspectorUtils.java`` (``getBucketHashCode`` +
``hashCodeMurmur`` for ``bucketing_version=2``, ``getBucketHashCodeOld`` + ``hashCode`` for
``bucketing_version=1``) and ``storage-api/.../Murmur3.java`` (docs/hive-acid-format.md §10).
The bucket property a row's bucket id is then stored in is :mod:`acidflow.format.bucketing`.

Hive column types are given as Hive type strings (case-insensitive, parameters allowed):
``tinyint smallint int integer bigint boolean float double string varchar(n) char(n) date
timestamp decimal(p,s) binary``. ``decimal`` alone means ``decimal(10,0)`` as in Hive.

Python values accepted per type (``None`` is SQL NULL and hashes to 0 for every type):

* integer types: ``int`` (``bool`` counts as 0/1); must fit the Hive type's range.
* ``boolean``: ``bool`` or ``int`` (non-zero is true).
* ``float`` / ``double``: ``float`` or ``int``; ``float`` values are first rounded to IEEE
  binary32 like a Java ``(float)`` cast (overflow gives infinity).
* ``string`` / ``varchar(n)`` / ``char(n)``: ``str`` (hashed as UTF-8) or UTF-8 ``bytes``.
  ``varchar(n)``/``char(n)`` values longer than ``n`` code points are truncated as Hive does
  when it converts a value to the column type; ``char`` hashes ignore trailing spaces.
* ``binary``: ``bytes`` / ``bytearray`` / ``memoryview``.
* ``date``: ``datetime.date`` (a ``datetime.datetime`` uses its date part) or ``int`` days since
  1970-01-01 (proleptic Gregorian, like Hive 3's ``Date``).
* ``timestamp``: naive ``datetime.datetime`` read as a UTC wall clock (Hive 3 timestamps have no
  zone); an object with a ``nanosecond`` attribute (``pandas.Timestamp``) contributes its
  nanoseconds; a ``datetime.date`` means midnight. Aware datetimes are refused (``ValueError``):
  convert them to the intended wall clock first.
* ``decimal(p,s)``: ``decimal.Decimal``, ``int``, ``str`` or ``float`` (through ``repr``);
  rounded HALF_UP to scale ``s`` as Hive's ``enforcePrecisionScale`` does; a value that then
  needs more than ``p - s`` integer digits raises ``ValueError`` (Hive would store NULL).
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
import numbers
import struct
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format.hivetypes import (
    CharType,
    DecimalType,
    PrimitiveType,
    VarcharType,
    parse_hive_type,
)

__all__ = [
    "murmur3_32",
    "bucket_hash_code",
    "bucket_number",
    "hive_bucket",
    "bucket_numbers",
    "MURMUR3_DEFAULT_SEED",
]

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------------------------
# Murmur3 (Hive storage-api org.apache.hive.common.util.Murmur3)
# ---------------------------------------------------------------------------------------------

MURMUR3_DEFAULT_SEED = 104729  #: ``Murmur3.DEFAULT_SEED``, the seed Hive bucketing uses

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_N = 0xE6546B64
_FMIX1 = 0x85EBCA6B
_FMIX2 = 0xC2B2AE35


def _to_int32(x: int) -> int:
    x &= _M32
    return x - 0x100000000 if x & 0x80000000 else x


def murmur3_32(data: bytes, seed: int = MURMUR3_DEFAULT_SEED) -> int:
    """32-bit Murmur3 exactly as Hive's ``Murmur3.hash32(byte[], int length, int seed)``.

    Four-byte blocks are read little-endian like reference MurmurHash3_x86_32, but the 1-3 tail
    bytes are sign-extended before they are combined (Hive's Java code omits ``& 0xff`` there),
    so the result differs from textbook Murmur3 whenever a tail byte is >= 0x80.

    Args:
        data: the bytes to hash (``bytes``, ``bytearray`` or ``memoryview``).
        seed: 32-bit seed, default 104729 (``Murmur3.DEFAULT_SEED``).
    Returns:
        The hash as a signed 32-bit int.
    Raises:
        TypeError: ``data`` is not bytes-like.
    """
    if not isinstance(data, bytes):
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        else:
            raise TypeError(f"murmur3_32 needs bytes, got {type(data).__name__}")
    length = len(data)
    h = seed & _M32
    nblocks = length >> 2
    if nblocks:
        for (k,) in struct.iter_unpack("<I", data[: nblocks << 2]):
            k = (k * _C1) & _M32
            k = ((k << 15) | (k >> 17)) & _M32
            k = (k * _C2) & _M32
            h ^= k
            h = ((h << 13) | (h >> 19)) & _M32
            h = (h * 5 + _N) & _M32
    rest = length & 3
    if rest:
        i = nblocks << 2
        k1 = 0
        # Java: byte values are sign-extended ints before shifting (the quirk).
        if rest == 3:
            b = data[i + 2]
            k1 ^= (b - 256 if b & 0x80 else b) << 16
        if rest >= 2:
            b = data[i + 1]
            k1 ^= (b - 256 if b & 0x80 else b) << 8
        b = data[i]
        k1 ^= b - 256 if b & 0x80 else b
        k1 &= _M32
        k1 = (k1 * _C1) & _M32
        k1 = ((k1 << 15) | (k1 >> 17)) & _M32
        k1 = (k1 * _C2) & _M32
        h ^= k1
    h ^= length
    h ^= h >> 16
    h = (h * _FMIX1) & _M32
    h ^= h >> 13
    h = (h * _FMIX2) & _M32
    h ^= h >> 16
    return _to_int32(h)


# ---------------------------------------------------------------------------------------------
# Hive types
# ---------------------------------------------------------------------------------------------

_INT_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "smallint": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "bigint": (-(1 << 63), (1 << 63) - 1),
}
#: the parameterless primitives Hive's bucket hash covers
_HASHED_PRIMITIVES = {
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


@lru_cache(maxsize=256)
def _hash_kind(hive_type: str) -> tuple[str, int, int]:
    """How a column of ``hive_type`` is hashed: ``(name, p1, p2)`` from the typed form of
    :func:`acidflow.format.hivetypes.parse_hive_type` -- ``'Decimal(10, 2)'`` ->
    ``('decimal', 10, 2)``, ``'varchar(5)'`` -> ``('varchar', 5, 0)``; unused parameters are 0.

    Raises:
        TypeError: ``hive_type`` is not a string.
        ValueError: it does not parse (``HiveTypeError``) or the type has no bucket hash
            (complex types, ``void``, intervals, ``timestamp with local time zone``).
    """
    if not isinstance(hive_type, str):
        raise TypeError(f"hive type must be a str, got {type(hive_type).__name__}")
    ht = parse_hive_type(hive_type)
    if isinstance(ht, PrimitiveType) and ht.name in _HASHED_PRIMITIVES:
        return (ht.name, 0, 0)
    if isinstance(ht, (CharType, VarcharType)):
        return (ht.name, ht.length, 0)
    if isinstance(ht, DecimalType):
        return (ht.name, ht.precision, ht.scale)
    raise ValueError(f"unsupported Hive type for bucketing: {hive_type!r}")


# ---------------------------------------------------------------------------------------------
# Value conversion (Python value -> what the Hive writable holds)
# ---------------------------------------------------------------------------------------------


def _as_int(value: Any, name: str) -> int:
    if not isinstance(value, numbers.Integral):  # int, bool, numpy integers
        raise TypeError(f"{name} value must be an int, got {type(value).__name__}: {value!r}")
    value = int(value)
    lo, hi = _INT_RANGES[name]
    if not lo <= value <= hi:
        raise ValueError(f"{name} value out of range: {value} (allowed {lo}..{hi})")
    return value


def _as_bool(value: Any) -> bool:
    if not isinstance(value, numbers.Integral):  # bool, int, numpy integers
        if getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy booleans
            return bool(value)
        raise TypeError(f"boolean value must be a bool, got {type(value).__name__}: {value!r}")
    return bool(value)


def _as_double(value: Any, name: str) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, numbers.Real):  # int, numpy floats and ints
        return float(value)
    raise TypeError(f"{name} value must be a float, got {type(value).__name__}: {value!r}")


def _float_to_int_bits(value: float) -> int:
    """Java ``Float.floatToIntBits((float) value)`` as a signed 32-bit int."""
    if math.isnan(value):
        return 0x7FC00000  # the canonical NaN floatToIntBits returns
    try:
        packed = struct.pack(">f", value)
    except OverflowError:  # Java's (float) cast overflows to infinity
        packed = struct.pack(">f", math.copysign(math.inf, value))
    return struct.unpack(">i", packed)[0]


def _double_to_long_bits(value: float) -> int:
    """Java ``Double.doubleToLongBits(value)`` as a signed 64-bit int."""
    if math.isnan(value):
        return 0x7FF8000000000000
    return struct.unpack(">q", struct.pack(">d", value))[0]


def _as_utf8(value: Any, name: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{name} value must be a str, got {type(value).__name__}: {value!r}")


def _truncate_chars(value: Any, length: int, name: str) -> bytes:
    """Value as UTF-8 after Hive's length enforcement (truncate to ``length`` code points)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{name} value must be a str, got {type(value).__name__}: {value!r}")
    return value[:length].encode("utf-8")


def _char_bytes(value: Any, length: int) -> bytes:
    """CHAR(n): truncated to n code points, then trailing spaces (U+0020 only) removed."""
    return _truncate_chars(value, length, "char").rstrip(b" ")


def _as_binary(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"binary value must be bytes, got {type(value).__name__}: {value!r}")


_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_DATETIME = _dt.datetime(1970, 1, 1)


def _as_epoch_day(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        value = value.date()
    if isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(1 << 31) <= value < (1 << 31):
            raise ValueError(f"date value out of range: {value} days since 1970-01-01")
        return value
    raise TypeError(f"date value must be a datetime.date, got {type(value).__name__}: {value!r}")


def _as_epoch_seconds_nanos(value: Any) -> tuple[int, int]:
    """(seconds since 1970-01-01 00:00 UTC wall clock, nanos 0..999999999)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None and value.tzinfo.utcoffset(value) is not None:
            raise ValueError(
                f"timestamp value must be a naive datetime (Hive timestamps have no zone): {value!r}"
            )
        delta = value.replace(tzinfo=None) - _EPOCH_DATETIME
        nanos = delta.microseconds * 1000 + int(getattr(value, "nanosecond", 0) or 0)
        return delta.days * 86400 + delta.seconds, nanos
    if isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days * 86400, 0
    raise TypeError(
        f"timestamp value must be a datetime.datetime, got {type(value).__name__}: {value!r}"
    )


_DEC_CONTEXT = _decimal.Context(
    prec=200, rounding=_decimal.ROUND_HALF_UP, Emax=_decimal.MAX_EMAX, Emin=_decimal.MIN_EMIN
)


def _as_unscaled_decimal(value: Any, precision: int, scale: int) -> tuple[int, int]:
    """(unscaled, scale) of the value as Hive's HiveDecimal holds it in a decimal(p,s) column.

    Rounded HALF_UP to ``scale`` digits, checked against ``precision``, then with trailing
    fractional zeros removed (HiveDecimal never keeps them; 1.50 is held as 15 scale 1).
    """
    if isinstance(value, _decimal.Decimal):
        dec = value
    elif isinstance(value, bool):
        raise TypeError(f"decimal value must be a Decimal, got bool: {value!r}")
    elif isinstance(value, int):
        dec = _decimal.Decimal(value)
    elif isinstance(value, str):
        try:
            dec = _decimal.Decimal(value.strip())
        except _decimal.InvalidOperation:
            raise ValueError(f"not a decimal number: {value!r}") from None
    elif isinstance(value, float):
        dec = _decimal.Decimal(repr(value)) if math.isfinite(value) else _decimal.Decimal(value)
    else:
        raise TypeError(
            f"decimal value must be a decimal.Decimal, got {type(value).__name__}: {value!r}"
        )
    if not dec.is_finite():
        raise ValueError(f"decimal value must be finite: {value!r}")
    if dec and dec.adjusted() >= precision - scale:  # too many integer digits, even unrounded
        raise ValueError(
            f"decimal value {value!r} does not fit decimal({precision},{scale})"
            " (Hive would store NULL)"
        )
    if int(dec.as_tuple().exponent) < -scale:
        dec = dec.quantize(_decimal.Decimal(1).scaleb(-scale), context=_DEC_CONTEXT)
    sign, digits, raw_exponent = dec.as_tuple()
    exponent = int(raw_exponent)  # finite: an int
    unscaled = int("".join(map(str, digits))) if digits else 0
    if exponent > 0:
        unscaled *= 10**exponent
        exponent = 0
    cur_scale = -exponent
    if unscaled >= 10 ** (precision - scale + cur_scale):
        raise ValueError(
            f"decimal value {value!r} does not fit decimal({precision},{scale})"
            " (Hive would store NULL)"
        )
    while cur_scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        cur_scale -= 1
    if unscaled == 0:
        return 0, 0
    return (-unscaled if sign else unscaled), cur_scale


def _big_integer_bytes(x: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal big-endian two's complement (0 -> b'\\x00')."""
    n = (x if x >= 0 else ~x).bit_length() // 8 + 1
    return x.to_bytes(n, "big", signed=True)


def _big_integer_hash(x: int) -> int:
    """Java ``BigInteger.hashCode()``: 31-fold over the 32-bit magnitude words, times signum."""
    mag = -x if x < 0 else x
    h = 0
    if mag:
        nwords = (mag.bit_length() + 31) >> 5
        for (word,) in struct.iter_unpack(">I", mag.to_bytes(nwords * 4, "big")):
            h = (31 * h + word) & _M32
    if x < 0:
        h = -h
    return _to_int32(h)


def _vlong_bytes(v: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong`` / Hive ``LazyBinaryUtils.writeVLongToByteArray``."""
    if -112 <= v <= 127:
        return bytes([v & 0xFF])
    first = -112
    if v < 0:
        v = ~v
        first = -120
    n = (v.bit_length() + 7) // 8
    return bytes([(first - n) & 0xFF]) + v.to_bytes(n, "big")


def _timestamp_writable_bytes(seconds: int, nanos: int) -> bytes:
    """Serialized form of Hive's ``TimestampWritableV2`` (what ``getBytes()`` returns).

    4 bytes big-endian: the low 31 bits of the seconds, top bit set when more follows; then,
    when the nanos are non-zero or the seconds do not fit in 0..2**31-1, a VLong with the nanos
    written with their 9 decimal digits reversed (negated minus one when a second VLong
    follows); then, for such seconds, a VLong with ``seconds >> 31``.
    """
    has_second_vint = seconds < 0 or seconds > 0x7FFFFFFF
    reversed_nanos = int(f"{nanos:09d}"[::-1]) if nanos else 0
    first = seconds & _M32
    if reversed_nanos or has_second_vint:
        first |= 0x80000000
    else:
        first &= 0x7FFFFFFF
    out = first.to_bytes(4, "big")
    if has_second_vint:
        out += _vlong_bytes(-reversed_nanos - 1) + _vlong_bytes(seconds >> 31)
    elif reversed_nanos:
        out += _vlong_bytes(reversed_nanos)
    return out


# ---------------------------------------------------------------------------------------------
# Per-type field hashes
# ---------------------------------------------------------------------------------------------


def _text_hash(data: bytes, start: int) -> int:
    """``r = 31 * r + (signed byte)`` over ``data``, from ``start`` (Java int arithmetic)."""
    r = start
    for b in data:
        r = (31 * r + (b - 256 if b & 0x80 else b)) & _M32
    return _to_int32(r)


def _fold64(bits: int) -> int:
    """``(int) (a ^ (a >>> 32))`` for a 64-bit value."""
    u = bits & _M64
    return _to_int32(u ^ (u >> 32))


def _v1_timestamp(value: Any, _p: int, _s: int) -> int:
    seconds, nanos = _as_epoch_seconds_nanos(value)
    return _fold64(((seconds << 30) & _M64) | nanos)


def _v1_decimal(value: Any, precision: int, scale: int) -> int:
    unscaled, cur_scale = _as_unscaled_decimal(value, precision, scale)
    return _to_int32(31 * _big_integer_hash(unscaled) + cur_scale)


# bucketing_version=1: ObjectInspectorUtils.hashCode (the per-writable hashCode()s)
_V1_HASHERS: dict[str, Callable[[Any, int, int], int]] = {
    "boolean": lambda v, p, s: 1 if _as_bool(v) else 0,
    "tinyint": lambda v, p, s: _as_int(v, "tinyint"),
    "smallint": lambda v, p, s: _as_int(v, "smallint"),
    "int": lambda v, p, s: _as_int(v, "int"),
    "bigint": lambda v, p, s: _fold64(_as_int(v, "bigint")),
    "float": lambda v, p, s: _float_to_int_bits(_as_double(v, "float")),
    "double": lambda v, p, s: _fold64(_double_to_long_bits(_as_double(v, "double"))),
    "string": lambda v, p, s: _text_hash(_as_utf8(v, "string"), 0),
    "varchar": lambda v, p, s: _text_hash(_truncate_chars(v, p, "varchar"), 1),
    "char": lambda v, p, s: _text_hash(_char_bytes(v, p), 1),
    "binary": lambda v, p, s: _text_hash(_as_binary(v), 1),
    "date": lambda v, p, s: _as_epoch_day(v),
    "timestamp": _v1_timestamp,
    "decimal": _v1_decimal,
}


def _v2_float(value: Any, _p: int, _s: int) -> int:
    # Hive passes the int bit pattern to ByteBuffer.putFloat, i.e. (float) intBits.
    bits = _float_to_int_bits(_as_double(value, "float"))
    return murmur3_32(struct.pack(">f", float(bits)))


def _v2_double(value: Any, _p: int, _s: int) -> int:
    # Same quirk: putDouble((double) longBits).
    bits = _double_to_long_bits(_as_double(value, "double"))
    return murmur3_32(struct.pack(">d", float(bits)))


def _v2_timestamp(value: Any, _p: int, _s: int) -> int:
    return murmur3_32(_timestamp_writable_bytes(*_as_epoch_seconds_nanos(value)))


def _v2_decimal(value: Any, precision: int, scale: int) -> int:
    unscaled, _ = _as_unscaled_decimal(value, precision, scale)
    return murmur3_32(_big_integer_bytes(unscaled))


# bucketing_version=2: ObjectInspectorUtils.hashCodeMurmur
_V2_HASHERS: dict[str, Callable[[Any, int, int], int]] = {
    "boolean": lambda v, p, s: 1 if _as_bool(v) else 0,
    "tinyint": lambda v, p, s: _as_int(v, "tinyint"),
    "smallint": lambda v, p, s: murmur3_32(struct.pack(">h", _as_int(v, "smallint"))),
    "int": lambda v, p, s: murmur3_32(struct.pack(">i", _as_int(v, "int"))),
    "bigint": lambda v, p, s: murmur3_32(struct.pack(">q", _as_int(v, "bigint"))),
    "float": _v2_float,
    "double": _v2_double,
    "string": lambda v, p, s: murmur3_32(_as_utf8(v, "string")),
    "varchar": lambda v, p, s: murmur3_32(_truncate_chars(v, p, "varchar")),
    "char": lambda v, p, s: murmur3_32(_char_bytes(v, p)),
    "binary": lambda v, p, s: murmur3_32(_as_binary(v)),
    "date": lambda v, p, s: murmur3_32(struct.pack(">i", _as_epoch_day(v))),
    "timestamp": _v2_timestamp,
    "decimal": _v2_decimal,
}


def bucket_hash_code(
    values: Sequence[Any], hive_types: Sequence[str], bucketing_version: int = 2
) -> int:
    """Hive's bucket hash of one row's CLUSTERED BY columns.

    ``h = 0; for each column: h = 31 * h + field_hash`` in Java int arithmetic, where the field
    hash of a NULL is 0 and otherwise:

    * ``bucketing_version=2`` (Hive 3 default for new tables): ``ObjectInspectorUtils
      .getBucketHashCode`` / ``hashCodeMurmur`` -- :func:`murmur3_32` (seed 104729) over
      int/bigint/smallint/date as big-endian bytes, float/double through Hive's
      ``putFloat(floatToIntBits(v))`` quirk, UTF-8 of string/varchar/char (char without
      trailing spaces), raw binary bytes, the ``TimestampWritableV2`` serialization, and the
      ``BigInteger`` bytes of a decimal's unscaled value; tinyint and boolean are not hashed
      (the value itself, 1/0).
    * ``bucketing_version=1`` (tables created before Hive 3, and Hive's ROW__ID routing for
      UPDATE/DELETE): ``ObjectInspectorUtils.getBucketHashCodeOld`` / ``hashCode`` -- the
      Java-style hash codes of the values and of their Hive writables.

    Args:
        values: one value per bucketing column (see the module docstring for accepted types).
        hive_types: the Hive type string of each column, same length as ``values``.
        bucketing_version: the table's ``bucketing_version`` property, 1 or 2.
    Returns:
        The hash as a signed 32-bit int (Java ``int``).
    Raises:
        ValueError: lengths differ, unknown/unsupported type, unknown bucketing version,
            out-of-range value (e.g. 300 for tinyint, too many digits for the decimal).
        TypeError: a value's Python type does not fit its Hive type, or ``hive_types`` is a
            single string.
    """
    if bucketing_version == 2:
        hashers = _V2_HASHERS
    elif bucketing_version == 1:
        hashers = _V1_HASHERS
    else:
        raise ValueError(f"bucketing_version must be 1 or 2, got {bucketing_version!r}")
    if isinstance(hive_types, str):
        raise TypeError("hive_types must be a sequence of type strings, not one string")
    if len(values) != len(hive_types):
        raise ValueError(
            f"{len(values)} values but {len(hive_types)} hive types: they must pair up"
        )
    h = 0
    for value, hive_type in zip(values, hive_types):
        name, p1, p2 = _hash_kind(hive_type)
        field = 0 if value is None else hashers[name](value, p1, p2)
        h = (31 * h + field) & _M32
    return _to_int32(h)


def bucket_number(hash_code: int, num_buckets: int) -> int:
    """Bucket of a row from its hash: ``(hash_code & 0x7fffffff) % num_buckets``.

    Follows ``ObjectInspectorUtils.getBucketNumber(int hashCode, int numberOfBuckets)``.

    Args:
        hash_code: a :func:`bucket_hash_code` result (any int; read as 32-bit two's complement).
        num_buckets: the table's bucket count, > 0.
    Returns:
        Bucket number in ``0..num_buckets-1``.
    Raises:
        ValueError: ``num_buckets`` <= 0.
        TypeError: an argument is not an int.
    """
    if isinstance(hash_code, bool) or not isinstance(hash_code, int):
        raise TypeError(f"hash_code must be an int, got {type(hash_code).__name__}")
    _check_num_buckets(num_buckets)
    return (hash_code & 0x7FFFFFFF) % num_buckets


def _check_num_buckets(num_buckets: Any) -> None:
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int):
        raise TypeError(f"num_buckets must be an int, got {type(num_buckets).__name__}")
    if num_buckets <= 0:
        raise ValueError(f"Number of buckets must be > 0, got {num_buckets}")


def hive_bucket(
    values: Sequence[Any],
    hive_types: Sequence[str],
    num_buckets: int,
    bucketing_version: int = 2,
) -> int:
    """Bucket number of a row: ``bucket_number(bucket_hash_code(values, hive_types, v), n)``.

    Same as Hive's ``ObjectInspectorUtils.getBucketNumber(Object[], ObjectInspector[], int)``
    (version 2) / ``getBucketNumberOld`` (version 1).

    Raises:
        ValueError / TypeError: as :func:`bucket_hash_code` and :func:`bucket_number`.
    """
    _check_num_buckets(num_buckets)  # fail before hashing
    return bucket_number(bucket_hash_code(values, hive_types, bucketing_version), num_buckets)


# ---------------------------------------------------------------------------------------------
# Vectorised bucket numbers (numpy) for the common integer keys
# ---------------------------------------------------------------------------------------------


def _np_rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _np_murmur3_blocks(blocks: list[np.ndarray], length: int) -> np.ndarray:
    """:func:`murmur3_32` of many inputs of ``length`` bytes (a multiple of 4, so no tail),
    given their little-endian 4-byte blocks as uint32 arrays; returns uint32."""
    with np.errstate(over="ignore"):
        h = np.full(len(blocks[0]), MURMUR3_DEFAULT_SEED, dtype=np.uint32)
        for k in blocks:
            k = k * np.uint32(_C1)
            k = _np_rotl(k, 15) * np.uint32(_C2)
            h = h ^ k
            h = _np_rotl(h, 13) * np.uint32(5) + np.uint32(_N)
        h = h ^ np.uint32(length)
        h = h ^ (h >> np.uint32(16))
        h = h * np.uint32(_FMIX1)
        h = h ^ (h >> np.uint32(13))
        h = h * np.uint32(_FMIX2)
        return h ^ (h >> np.uint32(16))


def bucket_numbers(
    columns: Sequence[Sequence[Any]],
    hive_types: Sequence[str],
    num_buckets: int,
    bucketing_version: int = 2,
) -> list[int]:
    """:func:`hive_bucket` of many rows, given column-wise (one sequence or Arrow array per
    bucketing column). ``int``/``bigint`` columns of ``bucketing_version=2`` tables are hashed
    vectorised with numpy (Hive's murmur3 over the big-endian bytes: no tail bytes, so the
    sign-extension quirk never applies); anything else goes row by row through
    :func:`bucket_hash_code`, which gives the same numbers.

    Raises:
        ValueError / TypeError: as :func:`bucket_hash_code` and :func:`bucket_number`.
    """
    _check_num_buckets(num_buckets)
    names = [_hash_kind(t)[0] for t in hive_types]
    if bucketing_version != 2 or not columns or any(n not in ("int", "bigint") for n in names):
        cols = [c.to_pylist() if hasattr(c, "to_pylist") else list(c) for c in columns]
        return [
            bucket_number(bucket_hash_code(list(v), hive_types, bucketing_version), num_buckets)
            for v in zip(*cols)
        ]
    arrays = []
    for name, col in zip(names, columns):
        target = pa.int32() if name == "int" else pa.int64()
        try:
            arr = col if isinstance(col, (pa.Array, pa.ChunkedArray)) else pa.array(col)
            if not (pa.types.is_integer(arr.type) or pa.types.is_null(arr.type)):
                raise TypeError(f"{name} bucket column holds {arr.type} values")
            arr = pc.cast(arr, target)  # safe cast: out of range raises
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise ValueError(f"{name} bucket column: {e}") from e
        arrays.append(arr)
    n = len(arrays[0])
    h = np.zeros(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for name, arr in zip(names, arrays):
            nulls = pc.is_null(arr).to_numpy(zero_copy_only=False)
            vals = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)
            if name == "int":
                be = vals.astype(">i4").view(np.uint32)  # big-endian bytes read as LE block
                field = _np_murmur3_blocks([be.astype(np.uint32)], 4)
            else:
                be = vals.astype(">i8").view(np.uint32).reshape(n, 2)
                field = _np_murmur3_blocks(
                    [be[:, 0].astype(np.uint32), be[:, 1].astype(np.uint32)], 8
                )
            field = np.where(nulls, np.uint32(0), field)
            h = h * np.uint32(31) + field
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int64).tolist()
