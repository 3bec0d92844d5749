"""Commit-time write-set conflict detection (Hive TxnHandler.commitTxn, HIVE-13395)."""

from __future__ import annotations

import pytest

from acidflow.catalog import TxnAbortedError, WriteConflictError


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
        info.write_ids["sales.orders"],
    )
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


@pytest.mark.parametrize(
    "first, second",
    [
        ("update", "delete"),
        ("delete", "update"),
        ("update", "update"),
        ("insert_overwrite", "update"),
        ("delete", "insert_overwrite"),
    ],
)
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


# -- key-level write set -----------------------------------------------------------------------


def _key_writer(catalog, keys, partition="ds=1", bucket=0, table="sales.orders"):
    from acidflow.format.keys import key_hashes

    txn = _writer(catalog, table, partition, "insert")
    catalog.add_write_keys(txn, table, {(partition, bucket): key_hashes([(k,) for k in keys])})
    return txn


def test_racing_inserts_of_the_same_new_key_conflict(catalog, tables):
    """Two overlapping transactions insert the same new primary key; the second committer is aborted
    with WriteConflictError naming table, partition, bucket and the key's hash, and nothing of it is
    committed."""
    from acidflow.format.keys import key_hash64

    t1 = _key_writer(catalog, [1, 2, 3])
    t2 = _key_writer(catalog, [3, 4])
    c1 = catalog.commit_transaction(t1)
    with pytest.raises(WriteConflictError) as err:
        catalog.commit_transaction(t2)
    e = err.value
    assert (e.txn_id, e.other_txn_id, e.other_commit_id) == (t2, t1, c1)
    assert (e.table, e.partition, e.bucket, e.key_hash) == (
        "sales.orders",
        "ds=1",
        0,
        key_hash64((3,)),
    )
    for text in (
        "sales.orders",
        "ds=1",
        "bucket 0",
        f"{key_hash64((3,)):#018x}",
        "duplicate primary key",
    ):
        assert text in str(e)
    assert catalog.get_transaction(t2).state == "aborted"
    assert [r.txn_id for r in catalog.commit_records("sales.orders")] == [t1]


def test_disjoint_keys_and_scopes_do_not_conflict(catalog, tables):
    """The key-level check is exact per key: different keys in one bucket, the same hash in another
    partition or bucket, and sequential writers all commit."""
    t1 = _key_writer(catalog, [1, 2])
    t2 = _key_writer(catalog, [5, 6])  # other keys, same scope
    t3 = _key_writer(catalog, [1], partition="ds=2")  # same key hash, other partition
    t4 = _key_writer(catalog, [2], bucket=3)  # same key hash, other bucket
    for t in (t1, t2, t3, t4):
        catalog.commit_transaction(t)
    t5 = _key_writer(catalog, [1, 2])  # opened after t1 committed
    catalog.commit_transaction(t5)


def test_whole_scope_and_any_bucket_overlap(catalog, tables):
    """A scope recorded whole (too many keys) conflicts with any key write in it; bucket -1
    (unbucketed / not narrowed) overlaps every bucket."""
    t1 = _writer(catalog, "sales.orders", "ds=1", "insert")
    catalog.add_write_keys(t1, "sales.orders", {("ds=1", 2): None})
    t2 = _key_writer(catalog, [9], bucket=2)
    catalog.commit_transaction(t1)
    with pytest.raises(WriteConflictError, match="recorded whole"):
        catalog.commit_transaction(t2)
    t3 = _key_writer(catalog, [7], partition=None, bucket=-1)
    t4 = _key_writer(catalog, [7], partition="ds=4", bucket=1)
    catalog.commit_transaction(t4)
    with pytest.raises(WriteConflictError):
        catalog.commit_transaction(t3)


def test_unkeyed_inserts_keep_hive_semantics(catalog, tables):
    """Inserts that record no keys (unkeyed tables) never conflict, as in Hive."""
    t1 = _writer(catalog, "default.events", None, "insert")
    t2 = _writer(catalog, "default.events", None, "insert")
    catalog.commit_transaction(t2)
    catalog.commit_transaction(t1)


def test_purge_write_sets_keeps_what_open_transactions_need(catalog, tables):
    """The housekeeper drops write-set entries no open transaction can conflict with, and the
    key entries of aborted transactions; an open transaction's conflict is still found."""
    old = _key_writer(catalog, [1])
    catalog.commit_transaction(old)  # nobody older is open
    waiting = _key_writer(catalog, [2])  # opened before `newer` commits
    newer = _key_writer(catalog, [2])
    catalog.commit_transaction(newer)
    dead = _key_writer(catalog, [3])
    catalog.abort_transaction(dead)
    purged = catalog.purge_write_sets()
    assert purged["write_set_keys"] == 2  # `old` (committed) and `dead`
    with pytest.raises(WriteConflictError):
        catalog.commit_transaction(waiting)
    assert catalog.purge_write_sets()["write_set_keys"] == 2  # now nobody is open
