"""Transactions in the SQL catalog (Hive ``TxnHandler`` over ``TXNS``, ``TXN_COMPONENTS``,
``COMPLETED_TXN_COMPONENTS``, ``TXN_TO_WRITE_ID``, ``NEXT_WRITE_ID``, ``WRITE_SET``): open,
heartbeat, write id allocation, components, commit with the write-set conflict check, abort,
listing, and the housekeeper's timeout (``AcidHouseKeeperService``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import sqlalchemy as sa

from acidflow.catalog.errors import (
    CatalogError,
    TxnAbortedError,
    TxnNotOpenError,
    WriteConflictError,
)
from acidflow.catalog.records import (
    OPERATIONS,
    TXN_STATES,
    WRITE_SET_OPERATIONS,
    TxnInfo,
    TxnState,
)
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, Deferred, utcnow
from acidflow.catalog.tabledef import as_utc, split_table_name
from acidflow.format import keys as acid_keys


class SqlTransactions:
    """Transactions, write ids and commits on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database.
        txn_timeout_s: seconds without heartbeat after which
            :meth:`abort_timed_out_transactions` aborts a transaction (Hive ``hive.txn.timeout``).
    """

    def __init__(self, db: Database, txn_timeout_s: int) -> None:
        self.db = db
        self.txn_timeout_s = txn_timeout_s

    def open_transaction(
        self, user: str | None = None, host: str | None = None, agent_info: str | None = None
    ) -> int:
        now = utcnow()

        def fn(conn: sa.Connection) -> int:
            info = agent_info if agent_info is not None else f"acidflow pid {os.getpid()}"
            txn_id = shared.open_txn_id(conn, info)
            shared.insert_open_txn(
                conn, txn_id, now, user or self.db.user, host or self.db.host, info
            )
            return txn_id

        return self.db.run(fn)

    def heartbeat(self, txn_id: int) -> None:
        now = utcnow()

        def fn(conn: sa.Connection) -> None:
            row = shared.open_txn_row(conn, txn_id)
            conn.execute(
                sa.update(m.Txn)
                .where(m.Txn.txn_id == txn_id)
                .values(txn_last_heartbeat=now, txn_heartbeat_count=row.txn_heartbeat_count + 1)
            )
            conn.execute(
                sa.update(m.HiveLock).where(m.HiveLock.txn_id == txn_id).values(last_heartbeat=now)
            )

        self.db.run(fn)

    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        """SQL: serialised on the table's ``next_write_id`` row (``SELECT ... FOR UPDATE``)."""
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> int:
            shared.open_txn_row(conn, txn_id)
            shared.table_row(conn, db, tbl)
            existing = conn.execute(
                sa.select(m.TxnToWriteId.write_id).where(
                    m.TxnToWriteId.txn_id == txn_id,
                    m.TxnToWriteId.db_name == db,
                    m.TxnToWriteId.tbl_name == tbl,
                )
            ).scalar()
            if existing is not None:
                return existing
            write_id = conn.execute(
                sa.select(m.NextWriteId.nwi_next)
                .where(m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl)
                .with_for_update()
            ).scalar_one()
            h = shared.hooks(conn)
            if h is not None:  # the authority's write id; the sequence follows it
                write_id = max(h.write_id(txn_id, db, tbl), 1)
            conn.execute(
                sa.update(m.NextWriteId)
                .where(m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl)
                .values(nwi_next=write_id + 1)
            )
            conn.execute(
                sa.insert(m.TxnToWriteId).values(
                    db_name=db, tbl_name=tbl, write_id=write_id, txn_id=txn_id
                )
            )
            return write_id

        return self.db.run(fn)

    def add_component(
        self, txn_id: int, table_name: str, partition: str | None, operation: str
    ) -> None:
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; expected one of {OPERATIONS}")
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> None:
            shared.open_txn_row(conn, txn_id)
            part = shared.check_partition(conn, db, tbl, partition)
            write_id = conn.execute(
                sa.select(m.TxnToWriteId.write_id).where(
                    m.TxnToWriteId.txn_id == txn_id,
                    m.TxnToWriteId.db_name == db,
                    m.TxnToWriteId.tbl_name == tbl,
                )
            ).scalar()
            if write_id is None:
                raise CatalogError(
                    f"txn {txn_id} has no write id for table {db}.{tbl}: call "
                    "allocate_write_id before add_component"
                )
            same_part = (
                m.TxnComponent.part_name.is_(None)
                if part is None
                else m.TxnComponent.part_name == part
            )
            dup = conn.execute(
                sa.select(m.TxnComponent.tc_id).where(
                    m.TxnComponent.txn_id == txn_id,
                    m.TxnComponent.db_name == db,
                    m.TxnComponent.tbl_name == tbl,
                    same_part,
                    m.TxnComponent.operation == operation,
                )
            ).first()
            if dup is None:
                conn.execute(
                    sa.insert(m.TxnComponent).values(
                        txn_id=txn_id,
                        db_name=db,
                        tbl_name=tbl,
                        part_name=part,
                        operation=operation,
                        write_id=write_id,
                    )
                )

        self.db.run(fn)

    def add_write_keys(
        self,
        txn_id: int,
        table_name: str,
        scopes: Mapping[tuple[str | None, int], np.ndarray | None],
    ) -> None:
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> None:
            shared.open_txn_row(conn, txn_id)
            shared.table_row(conn, db, tbl)
            rows = []
            for (partition, bucket), hashes in scopes.items():
                part = shared.check_partition(conn, db, tbl, partition)
                blob = None if hashes is None else acid_keys.pack_hashes(hashes)
                rows.append(
                    {
                        "txn_id": txn_id,
                        "commit_id": None,
                        "db_name": db,
                        "tbl_name": tbl,
                        "part_name": part,
                        "bucket": int(bucket),
                        "whole": hashes is None,
                        "key_count": 0 if blob is None else len(blob) // 8,
                        "key_hashes": blob,
                    }
                )
            if rows:
                conn.execute(sa.insert(m.WriteSetKey), rows)

        self.db.run(fn)

    @staticmethod
    def _key_conflict(conn: sa.Connection, txn_id: int) -> WriteConflictError | None:
        """The key-level write-set check of ``txn_id`` at commit: its recorded key scopes
        against those of transactions that committed after it opened (commit id > txn id), per
        table; overlapping scopes conflict when either is whole or their sorted hash arrays
        intersect. Returns the error to raise, or None."""
        wk = m.WriteSetKey
        mine = conn.execute(
            sa.select(wk.__table__).where(wk.txn_id == txn_id).order_by(wk.wk_id)
        ).all()
        others_of: dict[tuple[str, str], Sequence[shared.Row]] = {}
        for e in mine:
            table = (e.db_name, e.tbl_name)
            if table not in others_of:
                others_of[table] = conn.execute(
                    sa.select(wk.__table__)
                    .where(
                        wk.db_name == e.db_name,
                        wk.tbl_name == e.tbl_name,
                        wk.commit_id.is_not(None),
                        wk.commit_id > txn_id,
                        wk.txn_id != txn_id,
                    )
                    .order_by(wk.commit_id, wk.wk_id)
                ).all()
            mine_hashes = None if e.whole else acid_keys.unpack_hashes(e.key_hashes)
            for o in others_of[table]:
                if not (e.part_name is None or o.part_name is None or e.part_name == o.part_name):
                    continue
                if not (
                    e.bucket == acid_keys.ANY_BUCKET
                    or o.bucket == acid_keys.ANY_BUCKET
                    or e.bucket == o.bucket
                ):
                    continue
                sample: int | None = None
                if mine_hashes is not None and not o.whole:
                    common = acid_keys.intersect_hashes(
                        mine_hashes, acid_keys.unpack_hashes(o.key_hashes)
                    )
                    if not len(common):
                        continue
                    sample = int(common[0])
                elif mine_hashes is not None and not len(mine_hashes):
                    continue
                return WriteConflictError(
                    txn_id,
                    o.txn_id,
                    o.commit_id,
                    f"{e.db_name}.{e.tbl_name}",
                    e.part_name if e.part_name is not None else o.part_name,
                    "key write",
                    "key write",
                    key_hash=sample,
                    bucket=e.bucket if e.bucket != acid_keys.ANY_BUCKET else o.bucket,
                )
        return None

    def purge_write_sets(self) -> dict[str, int]:

        def fn(conn: sa.Connection) -> dict[str, int]:
            oldest = conn.execute(
                sa.select(sa.func.min(m.Txn.txn_id)).where(m.Txn.txn_state == TxnState.OPEN)
            ).scalar()
            horizon = oldest if oldest is not None else shared.current_txn_seq(conn)
            ws = conn.execute(sa.delete(m.WriteSet).where(m.WriteSet.commit_id < horizon))
            wk = m.WriteSetKey
            keys_done = conn.execute(
                sa.delete(wk).where(wk.commit_id.is_not(None), wk.commit_id < horizon)
            )
            dead = sa.select(m.Txn.txn_id).where(
                m.Txn.txn_state == TxnState.ABORTED, m.Txn.txn_id == wk.txn_id
            )
            keys_dead = conn.execute(sa.delete(wk).where(wk.commit_id.is_(None), dead.exists()))
            return {
                "write_set": ws.rowcount or 0,
                "write_set_keys": (keys_done.rowcount or 0) + (keys_dead.rowcount or 0),
            }

        return self.db.run(fn)

    def commit_transaction(
        self, txn_id: int, stats: dict[str, dict[str, Any]] | None = None
    ) -> int:
        """SQL: all of it in one database transaction."""
        stats_by_table: dict[tuple[str, str], dict] = {}
        for key, value in (stats or {}).items():
            if not isinstance(value, dict):
                raise ValueError(f"stats for {key!r} must be a dict")
            try:
                value = json.loads(json.dumps(value))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"stats for {key!r} are not JSON-serialisable: {exc}") from None
            stats_by_table[split_table_name(key)] = value

        def fn(conn: sa.Connection) -> int | Deferred:
            current = shared.txn_row(conn, txn_id)  # cheap pre-check before the global lock
            if current.txn_state == TxnState.COMMITTED:
                return current.txn_commit_id
            commit_id = shared.take_commit_id(conn)  # global order: next_txn_id, then txn row
            row = shared.txn_row(conn, txn_id, for_update=True)
            if row.txn_state == TxnState.COMMITTED:
                return row.txn_commit_id
            if row.txn_state == TxnState.ABORTED:
                raise TxnAbortedError(txn_id, row.txn_abort_reason)
            now = utcnow()
            write_ids = {
                (r.db_name, r.tbl_name): r.write_id
                for r in conn.execute(
                    sa.select(m.TxnToWriteId.__table__).where(m.TxnToWriteId.txn_id == txn_id)
                )
            }
            unknown = set(stats_by_table) - set(write_ids)
            if unknown:
                raise ValueError(
                    f"txn {txn_id}: stats given for tables it did not write: "
                    f"{sorted('.'.join(u) for u in unknown)}"
                )
            comps = conn.execute(
                sa.select(m.TxnComponent.__table__)
                .where(m.TxnComponent.txn_id == txn_id)
                .order_by(m.TxnComponent.tc_id)
            ).all()
            ws_comps = [c for c in comps if c.operation in WRITE_SET_OPERATIONS]
            for comp in ws_comps:
                hit = self._write_set_conflict(conn, txn_id, comp)
                if hit is not None:
                    err = WriteConflictError(
                        txn_id,
                        hit.txn_id,
                        hit.commit_id,
                        f"{comp.db_name}.{comp.tbl_name}",
                        comp.part_name if comp.part_name is not None else hit.part_name,
                        comp.operation,
                        hit.operation,
                    )
                    # Undo the sequence bump (we hold its row lock), then abort for good.
                    conn.execute(
                        sa.update(m.NextTxnId)
                        .where(m.NextTxnId.id == 1)
                        .values(ntxn_next=commit_id)
                    )
                    shared.abort_txns(conn, [txn_id], err.reason, now)
                    return Deferred(err)
            key_err = self._key_conflict(conn, txn_id)
            if key_err is not None:
                conn.execute(
                    sa.update(m.NextTxnId).where(m.NextTxnId.id == 1).values(ntxn_next=commit_id)
                )
                shared.abort_txns(conn, [txn_id], key_err.reason, now)
                return Deferred(key_err)
            conn.execute(
                sa.update(m.WriteSetKey)
                .where(m.WriteSetKey.txn_id == txn_id)
                .values(commit_id=commit_id)
            )
            if ws_comps:
                seen = set()
                rows = []
                for c in ws_comps:
                    key = (c.db_name, c.tbl_name, c.part_name, c.operation)
                    if key not in seen:
                        seen.add(key)
                        rows.append(
                            {
                                "txn_id": txn_id,
                                "commit_id": commit_id,
                                "db_name": c.db_name,
                                "tbl_name": c.tbl_name,
                                "part_name": c.part_name,
                                "operation": c.operation,
                            }
                        )
                conn.execute(sa.insert(m.WriteSet), rows)
            if comps:
                conn.execute(
                    sa.insert(m.CompletedTxnComponent),
                    [
                        {
                            "txn_id": txn_id,
                            "db_name": c.db_name,
                            "tbl_name": c.tbl_name,
                            "part_name": c.part_name,
                            "write_id": c.write_id,
                            "committed_at": now,
                            "update_delete": c.operation in WRITE_SET_OPERATIONS,
                        }
                        for c in comps
                    ],
                )
                conn.execute(sa.delete(m.TxnComponent).where(m.TxnComponent.txn_id == txn_id))
            if write_ids:
                records = []
                for (db, tbl), write_id in sorted(write_ids.items()):
                    ops = {c.operation for c in comps if (c.db_name, c.tbl_name) == (db, tbl)}
                    records.append(
                        {
                            "db_name": db,
                            "tbl_name": tbl,
                            "write_id": write_id,
                            "txn_id": txn_id,
                            "commit_id": commit_id,
                            "committed_at": now,
                            "operations": [o for o in OPERATIONS if o in ops],
                            "stats": stats_by_table.get((db, tbl), {}),
                        }
                    )
                conn.execute(sa.insert(m.CommitRecordRow), records)
            shared.commit_txn_row(conn, txn_id, commit_id, now)
            return commit_id

        return self.db.run(fn)

    @staticmethod
    def _write_set_conflict(
        conn: sa.Connection, txn_id: int, comp: shared.Row
    ) -> shared.Row | None:
        ws = m.WriteSet
        overlap: list[sa.ColumnElement[bool]] = [ws.part_name.is_(None)]
        if comp.part_name is None:
            overlap = [sa.true()]
        else:
            overlap.append(ws.part_name == comp.part_name)
        hit: shared.Row | None = conn.execute(
            sa.select(ws.txn_id, ws.commit_id, ws.part_name, ws.operation)
            .where(
                ws.db_name == comp.db_name,
                ws.tbl_name == comp.tbl_name,
                ws.commit_id > txn_id,
                ws.txn_id != txn_id,
                ws.operation.in_(sorted(WRITE_SET_OPERATIONS)),
                sa.or_(*overlap),
            )
            .order_by(ws.commit_id)
            .limit(1)
        ).first()
        return hit

    def abort_transaction(self, txn_id: int, reason: str = "") -> None:
        now = utcnow()

        def fn(conn: sa.Connection) -> None:
            row = shared.txn_row(conn, txn_id, for_update=True)
            if row.txn_state == TxnState.ABORTED:
                return None
            if row.txn_state == TxnState.COMMITTED:
                raise TxnNotOpenError(txn_id, row.txn_state)
            shared.abort_txns(conn, [txn_id], reason or "aborted by caller", now)
            return None

        self.db.run(fn)

    @staticmethod
    def _txn_infos(conn: sa.Connection, txn_rows: Sequence[shared.Row]) -> list[TxnInfo]:
        ids = [r.txn_id for r in txn_rows]
        write_ids: dict[int, dict[str, int]] = {i: {} for i in ids}
        if ids:
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                for r in conn.execute(
                    sa.select(m.TxnToWriteId.__table__).where(m.TxnToWriteId.txn_id.in_(chunk))
                ):
                    write_ids[r.txn_id][f"{r.db_name}.{r.tbl_name}"] = r.write_id
        return [
            TxnInfo(
                txn_id=r.txn_id,
                state=r.txn_state,
                user=r.txn_user,
                host=r.txn_host,
                agent_info=r.txn_agent_info,
                started_at=r.txn_started,
                last_heartbeat=r.txn_last_heartbeat,
                committed_at=r.txn_committed,
                aborted_at=r.txn_aborted,
                abort_reason=r.txn_abort_reason,
                write_ids=dict(sorted(write_ids[r.txn_id].items())),
                commit_id=r.txn_commit_id,
                heartbeat_count=r.txn_heartbeat_count,
            )
            for r in txn_rows
        ]

    def get_transaction(self, txn_id: int) -> TxnInfo:
        return self.db.run(
            lambda conn: self._txn_infos(conn, [shared.txn_row(conn, txn_id)])[0], write=False
        )

    def list_transactions(self, states: Iterable[str] | None = None) -> list[TxnInfo]:
        if isinstance(states, str):
            states = [states]
        wanted = None if states is None else sorted(set(states))
        if wanted is not None and set(wanted) - set(TXN_STATES):
            raise ValueError(f"unknown transaction states {wanted}; expected {TXN_STATES}")

        def fn(conn: sa.Connection) -> list[TxnInfo]:
            q = sa.select(m.Txn.__table__).order_by(m.Txn.txn_id)
            if wanted is not None:
                q = q.where(m.Txn.txn_state.in_(wanted))
            return self._txn_infos(conn, conn.execute(q).all())

        return self.db.run(fn, write=False)

    def abort_timed_out_transactions(self, now: datetime | None = None) -> list[int]:
        """SQL: on PostgreSQL, rows a committing transaction holds are skipped (``SKIP LOCKED``)."""
        now = as_utc(now) if now is not None else utcnow()
        cutoff = now - timedelta(seconds=self.txn_timeout_s)

        def fn(conn: sa.Connection) -> list[int]:
            ids = [
                r.txn_id
                for r in conn.execute(
                    sa.select(m.Txn.txn_id)
                    .where(m.Txn.txn_state == TxnState.OPEN, m.Txn.txn_last_heartbeat < cutoff)
                    .order_by(m.Txn.txn_id)
                    .with_for_update(skip_locked=True)
                )
            ]
            shared.abort_txns(conn, ids, "timed out", now)
            return ids

        return self.db.run(fn)
