"""acid_cdc: apply pending change batches to full-ACID tables.

pull (only when ``source`` is ``postgres``: ``acidflow cdc pull`` from a wal2json slot into the
landing path) -> cdc_upsert (spark-submit ``cdc-upsert``: one batch per landing file, one
transaction per batch, already-applied batches skipped; a Great Expectations gate on each
table's staged rows runs before commit and aborts the batch when it fails) -> validate
(spark-submit ``validate``: the tables' suites on the committed snapshot plus ACID invariants).
Safe to retry: batches are idempotent by id, the pull by LSN.
"""
from __future__ import annotations

from datetime import datetime, timezone

from acidflow_common import DEFAULT_ARGS, AcidflowSparkSubmitOperator, cli_task, include
from airflow.sdk import DAG, Param

with DAG(
    dag_id="acid_cdc",
    description="Apply CDC change batches (wal2json / Debezium / GoldenGate) to ACID tables",
    schedule=None,
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["acidflow", "cdc"],
    params={
        "source": Param("landing", enum=["landing", "postgres"],
                        description="landing: apply the files already in input_path; "
                                    "postgres: pull from a replication slot first"),
        "format": Param("wal2json", enum=["wal2json", "debezium", "goldengate"]),
        "input_path": Param(include("sample_data", "pgbench", "landing"), type="string",
                            minLength=1, description="landing directory of change files"),
        "tables_config": Param(include("tables"), type="string",
                               description="YAML file or directory of table definitions"),
        "target_db": Param("default", type="string", pattern="^[a-z0-9_]+$",
                           description="database for tables named after their source"),
        "tables": Param([], type="array", items={"type": "string"},
                        description="only these source tables (empty: all)"),
        "auto_create": Param(False, type="boolean",
                             description="register unknown tables from the stream"),
        "schema_drift": Param("add", enum=["add", "fail"]),
        "quarantine_threshold": Param(0.01, type="number", minimum=0, maximum=1),
        "postgres_conn_id": Param("", type="string",
                                  description="Airflow connection of the source database"),
        "slot": Param("acidflow", type="string", pattern="^[a-z0-9_]+$"),
    },
    doc_md=__doc__,
) as dag:
    pull = cli_task(
        "pull",
        "{% if params.source == 'postgres' %}"
        "-m acidflow.cli cdc pull --dsn \"$ACIDFLOW_PULL_DSN\" --slot {{ params.slot }} "
        "--landing {{ params.input_path }} --create-slot"
        "{% else %}-c 'print(\"source is the landing path: nothing to pull\")'{% endif %}",
        env_extra={"ACIDFLOW_PULL_DSN": "{% if params.source == 'postgres' %}"
                                        "{{ conn.get(params.postgres_conn_id).get_uri() }}"
                                        "{% endif %}"},
    )
    upsert = AcidflowSparkSubmitOperator(
        task_id="cdc_upsert",
        subcommand="cdc-upsert",
        args=["--input", "{{ params.input_path }}", "--format", "{{ params.format }}",
              "--tables-config", "{{ params.tables_config }}",
              "--target-db", "{{ params.target_db }}",
              "--auto-create={{ params.auto_create }}",
              "--schema-drift", "{{ params.schema_drift }}",
              "--quarantine-threshold", "{{ params.quarantine_threshold }}",
              "--tables", "{{ params.tables | join(',') }}"],
    )
    validate = AcidflowSparkSubmitOperator(
        task_id="validate",
        subcommand="validate",
        args=["--tables-config", "{{ params.tables_config }}", "--db", "{{ params.target_db }}"],
    )
    pull >> upsert >> validate
