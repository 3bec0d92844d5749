"""Key conflicts with real parts (Spark, ORC files, a SQLite catalog): racing inserts of the same
new primary keys, snapshot isolation of a transaction's reads, and the CDC job's retry after a lost
write-set race."""

from __future__ import annotations

import collections
import json
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef, WriteConflictError
from acidflow.cdc import apply as cdc_apply
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def _accounts(catalog, name="default.accounts", **kw):
    kw.setdefault("num_buckets", 2)
    return catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "bigint"), Column("v", "string")],
            primary_key=["id"],
            **kw,
        )
    )


def _arrow(rows):
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[1] for r in rows], pa.string()),
        }
    )


def _rows(catalog, name="default.accounts", **kw):
    return sorted(
        (r["id"], r["v"]) for r in reads.read_table(None, catalog, name, **kw).to_pylist()
    )


def _dup_keys(rows):
    return {k: n for k, n in collections.Counter(k for k, _ in rows).items() if n > 1}


@pytest.mark.parametrize("path", ["spark", "arrow"])
def test_racing_upserts_of_new_keys_do_not_duplicate(spark, catalog, path):
    """Two transactions that overlap in time upsert the same *new* keys. Old code: both committed
    and the table held two live rows per key. Now the second committer fails with WriteConflictError
    naming the table and key hash, and nothing of it is visible."""
    _accounts(catalog, num_buckets=2 if path == "spark" else 0)
    first = [(1, "a1"), (2, "a2"), (3, "a3")]
    second = [(3, "b3"), (4, "b4")]

    def data(rows):
        return (
            spark.createDataFrame(rows, "id bigint, v string") if path == "spark" else _arrow(rows)
        )

    t1 = Transaction(catalog, heartbeat_s=0)
    t2 = Transaction(catalog, heartbeat_s=0)
    t1.begin()
    t2.begin()
    assert t1.upsert("default.accounts", data(first)).rows_inserted == 3
    assert t2.upsert("default.accounts", data(second)).rows_inserted == 2  # 3 is new for t2 too
    t1.commit()
    with pytest.raises(WriteConflictError) as err:
        t2.commit()
    assert err.value.table == "default.accounts" and err.value.key_hash is not None
    assert "duplicate primary key" in str(err.value)
    assert catalog.get_transaction(t2.txn_id).state == "aborted"
    rows = _rows(catalog)
    assert rows == first and _dup_keys(rows) == {}
    # the loser retries in a new transaction: key 3 is now an update, 4 a new key
    with Transaction(catalog, heartbeat_s=0) as t3:
        res = t3.upsert("default.accounts", data(second))
    assert (res.rows_inserted, res.rows_updated) == (1, 1)
    assert _rows(catalog) == [(1, "a1"), (2, "a2"), (3, "b3"), (4, "b4")]


def test_disjoint_new_keys_both_commit(spark, catalog):
    """The key-level check aborts only on a common key; two overlapping transactions inserting
    different new keys into the same buckets both commit (cheap: no data is scanned at commit, only
    the sorted key hashes of each bucket are intersected)."""
    _accounts(catalog)
    t1, t2 = Transaction(catalog, heartbeat_s=0), Transaction(catalog, heartbeat_s=0)
    t1.begin()
    t2.begin()
    t1.upsert("default.accounts", _arrow([(i, "x") for i in range(0, 100, 2)]))
    t2.upsert(
        "default.accounts",
        spark.createDataFrame([(i, "y") for i in range(1, 100, 2)], "id bigint, v string"),
    )
    t2.commit()
    t1.commit()
    rows = _rows(catalog)
    assert len(rows) == 100 and _dup_keys(rows) == {}


def test_unkeyed_table_inserts_never_conflict(spark, catalog):
    """Unkeyed tables keep Hive's semantics: concurrent inserts of equal rows both commit."""
    catalog.create_table(
        TableDef(name="default.log", columns=[Column("id", "bigint"), Column("v", "string")])
    )
    t1, t2 = Transaction(catalog, heartbeat_s=0), Transaction(catalog, heartbeat_s=0)
    t1.begin()
    t2.begin()
    for t in (t1, t2):
        t.insert("default.log", spark.createDataFrame([(1, "same")], "id bigint, v string"))
    t1.commit()
    t2.commit()
    assert _rows(catalog, "default.log") == [(1, "same"), (1, "same")]


def test_reads_in_one_transaction_use_the_snapshot_of_its_open(spark, catalog):
    """Snapshot isolation: two reads in one transaction (read_table with txn_id and the key lookup
    of an upsert) with a concurrent commit in between agree; the transaction sees its own writes.
    Old code took a fresh snapshot per read, so the second read saw the other commit."""
    _accounts(catalog)
    with Transaction(catalog, heartbeat_s=0) as t0:
        t0.upsert("default.accounts", _arrow([(1, "v1"), (2, "v1")]))
    reader = Transaction(catalog, heartbeat_s=0)
    reader.begin()
    first = _rows(catalog, txn_id=reader.txn_id)
    with Transaction(catalog, heartbeat_s=0) as other:  # commits after `reader` opened
        other.upsert("default.accounts", _arrow([(2, "v2"), (3, "v2")]))
    second = _rows(catalog, txn_id=reader.txn_id)
    assert first == second == [(1, "v1"), (2, "v1")]
    assert _rows(catalog) == [(1, "v1"), (2, "v2"), (3, "v2")]  # outside: the commit is seen
    # the key lookup of the transaction's upsert reads the same snapshot: key 3 is new for it
    res = reader.upsert("default.accounts", _arrow([(3, "r"), (4, "r")]))
    assert (res.rows_inserted, res.rows_updated) == (2, 0)
    assert _rows(catalog, txn_id=reader.txn_id) == [(1, "v1"), (2, "v1"), (3, "r"), (4, "r")]
    with pytest.raises(WriteConflictError):  # ... and it cannot commit a duplicate of key 3
        reader.commit()
    assert _dup_keys(_rows(catalog)) == {}


def _wal2json_file(path: Path, lsn: int, rows, table="public.accounts") -> str:
    """One wal2json v2 transaction inserting ``rows`` (id, v)."""
    lines = [{"action": "B", "lsn": f"0/{lsn:X}", "xid": lsn}]
    for i, (k, v) in enumerate(rows):
        lines.append(
            {
                "action": "I",
                "lsn": f"0/{lsn + 1 + i:X}",
                "xid": lsn,
                "schema": table.split(".")[0],
                "table": table.split(".")[1],
                "columns": [
                    {"name": "id", "type": "bigint", "value": k},
                    {"name": "v", "type": "text", "value": v},
                ],
                "pk": [{"name": "id", "type": "bigint"}],
            }
        )
    lines.append({"action": "C", "lsn": f"0/{lsn + 1 + len(rows):X}", "xid": lsn})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def test_cdc_batch_retries_after_losing_a_write_set_race(catalog, tmp_path, monkeypatch, caplog):
    """A CDC batch whose new keys another transaction inserted and committed while the batch was
    being written loses at commit (WriteConflictError), is re-planned against the new snapshot in a
    new transaction and applied (the racing key becomes an update), with a log line per attempt; the
    table holds each key once and the batch id counts as applied once."""
    _accounts(catalog)
    path = _wal2json_file(tmp_path / "wal2json_1.jsonl", 0x100, [(1, "cdc"), (2, "cdc")])
    racer_done = threading.Event()
    real_write = cdc_apply.write_arrow

    def racing_write(spark, txn, table, inserts, deletes, stats):
        result = real_write(spark, txn, table, inserts, deletes, stats)
        if not racer_done.is_set():  # another writer commits key 2 before the batch commits
            racer_done.set()
            with Transaction(catalog, heartbeat_s=0) as racer:
                racer.upsert("default.accounts", _arrow([(2, "racer"), (9, "racer")]))
        return result

    monkeypatch.setattr(cdc_apply, "write_arrow", racing_write)
    caplog.set_level("WARNING", logger="acidflow.cdc.apply")
    options = cdc_apply.CdcOptions(fmt="wal2json", quality_gate=False)
    report = cdc_apply.apply_file(None, catalog, path, options)
    assert report.status == "applied" and report.attempts == 2
    assert any(
        "write conflict" in r.getMessage() and "attempt 1" in r.getMessage() for r in caplog.records
    )
    stats = report.tables["default.accounts"]
    assert (stats["rows_inserted"], stats["rows_updated"]) == (1, 1)
    rows = _rows(catalog)
    assert rows == [(1, "cdc"), (2, "cdc"), (9, "racer")] and _dup_keys(rows) == {}
    aborted = [t for t in catalog.list_transactions(states=["aborted"])]
    assert len(aborted) == 1 and "write conflict" in aborted[0].abort_reason
    again = cdc_apply.apply_file(None, catalog, path, options)
    assert again.status == "skipped" and again.txn_id == report.txn_id


def test_cdc_batch_committed_by_a_concurrent_run_meanwhile_is_skipped(
    catalog, warehouse, tmp_path, monkeypatch
):
    """A lost race to a concurrent run of the same batch does not fail the job: another run (its own
    catalog client on the same database) commits the batch after this run's get_batch and before its
    claim; the claim's BatchAlreadyAppliedError is caught and the batch reported as skipped with the
    winner's transaction (old code: the job failed with BatchAlreadyAppliedError). The table holds
    the batch once."""
    _accounts(catalog)
    path = _wal2json_file(tmp_path / "wal2json_1.jsonl", 0x100, [(1, "cdc"), (2, "cdc")])
    options = cdc_apply.CdcOptions(fmt="wal2json", quality_gate=False)
    other = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    winner = []
    real_get_batch = catalog.get_batch

    def get_batch_then_lose_the_race(batch_id):
        seen = real_get_batch(batch_id)  # not applied yet ...
        if not winner:  # ... and now the other run applies it
            winner.append(cdc_apply.apply_file(None, other, path, options))
        return seen

    monkeypatch.setattr(catalog, "get_batch", get_batch_then_lose_the_race)
    report = cdc_apply.apply_file(None, catalog, path, options)
    (won,) = winner
    assert won.status == "applied" and report.status == "skipped"
    assert report.txn_id == won.txn_id and report.tables["default.accounts"]["rows_inserted"] == 2
    rows = _rows(catalog)
    assert rows == [(1, "cdc"), (2, "cdc")] and _dup_keys(rows) == {}
    assert len(catalog.commit_records("default.accounts")) == 1


def test_commit_attempts_below_one_still_apply_the_batch(catalog, tmp_path, monkeypatch):
    """ACIDFLOW_CDC_COMMIT_ATTEMPTS <= 0 means one attempt (old code: the attempt loop never ran and
    apply_file hit an AssertionError; the module constant kept the 0)."""
    import os
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import acidflow.cdc.apply as a; print(a.MAX_COMMIT_ATTEMPTS)"],
        env={**os.environ, "ACIDFLOW_CDC_COMMIT_ATTEMPTS": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "1"
    _accounts(catalog)
    monkeypatch.setattr(cdc_apply, "MAX_COMMIT_ATTEMPTS", 0)
    path = _wal2json_file(tmp_path / "wal2json_1.jsonl", 0x100, [(1, "a")])
    report = cdc_apply.apply_file(
        None, catalog, path, cdc_apply.CdcOptions(fmt="wal2json", quality_gate=False)
    )
    assert report.status == "applied" and report.attempts == 1
    assert _rows(catalog) == [(1, "a")]
