"""Locks in the SQL catalog (Hive ``TxnHandler.lock`` / ``checkLock`` / ``unlock`` over
``HIVE_LOCKS`` and ``NEXT_LOCK_ID``, as ``DbLockManager`` uses them): acquire with waiting,
release, list."""

from __future__ import annotations

import time
from datetime import datetime

import sqlalchemy as sa

from acidflow.catalog.errors import LockTimeoutError
from acidflow.catalog.records import LOCK_TYPES, LockInfo, LockState, LockType
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import split_table_name


class SqlLocks:
    """Table and partition locks on a :class:`~acidflow.catalog.sql.db.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def acquire_lock(
        self,
        txn_id: int,
        table_name: str,
        partition: str | None,
        lock_type: str,
        timeout_s: float = 60.0,
    ) -> int:
        if lock_type not in LOCK_TYPES:
            raise ValueError(f"unknown lock type {lock_type!r}; expected one of {LOCK_TYPES}")
        db, tbl = split_table_name(table_name)
        deadline = time.monotonic() + max(0.0, float(timeout_s))

        def enqueue(conn: sa.Connection) -> tuple[int, str | None, tuple[int, int] | None]:
            txn = shared.open_txn_row(conn, txn_id)
            part = shared.check_partition(conn, db, tbl, partition)
            same_part = (
                m.HiveLock.part_name.is_(None) if part is None else m.HiveLock.part_name == part
            )
            held = conn.execute(
                sa.select(m.HiveLock.lock_id).where(
                    m.HiveLock.txn_id == txn_id,
                    m.HiveLock.db_name == db,
                    m.HiveLock.tbl_name == tbl,
                    same_part,
                    m.HiveLock.lock_type == lock_type,
                    m.HiveLock.lock_state == LockState.ACQUIRED,
                )
            ).scalar()
            if held is not None:
                return int(held), part, None
            lock_id: int = conn.execute(
                sa.select(m.NextLockId.nl_next).where(m.NextLockId.id == 1).with_for_update()
            ).scalar_one()
            conn.execute(
                sa.update(m.NextLockId).where(m.NextLockId.id == 1).values(nl_next=lock_id + 1)
            )
            now = utcnow()
            conn.execute(
                sa.insert(m.HiveLock).values(
                    lock_id=lock_id,
                    txn_id=txn_id,
                    db_name=db,
                    tbl_name=tbl,
                    part_name=part,
                    lock_type=lock_type,
                    lock_state=LockState.WAITING,
                    requested_at=now,
                    acquired_at=None,
                    last_heartbeat=now,
                    lock_user=txn.txn_user,
                    lock_host=txn.txn_host,
                    agent_info=txn.txn_agent_info,
                )
            )
            blocker = self._grant(conn, lock_id, txn_id, db, tbl, part, lock_type, now)
            return lock_id, part, blocker

        lock_id, part, blocker = self.db.run(enqueue)
        sleep = 0.02
        while blocker is not None:
            if time.monotonic() >= deadline:
                self.db.run(lambda conn: self._remove_waiting(conn, lock_id))
                raise LockTimeoutError(
                    txn_id, f"{db}.{tbl}", part, lock_type, timeout_s, blocker[0], blocker[1]
                )
            time.sleep(min(sleep, max(0.0, deadline - time.monotonic())))
            sleep = min(sleep * 1.5, 0.5)

            def poll(conn: sa.Connection) -> tuple[int, int] | None:
                # An abort/commit meanwhile has already deleted our request; just raise.
                shared.open_txn_row(conn, txn_id)
                now = utcnow()
                conn.execute(
                    sa.update(m.Txn).where(m.Txn.txn_id == txn_id).values(txn_last_heartbeat=now)
                )
                conn.execute(
                    sa.select(m.NextLockId.nl_next).where(m.NextLockId.id == 1).with_for_update()
                )
                return self._grant(conn, lock_id, txn_id, db, tbl, part, lock_type, now)

            blocker = self.db.run(poll)
        return lock_id

    @staticmethod
    def _remove_waiting(conn: sa.Connection, lock_id: int) -> None:
        conn.execute(
            sa.delete(m.HiveLock).where(
                m.HiveLock.lock_id == lock_id, m.HiveLock.lock_state == LockState.WAITING
            )
        )

    @staticmethod
    def _grant(
        conn: sa.Connection,
        lock_id: int,
        txn_id: int,
        db: str,
        tbl: str,
        part: str | None,
        lock_type: str,
        now: datetime,
    ) -> tuple[int, int] | None:
        """Grant the waiting lock if nothing blocks it; else return ``(lock_id, txn_id)`` of
        a blocker. Caller holds the ``next_lock_id`` row lock (Hive's CheckLock mutex)."""
        others = conn.execute(
            sa.select(
                m.HiveLock.lock_id,
                m.HiveLock.txn_id,
                m.HiveLock.part_name,
                m.HiveLock.lock_type,
                m.HiveLock.lock_state,
            )
            .where(
                m.HiveLock.db_name == db, m.HiveLock.tbl_name == tbl, m.HiveLock.txn_id != txn_id
            )
            .order_by(m.HiveLock.lock_id)
        ).all()
        for other in others:
            if part is not None and other.part_name is not None and other.part_name != part:
                continue  # different partitions
            if lock_type != LockType.EXCLUSIVE and other.lock_type != LockType.EXCLUSIVE:
                continue  # shared_read / shared_write are mutually compatible
            if other.lock_state == LockState.ACQUIRED or other.lock_id < lock_id:
                return other.lock_id, other.txn_id
        conn.execute(
            sa.update(m.HiveLock)
            .where(m.HiveLock.lock_id == lock_id)
            .values(lock_state=LockState.ACQUIRED, acquired_at=now, last_heartbeat=now)
        )
        return None

    def release_locks(self, txn_id: int) -> None:

        def fn(conn: sa.Connection) -> None:
            shared.txn_row(conn, txn_id, for_update=True)
            conn.execute(sa.delete(m.HiveLock).where(m.HiveLock.txn_id == txn_id))

        self.db.run(fn)

    def list_locks(self, table_name: str | None = None) -> list[LockInfo]:

        def fn(conn: sa.Connection) -> list[LockInfo]:
            q = sa.select(m.HiveLock.__table__).order_by(m.HiveLock.lock_id)
            if table_name is not None:
                db, tbl = split_table_name(table_name)
                q = q.where(m.HiveLock.db_name == db, m.HiveLock.tbl_name == tbl)
            return [
                LockInfo(
                    lock_id=r.lock_id,
                    txn_id=r.txn_id,
                    table=f"{r.db_name}.{r.tbl_name}",
                    partition=r.part_name,
                    lock_type=r.lock_type,
                    state=r.lock_state,
                    requested_at=r.requested_at,
                    acquired_at=r.acquired_at,
                    last_heartbeat=r.last_heartbeat,
                    user=r.lock_user,
                    host=r.lock_host,
                    agent_info=r.agent_info,
                )
                for r in conn.execute(q)
            ]

        return self.db.run(fn, write=False)
