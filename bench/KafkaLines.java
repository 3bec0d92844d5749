// A Kafka producer fed by lines on stdin, for bench/kafka.py: one JVM writes every topic (the
// broker's console producer takes one topic per process). Run as a single-file source program:
//   java -cp '<kafka server jars>/*' bench/KafkaLines.java BOOTSTRAP [LINGER_MS [TOPIC...]]
// TOPICs are created first (one partition each; existing ones are left as they are), so that a
// consumer subscribed before the first record already finds them.
// Each line is TOPIC<TAB>KEY<TAB>VALUE; an empty KEY or VALUE is a null one (VALUE: Debezium's
// tombstone). Keys and values are JSON documents, which never hold a raw tab or newline.
// Records go out in line order (one producer, acks=1; linger.ms small so that a record's
// produce time is the time its line was written, which the latency measurement relies on).
// On end of input: flush, close, print the record count.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaLines {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        if (args.length > 2) {
            List<NewTopic> wanted = new ArrayList<>();
            for (int i = 2; i < args.length; i++) {
                wanted.add(new NewTopic(args[i], 1, (short) 1));
            }
            try (Admin admin = Admin.create(props)) {
                for (var f : admin.createTopics(wanted).values().values()) {
                    try {
                        f.get();
                    } catch (ExecutionException e) {
                        if (!(e.getCause() instanceof TopicExistsException)) {
                            throw e;
                        }
                    }
                }
            }
        }
        props.put("linger.ms", args.length > 1 ? args[1] : "5");
        props.put("acks", "1");
        props.put("batch.size", "262144");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        AtomicReference<Exception> failed = new AtomicReference<>();
        long n = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props);
             BufferedReader in = new BufferedReader(
                 new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) {
                    continue;
                }
                String[] parts = line.split("\t", 3);
                if (parts.length != 3) {
                    throw new IllegalArgumentException("expected TOPIC<TAB>KEY<TAB>VALUE: " + line);
                }
                String key = parts[1].isEmpty() ? null : parts[1];
                String value = parts[2].isEmpty() ? null : parts[2];
                producer.send(new ProducerRecord<>(parts[0], key, value), (md, e) -> {
                    if (e != null) {
                        failed.compareAndSet(null, e);
                    }
                });
                n++;
                if (failed.get() != null) {
                    throw failed.get();
                }
            }
            producer.flush();
        }
        if (failed.get() != null) {
            throw failed.get();
        }
        System.out.println("PRODUCED " + n);
    }
}
