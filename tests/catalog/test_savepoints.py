"""Savepoints in the catalog (every backend): add, list, drop, the errors naming table and
name, a dropped table taking its savepoints along, and the purge of commit records keeping the
records from a savepoint's commit on."""

from __future__ import annotations

import pytest

from acidflow.catalog import NoSuchSavepointError, SavepointExistsError


def commit_one(catalog, table="sales.orders", partition="ds=1") -> int:
    txn = catalog.open_transaction()
    w = catalog.allocate_write_id(txn, table)
    catalog.add_component(txn, table, partition, "insert")
    catalog.commit_transaction(txn)
    return w


def test_add_list_drop(catalog, tables):
    for _ in range(3):
        commit_one(catalog)
    snap = catalog.valid_write_ids("sales.orders", as_of_write_id=2)
    sp = catalog.add_savepoint("sales.orders", "before-fix", 2, snap, created_by="alice")
    assert (sp.table, sp.name, sp.write_id, sp.created_by) == (
        "sales.orders",
        "before-fix",
        2,
        "alice",
    )
    assert sp.valid_write_ids == str(snap)
    catalog.add_savepoint("sales.orders", "a-first", 1, snap)
    assert [(s.name, s.write_id) for s in catalog.list_savepoints("sales.orders")] == [
        ("a-first", 1),
        ("before-fix", 2),
    ]
    assert catalog.list_savepoints("default.events") == []
    with pytest.raises(SavepointExistsError, match="sales.orders.*before-fix.*write id 2"):
        catalog.add_savepoint("sales.orders", "before-fix", 3, snap)
    assert catalog.drop_savepoint("sales.orders", "before-fix").write_id == 2
    with pytest.raises(NoSuchSavepointError, match="sales.orders has no savepoint 'before-fix'"):
        catalog.drop_savepoint("sales.orders", "before-fix")
    assert [s.name for s in catalog.list_savepoints()] == ["a-first"]


def test_a_savepoint_keeps_its_commit_records(catalog, tables):
    for _ in range(10):
        commit_one(catalog)
    catalog.add_savepoint(
        "sales.orders", "keep", 4, catalog.valid_write_ids("sales.orders", as_of_write_id=4)
    )
    assert catalog.purge_commit_records("sales.orders", 8) == 3  # 1..3 go, 4.. stay
    assert [r.write_id for r in catalog.commit_records("sales.orders")] == list(range(4, 11))
    catalog.purge_transactions()
    v = catalog.valid_write_ids("sales.orders", as_of_write_id=4)
    assert (v.high_watermark, v.invalid_write_ids) == (4, ())
    catalog.drop_savepoint("sales.orders", "keep")
    assert catalog.purge_commit_records("sales.orders", 8) == 4
