"""Commit-time write-set conflict detection (Hive TxnHandler.commitTxn, HIVE-13395)."""
from __future__ import annotations

import pytest

from acidflow.catalog import WriteConflictError, TxnAbortedError


def _writer(catalog, table, partition, operation):
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, table)
    catalog.add_component(txn, table, partition, operation)
    return txn


def test_concurrent_deletes_in_same_partition_conflict(catalog, tables):
    t1 = _writer(catalog, "sales.orders", "ds=2024-01-01", "delete")
    t2 = _writer(catalog, "sales.orders", "ds=2024-01-01", "delete")
    catalog.acquire_lock(t2, "sales.orders", "ds=2024-01-01", "shared_write")
    c2 = catalog.commit_transaction(t2)  # first committer wins
    with pytest.raises(WriteConflictError) as err:
        catalog.commit_transaction(t1)
    e = err.value
    assert isinstance(e, TxnAbortedError)
    assert (e.txn_id, e.other_txn_id, e.other_commit_id) == (t1, t2, c2)
    assert (e.table, e.partition) == ("sales.orders", "ds=2024-01-01")
    for text in (f"txn {t1}", f"txn {t2}", "sales.orders", "ds=2024-01-01"):
        assert text in str(e)
    info = catalog.get_transaction(t1)
    assert info.state == "aborted" and "write conflict" in info.abort_reason
    assert catalog.valid_write_ids("sales.orders").aborted_write_ids == (
        info.write_ids["sales.orders"],)
    assert [r.txn_id for r in catalog.commit_records("sales.orders")] == [t2]
    with pytest.raises(TxnAbortedError):
        catalog.commit_transaction(t1)


def test_conflict_abort_releases_locks(catalog, tables):
    t1 = _writer(catalog, "sales.orders", "ds=1", "update")
    t2 = _writer(catalog, "sales.orders", "ds=1", "update")
    catalog.acquire_lock(t1, "sales.orders", "ds=1", "shared_write")
    catalog.commit_transaction(t2)
    with pytest.raises(WriteConflictError):
        catalog.commit_transaction(t1)
    assert catalog.list_locks() == []


def test_different_partitions_do_not_conflict(catalog, tables):
    t1 = _writer(catalog, "sales.orders", "ds=1", "delete")
    t2 = _writer(catalog, "sales.orders", "ds=2", "delete")
    catalog.commit_transaction(t2)
    catalog.commit_transaction(t1)


def test_different_tables_do_not_conflict(catalog, tables):
    t1 = _writer(catalog, "default.events", None, "delete")
    t2 = _writer(catalog, "sales.orders", None, "delete")
    catalog.commit_transaction(t2)
    catalog.commit_transaction(t1)


def test_inserts_never_conflict(catalog, tables):
    t1 = _writer(catalog, "sales.orders", "ds=1", "insert")
    t2 = _writer(catalog, "sales.orders", "ds=1", "insert")
    t3 = _writer(catalog, "sales.orders", "ds=1", "delete")
    catalog.commit_transaction(t3)
    catalog.commit_transaction(t2)
    catalog.commit_transaction(t1)  # insert after a committed delete: fine
    t4 = _writer(catalog, "sales.orders", "ds=1", "delete")
    t5 = _writer(catalog, "sales.orders", "ds=1", "insert")
    catalog.commit_transaction(t5)
    catalog.commit_transaction(t4)  # delete after a committed insert: fine


def test_sequential_writers_do_not_conflict(catalog, tables):
    t1 = _writer(catalog, "sales.orders", "ds=1", "delete")
    catalog.commit_transaction(t1)
    t2 = _writer(catalog, "sales.orders", "ds=1", "delete")  # opened after t1 committed
    catalog.commit_transaction(t2)


@pytest.mark.parametrize("first, second", [
    ("update", "delete"), ("delete", "update"), ("update", "update"),
    ("insert_overwrite", "update"), ("delete", "insert_overwrite"),
])
def test_update_delete_overwrite_conflict(catalog, tables, first, second):
    t_second = _writer(catalog, "sales.orders", "ds=1", second)
    t_first = _writer(catalog, "sales.orders", "ds=1", first)
    catalog.commit_transaction(t_first)
    with pytest.raises(WriteConflictError):
        catalog.commit_transaction(t_second)


def test_whole_table_component_conflicts_with_partitions(catalog, tables):
    t1 = _writer(catalog, "sales.orders", None, "delete")
    t2 = _writer(catalog, "sales.orders", "ds=7", "delete")
    catalog.commit_transaction(t2)
    with pytest.raises(WriteConflictError, match="ds=7"):
        catalog.commit_transaction(t1)
    t3 = _writer(catalog, "sales.orders", "ds=8", "update")
    t4 = _writer(catalog, "sales.orders", None, "update")
    catalog.commit_transaction(t4)
    with pytest.raises(WriteConflictError, match="ds=8"):
        catalog.commit_transaction(t3)


def test_unpartitioned_table_conflict(catalog, tables):
    t1 = _writer(catalog, "default.events", None, "update")
    t2 = _writer(catalog, "default.events", None, "delete")
    catalog.commit_transaction(t1)
    with pytest.raises(WriteConflictError, match="whole table"):
        catalog.commit_transaction(t2)


def test_conflict_in_one_table_aborts_the_whole_multi_table_txn(catalog, tables):
    multi = _writer(catalog, "default.events", None, "insert")
    catalog.allocate_write_id(multi, "sales.orders")
    catalog.add_component(multi, "sales.orders", "ds=1", "delete")
    other = _writer(catalog, "sales.orders", "ds=1", "delete")
    catalog.commit_transaction(other)
    with pytest.raises(WriteConflictError):
        catalog.commit_transaction(multi, {"default.events": {"rows_inserted": 1}})
    assert catalog.commit_records("default.events") == []
    assert catalog.valid_write_ids("default.events").aborted_write_ids == (1,)
