"""The main job on real PostgreSQL change data.

* live: a private PostgreSQL 15 with wal2json, ``pgbench -i`` through a slot, then the TPC-B-like
  workload plus ``churn.sql`` (deletes, re-inserts, key changes, keyless deletes) with pulls in
  between; every pulled batch applied; every table reconciled exactly against the live source.
* the demo: the committed sample data applied and reconciled (what ``make demo`` runs), twice:
  the second run skips every batch and leaves the tables identical.
"""

import subprocess
import time

import pytest

from acidflow.catalog import SqlCatalog
from acidflow.cdc.apply import CdcOptions, apply_path
from acidflow.demo.pgbench import SAMPLE_DIR, TABLES_YAML, run_demo
from acidflow.quality.reconcile import reconcile
from acidflow.sources.postgres.pull import pull
from acidflow.sources.postgres.snapshot import PostgresSource
from acidflow.tables_config import load_tables_config
from tests.support.postgres import LOGICAL_SETTINGS, PostgresCluster, require_wal2json

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def pgbench(pg, *args, log):
    return subprocess.Popen(
        [
            pg.tool_path("pgbench"),
            "-h",
            pg.host,
            "-p",
            str(pg.port),
            "-U",
            "postgres",
            *args,
            "bench",
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


@pytest.mark.postgres
def test_live_pgbench_through_slot_applies_and_reconciles_exactly(spark, catalog, tmp_path):
    require_wal2json()
    landing, log = tmp_path / "landing", tmp_path / "pgbench.log"
    with PostgresCluster(settings=LOGICAL_SETTINGS, dbname="bench") as pg:
        dsn = pg.libpq_url("bench")
        pull(dsn, "acid", landing, create_slot=True)
        assert pgbench(pg, "-i", "-s", "1", "-I", "dtpgv", "-q", log=log).wait() == 0
        pg.execute("ALTER TABLE pgbench_history REPLICA IDENTITY FULL", "bench")
        pull(dsn, "acid", landing)
        common = ["-n", "-T", "6", "-j", "1", "--random-seed=7"]
        procs = [
            pgbench(pg, "-c", "2", "-R", "30", *common, log=log),
            pgbench(
                pg, "-c", "1", "-R", "10", "-f", str(SAMPLE_DIR / "churn.sql"), *common, log=log
            ),
        ]
        while any(p.poll() is None for p in procs):
            time.sleep(2)
            pull(dsn, "acid", landing)
        assert all(p.returncode == 0 for p in procs), log.read_text()[-2000:]
        pull(dsn, "acid", landing)
        deletes = int(pg.execute("SELECT count(*) FROM pgbench_history", "bench")[0][0])
        assert deletes > 0

        tables = load_tables_config(TABLES_YAML)
        reports = apply_path(
            spark, catalog, str(landing), CdcOptions(tables=tables, target_db="pgbench")
        )
        assert len(reports) >= 3 and all(r.status in ("applied", "empty") for r in reports)
        totals = {
            k: sum(r.tables.get("pgbench.pgbench_accounts", {}).get(k, 0) for r in reports)
            for k in ("rows_deleted", "rows_updated", "quarantined")
        }
        assert totals["rows_deleted"] > 0 and totals["rows_updated"] > 0
        assert sum(r.quarantined for r in reports) == 0
        for source, tdef in tables.items():
            res = reconcile(spark, catalog, tdef.name, PostgresSource(dsn, source))
            assert res.matches, (tdef.name, res.first_differing_keys[:3])
            assert res.table_rows == res.source_rows > 0


def test_demo_reconciles_and_a_second_run_skips_everything(spark, catalog):
    first = run_demo(spark, catalog)
    assert first.ok, first.tables
    assert [b.status for b in first.batches].count("skipped") == 0
    assert first.tables["pgbench.pgbench_accounts"]["rows"] == 100133
    hwm = {n: t["high_watermark"] for n, t in first.tables.items()}
    second = run_demo(spark, catalog)
    assert second.ok and {b.status for b in second.batches} == {"skipped"}
    assert {n: t["high_watermark"] for n, t in second.tables.items()} == hwm
