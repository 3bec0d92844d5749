"""A small warehouse with everything the "ACID tables" page shows, built without Spark (real
ACID event files from ``tests.support.acidtables``, a real catalog, the real compactor in
process): two tables, a commit history with statistics and a batch id, a finished major
compaction and a queued minor one, an aborted and an open transaction, and a lock.

Expected values are in :data:`EXPECTED` (the tests compare the page with them).
"""

from __future__ import annotations

from pathlib import Path

from acidflow.catalog import Catalog, Column, TableDef
from acidflow.format.bucketing import encode_bucket_property
from tests.support import acidtables as at

ORDERS = "sales.orders"
CUSTOMERS = "sales.customers"
BATCH_ID = "ingest-orders-2024-01-01-0f3c9a"
B0 = encode_bucket_property(0, 0)

EXPECTED = {
    ORDERS: {
        "high_watermark": 6,
        "open_write_ids": [6],
        "aborted_write_ids": [5],
        "deltas": 1,
        "delete_deltas": 0,
        "base": "base_0000003",
        "commits": {1: (5, 0, 0), 2: (0, 2, 0), 3: (0, 0, 1), 4: (3, 0, 0)},
    },
    CUSTOMERS: {
        "high_watermark": 3,
        "open_write_ids": [],
        "aborted_write_ids": [],
        "deltas": 2,
        "delete_deltas": 1,
        "partitions": 2,
    },
}


def _dir_stats(location: str, write_id: int) -> tuple[int, int]:
    """(files, bytes) of the bucket files written by ``write_id`` under ``location``."""
    files = nbytes = 0
    for p in Path(location).rglob("bucket_*"):
        if f"_{write_id:07d}_{write_id:07d}_" in p.parent.name:
            files += 1
            nbytes += p.stat().st_size
    return files, nbytes


def _commit(catalog: Catalog, name: str, txn: int, w: int, **counts) -> None:
    files, nbytes = _dir_stats(catalog.get_table(name).location, w)
    catalog.commit_transaction(
        txn,
        stats={
            name: {
                "rows_inserted": counts.get("ins", 0),
                "rows_updated": counts.get("upd", 0),
                "rows_deleted": counts.get("dele", 0),
                "files": files,
                "bytes": nbytes,
            }
        },
    )


def build(catalog: Catalog) -> dict:
    """Fill ``catalog`` (and its warehouse). Returns ``{"open_txn": id, "lock_id": id,
    "queued_compaction": id, "done_compaction": id, "aborted_txn": id}``."""
    from acidflow.compactor import cleaner, worker
    from acidflow.compactor.config import CompactorConfig

    catalog.create_table(
        TableDef(
            name=ORDERS, columns=[Column("id", "int"), Column("item", "string")], primary_key=["id"]
        )
    )
    # w1: insert 5 rows, registered as an ingest batch
    txn, w = at.write(catalog, ORDERS, {0: [(i, f"item{i}") for i in range(5)]}, end="open")
    catalog.register_batch(txn, BATCH_ID, "ingest", source="landing/orders/2024-01-01.csv")
    _commit(catalog, ORDERS, txn, w, ins=5)
    # w2: update rows 1 and 2 (split-update: delete events + new insert events)
    txn, w = at.write(
        catalog, ORDERS, {0: [(1, "item1b"), (2, "item2b")]}, [(1, B0, 1), (1, B0, 2)], end="open"
    )
    _commit(catalog, ORDERS, txn, w, upd=2)
    # w3: delete row 4
    txn, w = at.write(catalog, ORDERS, deletes=[(1, B0, 4)], end="open")
    _commit(catalog, ORDERS, txn, w, dele=1)
    # major compaction -> base_0000003, cleaned
    done = catalog.enqueue_compaction(ORDERS, None, "major", requester="test")
    cfg = CompactorConfig(heartbeat_s=5)
    out = worker.run_worker(None, catalog, cq_id=done.id, worker_id="test-worker-1", config=cfg)
    assert out is not None and out.state == "ready for cleaning", out
    cleaner.run_cleaner(catalog, reader_timeout_s=0)
    # w4: insert 3 rows after the compaction
    txn, w = at.write(catalog, ORDERS, {0: [(i, f"item{i}") for i in range(10, 13)]}, end="open")
    _commit(catalog, ORDERS, txn, w, ins=3)
    # w5: aborted
    aborted, _ = at.write(catalog, ORDERS, {0: [(99, "lost")]}, end="abort")
    # w6: open, holding a shared_write lock
    open_txn, _ = at.write(catalog, ORDERS, {0: [(42, "pending")]}, end="open")
    lock_id = catalog.acquire_lock(open_txn, ORDERS, None, "shared_write", timeout_s=5)
    # a queued minor compaction
    queued = catalog.enqueue_compaction(ORDERS, None, "minor", requester="test")

    catalog.create_table(
        TableDef(
            name=CUSTOMERS,
            columns=[Column("id", "int"), Column("name", "string")],
            partition_columns=[Column("ds", "string")],
        )
    )
    txn, w = at.write(
        catalog, CUSTOMERS, {0: [(1, "ann"), (2, "bob")]}, partition="ds=2024-01-01", end="open"
    )
    _commit(catalog, CUSTOMERS, txn, w, ins=2)
    txn, w = at.write(catalog, CUSTOMERS, {0: [(3, "cy")]}, partition="ds=2024-01-02", end="open")
    _commit(catalog, CUSTOMERS, txn, w, ins=1)
    txn, w = at.write(
        catalog, CUSTOMERS, deletes=[(1, B0, 0)], partition="ds=2024-01-01", end="open"
    )
    _commit(catalog, CUSTOMERS, txn, w, dele=1)
    return {
        "open_txn": open_txn,
        "lock_id": lock_id,
        "queued_compaction": queued.id,
        "done_compaction": done.id,
        "aborted_txn": aborted,
    }
