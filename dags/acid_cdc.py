"""acid_cdc: apply pending change batches to full-ACID tables, every 5 minutes.

pull (only when ``source`` is ``postgres``: ``acidflow cdc pull`` from a wal2json slot into the
landing path, the DSN from the connection ``postgres_conn_id``; a success doing nothing
otherwise) -> pending (a short-circuit: with no change file in the landing path the run ends
here, a success with the rest skipped) -> cdc_upsert (spark-submit ``cdc-upsert``: one batch per
landing file, one transaction per batch, already-applied batches skipped; a Great Expectations
gate on each table's staged rows runs before commit and aborts the batch when it fails) ->
validate (spark-submit ``validate``: the tables' suites on the committed snapshot plus ACID
invariants). Safe to retry: batches are idempotent by id, the pull by LSN.

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
            enum=["landing", "postgres"],
            description="landing: apply the files already in input_path; "
            "postgres: pull from a replication slot first",
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
    },
    doc_md=__doc__,
) as dag:

    @task
    def pull(params: dict[str, Any] | None = None) -> str:
        """``acidflow cdc pull`` when ``source`` is ``postgres``; nothing otherwise."""
        return pull_changes(params or {})

    @task.short_circuit
    def pending(params: dict[str, Any] | None = None) -> bool:
        """True when the landing path holds change files (else the run ends: a success)."""
        params = params or {}
        found = has_change_files(params["input_path"])
        print(f"{params['input_path']}: {'change files to apply' if found else 'no change files'}")
        return found

    upsert = AcidflowSparkSubmitOperator(
        task_id="cdc_upsert",
        subcommand="cdc-upsert",
        args=[
            "--input",
            "{{ params.input_path }}",
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
