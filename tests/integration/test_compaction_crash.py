"""Fault tests: a compactor worker SIGKILLed while writing, and a cleaner SIGKILLed in the middle
of its deletions, leave the table readable with the same rows; a rerun completes the work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from tests.support import acidtables as at

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKER = textwrap.dedent("""
    import os, signal, sys
    from acidflow.catalog import SqlCatalog
    from acidflow.format.orc import columnar
    from acidflow.compactor import worker
    from acidflow.compactor.config import CompactorConfig
    real = columnar.write_event_table
    calls = []
    def dying(*a, **kw):                      # first bucket file written, then killed mid-write
        out = real(*a, **kw)
        calls.append(out)
        if len(calls) == 1:
            print("KILL", a[1], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    columnar.write_event_table = dying
    catalog = SqlCatalog(sys.argv[1], warehouse=sys.argv[2])
    worker.run_worker(None, catalog, cq_id=int(sys.argv[3]), worker_id="doomed",
                      config=CompactorConfig(heartbeat_s=0))
    print("NOT KILLED", flush=True)
""")

CLEANER = textwrap.dedent("""
    import os, signal, sys
    from acidflow.catalog import SqlCatalog
    from acidflow.storage.fs import TableFS
    from acidflow.compactor import cleaner
    real = TableFS.delete
    calls = []
    def dying(self, path):
        if "/.cleaning_" in path and os.path.exists(path):
            calls.append(path)
            if len(calls) == 2:               # one dir gone, the second renamed, not deleted
                print("KILL", path, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        return real(self, path)
    TableFS.delete = dying
    catalog = SqlCatalog(sys.argv[1], warehouse=sys.argv[2])
    cleaner.run_cleaner(catalog)
    print("NOT KILLED", flush=True)
""")


def _run(tmp_path, script, *args):
    path = tmp_path / "victim.py"
    path.write_text(script)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[2])]
            + [p for p in [os.environ.get("PYTHONPATH")] if p]
        ),
    }
    proc = subprocess.run(
        [sys.executable, str(path), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.stdout, proc.stderr[-3000:])
    assert "KILL" in proc.stdout
    return proc


@pytest.fixture
def table(warehouse):
    url = f"sqlite:///{warehouse / '_acidflow_catalog.db'}"
    catalog = SqlCatalog(url, warehouse=str(warehouse), txn_timeout_s=300)
    catalog.create_table(
        TableDef(name="db.k", columns=[Column("id", "int"), Column("s", "string")])
    )
    from acidflow.format.bucketing import encode_bucket_property

    b0 = encode_bucket_property(0, 0)
    at.write(catalog, "db.k", {0: [(i, "a") for i in range(5)], 1: [(i, "b") for i in range(5, 9)]})
    at.write(catalog, "db.k", {0: [(i, "c") for i in range(9, 12)]}, [(1, b0, 0)])
    at.write(catalog, "db.k", {1: [(12, "d")]}, [(2, b0, 1)])
    yield url, catalog
    catalog.close()


def names(catalog):
    return sorted(p.name for p in Path(catalog.get_table("db.k").location).iterdir())


def test_worker_killed_while_writing_then_rerun(spark, table, tmp_path, warehouse):
    url, catalog = table
    before, before_names = at.rows(catalog, "db.k"), names(catalog)
    info = initiator.request_compaction(catalog, "db.k", None, "major")
    _run(tmp_path, WORKER, url, warehouse, info.id)
    entry = catalog.get_compaction(info.id)
    assert entry.state == "working" and entry.worker_id == "doomed"
    # readable, same rows; only a hidden temp dir was added
    assert at.rows(catalog, "db.k") == before
    assert names(catalog) == sorted(before_names + [f".compact_tmp_{info.id}"])
    # the dead worker stops heartbeating: its entry goes back to the queue, the rerun completes
    assert catalog.reclaim_dead_compactions(0) == [info.id]
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CompactorConfig(heartbeat_s=0))
    assert out.state == "ready for cleaning", out.report
    assert at.rows(catalog, "db.k") == before
    assert "base_0000003" in names(catalog) and f".compact_tmp_{info.id}" not in names(catalog)
    cleaner.run_cleaner(catalog)
    assert names(catalog) == ["base_0000003"]
    assert at.rows(catalog, "db.k") == before


def test_cleaner_killed_mid_delete_then_rerun(spark, table, tmp_path, warehouse):
    url, catalog = table
    before = at.rows(catalog, "db.k")
    info = initiator.request_compaction(catalog, "db.k", None, "minor")
    assert (
        worker.run_worker(
            spark, catalog, cq_id=info.id, config=CompactorConfig(heartbeat_s=0)
        ).state
        == "ready for cleaning"
    )
    _run(tmp_path, CLEANER, url, warehouse)
    assert catalog.get_compaction(info.id).state == "ready for cleaning"  # never succeeded early
    left = names(catalog)
    assert any(n.startswith(".cleaning_") for n in left)
    assert at.rows(catalog, "db.k") == before
    rep = cleaner.run_cleaner(catalog)
    assert catalog.get_compaction(info.id).state == "succeeded", rep.to_dict()
    assert names(catalog) == ["delete_delta_0000001_0000003", "delta_0000001_0000003"]
    assert at.rows(catalog, "db.k") == before
