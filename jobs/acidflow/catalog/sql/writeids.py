"""Write ids and snapshots in the SQL catalog: the reader's ``ValidWriteIdList`` of a table
(Hive ``TxnHandler.getValidWriteIds``), every write id's state, and the commit records
(what each committed transaction did to a table)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from acidflow.catalog.records import CommitRecord, TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database
from acidflow.catalog.tabledef import as_utc, split_table_name
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.timetravel import WriteIdHistory, snapshot_as_of

#: ``(table, high_watermark, open_write_ids, aborted_write_ids, min_open_write_id)``
RawSnapshot = tuple[str, int, tuple[int, ...], tuple[int, ...], int | None]


class SqlWriteIds:
    """Snapshots and write id history on a :class:`~acidflow.catalog.sql.db.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def write_id_snapshot(
        self,
        table_name: str,
        txn_id: int | None = None,
        *,
        oldest_open: bool = False,
    ) -> RawSnapshot:
        """Raw ``(table, high_watermark, open_write_ids, aborted_write_ids, min_open_write_id)``
        behind :meth:`valid_write_ids` (sorted tuples); ``oldest_open``: the snapshot of the
        oldest open transaction without its own writes (:meth:`compactor_valid_write_ids`)."""
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> RawSnapshot:
            shared.table_row(conn, db, tbl)
            if txn_id is not None:
                shared.txn_row(conn, txn_id)
            horizon = txn_id
            if oldest_open:
                horizon = conn.execute(
                    sa.select(sa.func.min(m.Txn.txn_id)).where(m.Txn.txn_state == TxnState.OPEN)
                ).scalar()
            hwm = (
                conn.execute(
                    sa.select(m.NextWriteId.nwi_next).where(
                        m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl
                    )
                ).scalar_one()
                - 1
            )
            not_visible: sa.ColumnElement[bool] = m.Txn.txn_state.in_(
                (TxnState.OPEN, TxnState.ABORTED)
            )
            if horizon is not None:
                # snapshot at open (Hive's ValidTxnList of openTxns): a transaction that
                # committed after txn_id opened (commit id > txn_id; both come from one
                # sequence) is still open for txn_id's reads
                not_visible = sa.or_(
                    not_visible,
                    sa.and_(m.Txn.txn_state == TxnState.COMMITTED, m.Txn.txn_commit_id > horizon),
                )
            rows = conn.execute(
                sa.select(m.TxnToWriteId.write_id, m.TxnToWriteId.txn_id, m.Txn.txn_state)
                .join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id)
                .where(
                    m.TxnToWriteId.db_name == db,
                    m.TxnToWriteId.tbl_name == tbl,
                    m.TxnToWriteId.write_id <= hwm,
                    not_visible,
                )
                .order_by(m.TxnToWriteId.write_id)
            ).all()
            open_ids = tuple(
                r.write_id
                for r in rows
                if r.txn_state in (TxnState.OPEN, TxnState.COMMITTED) and r.txn_id != txn_id
            )
            aborted = tuple(
                r.write_id for r in rows if r.txn_state == TxnState.ABORTED and r.txn_id != txn_id
            )
            return (f"{db}.{tbl}", hwm, open_ids, aborted, open_ids[0] if open_ids else None)

        return self.db.run(fn, write=False)

    def valid_write_ids(
        self,
        table_name: str,
        txn_id: int | None = None,
        as_of_write_id: int | None = None,
        *,
        as_of_timestamp: datetime | None = None,
    ) -> ValidWriteIdList:
        """SQL: time travel from the table's ``txn_to_write_id`` rows and their transactions'
        commit ids (kept for every transaction; commit records may be purged)."""
        if as_of_write_id is not None and as_of_write_id < 0:
            raise ValueError(f"as_of_write_id must be >= 0, got {as_of_write_id}")
        if as_of_write_id is not None or as_of_timestamp is not None:
            if as_of_write_id is not None and as_of_timestamp is not None:
                raise ValueError("give as_of_write_id or as_of_timestamp, not both")
            db, tbl = split_table_name(table_name)
            return snapshot_as_of(
                f"{db}.{tbl}",
                self.write_id_history(table_name),
                write_id=as_of_write_id,
                timestamp=None if as_of_timestamp is None else as_utc(as_of_timestamp),
                highest_allocated=self.highest_allocated(table_name),
            )
        name, hwm, open_ids, aborted, min_open = self.write_id_snapshot(table_name, txn_id)
        return ValidWriteIdList(
            name,
            hwm,
            open_write_ids=open_ids,
            aborted_write_ids=aborted,
            min_open_write_id=min_open,
        )

    def compactor_valid_write_ids(self, table_name: str) -> ValidWriteIdList:
        name, hwm, open_ids, aborted, min_open = self.write_id_snapshot(
            table_name, oldest_open=True
        )
        return ValidWriteIdList(
            name,
            hwm,
            open_write_ids=open_ids,
            aborted_write_ids=aborted,
            min_open_write_id=min_open,
        )

    def write_id_states(self, table_name: str) -> list[tuple[int, int, str]]:
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> list[tuple[int, int, str]]:
            shared.table_row(conn, db, tbl)
            rows = conn.execute(
                sa.select(m.TxnToWriteId.write_id, m.TxnToWriteId.txn_id, m.Txn.txn_state)
                .join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id, isouter=True)
                .where(m.TxnToWriteId.db_name == db, m.TxnToWriteId.tbl_name == tbl)
                .order_by(m.TxnToWriteId.write_id)
            ).all()
            return [(r.write_id, r.txn_id, r.txn_state or TxnState.COMMITTED) for r in rows]

        return self.db.run(fn, write=False)

    def highest_allocated(self, table_name: str) -> int:
        """The table's highest allocated write id (``next_write_id`` - 1)."""
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> int:
            shared.table_row(conn, db, tbl)
            nxt = conn.execute(
                sa.select(m.NextWriteId.nwi_next).where(
                    m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl
                )
            ).scalar_one()
            return int(nxt) - 1

        return self.db.run(fn, write=False)

    def write_id_history(self, table_name: str) -> list[WriteIdHistory]:
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> list[WriteIdHistory]:
            shared.table_row(conn, db, tbl)
            rows = conn.execute(
                sa.select(
                    m.TxnToWriteId.write_id,
                    m.Txn.txn_state,
                    m.Txn.txn_commit_id,
                    m.Txn.txn_committed,
                )
                .join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id, isouter=True)
                .where(m.TxnToWriteId.db_name == db, m.TxnToWriteId.tbl_name == tbl)
                .order_by(m.TxnToWriteId.write_id)
            ).all()
            return [
                WriteIdHistory(
                    r.write_id,
                    r.txn_state or TxnState.COMMITTED,
                    r.txn_commit_id,
                    None if r.txn_committed is None else as_utc(r.txn_committed),
                )
                for r in rows
            ]

        return self.db.run(fn, write=False)

    def commit_records(self, table_name: str) -> list[CommitRecord]:
        db, tbl = split_table_name(table_name)

        def fn(conn: sa.Connection) -> list[CommitRecord]:
            shared.table_row(conn, db, tbl)
            rows = conn.execute(
                sa.select(m.CommitRecordRow.__table__)
                .where(m.CommitRecordRow.db_name == db, m.CommitRecordRow.tbl_name == tbl)
                .order_by(m.CommitRecordRow.write_id)
            ).all()
            return [
                CommitRecord(
                    table=f"{db}.{tbl}",
                    write_id=r.write_id,
                    txn_id=r.txn_id,
                    commit_id=r.commit_id,
                    committed_at=r.committed_at,
                    operations=list(r.operations or []),
                    stats=dict(r.stats or {}),
                )
                for r in rows
            ]

        return self.db.run(fn, write=False)
