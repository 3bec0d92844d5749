"""acid_ingest: load each data interval's landing files into its tables, once.

One mapped spark-submit ``ingest`` task per table (a Great Expectations gate on the staged rows
runs before commit), then spark-submit ``validate`` on the loaded tables. ``--mode overwrite``
(the default) replaces
the interval's partition (INSERT OVERWRITE), ``append`` inserts; either way the batch id is per
(table, data interval), so retries, reruns and backfills (``airflow backfill create --dag-id
acid_ingest --from-date ... --to-date ...``) leave the tables as the scheduled runs did.
"""
from __future__ import annotations

from datetime import datetime, timezone

from acidflow_common import DEFAULT_ARGS, AcidflowSparkSubmitOperator, include
from airflow.sdk import DAG, Param, task

with DAG(
    dag_id="acid_ingest",
    description="Daily batch ingest of landing files (CSV / JSON lines / Parquet) per data interval",
    schedule="@daily",
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=2,
    default_args=DEFAULT_ARGS,
    tags=["acidflow", "ingest"],
    params={
        "tables": Param(["sales.orders"], type="array", minItems=1,
                        items={"type": "string", "pattern": "^[a-z0-9_]+\\.[a-z0-9_]+$"},
                        description="tables to load (db.table)"),
        "path_template": Param(include("sample_data", "ingest", "{table}", "{ds}"),
                               type="string", minLength=1,
                               description="landing path; {table} and {ds} are filled in"),
        "format": Param("csv", enum=["csv", "jsonl", "parquet"]),
        "mode": Param("overwrite", enum=["overwrite", "append", "upsert"],
                      description="append refuses keys already stored; upsert updates them"),
        "partition_column": Param("ds", type="string",
                                  description="partition column that takes the interval's ds"),
        "tables_config": Param(include("tables"), type="string",
                               description="YAML definitions used to create missing tables"),
        "quarantine_threshold": Param(0.01, type="number", minimum=0, maximum=1),
    },
    doc_md=__doc__,
) as dag:

    @task
    def ingest_args(params=None, ds=None, data_interval_start=None, data_interval_end=None):
        """One spark-submit argument list per table for this data interval."""
        interval = f"{data_interval_start.isoformat()}/{data_interval_end.isoformat()}"
        return [["--table", t, "--path", params["path_template"].format(table=t, ds=ds),
                 "--format", params["format"], "--data-interval", interval,
                 "--mode", params["mode"], "--partition", f"{params['partition_column']}={ds}",
                 "--tables-config", params["tables_config"],
                 "--quarantine-threshold", str(params["quarantine_threshold"])]
                for t in params["tables"]]

    @task
    def validate_args(params=None):
        """``validate`` arguments: every loaded table."""
        return [arg for t in params["tables"] for arg in ("--table", t)]

    loads = AcidflowSparkSubmitOperator.partial(task_id="ingest", subcommand="ingest") \
        .expand(args=ingest_args())
    validate = AcidflowSparkSubmitOperator(task_id="validate", subcommand="validate",
                                           args=validate_args())
    loads >> validate
