"""Small tables with a history, written through the real Transaction statements in this
process (pyarrow, no Spark): the shapes the retention and restore tests share, and the helpers
that read snapshots as comparable multisets."""

from __future__ import annotations

import collections

import pyarrow as pa

from acidflow.catalog import Column, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.statements import changes
from acidflow.engine.transaction import Transaction
from acidflow.format import types as htypes
from acidflow.read import snapshot
from acidflow.read import table as reads
from acidflow.storage.tablepaths import partition_paths

CFG = CompactorConfig(heartbeat_s=0.5)

#: shape id -> (keyed, bucketed, partitioned)
SHAPES = {
    "keyed_bucketed": (True, True, False),
    "keyed_partitioned_unbucketed": (True, False, True),
    "unkeyed_unpartitioned": (False, False, False),
    "unkeyed_partitioned_bucketed": (False, True, True),
}


def make_table(catalog, shape: str, name: str = "db.h", **props: str) -> TableDef:
    keyed, bucketed, partitioned = SHAPES[shape]
    td = TableDef(
        name=name,
        columns=[Column("id", "int"), Column("v", "string")],
        partition_columns=[Column("ds", "string")] if partitioned else [],
        primary_key=["id"] if keyed else [],
        bucket_columns=["id"] if bucketed else [],
        num_buckets=2 if bucketed else 0,
        properties={k.replace("_", "."): v for k, v in props.items()},
    )
    return catalog.create_table(td)


def _schema(td: TableDef) -> pa.Schema:
    return htypes.arrow_schema([(c.name, c.hive_type) for c in td.columns + td.partition_columns])


def _rows(td: TableDef, rows: list[tuple]) -> pa.Table:
    names = [c.name for c in td.columns + td.partition_columns]
    if not td.partition_columns:
        rows = [r[:2] for r in rows]
    return pa.Table.from_pylist([dict(zip(names, r)) for r in rows], schema=_schema(td))


def ds_of(i: int) -> str:
    return "a" if i % 2 else "b"


def put(catalog, name: str, ids: list[int], tag: str) -> int:
    """Upsert (keyed) or insert (unkeyed) rows ``(id, f"{tag}{id}", ds)``; returns the write id."""
    td = catalog.get_table(name)
    rows = _rows(td, [(i, f"{tag}{i}", ds_of(i)) for i in ids])
    with Transaction(catalog, heartbeat_s=0) as txn:
        if td.primary_key:
            txn.upsert(name, rows)
        else:
            empty = pa.table(
                {
                    **{c.name: pa.array([], pa.string()) for c in td.partition_columns},
                    "owid": pa.array([], pa.int64()),
                    "bprop": pa.array([], pa.int32()),
                    "rowid": pa.array([], pa.int64()),
                }
            )
            changes.apply_row_changes(
                txn, name, rows, empty, counts={"rows_inserted": rows.num_rows}, operation="insert"
            )
        return txn.write_id(name)


def drop(catalog, name: str, ids: list[int]) -> int:
    """Delete every visible row whose id is in ``ids`` (by ROW__ID); returns the write id."""
    td = catalog.get_table(name)
    pnames = [c.name for c in td.partition_columns]
    with Transaction(catalog, heartbeat_s=0) as txn:
        cur = reads.read_table(None, catalog, name, row_id=True, txn_id=txn.txn_id)
        hit = [r for r in cur.to_pylist() if r["id"] in ids]
        deletes = pa.table(
            {
                **{p: pa.array([r[p] for r in hit], pa.string()) for p in pnames},
                "owid": pa.array([r[snapshot.ROW_ID]["writeid"] for r in hit], pa.int64()),
                "bprop": pa.array([r[snapshot.ROW_ID]["bucketid"] for r in hit], pa.int32()),
                "rowid": pa.array([r[snapshot.ROW_ID]["rowid"] for r in hit], pa.int64()),
            }
        )
        changes.apply_row_changes(
            txn, name, _rows(td, []), deletes, counts={"rows_deleted": len(hit)}, operation="delete"
        )
        return txn.write_id(name)


def history(catalog, name: str) -> list[int]:
    """Six commits: inserts, updates (keyed) or more inserts, deletes. Returns write ids."""
    return [
        put(catalog, name, list(range(0, 8)), "a"),
        put(catalog, name, [1, 2, 9], "b"),
        drop(catalog, name, [3, 4]),
        put(catalog, name, [10, 11, 12], "c"),
        drop(catalog, name, [0, 11]),
        put(catalog, name, [2, 5, 13], "d"),
    ]


def with_ids(catalog, name: str, **kw) -> collections.Counter:
    """Visible rows as a multiset of (data + partition values, ROW__ID)."""
    td = catalog.get_table(name)
    names = [c.name for c in td.columns + td.partition_columns]
    out = collections.Counter()
    for r in reads.read_table(None, catalog, name, row_id=True, **kw).to_pylist():
        rid = r[snapshot.ROW_ID]
        out[tuple(r[n] for n in names) + ((rid["writeid"], rid["bucketid"], rid["rowid"]),)] += 1
    return out


def values(catalog, name: str, **kw) -> collections.Counter:
    """Visible rows as a multiset of data + partition values (no ROW__ID)."""
    return collections.Counter(r[:-1] for r in with_ids(catalog, name, **kw).elements())


def compact(catalog, name: str, kind: str, spark=None) -> list[int]:
    """Request and run a ``kind`` compaction of every partition; returns the queue ids."""
    td = catalog.get_table(name)
    ids = []
    for part in partition_paths(td):
        info = initiator.request_compaction(catalog, name, part or None, kind)
        out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
        assert out is not None and out.state == "ready for cleaning", out and out.report
        ids.append(info.id)
    return ids
