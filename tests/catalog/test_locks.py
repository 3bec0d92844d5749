"""Table/partition locks (Hive DbLockManager / TxnHandler.lock + checkLock)."""

from __future__ import annotations

import threading
import time

import pytest

from acidflow.catalog import LockTimeoutError, TxnAbortedError

T = "sales.orders"


def _states(catalog):
    return [(lk.txn_id, lk.partition, lk.lock_type, lk.state) for lk in catalog.list_locks()]


def _in_thread(fn):
    """Run fn in a thread; returns (thread, result dict with 'value' or 'error')."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001
            out["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th, out


def _wait_until(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_exclusive_waits_then_times_out(catalog, tables):
    t1, t2 = catalog.open_transaction(), catalog.open_transaction()
    lock1 = catalog.acquire_lock(t1, T, None, "exclusive")
    started = time.monotonic()
    with pytest.raises(LockTimeoutError) as err:
        catalog.acquire_lock(t2, T, None, "exclusive", timeout_s=0.3)
    assert time.monotonic() - started >= 0.3
    e = err.value
    assert (e.txn_id, e.table, e.partition, e.blocker_lock_id, e.blocker_txn_id) == (
        t2,
        T,
        None,
        lock1,
        t1,
    )
    assert f"txn {t2}" in str(e) and T in str(e) and f"txn {t1}" in str(e)
    assert _states(catalog) == [(t1, None, "exclusive", "acquired")]  # request removed


def test_shared_locks_are_compatible(catalog, tables):
    txns = [catalog.open_transaction() for _ in range(4)]
    catalog.acquire_lock(txns[0], T, None, "shared_read", timeout_s=0)
    catalog.acquire_lock(txns[1], T, None, "shared_write", timeout_s=0)
    catalog.acquire_lock(txns[2], T, "ds=1", "shared_write", timeout_s=0)
    catalog.acquire_lock(txns[3], T, "ds=1", "shared_read", timeout_s=0)
    assert [s for *_, s in _states(catalog)] == ["acquired"] * 4
    for kind in ("exclusive",):
        t = catalog.open_transaction()
        with pytest.raises(LockTimeoutError):
            catalog.acquire_lock(t, T, None, kind, timeout_s=0)
        with pytest.raises(LockTimeoutError):
            catalog.acquire_lock(t, T, "ds=1", kind, timeout_s=0)


def test_partition_granularity(catalog, tables):
    t1, t2, t3, t4 = (catalog.open_transaction() for _ in range(4))
    catalog.acquire_lock(t1, T, "ds=1", "exclusive", timeout_s=0)
    catalog.acquire_lock(t2, T, "ds=2", "exclusive", timeout_s=0)  # other partition: fine
    catalog.acquire_lock(t3, "default.events", None, "exclusive", timeout_s=0)  # other table
    with pytest.raises(LockTimeoutError):  # table-level overlaps every partition
        catalog.acquire_lock(t4, T, None, "shared_read", timeout_s=0)
    catalog.release_locks(t1)
    catalog.release_locks(t2)
    catalog.acquire_lock(t4, T, None, "shared_read", timeout_s=0)
    with pytest.raises(LockTimeoutError):  # and a table-level lock blocks partition requests
        catalog.acquire_lock(t1, T, "ds=1", "exclusive", timeout_s=0)


def test_own_locks_never_conflict_and_identical_request_is_reused(catalog, tables):
    t1 = catalog.open_transaction()
    a = catalog.acquire_lock(t1, T, None, "shared_write", timeout_s=0)
    b = catalog.acquire_lock(t1, T, None, "exclusive", timeout_s=0)
    assert a != b
    assert catalog.acquire_lock(t1, T, None, "shared_write", timeout_s=0) == a
    assert len(catalog.list_locks(T)) == 2 and catalog.list_locks("default.events") == []


def test_waiter_gets_lock_when_holder_commits(catalog, tables):
    t1, t2 = catalog.open_transaction(), catalog.open_transaction()
    catalog.acquire_lock(t1, T, "ds=1", "exclusive")
    th, out = _in_thread(lambda: catalog.acquire_lock(t2, T, "ds=1", "shared_read", timeout_s=20))
    _wait_until(lambda: (t2, "ds=1", "shared_read", "waiting") in _states(catalog))
    catalog.commit_transaction(t1)  # releases t1's locks
    th.join(20)
    assert "error" not in out, out
    assert _states(catalog) == [(t2, "ds=1", "shared_read", "acquired")]
    info = catalog.list_locks()[0]
    assert info.lock_id == out["value"] and info.acquired_at is not None


def test_released_at_abort_and_by_release_locks(catalog, tables):
    t1, t2 = catalog.open_transaction(), catalog.open_transaction()
    catalog.acquire_lock(t1, T, None, "exclusive")
    catalog.abort_transaction(t1)
    assert catalog.list_locks() == []
    catalog.acquire_lock(t2, T, None, "exclusive", timeout_s=0)
    catalog.release_locks(t2)
    assert catalog.list_locks() == []
    assert catalog.get_transaction(t2).state == "open"


def test_waiting_exclusive_blocks_later_shared_requests(catalog, tables):
    """Requests are served in order: a later shared_read waits behind a waiting exclusive."""
    t1, t2, t3 = (catalog.open_transaction() for _ in range(3))
    catalog.acquire_lock(t1, T, None, "shared_read")
    th, out = _in_thread(lambda: catalog.acquire_lock(t2, T, None, "exclusive", timeout_s=20))
    _wait_until(lambda: (t2, None, "exclusive", "waiting") in _states(catalog))
    with pytest.raises(LockTimeoutError) as err:
        catalog.acquire_lock(t3, T, None, "shared_read", timeout_s=0.2)
    assert err.value.blocker_txn_id == t2
    catalog.commit_transaction(t1)
    th.join(20)
    assert "error" not in out, out
    assert _states(catalog) == [(t2, None, "exclusive", "acquired")]


def test_waiter_fails_if_its_txn_is_aborted_meanwhile(catalog, tables):
    t1, t2 = catalog.open_transaction(), catalog.open_transaction()
    catalog.acquire_lock(t1, T, None, "exclusive")
    th, out = _in_thread(lambda: catalog.acquire_lock(t2, T, None, "exclusive", timeout_s=20))
    _wait_until(lambda: len(catalog.list_locks()) == 2)
    catalog.abort_transaction(t2, "operator")
    th.join(20)
    assert isinstance(out.get("error"), TxnAbortedError)
    assert _states(catalog) == [(t1, None, "exclusive", "acquired")]


def test_lock_argument_checks(catalog, tables):
    t1 = catalog.open_transaction()
    with pytest.raises(ValueError, match="lock type"):
        catalog.acquire_lock(t1, T, None, "intent")
    with pytest.raises(ValueError):
        catalog.acquire_lock(t1, T, "region=eu", "shared_read")
