"""Reader registrations in the SQL catalog: snapshot readers announce themselves so the
cleaner does not delete directories they may still read (acidflow's ``reader_registrations``;
Hive 4's cleaner gets the same answer from open transactions and ``MIN_HISTORY_LEVEL``)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

import sqlalchemy as sa

from acidflow.catalog.records import ReaderInfo, TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import as_utc, split_table_name
from acidflow.format.layout import ValidWriteIdList


class SqlReaders:
    """Reader registrations on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database.
        txn_timeout_s: default heartbeat age after which a registration counts as expired.
    """

    def __init__(self, db: Database, txn_timeout_s: int) -> None:
        self.db = db
        self.txn_timeout_s = txn_timeout_s

    def register_reader(
        self,
        table_name: str,
        valid_write_ids: ValidWriteIdList | None = None,
        *,
        agent_info: str | None = None,
    ) -> ReaderInfo:
        db, tbl = split_table_name(table_name)
        now = utcnow()

        def fn(conn: sa.Connection) -> ReaderInfo:
            shared.table_row(conn, db, tbl)
            seq = shared.current_txn_seq(conn)
            hwm = None if valid_write_ids is None else valid_write_ids.high_watermark
            vwil = None if valid_write_ids is None else str(valid_write_ids)
            agent = agent_info if agent_info is not None else f"reader pid {os.getpid()}"
            rid = conn.execute(
                sa.insert(m.ReaderRegistration).values(
                    db_name=db,
                    tbl_name=tbl,
                    snapshot_seq=seq,
                    high_watermark=hwm,
                    valid_write_ids=vwil,
                    started_at=now,
                    last_heartbeat=now,
                    reader_user=self.db.user,
                    reader_host=self.db.host,
                    agent_info=agent,
                )
            ).inserted_primary_key
            assert rid is not None  # INSERT of one row
            return ReaderInfo(
                reader_id=rid[0],
                table=f"{db}.{tbl}",
                snapshot_seq=seq,
                high_watermark=hwm,
                valid_write_ids=vwil,
                started_at=now,
                last_heartbeat=now,
                user=self.db.user,
                host=self.db.host,
                agent_info=agent,
            )

        return self.db.run(fn)

    def set_reader_snapshot(self, reader_id: int, valid_write_ids: ValidWriteIdList) -> None:

        def fn(conn: sa.Connection) -> None:
            conn.execute(
                sa.update(m.ReaderRegistration)
                .where(m.ReaderRegistration.reader_id == reader_id)
                .values(
                    high_watermark=valid_write_ids.high_watermark,
                    valid_write_ids=str(valid_write_ids),
                )
            )

        self.db.run(fn)

    def heartbeat_reader(self, reader_id: int) -> bool:
        now = utcnow()

        def fn(conn: sa.Connection) -> bool:
            res = conn.execute(
                sa.update(m.ReaderRegistration)
                .where(m.ReaderRegistration.reader_id == reader_id)
                .values(last_heartbeat=now)
            )
            return res.rowcount > 0

        return self.db.run(fn)

    def unregister_reader(self, reader_id: int) -> None:
        self.db.run(
            lambda conn: conn.execute(
                sa.delete(m.ReaderRegistration).where(m.ReaderRegistration.reader_id == reader_id)
            )
        )

    def list_readers(self, table_name: str | None = None) -> list[ReaderInfo]:

        def fn(conn: sa.Connection) -> list[ReaderInfo]:
            r = m.ReaderRegistration
            sel = sa.select(r.__table__).order_by(r.reader_id)
            if table_name is not None:
                db, tbl = split_table_name(table_name)
                sel = sel.where(r.db_name == db, r.tbl_name == tbl)
            return [
                ReaderInfo(
                    reader_id=x.reader_id,
                    table=f"{x.db_name}.{x.tbl_name}",
                    snapshot_seq=x.snapshot_seq,
                    high_watermark=x.high_watermark,
                    valid_write_ids=x.valid_write_ids,
                    started_at=x.started_at,
                    last_heartbeat=x.last_heartbeat,
                    user=x.reader_user,
                    host=x.reader_host,
                    agent_info=x.agent_info,
                )
                for x in conn.execute(sel)
            ]

        return self.db.run(fn, write=False)

    def purge_expired_readers(
        self, timeout_s: float | None = None, now: datetime | None = None
    ) -> list[int]:
        now = as_utc(now) if now is not None else utcnow()
        cutoff = now - timedelta(seconds=self.txn_timeout_s if timeout_s is None else timeout_s)

        def fn(conn: sa.Connection) -> list[int]:
            r = m.ReaderRegistration
            ids = [
                x.reader_id
                for x in conn.execute(sa.select(r.reader_id).where(r.last_heartbeat < cutoff))
            ]
            if ids:
                conn.execute(sa.delete(r).where(r.reader_id.in_(ids)))
            return sorted(ids)

        return self.db.run(fn)

    def blocking_readers(
        self,
        table_name: str,
        commit_id: int,
        *,
        timeout_s: float | None = None,
        now: datetime | None = None,
    ) -> dict[str, list[int]]:
        db, tbl = split_table_name(table_name)
        now = as_utc(now) if now is not None else utcnow()
        cutoff = now - timedelta(seconds=self.txn_timeout_s if timeout_s is None else timeout_s)

        def fn(conn: sa.Connection) -> dict[str, list[int]]:
            r = m.ReaderRegistration
            readers = [
                x.reader_id
                for x in conn.execute(
                    sa.select(r.reader_id)
                    .where(
                        r.db_name == db,
                        r.tbl_name == tbl,
                        r.snapshot_seq <= commit_id,
                        r.last_heartbeat >= cutoff,
                    )
                    .order_by(r.reader_id)
                )
            ]
            txns = [
                x.txn_id
                for x in conn.execute(
                    sa.select(m.Txn.txn_id)
                    .where(m.Txn.txn_state == TxnState.OPEN, m.Txn.txn_id < commit_id)
                    .order_by(m.Txn.txn_id)
                )
            ]
            return {"readers": readers, "txns": txns}

        return self.db.run(fn, write=False)
