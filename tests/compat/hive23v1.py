"""ACID v1 tables (Hive 0.14-2.x layout) written and read by Hive 2.3.10's own classes.

PySpark's JVM ships ``hive-exec-2.3.10-core.jar``. Two small Java classes (source below,
compiled in the driver JVM with Janino as :mod:`tests.compat.hive23` does) drive it:

* **writer**: ``OrcOutputFormat.getRecordUpdater`` -> ``OrcRecordUpdater`` with
  ``AcidOutputFormat.Options`` and table property ``transactional_properties=legacy`` (no
  split-update): ``insert`` writes operation 0 events, ``update`` an operation 1 event carrying
  the full new row under the original ROW__ID, ``delete`` an operation 2 event -- all in the
  delta's own bucket files (``delta_X_Y`` or ``delta_X_Y_S``; no ``delete_delta``), and
  ``writingBase`` a ``base_N``. Hive 2.3 writes neither ``_orc_acid_version`` nor the
  ``hive.acid.version`` footer key, and the ``bucket`` field is the plain bucket id;
* **reader**: ``OrcInputFormat.getRecordReader`` in ACID mode (``OrcRawRecordMerger``) with the
  legacy operational properties, rendering each row with its ROW__ID
  (``AcidInputFormat.AcidRecordReader.getRecordIdentifier``).

The fixture schema is fixed: ``id bigint, name string``.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from tests.compat.hive23 import _call, build_jobconf

COLUMNS = [("id", "bigint"), ("name", "string")]

_JAVA = r"""
package acidflow.hive23v1;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.hive.ql.io.AcidInputFormat;
import org.apache.hadoop.hive.ql.io.AcidOutputFormat;
import org.apache.hadoop.hive.ql.io.RecordIdentifier;
import org.apache.hadoop.hive.ql.io.RecordUpdater;
import org.apache.hadoop.hive.ql.io.orc.OrcInputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcStruct;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;

public class V1 {

    private StructObjectInspector rowOi() {
        List names = new ArrayList();
        names.add("rowid");
        names.add("id");
        names.add("name");
        List ois = new ArrayList();
        ois.add(RecordIdentifier.StructInfo.oi);
        ois.add(PrimitiveObjectInspectorFactory.javaLongObjectInspector);
        ois.add(PrimitiveObjectInspectorFactory.javaStringObjectInspector);
        return ObjectInspectorFactory.getStandardStructObjectInspector(names, ois);
    }

    /** A RecordUpdater for one bucket file of a delta (or base) directory under partDir. */
    public RecordUpdater open(Configuration conf, String partDir, int bucket, long minTxn,
            long maxTxn, int statementId, boolean base) throws Exception {
        Properties props = new Properties();
        props.setProperty("transactional", "true");
        props.setProperty("transactional_properties", "legacy");
        AcidOutputFormat.Options options = new AcidOutputFormat.Options(conf)
            .inspector(rowOi())
            .bucket(bucket)
            .writingBase(base)
            .minimumTransactionId(minTxn)
            .maximumTransactionId(maxTxn)
            .statementId(statementId)
            .recordIdColumn(0)
            .tableProperties(props)
            .reporter(Reporter.NULL)
            .finalDestination(new Path(partDir));
        return new OrcOutputFormat().getRecordUpdater(new Path(partDir), options);
    }

    private List row(long origTxn, int bucket, long rowId, long id, String name) {
        Object[] rid = new Object[3];
        RecordIdentifier.StructInfo.toArray(new RecordIdentifier(origTxn, bucket, rowId), rid);
        List r = new ArrayList();
        r.add(Arrays.asList(rid));
        r.add(Long.valueOf(id));
        r.add(name);
        return r;
    }

    public void insert(RecordUpdater u, long txn, long id, String name) throws Exception {
        u.insert(txn, row(0L, 0, 0L, id, name));
    }

    public void update(RecordUpdater u, long txn, long origTxn, int bucket, long rowId, long id,
            String name) throws Exception {
        u.update(txn, row(origTxn, bucket, rowId, id, name));
    }

    public void delete(RecordUpdater u, long txn, long origTxn, int bucket, long rowId)
            throws Exception {
        u.delete(txn, row(origTxn, bucket, rowId, 0L, null));
    }

    public void close(RecordUpdater u) throws Exception {
        u.close(false);
    }

    /** Rows as a JSON array of [txn, bucket, rowId, id, name]. */
    public String read(JobConf conf, String dir, int numSplits) throws Exception {
        FileInputFormat.setInputPaths(conf, new Path[] {new Path(dir)});
        StructObjectInspector oi = (StructObjectInspector) OrcStruct.createObjectInspector(
            TypeInfoUtils.getTypeInfoFromTypeString("struct<id:bigint,name:string>"));
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
                    RecordIdentifier id =
                        ((AcidInputFormat.AcidRecordReader) reader).getRecordIdentifier();
                    if (!first) {
                        sb.append(",\n");
                    }
                    first = false;
                    sb.append('[').append(id.getTransactionId()).append(',')
                      .append(id.getBucketId()).append(',').append(id.getRowId());
                    for (int i = 0; i < fields.size(); i++) {
                        StructField f = (StructField) fields.get(i);
                        Object v = oi.getStructFieldData(value, f);
                        sb.append(',');
                        if (v == null) {
                            sb.append("null");
                        } else if (i == 0) {
                            sb.append(v.toString());
                        } else {
                            sb.append('"').append(v.toString().replace("\\", "\\\\")
                                .replace("\"", "\\\"")).append('"');
                        }
                    }
                    sb.append(']');
                }
            } finally {
                reader.close();
            }
        }
        return sb.append(']').toString();
    }
}
"""

_lock = threading.Lock()
_cached: tuple[object, object] | None = None


def _helper(spark: Any) -> Any:
    """The Java helper for this JVM, compiled with Janino on first use."""
    global _cached
    gateway = spark.sparkContext._gateway
    with _lock:
        if _cached is None or _cached[0] is not gateway:
            jvm = spark._jvm
            compiler = jvm.org.codehaus.janino.SimpleCompiler()
            compiler.setParentClassLoader(
                jvm.java.lang.Thread.currentThread().getContextClassLoader()
            )
            compiler.cook(_JAVA)
            cls = compiler.getClassLoader().loadClass("acidflow.hive23v1.V1")
            no_types = gateway.new_array(jvm.java.lang.Class, 0)
            no_args = gateway.new_array(jvm.java.lang.Object, 0)
            _cached = (gateway, cls.getDeclaredConstructor(no_types).newInstance(no_args))
        return _cached[1]


@dataclass(frozen=True)
class Event:
    """One event of a v1 bucket file.

    ``op``: ``insert`` (``row`` = (id, name)), ``update`` (``key`` = (originalTransaction,
    bucket, rowId) of the row updated, ``row`` its new values) or ``delete`` (``key``).
    ``txn``: the currentTransaction.
    """

    op: str
    txn: int
    row: tuple[int, str | None] | None = None
    key: tuple[int, int, int] | None = None


def write_bucket(
    spark: Any,
    part_dir: str,
    *,
    bucket: int,
    min_txn: int,
    max_txn: int,
    events: Sequence[Event],
    statement_id: int = -1,
    base: bool = False,
) -> None:
    """Write one bucket file of ``delta_<min>_<max>[_<stmt>]`` (or ``base_<max>``) under
    ``part_dir`` with Hive 2.3's ``OrcRecordUpdater`` (legacy, in-place updates). Inserts get
    Hive's rowIds (0, 1, ... per currentTransaction)."""
    helper = _helper(spark)
    conf = spark._jvm.org.apache.hadoop.mapred.JobConf(spark._jsc.hadoopConfiguration())
    conf.set("hive.txn.operational.properties", "0")
    os.makedirs(part_dir, exist_ok=True)
    u = _call(
        spark,
        helper.open,
        conf,
        os.path.abspath(part_dir),
        bucket,
        min_txn,
        max_txn,
        statement_id,
        base,
    )
    for e in events:
        if e.op == "insert":
            assert e.row is not None
            _call(spark, helper.insert, u, e.txn, e.row[0], e.row[1])
        elif e.op == "update":
            assert e.row is not None and e.key is not None
            _call(spark, helper.update, u, e.txn, *e.key, e.row[0], e.row[1])
        elif e.op == "delete":
            assert e.key is not None
            _call(spark, helper.delete, u, e.txn, *e.key)
        else:
            raise ValueError(e.op)
    _call(spark, helper.close, u)


def read_v1(
    spark: Any,
    part_dir: str,
    *,
    high_watermark: int,
    open_txns: Iterable[int] = (),
    aborted_txns: Iterable[int] = (),
    num_buckets: int = 2,
) -> list[tuple[tuple[int, int, int], tuple[Any, ...]]]:
    """Rows of a v1 table (or partition) directory as Hive 2.3.10's ``OrcRawRecordMerger``
    returns them: ``((originalTransaction, bucket, rowId), (id, name))`` each, sorted."""
    conf = build_jobconf(
        spark,
        COLUMNS,
        high_watermark=high_watermark,
        open_write_ids=open_txns,
        aborted_write_ids=aborted_txns,
        num_buckets=num_buckets,
        conf_overrides={
            "transactional_properties": "legacy",
            "hive.txn.operational.properties": "0",
        },
    )
    text = _call(spark, _helper(spark).read, conf, os.path.abspath(part_dir), 2)
    return sorted(((r[0], r[1], r[2]), (r[3], r[4])) for r in json.loads(text))
