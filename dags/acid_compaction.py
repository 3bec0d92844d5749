"""acid_compaction: Hive's compactor, nightly at 02:00.

initiate (the initiator: thresholds from the catalog and table properties; prints the queued
compaction ids as JSON) -> worker (one mapped spark-submit ``compact --worker --id N`` per
queued request: rewrite, verify, publish) -> clean (the cleaner: deletes obsolete and aborted
directories once no reader needs them). ``dry_run`` only prints the plan.

Schedule: ``[acidflow] compaction_schedule`` (cron, default ``0 2 * * *``); with
``[acidflow] compaction_on_writes = true`` also whenever a DAG changed a table (an asset event
of the alias ``acidflow-tables``; the compactor's own rewrites emit none).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, Param, task

from acidflow_airflow import compaction
from acidflow_airflow.config import job_env
from acidflow_airflow.connect import spark_params
from acidflow_airflow.notifiers import default_args
from acidflow_airflow.operator import AcidflowSparkSubmitOperator
from acidflow_airflow.schedules import compaction_schedule

with DAG(
    dag_id="acid_compaction",
    description="Initiator -> workers -> cleaner (Hive's compactor)",
    schedule=compaction_schedule(),
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=default_args(),
    tags=["acidflow", "compaction"],
    params={
        "table_filter": Param(
            "",
            type="string",
            description="fnmatch pattern of tables, e.g. 'pgbench.*' (empty: all)",
        ),
        "dry_run": Param(False, type="boolean", description="print the plan, queue nothing"),
        **spark_params(),  # spark-submit or a Spark Connect server per run
    },
    doc_md=__doc__,
) as dag:

    @task.bash(env=job_env(), append_env=True)
    def initiate(params: dict[str, Any] | None = None) -> str:
        """The initiator (``--dry-run`` with ``dry_run``); its last line, the queued ids, to XCom."""
        return compaction.initiate_command(params or {})

    @task
    def worker_args(queued: str) -> list[list[str]]:
        """``compact --worker --id N`` arguments for each queued id (last stdout line)."""
        return compaction.worker_args(queued)

    workers = AcidflowSparkSubmitOperator.partial(task_id="worker", subcommand="compact").expand(
        args=worker_args(initiate())
    )

    @task.bash(env=job_env(), append_env=True, trigger_rule="all_done")
    def clean(params: dict[str, Any] | None = None) -> str:
        """The cleaner; in a dry run it cleans nothing."""
        return compaction.clean_command(params or {})

    workers >> clean()
