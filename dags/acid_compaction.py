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

import json
from datetime import datetime, timezone

from acidflow_common import AcidflowSparkSubmitOperator, cli_task
from acidflow_ops import compaction_schedule, default_args
from airflow.sdk import DAG, Param, task

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
        "table_filter": Param("", type="string",
                              description="fnmatch pattern of tables, e.g. 'pgbench.*' (empty: all)"),
        "dry_run": Param(False, type="boolean", description="print the plan, queue nothing"),
    },
    doc_md=__doc__,
) as dag:
    initiate = cli_task(
        "initiate",
        "jobs/submit.py compact --initiate {% if params.dry_run %}--dry-run {% endif %}"
        "--table-filter '{{ params.table_filter }}'",
        do_xcom_push=True,
    )

    @task
    def worker_args(queued: str) -> list[list[str]]:
        """``compact --worker --id N`` arguments for each queued id (last stdout line)."""
        return [["--worker", "--id", str(i)] for i in json.loads(queued or "[]")]

    workers = AcidflowSparkSubmitOperator.partial(task_id="worker", subcommand="compact") \
        .expand(args=worker_args(initiate.output))
    clean = cli_task(
        "clean",
        "{% if params.dry_run %}-c 'print(\"dry run: nothing to clean\")'"
        "{% else %}jobs/submit.py clean{% endif %}",
        trigger_rule="all_done",
    )
    workers >> clean
