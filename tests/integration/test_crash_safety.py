"""Crash safety: a writer process killed (SIGKILL) after writing its files but before commit
leaves the table's visible rows unchanged, and the housekeeper later aborts its transaction."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acidflow import reads
from acidflow.acid.transaction import Transaction
from acidflow.catalog import Column, SqlCatalog, TableDef

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WRITER = textwrap.dedent("""
    import os, signal, sys
    from acidflow.spark import get_spark
    from acidflow.catalog import SqlCatalog
    from acidflow.acid.transaction import Transaction
    spark = get_spark("crash-writer", master="local[1]", **{"spark.ui.enabled": "false"})
    catalog = SqlCatalog(sys.argv[1], warehouse=sys.argv[2])
    txn = Transaction(catalog, heartbeat_s=0)
    txn.begin()
    df = spark.createDataFrame([(i, "new") for i in range(100, 200)], "k int, v string")
    txn.upsert("victim", df)
    txn.delete("victim", spark.createDataFrame([(1,)], "k int"))
    print("TXN", txn.txn_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)   # dies with files written and the txn open
""")


def test_killed_writer_leaves_table_unchanged_and_is_aborted(spark, warehouse, tmp_path):
    url = f"sqlite:///{warehouse / '_acidflow_catalog.db'}"
    catalog = SqlCatalog(url, warehouse=str(warehouse), txn_timeout_s=2)
    catalog.create_table(TableDef(name="victim", columns=[Column("k", "int"), Column("v", "string")],
                                  primary_key=["k"], num_buckets=2))
    with Transaction(catalog) as txn:
        txn.insert("victim",
                      spark.createDataFrame([(i, "old") for i in range(10)], "k int, v string"))
    before = sorted(map(tuple, (r.values() for r in reads.read_table(None, catalog, "victim").to_pylist())))

    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.run([sys.executable, str(script), url, str(warehouse)],
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    txn_id = int([l for l in proc.stdout.splitlines() if l.startswith("TXN")][0].split()[1])

    tdir = Path(catalog.get_table("victim").location)
    written = sorted(p.name for p in tdir.iterdir())
    assert "delta_0000002_0000002_0000" in written and "delete_delta_0000002_0000002_0001" in written
    assert list((tdir / "delta_0000002_0000002_0000").glob("bucket_*"))

    # the dead writer's files are invisible: its write id is open
    assert catalog.get_transaction(txn_id).state == "open"
    after = sorted(map(tuple, (r.values() for r in reads.read_table(None, catalog, "victim").to_pylist())))
    assert after == before

    # the housekeeper aborts it once its heartbeat is older than the timeout
    time.sleep(2.5)
    aborted = catalog.abort_timed_out_transactions()
    assert txn_id in aborted
    assert catalog.get_transaction(txn_id).state == "aborted"
    valid = catalog.valid_write_ids("default.victim")
    assert 2 in valid.aborted_write_ids
    after = sorted(map(tuple, (r.values() for r in reads.read_table(None, catalog, "victim").to_pylist())))
    assert after == before
    # and the table keeps working: the next writer gets write id 3 and sees the old rows only
    with Transaction(catalog) as txn:
        res = txn.upsert("victim",
                            spark.createDataFrame([(1, "newer")], "k int, v string"))
    assert res.write_id == 3 and res.rows_updated == 1
    final = {r["k"]: r["v"] for r in reads.read_table(None, catalog, "victim").to_pylist()}
    assert final == {**{i: "old" for i in range(10)}, 1: "newer"}
