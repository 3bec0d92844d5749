"""Crash safety: a writer process killed (SIGKILL) after writing its files but before commit
leaves the table's visible rows unchanged, and the housekeeper later aborts its transaction."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WRITER = textwrap.dedent("""
    import os, signal, sys
    from acidflow.spark import get_spark
    from acidflow.catalog import SqlCatalog
    from acidflow.engine.transaction import Transaction
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
    catalog.create_table(
        TableDef(
            name="victim",
            columns=[Column("k", "int"), Column("v", "string")],
            primary_key=["k"],
            num_buckets=2,
        )
    )
    with Transaction(catalog) as txn:
        txn.insert(
            "victim", spark.createDataFrame([(i, "old") for i in range(10)], "k int, v string")
        )
    before = sorted(
        map(tuple, (r.values() for r in reads.read_table(None, catalog, "victim").to_pylist()))
    )

    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.run(
        [sys.executable, str(script), url, str(warehouse)],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    txn_id = int(
        [line for line in proc.stdout.splitlines() if line.startswith("TXN")][0].split()[1]
    )

    tdir = Path(catalog.get_table("victim").location)
    written = sorted(p.name for p in tdir.iterdir())
    assert (
        "delta_0000002_0000002_0000" in written and "delete_delta_0000002_0000002_0001" in written
    )
    assert list((tdir / "delta_0000002_0000002_0000").glob("bucket_*"))

    # the dead writer's files are invisible: its write id is open
    assert catalog.get_transaction(txn_id).state == "open"
    after = sorted(
        map(tuple, (r.values() for r in reads.read_table(None, catalog, "victim").to_pylist()))
    )
    assert after == before

    # the housekeeper aborts it once its heartbeat is older than the timeout
    time.sleep(2.5)
    aborted = catalog.abort_timed_out_transactions()
    assert txn_id in aborted
    assert catalog.get_transaction(txn_id).state == "aborted"
    valid = catalog.valid_write_ids("default.victim")
    assert 2 in valid.aborted_write_ids
    after = sorted(
        map(tuple, (r.values() for r in reads.read_table(None, catalog, "victim").to_pylist()))
    )
    assert after == before
    # and the table keeps working: the next writer gets write id 3 and sees the old rows only
    with Transaction(catalog) as txn:
        res = txn.upsert("victim", spark.createDataFrame([(1, "newer")], "k int, v string"))
    assert res.write_id == 3 and res.rows_updated == 1
    final = {r["k"]: r["v"] for r in reads.read_table(None, catalog, "victim").to_pylist()}
    assert final == {**{i: "old" for i in range(10)}, 1: "newer"}


KILLED_MID_STATEMENT = textwrap.dedent("""
    import os, signal, sys
    from acidflow.spark import get_spark
    from acidflow.catalog import SqlCatalog
    from acidflow.engine import transaction
    from acidflow.engine.transaction import Transaction

    def die(*args, **kwargs):   # the statement's files are written, its epilogue is not
        print("TXN", txn.txn_id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    transaction.finish_dirs = die
    spark = get_spark("crash-writer", master="local[1]", **{"spark.ui.enabled": "false"})
    catalog = SqlCatalog(sys.argv[1], warehouse=sys.argv[2])
    txn = Transaction(catalog, heartbeat_s=0)
    txn.begin()
    txn.insert("victim", spark.createDataFrame([(i, "new") for i in range(100, 140)],
                                               "k int, v string"))
""")


def _fsck(catalog, table):
    from acidflow.compactor.fsck import fsck_table

    return {(f.kind, f.path): f for f in fsck_table(catalog, table)}


def test_fsck_classifies_a_killed_writers_dirs(spark, warehouse, tmp_path):
    """A writer killed (SIGKILL) inside a statement leaves a delta dir without
    ``_orc_acid_version``; fsck reports it as ``open`` while its transaction may still be alive, as
    ``aborted`` once it is silent past the timeout or aborted, and the same files under a write id
    the catalog never allocated as ``orphan`` -- never as a ``missing_metadata`` error;
    ``acidflow fsck`` exits 0; the cleaner removes the aborted dir."""
    from typer.testing import CliRunner

    from acidflow.cli import app
    from acidflow.compactor.cleaner import run_cleaner

    url = f"sqlite:///{warehouse / '_acidflow_catalog.db'}"
    catalog = SqlCatalog(url, warehouse=str(warehouse), txn_timeout_s=300)
    catalog.create_table(
        TableDef(
            name="victim",
            columns=[Column("k", "int"), Column("v", "string")],
            primary_key=["k"],
            num_buckets=2,
        )
    )
    with Transaction(catalog) as txn:
        txn.insert(
            "victim", spark.createDataFrame([(i, "old") for i in range(10)], "k int, v string")
        )
    script = tmp_path / "writer.py"
    script.write_text(KILLED_MID_STATEMENT)
    proc = subprocess.run(
        [sys.executable, str(script), url, str(warehouse)],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    txn_id = int(
        [line for line in proc.stdout.splitlines() if line.startswith("TXN")][0].split()[1]
    )
    tdir = Path(catalog.get_table("victim").location)
    killed = tdir / "delta_0000002_0000002_0000"
    assert list(killed.glob("bucket_*")) and not (killed / "_orc_acid_version").exists()
    # a partial file, as a kill during a flush leaves it
    victim_file = sorted(killed.glob("bucket_*"))[0]
    victim_file.write_bytes(victim_file.read_bytes()[:40])
    # the same leftovers under a write id this catalog never allocated (high watermark 2)
    shutil.copytree(killed, tdir / "delta_0000007_0000007_0000")

    found = _fsck(catalog, "victim")
    assert found[("open", killed.name)].severity == "info"
    assert f"transaction {txn_id}" in found[("open", killed.name)].detail
    assert found[("orphan", "delta_0000007_0000007_0000")].severity == "warning"
    assert not [f for f in found.values() if f.severity == "error"], found
    res = CliRunner().invoke(
        app,
        ["fsck", "default.victim", "--json"],
        env={"ACIDFLOW_CATALOG_URL": url, "ACIDFLOW_WAREHOUSE": str(warehouse)},
    )
    assert res.exit_code == 0, res.output
    assert "missing_metadata" not in res.output and '"orphan"' in res.output

    # silent longer than the timeout: a killed writer, the housekeeper will abort it
    time.sleep(2.2)
    short = SqlCatalog(url, warehouse=str(warehouse), txn_timeout_s=2)
    f = _fsck(short, "victim")[("aborted", killed.name)]
    assert f.severity == "info" and "housekeeper" in f.detail and str(txn_id) in f.detail

    # the cleaner runs the housekeeper, then removes the aborted dir (not the orphan)
    rep = run_cleaner(short)
    assert killed.name in rep.aborted["default.victim"]
    assert not killed.exists() and (tdir / "delta_0000007_0000007_0000").exists()
    found = _fsck(short, "victim")
    assert set(found) == {("orphan", "delta_0000007_0000007_0000")}
    assert sorted(r["k"] for r in reads.read_table(None, short, "victim").to_pylist()) == list(
        range(10)
    )
