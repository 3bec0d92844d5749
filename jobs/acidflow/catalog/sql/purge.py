"""The history purges of the SQL catalog: commit records beyond history retention (savepoints
and live readers keep theirs), completed
components the initiator no longer needs, superseded CDC tombstones, batch records beyond the
batch retention and committed transactions whose commit records are gone.
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
            # a savepoint keeps the record of its write id's commit and every later one (time
            # travel and restore to it order the commits by them; their transactions stay too)
            sp = m.SavepointRow
            for (w,) in conn.execute(
                sa.select(sp.write_id).where(sp.db_name == db, sp.tbl_name == tbl)
            ):
                pinned = conn.execute(
                    sa.select(m.Txn.txn_commit_id)
                    .join(m.TxnToWriteId, m.TxnToWriteId.txn_id == m.Txn.txn_id)
                    .where(
                        m.TxnToWriteId.db_name == db,
                        m.TxnToWriteId.tbl_name == tbl,
                        m.TxnToWriteId.write_id == w,
                    )
                ).scalar()
                # a pin whose commit cannot be found keeps every record (err toward keeping)
                horizon = 0 if w == 0 or pinned is None else min(horizon, pinned)
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

    def purge_batches(self, retain: timedelta | None = None) -> int:
        now = utcnow()

        def fn(conn: sa.Connection) -> int:
            b = m.BatchRow
            aborted = sa.select(m.Txn.txn_id).where(
                m.Txn.txn_id == b.txn_id, m.Txn.txn_state == TxnState.ABORTED
            )
            n = conn.execute(sa.delete(b).where(aborted.exists())).rowcount or 0
            if retain is None:
                return n
            newer = sa.alias(m.BatchRow.__table__, "newer")
            newer_txn = sa.alias(m.Txn.__table__, "newer_txn")
            # a later committed record of the same (kind, source): this one is not the newest
            superseded = (
                sa.select(newer.c.batch_id)
                .join(newer_txn, newer_txn.c.txn_id == newer.c.txn_id)
                .where(
                    newer.c.kind == b.kind,
                    sa.or_(
                        newer.c.source == b.source,
                        sa.and_(newer.c.source.is_(None), b.source.is_(None)),
                    ),
                    newer_txn.c.txn_state == TxnState.COMMITTED,
                    newer_txn.c.txn_commit_id > m.Txn.txn_commit_id,
                )
                .exists()
            )
            old = [
                r.batch_id
                for r in conn.execute(
                    sa.select(b.batch_id)
                    .join(m.Txn, m.Txn.txn_id == b.txn_id)
                    .where(
                        m.Txn.txn_state == TxnState.COMMITTED,
                        m.Txn.txn_committed < now - retain,
                        superseded,
                    )
                )
            ]
            for i in range(0, len(old), 500):
                n += (
                    conn.execute(sa.delete(b).where(b.batch_id.in_(old[i : i + 500]))).rowcount or 0
                )
            return n

        return self.db.run(fn)

    def purge_transactions(self) -> int:

        def fn(conn: sa.Connection) -> int:
            t, tw, cr = m.Txn, m.TxnToWriteId, m.CommitRecordRow
            oldest_open = conn.execute(
                sa.select(sa.func.min(t.txn_id)).where(t.txn_state == TxnState.OPEN)
            ).scalar()
            # every open transaction's snapshot includes a commit below this (Hive's rule for
            # TXN_TO_WRITE_ID: below the lowest open txn, a missing row means committed)
            bound: int = (
                oldest_open
                if oldest_open is not None
                else conn.execute(
                    sa.select(m.NextTxnId.ntxn_next).where(m.NextTxnId.id == 1)
                ).scalar_one()
            )
            purgeable: set[int] = set()
            blocked: set[int] = set()
            tables = conn.execute(sa.select(tw.db_name, tw.tbl_name).distinct()).all()
            for db, tbl in tables:
                first_record = conn.execute(
                    sa.select(sa.func.min(cr.commit_id)).where(cr.db_name == db, cr.tbl_name == tbl)
                ).scalar()
                # no commit record (no timeline to go by): the table's transactions stay
                limit = -1 if first_record is None else min(bound, first_record)
                rows = conn.execute(
                    sa.select(tw.write_id, tw.txn_id, t.txn_state, t.txn_commit_id)
                    .join(t, t.txn_id == tw.txn_id)
                    .where(tw.db_name == db, tw.tbl_name == tbl)
                    .order_by(tw.write_id)
                ).all()
                prefix = True
                for r in rows:
                    # the lowest write ids only (module doc): a purged write id counts as
                    # committed before every write id still listed
                    prefix = prefix and (
                        r.txn_state == TxnState.COMMITTED
                        and r.txn_commit_id is not None
                        and r.txn_commit_id < limit
                    )
                    (purgeable if prefix else blocked).add(r.txn_id)
            # transactions that wrote no table (compactions, empty ones): committed below bound
            written = sa.select(tw.txn_id).where(tw.txn_id == t.txn_id).exists()
            purgeable |= {
                r.txn_id
                for r in conn.execute(
                    sa.select(t.txn_id).where(
                        t.txn_state == TxnState.COMMITTED, t.txn_commit_id < bound, ~written
                    )
                )
            }
            ids = sorted(purgeable - blocked)
            referenced: set[int] = set()
            for model in (m.BatchRow, m.CdcTombstone, m.TxnComponent, m.HiveLock):
                for i in range(0, len(ids), 500):
                    referenced |= {
                        r.txn_id
                        for r in conn.execute(
                            sa.select(model.txn_id).where(model.txn_id.in_(ids[i : i + 500]))
                        )
                    }
            ids = [i for i in ids if i not in referenced]
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                conn.execute(sa.delete(tw).where(tw.txn_id.in_(chunk)))
                conn.execute(sa.delete(t).where(t.txn_id.in_(chunk)))
            return len(ids)

        return self.db.run(fn)
