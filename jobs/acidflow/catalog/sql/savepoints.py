"""Savepoints in the SQL catalog (``savepoints``, revision 0010): named states of a table
that the cleaner and the history purges keep (:mod:`acidflow.tableops.savepoint`)."""

from __future__ import annotations

import sqlalchemy as sa

from acidflow.catalog.errors import NoSuchSavepointError, SavepointExistsError
from acidflow.catalog.records import SavepointInfo
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import as_utc, split_table_name
from acidflow.format.layout import ValidWriteIdList


def _info(r: sa.Row) -> SavepointInfo:
    return SavepointInfo(
        table=f"{r.db_name}.{r.tbl_name}",
        name=r.sp_name,
        write_id=r.write_id,
        valid_write_ids=r.valid_write_ids,
        created_at=as_utc(r.created_at),
        created_by=r.created_by,
    )


class SqlSavepoints:
    """Savepoints on a :class:`~acidflow.catalog.sql.db.Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add_savepoint(
        self,
        table_name: str,
        name: str,
        write_id: int,
        valid_write_ids: ValidWriteIdList,
        *,
        created_by: str | None = None,
    ) -> SavepointInfo:
        db, tbl = split_table_name(table_name)
        sp = m.SavepointRow
        by = created_by if created_by is not None else f"{self.db.user}@{self.db.host}"

        def fn(conn: sa.Connection) -> SavepointInfo:
            shared.table_row(conn, db, tbl)
            old = conn.execute(
                sa.select(sp.write_id).where(
                    sp.db_name == db, sp.tbl_name == tbl, sp.sp_name == name
                )
            ).scalar()
            if old is not None:
                raise SavepointExistsError(f"{db}.{tbl}", name, old)
            values = {
                "db_name": db,
                "tbl_name": tbl,
                "sp_name": name,
                "write_id": write_id,
                "valid_write_ids": str(valid_write_ids),
                "created_at": utcnow(),
                "created_by": by,
            }
            conn.execute(sa.insert(sp).values(**values))
            row = conn.execute(
                sa.select(sp.__table__).where(
                    sp.db_name == db, sp.tbl_name == tbl, sp.sp_name == name
                )
            ).one()
            return _info(row)

        return self.db.run(fn)

    def list_savepoints(self, table_name: str | None = None) -> list[SavepointInfo]:
        sp = m.SavepointRow

        def fn(conn: sa.Connection) -> list[SavepointInfo]:
            q = sa.select(sp.__table__).order_by(sp.db_name, sp.tbl_name, sp.write_id, sp.sp_name)
            if table_name is not None:
                db, tbl = split_table_name(table_name)
                shared.table_row(conn, db, tbl)
                q = q.where(sp.db_name == db, sp.tbl_name == tbl)
            return [_info(r) for r in conn.execute(q)]

        return self.db.run(fn, write=False)

    def drop_savepoint(self, table_name: str, name: str) -> SavepointInfo:
        db, tbl = split_table_name(table_name)
        sp = m.SavepointRow

        def fn(conn: sa.Connection) -> SavepointInfo:
            shared.table_row(conn, db, tbl)
            where = (sp.db_name == db, sp.tbl_name == tbl, sp.sp_name == name)
            row = conn.execute(sa.select(sp.__table__).where(*where)).first()
            if row is None:
                raise NoSuchSavepointError(f"{db}.{tbl}", name)
            conn.execute(sa.delete(sp).where(*where))
            return _info(row)

        return self.db.run(fn)
