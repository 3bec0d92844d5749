package io.acidflow.spark.acid;

import java.util.Arrays;

/**
 * The delete events of a read task as primitive arrays: (originalTransaction, bucket property,
 * rowId) triples, with an open-addressing hash index over them (Trino's OrcDeletedRows keeps
 * the same triples; Hive's ColumnizedDeleteEventRegistry compares the full bucket property,
 * statement bits included). Duplicates are harmless. No allocation per lookup.
 */
final class DeleteSet {
  private long[] owid = new long[1024];
  private int[] bucket = new int[1024];
  private long[] rowId = new long[1024];
  private int size;
  private int[] slots; // index + 1 of a triple; 0 = empty
  private int mask;

  /** Adds one delete event (before {@link #seal}). */
  void add(long o, int b, long r) {
    if (size == owid.length) {
      int n = size * 2;
      owid = Arrays.copyOf(owid, n);
      bucket = Arrays.copyOf(bucket, n);
      rowId = Arrays.copyOf(rowId, n);
    }
    owid[size] = o;
    bucket[size] = b;
    rowId[size] = r;
    size++;
  }

  int size() {
    return size;
  }

  /** Builds the hash index; call once, after the last {@link #add}. */
  void seal() {
    int cap = Integer.highestOneBit(Math.max(4, size * 2 - 1)) << 1;
    slots = new int[cap];
    mask = cap - 1;
    for (int i = 0; i < size; i++) {
      int s = hash(owid[i], bucket[i], rowId[i]) & mask;
      while (slots[s] != 0) {
        s = (s + 1) & mask;
      }
      slots[s] = i + 1;
    }
  }

  /** Whether the row with this ROW__ID is deleted. */
  boolean contains(long o, int b, long r) {
    if (size == 0) {
      return false;
    }
    int s = hash(o, b, r) & mask;
    int i;
    while ((i = slots[s]) != 0) {
      i--;
      if (rowId[i] == r && owid[i] == o && bucket[i] == b) {
        return true;
      }
      s = (s + 1) & mask;
    }
    return false;
  }

  private static int hash(long o, int b, long r) {
    long h = o * 0x9E3779B97F4A7C15L + b;
    h = h * 0xC2B2AE3D27D4EB4FL + r;
    h ^= h >>> 31;
    h *= 0x94D049BB133111EBL;
    return (int) (h ^ (h >>> 29));
  }
}
