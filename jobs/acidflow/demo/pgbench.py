"""The main job on embedded defaults: real PostgreSQL change data (pgbench through a wal2json
slot, ``include/sample_data/pgbench``) applied to the four pgbench tables, then reconciled
against the source tables' saved final contents.

Two ways, same result:

* :func:`run_demo_airflow` (what ``make demo`` runs): ``airflow dags test acid_cdc`` (spark-submit
  ``cdc-upsert`` through ``SparkSubmitOperator``), then ``airflow dags test acid_compaction``
  (initiator, workers, cleaner), then reconciliation, on a private ``AIRFLOW_HOME``
  (``.airflow/``, SQLite) and Spark ``local[2]``;
* :func:`run_demo` in this process (``acidflow demo --direct``).

The ``acidflow demo`` command (``acidflow.cli.demo``) calls these and prints the summary.

Steps: register the tables of ``include/tables/pgbench.yaml`` (bucketed by primary key),
apply every landing file in LSN order as one batch each (``acidflow.cdc.apply``), reconcile every
table (``acidflow.quality.reconcile``), print a summary. A second run skips every batch and leaves
the tables identical.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import urlsplit

from acidflow.catalog import Catalog, SqlCatalog, TableDef
from acidflow.cdc.apply import CdcOptions, apply_path
from acidflow.cdc.tables import with_position_column
from acidflow.demo.history import restore_and_rollback
from acidflow.demo.localairflow import DEFAULT_HOME, airflow_env, dags_test, migrate
from acidflow.quality.reconcile import reconcile
from acidflow.read.table import acid_state_of
from acidflow.sources.postgres.snapshot import SavedSource
from acidflow.tables_config import load_tables_config

if TYPE_CHECKING:  # annotations only: the Airflow demo path never starts a JVM here
    from pyspark.sql import SparkSession

    from acidflow.catalog.hms.catalog import HiveMetastoreCatalog

REPO = Path(__file__).resolve().parents[3]
SAMPLE_DIR = REPO / "include" / "sample_data" / "pgbench"
TABLES_YAML = REPO / "include" / "tables" / "pgbench.yaml"


@dataclass
class DemoSummary:
    """What the demo did.

    Attributes:
        batches: :class:`acidflow.cdc.apply.BatchReport` per landing file.
        tables: per table ``{rows, high_watermark, deltas, delete_deltas, matches,
            differing_keys}``.
        seconds: wall time.
    """

    batches: list[Any] = field(default_factory=list)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    compactions: list[Any] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    history: list[str] = field(default_factory=list)  # restore + rollback lines
    history_ok: bool = True  # ... and their reconciliations

    @property
    def ok(self) -> bool:
        """Every table reconciled exactly."""
        return (
            bool(self.tables)
            and all(t["matches"] for t in self.tables.values())
            and self.history_ok
        )


def run_demo(
    spark: SparkSession,
    catalog: Catalog,
    sample_dir: Path = SAMPLE_DIR,
    tables_yaml: Path = TABLES_YAML,
) -> DemoSummary:
    """Apply the sample batches and reconcile (see module docstring).

    Raises:
        FileNotFoundError: no sample data; any batch error (its transaction is aborted).
    """
    t0 = time.monotonic()
    tables = load_tables_config(tables_yaml)
    for tdef in tables.values():
        catalog.create_table(with_position_column(tdef), if_not_exists=True)
    out = DemoSummary()
    out.batches = apply_path(
        spark,
        catalog,
        str(sample_dir / "landing"),
        CdcOptions(fmt="wal2json", tables=tables, target_db="pgbench"),
    )
    restore_and_rollback(catalog, sample_dir, out)
    reconcile_tables(spark, catalog, tables, sample_dir, out)
    out.seconds = time.monotonic() - t0
    return out


def reconcile_tables(
    spark: SparkSession | None,
    catalog: Catalog,
    tables: dict[str, TableDef],
    sample_dir: Path,
    out: DemoSummary,
) -> None:
    """Reconcile each table with its saved source contents into ``out.tables``.

    Args:
        spark: a SparkSession, or ``None`` to read with pyarrow in this process.
        tables: source table name -> its definition (``load_tables_config``).
        sample_dir: holds the saved final contents of each source table.
    """
    for source, tdef in sorted(tables.items()):
        res = reconcile(spark, catalog, tdef.name, SavedSource.from_dir(sample_dir, source))
        valid = catalog.valid_write_ids(tdef.name)
        state = acid_state_of(catalog.get_table(tdef.name).location, valid)
        out.tables[tdef.name] = {
            "rows": res.table_rows,
            "source_rows": res.source_rows,
            "high_watermark": valid.high_watermark,
            "base": state.base.name if state.base else "",
            "deltas": sum(1 for d in state.deltas if not d.is_delete),
            "delete_deltas": sum(1 for d in state.deltas if d.is_delete),
            "matches": res.matches,
            "differing_keys": res.differing_keys,
            "first_differing_keys": [str(k) for k in res.first_differing_keys[:3]],
        }


def _last_json(text: str, key: str) -> Any:
    """The last JSON object in ``text`` that has ``key`` (a job's summary line)."""
    for line in reversed(text.splitlines()):
        i = line.find("{" + json.dumps(key))
        while i >= 0:
            try:
                obj, _ = json.JSONDecoder().raw_decode(line[i:])
                return obj
            except ValueError:
                i = line.find("{" + json.dumps(key), i + 1)
    return None


#: the Airflow connection (type ``spark_connect``) of the demo's Spark Connect server
CONNECT_CONN_ID = "acidflow_spark_connect"


def connect_connection_env(url: str, conn_id: str = CONNECT_CONN_ID) -> dict[str, str]:
    """``AIRFLOW_CONN_<ID>`` defining an Airflow connection of type ``spark_connect`` for the
    server at ``url`` (``sc://host:port``), as ``SparkConnectHook`` reads it.

    Raises:
        ValueError: ``url`` is not ``sc://host:port`` (names it).
    """
    parts = urlsplit(url)
    if parts.scheme != "sc" or not parts.hostname or not parts.port:
        raise ValueError(f"a Spark Connect URL is sc://host:port, got {url!r}")
    value = {"conn_type": "spark_connect", "host": parts.hostname, "port": parts.port}
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(value)}


def run_demo_airflow(
    catalog: Catalog,
    *,
    airflow_home: Path | None = None,
    sample_dir: Path = SAMPLE_DIR,
    tables_yaml: Path = TABLES_YAML,
    compaction: bool = True,
    spark_remote: str | None = None,
) -> DemoSummary:
    """The demo through Airflow (see module docstring): ``acid_cdc`` then ``acid_compaction``
    with ``airflow dags test``, then reconciliation with pyarrow in this process.

    With ``spark_remote`` (``sc://host:port``) the DAG runs' Spark tasks use that Spark Connect
    server (``spark_mode=connect``, the Airflow connection :data:`CONNECT_CONN_ID`) instead
    of spark-submit (:mod:`acidflow_airflow.connect`).

    Raises:
        RuntimeError: a DAG run did not succeed (the message holds the end of its output).
        TypeError: ``catalog`` is neither a :class:`SqlCatalog` nor a
            :class:`HiveMetastoreCatalog` (the DAG runs get its URL).
    """
    if isinstance(catalog, SqlCatalog):
        url = catalog.url.render_as_string(hide_password=False)
    elif _is_metastore_catalog(catalog):
        url = catalog.job_url()
    else:
        raise TypeError(
            f"the Airflow demo hands its DAG runs a catalog URL; got a {type(catalog).__name__}"
        )
    t0 = time.monotonic()
    env = airflow_env(
        airflow_home or DEFAULT_HOME,
        warehouse=catalog.warehouse,
        extra={"ACIDFLOW_CATALOG_URL": url},
    )
    migrate(env)
    spark_conf: dict[str, Any] = {}
    if spark_remote:
        env.update(connect_connection_env(spark_remote))
        spark_conf = {"spark_mode": "connect", "spark_connect_conn_id": CONNECT_CONN_ID}
    out = DemoSummary()
    runs: list[tuple[str, dict[str, Any]]] = [
        (
            "acid_cdc",
            {
                "source": "landing",
                "format": "wal2json",
                "input_path": str(sample_dir / "landing"),
                "tables_config": str(tables_yaml),
                "target_db": "pgbench",
            },
        )
    ]
    if compaction:
        runs.append(("acid_compaction", {"table_filter": "pgbench.*", "dry_run": False}))
    for dag_id, conf in runs:
        t = time.monotonic()
        r = dags_test(dag_id, env, conf={**conf, **spark_conf})
        text = r.stdout + r.stderr
        ok = r.returncode == 0 and "state=success" in text
        out.steps.append({"dag_id": dag_id, "ok": ok, "seconds": time.monotonic() - t})
        if not ok:
            raise RuntimeError(
                f"airflow dags test {dag_id} failed (rc {r.returncode}):\n" + text[-4000:]
            )
        if dag_id == "acid_cdc":
            summary = _last_json(text, "batches") or {"batches": []}
            out.batches = [SimpleNamespace(**b) for b in summary["batches"]]
    if compaction:
        out.compactions = [c for c in catalog.list_compactions() if c.table.startswith("pgbench.")]
    restore_and_rollback(catalog, sample_dir, out)
    reconcile_tables(None, catalog, load_tables_config(tables_yaml), sample_dir, out)
    out.seconds = time.monotonic() - t0
    return out


def _is_metastore_catalog(catalog: Catalog) -> TypeGuard[HiveMetastoreCatalog]:
    """Whether ``catalog`` is a :class:`HiveMetastoreCatalog`, without importing the metastore
    backend (it needs the ``hms`` extra): such a catalog exists only once its module is loaded."""
    module = sys.modules.get("acidflow.catalog.hms.catalog")
    return module is not None and isinstance(catalog, module.HiveMetastoreCatalog)
