"""acid_cdc: apply pending change batches to full-ACID tables, every 5 minutes.

pull (only when ``source`` is ``postgres``: ``acidflow cdc pull`` from a wal2json slot into the
landing path, the DSN from the connection ``postgres_conn_id``; a success doing nothing
otherwise) -> pending (a short-circuit: with no change file in the landing path the run ends
here, a success with the rest skipped) -> cdc_upsert (spark-submit ``cdc-upsert``: one batch per
landing file, one transaction per batch, already-applied batches skipped; a Great Expectations
gate on each table's staged rows runs before commit and aborts the batch when it fails) ->
validate (spark-submit ``validate``: the tables' suites on the committed snapshot plus ACID
invariants). Safe to retry: batches are idempotent by id, the pull by LSN.

``source: kafka`` reads a Kafka source instead of the landing path (``docs/kafka.md``):
``cdc_upsert`` applies the source's new offset ranges (from the offsets the catalog recorded
with the last committed batch to the topics' current ends, at most ``kafka_max_offsets``
records per batch, ``kafka_max_batches`` batches per run), whole source transactions only,
each batch with its offsets in one catalog transaction: a retry, a cleared task or a
backfill never applies an offset twice or skips one. Values are JsonConverter's
(``kafka_value_format: json``) or Debezium's Avro through a schema registry (``avro``, with
``kafka_schema_registry_url``, Apicurio's ``apicurio.registry.url``). ``pending`` does not look at Kafka (there
is no Kafka client in Airflow's workers): with ``kafka`` it lets the run go on, and a run with
nothing new commits nothing.

Schedule ``[acidflow] cdc_schedule`` (default every 5 minutes; seconds, cron, ``@continuous`` or
``none``) with ``max_active_runs=1`` and no catchup; the scheduled runs take the params'
defaults, which ``[acidflow] cdc_params`` (JSON) sets. ``cdc_upsert`` declares the asset alias
``acidflow-tables``: each table it changed gets an asset event ``acid://<catalog id>/<db.table>``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, Param, task

from acidflow_airflow.cdc import has_change_files, pull_changes
from acidflow_airflow.config import include
from acidflow_airflow.connect import spark_params
from acidflow_airflow.notifiers import default_args
from acidflow_airflow.operator import AcidflowSparkSubmitOperator
from acidflow_airflow.schedules import DEFAULT_CDC_SCHEDULE, param_defaults, schedule

DEFAULTS = param_defaults(
    "cdc_params",
    {
        "source": "landing",
        "format": "wal2json",
        "input_path": include("sample_data", "pgbench", "landing"),
        "tables_config": include("tables"),
        "target_db": "default",
        "tables": [],
        "auto_create": False,
        "schema_drift": "add",
        "quarantine_threshold": 0.01,
        "postgres_conn_id": "",
        "slot": "acidflow",
        "kafka_bootstrap_servers": "",
        "kafka_source": "",
        "kafka_topics": [],
        "kafka_topic_pattern": "",
        "kafka_transaction_topic": "",
        "kafka_starting_offsets": "earliest",
        "kafka_min_bad_records": 10,
        "kafka_value_format": "json",
        "kafka_schema_registry_url": "",
        "kafka_max_offsets": 0,
        "kafka_max_batches": 0,
    },
)

with DAG(
    dag_id="acid_cdc",
    description="Apply CDC change batches (wal2json / Debezium / GoldenGate) to ACID tables",
    schedule=schedule("cdc_schedule", DEFAULT_CDC_SCHEDULE),
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=default_args(),
    tags=["acidflow", "cdc"],
    params={
        "source": Param(
            DEFAULTS["source"],
            enum=["landing", "postgres", "kafka"],
            description="landing: apply the files already in input_path; "
            "postgres: pull from a replication slot first; kafka: read a Kafka source",
        ),
        "format": Param(DEFAULTS["format"], enum=["wal2json", "debezium", "goldengate"]),
        "input_path": Param(
            DEFAULTS["input_path"],
            type="string",
            minLength=1,
            description="landing directory of change files",
        ),
        "tables_config": Param(
            DEFAULTS["tables_config"],
            type="string",
            description="YAML file or directory of table definitions",
        ),
        "target_db": Param(
            DEFAULTS["target_db"],
            type="string",
            pattern="^[a-z0-9_]+$",
            description="database for tables named after their source",
        ),
        "tables": Param(
            DEFAULTS["tables"],
            type="array",
            items={"type": "string"},
            description="only these source tables (empty: all)",
        ),
        "auto_create": Param(
            DEFAULTS["auto_create"],
            type="boolean",
            description="register unknown tables from the stream",
        ),
        "schema_drift": Param(DEFAULTS["schema_drift"], enum=["add", "fail"]),
        "quarantine_threshold": Param(
            DEFAULTS["quarantine_threshold"], type="number", minimum=0, maximum=1
        ),
        "postgres_conn_id": Param(
            DEFAULTS["postgres_conn_id"],
            type="string",
            description="Airflow connection of the source database",
        ),
        "slot": Param(DEFAULTS["slot"], type="string", pattern="^[a-z0-9_]+$"),
        "kafka_bootstrap_servers": Param(
            DEFAULTS["kafka_bootstrap_servers"], type="string", description="host:port,..."
        ),
        "kafka_source": Param(
            DEFAULTS["kafka_source"],
            type="string",
            pattern="^[A-Za-z0-9_.-]*$",
            description="the Kafka source's name: the catalog keeps its offsets",
        ),
        "kafka_topics": Param(
            DEFAULTS["kafka_topics"],
            type="array",
            items={"type": "string"},
            description="change topics (or kafka_topic_pattern)",
        ),
        "kafka_topic_pattern": Param(
            DEFAULTS["kafka_topic_pattern"], type="string", description="regex of change topics"
        ),
        "kafka_transaction_topic": Param(
            DEFAULTS["kafka_transaction_topic"],
            type="string",
            description="Debezium's transaction topic (whole source transactions); empty: none",
        ),
        "kafka_starting_offsets": Param(
            DEFAULTS["kafka_starting_offsets"],
            type="string",
            description="first batch's start: earliest, latest or Spark's offsets JSON",
        ),
        "kafka_max_offsets": Param(
            DEFAULTS["kafka_max_offsets"],
            type="integer",
            minimum=0,
            description="records per batch (0: no cap)",
        ),
        "kafka_min_bad_records": Param(
            DEFAULTS["kafka_min_bad_records"],
            type="integer",
            minimum=1,
            description="a Kafka batch with fewer bad records is never refused by the threshold",
        ),
        "kafka_value_format": Param(
            DEFAULTS["kafka_value_format"],
            type="string",
            enum=["json", "avro"],
            description="json: JsonConverter; avro: through a schema registry (Debezium)",
        ),
        "kafka_schema_registry_url": Param(
            DEFAULTS["kafka_schema_registry_url"],
            type="string",
            description="with avro: apicurio.registry.url (http://host:8080/apis/registry/v2)",
        ),
        "kafka_max_batches": Param(
            DEFAULTS["kafka_max_batches"],
            type="integer",
            minimum=0,
            description="batches per run (0: until nothing is left)",
        ),
        **spark_params(),  # spark-submit or a Spark Connect server per run
    },
    doc_md=__doc__,
) as dag:

    @task
    def pull(params: dict[str, Any] | None = None) -> str:
        """``acidflow cdc pull`` when ``source`` is ``postgres``; nothing otherwise."""
        return pull_changes(params or {})

    @task.short_circuit
    def pending(params: dict[str, Any] | None = None) -> bool:
        """True when the landing path holds change files (else the run ends: a success);
        always True with ``source: kafka`` (the batch itself finds out)."""
        params = params or {}
        if params.get("source") == "kafka":
            print("source is kafka: the cdc_upsert task reads the new offsets")
            return True
        found = has_change_files(params["input_path"])
        print(f"{params['input_path']}: {'change files to apply' if found else 'no change files'}")
        return found

    upsert = AcidflowSparkSubmitOperator(
        task_id="cdc_upsert",
        subcommand="cdc-upsert",
        args=[
            "--input",
            "{{ '' if params.source == 'kafka' else params.input_path }}",
            "--kafka-bootstrap-servers",
            "{{ params.kafka_bootstrap_servers if params.source == 'kafka' else '' }}",
            "--kafka-source",
            "{{ params.kafka_source }}",
            "--kafka-topics",
            "{{ params.kafka_topics | join(',') }}",
            "--kafka-topic-pattern",
            "{{ params.kafka_topic_pattern }}",
            "--kafka-transaction-topic",
            "{{ params.kafka_transaction_topic }}",
            "--starting-offsets",
            "{{ params.kafka_starting_offsets }}",
            "--max-offsets",
            "{{ params.kafka_max_offsets }}",
            "--max-batches",
            "{{ params.kafka_max_batches }}",
            "--min-bad-records",
            "{{ params.kafka_min_bad_records }}",
            "--kafka-value-format",
            "{{ params.kafka_value_format }}",
            "--schema-registry-url",
            "{{ params.kafka_schema_registry_url }}",
            "--input-format",
            "{{ params.format }}",
            "--tables-config",
            "{{ params.tables_config }}",
            "--target-db",
            "{{ params.target_db }}",
            "--auto-create={{ params.auto_create }}",
            "--schema-drift",
            "{{ params.schema_drift }}",
            "--quarantine-threshold",
            "{{ params.quarantine_threshold }}",
            "--tables",
            "{{ params.tables | join(',') }}",
        ],
    )
    validate = AcidflowSparkSubmitOperator(
        task_id="validate",
        subcommand="validate",
        args=["--tables-config", "{{ params.tables_config }}", "--db", "{{ params.target_db }}"],
    )
    pull() >> pending() >> upsert >> validate
