"""Data file records in the SQL catalog (revision 0008, ``data_files``): what each write's
transaction wrote, read back for the transactions that committed; repairs mark losses."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from acidflow.catalog.records import TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import split_table_name
from acidflow.format.filerecords import FileRecord


class SqlDataFiles:
    """Data file records on a :class:`~acidflow.catalog.sql.db.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def record_data_files(self, txn_id: int, table_name: str, files: Iterable[FileRecord]) -> None:
        db, tbl = split_table_name(table_name)
        rows = {
            (f.partition, f.path): {
                "db_name": db,
                "tbl_name": tbl,
                "part_path": f.partition,
                "file_path": f.path,
                "write_id": int(f.write_id),
                "txn_id": int(txn_id),
                "file_size": int(f.size),
                "row_count": int(f.rows),
                "lost_at": None,
                "lost_note": None,
            }
            for f in files
        }
        if not rows:
            return

        def fn(conn: sa.Connection) -> None:
            shared.table_row(conn, db, tbl)
            shared.txn_row(conn, txn_id)
            d = m.DataFileRow
            for part, path in rows:
                conn.execute(
                    sa.delete(d).where(
                        d.db_name == db,
                        d.tbl_name == tbl,
                        d.part_path == part,
                        d.file_path == path,
                    )
                )
            conn.execute(sa.insert(d), list(rows.values()))

        self.db.run(fn)

    def data_file_records(self, table_name: str, partition: str | None = None) -> list[FileRecord]:
        db, tbl = split_table_name(table_name)
        d = m.DataFileRow

        def fn(conn: sa.Connection) -> list[FileRecord]:
            shared.table_row(conn, db, tbl)
            q = (
                sa.select(
                    d.part_path,
                    d.file_path,
                    d.write_id,
                    d.file_size,
                    d.row_count,
                    d.txn_id,
                    d.lost_at,
                    d.lost_note,
                )
                .join(m.Txn, m.Txn.txn_id == d.txn_id, isouter=True)
                .where(
                    d.db_name == db,
                    d.tbl_name == tbl,
                    # no txns row: a committed transaction the cleaner purged (purge_transactions)
                    sa.or_(m.Txn.txn_state == TxnState.COMMITTED, m.Txn.txn_id.is_(None)),
                )
            )
            if partition is not None:
                q = q.where(d.part_path == partition)
            return [
                FileRecord(
                    r.part_path,
                    r.file_path,
                    r.write_id,
                    r.file_size,
                    r.row_count,
                    r.txn_id,
                    r.lost_at is not None,
                    r.lost_note or "",
                )
                for r in conn.execute(q.order_by(d.part_path, d.file_path))
            ]

        return self.db.run(fn, write=False)

    def mark_data_files_lost(
        self, table_name: str, files: Iterable[tuple[str, str]], note: str
    ) -> int:
        db, tbl = split_table_name(table_name)
        wanted = sorted(set(files))
        d = m.DataFileRow

        def fn(conn: sa.Connection) -> int:
            shared.table_row(conn, db, tbl)
            now = utcnow()
            n = 0
            for part, path in wanted:
                n += conn.execute(
                    sa.update(d)
                    .where(
                        d.db_name == db,
                        d.tbl_name == tbl,
                        d.part_path == part,
                        d.file_path == path,
                    )
                    .values(lost_at=now, lost_note=note)
                ).rowcount
            return n

        return self.db.run(fn)

    def forget_data_files(self, table_name: str, directories: Iterable[tuple[str, str]]) -> int:
        db, tbl = split_table_name(table_name)
        wanted = sorted(set(directories))
        d = m.DataFileRow

        def fn(conn: sa.Connection) -> int:
            shared.table_row(conn, db, tbl)
            n = 0
            for part, directory in wanted:
                n += conn.execute(
                    sa.delete(d).where(
                        d.db_name == db,
                        d.tbl_name == tbl,
                        d.part_path == part,
                        d.file_path.startswith(f"{directory}/", autoescape=True),
                    )
                ).rowcount
            return n

        return self.db.run(fn) if wanted else 0
