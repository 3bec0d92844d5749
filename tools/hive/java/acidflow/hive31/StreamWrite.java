package acidflow.hive31;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hive.streaming.HiveStreamingConnection;
import org.apache.hive.streaming.StrictDelimitedInputWriter;

/**
 * Hive 3.1.3's own writer side: streams rows into an existing transactional ORC table through
 * a metastore with {@link HiveStreamingConnection} (hive-streaming 3.1.3) and
 * {@link StrictDelimitedInputWriter}. The connection opens one transaction batch (Hive's
 * open_txns + allocate_table_write_ids), takes Hive's SHARED_READ lock per transaction, writes
 * {@code delta_w_w} directories with Hive's ORC RecordUpdater and commits through the metastore.
 *
 * <p>Usage: {@code StreamWrite <thrift://host:port> <db> <table> [<partition value>,...]}.
 * Rows come on stdin, one a line, fields separated by ',' (Hive's delimited text: {@code \N}
 * for NULL). A blank line ends a transaction; a line {@code !abort} ends it with an abort
 * instead of a commit. The batch is sized to the number of transactions given.
 *
 * <p>Answer on stdout: one JSON line per transaction,
 * {@code {"txnId": t, "writeId": w, "rows": n, "state": "committed"|"aborted"}}; on failure a
 * {@code {"error": ...}} line and exit status 1.
 */
public final class StreamWrite {

    private StreamWrite() {
    }

    /** One transaction's rows and how it ends. */
    static final class Txn {
        final List<String> rows = new ArrayList<>();
        boolean abort;
    }

    static List<Txn> readTransactions(BufferedReader in) throws java.io.IOException {
        List<Txn> txns = new ArrayList<>();
        Txn cur = new Txn();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty() || line.equals("!abort")) {
                cur.abort = line.equals("!abort");
                if (!cur.rows.isEmpty() || cur.abort) {
                    txns.add(cur);
                }
                cur = new Txn();
            } else {
                cur.rows.add(line);
            }
        }
        if (!cur.rows.isEmpty()) {
            txns.add(cur);
        }
        return txns;
    }

    /** The current transaction's (txn id, write id): package-private in hive-streaming 3.1.3. */
    static long[] currentIds(HiveStreamingConnection conn) throws ReflectiveOperationException {
        Field batchField = HiveStreamingConnection.class.getDeclaredField("currentTransactionBatch");
        batchField.setAccessible(true);
        Object batch = batchField.get(conn);
        Method txn = batch.getClass().getDeclaredMethod("getCurrentTxnId");
        Method write = batch.getClass().getDeclaredMethod("getCurrentWriteId");
        txn.setAccessible(true);
        write.setAccessible(true);
        return new long[] {(Long) txn.invoke(batch), (Long) write.invoke(batch)};
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
            true, "UTF-8");
        if (args.length < 3 || args.length > 4) {
            System.err.println("usage: StreamWrite <thrift://host:port> <db> <table> [<part values,...>]");
            System.exit(2);
        }
        List<Txn> txns = readTransactions(
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
        if (txns.isEmpty()) {
            System.err.println("StreamWrite: no rows on stdin");
            System.exit(2);
        }
        HiveConf conf = new HiveConf();
        conf.setVar(HiveConf.ConfVars.METASTOREURIS, args[0]);
        conf.setVar(HiveConf.ConfVars.HIVE_TXN_MANAGER, "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager");
        conf.setBoolVar(HiveConf.ConfVars.HIVE_SUPPORT_CONCURRENCY, true);
        StrictDelimitedInputWriter writer = StrictDelimitedInputWriter.newBuilder()
            .withFieldDelimiter(',').build();
        HiveStreamingConnection.Builder builder = HiveStreamingConnection.newBuilder()
            .withDatabase(args[1]).withTable(args[2]).withAgentInfo("acidflow.hive31.StreamWrite")
            .withHiveConf(conf).withRecordWriter(writer).withTransactionBatchSize(txns.size());
        if (args.length == 4) {
            builder = builder.withStaticPartitionValues(Arrays.asList(args[3].split(",", -1)));
        }
        HiveStreamingConnection conn = null;
        try {
            conn = builder.connect();
            for (Txn t : txns) {
                conn.beginTransaction();
                long[] ids = currentIds(conn);
                for (String row : t.rows) {
                    conn.write(row.getBytes(StandardCharsets.UTF_8));
                }
                if (t.abort) {
                    conn.abortTransaction();
                } else {
                    conn.commitTransaction();
                }
                out.println("{\"txnId\":" + ids[0] + ",\"writeId\":" + ids[1] + ",\"rows\":"
                    + t.rows.size() + ",\"state\":\"" + (t.abort ? "aborted" : "committed") + "\"}");
            }
        } catch (Exception | LinkageError e) {
            out.println(Json.error(e));
            out.flush();
            System.exit(1);
        } finally {
            if (conn != null) {
                conn.close();
            }
        }
        out.flush();
        // the metastore client and heartbeat pools keep non-daemon threads
        System.exit(0);
    }
}
