"""Timed-out transactions (Hive AcidHouseKeeperService / hive.txn.timeout)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from acidflow.catalog import TxnAbortedError


def test_housekeeper_aborts_silent_txn_with_real_sleep(make_catalog, tables):
    catalog = make_catalog(txn_timeout_s=1)
    silent = catalog.open_transaction()
    write_id = catalog.allocate_write_id(silent, "sales.orders")
    catalog.acquire_lock(silent, "sales.orders", None, "shared_write")
    alive = catalog.open_transaction()
    time.sleep(0.7)
    catalog.heartbeat(alive)
    time.sleep(0.6)  # silent: 1.3 s without heartbeat; alive: 0.6 s
    assert catalog.abort_timed_out_transactions() == [silent]
    info = catalog.get_transaction(silent)
    assert info.state == "aborted" and info.abort_reason == "timed out"
    assert catalog.list_locks() == []
    with pytest.raises(TxnAbortedError, match="timed out"):
        catalog.heartbeat(silent)
    with pytest.raises(TxnAbortedError):
        catalog.commit_transaction(silent)
    assert catalog.valid_write_ids("sales.orders").aborted_write_ids == (write_id,)
    assert catalog.get_transaction(alive).state == "open"
    assert catalog.abort_timed_out_transactions() == []


def test_housekeeper_with_explicit_now(catalog, tables):
    done = catalog.open_transaction()
    catalog.commit_transaction(done)
    a, b = catalog.open_transaction(), catalog.open_transaction()
    started = catalog.get_transaction(a).started_at
    assert catalog.abort_timed_out_transactions(now=started + timedelta(seconds=299)) == []
    naive_future = (started + timedelta(seconds=301)).replace(tzinfo=None)  # naive = UTC
    assert catalog.abort_timed_out_transactions(now=naive_future) == [a, b]
    assert catalog.get_transaction(done).state == "committed"
    assert {t.state for t in catalog.list_transactions()} == {"committed", "aborted"}
