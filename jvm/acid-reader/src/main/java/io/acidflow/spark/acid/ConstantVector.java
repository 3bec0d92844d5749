package io.acidflow.spark.acid;

import java.io.Serializable;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One value for every row: a partition column (the value Python parsed from the partition
 * path; null for __HIVE_DEFAULT_PARTITION__), or NULL for a column a file lacks (added after it
 * was written). Values: Boolean, Long (integers, and dates as days since 1970-01-01), Double,
 * String (strings, and decimals as text).
 */
final class ConstantVector extends ColumnVector {
  private final boolean isNull;
  private int rows;
  private final boolean bool;
  private final long longValue;
  private final double doubleValue;
  private final UTF8String text;
  private final Decimal decimal;

  ConstantVector(DataType type, Serializable value) {
    super(type);
    isNull = value == null;
    bool = value instanceof Boolean && (Boolean) value;
    longValue = value instanceof Number ? ((Number) value).longValue() : 0L;
    doubleValue = value instanceof Number ? ((Number) value).doubleValue() : 0.0;
    text = value == null ? null : UTF8String.fromString(String.valueOf(value));
    if (type instanceof DecimalType && value != null) {
      DecimalType dt = (DecimalType) type;
      decimal = Decimal.apply(new BigDecimal(String.valueOf(value)).setScale(dt.scale()), dt.precision(), dt.scale());
    } else {
      decimal = null;
    }
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return isNull;
  }

  @Override
  public int numNulls() {
    return isNull ? rows : 0;
  }

  /** The batch's row count (for {@link #numNulls}). */
  void rows(int rows) {
    this.rows = rows;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return isNull;
  }

  @Override
  public boolean getBoolean(int rowId) {
    return bool;
  }

  @Override
  public byte getByte(int rowId) {
    return (byte) longValue;
  }

  @Override
  public short getShort(int rowId) {
    return (short) longValue;
  }

  @Override
  public int getInt(int rowId) {
    return (int) longValue;
  }

  @Override
  public long getLong(int rowId) {
    return longValue;
  }

  @Override
  public float getFloat(int rowId) {
    return (float) doubleValue;
  }

  @Override
  public double getDouble(int rowId) {
    return doubleValue;
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return decimal;
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return text;
  }

  @Override
  public byte[] getBinary(int rowId) {
    return isNull || !(dataType() instanceof BinaryType) ? null : text.toString().getBytes(StandardCharsets.UTF_8);
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
