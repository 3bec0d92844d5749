package io.acidflow.spark.acid;

import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.util.SerializableConfiguration;

/**
 * A Spark DataSource V2 reading one snapshot of a Hive 3 full-ACID table from a read plan made
 * by acidflow's Python planner ({@code acidflow.read.jvm}): option {@code plan} holds the plan
 * as JSON ({@link SnapshotPlan}). One {@link InputPartition} per read task (a bucket of a
 * partition, or a split of one: stripe ranges); each is read with ORC's Java reader and the
 * task's delete events applied ({@link TaskReader}), handed to Spark as columnar batches.
 *
 * <p>Usage: {@code spark.read.format("io.acidflow.spark.acid.AcidSnapshotSource")
 * .option("plan", json).load()}, or the short name {@code acidflow-snapshot}.
 */
public final class AcidSnapshotSource implements TableProvider, DataSourceRegister {

  /** The option holding the plan JSON. */
  public static final String PLAN = "plan";

  @Override
  public String shortName() {
    return "acidflow-snapshot";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SnapshotPlan.parse(planText(options)).schema;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    return new SnapshotTable(SnapshotPlan.parse(planText(props)));
  }

  private static String planText(Map<String, String> options) {
    String text = options.get(PLAN);
    if (text == null) {
      throw new IllegalArgumentException("acidflow-snapshot: option 'plan' (the read plan JSON) is missing");
    }
    return text;
  }

  /** The snapshot as a table: batch reads only. */
  static final class SnapshotTable implements Table, SupportsRead {
    private final SnapshotPlan plan;

    SnapshotTable(SnapshotPlan plan) {
      this.plan = plan;
    }

    @Override
    public String name() {
      return "acidflow-snapshot(" + plan.tableDir + ")";
    }

    @Override
    public StructType schema() {
      return plan.schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return new SnapshotScan(plan, plan.schema);
    }
  }

  /** Scan builder, scan and batch in one: column pruning is the only push-down. */
  static final class SnapshotScan implements ScanBuilder, SupportsPushDownRequiredColumns, Scan, Batch {
    private final SnapshotPlan plan;
    private StructType required;

    SnapshotScan(SnapshotPlan plan, StructType required) {
      this.plan = plan;
      this.required = required;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
      this.required = requiredSchema;
    }

    @Override
    public Scan build() {
      return this;
    }

    @Override
    public StructType readSchema() {
      return required;
    }

    @Override
    public String description() {
      return "acidflow-snapshot " + plan.tableDir + " tasks=" + plan.tasks.size();
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      InputPartition[] out = new InputPartition[plan.tasks.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = plan.tasks.get(i);
      }
      return out;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      int[] columns = new int[required.fields().length];
      for (int i = 0; i < columns.length; i++) {
        StructField f = required.fields()[i];
        columns[i] = plan.schema.fieldIndex(f.name());
      }
      SparkContext sc = SparkSession.active().sparkContext();
      Configuration conf = sc.hadoopConfiguration();
      Broadcast<SerializableConfiguration> bconf =
          sc.broadcast(
              new SerializableConfiguration(conf),
              scala.reflect.ClassTag$.MODULE$.apply(SerializableConfiguration.class));
      return new TaskReader.Factory(plan.header(), columns, bconf);
    }
  }
}
