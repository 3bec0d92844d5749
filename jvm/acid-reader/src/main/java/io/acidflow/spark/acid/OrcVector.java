package io.acidflow.spark.acid;

import java.math.BigDecimal;
import java.util.Arrays;

import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.serde2.io.HiveDecimalWritable;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark column vector over an ORC (hive-storage-api) column vector through a selection index:
 * row {@code i} of the batch Spark sees is row {@code sel[i]} of ORC's vector (all rows when
 * {@code sel} is null), so rows dropped by the ACID rules are skipped without copying. ORC's
 * integer vectors are 64-bit for every integer type, so a column written as int and read as
 * bigint (integer widening, Hive's schema evolution) needs no conversion; decimals are rescaled
 * to the column's scale.
 */
final class OrcVector extends ColumnVector {
  private final org.apache.hadoop.hive.ql.exec.vector.ColumnVector v;
  private final LongColumnVector longs;
  private final DoubleColumnVector doubles;
  private final BytesColumnVector bytes;
  private final DecimalColumnVector decimals;
  private int[] sel;
  private int rows;

  OrcVector(DataType type, org.apache.hadoop.hive.ql.exec.vector.ColumnVector v) {
    super(type);
    this.v = v;
    this.longs = v instanceof LongColumnVector ? (LongColumnVector) v : null;
    this.doubles = v instanceof DoubleColumnVector ? (DoubleColumnVector) v : null;
    this.bytes = v instanceof BytesColumnVector ? (BytesColumnVector) v : null;
    this.decimals = v instanceof DecimalColumnVector ? (DecimalColumnVector) v : null;
  }

  /** The rows of ORC's batch this vector shows (null = all, in order). */
  void select(int[] sel, int rows) {
    this.sel = sel;
    this.rows = rows;
  }

  private int at(int rowId) {
    return v.isRepeating ? 0 : sel == null ? rowId : sel[rowId];
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return !v.noNulls;
  }

  @Override
  public int numNulls() {
    if (v.noNulls) {
      return 0;
    }
    int n = 0;
    for (int i = 0; i < rows; i++) {
      n += v.isNull[at(i)] ? 1 : 0;
    }
    return n;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return !v.noNulls && v.isNull[at(rowId)];
  }

  @Override
  public boolean getBoolean(int rowId) {
    return longs.vector[at(rowId)] != 0;
  }

  @Override
  public byte getByte(int rowId) {
    return (byte) longs.vector[at(rowId)];
  }

  @Override
  public short getShort(int rowId) {
    return (short) longs.vector[at(rowId)];
  }

  @Override
  public int getInt(int rowId) {
    return (int) longs.vector[at(rowId)];
  }

  @Override
  public long getLong(int rowId) {
    return longs.vector[at(rowId)];
  }

  @Override
  public float getFloat(int rowId) {
    return (float) doubles.vector[at(rowId)];
  }

  @Override
  public double getDouble(int rowId) {
    return doubles.vector[at(rowId)];
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    if (isNullAt(rowId)) {
      return null;
    }
    HiveDecimalWritable w = decimals.vector[at(rowId)];
    if (precision <= Decimal.MAX_LONG_DIGITS()) {
      return Decimal.createUnsafe(w.serialize64(scale), precision, scale);
    }
    BigDecimal d = w.getHiveDecimal().bigDecimalValue().setScale(scale);
    return Decimal.apply(d, precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    int i = at(rowId);
    return UTF8String.fromBytes(bytes.vector[i], bytes.start[i], bytes.length[i]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    int i = at(rowId);
    return Arrays.copyOfRange(bytes.vector[i], bytes.start[i], bytes.start[i] + bytes.length[i]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw new UnsupportedOperationException("arrays are not read by acidflow-snapshot");
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    throw new UnsupportedOperationException("maps are not read by acidflow-snapshot");
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw new UnsupportedOperationException("structs are not read by acidflow-snapshot");
  }
}
