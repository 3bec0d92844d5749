package acidflow.hive31;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.ValidTxnList;
import org.apache.hadoop.hive.common.ValidWriteIdList;
import org.apache.hadoop.hive.ql.io.AcidInputFormat;
import org.apache.hadoop.hive.ql.io.RecordIdentifier;
import org.apache.hadoop.hive.ql.io.orc.OrcInputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcStruct;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

/**
 * Hive 3.1.3's ACID reader as a test oracle: reads table (or partition) directories with
 * {@link OrcInputFormat} in ACID mode -- {@code getSplits} (AcidUtils.getAcidState picks base,
 * deltas and delete deltas under a ValidWriteIdList) then {@code getRecordReader}, which with
 * vectorization off returns OrcInputFormat's row-by-row ACID reader (OrcRawRecordMerger, or the
 * original-file reader with synthetic ROW__IDs) -- and prints every visible row with its
 * ROW__ID taken from {@link AcidInputFormat.AcidRecordReader#getRecordIdentifier()}.
 *
 * <p>Protocol: requests on stdin, one JVM for any number of them. A request is tab-separated
 * lines, ended by a line {@code read} (or {@code splits}, which prints the splits Hive computes,
 * one JSON string a line):
 * <pre>
 * dir      &lt;absolute path&gt;          (repeatable; all are read together)
 * column   &lt;name&gt;  &lt;hive type&gt;      (repeatable, table order, no partition columns)
 * buckets  &lt;n&gt;                      (bucket_count; 0 = unbucketed)
 * writeids &lt;ValidReaderWriteIdList string&gt;   (hive.txn.valid.writeids)
 * txns     &lt;ValidReadTxnList string&gt;         (hive.txn.valid.txns; optional)
 * conf     &lt;key&gt;  &lt;value&gt;           (any JobConf key, applied last)
 * unset    &lt;key&gt;                    (a JobConf key removed after that, for experiments)
 * numsplits &lt;n&gt;                    (getSplits' hint; default 1)
 * vectorized 1                      (VectorizedOrcAcidRowBatchReader, as a vectorized query)
 * </pre>
 * Answer: one line per row, a JSON array {@code [writeId, bucketProperty, rowId, v1, v2, ...]}
 * (numbers and booleans bare; string, char, varchar, decimal, date, timestamp as the Hive
 * value's toString(); binary as base64), then {@code {"end": rows, "ms": millis,
 * "vectorizedSplits": v, "rowSplits": r}}; or
 * {@code {"error": "..."}} when Hive threw or a request line was bad (every request gets exactly
 * one end or error line, so a caller never waits for an answer that does not come). A line
 * {@code quit} (or end of input) exits.
 */
public final class AcidRead {

    private AcidRead() {
    }

    /** One read request as the stdin protocol gives it. */
    static final class Request {
        final List<String> dirs = new ArrayList<>();
        final List<String> names = new ArrayList<>();
        final List<String> types = new ArrayList<>();
        final Map<String, String> conf = new LinkedHashMap<>();
        final List<String> unset = new ArrayList<>();
        int buckets;
        int numSplits = 1;
        boolean vectorized;
        int vectorizedSplits;
        int rowSplits;
        String writeIds;
        String txns;
        /** A bad request line, reported when the request is run (so answers stay in step). */
        String error;
    }

    /** The JobConf of an ACID scan of {@code req}'s table, as Hive's TableScan would set it. */
    static JobConf jobConf(Request req) {
        JobConf conf = new JobConf();
        String names = String.join(",", req.names);
        String types = String.join(":", req.types);
        conf.set("hive.transactional.table.scan", "true");  // ConfVars.HIVE_TRANSACTIONAL_TABLE_SCAN
        conf.set("transactional", "true");
        conf.set("transactional_properties", "default");
        conf.set("hive.txn.operational.properties", "1");  // split-update (Hive 3 default)
        conf.set("columns", names);
        conf.set("columns.types", types);
        conf.set("schema.evolution.columns", names);
        conf.set("schema.evolution.columns.types", types);
        conf.set("hive.io.file.read.all.columns", "true");
        conf.set("hive.vectorized.execution.enabled", "false");
        // file ids exist only on HDFS; asking a local fs for them only logs an error
        conf.set("hive.orc.splits.include.fileid", "false");
        if (req.buckets > 0) {
            conf.set("bucket_count", Integer.toString(req.buckets));  // hive_metastoreConstants.BUCKET_COUNT
        }
        if (req.writeIds != null) {
            conf.set(ValidWriteIdList.VALID_WRITEIDS_KEY, req.writeIds);
        }
        if (req.txns != null) {
            conf.set(ValidTxnList.VALID_TXNS_KEY, req.txns);
        }
        for (Map.Entry<String, String> e : req.conf.entrySet()) {
            conf.set(e.getKey(), e.getValue());
        }
        for (String key : req.unset) {
            conf.unset(key);
        }
        Path[] paths = new Path[req.dirs.size()];
        for (int i = 0; i < paths.length; i++) {
            paths[i] = new Path(req.dirs.get(i));
        }
        FileInputFormat.setInputPaths(conf, paths);
        return conf;
    }

    static void appendValue(StringBuilder sb, Object value, PrimitiveObjectInspector poi) {
        Object java = value == null ? null : poi.getPrimitiveJavaObject(value);
        if (java == null) {
            sb.append("null");
            return;
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
            case BINARY:
                Json.appendString(sb, Base64.getEncoder().encodeToString((byte[]) java));
                break;
            default:
                // STRING, CHAR, VARCHAR, DECIMAL (HiveDecimal), DATE and TIMESTAMP (Hive 3's
                // zone-less common.type.Date / Timestamp: wall-clock text)
                Json.appendString(sb, java.toString());
        }
    }

    /** Read every split of {@code req} and print its rows; returns the row count. With
     * {@code req.vectorized} every split goes through {@link VectorizedRead}, as
     * {@code getRecordReader} does for ACID splits in a vectorized query. */
    static long read(Request req, PrintStream out) throws Exception {
        JobConf conf = jobConf(req);
        StructObjectInspector oi = (StructObjectInspector) OrcStruct.createObjectInspector(
            TypeInfoUtils.getTypeInfoFromTypeString(
                "struct<" + structFields(req) + ">"));
        OrcInputFormat format = new OrcInputFormat();
        InputSplit[] splits = format.getSplits(conf, req.numSplits);
        VectorizedRead vectorized = req.vectorized ? new VectorizedRead(req) : null;
        long rows = 0;
        for (InputSplit split : splits) {
            if (vectorized != null) {
                rows += vectorized.readSplit(conf, split, out);
                req.vectorizedSplits++;
            } else {
                rows += readSplit(format, conf, split, oi, out);
                req.rowSplits++;
            }
        }
        return rows;
    }

    /** One split through OrcInputFormat.getRecordReader's row-by-row ACID reader. */
    @SuppressWarnings({"rawtypes", "unchecked"})
    static long readSplit(OrcInputFormat format, JobConf conf, InputSplit split,
                          StructObjectInspector oi, PrintStream out) throws Exception {
        List<? extends StructField> fields = oi.getAllStructFieldRefs();
        long rows = 0;
        StringBuilder sb = new StringBuilder();
        RecordReader reader = format.getRecordReader(split, conf, Reporter.NULL);
        try {
            if (!(reader instanceof AcidInputFormat.AcidRecordReader)) {
                throw new IllegalStateException("Hive did not pick an ACID reader for split "
                    + split + " (got " + reader.getClass().getName() + ")");
            }
            AcidInputFormat.AcidRecordReader acid = (AcidInputFormat.AcidRecordReader) reader;
            Object key = reader.createKey();
            Object value = reader.createValue();
            while (reader.next(key, value)) {
                RecordIdentifier id = acid.getRecordIdentifier();
                sb.setLength(0);
                sb.append('[').append(id.getWriteId()).append(',')
                    .append(id.getBucketProperty()).append(',').append(id.getRowId());
                for (StructField field : fields) {
                    sb.append(',');
                    appendValue(sb, oi.getStructFieldData(value, field),
                        (PrimitiveObjectInspector) field.getFieldObjectInspector());
                }
                out.println(sb.append(']'));
                rows++;
            }
        } finally {
            reader.close();
        }
        return rows;
    }

    static String structFields(Request req) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < req.names.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(req.names.get(i)).append(':').append(req.types.get(i));
        }
        return sb.toString();
    }

    static void describeSplits(Request req, PrintStream out) throws Exception {
        JobConf conf = jobConf(req);
        for (InputSplit split : new OrcInputFormat().getSplits(conf, req.numSplits)) {
            StringBuilder sb = new StringBuilder();
            Json.appendString(sb, split.toString());
            out.println(sb);
        }
    }

    /** Add one request line to {@code req}; a bad line is kept as the request's error. */
    static void parseLine(Request req, String[] f, String line) {
        try {
            switch (f[0]) {
                case "dir": req.dirs.add(f[1]); break;
                case "column": req.names.add(f[1]); req.types.add(f[2]); break;
                case "buckets": req.buckets = Integer.parseInt(f[1]); break;
                case "writeids": req.writeIds = f[1]; break;
                case "txns": req.txns = f[1]; break;
                case "conf": req.conf.put(f[1], f[2]); break;
                case "unset": req.unset.add(f[1]); break;
                case "numsplits": req.numSplits = Integer.parseInt(f[1]); break;
                case "vectorized": req.vectorized = f[1].equals("1"); break;
                case "": break;
                default: req.error = "unknown request line: " + line;
            }
        } catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
            req.error = "bad request line: " + line + " (" + e + ")";
        }
    }

    /** Run a finished request ({@code read} or {@code splits}): its rows then an end line, or
     * one error line. */
    static void run(Request req, String action, PrintStream out) {
        try {
            if (req.error != null) {
                throw new IllegalArgumentException(req.error);
            }
            long start = System.nanoTime();
            long rows = 0;
            if (action.equals("read")) {
                rows = read(req, out);
            } else {
                describeSplits(req, out);
            }
            out.println("{\"end\":" + rows + ",\"ms\":" + (System.nanoTime() - start) / 1_000_000
                + ",\"vectorizedSplits\":" + req.vectorizedSplits + ",\"rowSplits\":"
                + req.rowSplits + "}");
        } catch (Exception | LinkageError e) {
            out.println(Json.error(e));
        }
        out.flush();
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
            false, "UTF-8");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Request req = new Request();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("quit")) {
                break;
            } else if (f[0].equals("read") || f[0].equals("splits")) {
                run(req, f[0], out);
                req = new Request();
            } else if (req.error == null) {
                parseLine(req, f, line);
            }
        }
        out.flush();
    }
}
