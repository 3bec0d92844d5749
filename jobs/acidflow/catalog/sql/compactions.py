"""The compaction queue and its history in the SQL catalog (Hive ``TxnHandler.compact`` /
``showCompact`` and ``CompactionTxnHandler`` over ``COMPACTION_QUEUE`` /
``COMPLETED_COMPACTIONS``, kept here in one ``compaction_queue`` table), plus the initiator's
inputs (``findPotentialCompactions``) and the cleaner's bookkeeping of aborted components.

States (Hive's SHOW COMPACTIONS words, H4 ``TxnStore``): ``initiated`` -> ``working`` ->
``ready for cleaning`` -> ``succeeded``; ``failed`` from any running state; ``did not initiate``
(H3.1 "attempted": the initiator refused to queue after too many failures) and ``refused``
(a worker found nothing it may do) are recorded directly. Types: ``major``, ``minor``.

History retention (Hive ``hive.compactor.history.retention.succeeded`` 3,
``...failed`` 3, ``...attempted`` 2, per partition):
:meth:`SqlCompactions.purge_compaction_history`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from acidflow.catalog.errors import CatalogError, CompactionStateError
from acidflow.catalog.records import (
    ACTIVE_STATES,
    COMPACTION_STATES,
    COMPACTION_TYPES,
    DEFAULT_RETENTION,
    FINISHED_STATES,
    CompactionInfo,
    CompactionState,
    TxnState,
)
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import as_utc, split_table_name


def _info(r: shared.Row) -> CompactionInfo:
    return CompactionInfo(
        id=r.cq_id,
        table=f"{r.db_name}.{r.tbl_name}",
        partition=r.part_name,
        type=r.cq_type,
        state=r.cq_state,
        requester=r.cq_requester,
        worker_id=r.cq_worker_id,
        enqueued_at=r.cq_enqueue_time,
        started_at=r.cq_start,
        ended_at=r.cq_end,
        heartbeat=r.cq_heartbeat,
        error=r.cq_error_message,
        highest_write_id=r.cq_highest_write_id,
        txn_id=r.cq_txn_id,
        commit_id=r.cq_commit_id,
        properties=dict(r.cq_properties or {}),
        details=dict(r.cq_details or {}),
        metastore_cq_id=r.cq_metastore_id,
    )


class SqlCompactions:
    """Compaction queue and history on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database.
        txn_timeout_s: default heartbeat age after which a worker counts as dead.
    """

    def __init__(self, db: Database, txn_timeout_s: int) -> None:
        self.db = db
        self.txn_timeout_s = txn_timeout_s

    def enqueue_compaction(
        self,
        table_name: str,
        partition: str | None,
        compaction_type: str,
        *,
        requester: str = "initiator",
        state: str = CompactionState.INITIATED,
        error: str | None = None,
        properties: dict[str, Any] | None = None,
    ) -> CompactionInfo:
        if compaction_type not in COMPACTION_TYPES:
            raise ValueError(
                f"unknown compaction type {compaction_type!r}; expected one of {COMPACTION_TYPES}"
            )
        if state not in (
            CompactionState.INITIATED,
            CompactionState.DID_NOT_INITIATE,
            CompactionState.REFUSED,
        ):
            raise ValueError(
                f"a compaction is enqueued as 'initiated' or recorded as "
                f"'did not initiate'/'refused', not {state!r}"
            )
        db, tbl = split_table_name(table_name)
        now = utcnow()

        def fn(conn: sa.Connection) -> CompactionInfo:
            part = shared.check_partition(conn, db, tbl, partition)
            q = m.CompactionQueueRow
            if state == CompactionState.INITIATED:
                existing = conn.execute(
                    sa.select(q.__table__)
                    .where(
                        q.db_name == db,
                        q.tbl_name == tbl,
                        shared.same_part(q.part_name, part),
                        q.cq_state.in_((CompactionState.INITIATED, CompactionState.WORKING)),
                    )
                    .order_by(q.cq_id)
                    .with_for_update()
                ).first()
                if existing is not None:
                    return _info(existing)
            end = now if state != CompactionState.INITIATED else None
            inserted = conn.execute(
                sa.insert(q).values(
                    db_name=db,
                    tbl_name=tbl,
                    part_name=part,
                    cq_type=compaction_type,
                    cq_state=state,
                    cq_requester=requester,
                    cq_enqueue_time=now,
                    cq_end=end,
                    cq_error_message=error,
                    cq_properties=dict(properties or {}),
                    cq_details={},
                )
            ).inserted_primary_key
            assert inserted is not None  # INSERT of one row
            return _info(conn.execute(sa.select(q.__table__).where(q.cq_id == inserted[0])).one())

        return self.db.run(fn)

    def get_compaction(self, cq_id: int) -> CompactionInfo:

        def fn(conn: sa.Connection) -> CompactionInfo:
            r = conn.execute(
                sa.select(m.CompactionQueueRow.__table__).where(m.CompactionQueueRow.cq_id == cq_id)
            ).first()
            if r is None:
                raise CatalogError(f"no compaction with id {cq_id}")
            return _info(r)

        return self.db.run(fn, write=False)

    def list_compactions(
        self,
        table_name: str | None = None,
        states: Iterable[str] | None = None,
        partition: str | None = None,
        *,
        any_partition: bool = True,
    ) -> list[CompactionInfo]:
        if isinstance(states, str):
            states = [states]
        wanted = None if states is None else sorted(set(states))
        if wanted is not None and set(wanted) - set(COMPACTION_STATES):
            raise ValueError(f"unknown compaction states {wanted}; expected {COMPACTION_STATES}")

        def fn(conn: sa.Connection) -> list[CompactionInfo]:
            q = m.CompactionQueueRow
            sel = sa.select(q.__table__).order_by(q.cq_id)
            if table_name is not None:
                db, tbl = split_table_name(table_name)
                sel = sel.where(q.db_name == db, q.tbl_name == tbl)
            if not any_partition:
                sel = sel.where(shared.same_part(q.part_name, partition))
            if wanted is not None:
                sel = sel.where(q.cq_state.in_(wanted))
            return [_info(r) for r in conn.execute(sel)]

        return self.db.run(fn, write=False)

    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        now = utcnow()

        def fn(conn: sa.Connection) -> CompactionInfo | None:
            q = m.CompactionQueueRow
            sel = (
                sa.select(q.__table__)
                .where(q.cq_state == CompactionState.INITIATED)
                .order_by(q.cq_id)
            )
            if cq_id is not None:
                sel = sel.where(q.cq_id == cq_id)
            for r in conn.execute(sel.with_for_update()).all():
                busy = conn.execute(
                    sa.select(q.cq_id).where(
                        q.db_name == r.db_name,
                        q.tbl_name == r.tbl_name,
                        shared.same_part(q.part_name, r.part_name),
                        q.cq_state == CompactionState.WORKING,
                    )
                ).first()
                if busy is not None:
                    continue
                info = f"compactor {worker_id} cq {r.cq_id}"
                txn_id = shared.open_txn_id(conn, info)
                shared.insert_open_txn(conn, txn_id, now, self.db.user, self.db.host, info)
                conn.execute(
                    sa.update(q)
                    .where(q.cq_id == r.cq_id)
                    .values(
                        cq_state=CompactionState.WORKING,
                        cq_worker_id=worker_id,
                        cq_start=now,
                        cq_heartbeat=now,
                        cq_txn_id=txn_id,
                        cq_error_message=None,
                    )
                )
                return _info(conn.execute(sa.select(q.__table__).where(q.cq_id == r.cq_id)).one())
            return None

        return self.db.run(fn)

    @staticmethod
    def _entry(
        conn: sa.Connection, cq_id: int, states: tuple[str, ...] | None = None
    ) -> shared.Row:
        r = conn.execute(
            sa.select(m.CompactionQueueRow.__table__)
            .where(m.CompactionQueueRow.cq_id == cq_id)
            .with_for_update()
        ).first()
        if r is None:
            raise CatalogError(f"no compaction with id {cq_id}")
        if states is not None and r.cq_state not in states:
            raise CompactionStateError(
                f"compaction {cq_id} is {r.cq_state!r}, expected one of "
                f"{tuple(str(s) for s in states)}"
            )
        return r

    def heartbeat_compaction(self, cq_id: int) -> None:
        now = utcnow()

        def fn(conn: sa.Connection) -> None:
            r = self._entry(conn, cq_id, (CompactionState.WORKING,))
            conn.execute(
                sa.update(m.CompactionQueueRow)
                .where(m.CompactionQueueRow.cq_id == cq_id)
                .values(cq_heartbeat=now)
            )
            if r.cq_txn_id is not None:
                conn.execute(
                    sa.update(m.Txn)
                    .where(m.Txn.txn_id == r.cq_txn_id, m.Txn.txn_state == TxnState.OPEN)
                    .values(txn_last_heartbeat=now)
                )

        self.db.run(fn)

    def update_compaction(
        self,
        cq_id: int,
        *,
        highest_write_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:

        def fn(conn: sa.Connection) -> None:
            r = self._entry(conn, cq_id, ACTIVE_STATES)
            values: dict[str, Any] = {}
            if highest_write_id is not None:
                values["cq_highest_write_id"] = int(highest_write_id)
            if details:
                merged = dict(r.cq_details or {})
                merged.update(details)
                values["cq_details"] = merged
            if values:
                conn.execute(
                    sa.update(m.CompactionQueueRow)
                    .where(m.CompactionQueueRow.cq_id == cq_id)
                    .values(**values)
                )

        self.db.run(fn)

    def mark_compaction_ready_for_cleaning(
        self, cq_id: int, highest_write_id: int, details: dict[str, Any] | None = None
    ) -> int:
        now = utcnow()

        def fn(conn: sa.Connection) -> int:
            r = self._entry(conn, cq_id, (CompactionState.WORKING,))
            commit_id = shared.take_commit_id(conn)
            if r.cq_txn_id is not None:
                shared.commit_txn_row(conn, r.cq_txn_id, commit_id, now)
            merged = dict(r.cq_details or {})
            merged.update(details or {})
            conn.execute(
                sa.update(m.CompactionQueueRow)
                .where(m.CompactionQueueRow.cq_id == cq_id)
                .values(
                    cq_state=CompactionState.READY_FOR_CLEANING,
                    cq_highest_write_id=int(highest_write_id),
                    cq_commit_id=commit_id,
                    cq_heartbeat=now,
                    cq_details=merged,
                )
            )
            return commit_id

        return self.db.run(fn)

    def mark_compaction_succeeded(self, cq_id: int, details: dict[str, Any] | None = None) -> None:
        now = utcnow()

        def fn(conn: sa.Connection) -> None:
            r = self._entry(conn, cq_id, (CompactionState.READY_FOR_CLEANING,))
            merged = dict(r.cq_details or {})
            merged.update(details or {})
            conn.execute(
                sa.update(m.CompactionQueueRow)
                .where(m.CompactionQueueRow.cq_id == cq_id)
                .values(cq_state=CompactionState.SUCCEEDED, cq_end=now, cq_details=merged)
            )

        self.db.run(fn)

    def mark_compaction_failed(
        self, cq_id: int, error: str, details: dict[str, Any] | None = None
    ) -> None:
        now = utcnow()

        def fn(conn: sa.Connection) -> None:
            r = self._entry(conn, cq_id)
            if r.cq_state in (
                CompactionState.FAILED,
                CompactionState.DID_NOT_INITIATE,
                CompactionState.REFUSED,
            ):
                return None
            if r.cq_state == CompactionState.SUCCEEDED:
                raise CompactionStateError(f"compaction {cq_id} already succeeded")
            if r.cq_txn_id is not None:
                if shared.txn_state(conn, r.cq_txn_id) == TxnState.OPEN:
                    shared.abort_txns(
                        conn, [r.cq_txn_id], f"compaction failed: {error}"[:2000], now
                    )
            merged = dict(r.cq_details or {})
            merged.update(details or {})
            conn.execute(
                sa.update(m.CompactionQueueRow)
                .where(m.CompactionQueueRow.cq_id == cq_id)
                .values(
                    cq_state=CompactionState.FAILED,
                    cq_end=now,
                    cq_error_message=error,
                    cq_details=merged,
                )
            )
            return None

        self.db.run(fn)

    def reclaim_dead_compactions(
        self, timeout_s: float | None = None, now: datetime | None = None
    ) -> list[int]:
        now = as_utc(now) if now is not None else utcnow()
        cutoff = now - timedelta(seconds=self.txn_timeout_s if timeout_s is None else timeout_s)

        def fn(conn: sa.Connection) -> list[int]:
            q = m.CompactionQueueRow
            rows = conn.execute(
                sa.select(q.__table__)
                .where(q.cq_state == CompactionState.WORKING, q.cq_heartbeat < cutoff)
                .with_for_update()
            ).all()
            for r in rows:
                if r.cq_txn_id is not None:
                    t = conn.execute(
                        sa.select(m.Txn.txn_state).where(m.Txn.txn_id == r.cq_txn_id)
                    ).scalar()
                    if t == TxnState.OPEN:
                        shared.abort_txns(conn, [r.cq_txn_id], "compaction worker timed out", now)
                details = dict(r.cq_details or {})
                details.setdefault("reclaimed", []).append(
                    {"worker_id": r.cq_worker_id, "at": now.isoformat()}
                )
                conn.execute(
                    sa.update(q)
                    .where(q.cq_id == r.cq_id)
                    .values(
                        cq_state=CompactionState.INITIATED,
                        cq_worker_id=None,
                        cq_start=None,
                        cq_heartbeat=None,
                        cq_txn_id=None,
                        cq_details=details,
                    )
                )
            return [r.cq_id for r in rows]

        return self.db.run(fn)

    def link_metastore_compaction(self, cq_id: int, metastore_cq_id: int) -> CompactionInfo:
        """Record that entry ``cq_id`` is the Hive metastore's ``COMPACTION_QUEUE`` entry
        ``metastore_cq_id`` (the ``thrift://`` catalog's link, docs/hms-catalog.md).

        Returns:
            The entry with the link.
        Raises:
            CatalogError: unknown id.
        """

        def fn(conn: sa.Connection) -> CompactionInfo:
            self._entry(conn, cq_id)
            q = m.CompactionQueueRow
            conn.execute(
                sa.update(q).where(q.cq_id == cq_id).values(cq_metastore_id=metastore_cq_id)
            )
            return _info(conn.execute(sa.select(q.__table__).where(q.cq_id == cq_id)).one())

        return self.db.run(fn)

    def compaction_history(self, table_name: str, partition: str | None) -> list[CompactionInfo]:
        items = self.list_compactions(table_name, FINISHED_STATES, partition, any_partition=False)
        return sorted(items, key=lambda c: c.id, reverse=True)

    def purge_compaction_history(self, retention: dict[str, int] | None = None) -> list[int]:
        keep = dict(DEFAULT_RETENTION)
        keep.update(retention or {})

        def fn(conn: sa.Connection) -> list[int]:
            q = m.CompactionQueueRow
            rows = conn.execute(
                sa.select(q.cq_id, q.db_name, q.tbl_name, q.part_name, q.cq_state)
                .where(q.cq_state.in_(FINISHED_STATES))
                .order_by(q.cq_id.desc())
            ).all()
            seen: dict[tuple, int] = {}
            doomed = []
            for r in rows:
                bucket = (
                    CompactionState.FAILED if r.cq_state == CompactionState.REFUSED else r.cq_state
                )
                key = (r.db_name, r.tbl_name, r.part_name, bucket)
                seen[key] = seen.get(key, 0) + 1
                if seen[key] > keep.get(bucket, 0):
                    doomed.append(r.cq_id)
            for i in range(0, len(doomed), 500):
                conn.execute(sa.delete(q).where(q.cq_id.in_(doomed[i : i + 500])))
            return sorted(doomed)

        return self.db.run(fn)

    # ------------------------------------------------------------------ initiator inputs
    def compaction_candidates(self) -> list[tuple[str, str | None, int]]:

        def fn(conn: sa.Connection) -> list[tuple[str, str | None, int]]:
            c = m.CompletedTxnComponent
            written: dict[tuple[str, str, str | None], int] = {}
            for r in conn.execute(
                sa.select(
                    c.db_name, c.tbl_name, c.part_name, sa.func.max(c.write_id).label("w")
                ).group_by(c.db_name, c.tbl_name, c.part_name)
            ):
                written[(r.db_name, r.tbl_name, r.part_name)] = r.w
            tc = m.TxnComponent
            for r in conn.execute(
                sa.select(
                    tc.db_name, tc.tbl_name, tc.part_name, sa.func.max(tc.write_id).label("w")
                )
                .join(m.Txn, m.Txn.txn_id == tc.txn_id)
                .where(m.Txn.txn_state == TxnState.ABORTED)
                .group_by(tc.db_name, tc.tbl_name, tc.part_name)
            ):
                key = (r.db_name, r.tbl_name, r.part_name)
                written[key] = max(written.get(key, 0), r.w)
            q = m.CompactionQueueRow
            covered: dict[tuple[str, str, str | None], int] = {}
            for cv in conn.execute(
                sa.select(
                    q.db_name,
                    q.tbl_name,
                    q.part_name,
                    sa.func.max(q.cq_highest_write_id).label("w"),
                )
                .where(
                    q.cq_state.in_((CompactionState.READY_FOR_CLEANING, CompactionState.SUCCEEDED))
                )
                .group_by(q.db_name, q.tbl_name, q.part_name)
            ):
                covered[(cv.db_name, cv.tbl_name, cv.part_name)] = cv.w or 0
            live = {
                (r.db_name, r.tbl_name)
                for r in conn.execute(sa.select(m.Tbl.db_name, m.Tbl.tbl_name))
            }
            out = []
            for key, w in written.items():
                if (key[0], key[1]) in live and w > covered.get(key, 0):
                    out.append((f"{key[0]}.{key[1]}", key[2], w))
            return sorted(out, key=lambda x: (x[0], x[1] or ""))

        return self.db.run(fn, write=False)

    def aborted_write_ids(
        self, table_name: str, partition: str | None = None, *, any_partition: bool = False
    ) -> list[int]:
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> list[int]:
            if any_partition:
                t = m.TxnToWriteId
                return sorted(
                    {
                        r.write_id
                        for r in conn.execute(
                            sa.select(t.write_id)
                            .join(m.Txn, m.Txn.txn_id == t.txn_id)
                            .where(
                                t.db_name == db,
                                t.tbl_name == tbl,
                                m.Txn.txn_state == TxnState.ABORTED,
                            )
                        )
                    }
                )
            tc = m.TxnComponent
            return sorted(
                {
                    r.write_id
                    for r in conn.execute(
                        sa.select(tc.write_id)
                        .join(m.Txn, m.Txn.txn_id == tc.txn_id)
                        .where(
                            tc.db_name == db,
                            tc.tbl_name == tbl,
                            shared.same_part(tc.part_name, partition),
                            m.Txn.txn_state == TxnState.ABORTED,
                        )
                    )
                }
            )

        return self.db.run(fn, write=False)

    def forget_aborted_components(self, table_name: str, up_to_write_id: int) -> int:
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> int:
            tc = m.TxnComponent
            ids = [
                r.tc_id
                for r in conn.execute(
                    sa.select(tc.tc_id)
                    .join(m.Txn, m.Txn.txn_id == tc.txn_id)
                    .where(
                        tc.db_name == db,
                        tc.tbl_name == tbl,
                        tc.write_id <= up_to_write_id,
                        m.Txn.txn_state == TxnState.ABORTED,
                    )
                )
            ]
            for i in range(0, len(ids), 500):
                conn.execute(sa.delete(tc).where(tc.tc_id.in_(ids[i : i + 500])))
            return len(ids)

        return self.db.run(fn)
