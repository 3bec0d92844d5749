"""valid_write_ids: the reader's ValidWriteIdList (docs/hive-acid-format.md §6)."""

from __future__ import annotations

import pytest

from acidflow.catalog import Column, NoSuchTableError
from acidflow.format.layout import ValidWriteIdList


def _txn_with_write(catalog, table, partition="ds=1", operation="insert"):
    txn = catalog.open_transaction()
    write_id = catalog.allocate_write_id(txn, table)
    catalog.add_component(txn, table, partition, operation)
    return txn, write_id


def _snap(v):
    return (
        v.table_name,
        v.high_watermark,
        v.open_write_ids,
        v.aborted_write_ids,
        v.min_open_write_id,
    )


def test_empty_table(catalog, tables):
    v = catalog.valid_write_ids("sales.orders")
    assert isinstance(v, ValidWriteIdList)
    assert _snap(v) == ("sales.orders", 0, (), (), None)


@pytest.fixture
def history(catalog, tables):
    """w1 committed, w2 open, w3 aborted, w4 committed, w5 open (all on sales.orders)."""
    t1, w1 = _txn_with_write(catalog, "sales.orders")
    t2, w2 = _txn_with_write(catalog, "sales.orders")
    t3, w3 = _txn_with_write(catalog, "sales.orders")
    t4, w4 = _txn_with_write(catalog, "sales.orders")
    t5, w5 = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(t1)
    catalog.abort_transaction(t3)
    catalog.commit_transaction(t4)
    assert (w1, w2, w3, w4, w5) == (1, 2, 3, 4, 5)
    return {"t1": t1, "t2": t2, "t3": t3, "t4": t4, "t5": t5}


def test_open_and_aborted_exceptions(catalog, history):
    v = catalog.valid_write_ids("SALES.ORDERS")
    assert _snap(v) == ("sales.orders", 5, (2, 5), (3,), 2)
    assert [v.is_write_id_valid(w) for w in range(1, 7)] == [True, False, False, True, False, False]
    assert catalog.write_id_states("sales.orders") == [
        (1, history["t1"], "committed"),
        (2, history["t2"], "open"),
        (3, history["t3"], "aborted"),
        (4, history["t4"], "committed"),
        (5, history["t5"], "open"),
    ]


def test_own_write_id_is_valid(catalog, history):
    # t1 and t4 committed after t2 and t5 opened: with the snapshot taken at open
    # they are open exceptions for t2's and t5's reads, like the still-open t2/t5
    v = catalog.valid_write_ids("sales.orders", txn_id=history["t2"])
    assert _snap(v) == ("sales.orders", 5, (1, 4, 5), (3,), 1)
    assert v.is_write_id_valid(2)
    v = catalog.valid_write_ids("sales.orders", txn_id=history["t5"])
    assert _snap(v) == ("sales.orders", 5, (1, 2, 4), (3,), 1)
    assert v.is_write_id_valid(5)
    # a reader txn without a write id on this table sees the plain snapshot
    reader = catalog.open_transaction()
    assert _snap(catalog.valid_write_ids("sales.orders", txn_id=reader)) == (
        "sales.orders",
        5,
        (2, 5),
        (3,),
        2,
    )


def test_as_of_write_id(catalog, history):
    """as_of = the committed state right after that write id's commit (w1 committed, then w3
    aborted, then w4 committed; w2 and w5 are still open)."""
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=1)) == (
        "sales.orders",
        1,
        (),
        (),
        None,
    )
    # w3 never committed: the state after the commit of the largest committed id below it
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=3)) == (
        "sales.orders",
        1,
        (),
        (),
        None,
    )
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=4)) == (
        "sales.orders",
        4,
        (2,),
        (3,),
        2,
    )
    # above every allocated write id: the current committed state
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=99)) == (
        "sales.orders",
        4,
        (2,),
        (3,),
        2,
    )
    assert catalog.valid_write_ids("sales.orders", as_of_write_id=0).high_watermark == 0
    with pytest.raises(ValueError):
        catalog.valid_write_ids("sales.orders", as_of_write_id=-1)


def test_commit_makes_write_id_valid(catalog, history):
    catalog.commit_transaction(history["t2"])
    catalog.abort_transaction(history["t5"])
    assert _snap(catalog.valid_write_ids("sales.orders")) == ("sales.orders", 5, (), (3, 5), None)


def test_snapshots_are_per_table(catalog, history):
    assert _snap(catalog.valid_write_ids("default.events")) == ("default.events", 0, (), (), None)
    with pytest.raises(NoSuchTableError):
        catalog.write_id_states("nope")


def test_snapshot_taken_at_transaction_open(catalog, tables):
    """Snapshot isolation: a transaction's reads use the snapshot of the moment it opened (Hive's
    ValidTxnList at openTxns) plus its own writes; a commit made in between by another transaction
    stays invisible to it, so two of its reads agree."""
    before, w1 = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(before)
    reader = catalog.open_transaction()
    first = catalog.valid_write_ids("sales.orders", txn_id=reader)
    other, w2 = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(other)  # commits after `reader` opened
    second = catalog.valid_write_ids("sales.orders", txn_id=reader)
    assert [first.is_write_id_valid(w) for w in (w1, w2)] == [True, False]
    assert [second.is_write_id_valid(w) for w in (w1, w2)] == [True, False]
    assert second.open_write_ids == (w2,) and second.min_open_write_id == w2
    # the reader's own later write is visible to it, the other commit still is not
    own = catalog.allocate_write_id(reader, "sales.orders")
    third = catalog.valid_write_ids("sales.orders", txn_id=reader)
    assert third.is_write_id_valid(own) and not third.is_write_id_valid(w2)
    # a snapshot without a transaction (or of a transaction opened later) sees the commit
    assert catalog.valid_write_ids("sales.orders").is_write_id_valid(w2)
    later = catalog.open_transaction()
    assert catalog.valid_write_ids("sales.orders", txn_id=later).is_write_id_valid(w2)


def test_compactor_snapshot_is_that_of_the_oldest_open_transaction(catalog, tables):
    """Snapshot isolation and Hive 3's MIN_HISTORY_LEVEL: a compaction covers only write ids every
    open transaction can see, so a transaction whose snapshot predates a commit is never left
    without a usable base; its own (uncommitted) write id stays open."""
    old = catalog.open_transaction()
    own = catalog.allocate_write_id(old, "sales.orders")
    later, w2 = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(later)  # committed after `old` opened
    v = catalog.compactor_valid_write_ids("sales.orders")
    assert not v.is_write_id_valid(own) and not v.is_write_id_valid(w2)
    assert v.for_compactor().high_watermark < own
    catalog.abort_transaction(old)
    v = catalog.compactor_valid_write_ids("sales.orders")  # nothing open: the plain snapshot
    assert _snap(v) == _snap(catalog.valid_write_ids("sales.orders"))
    assert v.is_write_id_valid(w2)


def test_as_of_interleaved_commits(catalog, tables):
    """Write ids allocated 1..4, committed in the order 2, 4, 1 (3 stays open): as_of is the
    state right after that write id's commit, on every backend (the metastore backend keeps
    the commit order of acidflow's commits in its side catalog)."""
    ta, wa = _txn_with_write(catalog, "sales.orders")
    tb, wb = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(tb)
    tc, wc = _txn_with_write(catalog, "sales.orders")
    td, wd = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(td)
    catalog.commit_transaction(ta)
    assert (wa, wb, wc, wd) == (1, 2, 3, 4)
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=2)) == (
        "sales.orders",
        2,
        (1,),
        (),
        1,
    )
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=4)) == (
        "sales.orders",
        4,
        (1, 3),
        (),
        1,
    )
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=1)) == (
        "sales.orders",
        4,
        (3,),
        (),
        3,
    )
    # the open write id 3: the state after the largest committed id below it (2)
    assert catalog.valid_write_ids("sales.orders", as_of_write_id=3).high_watermark == 2
    at = catalog.get_transaction(td).committed_at
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_timestamp=at))[1:3] == (4, (1, 3))
    catalog.abort_transaction(tc)
    assert _snap(catalog.valid_write_ids("sales.orders", as_of_write_id=1)) == (
        "sales.orders",
        4,
        (),
        (3,),
        None,
    )
    hist = catalog.write_id_history("sales.orders")
    assert [(h.write_id, h.state) for h in hist] == [
        (1, "committed"),
        (2, "committed"),
        (3, "aborted"),
        (4, "committed"),
    ]
    assert hist[0].commit_seq > hist[3].commit_seq > hist[1].commit_seq


def test_schema_at_follows_commit_order(catalog, tables):
    """A schema change holding write id 1 commits after a write with write id 2: as of 2 the
    table had its old columns."""
    before = [c.name for c in catalog.get_table("sales.orders").columns]
    alter = catalog.open_transaction()
    assert catalog.allocate_write_id(alter, "sales.orders") == 1
    tb, wb = _txn_with_write(catalog, "sales.orders")
    catalog.commit_transaction(tb)
    cols = list(catalog.get_table("sales.orders").columns) + [Column("extra", "int")]
    catalog.alter_schema(alter, "sales.orders", cols, change={"op": "add_columns"})
    catalog.commit_transaction(alter)
    assert [c.name for c in catalog.schema_at("sales.orders", 2)] == before
    assert [c.name for c in catalog.schema_at("sales.orders", 1)] == before + ["extra"]
