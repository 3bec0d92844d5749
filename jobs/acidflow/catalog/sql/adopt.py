"""Adoption of an existing Hive ACID table in the SQL catalog (``Catalog.adopt_table``): the
table's definition plus the write-id history Hive gave it, recorded so that acidflow's
``valid_write_ids`` answers what Hive's ``get_valid_write_ids`` answered and the next
``allocate_write_id`` continues after Hive's high watermark.

What is stored, in one catalog transaction:

* the table rows (as ``create_table``) and ``next_write_id = hwm + 1``;
* one *aborted* transaction per write id the history lists as aborted or open (agent info
  ``adopted from Hive``; abort reason names which), owning that write id in
  ``txn_to_write_id``, with a ``txn_components`` row per partition holding its directories so
  the cleaner removes them like any aborted write;
* one *committed* transaction per committed write id that a directory names (both ends of a
  delta range, a base's N), with a commit record (operations ``["adopted"]``, stats
  ``{"adopted_from": "hive", "directories": [...]}``) and a ``completed_txn_components`` row
  per partition (the initiator's candidates: Hive's deltas are compacted like acidflow's);
* every other write id in 1..hwm has no row and is committed by the snapshot rule
  (``ValidWriteIdList``: <= hwm and not an exception) - Hive allocated it and it left no
  directory (or lies inside a compacted range). Nothing is stored per write id, so a history of
  ten million write ids costs a handful of rows.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from acidflow.catalog.errors import TableExistsError
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.sql.tables import SqlTables, insert_table, read_table
from acidflow.catalog.tabledef import TableDef, split_table_name
from acidflow.format.writeids import ValidWriteIdList
from acidflow.storage.adoption import TableDirs, check_adoptable

#: ``txns.txn_agent_info`` of the transactions adoption records.
ADOPTED_AGENT = "adopted from Hive"
#: The commit record operation of an adopted write id.
ADOPTED_OPERATION = "adopted"


class SqlAdoption:
    """``Catalog.adopt_table`` on a :class:`~acidflow.catalog.sql.db.Database`."""

    def __init__(self, db: Database, tables: SqlTables) -> None:
        self.db = db
        self.tables = tables

    def adopt_table(self, table: TableDef | dict[str, Any], history: ValidWriteIdList) -> TableDef:
        table = (
            TableDef.from_dict(table.to_dict())
            if isinstance(table, TableDef)
            else TableDef.from_dict(table)
        )
        table.validate()
        db, tbl = split_table_name(table.name)
        location = self.tables.location_of(table)
        if self.tables.table_exists(table.name):  # before touching the files
            raise TableExistsError(table.name)
        dirs = check_adoptable(table.name, location, table.partition_column_names(), history)
        hwm = history.high_watermark
        not_committed = {w: "open in Hive at adoption" for w in history.open_write_ids}
        not_committed.update({w: "aborted in Hive" for w in history.aborted_write_ids})
        committed = sorted(w for w in dirs.write_ids() if 1 <= w <= hwm and w not in not_committed)

        def fn(conn: sa.Connection) -> TableDef:
            if (
                conn.execute(
                    sa.select(m.Tbl.tbl_id).where(m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)
                ).first()
                is not None
            ):
                raise TableExistsError(table.name)
            insert_table(conn, table, location)
            conn.execute(
                sa.insert(m.NextWriteId).values(db_name=db, tbl_name=tbl, nwi_next=hwm + 1)
            )
            now = utcnow()
            for write_id, why in sorted(not_committed.items()):
                txn_id = shared.next_txn_id(conn)
                shared.insert_open_txn(
                    conn, txn_id, now, None, None, f"{ADOPTED_AGENT}: write id {write_id}"
                )
                conn.execute(
                    sa.insert(m.TxnToWriteId).values(
                        db_name=db, tbl_name=tbl, write_id=write_id, txn_id=txn_id
                    )
                )
                for part, op in _components(dirs, write_id, own_only=True):
                    conn.execute(
                        sa.insert(m.TxnComponent).values(
                            txn_id=txn_id,
                            db_name=db,
                            tbl_name=tbl,
                            part_name=part,
                            operation=op,
                            write_id=write_id,
                        )
                    )
                shared.abort_txns(
                    conn,
                    [txn_id],
                    f"{why} (acidflow adopted the table; a "
                    "Hive transaction can no longer commit into it)",
                    now,
                )
            for write_id in committed:
                txn_id = shared.next_txn_id(conn)
                shared.insert_open_txn(
                    conn, txn_id, now, None, None, f"{ADOPTED_AGENT}: write id {write_id}"
                )
                conn.execute(
                    sa.insert(m.TxnToWriteId).values(
                        db_name=db, tbl_name=tbl, write_id=write_id, txn_id=txn_id
                    )
                )
                commit_id = shared.next_txn_id(conn)
                comps = _components(dirs, write_id)
                if comps:
                    conn.execute(
                        sa.insert(m.CompletedTxnComponent),
                        [
                            {
                                "txn_id": txn_id,
                                "db_name": db,
                                "tbl_name": tbl,
                                "part_name": part,
                                "write_id": write_id,
                                "committed_at": now,
                                "update_delete": op == "delete",
                            }
                            for part, op in comps
                        ],
                    )
                conn.execute(
                    sa.insert(m.CommitRecordRow).values(
                        db_name=db,
                        tbl_name=tbl,
                        write_id=write_id,
                        txn_id=txn_id,
                        commit_id=commit_id,
                        committed_at=now,
                        operations=[ADOPTED_OPERATION],
                        stats={
                            "adopted_from": "hive",
                            "directories": [
                                f"{d.partition}/{d.name}" if d.partition else d.name
                                for d in dirs.acid_dirs
                                if d.max_write_id == write_id
                                or (d.kind != "base" and d.min_write_id == write_id)
                            ],
                        },
                    )
                )
                shared.commit_txn_row(conn, txn_id, commit_id, now)
            return read_table(conn, table.name, self.tables.warehouse)

        try:
            return self.db.run(fn)
        except sa.exc.IntegrityError:  # lost a race with a concurrent create of the name
            raise TableExistsError(table.name) from None


def _components(
    dirs: TableDirs, write_id: int, own_only: bool = False
) -> list[tuple[str | None, str]]:
    """``(partition, operation)`` pairs of the directories holding ``write_id``: ``insert`` for
    a delta, ``delete`` for a delete delta (split-update writes both for an update).
    ``own_only``: only directories of that write id alone (an aborted write's own deltas; a
    compacted range that spans it holds committed data too)."""
    out: set[tuple[str | None, str]] = set()
    for d in dirs.dirs_with(write_id):
        if own_only and d.min_write_id != d.max_write_id:
            continue
        out.add((d.partition, "delete" if d.kind == "delete_delta" else "insert"))
    return sorted(out, key=lambda p: (p[0] or "", p[1]))
