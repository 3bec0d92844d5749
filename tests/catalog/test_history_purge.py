"""The catalog's history stays bounded: the cleaner's purges (commit records beyond history
retention, completed components, superseded tombstones, aborted batch claims) delete what no
reader, writer or rerun needs and keep what they do."""

from __future__ import annotations

import pytest

from acidflow.catalog import BatchAlreadyAppliedError


def commit_one(catalog, table="sales.orders", partition="ds=1", operation="insert") -> int:
    txn = catalog.open_transaction()
    w = catalog.allocate_write_id(txn, table)
    catalog.add_component(txn, table, partition, operation)
    catalog.commit_transaction(txn)
    return w


def test_commit_records_before_the_oldest_retained_state_go(catalog, tables):
    wids = [commit_one(catalog) for _ in range(30)]
    assert catalog.purge_commit_records("sales.orders", 0) == 0  # 0 = the whole history
    assert catalog.purge_commit_records("sales.orders", 26) == 25
    assert [r.write_id for r in catalog.commit_records("sales.orders")] == wids[25:]
    # time travel orders commits by the transactions, which stay
    v = catalog.valid_write_ids("sales.orders", as_of_write_id=12)
    assert (v.high_watermark, v.invalid_write_ids) == (12, ())
    assert catalog.purge_commit_records("sales.orders", 26) == 0
    assert catalog.purge_commit_records("default.events", 3) == 0  # other tables untouched


def test_a_live_readers_snapshot_keeps_its_records(catalog, tables):
    for _ in range(5):
        commit_one(catalog)
    reader = catalog.register_reader("sales.orders", agent_info="long read")
    for _ in range(5):
        commit_one(catalog)
    assert catalog.purge_commit_records("sales.orders", 10) == 4
    assert [r.write_id for r in catalog.commit_records("sales.orders")] == list(range(5, 11))
    catalog.unregister_reader(reader.reader_id)
    assert catalog.purge_commit_records("sales.orders", 10) == 5
    assert [r.write_id for r in catalog.commit_records("sales.orders")] == [10]


def test_completed_components_keep_the_initiators_answer(catalog, tables):
    for _ in range(10):
        commit_one(catalog, partition="ds=1")
        commit_one(catalog, partition="ds=2")
    before = catalog.compaction_candidates()
    assert catalog.purge_completed_components() == 18
    assert catalog.compaction_candidates() == before
    assert catalog.purge_completed_components() == 0


def test_superseded_and_aborted_tombstones_go(catalog, tables):
    for pos in ("0001", "0003", "0002"):
        txn = catalog.open_transaction()
        catalog.allocate_write_id(txn, "sales.orders")
        catalog.add_tombstones(txn, "sales.orders", [('{"id":1}', pos), ('{"id":2}', pos)])
        catalog.commit_transaction(txn)
    bad = catalog.open_transaction()
    catalog.add_tombstones(bad, "sales.orders", [('{"id":1}', "0009")])
    catalog.abort_transaction(bad)
    want = {'{"id":1}': "0003", '{"id":2}': "0003"}
    assert catalog.tombstones("sales.orders", list(want)) == want
    assert catalog.purge_tombstones() == 5  # two superseded per key, one aborted
    assert catalog.tombstones("sales.orders", list(want)) == want
    assert catalog.purge_tombstones() == 0


def test_aborted_batch_claims_go_and_applied_batches_stay_applied(catalog, tables):
    done = catalog.open_transaction()
    catalog.register_batch(done, "cdc:file-1", "cdc", source="f1")
    catalog.commit_transaction(done)
    failed = catalog.open_transaction()
    catalog.register_batch(failed, "cdc:file-2", "cdc", source="f2")
    catalog.abort_transaction(failed)
    assert catalog.purge_batches() == 1
    assert catalog.get_batch("cdc:file-2") is None  # not applied, as before
    rerun = catalog.open_transaction()
    with pytest.raises(BatchAlreadyAppliedError):  # exactly-once: the rerun is refused
        catalog.register_batch(rerun, "cdc:file-1", "cdc", source="f1")
    catalog.abort_transaction(rerun)
    again = catalog.open_transaction()
    catalog.register_batch(again, "cdc:file-2", "cdc", source="f2")
    catalog.commit_transaction(again)
    assert catalog.get_batch("cdc:file-2").state == "committed"
