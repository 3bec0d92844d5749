"""acid_ingest: load each data interval's landing files into its tables, once.

One mapped spark-submit ``ingest`` task per table (a Great Expectations gate on the staged rows
runs before commit), then spark-submit ``validate`` on the loaded tables. The ``mode`` param:

* ``overwrite`` (the default) replaces the interval's partition (INSERT OVERWRITE); the batch id
  is ``ingest:<table>:<interval>:<digest of the files' checksums>``: a rerun with the same files
  is skipped, changed files replace the partition again.
* ``append`` inserts (INSERT INTO); into a table with a primary key it refuses keys already
  stored or repeated in the files (nothing applied).
* ``upsert`` (keyed tables) updates stored keys and inserts new ones (split-update).

``append`` and ``upsert`` share the batch id ``ingest:<table>:<interval>``. A rerun of their
interval applies only the files that no committed batch of the interval applied (by SHA-256:
a file quarantined as unreadable -- a truncated ``.gz`` of a copy in progress -- and fixed
since, or a file that arrived late) as a follow-up batch ``ingest:<table>:<interval>:+<n>``;
with no such file it is skipped, and a file applied before and changed since is reported, not
applied again (rerun with ``overwrite`` to reload). So retries, reruns and backfills
(``airflow backfill create --dag-id acid_ingest --from-date ... --to-date ...``) never apply a
file twice.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, AssetAlias, Param, task

from acidflow_airflow.config import include
from acidflow_airflow.connect import spark_params
from acidflow_airflow.notifiers import default_args
from acidflow_airflow.operator import TABLES_ALIAS, AcidflowSparkSubmitOperator

with DAG(
    dag_id="acid_ingest",
    description="Daily batch ingest of landing files (CSV / JSON lines / Parquet) per data interval",
    schedule="@daily",
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=2,
    default_args=default_args(),
    tags=["acidflow", "ingest"],
    params={
        "tables": Param(
            ["sales.orders"],
            type="array",
            minItems=1,
            items={"type": "string", "pattern": "^[a-z0-9_]+\\.[a-z0-9_]+$"},
            description="tables to load (db.table)",
        ),
        "path_template": Param(
            include("sample_data", "ingest", "{table}", "{ds}"),
            type="string",
            minLength=1,
            description="landing path; {table} and {ds} are filled in",
        ),
        "format": Param("csv", enum=["csv", "jsonl", "parquet"]),
        "mode": Param(
            "overwrite",
            enum=["overwrite", "append", "upsert"],
            description="append refuses keys already stored; upsert updates them",
        ),
        "partition_column": Param(
            "ds", type="string", description="partition column that takes the interval's ds"
        ),
        "tables_config": Param(
            include("tables"),
            type="string",
            description="YAML definitions used to create missing tables",
        ),
        "quarantine_threshold": Param(0.01, type="number", minimum=0, maximum=1),
        **spark_params(),  # spark-submit or a Spark Connect server per run
    },
    doc_md=__doc__,
) as dag:

    @task
    def ingest_args(params=None, ds=None, data_interval_start=None, data_interval_end=None):
        """One spark-submit argument list per table for this data interval."""
        interval = f"{data_interval_start.isoformat()}/{data_interval_end.isoformat()}"
        return [
            [
                "--table",
                t,
                "--path",
                params["path_template"].format(table=t, ds=ds),
                "--input-format",
                params["format"],
                "--data-interval",
                interval,
                "--mode",
                params["mode"],
                "--partition",
                f"{params['partition_column']}={ds}",
                "--tables-config",
                params["tables_config"],
                "--quarantine-threshold",
                str(params["quarantine_threshold"]),
            ]
            for t in params["tables"]
        ]

    @task
    def validate_args(params=None):
        """``validate`` arguments: every loaded table."""
        return [arg for t in params["tables"] for arg in ("--table", t)]

    loads = AcidflowSparkSubmitOperator.partial(
        task_id="ingest", subcommand="ingest", outlets=[AssetAlias(TABLES_ALIAS)]
    ).expand(args=ingest_args())
    validate = AcidflowSparkSubmitOperator(
        task_id="validate", subcommand="validate", args=validate_args()
    )
    loads >> validate
