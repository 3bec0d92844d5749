package io.acidflow.spark.acid;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A read plan as data, made by {@code acidflow.read.jvm.plan_json}:
 *
 * <pre>
 * {"table_dir": str,
 *  "schema": Spark StructType JSON (data columns, then partition columns),
 *  "data_columns": number of data columns,
 *  "high_watermark": long, "exceptions": [sorted open and aborted write ids],
 *  "tasks": [{"partition_values": [value | null per partition column],
 *             "delete_files": [path],
 *             "key_ranges": [[[owid, bucket, rowId] | null, [...] | null]] | null,
 *             "data_files": [{"path": str, "stripes": [first, end) | null,
 *                             "positions": [row field index | null per data column]}]}]}
 * </pre>
 *
 * Partition values come parsed by Python (Hive's unescaping, __HIVE_DEFAULT_PARTITION__ as
 * null): numbers, booleans, strings; a date as days since 1970-01-01, a decimal as its text.
 */
final class SnapshotPlan {
  final String tableDir;
  final StructType schema;
  final int dataColumns;
  final long highWatermark;
  final long[] exceptions;
  final List<TaskSpec> tasks;

  private SnapshotPlan(String tableDir, StructType schema, int dataColumns, long hwm, long[] exceptions, List<TaskSpec> tasks) {
    this.tableDir = tableDir;
    this.schema = schema;
    this.dataColumns = dataColumns;
    this.highWatermark = hwm;
    this.exceptions = exceptions;
    this.tasks = tasks;
  }

  /** What every task reader needs besides its task (sent once with the reader factory). */
  static final class Header implements Serializable {
    private static final long serialVersionUID = 1L;
    final StructType schema;
    final int dataColumns;
    final long highWatermark;
    final long[] exceptions;

    Header(StructType schema, int dataColumns, long highWatermark, long[] exceptions) {
      this.schema = schema;
      this.dataColumns = dataColumns;
      this.highWatermark = highWatermark;
      this.exceptions = exceptions;
    }

    /**
     * Hive's ValidReaderWriteIdList.isWriteIdValid: at most the high watermark and not an open
     * or aborted exception.
     */
    boolean isValid(long writeId) {
      return writeId <= highWatermark && Arrays.binarySearch(exceptions, writeId) < 0;
    }
  }

  /** One insert-side file of a task. */
  static final class FileSpec implements Serializable {
    private static final long serialVersionUID = 1L;
    final String path;
    /** [first, end) stripes; end -1 = the whole file. */
    final int firstStripe;
    final int endStripe;
    /** per data column, the index of its field in the file's row struct; -1 = missing (NULL). */
    final int[] positions;

    FileSpec(String path, int firstStripe, int endStripe, int[] positions) {
      this.path = path;
      this.firstStripe = firstStripe;
      this.endStripe = endStripe;
      this.positions = positions;
    }
  }

  /** One read task (Spark input partition). */
  static final class TaskSpec implements InputPartition {
    private static final long serialVersionUID = 1L;
    final Serializable[] partitionValues;
    final String[] deleteFiles;
    /** key ranges as {lowOwid, lowBucket, lowRowId, highOwid, highBucket, highRowId}; null = all. */
    final long[][] keyRanges;
    final FileSpec[] dataFiles;

    TaskSpec(Serializable[] partitionValues, String[] deleteFiles, long[][] keyRanges, FileSpec[] dataFiles) {
      this.partitionValues = partitionValues;
      this.deleteFiles = deleteFiles;
      this.keyRanges = keyRanges;
      this.dataFiles = dataFiles;
    }

    /** Whether a ROW__ID key lies in one of the task's inclusive key ranges (true without ranges). */
    boolean inRanges(long owid, long bucket, long rowId) {
      if (keyRanges == null) {
        return true;
      }
      for (long[] r : keyRanges) {
        if (compare(owid, bucket, rowId, r[0], r[1], r[2]) >= 0
            && compare(owid, bucket, rowId, r[3], r[4], r[5]) <= 0) {
          return true;
        }
      }
      return false;
    }

    private static int compare(long a0, long a1, long a2, long b0, long b1, long b2) {
      int c = Long.compare(a0, b0);
      if (c != 0) {
        return c;
      }
      c = Long.compare(a1, b1);
      return c != 0 ? c : Long.compare(a2, b2);
    }
  }

  Header header() {
    return new Header(schema, dataColumns, highWatermark, exceptions);
  }

  /** Parses the plan JSON (format: class doc). */
  static SnapshotPlan parse(String text) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("acidflow-snapshot: the plan is not valid JSON: " + e.getMessage(), e);
    }
    StructType schema = (StructType) DataType.fromJson(root.get("schema").toString());
    JsonNode exc = root.get("exceptions");
    long[] exceptions = new long[exc.size()];
    for (int i = 0; i < exceptions.length; i++) {
      exceptions[i] = exc.get(i).asLong();
    }
    Arrays.sort(exceptions);
    List<TaskSpec> tasks = new ArrayList<>();
    for (JsonNode t : root.get("tasks")) {
      JsonNode pv = t.get("partition_values");
      Serializable[] values = new Serializable[pv.size()];
      for (int i = 0; i < values.length; i++) {
        JsonNode v = pv.get(i);
        values[i] = v.isNull() ? null
            : v.isBoolean() ? (Serializable) v.asBoolean()
            : v.isIntegralNumber() ? (Serializable) v.asLong()
            : v.isNumber() ? (Serializable) v.asDouble()
            : v.asText();
      }
      JsonNode del = t.get("delete_files");
      String[] deletes = new String[del.size()];
      for (int i = 0; i < deletes.length; i++) {
        deletes[i] = del.get(i).asText();
      }
      long[][] ranges = null;
      JsonNode kr = t.get("key_ranges");
      if (kr != null && !kr.isNull()) {
        ranges = new long[kr.size()][];
        for (int i = 0; i < ranges.length; i++) {
          long[] r = new long[] {Long.MIN_VALUE, Long.MIN_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE};
          for (int side = 0; side < 2; side++) {
            JsonNode key = kr.get(i).get(side);
            if (key != null && !key.isNull()) {
              for (int k = 0; k < 3; k++) {
                r[side * 3 + k] = key.get(k).asLong();
              }
            }
          }
          ranges[i] = r;
        }
      }
      JsonNode df = t.get("data_files");
      FileSpec[] files = new FileSpec[df.size()];
      for (int i = 0; i < files.length; i++) {
        JsonNode f = df.get(i);
        JsonNode st = f.get("stripes");
        boolean whole = st == null || st.isNull();
        JsonNode pos = f.get("positions");
        int[] positions = new int[pos.size()];
        for (int k = 0; k < positions.length; k++) {
          positions[k] = pos.get(k).isNull() ? -1 : pos.get(k).asInt();
        }
        files[i] = new FileSpec(f.get("path").asText(), whole ? 0 : st.get(0).asInt(), whole ? -1 : st.get(1).asInt(), positions);
      }
      tasks.add(new TaskSpec(values, deletes, ranges, files));
    }
    return new SnapshotPlan(root.get("table_dir").asText(), schema, root.get("data_columns").asInt(),
        root.get("high_watermark").asLong(), exceptions, tasks);
  }
}
