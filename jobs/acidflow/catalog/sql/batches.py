"""The batch ledger and CDC tombstones in the SQL catalog: one idempotence record per source
batch, claimed by a transaction and applied atomically with its commit, and the committed
CDC deletes per key (the late-event rule's memory). acidflow's own tables (``batches``,
``cdc_tombstones``); Hive has no equivalent (a Hive Metastore backend would keep them in its
own store next to the metastore)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from acidflow.catalog.errors import BatchAlreadyAppliedError, BatchInProgressError
from acidflow.catalog.records import BatchInfo, TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, Deferred, utcnow
from acidflow.catalog.sql.txns import SqlTransactions
from acidflow.catalog.tabledef import split_table_name


def _key_hash(key_json: str) -> str:
    return hashlib.sha256(key_json.encode("utf-8")).hexdigest()


def _batch_infos(conn: sa.Connection, batch_rows: Sequence[shared.Row]) -> list[BatchInfo]:
    out = []
    for r in batch_rows:
        t = conn.execute(
            sa.select(m.Txn.txn_state, m.Txn.txn_committed).where(m.Txn.txn_id == r.txn_id)
        ).first()
        out.append(
            BatchInfo(
                batch_id=r.batch_id,
                kind=r.kind,
                txn_id=r.txn_id,
                state=t.txn_state if t else TxnState.ABORTED,
                registered_at=r.registered_at,
                source=r.source,
                details=dict(r.details or {}),
                committed_at=t.txn_committed if t else None,
            )
        )
    return out


class SqlBatches:
    """Batch records and CDC tombstones on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database.
        txns: the transactions part (its housekeeper runs before a batch is claimed).
    """

    def __init__(self, db: Database, txns: SqlTransactions) -> None:
        self.db = db
        self.txns = txns

    def register_batch(
        self,
        txn_id: int,
        batch_id: str,
        kind: str,
        *,
        source: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> BatchInfo:
        if not batch_id or len(batch_id) > 128:
            raise ValueError(f"batch id must be 1..128 characters, got {batch_id!r}")
        self.txns.abort_timed_out_transactions()
        now = utcnow()

        def fn(conn: sa.Connection) -> BatchInfo | Deferred:
            shared.open_txn_row(conn, txn_id)
            row = conn.execute(
                sa.select(m.BatchRow.__table__)
                .where(m.BatchRow.batch_id == batch_id)
                .with_for_update()
            ).first()
            values: dict[str, Any] = dict(
                kind=kind, txn_id=txn_id, registered_at=now, source=source, details=details or {}
            )
            if row is not None and row.txn_id != txn_id:
                prev = _batch_infos(conn, [row])[0]
                if prev.state == TxnState.COMMITTED:
                    return Deferred(
                        BatchAlreadyAppliedError(batch_id, prev.txn_id, prev.committed_at)
                    )
                if prev.state == TxnState.OPEN:
                    return Deferred(BatchInProgressError(batch_id, prev.txn_id))
                conn.execute(
                    sa.update(m.BatchRow).where(m.BatchRow.batch_id == batch_id).values(**values)
                )
            elif row is None:
                conn.execute(sa.insert(m.BatchRow).values(batch_id=batch_id, **values))
            else:
                conn.execute(
                    sa.update(m.BatchRow).where(m.BatchRow.batch_id == batch_id).values(**values)
                )
            return BatchInfo(
                batch_id=batch_id,
                kind=kind,
                txn_id=txn_id,
                state=TxnState.OPEN,
                registered_at=now,
                source=source,
                details=details or {},
                committed_at=None,
            )

        try:
            return self.db.run(fn)
        except sa.exc.IntegrityError:
            # a concurrent claim inserted the row first: report its state
            return self.db.run(fn)

    def get_batch(self, batch_id: str) -> BatchInfo | None:

        def fn(conn: sa.Connection) -> BatchInfo | None:
            rows = conn.execute(
                sa.select(m.BatchRow.__table__).where(m.BatchRow.batch_id == batch_id)
            ).all()
            return _batch_infos(conn, rows)[0] if rows else None

        return self.db.run(fn, write=False)

    def list_batches(self, kind: str | None = None) -> list[BatchInfo]:

        def fn(conn: sa.Connection) -> list[BatchInfo]:
            q = sa.select(m.BatchRow.__table__).order_by(
                m.BatchRow.registered_at, m.BatchRow.batch_id
            )
            if kind is not None:
                q = q.where(m.BatchRow.kind == kind)
            return _batch_infos(conn, conn.execute(q).all())

        return self.db.run(fn, write=False)

    def newest_batch(self, kind: str, source: str) -> BatchInfo | None:

        def fn(conn: sa.Connection) -> BatchInfo | None:
            b = m.BatchRow
            row = conn.execute(
                sa.select(b.__table__)
                .join(m.Txn, m.Txn.txn_id == b.txn_id)
                .where(b.kind == kind, b.source == source, m.Txn.txn_state == TxnState.COMMITTED)
                .order_by(m.Txn.txn_commit_id.desc())
                .limit(1)
            ).first()
            return None if row is None else _batch_infos(conn, [row])[0]

        return self.db.run(fn, write=False)

    # -- CDC tombstones --------------------------------------------------------------------
    def add_tombstones(self, txn_id: int, table_name: str, entries: list[tuple[str, str]]) -> None:
        if not entries:
            return
        db, tbl = split_table_name(table_name)
        now = utcnow()
        latest: dict[str, tuple[str, str]] = {}
        for key_json, position in entries:
            h = _key_hash(key_json)
            if h not in latest or position > latest[h][1]:
                latest[h] = (key_json, position)

        def fn(conn: sa.Connection) -> None:
            shared.open_txn_row(conn, txn_id)
            hashes = list(latest)
            earlier = conn.execute(
                sa.select(m.CdcTombstone.key_hash)
                .where(
                    m.CdcTombstone.txn_id == txn_id,
                    m.CdcTombstone.db_name == db,
                    m.CdcTombstone.tbl_name == tbl,
                )
                .limit(1)
            ).first()
            # the first call of a transaction for a table (the usual case) has nothing of its
            # own to replace: one probe on the txn_id index instead of a DELETE per 500 keys
            for i in range(0, len(hashes) if earlier is not None else 0, 500):
                conn.execute(
                    sa.delete(m.CdcTombstone).where(
                        m.CdcTombstone.db_name == db,
                        m.CdcTombstone.tbl_name == tbl,
                        m.CdcTombstone.txn_id == txn_id,
                        m.CdcTombstone.key_hash.in_(hashes[i : i + 500]),
                    )
                )
            conn.execute(
                sa.insert(m.CdcTombstone),
                [
                    {
                        "db_name": db,
                        "tbl_name": tbl,
                        "key_hash": h,
                        "txn_id": txn_id,
                        "key_json": kj,
                        "position": pos,
                        "created_at": now,
                    }
                    for h, (kj, pos) in latest.items()
                ],
            )

        self.db.run(fn)

    def tombstones(self, table_name: str, key_jsons: list[str]) -> dict[str, str]:
        db, tbl = split_table_name(table_name)
        by_hash = {_key_hash(k): k for k in key_jsons}

        def fn(conn: sa.Connection) -> dict[str, str]:
            base = (
                sa.select(m.CdcTombstone.key_hash, sa.func.max(m.CdcTombstone.position))
                .join(m.Txn, m.Txn.txn_id == m.CdcTombstone.txn_id)
                .where(
                    m.CdcTombstone.db_name == db,
                    m.CdcTombstone.tbl_name == tbl,
                    m.Txn.txn_state == TxnState.COMMITTED,
                )
            )
            probe = (
                sa.select(m.CdcTombstone.key_hash)
                .where(m.CdcTombstone.db_name == db, m.CdcTombstone.tbl_name == tbl)
                .limit(1)
            )
            if conn.execute(probe).first() is None:
                return {}
            out: dict[str, str] = {}
            hashes = list(by_hash)
            for i in range(0, len(hashes), 500):
                q = base.where(m.CdcTombstone.key_hash.in_(hashes[i : i + 500])).group_by(
                    m.CdcTombstone.key_hash
                )
                for h, pos in conn.execute(q):
                    if pos is not None:
                        out[by_hash[h]] = pos
            return out

        return self.db.run(fn, write=False)
