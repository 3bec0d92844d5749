"""``acidflow.format.bucketing_hash`` against Hive's own Java classes, run in the Spark JVM
through py4j.

PySpark ships Hive 2.3.10 (``hive-serde``, ``hive-exec-core``) and ``hive-storage-api-2.8.1``.
They give us, as independent references:

* ``ObjectInspectorUtils.hashCode`` / ``getBucketHashCode`` / ``getBucketNumber`` -- in Hive 2.3
  these are exactly Hive 3's *bucketing_version=1* functions (``hashCode`` /
  ``getBucketHashCodeOld``), run on Hive's writables (``IntWritable``, ``TimestampWritable``,
  ``HiveDecimalWritable``, ...).
* ``org.apache.hive.common.util.Murmur3`` -- the hash of *bucketing_version=2*.

Hive 2.3 has no ``hashCodeMurmur`` (the v2 field hash, Hive 3.0+). The v2 reference is therefore a
small Java class compiled in the test JVM that performs, per Hive type, the steps of Hive 3's
``ObjectInspectorUtils.hashCodeMurmur`` on Hive's own writables: ``ByteBuffer.putInt`` /
``putFloat(Float.floatToIntBits(..))`` / ..., ``Text`` bytes, ``HiveCharWritable
.getStrippedValue()``, ``TimestampWritable.getBytes()``, ``HiveDecimalWritable
.getInternalStorage()``, then ``Murmur3.hash32``. Every serialisation is done by the JVM; the
Python side only chooses the inputs. Values travel as text (decimal integers, IEEE bit patterns
in hex, ISO dates, base64) and are parsed by Java, so Python's conversions (date to epoch day,
double to float rounding, decimal rounding, UTF-8, ...) are checked too.

Known difference Hive 2.3 vs 3 that the oracle avoids: Hive 2.3 turns date/timestamp *strings*
into values through ``java.sql`` classes in the JVM's zone and the Julian calendar; Hive 3 uses
``java.time`` (UTC wall clock, proleptic Gregorian). The oracle parses dates and timestamps with
``java.time`` and builds ``DateWritable(int days)`` / ``TimestampWritable(Timestamp.from(instant))``,
i.e. the Hive 3 meaning.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import os
import random
import struct
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from acidflow.format.bucketing_hash import (
    bucket_hash_code,
    bucket_number,
    hive_bucket,
    murmur3_32,
)

pytestmark = pytest.mark.spark

ORACLE_CLASS = "AcidflowHiveBucketOracle"
# Jars (in pyspark/jars) the oracle compiles against.
ORACLE_JARS = [
    "hive-serde-*.jar",
    "hive-common-*.jar",
    "hive-storage-api-*.jar",
    "hadoop-client-api-*.jar",
]

# Java reference. Written for this test; it only strings together Hive 2.3 / storage-api calls.
ORACLE_SOURCE = r"""
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import org.apache.hadoop.hive.common.type.HiveChar;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.common.type.HiveVarchar;
import org.apache.hadoop.hive.serde2.io.ByteWritable;
import org.apache.hadoop.hive.serde2.io.DateWritable;
import org.apache.hadoop.hive.serde2.io.DoubleWritable;
import org.apache.hadoop.hive.serde2.io.HiveCharWritable;
import org.apache.hadoop.hive.serde2.io.HiveDecimalWritable;
import org.apache.hadoop.hive.serde2.io.HiveVarcharWritable;
import org.apache.hadoop.hive.serde2.io.ShortWritable;
import org.apache.hadoop.hive.serde2.io.TimestampWritable;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorUtils;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.*;
import org.apache.hadoop.hive.serde2.typeinfo.CharTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.DecimalTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.PrimitiveTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.hive.serde2.typeinfo.VarcharTypeInfo;
import org.apache.hadoop.io.BooleanWritable;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.FloatWritable;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hive.common.util.Murmur3;

public class AcidflowHiveBucketOracle {
  /** Marker for "Hive would store NULL" (decimal overflow). */
  public static final String OVERFLOW = "N";
  /** Lists travel as one string (py4j would make one call per list element). */
  public static final String SEP = "\uE000";
  public static final String NULL = "\uE001";
  public static final String CELL = "\uE002";

  public static List<String> unpack(String packed, String sep) {
    List<String> out = new ArrayList<>();
    for (String item : packed.split(sep, -1)) {
      out.add(NULL.equals(item) ? null : item);
    }
    return out;
  }

  public static PrimitiveTypeInfo typeInfo(String type) {
    return (PrimitiveTypeInfo) TypeInfoUtils.getTypeInfoFromTypeString(type);
  }

  public static PrimitiveObjectInspector inspector(String type) {
    return PrimitiveObjectInspectorFactory.getPrimitiveWritableObjectInspector(typeInfo(type));
  }

  /** The Hive writable for one textual value (null text = SQL NULL). */
  public static Object writable(String type, String text) {
    if (text == null) {
      return null;
    }
    PrimitiveTypeInfo ti = typeInfo(type);
    switch (ti.getPrimitiveCategory()) {
      case BOOLEAN: return new BooleanWritable(Boolean.parseBoolean(text));
      case BYTE: return new ByteWritable(Byte.parseByte(text));
      case SHORT: return new ShortWritable(Short.parseShort(text));
      case INT: return new IntWritable(Integer.parseInt(text));
      case LONG: return new LongWritable(Long.parseLong(text));
      case FLOAT:
        if (text.startsWith("d:")) {  // a double narrowed by a Java (float) cast
          return new FloatWritable((float) Double.longBitsToDouble(Long.parseUnsignedLong(text.substring(2), 16)));
        }
        return new FloatWritable(Float.intBitsToFloat(Integer.parseUnsignedInt(text, 16)));
      case DOUBLE: return new DoubleWritable(Double.longBitsToDouble(Long.parseUnsignedLong(text, 16)));
      case STRING: return new Text(text);
      case VARCHAR:
        return new HiveVarcharWritable(new HiveVarchar(text, ((VarcharTypeInfo) ti).getLength()));
      case CHAR:
        return new HiveCharWritable(new HiveChar(text, ((CharTypeInfo) ti).getLength()));
      case BINARY: return new BytesWritable(Base64.getDecoder().decode(text));
      case DATE: return new DateWritable((int) LocalDate.parse(text).toEpochDay());
      case TIMESTAMP:
        return new TimestampWritable(Timestamp.from(LocalDateTime.parse(text).toInstant(ZoneOffset.UTC)));
      case DECIMAL: {
        DecimalTypeInfo dti = (DecimalTypeInfo) ti;
        HiveDecimal dec = HiveDecimal.enforcePrecisionScale(
            HiveDecimal.create(new BigDecimal(text)), dti.precision(), dti.scale());
        return dec == null ? null : new HiveDecimalWritable(dec);
      }
      default:
        throw new IllegalArgumentException("oracle does not handle " + type);
    }
  }

  /** Hive 3 ObjectInspectorUtils.hashCodeMurmur, step by step, for primitive writables. */
  public static int murmurField(Object o, PrimitiveObjectInspector poi, ByteBuffer buf) {
    if (o == null) {
      return 0;
    }
    buf.clear();
    switch (poi.getPrimitiveCategory()) {
      case BOOLEAN: return ((BooleanObjectInspector) poi).get(o) ? 1 : 0;
      case BYTE: return ((ByteObjectInspector) poi).get(o);
      case SHORT:
        buf.putShort(((ShortObjectInspector) poi).get(o));
        return Murmur3.hash32(buf.array(), 2);
      case INT:
        buf.putInt(((IntObjectInspector) poi).get(o));
        return Murmur3.hash32(buf.array(), 4);
      case LONG:
        buf.putLong(((LongObjectInspector) poi).get(o));
        return Murmur3.hash32(buf.array(), 8);
      case FLOAT: {
        int bits = Float.floatToIntBits(((FloatObjectInspector) poi).get(o));
        buf.putFloat(bits);  // int widened to float, as in Hive's source
        return Murmur3.hash32(buf.array(), 4);
      }
      case DOUBLE: {
        long bits = Double.doubleToLongBits(((DoubleObjectInspector) poi).get(o));
        buf.putDouble(bits);  // long widened to double, as in Hive's source
        return Murmur3.hash32(buf.array(), 8);
      }
      case STRING: {
        Text t = ((StringObjectInspector) poi).getPrimitiveWritableObject(o);
        return Murmur3.hash32(t.getBytes(), t.getLength());
      }
      case CHAR: {
        Text t = ((HiveCharObjectInspector) poi).getPrimitiveWritableObject(o).getStrippedValue();
        return Murmur3.hash32(t.getBytes(), t.getLength());
      }
      case VARCHAR: {
        Text t = ((HiveVarcharObjectInspector) poi).getPrimitiveWritableObject(o).getTextValue();
        return Murmur3.hash32(t.getBytes(), t.getLength());
      }
      case BINARY:
        return Murmur3.hash32(((BinaryObjectInspector) poi).getPrimitiveWritableObject(o).getBytes());
      case DATE:
        buf.putInt(((DateObjectInspector) poi).getPrimitiveWritableObject(o).getDays());
        return Murmur3.hash32(buf.array(), 4);
      case TIMESTAMP:
        return Murmur3.hash32(((TimestampObjectInspector) poi).getPrimitiveWritableObject(o).getBytes());
      case DECIMAL:
        return Murmur3.hash32(
            ((HiveDecimalObjectInspector) poi).getPrimitiveWritableObject(o).getInternalStorage());
      default:
        throw new IllegalArgumentException("oracle does not handle " + poi.getTypeName());
    }
  }

  /** Field hash of every text, comma separated; "N" where Hive would store NULL. */
  public String fieldHashes(String type, String packedTexts, int version) {
    List<String> texts = unpack(packedTexts, SEP);
    PrimitiveObjectInspector poi = inspector(type);
    ByteBuffer buf = ByteBuffer.allocate(8);
    StringBuilder out = new StringBuilder();
    for (String text : texts) {
      Object w = writable(type, text);
      if (out.length() > 0) {
        out.append(',');
      }
      if (w == null && text != null) {
        out.append(OVERFLOW);
      } else if (version == 1) {
        out.append(ObjectInspectorUtils.hashCode(w, poi));
      } else {
        out.append(murmurField(w, poi, buf));
      }
    }
    return out.toString();
  }

  /** "hash:bucketFromHash:bucketFromRow" for every row of a multi-column key. */
  public String rowHashes(String packedTypes, String packedRows, int version, int numBuckets) {
    List<String> types = unpack(packedTypes, SEP);
    List<List<String>> rows = new ArrayList<>();
    for (String row : packedRows.split(SEP, -1)) {
      rows.add(unpack(row, CELL));
    }
    int n = types.size();
    ObjectInspector[] ois = new ObjectInspector[n];
    for (int i = 0; i < n; i++) {
      ois[i] = inspector(types.get(i));
    }
    ByteBuffer buf = ByteBuffer.allocate(8);
    StringBuilder out = new StringBuilder();
    for (List<String> row : rows) {
      Object[] fields = new Object[n];
      for (int i = 0; i < n; i++) {
        fields[i] = writable(types.get(i), row.get(i));
      }
      int hash;
      int rowBucket;
      if (version == 1) {
        hash = ObjectInspectorUtils.getBucketHashCode(fields, ois);
        rowBucket = ObjectInspectorUtils.getBucketNumber(fields, ois, numBuckets);
      } else {
        hash = 0;
        for (int i = 0; i < n; i++) {
          hash = 31 * hash + murmurField(fields[i], (PrimitiveObjectInspector) ois[i], buf);
        }
        rowBucket = ObjectInspectorUtils.getBucketNumber(hash, numBuckets);
      }
      if (out.length() > 0) {
        out.append(',');
      }
      out.append(hash).append(':').append(ObjectInspectorUtils.getBucketNumber(hash, numBuckets))
          .append(':').append(rowBucket);
    }
    return out.toString();
  }

  /** ObjectInspectorUtils.getBucketNumber(hash, n) for parallel lists of decimal ints. */
  public String bucketNumbers(String packedHashes, String packedCounts) {
    List<String> hashes = unpack(packedHashes, SEP);
    List<String> counts = unpack(packedCounts, SEP);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < hashes.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      out.append(ObjectInspectorUtils.getBucketNumber(
          Integer.parseInt(hashes.get(i)), Integer.parseInt(counts.get(i))));
    }
    return out.toString();
  }

  /** Murmur3.hash32 of base64-encoded inputs; seed null = the one-argument default-seed form. */
  public String murmur(String packedData, Integer seed) {
    StringBuilder out = new StringBuilder();
    for (String item : unpack(packedData, SEP)) {
      byte[] bytes = Base64.getDecoder().decode(item);
      if (out.length() > 0) {
        out.append(',');
      }
      out.append(seed == null ? Murmur3.hash32(bytes) : Murmur3.hash32(bytes, bytes.length, seed));
    }
    return out.toString();
  }
}
"""


# ---------------------------------------------------------------------------------------------
# Oracle set-up
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def oracle(spark, tmp_path_factory):
    """An instance of the Java oracle class, compiled and loaded inside the Spark JVM."""
    import pyspark

    jvm = spark._jvm
    gateway = spark.sparkContext._gateway
    # javac of the very JDK that runs the Spark JVM, so the class file version matches.
    javac = Path(jvm.java.lang.System.getProperty("java.home")) / "bin" / "javac"
    if not javac.is_file():
        pytest.skip(f"no javac next to the Spark JVM ({javac}): a JRE cannot build the oracle")
    workdir = tmp_path_factory.mktemp("hive_oracle")
    src = workdir / f"{ORACLE_CLASS}.java"
    src.write_text(ORACLE_SOURCE, encoding="utf-8")
    jars = Path(pyspark.__file__).parent / "jars"
    needed = [sorted(jars.glob(p)) for p in ORACLE_JARS]
    if all(needed):  # a short class path compiles in about half the time of jars/*
        classpath = os.pathsep.join(str(found[-1]) for found in needed)
    else:
        classpath = jvm.java.lang.System.getProperty("java.class.path")
    proc = subprocess.run(
        [
            str(javac),
            "-J-XX:TieredStopAtLevel=1",
            "-J-XX:+UseSerialGC",
            "-nowarn",
            "-proc:none",
            "-encoding",
            "UTF-8",
            "-classpath",
            classpath,
            "-d",
            str(workdir),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"javac failed:\n{proc.stdout}\n{proc.stderr}"
    urls = gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(workdir)).toURI().toURL()
    parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    loader = jvm.java.net.URLClassLoader(urls, parent)
    cls = loader.loadClass(ORACLE_CLASS)
    ctor = cls.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0))
    return ctor.newInstance(gateway.new_array(jvm.java.lang.Object, 0))


SEP, NULL, CELL = "\ue000", "\ue001", "\ue002"


def _pack(items, sep=SEP, markers=(SEP, NULL, CELL)) -> str:
    """One string for a list (None -> NULL marker); py4j would spend a call per list element."""
    out = []
    for item in items:
        if item is None:
            out.append(NULL)
        else:
            item = str(item)
            assert not any(m in item for m in markers), "marker inside a test value"
            out.append(item)
    return sep.join(out)


def _java_ints(text: str) -> list:
    return [] if text == "" else [x if x == "N" else int(x) for x in text.split(",")]


def _ours(value, hive_type, version):
    try:
        return bucket_hash_code([value], [hive_type], version)
    except ValueError:
        return "N"


def _compare(oracle, hive_type, values, texts, version, chunk=2000):
    """Field hash of every value, ours vs Hive's; returns the number compared."""
    assert len(values) == len(texts)
    mismatches = []
    for start in range(0, len(values), chunk):
        vals = values[start : start + chunk]
        txts = texts[start : start + chunk]
        theirs = _java_ints(oracle.fieldHashes(hive_type.lower(), _pack(txts), version))
        assert len(theirs) == len(vals)
        for value, text, expected in zip(vals, txts, theirs):
            got = _ours(value, hive_type, version)
            if got != expected:
                mismatches.append((value, text, got, expected))
    assert not mismatches, (
        f"{hive_type} v{version}: {len(mismatches)} of {len(values)} differ from Hive, first: "
        + "; ".join(f"{v!r} (java text {t!r}): ours {g} hive {e}" for v, t, g, e in mismatches[:5])
    )
    return len(values)


# ---------------------------------------------------------------------------------------------
# Value generators: (python values, java texts)
# ---------------------------------------------------------------------------------------------

RNG_SEED = 20240611
INT_RANGES = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}


def gen_ints(rng, hive_type, n=3000):
    lo, hi = INT_RANGES[hive_type]
    vals = [0, -1, 1, lo, hi, lo + 1, hi - 1, 42, -42, 255, 256, 65535, 65536, None]
    vals = [v for v in vals if v is None or lo <= v <= hi]
    while len(vals) < n:
        kind = rng.random()
        if kind < 0.5:
            vals.append(rng.randint(lo, hi))
        elif kind < 0.8:
            vals.append(rng.randint(max(lo, -1000), min(hi, 1000)))
        else:  # around powers of two
            p = rng.randint(0, hi.bit_length())
            vals.append(max(lo, min(hi, rng.choice([1, -1]) * 2**p + rng.randint(-2, 2))))
    return vals, [None if v is None else str(v) for v in vals]


def _f32(bits):
    return struct.unpack(">f", struct.pack(">I", bits))[0]


def gen_floats(rng, n=3000):
    """Float32 values given by their bit patterns, plus doubles Java narrows with (float)."""
    edge_bits = [
        0,
        0x80000000,
        0x3F800000,
        0xBF800000,
        0x7FC00000,
        0x7F800000,
        0xFF800000,
        0x7F7FFFFF,
        0xFF7FFFFF,
        0x00000001,
        0x80000001,
        0x007FFFFF,
        0x00800000,
        0x7F800001,
        0xFFC00001,
        0x7FFFFFFF,
        0x4F000000,
        0xCF000000,
        0x4B7FFFFF,
    ]
    vals, texts = [], []
    for b in edge_bits:
        vals.append(_f32(b))
        texts.append(f"{b:08x}")
    vals.append(None)
    texts.append(None)
    # doubles that are not float32 values: rounding, overflow to infinity, underflow to 0
    doubles = [
        0.1,
        -0.1,
        1e39,
        -1e39,
        3.4028235677973366e38,
        3.4028234663852886e38 * 1.0000001,
        1e-46,
        -1e-46,
        1.401298464324817e-45 * 0.5,
        16777217.0,
        2.0**31 + 1,
        1 / 3,
    ]
    for _ in range(n // 10):
        doubles.append(rng.uniform(-1e6, 1e6))
    for d in doubles:
        vals.append(d)
        texts.append("d:" + struct.pack(">d", d).hex())
    while len(vals) < n:
        if rng.random() < 0.7:
            b = rng.getrandbits(32)
        else:  # small magnitudes: exponents near 0
            b = (rng.getrandbits(1) << 31) | (rng.randint(100, 150) << 23) | rng.getrandbits(23)
        vals.append(_f32(b))
        texts.append(f"{b:08x}")
    return vals, texts


def gen_doubles(rng, n=3000):
    edge = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        math.nan,
        math.inf,
        -math.inf,
        1.7976931348623157e308,
        -1.7976931348623157e308,
        5e-324,
        -5e-324,
        2.2250738585072014e-308,
        0.1,
        1 / 3,
        2.0**63,
        -(2.0**63),
        9007199254740993.0,
        2.0**53 + 2,
    ]
    vals, texts = [], []
    for d in edge:
        vals.append(d)
        texts.append(struct.pack(">d", d).hex())
    for b in (0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001):  # other NaNs
        vals.append(struct.unpack(">d", b.to_bytes(8, "big"))[0])
        texts.append(f"{b:016x}")
    vals.append(None)
    texts.append(None)
    while len(vals) < n:
        r = rng.random()
        if r < 0.6:
            b = rng.getrandbits(64)
        elif r < 0.8:
            b = struct.unpack(">Q", struct.pack(">d", rng.uniform(-1e9, 1e9)))[0]
        else:
            b = struct.unpack(">Q", struct.pack(">d", float(rng.randint(-(2**62), 2**62))))[0]
        vals.append(struct.unpack(">d", b.to_bytes(8, "big"))[0])
        texts.append(f"{b:016x}")
    return vals, texts


ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz0123456789 ",
    "àéîõüçñßÆØÅ€£¥",  # 2-3 byte UTF-8
    "中文字符日本語한국어",  # 3 byte UTF-8
    "😀🎉🚀𝄞𐍈",  # 4 byte UTF-8, surrogate pairs in Java
    "\t\n\x00\x7f\x80\u00ff\u0100\u07ff\u0800\uffff",
]


def gen_strings(rng, n=3000, trailing_spaces=False):
    vals = [
        "",
        " ",
        "a",
        "ab",
        "abc",
        "abcd",
        "abcde",
        "hello world",
        "é",
        "é1",
        "€",
        "😀",
        "a😀",
        "ab€",
        "abcé",
        "  x  ",
        "x   ",
        "   ",
        "\u00ff",
        "\u0080",
        "\U0010ffff",
        "a" * 10_000,
        "é" * 5001,
        "😀" * 2500 + "x",
        None,
    ]
    while len(vals) < n:
        alphabet = "".join(rng.sample(ALPHABETS, rng.randint(1, len(ALPHABETS))))
        length = rng.choice([rng.randint(0, 8), rng.randint(0, 40), rng.randint(0, 300)])
        s = "".join(rng.choice(alphabet) for _ in range(length))
        if trailing_spaces and rng.random() < 0.4:
            s += " " * rng.randint(1, 5)
        vals.append(s)
    return vals, list(vals)


def gen_binary(rng, n=3000):
    vals = [
        b"",
        b"\x00",
        b"\x80",
        b"\xff",
        b"\x7f\x80",
        b"\xff\xfe\xfd",
        b"\x01\x02\x03\x04",
        b"\x01\x02\x03\x04\xff",
        bytes(range(256)),
        bytes(100_000),
        None,
    ]
    while len(vals) < n:
        vals.append(rng.randbytes(rng.choice([rng.randint(0, 8), rng.randint(0, 64)])))
    return vals, [None if v is None else base64.b64encode(v).decode() for v in vals]


DATE_MIN = dt.date(1, 1, 1).toordinal()
DATE_MAX = dt.date(9999, 12, 31).toordinal()


def _iso_date(d):
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def gen_dates(rng, n=3000):
    vals = [
        dt.date(1970, 1, 1),
        dt.date(1969, 12, 31),
        dt.date(1970, 1, 2),
        dt.date(1, 1, 1),
        dt.date(9999, 12, 31),
        dt.date(1582, 10, 4),
        dt.date(1582, 10, 15),
        dt.date(1900, 2, 28),
        dt.date(2000, 2, 29),
        dt.date(2038, 1, 19),
        None,
    ]
    while len(vals) < n:
        if rng.random() < 0.5:
            vals.append(dt.date.fromordinal(rng.randint(DATE_MIN, DATE_MAX)))
        else:
            vals.append(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-40_000, 40_000)))
    return vals, [None if v is None else _iso_date(v) for v in vals]


class NanoDatetime(dt.datetime):
    """A datetime with extra nanoseconds below the microsecond, like ``pandas.Timestamp``."""

    nanosecond = 0


def _nano_dt(base: dt.datetime, nanos: int) -> dt.datetime:
    out = NanoDatetime(
        base.year, base.month, base.day, base.hour, base.minute, base.second, nanos // 1000
    )
    out.nanosecond = nanos % 1000
    return out


def _iso_ts(t: dt.datetime) -> str:
    nanos = t.microsecond * 1000 + getattr(t, "nanosecond", 0)
    return f"{_iso_date(t)}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{nanos:09d}"


def gen_timestamps(rng, n=3000):
    epoch = dt.datetime(1970, 1, 1)
    fixed = [
        (epoch, 0),
        (epoch, 1),
        (epoch, 100_000_000),
        (epoch, 999_999_999),
        (epoch - dt.timedelta(seconds=1), 0),
        (epoch - dt.timedelta(seconds=1), 500_000_000),
        (epoch + dt.timedelta(seconds=2**31 - 1), 0),
        (epoch + dt.timedelta(seconds=2**31), 0),
        (epoch + dt.timedelta(seconds=2**31 - 1), 123_456_789),
        (epoch - dt.timedelta(seconds=2**31), 0),
        (epoch - dt.timedelta(seconds=2**31 + 1), 7),
        (dt.datetime(1, 1, 1), 0),
        (dt.datetime(9999, 12, 31, 23, 59, 59), 999_999_999),
        (dt.datetime(2024, 2, 29, 12, 0, 0), 120_000),
        (dt.datetime(1582, 10, 4, 23, 59), 1000),
    ]
    vals = [_nano_dt(b, ns) for b, ns in fixed]
    vals += [dt.datetime(2020, 5, 17, 8, 30, 1, 250_000), dt.datetime(1960, 1, 1)]
    vals.append(None)
    lo = int((dt.datetime(1, 1, 1) - epoch).total_seconds())
    hi = int((dt.datetime(9999, 12, 31, 23, 59, 59) - epoch).total_seconds())
    while len(vals) < n:
        r = rng.random()
        if r < 0.4:
            secs = rng.randint(lo, hi)
        elif r < 0.8:
            secs = rng.randint(-(2**32), 2**32)
        else:
            secs = rng.randint(-100_000, 100_000)
        base = epoch + dt.timedelta(seconds=secs)
        nanos = rng.choice(
            [
                0,
                rng.randint(0, 999_999_999),
                rng.randint(0, 999) * 1_000_000,
                rng.randint(0, 999_999) * 1000,
            ]
        )
        if nanos % 1000 == 0 and rng.random() < 0.5:
            vals.append(base.replace(microsecond=nanos // 1000))  # a plain datetime
        else:
            vals.append(_nano_dt(base, nanos))
    return vals, [None if v is None else _iso_ts(v) for v in vals]


def gen_decimals(rng, precision, scale, n=1500):
    """Decimals at, below and above the column scale (Hive rounds HALF_UP), some overflowing."""
    int_digits = precision - scale
    vals = [
        Decimal(0),
        Decimal("0.000"),
        Decimal("-0"),
        Decimal(1),
        Decimal(-1),
        Decimal("1.500"),
        Decimal("100"),
        Decimal("1E+1"),
        None,
    ]
    if int_digits > 0:
        vals += [Decimal(10**int_digits - 1), -Decimal(10**int_digits - 1)]
    if scale > 0:
        vals += [
            Decimal(1).scaleb(-scale),
            Decimal("0.5").scaleb(-scale),
            Decimal(5).scaleb(-scale - 1),
        ]
        top = Decimal(10**precision - 1).scaleb(-scale)
        vals += [top, -top]
    while len(vals) < n:
        r = rng.random()
        digits = rng.randint(1, precision)
        unscaled = rng.randint(0, 10**digits - 1) * rng.choice([1, -1])
        if r < 0.5:  # fits exactly
            exp = -rng.randint(0, scale) if scale else 0
            unscaled = unscaled % 10 ** (int_digits - exp) if int_digits - exp > 0 else 0
        elif r < 0.8:  # more fractional digits than the scale: rounding
            exp = -(scale + rng.randint(1, 6))
            unscaled = rng.randint(0, 10 ** (precision + 6) - 1) * rng.choice([1, -1])
            if rng.random() < 0.3:  # exact half
                unscaled = (unscaled // 10) * 10 + 5
        elif r < 0.9:  # trailing zeros
            exp = -scale
            unscaled = (unscaled // 1000) * 1000
        else:  # may overflow the precision
            exp = -scale
            unscaled = rng.randint(10 ** max(precision - 1, 0), 10 ** (precision + 2)) * rng.choice(
                [1, -1]
            )
        vals.append(Decimal(unscaled).scaleb(exp))
    return vals, [None if v is None else str(v) for v in vals]


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------

VERSIONS = [1, 2]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("hive_type", ["tinyint", "smallint", "int", "bigint"])
def test_integer_types(oracle, hive_type, version):
    rng = random.Random(f"{RNG_SEED}-{hive_type}")
    assert _compare(oracle, hive_type, *gen_ints(rng, hive_type), version) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
def test_boolean(oracle, version):
    vals = [True, False, None] * 10
    _compare(
        oracle, "boolean", vals, [None if v is None else str(v).lower() for v in vals], version
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_float(oracle, version):
    rng = random.Random(f"{RNG_SEED}-float")
    assert _compare(oracle, "float", *gen_floats(rng), version) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
def test_double(oracle, version):
    rng = random.Random(f"{RNG_SEED}-double")
    assert _compare(oracle, "double", *gen_doubles(rng), version) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
def test_string(oracle, version):
    rng = random.Random(f"{RNG_SEED}-string")
    assert _compare(oracle, "string", *gen_strings(rng), version, chunk=500) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "hive_type", ["varchar(10)", "char(10)", "varchar(1)", "char(1)", "CHAR(255)"]
)
def test_char_varchar(oracle, hive_type, version):
    rng = random.Random(f"{RNG_SEED}-{hive_type}")
    vals, texts = gen_strings(rng, n=1500, trailing_spaces=True)
    assert _compare(oracle, hive_type, vals, texts, version, chunk=500) >= 1500


@pytest.mark.parametrize("version", VERSIONS)
def test_binary(oracle, version):
    rng = random.Random(f"{RNG_SEED}-binary")
    assert _compare(oracle, "binary", *gen_binary(rng), version, chunk=500) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
def test_date(oracle, version):
    rng = random.Random(f"{RNG_SEED}-date")
    assert _compare(oracle, "date", *gen_dates(rng), version) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
def test_timestamp(oracle, version):
    rng = random.Random(f"{RNG_SEED}-timestamp")
    assert _compare(oracle, "timestamp", *gen_timestamps(rng), version) >= 3000


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "precision,scale", [(10, 0), (10, 2), (18, 6), (38, 0), (38, 18), (38, 38), (5, 5), (1, 0)]
)
def test_decimal(oracle, precision, scale, version):
    rng = random.Random(f"{RNG_SEED}-decimal-{precision}-{scale}")
    vals, texts = gen_decimals(rng, precision, scale)
    hive_type = f"decimal({precision},{scale})"
    _compare(oracle, hive_type, vals, texts, version)
    # the generator must really exercise rounding and overflow
    theirs = _java_ints(oracle.fieldHashes(hive_type, _pack(texts), version))
    if scale < precision:
        assert theirs.count("N") >= 10


def test_decimal_default_type(oracle):
    rng = random.Random(f"{RNG_SEED}-decimal-default")
    vals, texts = gen_decimals(rng, 10, 0, n=300)
    ours = [_ours(v, "decimal", 2) for v in vals]
    assert ours == _java_ints(oracle.fieldHashes("decimal", _pack(texts), 2))


def _small_decimals(rng, n):
    """Values that always fit decimal(12,3) (some need rounding), with their texts."""
    vals = [
        None
        if rng.random() < 0.05
        else Decimal(rng.randint(-(10**9), 10**9)).scaleb(-rng.randint(0, 6))
        for _ in range(n)
    ]
    return vals, [None if v is None else str(v) for v in vals]


@pytest.mark.parametrize("version", VERSIONS)
def test_multi_column_rows(oracle, version):
    """Whole rows through Hive's getBucketHashCode / getBucketNumber (v1) or the v2 fold."""
    rng = random.Random(f"{RNG_SEED}-rows")
    gens = {
        "int": lambda r, k: gen_ints(r, "int", k),
        "bigint": lambda r, k: gen_ints(r, "bigint", k),
        "smallint": lambda r, k: gen_ints(r, "smallint", k),
        "string": lambda r, k: gen_strings(r, k),
        "varchar(5)": lambda r, k: gen_strings(r, k, trailing_spaces=True),
        "char(4)": lambda r, k: gen_strings(r, k, trailing_spaces=True),
        "double": lambda r, k: gen_doubles(r, k),
        "float": lambda r, k: gen_floats(r, k),
        "date": lambda r, k: gen_dates(r, k),
        "timestamp": lambda r, k: gen_timestamps(r, k),
        "decimal(12,3)": lambda r, k: _small_decimals(r, k),
        "boolean": lambda r, k: ([r.choice([True, False, None]) for _ in range(k)], None),
        "binary": lambda r, k: gen_binary(r, k),
        "tinyint": lambda r, k: gen_ints(r, "tinyint", k),
    }
    rows_checked = 0
    for _ in range(12):
        types = rng.sample(sorted(gens), rng.randint(1, 5))
        n_rows = 150
        columns = []
        for t in types:
            vals, texts = gens[t](rng, n_rows)
            if texts is None:
                texts = [None if v is None else str(v).lower() for v in vals]
            pairs = list(zip(vals, texts))[:n_rows]
            rng.shuffle(pairs)
            columns.append(pairs)
        rows = [[col[i] for col in columns] for i in range(n_rows)]
        num_buckets = rng.choice([1, 2, 3, 4, 7, 8, 31, 32, 256, 4096])
        packed_rows = _pack((_pack([t for _, t in row], CELL) for row in rows), markers=(SEP,))
        java = oracle.rowHashes(_pack(types), packed_rows, version, num_buckets)
        for row, cell in zip(rows, java.split(",")):
            hash_j, bucket_j, row_bucket_j = (int(x) for x in cell.split(":"))
            values = [v for v, _ in row]
            assert bucket_hash_code(values, types, version) == hash_j, (types, values)
            assert hive_bucket(values, types, num_buckets, version) == bucket_j == row_bucket_j
            rows_checked += 1
    assert rows_checked == 12 * 150


def test_bucket_number(oracle):
    rng = random.Random(f"{RNG_SEED}-bucket-number")
    hashes = [0, -1, 1, 2**31 - 1, -(2**31), -(2**31) + 1, 1362653161, -249917244]
    counts = [1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 64, 100, 256, 1000, 4096, 2**31 - 1]
    pairs = [(h, c) for h in hashes for c in counts]
    while len(pairs) < 5000:
        pairs.append(
            (
                rng.randint(-(2**31), 2**31 - 1),
                rng.choice([rng.randint(1, 64), rng.randint(1, 2**31 - 1)]),
            )
        )
    theirs = _java_ints(
        oracle.bucketNumbers(_pack(h for h, _ in pairs), _pack(c for _, c in pairs))
    )
    ours = [bucket_number(h, c) for h, c in pairs]
    assert ours == theirs


def test_murmur3_32(oracle):
    """Hive's Murmur3.hash32 on raw bytes: every tail length, high tail bytes, other seeds."""
    rng = random.Random(f"{RNG_SEED}-murmur")
    data = [
        b"",
        b"\x80",
        b"\xff",
        b"\x7f",
        b"\x00\x80",
        b"\x80\x80\x80",
        b"\xff\xff\xff",
        b"abcd\x80",
        b"abcd\xff\xfe",
        b"abcd\xff\xfe\xfd",
        bytes(range(256)),
    ]
    while len(data) < 4000:
        n = rng.choice([rng.randint(0, 12), rng.randint(0, 100)])
        if rng.random() < 0.5:  # force high bytes in the tail
            tail = bytes(rng.randint(0x80, 0xFF) for _ in range(n % 4))
            data.append(rng.randbytes(n - n % 4) + tail)
        else:
            data.append(rng.randbytes(n))
    encoded = [base64.b64encode(d).decode() for d in data]
    assert [murmur3_32(d) for d in data] == _java_ints(oracle.murmur(_pack(encoded), None))
    for seed in (0, 1, 42, -1, 2**31 - 1, -(2**31), rng.randint(-(2**31), 2**31 - 1)):
        assert [murmur3_32(d, seed) for d in data[:1000]] == _java_ints(
            oracle.murmur(_pack(encoded[:1000]), seed)
        )
