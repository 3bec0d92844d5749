"""Table definitions in the SQL catalog (Hive metastore ``TBLS``, ``COLUMNS_V2``,
``PARTITION_KEYS``, ``BUCKETING_COLS``, ``TABLE_PARAMS`` and the table's ``NEXT_WRITE_ID`` row):
create, get, list, drop, set properties, add columns, set the primary key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from acidflow.catalog.errors import CatalogError, NoSuchTableError, TableExistsError
from acidflow.catalog.records import TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql import shared
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.tabledef import (
    NAME_RE,
    Column,
    TableDef,
    check_fixed_properties,
    split_table_name,
)
from acidflow.catalog.warehouse import resolve_location, warehouse_root
from acidflow.format.hivetypes import normalize_hive_type


def load_tables(
    conn: sa.Connection, tbl_rows: Sequence[shared.Row], warehouse: str | None = None
) -> list[TableDef]:
    """Build :class:`TableDef` objects for ``tbls`` rows (columns, keys, properties read in
    one query per child table). A relative location stored by an older acidflow is returned
    resolved against ``warehouse`` (when given), never against the working directory."""
    ids = [r.tbl_id for r in tbl_rows]
    if not ids:
        return []

    def grouped(model: Any, *cols: Any) -> dict[int, list[shared.Row]]:
        out: dict[int, list[shared.Row]] = {i: [] for i in ids}
        q = sa.select(model.__table__).where(model.tbl_id.in_(ids)).order_by(*cols)
        for r in conn.execute(q):
            out[r.tbl_id].append(r)
        return out

    cols = grouped(m.ColumnV2, m.ColumnV2.tbl_id, m.ColumnV2.integer_idx)
    pkeys = grouped(m.PartitionKey, m.PartitionKey.tbl_id, m.PartitionKey.integer_idx)
    bcols = grouped(m.BucketingCol, m.BucketingCol.tbl_id, m.BucketingCol.integer_idx)
    pk = grouped(m.PrimaryKeyCol, m.PrimaryKeyCol.tbl_id, m.PrimaryKeyCol.integer_idx)
    params = grouped(m.TableParam, m.TableParam.tbl_id, m.TableParam.param_key)
    tables: list[TableDef] = []
    for r in tbl_rows:
        tables.append(
            TableDef(
                name=f"{r.db_name}.{r.tbl_name}",
                columns=[Column(c.column_name, c.type_name, c.comment) for c in cols[r.tbl_id]],
                partition_columns=[Column(c.pkey_name, c.pkey_type) for c in pkeys[r.tbl_id]],
                primary_key=[c.column_name for c in pk[r.tbl_id]],
                ordering_column=r.ordering_column,
                bucket_columns=[c.bucket_col_name for c in bcols[r.tbl_id]],
                num_buckets=r.num_buckets,
                bucketing_version=r.bucketing_version,
                properties={p.param_key: p.param_value for p in params[r.tbl_id]},
                location=_absolute(r.location, warehouse),
                table_id=r.tbl_id,
                created_at=r.created_at,
            )
        )
    return tables


def _absolute(location: str, warehouse: str | None) -> str:
    if warehouse is None or not location or "://" in location or location.startswith("/"):
        return location
    return f"{warehouse_root(warehouse).rstrip('/')}/{location}"


def read_table(conn: sa.Connection, name: str, warehouse: str | None = None) -> TableDef:
    """The definition of ``name`` read on ``conn`` (see :func:`load_tables` for
    ``warehouse``).

    Raises:
        NoSuchTableError: unknown table.
    """
    db, tbl = split_table_name(name)
    return load_tables(conn, [shared.table_row(conn, db, tbl)], warehouse)[0]


def _insert_columns(conn: sa.Connection, tbl_id: int, columns: list[Column], start: int) -> None:
    if columns:
        conn.execute(
            sa.insert(m.ColumnV2),
            [
                {
                    "tbl_id": tbl_id,
                    "integer_idx": start + i,
                    "column_name": c.name,
                    "type_name": c.hive_type,
                    "comment": c.comment,
                }
                for i, c in enumerate(columns)
            ],
        )


def insert_table(conn: sa.Connection, table: TableDef, location: str) -> int:
    """Insert the metadata rows of a validated ``table`` at ``location`` (``tbls``, columns,
    partition keys, bucketing and primary key columns, properties) on ``conn``; the caller
    adds its ``next_write_id`` row and checks that the name is free. Returns the ``tbl_id``."""
    db, tbl = split_table_name(table.name)
    now = utcnow()
    tbl_id = conn.execute(
        sa.insert(m.Tbl)
        .values(
            db_name=db,
            tbl_name=tbl,
            location=location,
            num_buckets=table.num_buckets,
            bucketing_version=table.bucketing_version,
            ordering_column=table.ordering_column,
            created_at=now,
        )
        .returning(m.Tbl.tbl_id)
    ).scalar_one()
    _insert_columns(conn, tbl_id, table.columns, 0)
    if table.partition_columns:
        conn.execute(
            sa.insert(m.PartitionKey),
            [
                {"tbl_id": tbl_id, "integer_idx": i, "pkey_name": c.name, "pkey_type": c.hive_type}
                for i, c in enumerate(table.partition_columns)
            ],
        )
    if table.bucket_columns:
        conn.execute(
            sa.insert(m.BucketingCol),
            [
                {"tbl_id": tbl_id, "integer_idx": i, "bucket_col_name": c}
                for i, c in enumerate(table.bucket_columns)
            ],
        )
    if table.primary_key:
        conn.execute(
            sa.insert(m.PrimaryKeyCol),
            [
                {"tbl_id": tbl_id, "integer_idx": i, "column_name": c}
                for i, c in enumerate(table.primary_key)
            ],
        )
    conn.execute(
        sa.insert(m.TableParam),
        [
            {"tbl_id": tbl_id, "param_key": k, "param_value": v}
            for k, v in sorted(table.properties.items())
        ],
    )
    return tbl_id


class SqlTables:
    """The table half of the metastore on a :class:`~acidflow.catalog.sql.db.Database`.

    Args:
        db: the catalog database.
        warehouse: table root for default locations (``<warehouse>/<db>.db/<table>``).
    """

    def __init__(self, db: Database, warehouse: str) -> None:
        self.db = db
        self.warehouse = warehouse

    def default_location(self, db: str, tbl: str) -> str:
        """``<warehouse>/<db>.db/<tbl>`` (Hive's default table location)."""
        return f"{warehouse_root(self.warehouse).rstrip('/')}/{db}.db/{tbl}"

    def location_of(self, table: TableDef) -> str:
        """Where ``table`` lives: its location resolved against the warehouse
        (:func:`acidflow.catalog.warehouse.resolve_location`), or the default location.

        Raises:
            TableLocationError: ``..`` leaving the warehouse, or outside it without
                ``external``.
        """
        db, tbl = split_table_name(table.name)
        return resolve_location(
            table.name, table.location, self.warehouse, external=table.external
        ) or self.default_location(db, tbl)

    def create_table(
        self, table: TableDef | dict[str, Any], if_not_exists: bool = False
    ) -> TableDef:
        table = (
            TableDef.from_dict(table.to_dict())
            if isinstance(table, TableDef)
            else TableDef.from_dict(table)
        )
        table.validate()
        db, tbl = split_table_name(table.name)
        location = self.location_of(table)

        def fn(conn: sa.Connection) -> TableDef:
            exists = conn.execute(
                sa.select(m.Tbl.tbl_id).where(m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)
            ).first()
            if exists is not None:
                if if_not_exists:
                    return read_table(conn, table.name, self.warehouse)
                raise TableExistsError(table.name)
            insert_table(conn, table, location)
            conn.execute(sa.insert(m.NextWriteId).values(db_name=db, tbl_name=tbl, nwi_next=1))
            return read_table(conn, table.name, self.warehouse)

        try:
            return self.db.run(fn)
        except sa.exc.IntegrityError:
            # Lost a race with a concurrent create of the same name.
            if if_not_exists:
                return self.get_table(table.name)
            raise TableExistsError(table.name) from None

    def get_table(self, name: str) -> TableDef:
        return self.db.run(lambda conn: read_table(conn, name, self.warehouse), write=False)

    def table_exists(self, name: str) -> bool:
        db, tbl = split_table_name(name)
        return self.db.run(
            lambda conn: (
                conn.execute(
                    sa.select(m.Tbl.tbl_id).where(m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)
                ).first()
                is not None
            ),
            write=False,
        )

    def list_tables(self, db_name: str | None = None) -> list[TableDef]:

        def fn(conn: sa.Connection) -> list[TableDef]:
            q = sa.select(m.Tbl.__table__).order_by(m.Tbl.db_name, m.Tbl.tbl_name)
            if db_name is not None:
                q = q.where(m.Tbl.db_name == db_name.strip().lower())
            return load_tables(conn, conn.execute(q).all(), self.warehouse)

        return self.db.run(fn, write=False)

    def drop_table(self, name: str, if_exists: bool = False) -> None:
        db, tbl = split_table_name(name)

        def fn(conn: sa.Connection) -> None:
            try:
                row = shared.table_row(conn, db, tbl)
            except NoSuchTableError:
                if if_exists:
                    return None
                raise
            users = {
                r.txn_id
                for r in conn.execute(
                    sa.select(m.TxnToWriteId.txn_id)
                    .join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id)
                    .where(
                        m.TxnToWriteId.db_name == db,
                        m.TxnToWriteId.tbl_name == tbl,
                        m.Txn.txn_state == TxnState.OPEN,
                    )
                )
            }
            users |= {
                r.txn_id
                for r in conn.execute(
                    sa.select(m.HiveLock.txn_id).where(
                        m.HiveLock.db_name == db, m.HiveLock.tbl_name == tbl
                    )
                )
            }
            if users:
                raise CatalogError(
                    f"cannot drop table {db}.{tbl}: open transactions "
                    f"{sorted(users)} write to or lock it"
                )
            by_name: tuple[Any, ...] = (
                m.NextWriteId,
                m.TxnToWriteId,
                m.TxnComponent,
                m.CompletedTxnComponent,
                m.WriteSet,
                m.WriteSetKey,
                m.CommitRecordRow,
                m.SchemaHistoryRow,
                m.DataFileRow,
                m.SavepointRow,
            )
            for model in by_name:
                conn.execute(sa.delete(model).where(model.db_name == db, model.tbl_name == tbl))
            by_id: tuple[Any, ...] = (
                m.ColumnV2,
                m.PartitionKey,
                m.BucketingCol,
                m.PrimaryKeyCol,
                m.TableParam,
            )
            for model in by_id:
                conn.execute(sa.delete(model).where(model.tbl_id == row.tbl_id))
            conn.execute(sa.delete(m.Tbl).where(m.Tbl.tbl_id == row.tbl_id))
            return None

        self.db.run(fn)

    def set_table_properties(self, name: str, props: dict[str, str]) -> TableDef:
        props = {str(k): str(v) for k, v in props.items()}

        def fn(conn: sa.Connection) -> TableDef:
            current = read_table(conn, name)
            check_fixed_properties(current.name, props, current.bucketing_version)
            for key, value in props.items():
                updated = conn.execute(
                    sa.update(m.TableParam)
                    .where(m.TableParam.tbl_id == current.table_id, m.TableParam.param_key == key)
                    .values(param_value=value)
                ).rowcount
                if not updated:
                    conn.execute(
                        sa.insert(m.TableParam).values(
                            tbl_id=current.table_id, param_key=key, param_value=value
                        )
                    )
            return read_table(conn, name, self.warehouse)

        return self.db.run(fn)

    def add_columns(self, name: str, columns: Sequence[Column | dict[str, Any]]) -> TableDef:
        new_columns = [c if isinstance(c, Column) else Column.from_dict(c) for c in columns]

        def fn(conn: sa.Connection) -> TableDef:
            current = read_table(conn, name)
            taken = set(current.column_names()) | set(current.partition_column_names())
            for col in new_columns:
                if not NAME_RE.match(col.name):
                    raise ValueError(f"table {current.name}: invalid column name {col.name!r}")
                if col.name in taken:
                    raise ValueError(f"table {current.name}: column {col.name!r} already exists")
                col.hive_type = normalize_hive_type(col.hive_type)
                taken.add(col.name)
            assert current.table_id is not None  # read from the catalog
            _insert_columns(conn, current.table_id, new_columns, len(current.columns))
            return read_table(conn, name, self.warehouse)

        return self.db.run(fn)

    def set_primary_key(self, name: str, columns: Sequence[str]) -> TableDef:
        key = [str(c).lower() for c in columns]

        def fn(conn: sa.Connection) -> TableDef:
            current = read_table(conn, name)
            known = set(current.column_names()) | set(current.partition_column_names())
            if len(set(key)) != len(key):
                raise ValueError(f"table {current.name}: repeated primary key columns {key}")
            unknown = [c for c in key if c not in known]
            if unknown:
                raise ValueError(f"table {current.name}: unknown primary key column(s) {unknown}")
            assert current.table_id is not None  # read from the catalog
            conn.execute(
                sa.delete(m.PrimaryKeyCol).where(m.PrimaryKeyCol.tbl_id == current.table_id)
            )
            if key:
                conn.execute(
                    sa.insert(m.PrimaryKeyCol),
                    [
                        {"tbl_id": current.table_id, "integer_idx": i, "column_name": c}
                        for i, c in enumerate(key)
                    ],
                )
            return read_table(conn, name)

        return self.db.run(fn)
