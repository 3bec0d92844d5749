"""The history purges of the SQL catalog: commit records beyond history retention, completed
components the initiator no longer needs, superseded CDC tombstones and aborted batch claims.
The cleaner runs them every pass (``acidflow.compactor.cleaner``); the contracts (what is kept
and why) are on the roles (``acidflow.catalog.api``)."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from acidflow.catalog.records import TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import split_table_name


class SqlHistoryPurge:
    """History purges on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database.
        txn_timeout_s: a reader whose heartbeat is older counts as gone (the default of
            ``reader_timeout_s``).
    """

    def __init__(self, db: Database, txn_timeout_s: int) -> None:
        self.db = db
        self.txn_timeout_s = txn_timeout_s

    def purge_commit_records(
        self, table_name: str, keep_from_write_id: int, *, reader_timeout_s: float | None = None
    ) -> int:
        db, tbl = split_table_name(table_name)
        timeout = self.txn_timeout_s if reader_timeout_s is None else reader_timeout_s
        cutoff = utcnow() - timedelta(seconds=timeout)

        def fn(conn: sa.Connection) -> int:
            shared.table_row(conn, db, tbl)
            if keep_from_write_id <= 0:
                return 0
            cr = m.CommitRecordRow
            horizon = conn.execute(
                sa.select(m.Txn.txn_commit_id)
                .join(m.TxnToWriteId, m.TxnToWriteId.txn_id == m.Txn.txn_id)
                .where(
                    m.TxnToWriteId.db_name == db,
                    m.TxnToWriteId.tbl_name == tbl,
                    m.TxnToWriteId.write_id == keep_from_write_id,
                    m.Txn.txn_state == TxnState.COMMITTED,
                )
            ).scalar()
            if horizon is None:
                return 0
            rr = m.ReaderRegistration
            for (seq,) in conn.execute(
                sa.select(rr.snapshot_seq).where(
                    rr.db_name == db, rr.tbl_name == tbl, rr.last_heartbeat >= cutoff
                )
            ):
                # the newest commit a live reader's snapshot includes stays, and every later one
                seen = conn.execute(
                    sa.select(sa.func.max(cr.commit_id)).where(
                        cr.db_name == db, cr.tbl_name == tbl, cr.commit_id < seq
                    )
                ).scalar()
                if seen is not None:
                    horizon = min(horizon, seen)
            gone = conn.execute(
                sa.delete(cr).where(cr.db_name == db, cr.tbl_name == tbl, cr.commit_id < horizon)
            )
            return gone.rowcount or 0

        return self.db.run(fn)

    def purge_completed_components(self) -> int:

        def fn(conn: sa.Connection) -> int:
            c = m.CompletedTxnComponent
            tops = conn.execute(
                sa.select(c.db_name, c.tbl_name, c.part_name, sa.func.max(c.write_id)).group_by(
                    c.db_name, c.tbl_name, c.part_name
                )
            ).all()
            n = 0
            for db, tbl, part, top in tops:
                same = c.part_name.is_(None) if part is None else c.part_name == part
                n += (
                    conn.execute(
                        sa.delete(c).where(
                            c.db_name == db, c.tbl_name == tbl, same, c.write_id < top
                        )
                    ).rowcount
                    or 0
                )
            return n

        return self.db.run(fn)

    def purge_tombstones(self) -> int:

        def fn(conn: sa.Connection) -> int:
            t = m.CdcTombstone
            aborted = sa.select(m.Txn.txn_id).where(
                m.Txn.txn_id == t.txn_id, m.Txn.txn_state == TxnState.ABORTED
            )
            n = conn.execute(sa.delete(t).where(aborted.exists())).rowcount or 0
            committed = (
                sa.select(t.db_name, t.tbl_name, t.key_hash, sa.func.max(t.position))
                .join(m.Txn, m.Txn.txn_id == t.txn_id)
                .where(m.Txn.txn_state == TxnState.COMMITTED)
                .group_by(t.db_name, t.tbl_name, t.key_hash)
                .having(sa.func.count() > 1)
            )
            for db, tbl, key_hash, top in conn.execute(committed).all():
                done = sa.select(m.Txn.txn_id).where(
                    m.Txn.txn_id == t.txn_id, m.Txn.txn_state == TxnState.COMMITTED
                )
                n += (
                    conn.execute(
                        sa.delete(t).where(
                            t.db_name == db,
                            t.tbl_name == tbl,
                            t.key_hash == key_hash,
                            t.position < top,
                            done.exists(),
                        )
                    ).rowcount
                    or 0
                )
            return n

        return self.db.run(fn)

    def purge_batches(self) -> int:

        def fn(conn: sa.Connection) -> int:
            b = m.BatchRow
            aborted = sa.select(m.Txn.txn_id).where(
                m.Txn.txn_id == b.txn_id, m.Txn.txn_state == TxnState.ABORTED
            )
            return conn.execute(sa.delete(b).where(aborted.exists())).rowcount or 0

        return self.db.run(fn)
