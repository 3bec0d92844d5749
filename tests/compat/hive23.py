"""Hive 2.3's own ACID reader as an independent test oracle.

PySpark ships ``hive-exec-2.3.10-core.jar``. Its ``org.apache.hadoop.hive.ql.io.orc.OrcInputFormat``
in ACID mode lists a table directory with ``AcidUtils.getAcidState``, reads base / delta /
delete_delta bucket files and merges them with ``OrcRawRecordMerger`` (the row-by-row reader).
That is a reader we did not write, so rows it returns are an independent check of the files
acidflow writes.

How it runs: a small Java class (source below) is compiled in the driver JVM with Janino (also
shipped with Spark, so no JDK is needed) and loops ``getSplits`` / ``getRecordReader`` inside the
JVM, rendering the rows as one JSON text (values taken through Hive's own object inspectors and
writables). Python gets that string back and converts it to tuples.

Hive 2.3 knows global transaction ids, not per-table write ids: write ids are passed as its txn
ids (``ValidReadTxnList`` string form ``<hwm>:<minOpenTxn>[:<exception>]*``; Hive 2.3 makes no
difference between open and aborted exceptions except that only open ids lower ``minOpenTxn``,
which decides whether a ``base_N`` may be used).

See ``tests/compat/test_hive23_oracle.py`` for what Hive 2.3 does and does not read correctly.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import json
import os
import re
import threading
import warnings
from typing import Iterable, Sequence

LONG_MAX = 9223372036854775807

#: Hive 2.3 conf keys (names checked in hive-exec / hive-common 2.3.10 class files).
VALID_TXNS_KEY = "hive.txn.valid.txns"  # ValidTxnList.VALID_TXNS_KEY
TRANSACTIONAL_SCAN_KEY = "hive.transactional.table.scan"  # ConfVars.HIVE_TRANSACTIONAL_TABLE_SCAN
OPERATIONAL_PROPERTIES_KEY = "hive.txn.operational.properties"  # HIVE_TXN_OPERATIONAL_PROPERTIES
BUCKET_COUNT_KEY = "bucket_count"  # hive_metastoreConstants.BUCKET_COUNT (OrcInputFormat.Context)

_JAVA_PACKAGE = "acidflow.hive23oracle"
_JAVA_CLASS = _JAVA_PACKAGE + ".Hive23Reader"

# Janino compiles a subset of Java: no lambdas, no generics needed here.
_JAVA_SOURCE = r"""
package acidflow.hive23oracle;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.hive.ql.exec.vector.VectorExtractRow;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatchCtx;
import org.apache.hadoop.hive.ql.io.orc.OrcInputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcStruct;
import org.apache.hadoop.hive.ql.io.orc.VectorizedOrcAcidRowBatchReader;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.typeinfo.PrimitiveTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.StructTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;

public class Hive23Reader {

    private static Path[] toPaths(String dirs) {
        String[] parts = dirs.split("\n");
        Path[] paths = new Path[parts.length];
        for (int i = 0; i < parts.length; i++) {
            paths[i] = new Path(parts[i]);
        }
        return paths;
    }

    private static void appendJsonString(StringBuilder sb, String v) {
        sb.append('"');
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                String hex = Integer.toHexString(c);
                sb.append("\\u");
                for (int k = hex.length(); k < 4; k++) {
                    sb.append('0');
                }
                sb.append(hex);
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    /**
     * One row as a JSON array. Numbers and booleans bare (doubles as Java prints them, NaN and
     * Infinity included); strings, decimals, dates and timestamps as JSON strings holding the
     * Hive writable's toString().
     */
    private static void appendRow(StringBuilder sb, Object row, StructObjectInspector oi, List fields) {
        sb.append('[');
        for (int i = 0; i < fields.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            StructField field = (StructField) fields.get(i);
            Object value = oi.getStructFieldData(row, field);
            PrimitiveObjectInspector poi = (PrimitiveObjectInspector) field.getFieldObjectInspector();
            Object java = value == null ? null : poi.getPrimitiveJavaObject(value);
            if (java == null) {
                sb.append("null");
                continue;
            }
            switch (poi.getPrimitiveCategory()) {
                case BOOLEAN:
                case BYTE:
                case SHORT:
                case INT:
                case LONG:
                case FLOAT:
                case DOUBLE:
                    sb.append(java.toString());
                    break;
                case STRING:
                case VARCHAR:
                case CHAR:
                case DECIMAL:
                    appendJsonString(sb, java.toString());
                    break;
                default:
                    // DATE, TIMESTAMP: the writable's toString (Hive's wall-clock text)
                    appendJsonString(sb, poi.getPrimitiveWritableObject(value).toString());
            }
        }
        sb.append(']');
    }

    /** Splits as Hive computes them, one toString() per line (diagnostics). */
    public String describeSplits(JobConf conf, String dirs, int numSplits) throws Exception {
        FileInputFormat.setInputPaths(conf, toPaths(dirs));
        InputSplit[] splits = new OrcInputFormat().getSplits(conf, numSplits);
        StringBuilder sb = new StringBuilder();
        for (int s = 0; s < splits.length; s++) {
            sb.append(splits[s].toString()).append('\n');
        }
        return sb.toString();
    }

    /**
     * All visible rows through OrcInputFormat.getRecordReader (non-vectorized: the row-by-row
     * OrcRawRecordMerger), as a JSON array of row arrays.
     */
    public String read(JobConf conf, String dirs, String structType, int numSplits) throws Exception {
        FileInputFormat.setInputPaths(conf, toPaths(dirs));
        StructObjectInspector oi = (StructObjectInspector) OrcStruct.createObjectInspector(
            TypeInfoUtils.getTypeInfoFromTypeString(structType));
        List fields = oi.getAllStructFieldRefs();
        OrcInputFormat format = new OrcInputFormat();
        InputSplit[] splits = format.getSplits(conf, numSplits);
        StringBuilder sb = new StringBuilder();
        sb.append('[');
        boolean first = true;
        for (int s = 0; s < splits.length; s++) {
            RecordReader reader = format.getRecordReader(splits[s], conf, Reporter.NULL);
            try {
                Object key = reader.createKey();
                Object value = reader.createValue();
                while (reader.next(key, value)) {
                    if (!first) {
                        sb.append(",\n");
                    }
                    first = false;
                    appendRow(sb, value, oi, fields);
                }
            } finally {
                reader.close();
            }
        }
        return sb.append(']').toString();
    }

    /**
     * Same through Hive 2.3's vectorized ACID reader, VectorizedOrcAcidRowBatchReader (what Hive
     * runs for split-update tables when a query is vectorized). getRecordReader only picks it with
     * a vectorized MapWork plan, whose cache needs LLAP classes that Spark does not ship, so the
     * reader is constructed directly; with vectorization off in the conf it takes no plan.
     */
    public String readVectorized(JobConf conf, String dirs, String structType, int numSplits)
            throws Exception {
        FileInputFormat.setInputPaths(conf, toPaths(dirs));
        StructTypeInfo struct = (StructTypeInfo) TypeInfoUtils.getTypeInfoFromTypeString(structType);
        List names = struct.getAllStructFieldNames();
        List types = struct.getAllStructFieldTypeInfos();
        int n = names.size();
        String[] nameArr = new String[n];
        TypeInfo[] typeArr = new TypeInfo[n];
        int[] dataColumnNums = new int[n];
        List fieldOis = new ArrayList();
        for (int i = 0; i < n; i++) {
            nameArr[i] = (String) names.get(i);
            typeArr[i] = (TypeInfo) types.get(i);
            dataColumnNums[i] = i;
            fieldOis.add(PrimitiveObjectInspectorFactory.getPrimitiveWritableObjectInspector(
                (PrimitiveTypeInfo) typeArr[i]));
        }
        VectorizedRowBatchCtx ctx =
            new VectorizedRowBatchCtx(nameArr, typeArr, dataColumnNums, 0, new String[0]);
        StructObjectInspector rowOi =
            ObjectInspectorFactory.getStandardStructObjectInspector(names, fieldOis);
        List fields = rowOi.getAllStructFieldRefs();
        VectorExtractRow extract = new VectorExtractRow();
        extract.init(typeArr, dataColumnNums);
        OrcInputFormat format = new OrcInputFormat();
        InputSplit[] splits = format.getSplits(conf, numSplits);
        StringBuilder sb = new StringBuilder();
        sb.append('[');
        boolean first = true;
        Object[] row = new Object[n];
        for (int s = 0; s < splits.length; s++) {
            if (!VectorizedOrcAcidRowBatchReader
                    .canCreateVectorizedAcidRowBatchReaderOnSplit(conf, splits[s])) {
                throw new java.io.IOException("no vectorized ACID reader for split " + splits[s]);
            }
            VectorizedOrcAcidRowBatchReader reader =
                new VectorizedOrcAcidRowBatchReader(splits[s], conf, Reporter.NULL);
            try {
                NullWritable key = NullWritable.get();
                VectorizedRowBatch batch = ctx.createVectorizedRowBatch();
                while (reader.next(key, batch)) {
                    for (int j = 0; j < batch.size; j++) {
                        int r = batch.selectedInUse ? batch.selected[j] : j;
                        extract.extractRow(batch, r, row);
                        if (!first) {
                            sb.append(",\n");
                        }
                        first = false;
                        appendRow(sb, Arrays.asList(row), rowOi, fields);
                    }
                }
            } finally {
                reader.close();
            }
        }
        return sb.append(']').toString();
    }
}
"""


class Hive23ReadError(RuntimeError):
    """Hive 2.3's reader threw. The message is the Java exception with causes and stack.

    Raised instead of whatever py4j / PySpark make of the Java exception: PySpark converts some
    Java exceptions (IllegalArgumentException, ArrayIndexOutOfBoundsException, ...) to its own
    ``pyspark.errors`` classes and leaves others as ``Py4JJavaError``.
    """


def _call(spark, method, *args):
    try:
        return method(*args)
    except Exception as exc:  # py4j.protocol.Py4JJavaError or pyspark.errors CapturedException
        throwable = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
        if throwable is None:
            raise
        try:  # class, message, "Caused by" chain and stack
            text = spark._jvm.org.apache.spark.util.Utils.exceptionString(throwable)
        except Exception:  # pragma: no cover - keep the original error if that fails
            text = f"{type(exc).__name__}: {exc}"
        raise Hive23ReadError(text) from exc


_lock = threading.Lock()
_cached: tuple[object, object] | None = None  # (py4j gateway, helper instance)


def _helper(spark):
    """The Java helper instance for this JVM, compiled with Janino on first use (about 1 s)."""
    global _cached
    gateway = spark.sparkContext._gateway
    with _lock:
        if _cached is None or _cached[0] is not gateway:
            jvm = spark._jvm
            compiler = jvm.org.codehaus.janino.SimpleCompiler()
            compiler.setParentClassLoader(
                jvm.java.lang.Thread.currentThread().getContextClassLoader()
            )
            compiler.cook(_JAVA_SOURCE)
            cls = compiler.getClassLoader().loadClass(_JAVA_CLASS)
            no_types = gateway.new_array(jvm.java.lang.Class, 0)
            no_args = gateway.new_array(jvm.java.lang.Object, 0)
            _cached = (gateway, cls.getDeclaredConstructor(no_types).newInstance(no_args))
        return _cached[1]


def valid_txn_list(
    high_watermark: int, open_write_ids: Iterable[int] = (), aborted_write_ids: Iterable[int] = ()
) -> str:
    """Hive 2.3 ``ValidReadTxnList`` string for the given write ids used as txn ids.

    Format (``ValidReadTxnList.writeToString`` in hive-common 2.3.10):
    ``<highWatermark>:<minOpenTxn>`` followed by ``:<id>`` for every exception (open or aborted,
    ascending), or a single trailing ``:`` when there is none. ``minOpenTxn`` is the smallest open
    id, ``Long.MAX_VALUE`` when nothing is open. Ids above the high watermark are invalid anyway and
    are left out.
    """
    hwm = int(high_watermark)
    open_ids = sorted({int(i) for i in open_write_ids if int(i) <= hwm})
    aborted = {int(i) for i in aborted_write_ids if int(i) <= hwm}
    exceptions = sorted(set(open_ids) | aborted)
    min_open = open_ids[0] if open_ids else LONG_MAX
    if exceptions:
        return f"{hwm}:{min_open}:" + ":".join(str(i) for i in exceptions)
    return f"{hwm}:{min_open}:"


def _normalise_type(hive_type: str) -> str:
    return re.sub(r"\s+", "", hive_type.strip().lower())


def _column_name(name: str) -> str:
    # The metastore keeps column names in lower case, so Hive's read schema is lower case; ORC
    # then matches the file's row-struct fields by exact name (see the test module).
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"unsupported column name {name!r}")
    return name.lower()


def build_jobconf(
    spark,
    columns: Sequence[tuple[str, str]],
    *,
    high_watermark: int,
    open_write_ids: Iterable[int] = (),
    aborted_write_ids: Iterable[int] = (),
    num_buckets: int = 0,
    conf_overrides: dict[str, str] | None = None,
):
    """A ``JobConf`` (py4j object) set up for a Hive 2.3 ACID read of a table with ``columns``.

    Starts from Spark's Hadoop configuration. Keys set: ``hive.transactional.table.scan=true``,
    ``transactional=true``, ``transactional_properties=default``,
    ``hive.txn.operational.properties=1`` (split-update), ``hive.txn.valid.txns`` (see
    :func:`valid_txn_list`), ``columns`` / ``columns.types`` and ``schema.evolution.columns`` /
    ``schema.evolution.columns.types`` (the table's data columns; Hive 2.3 needs the latter to
    build its read schema), ``bucket_count`` when ``num_buckets > 0``, and vectorization off.
    ``conf_overrides`` are applied last; a ``None`` value unsets the key.

    Measured on the Trino nation fixture (see test_jobconf_keys_that_matter): without
    ``hive.txn.operational.properties=1`` delete deltas are silently ignored; without
    ``transactional`` / ``transactional_properties`` the read silently returns no rows; without
    ``hive.transactional.table.scan`` the event structs are read raw (ClassCastException);
    without ``schema.evolution.columns(.types)`` Hive fails with error 30020 (``columns`` /
    ``columns.types`` alone are not enough). ``hive.txn.valid.txns`` absent = everything valid.
    """
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.mapred.JobConf(spark._jsc.hadoopConfiguration())
    names = ",".join(_column_name(name) for name, _ in columns)
    types = ":".join(_normalise_type(t) for _, t in columns)
    settings = {
        TRANSACTIONAL_SCAN_KEY: "true",
        "transactional": "true",
        "transactional_properties": "default",
        OPERATIONAL_PROPERTIES_KEY: "1",
        VALID_TXNS_KEY: valid_txn_list(high_watermark, open_write_ids, aborted_write_ids),
        "columns": names,
        "columns.types": types,
        "schema.evolution.columns": names,
        "schema.evolution.columns.types": types,
        "hive.vectorized.execution.enabled": "false",
        # file ids exist only on HDFS; asking for them on a local fs logs a spurious
        # "ERROR AcidUtils: Failed to get files with ID" on every read
        "hive.orc.splits.include.fileid": "false",
    }
    if num_buckets and num_buckets > 0:
        settings[BUCKET_COUNT_KEY] = str(int(num_buckets))
    settings.update(conf_overrides or {})
    for key, value in settings.items():
        if value is None:
            conf.unset(key)
        else:
            conf.set(key, str(value))
    return conf


def _input_dirs(table_dir: str, partition_dirs: Sequence[str] | None) -> list[str]:
    base = os.path.abspath(os.fspath(table_dir))
    if partition_dirs is None:
        dirs = [base]
    else:
        dirs = [os.path.abspath(os.path.join(base, os.fspath(p))) for p in partition_dirs]
    for d in dirs:
        if "\n" in d:
            raise ValueError(f"newline in path {d!r}")
        if not os.path.isdir(d):
            raise FileNotFoundError(d)
    return dirs


def _converter(hive_type: str):
    """Python conversion for one column's JSON value (None: the JSON value is already right)."""
    t = _normalise_type(hive_type)
    if (
        t in ("tinyint", "smallint", "int", "bigint", "boolean", "string")
        or t.startswith("varchar")
        or t.startswith("char")
    ):
        return None
    if t in ("double", "float"):
        return float  # Java always prints a '.' or 'E', so this only guards
    if t.startswith("decimal"):
        m = re.fullmatch(r"decimal(?:\((\d+)(?:,(\d+))?\))?", t)
        if not m:
            raise ValueError(f"bad decimal type {hive_type!r}")
        scale = int(m.group(2)) if m.group(2) else 0  # "decimal" = (10,0), "decimal(p)" = (p,0)
        quantum = _decimal.Decimal(1).scaleb(-scale)
        context = _decimal.Context(prec=60)  # decimal(38,s) needs more than the default 28 digits
        return lambda v: _decimal.Decimal(v).quantize(quantum, context=context)
    if t == "date":
        return _dt.date.fromisoformat
    if t == "timestamp":
        # TimestampWritable.toString: "yyyy-MM-dd HH:mm:ss[.f...]" wall clock; Python keeps
        # microseconds (nanoseconds beyond are cut).
        return _dt.datetime.fromisoformat
    raise ValueError(f"unsupported column type for the Hive 2.3 oracle: {hive_type!r}")


def _decode(text: str, columns: Sequence[tuple[str, str]]) -> list[tuple]:
    converters = [(i, c) for i, c in enumerate(_converter(t) for _, t in columns) if c is not None]
    rows = json.loads(text)
    if rows and len(rows[0]) != len(columns):
        raise AssertionError(f"Hive returned {len(rows[0])} fields, expected {len(columns)}")
    if not converters:
        return [tuple(r) for r in rows]
    out = []
    for r in rows:
        for i, conv in converters:
            v = r[i]
            if v is not None:
                r[i] = conv(v)
        out.append(tuple(r))
    return out


def read_with_hive23(
    spark,
    table_dir: str,
    columns: list[tuple[str, str]],
    *,
    high_watermark: int,
    open_write_ids=(),
    aborted_write_ids=(),
    partition_dirs: list[str] | None = None,
    num_buckets: int = 0,
    vectorized: bool = False,
    conf_overrides: dict[str, str] | None = None,
    num_splits: int = 2,
) -> list[tuple]:
    """Read a Hive-3-layout full-ACID table with Hive 2.3.10's ``OrcInputFormat`` (ACID mode).

    Args:
        spark: active SparkSession (its JVM runs the read, on the driver).
        table_dir: local table (or partition) directory holding ``base_N`` / ``delta_*`` /
            ``delete_delta_*`` dirs.
        columns: the table's data columns in table order as ``(name, hive_type)``; partition
            columns excluded. Names are lower-cased as the metastore would. Supported types:
            tinyint, smallint, int, bigint, double, float (returned via its decimal text, so not
            bit-exact), boolean, string, varchar, char, decimal(p,s), date, timestamp.
        high_watermark: highest committed write id; larger ids are invisible.
        open_write_ids / aborted_write_ids: write ids <= ``high_watermark`` that are not visible.
            Write ids are handed to Hive 2.3 as its (global) transaction ids.
        partition_dirs: when given, read these dirs (relative to ``table_dir`` or absolute)
            instead of ``table_dir`` itself; rows of all of them are returned together, without
            partition values (call once per partition to attribute rows).
        num_buckets: table bucket count (sets ``bucket_count``); 0 for unbucketed tables.
        vectorized: use Hive 2.3's vectorized ACID readers instead of the row-by-row merger
            (for experiments; see the test module for how it behaves).
        conf_overrides: extra JobConf keys applied last (``None`` unsets a key).
        num_splits: the ``numSplits`` hint passed to ``getSplits``.

    Returns:
        Visible rows as tuples in column order: int, float, bool, str, ``decimal.Decimal``
        (quantized to the column scale), ``datetime.date``, naive ``datetime.datetime``
        (Hive wall clock, microseconds); SQL NULL as ``None``. Order is Hive's split order, not
        meaningful: compare as multisets. Timestamps go through ``java.sql.Timestamp`` in the
        JVM's default zone: exact when that zone is UTC (as here); in a zone with DST, wall
        clocks inside its DST gaps shift (measured: America/New_York turns 2024-03-10 02:30
        into 01:30), so a warning is issued then.

    Raises:
        Hive23ReadError: Hive's reader threw; the message carries the Java exception.
    """
    dirs = _input_dirs(table_dir, partition_dirs)
    if any(_normalise_type(t) == "timestamp" for _, t in columns):
        zone = spark._jvm.java.util.TimeZone.getDefault()
        if zone.useDaylightTime():
            warnings.warn(
                f"JVM default time zone {zone.getID()} has DST: Hive 2.3 shifts "
                "timestamps that fall into its DST gaps",
                stacklevel=2,
            )
    conf = build_jobconf(
        spark,
        columns,
        high_watermark=high_watermark,
        open_write_ids=open_write_ids,
        aborted_write_ids=aborted_write_ids,
        num_buckets=num_buckets,
        conf_overrides=conf_overrides,
    )
    struct = (
        "struct<" + ",".join(f"{_column_name(n)}:{_normalise_type(t)}" for n, t in columns) + ">"
    )
    helper = _helper(spark)
    method = helper.readVectorized if vectorized else helper.read
    text = _call(spark, method, conf, "\n".join(dirs), struct, int(num_splits))
    return _decode(text, columns)


def describe_hive23_splits(
    spark,
    table_dir: str,
    columns: list[tuple[str, str]],
    *,
    high_watermark: int,
    partition_dirs: list[str] | None = None,
    num_buckets: int = 0,
    conf_overrides: dict[str, str] | None = None,
    num_splits: int = 2,
) -> list[str]:
    """``toString()`` of every split Hive 2.3 computes for the read (for diagnostics)."""
    dirs = _input_dirs(table_dir, partition_dirs)
    conf = build_jobconf(
        spark,
        columns,
        high_watermark=high_watermark,
        num_buckets=num_buckets,
        conf_overrides=conf_overrides,
    )
    text = _call(spark, _helper(spark).describeSplits, conf, "\n".join(dirs), int(num_splits))
    return [line for line in text.splitlines() if line]
