package acidflow.hive31;

import java.io.PrintStream;
import java.lang.reflect.Constructor;

import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorExtractRow;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatchCtx;
import org.apache.hadoop.hive.ql.io.orc.OrcSplit;
import org.apache.hadoop.hive.ql.io.orc.VectorizedOrcAcidRowBatchReader;
import org.apache.hadoop.hive.ql.metadata.VirtualColumn;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.typeinfo.PrimitiveTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;

/**
 * Hive 3.1.3's vectorized ACID reader, {@link VectorizedOrcAcidRowBatchReader} (what a
 * vectorized Hive 3 query runs on a split-update table): the batch context holds the data
 * columns plus the {@code ROW__ID} virtual column, so the reader fills ROW__IDs (Hive 3.1's
 * {@code rowIdProjected}: real ones from the events, synthetic ones for original files).
 *
 * <p>{@code getRecordReader} picks this reader for every ACID split under a vectorized MapWork
 * plan (Hive 3.1 has no row-reader fallback for ACID splits: original files included); without
 * a plan the reader is built directly with its batch context (the package-private constructor
 * Hive's tests use, by reflection).
 */
final class VectorizedRead {
    private final int n;
    private final VectorizedRowBatchCtx ctx;
    private final PrimitiveObjectInspector[] inspectors;
    private final VectorExtractRow extract = new VectorExtractRow();
    private final Constructor<VectorizedOrcAcidRowBatchReader> constructor;

    VectorizedRead(AcidRead.Request req) throws Exception {
        n = req.names.size();
        String[] names = new String[n + 1];
        TypeInfo[] types = new TypeInfo[n + 1];
        TypeInfo[] dataTypes = new TypeInfo[n];
        int[] dataColumns = new int[n];
        inspectors = new PrimitiveObjectInspector[n];
        for (int i = 0; i < n; i++) {
            names[i] = req.names.get(i);
            types[i] = TypeInfoUtils.getTypeInfoFromTypeString(req.types.get(i));
            dataTypes[i] = types[i];
            dataColumns[i] = i;
            inspectors[i] = PrimitiveObjectInspectorFactory.getPrimitiveWritableObjectInspector(
                (PrimitiveTypeInfo) types[i]);
        }
        names[n] = VirtualColumn.ROWID.getName();
        types[n] = VirtualColumn.ROWID.getTypeInfo();
        ctx = new VectorizedRowBatchCtx(names, types, null, dataColumns, 0, 1,
            new VirtualColumn[] {VirtualColumn.ROWID}, new String[0], null);
        extract.init(dataTypes, dataColumns);
        constructor = VectorizedOrcAcidRowBatchReader.class.getDeclaredConstructor(
            OrcSplit.class, JobConf.class, Reporter.class, VectorizedRowBatchCtx.class);
        constructor.setAccessible(true);
    }

    private static long value(ColumnVector v, int row) {
        LongColumnVector longs = (LongColumnVector) v;
        return longs.vector[longs.isRepeating ? 0 : row];
    }

    long readSplit(JobConf conf, InputSplit split, PrintStream out) throws Exception {
        VectorizedOrcAcidRowBatchReader reader =
            constructor.newInstance((OrcSplit) split, conf, Reporter.NULL, ctx);
        long rows = 0;
        try {
            VectorizedRowBatch batch = ctx.createVectorizedRowBatch();
            int rowIdColumn = ctx.findVirtualColumnNum(VirtualColumn.ROWID);
            Object[] values = new Object[n];
            StringBuilder sb = new StringBuilder();
            while (reader.next(NullWritable.get(), batch)) {
                ColumnVector[] rowId = ((StructColumnVector) batch.cols[rowIdColumn]).fields;
                for (int j = 0; j < batch.size; j++) {
                    int r = batch.selectedInUse ? batch.selected[j] : j;
                    extract.extractRow(batch, r, values);
                    sb.setLength(0);
                    sb.append('[').append(value(rowId[0], r)).append(',')
                        .append(value(rowId[1], r)).append(',').append(value(rowId[2], r));
                    for (int i = 0; i < n; i++) {
                        sb.append(',');
                        AcidRead.appendValue(sb, values[i], inspectors[i]);
                    }
                    out.println(sb.append(']'));
                    rows++;
                }
            }
        } finally {
            reader.close();
        }
        return rows;
    }
}
