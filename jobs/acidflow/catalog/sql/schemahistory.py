"""Schema changes and schema history in the SQL catalog (``schema_history``, revision 0007):
the SQL side of ``alter_schema`` / ``schema_history`` (contracts in
:class:`acidflow.catalog.api.TableCatalog`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from acidflow.catalog.errors import CatalogError
from acidflow.catalog.schemahistory import (
    SchemaVersion,
    columns_from_json,
    columns_to_json,
)
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.sql.tables import read_table
from acidflow.catalog.tabledef import NAME_RE, Column, TableDef, split_table_name
from acidflow.format.schemaevolution import SchemaChangeError, metastore_compatible


def check_columns(table: TableDef, columns: Sequence[Column], *, positional_types: bool) -> None:
    """Check a new data-column list of ``table``: names valid and unique, none a partition
    column's, at least one column; with ``positional_types`` also the metastore's rule
    (Hive ``checkColTypeChangeCompatible``: position by position over the shorter list,
    ``ColumnType.areColTypesCompatible``), as ``hive.metastore.disallow.incompatible.col.type
    .changes=true`` makes Hive's metastore refuse.

    Raises:
        SchemaChangeError: names the table and the columns at fault.
    """
    if not columns:
        raise SchemaChangeError(f"table {table.name}: a table needs at least one data column")
    seen: set[str] = set(table.partition_column_names())
    for c in columns:
        if not NAME_RE.match(c.name):
            raise SchemaChangeError(f"table {table.name}: invalid column name {c.name!r}")
        if c.name in seen:
            raise SchemaChangeError(
                f"table {table.name}: column {c.name!r} is used twice (or is a partition column)"
            )
        seen.add(c.name)
    if positional_types:
        bad = [
            f"{o.name} {o.hive_type} -> {n.name} {n.hive_type}"
            for o, n in zip(table.columns, columns)
            if not metastore_compatible(o.hive_type, n.hive_type)
        ]
        if bad:
            raise SchemaChangeError(
                f"table {table.name}: the metastore refuses incompatible column type changes "
                "(hive.metastore.disallow.incompatible.col.type.changes): " + ", ".join(bad)
            )


class SqlSchemaHistory:
    """Schema changes of tables on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database; warehouse: for the definitions returned.
    """

    def __init__(self, db: Database, warehouse: str) -> None:
        self.db = db
        self.warehouse = warehouse

    def alter_schema(
        self,
        txn_id: int,
        name: str,
        columns: Sequence[Column | dict[str, Any]],
        *,
        change: Mapping[str, Any],
    ) -> TableDef:
        new_cols = [c if isinstance(c, Column) else Column.from_dict(c) for c in columns]
        change = dict(change)
        renames = {str(k): str(v) for k, v in (change.get("renames") or {}).items()}

        def fn(conn: sa.Connection) -> TableDef:
            current = read_table(conn, name)
            db, tbl = split_table_name(current.name)
            shared.open_txn_row(conn, txn_id)
            write_id = conn.execute(
                sa.select(m.TxnToWriteId.write_id).where(
                    m.TxnToWriteId.txn_id == txn_id,
                    m.TxnToWriteId.db_name == db,
                    m.TxnToWriteId.tbl_name == tbl,
                )
            ).scalar()
            if write_id is None:
                raise CatalogError(
                    f"alter schema of {current.name}: transaction {txn_id} has no "
                    "write id on the table (allocate_write_id first)"
                )
            check_columns(current, new_cols, positional_types=not change.get("rewrite"))
            for c in new_cols:
                c.hive_type = Column(c.name, c.hive_type).hive_type
            h = m.SchemaHistoryRow
            now = utcnow()
            have = conn.execute(
                sa.select(sa.func.count()).select_from(h).where(h.db_name == db, h.tbl_name == tbl)
            ).scalar_one()
            if not have:
                conn.execute(
                    sa.insert(h).values(
                        db_name=db,
                        tbl_name=tbl,
                        write_id=0,
                        txn_id=None,
                        columns=columns_to_json(current.columns),
                        change={"op": "initial"},
                        recorded_at=now,
                    )
                )
            row = conn.execute(
                sa.select(h.change).where(
                    h.db_name == db, h.tbl_name == tbl, h.write_id == write_id
                )
            ).first()
            if row is None:
                conn.execute(
                    sa.insert(h).values(
                        db_name=db,
                        tbl_name=tbl,
                        write_id=write_id,
                        txn_id=txn_id,
                        columns=columns_to_json(new_cols),
                        change=change,
                        recorded_at=now,
                    )
                )
            else:  # a second change in the same transaction: one version, changes listed
                prev = dict(row.change)
                steps = list(prev.get("steps") or [prev]) + [change]
                conn.execute(
                    sa.update(h)
                    .where(h.db_name == db, h.tbl_name == tbl, h.write_id == write_id)
                    .values(
                        columns=columns_to_json(new_cols),
                        change={"op": "multiple", "steps": steps},
                        recorded_at=now,
                    )
                )
            assert current.table_id is not None  # read from the catalog
            tid = current.table_id
            conn.execute(sa.delete(m.ColumnV2).where(m.ColumnV2.tbl_id == tid))
            conn.execute(
                sa.insert(m.ColumnV2),
                [
                    {
                        "tbl_id": tid,
                        "integer_idx": i,
                        "column_name": c.name,
                        "type_name": c.hive_type,
                        "comment": c.comment,
                    }
                    for i, c in enumerate(new_cols)
                ],
            )
            if renames:
                for model, col in (
                    (m.PrimaryKeyCol, m.PrimaryKeyCol.column_name),
                    (m.BucketingCol, m.BucketingCol.bucket_col_name),
                ):
                    for old, new in renames.items():
                        conn.execute(
                            sa.update(model)
                            .where(model.tbl_id == tid, col == old)
                            .values({col.key: new})
                        )
                if current.ordering_column in renames:
                    conn.execute(
                        sa.update(m.Tbl)
                        .where(m.Tbl.tbl_id == tid)
                        .values(ordering_column=renames[current.ordering_column])
                    )
            return read_table(conn, current.name, self.warehouse)

        return self.db.run(fn)

    def schema_history(self, name: str) -> list[SchemaVersion]:

        def fn(conn: sa.Connection) -> list[SchemaVersion]:
            current = read_table(conn, name)
            db, tbl = split_table_name(current.name)
            h = m.SchemaHistoryRow
            rows = conn.execute(
                sa.select(h.__table__)
                .where(h.db_name == db, h.tbl_name == tbl)
                .order_by(h.write_id)
            ).all()
            return [
                SchemaVersion(
                    current.name,
                    r.write_id,
                    r.txn_id,
                    columns_from_json(r.columns),
                    dict(r.change),
                    r.recorded_at,
                )
                for r in rows
            ]

        return self.db.run(fn, write=False)
