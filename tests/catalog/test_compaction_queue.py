"""Compaction queue, history retention and reader registrations on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from acidflow.catalog import CompactionStateError
from acidflow.catalog.sql.db import utcnow as _utcnow
from tests.catalog.conftest import BACKENDS  # noqa: F401  (backend fixture parametrises)


def test_enqueue_dedupes_and_lists(catalog, tables):
    sales, events = tables
    a = catalog.enqueue_compaction(sales, "ds=2024-01-01", "major", requester="alice")
    assert a.state == "initiated" and a.requester == "alice" and a.partition == "ds=2024-01-01"
    again = catalog.enqueue_compaction(sales, "ds=2024-01-01", "minor")
    assert again.id == a.id  # Hive: not accepted twice
    b = catalog.enqueue_compaction(events, None, "minor")
    rec = catalog.enqueue_compaction(events, None, "major", state="did not initiate", error="x")
    assert rec.state == "did not initiate" and rec.ended_at is not None
    assert [c.id for c in catalog.list_compactions()] == [a.id, b.id, rec.id]
    assert [c.id for c in catalog.list_compactions(events, ["initiated"])] == [b.id]
    with pytest.raises(ValueError):
        catalog.enqueue_compaction(events, None, "medium")
    with pytest.raises(ValueError):
        catalog.list_compactions(states=["bogus"])


def test_claim_heartbeat_ready_succeeded(catalog, tables):
    _, events = tables
    e = catalog.enqueue_compaction(events, None, "major")
    w = catalog.claim_compaction("host-1-0")
    assert w.id == e.id and w.state == "working" and w.worker_id == "host-1-0" and w.txn_id
    assert catalog.get_transaction(w.txn_id).state == "open"
    assert catalog.claim_compaction("host-2-0") is None  # nothing else claimable
    catalog.heartbeat_compaction(e.id)
    catalog.update_compaction(e.id, highest_write_id=7, details={"k": 1})
    commit_id = catalog.mark_compaction_ready_for_cleaning(e.id, 7, {"rows": 3})
    r = catalog.get_compaction(e.id)
    assert r.state == "ready for cleaning" and r.commit_id == commit_id > w.txn_id
    assert r.details == {"k": 1, "rows": 3} and r.highest_write_id == 7
    assert catalog.get_transaction(w.txn_id).state == "committed"
    with pytest.raises(CompactionStateError):
        catalog.heartbeat_compaction(e.id)
    catalog.mark_compaction_succeeded(e.id)
    assert catalog.get_compaction(e.id).state == "succeeded"
    assert catalog.get_compaction(e.id).ended_at is not None


def test_failed_aborts_txn_and_one_worker_per_partition(catalog, tables):
    sales, _ = tables
    a = catalog.enqueue_compaction(sales, "ds=1", "major")
    w = catalog.claim_compaction("w1", a.id)
    assert catalog.enqueue_compaction(sales, "ds=1", "minor").id == a.id  # working: not twice
    other = catalog.enqueue_compaction(sales, "ds=2", "minor")
    assert catalog.claim_compaction("w2").id == other.id  # another partition runs in parallel
    catalog.mark_compaction_failed(a.id, "boom")
    catalog.mark_compaction_failed(a.id, "again")  # idempotent
    f = catalog.get_compaction(a.id)
    assert f.state == "failed" and f.error == "boom"
    assert catalog.get_transaction(w.txn_id).state == "aborted"
    b = catalog.enqueue_compaction(sales, "ds=1", "minor")
    assert b.id != a.id and catalog.claim_compaction("w3").id == b.id


def test_reclaim_dead_worker(catalog, tables):
    _, events = tables
    e = catalog.enqueue_compaction(events, None, "major")
    w = catalog.claim_compaction("dead")
    assert catalog.reclaim_dead_compactions(60) == []
    assert catalog.reclaim_dead_compactions(60, now=_utcnow() + timedelta(seconds=61)) == [e.id]
    r = catalog.get_compaction(e.id)
    assert (
        r.state == "initiated"
        and r.worker_id is None
        and r.details["reclaimed"][0]["worker_id"] == "dead"
    )
    assert catalog.get_transaction(w.txn_id).state == "aborted"
    with pytest.raises(CompactionStateError):
        catalog.mark_compaction_ready_for_cleaning(e.id, 1)  # the dead worker cannot finish
    assert catalog.claim_compaction("alive").txn_id != w.txn_id


def test_history_retention(catalog, tables):
    _, events = tables
    ids = {"succeeded": [], "failed": [], "did not initiate": []}
    for _ in range(5):
        e = catalog.enqueue_compaction(events, None, "minor")
        catalog.claim_compaction("w", e.id)
        catalog.mark_compaction_ready_for_cleaning(e.id, 1)
        catalog.mark_compaction_succeeded(e.id)
        ids["succeeded"].append(e.id)
        e = catalog.enqueue_compaction(events, None, "minor")
        catalog.claim_compaction("w", e.id)
        catalog.mark_compaction_failed(e.id, "x")
        ids["failed"].append(e.id)
        ids["did not initiate"].append(
            catalog.enqueue_compaction(events, None, "major", state="did not initiate").id
        )
    pending = catalog.enqueue_compaction(events, None, "major")
    deleted = catalog.purge_compaction_history()
    left = {c.id for c in catalog.list_compactions()}
    assert left == set(
        ids["succeeded"][-3:] + ids["failed"][-3:] + ids["did not initiate"][-2:] + [pending.id]
    )
    assert set(deleted) == set(sum(ids.values(), [])) - left
    hist = [c.state for c in catalog.compaction_history(events, None)]
    assert hist[0] == "did not initiate" and len(hist) == 8


def test_candidates_written_since_last_compaction(catalog, tables):
    sales, events = tables
    for part in ("ds=1", "ds=2"):
        txn = catalog.open_transaction()
        catalog.allocate_write_id(txn, sales)
        catalog.add_component(txn, sales, part, "insert")
        catalog.commit_transaction(txn)
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, events)
    catalog.add_component(txn, events, None, "insert")
    catalog.abort_transaction(txn)
    assert catalog.compaction_candidates() == [
        ("default.events", None, 1),
        ("sales.orders", "ds=1", 1),
        ("sales.orders", "ds=2", 2),
    ]
    assert catalog.aborted_write_ids(events, None) == [1]
    e = catalog.enqueue_compaction(sales, "ds=2", "major")
    catalog.claim_compaction("w", e.id)
    catalog.mark_compaction_ready_for_cleaning(e.id, 2)
    assert [c[1] for c in catalog.compaction_candidates() if c[0] == "sales.orders"] == ["ds=1"]
    assert catalog.forget_aborted_components(events, 1) == 1
    assert catalog.aborted_write_ids(events, None) == []
    assert catalog.aborted_write_ids(events, any_partition=True) == [1]


def test_reader_registrations_block_cleaning(catalog, tables):
    _, events = tables
    early = catalog.register_reader(events, catalog.valid_write_ids(events))
    assert early.valid_write_ids.startswith("default.events:0:")
    e = catalog.enqueue_compaction(events, None, "major")
    catalog.claim_compaction("w", e.id)
    commit_id = catalog.mark_compaction_ready_for_cleaning(e.id, 0)
    late = catalog.register_reader(events)
    assert late.snapshot_seq > commit_id >= early.snapshot_seq
    assert catalog.blocking_readers(events, commit_id) == {"readers": [early.reader_id], "txns": []}
    # expired heartbeat: no longer blocks, then purged
    later = _utcnow() + timedelta(seconds=catalog.txn_timeout_s + 1)
    assert catalog.blocking_readers(events, commit_id, now=later)["readers"] == []
    assert catalog.heartbeat_reader(early.reader_id)
    catalog.unregister_reader(early.reader_id)
    assert not catalog.heartbeat_reader(early.reader_id)
    assert catalog.blocking_readers(events, commit_id)["readers"] == []
    assert [r.reader_id for r in catalog.list_readers(events)] == [late.reader_id]
    assert catalog.purge_expired_readers(now=later) == [late.reader_id]
    # an open transaction that started before the commit blocks too
    txn = catalog.open_transaction()
    assert catalog.blocking_readers(events, txn + 1)["txns"] == [txn]
