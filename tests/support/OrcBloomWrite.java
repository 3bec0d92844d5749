// Writes a flat ORC file with Hive 3.1.3's ORC writer (hive-exec's org.apache.orc classes) and
// bloom filters on every column (orc.bloom.filter.columns), for tests/unit/test_orcindex.py.
// Row i: id bigint = 3*i, name string = "name-" + i + "-\u00fc", day date = i % 20000,
// price decimal(12,2) = i / 100. Run: java -cp <hive tools classpath> OrcBloomWrite.java
//   OUT ROWS BLOOM_VERSION(utf8|original) [STRIPE_BYTES [PAD]]
// PAD > 0 appends PAD 'x' to every name (long strings: ORC >= 1.6 truncates their statistics,
// ORC-203).
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.CompressionKind;
import org.apache.orc.OrcConf;
import org.apache.orc.OrcFile;
import org.apache.orc.TypeDescription;
import org.apache.orc.Writer;

public class OrcBloomWrite {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    OrcConf.BLOOM_FILTER_WRITE_VERSION.setString(conf, args[2]);
    long stripe = args.length > 3 ? Long.parseLong(args[3]) : 64 * 1024;
    TypeDescription schema = TypeDescription.fromString(
        "struct<id:bigint,name:string,day:date,price:decimal(12,2)>");
    Writer w = OrcFile.createWriter(new Path(args[0]), OrcFile.writerOptions(conf)
        .setSchema(schema).compress(CompressionKind.ZLIB).stripeSize(stripe)
        .blockSize(stripe).bufferSize(16 * 1024).rowIndexStride(1000)
        .bloomFilterColumns("id,name,day,price").bloomFilterFpp(0.05));
    int rows = Integer.parseInt(args[1]);
    String pad = "x".repeat(args.length > 4 ? Integer.parseInt(args[4]) : 0);
    VectorizedRowBatch b = schema.createRowBatch();
    for (int i = 0; i < rows; i++) {
      int r = b.size++;
      ((LongColumnVector) b.cols[0]).vector[r] = 3L * i;
      byte[] name = ("name-" + i + "-\u00fc" + pad).getBytes(StandardCharsets.UTF_8);
      ((BytesColumnVector) b.cols[1]).setVal(r, name);
      ((LongColumnVector) b.cols[2]).vector[r] = i % 20000;
      ((DecimalColumnVector) b.cols[3]).set(r, HiveDecimal.create(BigDecimal.valueOf(i, 2)));
      if (b.size == b.getMaxSize()) {
        w.addRowBatch(b);
        b.reset();
      }
    }
    if (b.size > 0) {
      w.addRowBatch(b);
    }
    w.close();
  }
}
