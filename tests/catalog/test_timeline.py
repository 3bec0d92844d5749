"""The commit timeline (``acidflow.tableops.timeline``) from each catalog backend's own records:
commit records with their statistics, the batch ledger and the compaction queue, ordered by the
global commit sequence, newest first."""

from __future__ import annotations

from acidflow.tableops.timeline import timeline


def _commit(
    catalog, table: str, stats: dict, partition: str | None = "ds=1", batch: str | None = None
):
    txn = catalog.open_transaction()
    w = catalog.allocate_write_id(txn, table)
    catalog.add_component(txn, table, partition, "insert")
    if batch:
        catalog.register_batch(txn, batch, "cdc", source="test")
    catalog.commit_transaction(txn, {table: stats})
    return txn, w


def test_timeline_orders_commits_and_compactions(catalog, tables):
    sales, _ = tables
    part = {"ds=1": {"files": 2, "bytes": 300, "rows": 5}}
    t1, w1 = _commit(
        catalog,
        sales,
        {
            "operations": ["insert"],
            "rows_inserted": 5,
            "files": 2,
            "bytes": 300,
            "partitions": part,
        },
        batch="b-1",
    )
    comp = catalog.enqueue_compaction(sales, "ds=1", "minor")
    claimed = catalog.claim_compaction("w-1", comp.id)
    t2, w2 = _commit(
        catalog,
        sales,
        {
            "operations": ["cdc_merge"],
            "rows_inserted": 1,
            "rows_updated": 2,
            "rows_deleted": 3,
            "partitions": {},
        },
    )
    catalog.mark_compaction_ready_for_cleaning(
        comp.id,
        w1,
        {"outputs": ["delta_0000001_0000001"], "files": 1, "bytes": 90, "rows_written": 5},
    )
    t3, w3 = _commit(catalog, sales, {"operations": ["restore"]}, partition=None)
    catalog.enqueue_compaction(sales, "ds=1", "major")  # initiated, not committed

    got = timeline(catalog, sales)
    assert [(e.kind, e.operation, e.write_id) for e in got] == [
        ("compaction", "compaction", None),
        ("commit", "restore", w3),
        ("compaction", "compaction", None),
        ("commit", "upsert", w2),
        ("commit", "insert", w1),
    ]
    pending, restore, minor, upsert, insert = got
    assert pending.compaction["state"] == "initiated" and pending.commit_id is None
    assert minor.compaction["type"] == "minor" and minor.compaction["state"] == "ready for cleaning"
    assert (minor.compaction["min_write_id"], minor.compaction["max_write_id"]) == (1, 1)
    assert minor.txn_id == minor.compaction["visibility_txn_id"] == claimed.txn_id
    assert minor.partitions == {"ds=1": {"files": 1, "bytes": 90, "rows": 5}}
    assert upsert.commit_id < minor.commit_id < restore.commit_id  # by commit sequence
    assert (upsert.rows_inserted, upsert.rows_updated, upsert.rows_deleted) == (1, 2, 3)
    assert (insert.batch_id, insert.batch_kind, insert.txn_id) == ("b-1", "cdc", t1)
    assert insert.partitions == part and insert.files == 2 and insert.bytes == 300
    assert upsert.batch_id is None and restore.txn_id == t3
    assert [e.kind for e in timeline(catalog, sales, include_compactions=False)] == ["commit"] * 3
    assert len(timeline(catalog, sales, limit=2)) == 2
