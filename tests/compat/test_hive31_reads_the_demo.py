"""The tables ``make demo`` writes (the CDC pgbench demo, ``acidflow.demo.pgbench.run_demo``: the
committed wal2json batches applied to the four pgbench tables, reconciled against the source)
read by Hive 3.1.3's own ACID reader: exactly acidflow's snapshot, ROW__IDs included, after the
batches (also at an older write id), after a minor compaction, after the cleaner, and after a
major compaction and clean. Same code path as ``make demo --direct`` (in this process, Spark
local[2]); ``make demo`` runs it through Airflow's DAGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.demo.pgbench import run_demo
from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = require_hive31_tools()
CFG = CompactorConfig(heartbeat_s=0.5)
TABLES = [
    "pgbench.pgbench_accounts",
    "pgbench.pgbench_branches",
    "pgbench.pgbench_history",
    "pgbench.pgbench_tellers",
]


def dirs(catalog, name: str) -> list[str]:
    root = Path(catalog.get_table(name).location)
    return sorted(p.name for p in root.iterdir() if not p.name.startswith((".", "_")))


def clean(catalog) -> None:
    # the demo's reconcile reads are lazy Spark reads: their reader registrations would hold
    # the cleaner until the heartbeat timeout (acidflow.read.table), though they are consumed
    report = cleaner.run_cleaner(catalog, reader_timeout_s=0)
    assert not report.waiting, report.waiting


def compact_all(spark, catalog, kind: str) -> None:
    for name in TABLES:
        info = initiator.request_compaction(catalog, name, None, kind)
        out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
        assert out is not None and out.state == "ready for cleaning", (name, out and out.report)


def test_hive31_reads_the_demo_tables_through_compaction(spark, catalog):
    summary = run_demo(spark, catalog)
    assert summary.ok, summary.tables
    assert sorted(summary.tables) == TABLES
    counts = {n: t["rows"] for n, t in summary.tables.items()}
    assert counts["pgbench.pgbench_accounts"] == 100133
    with Hive31Oracle(ARTIFACTS) as hive31:
        for name in TABLES:
            assert len(same_as_acidflow(hive31, catalog, name)) == counts[name]
            hwm = catalog.valid_write_ids(name).high_watermark
            assert (
                hwm > 2
                and any(d.startswith("delete_delta_") for d in dirs(catalog, name))
                or name == "pgbench.pgbench_history"
            )
            same_as_acidflow(hive31, catalog, name, as_of_write_id=hwm - 2)

        for name in TABLES:  # Hive's cleaner: no history retention (the demo keeps 10 commits)
            catalog.set_table_properties(
                name, {"acidflow.history.retain.commits": "0", "acidflow.history.retain.hours": "0"}
            )
        compact_all(spark, catalog, "minor")
        for name in TABLES:
            same_as_acidflow(hive31, catalog, name)
        clean(catalog)
        for name in TABLES:
            assert not any(d.endswith(("_0000", "_0001")) for d in dirs(catalog, name)), dirs(
                catalog, name
            )
            assert len(same_as_acidflow(hive31, catalog, name)) == counts[name]

        compact_all(spark, catalog, "major")
        for name in TABLES:
            same_as_acidflow(hive31, catalog, name)
        clean(catalog)
        for name in TABLES:
            hwm = catalog.valid_write_ids(name).high_watermark
            assert dirs(catalog, name) == [f"base_{hwm:07d}"]
            assert len(same_as_acidflow(hive31, catalog, name)) == counts[name]
        timings = hive31.timings
    print(
        f"Hive 3.1.3 reads of the demo tables: {len(timings)} reads,"
        f" {sum(r for r, _ in timings)} rows, {sum(ms for _, ms in timings)} ms in Hive"
    )
