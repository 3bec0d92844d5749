"""Transactions: states, heartbeats, write ids, components, atomic multi-table commit."""

from __future__ import annotations

import os
import socket
from datetime import timezone

import pytest
import sqlalchemy as sa

from acidflow.catalog import (
    CatalogError,
    NoSuchTableError,
    NoSuchTransactionError,
    TxnAbortedError,
    TxnNotOpenError,
)
from acidflow.catalog.sql import schema as models


def test_open_and_get(catalog):
    first = catalog.open_transaction()
    second = catalog.open_transaction(user="alice", host="h1", agent_info="dag=x task=y")
    assert second > first
    info = catalog.get_transaction(second)
    assert (info.txn_id, info.state) == (second, "open")
    assert (info.user, info.host, info.agent_info) == ("alice", "h1", "dag=x task=y")
    assert info.started_at.tzinfo == timezone.utc
    assert info.last_heartbeat == info.started_at
    assert info.committed_at is None and info.aborted_at is None and info.commit_id is None
    assert info.write_ids == {}
    default = catalog.get_transaction(first)
    assert default.host == socket.gethostname()
    assert default.agent_info == f"acidflow pid {os.getpid()}"


def test_commit(catalog):
    txn = catalog.open_transaction()
    commit_id = catalog.commit_transaction(txn)
    assert commit_id > txn
    info = catalog.get_transaction(txn)
    assert info.state == "committed" and info.commit_id == commit_id
    assert info.committed_at >= info.started_at
    assert catalog.commit_transaction(txn) == commit_id  # idempotent, like Hive
    with pytest.raises(TxnNotOpenError, match=str(txn)):
        catalog.heartbeat(txn)
    with pytest.raises(TxnNotOpenError):
        catalog.abort_transaction(txn)
    assert catalog.open_transaction() > commit_id  # one global sequence


def test_abort(catalog, tables):
    txn = catalog.open_transaction()
    catalog.abort_transaction(txn, "changed my mind")
    info = catalog.get_transaction(txn)
    assert info.state == "aborted" and info.abort_reason == "changed my mind"
    assert info.aborted_at is not None
    catalog.abort_transaction(txn)  # idempotent
    assert catalog.get_transaction(txn).abort_reason == "changed my mind"
    with pytest.raises(TxnAbortedError, match="changed my mind"):
        catalog.heartbeat(txn)
    with pytest.raises(TxnAbortedError):
        catalog.commit_transaction(txn)
    with pytest.raises(TxnAbortedError):
        catalog.allocate_write_id(txn, "sales.orders")
    with pytest.raises(TxnAbortedError):
        catalog.acquire_lock(txn, "sales.orders", None, "shared_read")


def test_unknown_transaction(catalog, tables):
    for call in (
        lambda: catalog.heartbeat(999),
        lambda: catalog.commit_transaction(999),
        lambda: catalog.abort_transaction(999),
        lambda: catalog.get_transaction(999),
        lambda: catalog.allocate_write_id(999, "sales.orders"),
        lambda: catalog.release_locks(999),
        lambda: catalog.valid_write_ids("sales.orders", txn_id=999),
    ):
        with pytest.raises(NoSuchTransactionError, match="999"):
            call()


def test_heartbeat_updates_time_and_count(catalog):
    txn = catalog.open_transaction()
    before = catalog.get_transaction(txn)
    catalog.heartbeat(txn)
    catalog.heartbeat(txn)
    after = catalog.get_transaction(txn)
    assert after.last_heartbeat >= before.last_heartbeat
    assert after.heartbeat_count == 2


def test_list_transactions(catalog):
    a, b, c = (catalog.open_transaction() for _ in range(3))
    catalog.commit_transaction(a)
    catalog.abort_transaction(b)
    assert [t.txn_id for t in catalog.list_transactions()] == [a, b, c]
    assert [t.txn_id for t in catalog.list_transactions(["open"])] == [c]
    assert [t.txn_id for t in catalog.list_transactions("aborted")] == [b]
    assert [t.txn_id for t in catalog.list_transactions({"committed", "open"})] == [a, c]
    with pytest.raises(ValueError):
        catalog.list_transactions(["weird"])


def test_write_ids_per_table_increasing_and_idempotent(catalog, tables):
    orders, events = tables
    t1, t2, t3 = (catalog.open_transaction() for _ in range(3))
    assert catalog.allocate_write_id(t2, orders) == 1
    assert catalog.allocate_write_id(t1, orders) == 2  # allocation order, not txn order
    assert catalog.allocate_write_id(t2, orders) == 1  # same (txn, table): same id
    assert catalog.allocate_write_id(t3, events) == 1  # per table
    assert catalog.allocate_write_id(t3, "SALES.Orders") == 3
    assert catalog.get_transaction(t3).write_ids == {"default.events": 1, "sales.orders": 3}
    with pytest.raises(NoSuchTableError):
        catalog.allocate_write_id(t1, "nope")
    catalog.commit_transaction(t1)
    with pytest.raises(TxnNotOpenError):
        catalog.allocate_write_id(t1, events)


def test_add_component_checks(catalog, tables):
    orders, events = tables
    txn = catalog.open_transaction()
    with pytest.raises(CatalogError, match="allocate_write_id"):
        catalog.add_component(txn, orders, "ds=2024-01-01", "insert")
    catalog.allocate_write_id(txn, orders)
    catalog.allocate_write_id(txn, events)
    with pytest.raises(ValueError, match="unknown operation"):
        catalog.add_component(txn, orders, "ds=2024-01-01", "upsert")
    with pytest.raises(ValueError, match="partition columns"):
        catalog.add_component(txn, orders, "region=eu", "insert")
    with pytest.raises(ValueError, match="not partitioned"):
        catalog.add_component(txn, events, "ds=1", "insert")
    with pytest.raises(ValueError):
        catalog.add_component(txn, orders, "ds", "insert")
    catalog.add_component(txn, orders, "DS=2024-01-01", "insert")
    catalog.add_component(txn, orders, "ds=2024-01-01", "insert")  # repeat ignored
    catalog.add_component(txn, orders, None, "delete")  # whole table
    catalog.add_component(txn, events, None, "insert")
    with catalog.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                models.TxnComponent.tbl_name,
                models.TxnComponent.part_name,
                models.TxnComponent.operation,
                models.TxnComponent.write_id,
            ).order_by(models.TxnComponent.tc_id)
        ).all()
    assert [tuple(r) for r in rows] == [
        ("orders", "ds=2024-01-01", "insert", 1),
        ("orders", None, "delete", 1),
        ("events", None, "insert", 1),
    ]


def _write(catalog, txn, table, partition, operation):
    write_id = catalog.allocate_write_id(txn, table)
    catalog.add_component(txn, table, partition, operation)
    return write_id


def test_multi_table_commit_writes_one_record_per_table(catalog, tables):
    orders, events = tables
    txn = catalog.open_transaction()
    w_orders = _write(catalog, txn, orders, "ds=2024-01-01", "update")
    catalog.add_component(txn, orders, "ds=2024-01-01", "insert")
    catalog.add_component(txn, orders, "ds=2024-01-02", "delete")
    w_events = _write(catalog, txn, events, None, "insert")
    stats = {
        "sales.orders": {
            "rows_inserted": 5,
            "rows_updated": 2,
            "rows_deleted": 1,
            "partitions": {"ds=2024-01-01": {"files": 1, "bytes": 10, "rows": 7}},
        },
        "events": {"rows_inserted": 3},
    }
    commit_id = catalog.commit_transaction(txn, stats)
    [rec_o] = catalog.commit_records(orders)
    [rec_e] = catalog.commit_records(events)
    assert (rec_o.table, rec_o.write_id, rec_o.txn_id, rec_o.commit_id) == (
        "sales.orders",
        w_orders,
        txn,
        commit_id,
    )
    assert rec_o.operations == ["insert", "update", "delete"]
    assert rec_o.stats == stats["sales.orders"]
    assert (rec_e.table, rec_e.write_id, rec_e.operations, rec_e.stats) == (
        "default.events",
        w_events,
        ["insert"],
        {"rows_inserted": 3},
    )
    assert rec_o.committed_at == rec_e.committed_at
    assert catalog.write_id_states(orders) == [(w_orders, txn, "committed")]
    with catalog.engine.connect() as conn:
        done = conn.execute(
            sa.select(sa.func.count()).select_from(models.CompletedTxnComponent)
        ).scalar()
        pending = conn.execute(sa.select(sa.func.count()).select_from(models.TxnComponent)).scalar()
    assert (done, pending) == (4, 0)


def test_commit_records_in_write_id_order(catalog, tables):
    orders, _ = tables
    t1, t2 = catalog.open_transaction(), catalog.open_transaction()
    _write(catalog, t2, orders, "ds=1", "insert")
    _write(catalog, t1, orders, "ds=1", "insert")
    catalog.commit_transaction(t1)
    catalog.commit_transaction(t2, {"sales.orders": {"rows_inserted": 1}})
    recs = catalog.commit_records(orders)
    assert [(r.write_id, r.txn_id) for r in recs] == [(1, t2), (2, t1)]
    assert recs[0].stats == {"rows_inserted": 1} and recs[1].stats == {}


def test_aborted_multi_table_txn_leaves_no_records(catalog, tables):
    orders, events = tables
    txn = catalog.open_transaction()
    w1 = _write(catalog, txn, orders, "ds=1", "insert")
    w2 = _write(catalog, txn, events, None, "insert")
    catalog.abort_transaction(txn)
    assert catalog.commit_records(orders) == [] and catalog.commit_records(events) == []
    assert catalog.write_id_states(orders) == [(w1, txn, "aborted")]
    assert catalog.write_id_states(events) == [(w2, txn, "aborted")]


def test_failed_commit_is_rolled_back_completely(catalog, tables):
    orders, events = tables
    txn = catalog.open_transaction()
    _write(catalog, txn, orders, "ds=1", "delete")
    w_events = _write(catalog, txn, events, None, "insert")
    # Sabotage: a commit record already occupies (events, w_events), so the commit's second
    # record insert fails after the write set and completed components were written.
    with catalog.engine.begin() as conn:
        conn.execute(
            sa.insert(models.CommitRecordRow).values(
                db_name="default",
                tbl_name="events",
                write_id=w_events,
                txn_id=-1,
                commit_id=-1,
                committed_at=sa.func.now(),
                operations=[],
                stats={},
            )
        )
    with pytest.raises(sa.exc.IntegrityError):
        catalog.commit_transaction(txn, {"sales.orders": {"rows_deleted": 1}})
    assert catalog.get_transaction(txn).state == "open"
    assert catalog.commit_records(orders) == []
    with catalog.engine.connect() as conn:
        for model in (models.WriteSet, models.CompletedTxnComponent):
            assert conn.execute(sa.select(sa.func.count()).select_from(model)).scalar() == 0
        assert (
            conn.execute(sa.select(sa.func.count()).select_from(models.TxnComponent)).scalar() == 2
        )


def test_commit_rejects_bad_stats(catalog, tables):
    orders, events = tables
    txn = catalog.open_transaction()
    _write(catalog, txn, orders, "ds=1", "insert")
    with pytest.raises(ValueError, match="did not write"):
        catalog.commit_transaction(txn, {"default.events": {"rows_inserted": 1}})
    with pytest.raises(ValueError, match="JSON"):
        catalog.commit_transaction(txn, {"sales.orders": {"x": object()}})
    assert catalog.get_transaction(txn).state == "open"
    catalog.commit_transaction(txn, {"sales.orders": {"rows_inserted": 1}})
