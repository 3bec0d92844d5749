"""Unit tests of ``acidflow.format.bucketing`` (BucketCodec) and ``acidflow.format.bucketing_hash``
(Hive's bucketing hash); pure Python, no Spark.

Where expected numbers come from:

* ``SPEC``: ``docs/hive-acid-format.md`` §4 (codec examples) and §10
  (hashes computed with Hive's own ``Murmur3`` class from ``hive-storage-api-2.8.1.jar``).
* ``MURMUR3_VECTORS``: the public reference test vectors of MurmurHash3_x86_32 (SMHasher). None
  has a tail byte >= 0x80, so Hive's sign-extension quirk does not change them.
* ``HIVE_JVM``: computed once in the Spark JVM with Hive 2.3.10 / hive-storage-api 2.8.1 classes
  through the oracle of ``tests/compat/test_bucketing_vs_hive.py`` (``ObjectInspectorUtils
  .hashCode`` for v1, Hive 3's ``hashCodeMurmur`` steps + ``Murmur3.hash32`` for v2). That
  test re-checks thousands of values against the JVM; these few keep the fast suite honest.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import pytest

from acidflow.format.bucketing import (
    MAX_BUCKET_ID,
    MAX_STATEMENT_ID,
    BucketCodec,
    decode_bucket_id,
    decode_statement_id,
    encode_bucket_property,
)
from acidflow.format.bucketing_hash import (
    MURMUR3_DEFAULT_SEED,
    bucket_hash_code,
    bucket_number,
    hive_bucket,
    murmur3_32,
)

# ---------------------------------------------------------------------------------------------
# Bucket property codec
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bucket,stmt,prop",
    # docs/hive-acid-format.md §4
    [(0, 0, 536870912), (2, 0, 537001984), (0, 1, 536870913), (5, 3, 537198595)],
)
def test_codec_spec_examples(bucket, stmt, prop):
    assert BucketCodec.V1.encode(bucket, stmt) == prop
    assert encode_bucket_property(bucket, stmt) == prop
    assert BucketCodec.V1.decode_writer_id(prop) == bucket
    assert BucketCodec.V1.decode_statement_id(prop) == stmt
    assert BucketCodec.determine_version(prop) is BucketCodec.V1
    assert BucketCodec.for_property(prop) is BucketCodec.V1
    assert decode_bucket_id(prop) == bucket
    assert decode_statement_id(prop) == stmt


def test_codec_default_statement_and_hex_layout():
    assert encode_bucket_property(0) == 0x20000000
    assert encode_bucket_property(MAX_BUCKET_ID, MAX_STATEMENT_ID) == 0x2FFF0FFF
    assert encode_bucket_property(1, 0x0AB) == 0x200100AB


def test_codec_round_trip_all_bucket_ids():
    for bucket in range(MAX_BUCKET_ID + 1):
        for stmt in (0, 1, 7, MAX_STATEMENT_ID):
            prop = encode_bucket_property(bucket, stmt)
            assert 0 < prop < 2**31
            assert prop >> 29 == 1
            assert decode_bucket_id(prop) == bucket
            assert decode_statement_id(prop) == stmt


def test_codec_negative_statement_means_zero():
    assert encode_bucket_property(3, -1) == encode_bucket_property(3, 0)


def test_codec_v0_values():
    # pre-Hive-3 files: the property is the bucket id itself
    for prop in (0, 1, 5, 4096, 2**29 - 1):
        assert BucketCodec.determine_version(prop) is BucketCodec.V0
        assert decode_bucket_id(prop) == prop
        assert decode_statement_id(prop) == 0
    assert BucketCodec.V0.encode(7) == 7
    assert BucketCodec.V0.encode(7, -1) == 7
    assert BucketCodec.V0.version == 0 and BucketCodec.V1.version == 1


def test_codec_accepts_signed_and_unsigned_32_bit():
    assert decode_bucket_id(536870912) == 0
    with pytest.raises(ValueError, match="version 7"):
        BucketCodec.determine_version(-1)  # 0xFFFFFFFF as a Java int
    with pytest.raises(ValueError, match="version 7"):
        BucketCodec.determine_version(0xFFFFFFFF)


@pytest.mark.parametrize("prop", [0x40000000, 0x60000000, 0x80000000, 0xE0000000, -(2**31)])
def test_codec_unknown_versions(prop):
    with pytest.raises(ValueError, match="Illegal 'bucket' format"):
        BucketCodec.determine_version(prop)
    with pytest.raises(ValueError):
        decode_bucket_id(prop)
    with pytest.raises(ValueError):
        decode_statement_id(prop)


@pytest.mark.parametrize(
    "bucket,stmt,match",
    [
        (4096, 0, "bucket_id out of range: 4096"),
        (-1, 0, "bucket_id out of range: -1"),
        (0, 4096, "statement_id out of range: 4096"),
        (10**6, 0, "bucket_id"),
    ],
)
def test_codec_v1_range_errors(bucket, stmt, match):
    with pytest.raises(ValueError, match=match):
        BucketCodec.V1.encode(bucket, stmt)
    with pytest.raises(ValueError, match=match):
        encode_bucket_property(bucket, stmt)


def test_codec_v0_range_errors():
    with pytest.raises(ValueError, match="bucket_id out of range"):
        BucketCodec.V0.encode(2**29)
    with pytest.raises(ValueError, match="bucket_id out of range"):
        BucketCodec.V0.encode(-1)
    with pytest.raises(ValueError, match="statement_id"):
        BucketCodec.V0.encode(1, 2)


def test_codec_type_and_width_errors():
    with pytest.raises(TypeError):
        encode_bucket_property(1.0)
    with pytest.raises(TypeError):
        encode_bucket_property(True)
    with pytest.raises(TypeError):
        encode_bucket_property(1, "0")
    with pytest.raises(TypeError):
        decode_bucket_id("536870912")
    with pytest.raises(ValueError, match="32 bits"):
        decode_bucket_id(2**32)
    with pytest.raises(ValueError, match="32 bits"):
        BucketCodec.V1.decode_writer_id(-(2**31) - 1)


# ---------------------------------------------------------------------------------------------
# Murmur3
# ---------------------------------------------------------------------------------------------

MURMUR3_VECTORS = [  # (data, seed, unsigned hash)
    (b"", 0, 0),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\xff\xff\xff\xff", 0, 0x76293B50),
    (b"\x21\x43\x65\x87", 0, 0xF55B516B),
    (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE),
    (b"\x21\x43\x65", 0, 0x7E4A8634),
    (b"\x21\x43", 0, 0xA0F7B07A),
    (b"\x21", 0, 0x72661CF4),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"\x00\x00\x00", 0, 0x85F0B427),
    (b"\x00\x00", 0, 0x30F4C306),
    (b"\x00", 0, 0x514E28B7),
    (b"Hello, world!", 1234, 0xFAF6CDB3),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize("data,seed,expected", MURMUR3_VECTORS)
def test_murmur3_reference_vectors(data, seed, expected):
    seed = seed - 2**32 if seed >= 2**31 else seed  # Java int seed
    got = murmur3_32(data, seed)
    assert -(2**31) <= got < 2**31
    assert got & 0xFFFFFFFF == expected


@pytest.mark.parametrize(
    "data,seed,expected",
    [  # HIVE_JVM: org.apache.hive.common.util.Murmur3.hash32
        (b"", MURMUR3_DEFAULT_SEED, -965378730),
        (b"abc", MURMUR3_DEFAULT_SEED, -885266671),
        (b"\x7f", MURMUR3_DEFAULT_SEED, 1106843505),
        (b"\x80", MURMUR3_DEFAULT_SEED, 1104592682),
        (b"\xff\xfe\xfd", MURMUR3_DEFAULT_SEED, -1962641613),
        (b"abcd\xff", MURMUR3_DEFAULT_SEED, 463283253),
        (b"abc", 0, -1277324294),
        (b"\x80", 0, 600905945),
        (b"\xff\xfe\xfd", 0, -163022610),
        (b"abcd\xff", 0, -141189726),
    ],
)
def test_murmur3_hive_values_including_signed_tail(data, seed, expected):
    assert murmur3_32(data, seed) == expected


def test_murmur3_signed_tail_differs_from_textbook():
    # Textbook Murmur3 reads tail bytes unsigned; for b"\x80" seed 0 its k1 is 0x80, Hive's
    # is 0xFFFFFF80. Their outputs must differ (Hive's value above), while 0x7F agrees.
    assert murmur3_32(b"\x80", 0) != murmur3_32(b"\x7f", 0)
    assert murmur3_32(bytearray(b"abc")) == murmur3_32(memoryview(b"abc")) == -885266671
    assert murmur3_32(b"abc") == murmur3_32(b"abc", MURMUR3_DEFAULT_SEED)


def test_murmur3_rejects_str():
    with pytest.raises(TypeError):
        murmur3_32("abc")


# ---------------------------------------------------------------------------------------------
# Bucket hash: spec reference values
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,hash_code,buckets",  # docs/hive-acid-format.md §10: (bucket of 2, of 4, of 32)
    [
        (0, 1362653161, (1, 1, 9)),
        (1, 1321152925, (1, 1, 29)),
        (2, -249917244, (0, 0, 4)),
        (3, 1183246022, (0, 2, 6)),
        (42, 1960085659, (1, 3, 27)),
        (-1, 1626716813, (1, 1, 13)),
    ],
)
def test_spec_int_values(value, hash_code, buckets):
    assert bucket_hash_code([value], ["int"]) == hash_code
    assert bucket_hash_code([value], ["int"], bucketing_version=2) == hash_code
    for n, expected in zip((2, 4, 32), buckets):
        assert bucket_number(hash_code, n) == expected
        assert hive_bucket([value], ["int"], n) == expected


def test_spec_bigint_and_strings():
    assert bucket_hash_code([1], ["bigint"]) == -913662660
    assert hive_bucket([1], ["bigint"], 4) == 0
    assert bucket_hash_code(["abc"], ["string"]) == -885266671
    assert hive_bucket(["abc"], ["string"], 4) == 1
    assert bucket_hash_code(["hello world"], ["string"]) == 705886192
    assert hive_bucket(["hello world"], ["string"], 4) == 0


# ---------------------------------------------------------------------------------------------
# Bucket hash: per-type values from Hive's classes (HIVE_JVM)
# ---------------------------------------------------------------------------------------------

EPOCH = dt.datetime(1970, 1, 1)
HIVE_JVM_FIELD_HASHES = [  # (hive type, python value, v1 hash, v2 hash)
    ("smallint", -2, -2, 864251930),
    ("smallint", 300, 300, 2107031704),
    ("tinyint", -5, -5, -5),
    ("bigint", -1, 0, -237789309),
    ("bigint", 2**63 - 1, -(2**31), -536577852),
    ("float", 1.5, 1069547520, -1009260869),
    ("float", -0.0, -(2**31), -1185332889),
    ("float", math.nan, 2143289344, -480354314),
    ("float", math.inf, 2139095040, -292175804),
    ("float", struct.unpack(">f", bytes.fromhex("7fc00001"))[0], 2143289344, -480354314),  # NaN
    ("float", struct.unpack(">f", bytes.fromhex("ffc00000"))[0], 2143289344, -480354314),  # -NaN
    ("double", 1.5, 1073217536, 76905473),
    ("double", -0.0, -(2**31), -1757926548),
    ("double", math.nan, 2146959360, 1138026565),
    ("double", 0.1, -1507852285, 1611165945),
    ("string", "", 0, -965378730),
    ("string", "é", -1978, -527561221),
    ("string", "hello world", 1794106052, 705886192),
    ("string", "😀", -573225, -178109353),
    ("varchar(3)", "abcdef", 126145, -885266671),
    ("char(5)", "ab   ", 4066, 398604456),
    ("char(5)", "ab", 4066, 398604456),
    ("binary", b"\x00\xff", 960, -1871057245),
    ("binary", b"abc", 126145, -885266671),
    ("date", dt.date(1970, 1, 1), 0, 1362653161),
    ("date", dt.date(1969, 12, 31), -1, 1626716813),
    ("date", dt.date(2024, 2, 29), 19782, -476630087),
    ("date", dt.date(1, 1, 1), -719162, 1191766136),
    ("timestamp", EPOCH, 0, 1362653161),
    ("timestamp", dt.datetime(2020, 5, 17, 8, 30, 1, 250_000), 1498844930, -915505256),
    ("timestamp", dt.datetime(1960, 1, 1), -78904800, 691005397),
    ("timestamp", dt.datetime(1969, 12, 31, 23, 59, 59, 500_000), 573741823, 171279716),
    ("timestamp", dt.datetime(2038, 1, 19, 3, 14, 7), -536870913, 1133859967),  # 2**31 - 1 s
    ("timestamp", dt.datetime(2038, 1, 19, 3, 14, 7, 500_000), -1036870913, 608745579),
    ("timestamp", dt.datetime(1901, 12, 13, 20, 45, 52), -536870912, 1243437783),  # -2**31 s
    ("timestamp", dt.datetime(1, 1, 1), 1645969984, 1971120217),
    ("decimal(10,2)", Decimal("1.50"), 466, 864210675),
    ("decimal(10,2)", Decimal(-3), -93, 1232173355),
    ("decimal(10,2)", Decimal(0), 0, 500407381),
    ("decimal(10,2)", Decimal("123.456"), 382728, -1184276373),  # rounds to 123.46
    ("decimal(10,2)", Decimal("12345678.995"), 382716049, -1608099458),  # rounds up to 12345679
    ("decimal(38,18)", Decimal("-12345678901234567890.123456789012345678"), 880932685, 1531461355),
    ("boolean", True, 1, 1),
    ("boolean", False, 0, 0),
]


@pytest.mark.parametrize("hive_type,value,v1,v2", HIVE_JVM_FIELD_HASHES)
def test_field_hashes_match_hive_jvm(hive_type, value, v1, v2):
    assert bucket_hash_code([value], [hive_type], bucketing_version=1) == v1
    assert bucket_hash_code([value], [hive_type], bucketing_version=2) == v2


class _NanoDatetime(dt.datetime):
    nanosecond = 0


def test_timestamp_nanoseconds():
    # HIVE_JVM: 2038-01-19T03:14:08.000000001 (seconds = 2**31 needs the second VInt)
    ts = _NanoDatetime(2038, 1, 19, 3, 14, 8)
    ts.nanosecond = 1
    assert bucket_hash_code([ts], ["timestamp"], 1) == 536870913
    assert bucket_hash_code([ts], ["timestamp"], 2) == -571600512


@pytest.mark.parametrize(
    "types,row,v1,v2,bucket_of_8",
    [  # HIVE_JVM: getBucketHashCode / the v2 fold, getBucketNumber(hash, 8)
        (["int", "string"], [1, "abc"], 96385, 1415768340, (1, 4)),
        (["int", "string"], [None, "abc"], 96354, -885266671, (2, 1)),
        (["int", "string"], [42, None], 1302, 633113285, (6, 5)),
    ],
)
def test_multi_column_rows_match_hive_jvm(types, row, v1, v2, bucket_of_8):
    assert bucket_hash_code(row, types, 1) == v1
    assert bucket_hash_code(row, types, 2) == v2
    assert (hive_bucket(row, types, 8, 1), hive_bucket(row, types, 8, 2)) == bucket_of_8


# ---------------------------------------------------------------------------------------------
# Bucket hash: rules and quirks
# ---------------------------------------------------------------------------------------------


def test_fold_over_columns_is_31h_plus_field():
    for version in (1, 2):
        a = bucket_hash_code([7], ["int"], version)
        b = bucket_hash_code(["x"], ["string"], version)
        c = bucket_hash_code([dt.date(2001, 2, 3)], ["date"], version)
        expected = (31 * (31 * a + b) + c) & 0xFFFFFFFF
        expected -= 2**32 if expected >= 2**31 else 0
        got = bucket_hash_code([7, "x", dt.date(2001, 2, 3)], ["int", "string", "date"], version)
        assert got == expected


def test_nulls_hash_to_zero_in_every_type():
    types = [
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "boolean",
        "float",
        "double",
        "string",
        "varchar(4)",
        "char(4)",
        "date",
        "timestamp",
        "decimal(5,2)",
        "binary",
    ]
    for version in (1, 2):
        assert bucket_hash_code([None] * len(types), types, version) == 0
        assert bucket_hash_code([None, 1], ["string", "int"], version) == bucket_hash_code(
            [1], ["int"], version
        )
    assert bucket_hash_code([], []) == 0


def test_version_1_int_is_identity_and_bigint_folds():
    assert bucket_hash_code([12345], ["int"], 1) == 12345
    assert bucket_hash_code([-7], ["int"], 1) == -7
    assert bucket_hash_code([2**32 + 5], ["bigint"], 1) == 4  # (int)(v ^ v>>>32) = 5 ^ 1
    assert bucket_hash_code([-(2**31)], ["int"], 1) == -(2**31)


def test_version_1_string_hash_uses_signed_utf8_bytes():
    # ASCII: like java.lang.String.hashCode; 'é' is C3 A9 -> 31*(-61) + (-87)
    assert bucket_hash_code(["abc"], ["string"], 1) == 96354
    assert bucket_hash_code(["é"], ["string"], 1) == 31 * -61 - 87


def test_char_ignores_trailing_spaces_and_truncates():
    for version in (1, 2):
        assert bucket_hash_code(["ab   "], ["char(5)"], version) == bucket_hash_code(
            ["ab"], ["char(5)"], version
        )
        assert bucket_hash_code(["ab  c"], ["char(3)"], version) == bucket_hash_code(
            ["ab"], ["char(3)"], version
        )
        # leading spaces count
        assert bucket_hash_code([" ab"], ["char(5)"], version) != bucket_hash_code(
            ["ab"], ["char(5)"], version
        )
    # v2 char/varchar hash the same bytes as string
    assert bucket_hash_code(["ab  "], ["char(9)"]) == bucket_hash_code(["ab"], ["string"])
    assert bucket_hash_code(["abcdef"], ["varchar(3)"]) == bucket_hash_code(["abc"], ["string"])


def test_varchar_truncates_by_code_points():
    assert bucket_hash_code(["😀😀x"], ["varchar(2)"]) == bucket_hash_code(["😀😀"], ["string"])
    assert bucket_hash_code(["abc  "], ["varchar(10)"]) != bucket_hash_code(
        ["abc"], ["varchar(10)"]
    )


def test_tinyint_and_boolean_are_not_hashed_in_v2():
    for v in (-128, -1, 0, 1, 127):
        assert bucket_hash_code([v], ["tinyint"], 2) == v
    assert bucket_hash_code([True], ["boolean"], 2) == 1
    assert bucket_hash_code([0], ["boolean"], 2) == 0


def test_float_v2_quirk_hashes_the_bit_pattern_as_a_float_value():
    bits = struct.unpack(">i", struct.pack(">f", 1.5))[0]
    assert bucket_hash_code([1.5], ["float"], 2) == murmur3_32(struct.pack(">f", float(bits)))
    assert bucket_hash_code([1.5], ["float"], 2) != murmur3_32(struct.pack(">f", 1.5))
    dbits = struct.unpack(">q", struct.pack(">d", 1.5))[0]
    assert bucket_hash_code([1.5], ["double"], 2) == murmur3_32(struct.pack(">d", float(dbits)))


def test_float_values_are_narrowed_to_binary32():
    # 0.1 is not a float32: it is narrowed first; 1e39 overflows to +inf like Java's (float)
    f32 = struct.unpack(">f", struct.pack(">f", 0.1))[0]
    for version in (1, 2):
        assert bucket_hash_code([0.1], ["float"], version) == bucket_hash_code(
            [f32], ["float"], version
        )
        assert bucket_hash_code([1e39], ["float"], version) == bucket_hash_code(
            [math.inf], ["float"], version
        )
        assert bucket_hash_code([3], ["float"], version) == bucket_hash_code(
            [3.0], ["float"], version
        )
    nan2 = struct.unpack(">d", bytes.fromhex("7ff8000000000001"))[0]
    assert bucket_hash_code([nan2], ["double"], 1) == bucket_hash_code([math.nan], ["double"], 1)


def test_date_inputs():
    d = dt.date(2024, 2, 29)
    for version in (1, 2):
        same = {
            bucket_hash_code([x], ["date"], version)
            for x in (d, dt.datetime(2024, 2, 29, 13), 19782)
        }
        assert len(same) == 1


def test_timestamp_inputs():
    for version in (1, 2):
        assert bucket_hash_code([dt.date(2020, 1, 2)], ["timestamp"], version) == bucket_hash_code(
            [dt.datetime(2020, 1, 2)], ["timestamp"], version
        )
        utc = dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
        with pytest.raises(ValueError, match="naive"):
            bucket_hash_code([utc], ["timestamp"], version)
    # v1 = fold of (seconds << 30 | nanos): 1 s after the epoch with 5 ns
    ts = _NanoDatetime(1970, 1, 1, 0, 0, 1)
    ts.nanosecond = 5
    assert bucket_hash_code([ts], ["timestamp"], 1) == (1 << 30 | 5) ^ 0


def test_decimal_normalisation():
    for version in (1, 2):
        h = bucket_hash_code([Decimal("1.5")], ["decimal(10,4)"], version)
        for same in (Decimal("1.50"), Decimal("1.5000"), "1.5", 1.5, Decimal("15E-1")):
            assert bucket_hash_code([same], ["decimal(10,4)"], version) == h
        # HALF_UP to the column scale
        assert bucket_hash_code([Decimal("2.345")], ["decimal(5,2)"], version) == bucket_hash_code(
            [Decimal("2.35")], ["decimal(5,2)"], version
        )
        assert bucket_hash_code([Decimal("-2.345")], ["decimal(5,2)"], version) == bucket_hash_code(
            [Decimal("-2.35")], ["decimal(5,2)"], version
        )
        assert bucket_hash_code([100], ["decimal"], version) == bucket_hash_code(
            [Decimal("1E+2")], ["decimal(10,0)"], version
        )
        for zero in (Decimal("-0.00"), Decimal("-0.004"), Decimal("1E-100000"), Decimal("0E+50")):
            assert bucket_hash_code([zero], ["decimal(5,2)"], version) == bucket_hash_code(
                [0], ["decimal(5,2)"], version
            )


@pytest.mark.parametrize(
    "value,hive_type",
    [
        (Decimal("1000"), "decimal(5,2)"),
        (Decimal("999.995"), "decimal(5,2)"),
        (10**10, "decimal"),
        (Decimal("1"), "decimal(3,3)"),
        (Decimal("1E+100000"), "decimal(38,0)"),
    ],
)
def test_decimal_overflow_raises(value, hive_type):
    with pytest.raises(ValueError, match="does not fit"):
        bucket_hash_code([value], [hive_type])


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("Infinity"), math.inf, "abc"])
def test_decimal_non_finite_or_garbage(value):
    with pytest.raises(ValueError):
        bucket_hash_code([value], ["decimal(10,2)"])


def test_type_strings_are_case_insensitive_with_parameters():
    assert bucket_hash_code([5], ["INT"]) == bucket_hash_code([5], ["int"])
    assert bucket_hash_code([5], [" Integer "]) == bucket_hash_code([5], ["int"])
    assert bucket_hash_code(["x"], ["VarChar( 10 )"]) == bucket_hash_code(["x"], ["varchar(10)"])
    assert bucket_hash_code([Decimal("1.2")], ["DECIMAL(10, 2)"]) == bucket_hash_code(
        [Decimal("1.2")], ["decimal(10,2)"]
    )


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hive_type",
    [
        "map<string,int>",
        "array<int>",
        "struct<a:int>",
        "timestamp with local time zone",
        "void",
        "interval_day_time",
        "char",
        "varchar",
        "char(0)",
        "char(256)",
        "varchar(65536)",
        "decimal(39,0)",
        "decimal(5,6)",
        "decimal(0)",
        "int(3)",
        "string(5)",
        "",
        "in t",
    ],
)
def test_bad_types(hive_type):
    with pytest.raises(ValueError):
        bucket_hash_code([1], [hive_type])


@pytest.mark.parametrize(
    "value,hive_type",
    [
        (128, "tinyint"),
        (-129, "tinyint"),
        (2**15, "smallint"),
        (2**31, "int"),
        (-(2**31) - 1, "int"),
        (2**63, "bigint"),
    ],
)
def test_integer_out_of_range(value, hive_type):
    with pytest.raises(ValueError, match="out of range"):
        bucket_hash_code([value], [hive_type])


@pytest.mark.parametrize(
    "value,hive_type",
    [
        ("1", "int"),
        (1.0, "bigint"),
        ("x", "boolean"),
        ("1.5", "double"),
        (1, "string"),
        ("abc", "binary"),
        ("2020-01-01", "date"),
        (0, "timestamp"),
        (dt.date(2020, 1, 1), "int"),
        (object(), "decimal(5,2)"),
        (True, "decimal(5,2)"),
    ],
)
def test_wrong_python_type(value, hive_type):
    with pytest.raises(TypeError):
        bucket_hash_code([value], [hive_type])


def test_argument_errors():
    with pytest.raises(ValueError, match="bucketing_version"):
        bucket_hash_code([1], ["int"], bucketing_version=3)
    with pytest.raises(ValueError, match="pair up"):
        bucket_hash_code([1, 2], ["int"])
    with pytest.raises(TypeError, match="sequence"):
        bucket_hash_code([1], "int")
    for n in (0, -1):
        with pytest.raises(ValueError, match="> 0"):
            bucket_number(5, n)
        with pytest.raises(ValueError, match="> 0"):
            hive_bucket([1], ["int"], n)
    with pytest.raises(TypeError):
        bucket_number(5, 2.0)
    with pytest.raises(TypeError):
        bucket_number("5", 2)


def test_bucket_number_masks_the_sign_bit():
    assert bucket_number(-1, 2**31 - 1) == 0  # 0x7fffffff % 0x7fffffff
    assert bucket_number(-(2**31), 7) == 0
    assert bucket_number(-5, 10) == (0x7FFFFFFB % 10)
    assert bucket_number(2**32 - 5, 10) == bucket_number(-5, 10)  # unsigned view of the same int
    assert all(0 <= bucket_number(h, 32) < 32 for h in range(-1000, 1000, 7))


@pytest.mark.parametrize("types", [["bigint"], ["int"], ["bigint", "int"], ["int", "string"]])
@pytest.mark.parametrize("version", [1, 2])
def test_bucket_numbers_vectorised_equal_row_by_row(types, version):
    """``bucket_numbers`` (numpy murmur3 for int/bigint, version 2) gives exactly the buckets of
    ``hive_bucket`` row by row, NULLs, extremes and negative values included, for Arrow arrays
    and for plain lists."""
    import random

    import pyarrow as pa

    from acidflow.format.bucketing_hash import bucket_numbers, hive_bucket

    rng = random.Random(7)
    edge = {
        "bigint": [0, -1, 2**63 - 1, -(2**63), None],
        "int": [0, -1, 2**31 - 1, -(2**31), None],
        "string": ["", "a", "é", None, "xyz"],
    }
    rows = [[edge[t][i] for t in types] for i in range(5)]
    for _ in range(3000):
        rows.append(
            [
                rng.choice([None, rng.randint(-(2**63), 2**63 - 1)])
                if t == "bigint"
                else rng.choice([None, rng.randint(-(2**31), 2**31 - 1)])
                if t == "int"
                else str(rng.random())
                for t in types
            ]
        )
    want = [hive_bucket(r, types, 13, version) for r in rows]
    cols = [list(c) for c in zip(*rows)]
    assert bucket_numbers(cols, types, 13, version) == want
    assert bucket_numbers([pa.array(c) for c in cols], types, 13, version) == want


def test_bucket_numbers_rejects_out_of_range_int():
    from acidflow.format.bucketing_hash import bucket_numbers

    with pytest.raises(ValueError, match="int bucket column"):
        bucket_numbers([[2**40]], ["int"], 4)
