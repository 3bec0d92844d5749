"""Batch idempotence records: claimed by an open transaction, applied exactly when it commits."""

import pytest

from acidflow.catalog import BatchAlreadyAppliedError, BatchInProgressError


def test_batch_applied_only_when_its_transaction_commits(catalog):
    txn = catalog.open_transaction()
    info = catalog.register_batch(txn, "b1", "cdc", source="lsn 0/10-0/20", details={"n": 3})
    assert info.state == "open"
    assert catalog.get_batch("b1").state == "open"
    other = catalog.open_transaction()
    with pytest.raises(BatchInProgressError) as e:
        catalog.register_batch(other, "b1", "cdc")
    assert e.value.txn_id == txn
    catalog.commit_transaction(txn)
    got = catalog.get_batch("b1")
    assert (got.state, got.txn_id, got.details, got.source) == (
        "committed",
        txn,
        {"n": 3},
        "lsn 0/10-0/20",
    )
    assert got.committed_at is not None
    with pytest.raises(BatchAlreadyAppliedError) as e:
        catalog.register_batch(other, "b1", "cdc")
    assert e.value.txn_id == txn and "already applied" in str(e.value)


def test_aborted_batch_is_claimed_again(catalog):
    t1 = catalog.open_transaction()
    catalog.register_batch(t1, "b2", "ingest")
    catalog.abort_transaction(t1, "boom")
    assert catalog.get_batch("b2").state == "aborted"
    t2 = catalog.open_transaction()
    assert catalog.register_batch(t2, "b2", "ingest").txn_id == t2
    catalog.commit_transaction(t2)
    assert [b.batch_id for b in catalog.list_batches("ingest")] == ["b2"]
    assert catalog.list_batches("cdc") == []
    assert catalog.get_batch("nope") is None


def test_same_transaction_may_reclaim_and_bad_ids_rejected(catalog):
    t = catalog.open_transaction()
    catalog.register_batch(t, "b3", "cdc")
    catalog.register_batch(t, "b3", "cdc", details={"again": True})
    assert catalog.get_batch("b3").details == {"again": True}
    with pytest.raises(ValueError):
        catalog.register_batch(t, "", "cdc")
    with pytest.raises(ValueError):
        catalog.register_batch(t, "x" * 129, "cdc")


def test_tombstones_count_once_committed_and_largest_wins(catalog):
    from acidflow.catalog import Column, TableDef

    catalog.create_table(TableDef(name="s.t", columns=[Column("id", "int")]))
    assert catalog.tombstones("s.t", ["[1]"]) == {}
    t1 = catalog.open_transaction()
    catalog.add_tombstones(t1, "s.t", [("[1]", "0005"), ("[1]", "0007"), ("[2]", "0001")])
    assert catalog.tombstones("s.t", ["[1]", "[2]"]) == {}  # not committed yet
    catalog.commit_transaction(t1)
    t2 = catalog.open_transaction()
    catalog.add_tombstones(t2, "s.t", [("[1]", "0009")])
    catalog.abort_transaction(t2)
    assert catalog.tombstones("s.t", ["[1]", "[2]", "[3]"]) == {"[1]": "0007", "[2]": "0001"}
    t3 = catalog.open_transaction()
    catalog.add_tombstones(t3, "s.t", [("[1]", "0010")])
    catalog.commit_transaction(t3)
    assert catalog.tombstones("s.t", ["[1]"]) == {"[1]": "0010"}


def test_newest_batch_is_the_sources_last_commit(catalog):
    """A source's high-water mark: its newest committed record by commit order (an open or
    aborted claim, another source or another kind never counts)."""
    assert catalog.newest_batch("kafka", "orders") is None
    first, second = catalog.open_transaction(), catalog.open_transaction()
    catalog.register_batch(first, "k1", "kafka", source="orders", details={"end": 1})
    catalog.register_batch(second, "k2", "kafka", source="orders", details={"end": 2})
    catalog.commit_transaction(second)
    catalog.commit_transaction(first)  # opened first, committed last: the newest
    for kind, source in (("kafka", "other"), ("cdc", "orders")):
        t = catalog.open_transaction()
        catalog.register_batch(t, f"{kind}-{source}", kind, source=source)
        catalog.commit_transaction(t)
    late = catalog.open_transaction()
    catalog.register_batch(late, "k3", "kafka", source="orders")
    assert catalog.newest_batch("kafka", "orders").batch_id == "k1"
    catalog.abort_transaction(late, "crash")
    assert catalog.newest_batch("kafka", "orders").details == {"end": 1}
