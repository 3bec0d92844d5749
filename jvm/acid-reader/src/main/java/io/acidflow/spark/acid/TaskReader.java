package io.acidflow.spark.acid;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StripeInformation;
import org.apache.orc.TypeDescription;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Reads one read task: its insert-side event files (base and insert deltas; a split reads a
 * stripe range) with ORC's Java reader, keeping the events whose currentTransaction the
 * snapshot sees, whose operation is not a delete and whose ROW__ID (originalTransaction, bucket
 * property, rowId) no delete event of the task's delete deltas names -- the rules of Hive's
 * VectorizedOrcAcidRowBatchReader and Trino's OrcDeletedRows, and of acidflow's
 * {@code acidflow.read.snapshot.read_task}. A split loads only the delete events in its key
 * ranges; a row outside them (a file not sorted by ROW__ID) makes it load every delete event,
 * as read_task does.
 *
 * <p>The event files are read with their own schema (all six event fields): ORC's reader
 * treats a file with the six ACID event fields as ACID and needs them all in the read schema.
 */
final class TaskReader implements PartitionReader<ColumnarBatch> {
  private static final Logger LOG = Logger.getLogger(TaskReader.class.getName());
  private static final int BATCH_ROWS = 4096;
  private static final int OPERATION_DELETE = 2;
  private static final String[] EVENT_FIELDS = {
    "operation", "originalTransaction", "bucket", "rowId", "currentTransaction"
  };
  private static final String ACID_STATS = "hive.acid.stats";

  /** Creates the columnar reader of each task (serialized to executors). */
  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final SnapshotPlan.Header header;
    private final int[] columns;
    private final Broadcast<SerializableConfiguration> conf;

    Factory(SnapshotPlan.Header header, int[] columns, Broadcast<SerializableConfiguration> conf) {
      this.header = header;
      this.columns = columns;
      this.conf = conf;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("acidflow-snapshot reads columnar batches only");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      try {
        return new TaskReader(header, (SnapshotPlan.TaskSpec) partition, columns, conf.value().value());
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }
  }

  private final SnapshotPlan.Header header;
  private final SnapshotPlan.TaskSpec task;
  private final int[] columns;
  private final Configuration conf;
  private DeleteSet deletes;
  private boolean rangesActive;
  private int nextFile;
  private String path;
  private Reader reader;
  private RecordReader rows;
  private VectorizedRowBatch vrb;
  private final List<OrcVector> selected = new ArrayList<>();
  private final List<ConstantVector> constants = new ArrayList<>();
  private ColumnarBatch batch;
  private int[] sel = new int[BATCH_ROWS];

  TaskReader(SnapshotPlan.Header header, SnapshotPlan.TaskSpec task, int[] columns, Configuration conf) throws IOException {
    this.header = header;
    this.task = task;
    this.columns = columns;
    this.conf = conf;
    this.rangesActive = task.keyRanges != null;
    this.deletes = loadDeletes(rangesActive);
  }

  private static Reader open(String path, Configuration conf) throws IOException {
    Reader r = OrcFile.createReader(new Path(path), OrcFile.readerOptions(conf));
    TypeDescription s = r.getSchema();
    List<String> names = s.getFieldNames();
    boolean acid = s.getCategory() == TypeDescription.Category.STRUCT && names.size() == 6;
    for (int i = 0; acid && i < 5; i++) {
      acid = names.get(i).equalsIgnoreCase(EVENT_FIELDS[i]);
    }
    if (!acid) {
      r.close();
      throw new IOException(path + ": not an ACID event file (schema " + s + ")");
    }
    return r;
  }

  private static long value(LongColumnVector v, int i) {
    return v.vector[v.isRepeating ? 0 : i];
  }

  private static boolean isNull(LongColumnVector v, int i) {
    return !v.noNulls && v.isNull[v.isRepeating ? 0 : i];
  }

  /** The task's delete events with a valid currentTransaction (in its key ranges when asked). */
  private DeleteSet loadDeletes(boolean inRanges) throws IOException {
    DeleteSet set = new DeleteSet();
    for (String p : task.deleteFiles) {
      try (Reader r = open(p, conf)) {
        if (r.hasMetadataValue(ACID_STATS)) {
          ByteBuffer b = r.getMetadataValue(ACID_STATS).duplicate();
          byte[] raw = new byte[b.remaining()];
          b.get(raw);
          String[] stats = new String(raw, StandardCharsets.UTF_8).split(",");
          if (stats.length == 3 && stats[2].trim().equals("0")) {
            continue; // no delete events (Hive's reader skips such files too)
          }
        }
        TypeDescription s = r.getSchema();
        boolean[] include = new boolean[s.getMaximumId() + 1];
        for (int i = 0; i <= 5; i++) {
          include[i] = true;
        }
        VectorizedRowBatch b = s.createRowBatch(BATCH_ROWS);
        try (RecordReader rr = r.rows(r.options().include(include))) {
          while (rr.nextBatch(b)) {
            LongColumnVector op = (LongColumnVector) b.cols[0];
            LongColumnVector ow = (LongColumnVector) b.cols[1];
            LongColumnVector bk = (LongColumnVector) b.cols[2];
            LongColumnVector ri = (LongColumnVector) b.cols[3];
            LongColumnVector cw = (LongColumnVector) b.cols[4];
            for (int i = 0; i < b.size; i++) {
              if (isNull(op, i) || isNull(cw, i) || isNull(ow, i) || isNull(bk, i) || isNull(ri, i)
                  || value(op, i) != OPERATION_DELETE || !header.isValid(value(cw, i))) {
                continue;
              }
              long o = value(ow, i);
              long bucket = value(bk, i);
              long rowId = value(ri, i);
              if (!inRanges || task.inRanges(o, bucket, rowId)) {
                set.add(o, (int) bucket, rowId);
              }
            }
          }
        }
      }
    }
    set.seal();
    return set;
  }

  private boolean openNext() throws IOException {
    while (nextFile < task.dataFiles.length) {
      SnapshotPlan.FileSpec f = task.dataFiles[nextFile++];
      Reader r = open(f.path, conf);
      TypeDescription s = r.getSchema();
      TypeDescription row = s.getChildren().get(5);
      int nfields = row.getChildren() == null ? 0 : row.getChildren().size();
      boolean[] include = new boolean[s.getMaximumId() + 1];
      for (int i = 0; i <= 6; i++) {
        include[i] = true;
      }
      for (int c : columns) {
        if (c < header.dataColumns) {
          int pos = f.positions[c];
          if (pos >= 0 && pos < nfields) {
            TypeDescription field = row.getChildren().get(pos);
            for (int id = field.getId(); id <= field.getMaximumId(); id++) {
              include[id] = true;
            }
          }
        }
      }
      Reader.Options opts = r.options().include(include);
      if (f.endStripe >= 0) {
        List<StripeInformation> stripes = r.getStripes();
        int end = Math.min(f.endStripe, stripes.size());
        if (f.firstStripe >= end) {
          r.close();
          continue;
        }
        long offset = stripes.get(f.firstStripe).getOffset();
        StripeInformation last = stripes.get(end - 1);
        opts.range(offset, last.getOffset() + last.getLength() - offset);
      }
      rows = r.rows(opts);
      reader = r;
      path = f.path;
      vrb = s.createRowBatch(BATCH_ROWS);
      StructColumnVector rowVec = (StructColumnVector) vrb.cols[5];
      ColumnVector[] out = new ColumnVector[columns.length];
      selected.clear();
      constants.clear();
      for (int j = 0; j < columns.length; j++) {
        int c = columns[j];
        DataType t = header.schema.fields()[c].dataType();
        if (c >= header.dataColumns) {
          ConstantVector cv = new ConstantVector(t, task.partitionValues[c - header.dataColumns]);
          constants.add(cv);
          out[j] = cv;
        } else if (f.positions[c] < 0 || f.positions[c] >= nfields) {
          ConstantVector cv = new ConstantVector(t, null); // a column added after the file was written
          constants.add(cv);
          out[j] = cv;
        } else {
          OrcVector v = new OrcVector(t, rowVec.fields[f.positions[c]]);
          selected.add(v);
          out[j] = v;
        }
      }
      batch = new ColumnarBatch(out);
      return true;
    }
    return false;
  }

  /** Marks the visible rows of the current ORC batch in {@link #sel}; returns their count, or
   *  -1 when every row is visible. */
  private int select() throws IOException {
    int n = vrb.size;
    if (sel.length < n) {
      sel = new int[n];
    }
    LongColumnVector op = (LongColumnVector) vrb.cols[0];
    LongColumnVector ow = (LongColumnVector) vrb.cols[1];
    LongColumnVector bk = (LongColumnVector) vrb.cols[2];
    LongColumnVector ri = (LongColumnVector) vrb.cols[3];
    LongColumnVector cw = (LongColumnVector) vrb.cols[4];
    boolean keyNulls = !ow.noNulls || !bk.noNulls || !ri.noNulls;
    // a base or delta batch of one write id and one operation (the usual case): the event rules
    // are decided once for the batch
    boolean constant = op.isRepeating && cw.isRepeating;
    if (constant) {
      boolean visible = !isNull(cw, 0) && header.isValid(value(cw, 0))
          && !isNull(op, 0) && value(op, 0) != OPERATION_DELETE;
      if (!visible) {
        return 0;
      }
      if (deletes.size() == 0 && !rangesActive) {
        return -1;
      }
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
      long o = value(ow, i);
      long b = value(bk, i);
      long r = value(ri, i);
      boolean nullKey = keyNulls && (isNull(ow, i) || isNull(bk, i) || isNull(ri, i));
      if (rangesActive && !nullKey && !task.inRanges(o, b, r)) {
        LOG.warning(path + ": a ROW__ID outside the split's key ranges (file not sorted by "
            + "ROW__ID?); this split loads every delete event");
        rangesActive = false;
        deletes = loadDeletes(false);
      }
      boolean keep = (constant || (!isNull(cw, i) && header.isValid(value(cw, i))
              && !isNull(op, i) && value(op, i) != OPERATION_DELETE))
          && (nullKey || !deletes.contains(o, (int) b, r));
      if (keep) {
        sel[k++] = i;
      }
    }
    return k == n ? -1 : k;
  }

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (rows == null && !openNext()) {
        return false;
      }
      if (!rows.nextBatch(vrb)) {
        closeFile();
        continue;
      }
      if (vrb.size == 0) {
        continue;
      }
      int k = select();
      if (k == 0) {
        continue;
      }
      int rows = k < 0 ? vrb.size : k;
      for (OrcVector v : selected) {
        v.select(k < 0 ? null : sel, rows);
      }
      for (ConstantVector c : constants) {
        c.rows(rows);
      }
      batch.setNumRows(rows);
      return true;
    }
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  /** Closes the current file's record reader and reader. */
  private void closeFile() throws IOException {
    try {
      if (rows != null) {
        rows.close();
      }
    } finally {
      rows = null;
      if (reader != null) {
        reader.close();
        reader = null;
      }
    }
  }

  @Override
  public void close() throws IOException {
    closeFile();
  }
}
