"""``SqlCatalog``: the :class:`~acidflow.catalog.base.Catalog` interface on SQLAlchemy, composed
of one part per idea, all sharing one :class:`~acidflow.catalog.sql.db.Database`:

* :class:`~acidflow.catalog.sql.tables.SqlTables` - table definitions;
* :class:`~acidflow.catalog.sql.txns.SqlTransactions` - transactions, write ids, commit,
  the housekeeper's timeout;
* :class:`~acidflow.catalog.sql.writeids.SqlWriteIds` - snapshots and commit records;
* :class:`~acidflow.catalog.sql.locks.SqlLocks` - locks;
* :class:`~acidflow.catalog.sql.batches.SqlBatches` - batch ledger and CDC tombstones;
* :class:`~acidflow.catalog.sql.compactions.SqlCompactions` - compaction queue and history;
* :class:`~acidflow.catalog.sql.readers.SqlReaders` - reader registrations.

This class only wires them and forwards each interface method (documented on
:class:`~acidflow.catalog.base.Catalog`). SQLite file by default
(``<warehouse>/_acidflow_catalog.db``), PostgreSQL for shared deployments; the schema
(:mod:`acidflow.catalog.sql.schema`) is managed by Alembic and upgraded on start-up.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import sqlalchemy as sa

from acidflow.catalog.base import Catalog
from acidflow.catalog.records import (
    BatchInfo,
    CommitRecord,
    CompactionInfo,
    CompactionState,
    LockInfo,
    ReaderInfo,
    TxnInfo,
)
from acidflow.catalog.schemahistory import SchemaVersion
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql.adopt import SqlAdoption
from acidflow.catalog.sql.batches import SqlBatches
from acidflow.catalog.sql.compactions import SqlCompactions
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.sql.locks import SqlLocks
from acidflow.catalog.sql.readers import SqlReaders
from acidflow.catalog.sql.schemahistory import SqlSchemaHistory
from acidflow.catalog.sql.shared import TxnHooks
from acidflow.catalog.sql.tables import SqlTables
from acidflow.catalog.sql.txns import SqlTransactions
from acidflow.catalog.sql.writeids import SqlWriteIds
from acidflow.catalog.tabledef import Column, TableDef
from acidflow.catalog.warehouse import warehouse_root
from acidflow.config import load_settings
from acidflow.format.layout import ValidWriteIdList


class SqlCatalog(Catalog):
    """Tables, transactions, write ids, locks, batches, compactions and readers in one SQL
    database (the Hive metastore's ``TxnHandler`` re-done on SQLAlchemy 2 Core).

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db`` or ``postgresql+psycopg2://...``). For a
            SQLite file its directory is created.
        warehouse: table root used for default table locations
            (``<warehouse>/<db>.db/<table>``); ``None`` = :func:`acidflow.config.load_settings`'s.
        txn_timeout_s: seconds without heartbeat after which
            :meth:`abort_timed_out_transactions` aborts a transaction (Hive ``hive.txn.timeout``).
        migrate: run ``alembic upgrade head`` now (serialised between processes); a database
            with other tables that is not an acidflow catalog is refused
            (:class:`~acidflow.catalog.errors.ForeignDatabaseError`; see :meth:`initialize`).
        txn_hooks: an outside authority for txn, commit and write ids
            (:class:`acidflow.catalog.sql.shared.TxnHooks`; the Hive metastore catalog's side
            catalog uses it), ``None`` = this database's own sequences.

    Attributes:
        db: the :class:`~acidflow.catalog.sql.db.Database`; url, engine, backend,
            is_sqlite, is_postgres: its URL, engine and backend name.

    Create one per process (SQLAlchemy engines do not survive ``fork``). Writes check that the
    warehouse belongs to this catalog (:meth:`check_warehouse_owner`): :meth:`create_table`,
    :meth:`allocate_write_id` and :meth:`claim_compaction`.
    Errors of the database name the URL with its password masked
    (:class:`~acidflow.catalog.errors.CatalogDatabaseError`).
    """

    def __init__(self, url: str, *, warehouse: str | None = None, txn_timeout_s: int = 300,
                 migrate: bool = True, txn_hooks: TxnHooks | None = None) -> None:
        if warehouse is None:
            warehouse = load_settings().warehouse
        self.warehouse = warehouse_root(str(warehouse))
        self._catalog_id: str | None = None
        self.txn_timeout_s = int(txn_timeout_s)
        self.db = Database(url)
        self.db.txn_hooks = txn_hooks
        self._tables = SqlTables(self.db, self.warehouse)
        self._txns = SqlTransactions(self.db, self.txn_timeout_s)
        self._write_ids = SqlWriteIds(self.db)
        self._locks = SqlLocks(self.db)
        self._batches = SqlBatches(self.db, self._txns)
        self._compactions = SqlCompactions(self.db, self.txn_timeout_s)
        self._readers = SqlReaders(self.db, self.txn_timeout_s)
        self._adoption = SqlAdoption(self.db, self._tables)
        self._schema = SqlSchemaHistory(self.db, self.warehouse)  # issue 12: schema evolution
        if migrate:
            self.upgrade()
        self.register_visibility()  # object-store warehouses: _v<T> dirs of open txns hidden

    # -- the database --------------------------------------------------------------------
    @property
    def url(self) -> sa.URL:
        """The catalog's SQLAlchemy URL."""
        return self.db.url

    @property
    def engine(self) -> sa.Engine:
        """The SQLAlchemy engine (tests and maintenance tools)."""
        return self.db.engine

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.db.backend

    @property
    def is_sqlite(self) -> bool:
        """True on SQLite."""
        return self.db.is_sqlite

    @property
    def is_postgres(self) -> bool:
        """True on PostgreSQL."""
        return self.db.is_postgres

    def close(self) -> None:
        """Dispose of the connection pool. The catalog can still be used afterwards (new
        connections are opened on demand)."""
        self.db.close()

    def __repr__(self) -> str:
        return f"SqlCatalog({self.db.render_url()!r})"

    def upgrade(self, revision: str = "head") -> None:
        """``alembic upgrade <revision>`` inside one catalog transaction, serialised between
        processes (SQLite ``BEGIN IMMEDIATE``, PostgreSQL advisory transaction lock)."""
        self.db.upgrade(revision)

    def downgrade(self, revision: str) -> None:
        """``alembic downgrade <revision>`` (``"base"`` drops every catalog table)."""
        self.db.downgrade(revision)

    def current_revision(self) -> str | None:
        return self.db.current_revision()

    def display_url(self) -> str:
        return self.db.render_url()

    def initialize(self, force: bool = False) -> str:
        self.db.upgrade(force=force)
        return self.catalog_id()

    def catalog_id(self) -> str:
        if self._catalog_id is None:
            def fn(conn: sa.Connection) -> str:
                found = conn.execute(sa.select(m.CatalogIdentity.catalog_id).where(
                    m.CatalogIdentity.identity_key == 1)).scalar()
                if found is None:  # emptied by hand: a new identity, made once
                    found = str(uuid.uuid4())
                    conn.execute(sa.insert(m.CatalogIdentity).values(
                        identity_key=1, catalog_id=found, created_at=utcnow()))
                return str(found)

            try:
                self._catalog_id = self.db.run(fn)
            except sa.exc.IntegrityError:  # a concurrent process made it first
                self._catalog_id = self.db.run(fn, write=False)
        return self._catalog_id

    # -- tables (sql/tables.py) --------------------------------------------------------------
    def create_table(self, table: TableDef | dict[str, Any], if_not_exists: bool = False
                     ) -> TableDef:
        self.check_warehouse_owner()
        return self._tables.create_table(table, if_not_exists)

    def adopt_table(self, table: TableDef | dict[str, Any], history: ValidWriteIdList
                    ) -> TableDef:
        self.check_warehouse_owner()
        return self._adoption.adopt_table(table, history)

    def location_of(self, table: TableDef) -> str:
        """Where ``table`` would live (its location resolved against the warehouse, or the
        default ``<warehouse>/<db>.db/<table>``); the Hive metastore catalog registers the
        same location in the metastore before its side row exists.

        Raises:
            TableLocationError: ``..`` leaving the warehouse, or outside it without
                ``external``.
        """
        return self._tables.location_of(table)

    def get_table(self, name: str) -> TableDef:
        return self._tables.get_table(name)

    def table_exists(self, name: str) -> bool:
        return self._tables.table_exists(name)

    def list_tables(self, db_name: str | None = None) -> list[TableDef]:
        return self._tables.list_tables(db_name)

    def drop_table(self, name: str, if_exists: bool = False) -> None:
        return self._tables.drop_table(name, if_exists)

    def set_table_properties(self, name: str, props: dict[str, str]) -> TableDef:
        return self._tables.set_table_properties(name, props)

    def add_columns(self, name: str, columns: Sequence[Column | dict[str, Any]]) -> TableDef:
        return self._tables.add_columns(name, columns)

    # --- issue 12: schema evolution
    def alter_schema(self, txn_id: int, name: str, columns: Sequence[Column | dict[str, Any]],
                     *, change: Mapping[str, Any]) -> TableDef:
        return self._schema.alter_schema(txn_id, name, columns, change=change)

    def schema_history(self, name: str) -> list[SchemaVersion]:
        return self._schema.schema_history(name)

    def set_primary_key(self, name: str, columns: Sequence[str]) -> TableDef:
        return self._tables.set_primary_key(name, columns)

    # -- transactions (sql/txns.py) ----------------------------------------------------------
    def open_transaction(self, user: str | None = None, host: str | None = None,
                         agent_info: str | None = None) -> int:
        return self._txns.open_transaction(user, host, agent_info)

    def heartbeat(self, txn_id: int) -> None:
        return self._txns.heartbeat(txn_id)

    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        self.check_warehouse_owner()
        return self._txns.allocate_write_id(txn_id, table_name)

    def add_component(self, txn_id: int, table_name: str, partition: str | None,
                      operation: str) -> None:
        return self._txns.add_component(txn_id, table_name, partition, operation)

    def add_write_keys(self, txn_id: int, table_name: str,
                       scopes: Mapping[tuple[str | None, int], np.ndarray | None]) -> None:
        return self._txns.add_write_keys(txn_id, table_name, scopes)

    def purge_write_sets(self) -> dict[str, int]:
        return self._txns.purge_write_sets()

    def commit_transaction(self, txn_id: int,
                           stats: dict[str, dict[str, Any]] | None = None) -> int:
        return self._txns.commit_transaction(txn_id, stats)

    def abort_transaction(self, txn_id: int, reason: str = "") -> None:
        return self._txns.abort_transaction(txn_id, reason)

    def get_transaction(self, txn_id: int) -> TxnInfo:
        return self._txns.get_transaction(txn_id)

    def list_transactions(self, states: Iterable[str] | None = None) -> list[TxnInfo]:
        return self._txns.list_transactions(states)

    def abort_timed_out_transactions(self, now: datetime | None = None) -> list[int]:
        return self._txns.abort_timed_out_transactions(now)

    # -- write ids and snapshots (sql/writeids.py) -------------------------------------------
    def valid_write_ids(self, table_name: str, txn_id: int | None = None,
                        as_of_write_id: int | None = None) -> ValidWriteIdList:
        return self._write_ids.valid_write_ids(table_name, txn_id, as_of_write_id)

    def compactor_valid_write_ids(self, table_name: str) -> ValidWriteIdList:
        return self._write_ids.compactor_valid_write_ids(table_name)

    def write_id_states(self, table_name: str) -> list[tuple[int, int, str]]:
        return self._write_ids.write_id_states(table_name)

    def commit_records(self, table_name: str) -> list[CommitRecord]:
        return self._write_ids.commit_records(table_name)

    # -- locks (sql/locks.py) ----------------------------------------------------------------
    def acquire_lock(self, txn_id: int, table_name: str, partition: str | None,
                     lock_type: str, timeout_s: float = 60.0) -> int:
        return self._locks.acquire_lock(txn_id, table_name, partition, lock_type, timeout_s)

    def release_locks(self, txn_id: int) -> None:
        return self._locks.release_locks(txn_id)

    def list_locks(self, table_name: str | None = None) -> list[LockInfo]:
        return self._locks.list_locks(table_name)

    # -- batches and tombstones (sql/batches.py) ---------------------------------------------
    def register_batch(self, txn_id: int, batch_id: str, kind: str, *,
                       source: str | None = None, details: dict[str, Any] | None = None
                       ) -> BatchInfo:
        return self._batches.register_batch(txn_id, batch_id, kind, source=source, details=details)

    def get_batch(self, batch_id: str) -> BatchInfo | None:
        return self._batches.get_batch(batch_id)

    def list_batches(self, kind: str | None = None) -> list[BatchInfo]:
        return self._batches.list_batches(kind)

    def add_tombstones(self, txn_id: int, table_name: str,
                       entries: list[tuple[str, str]]) -> None:
        return self._batches.add_tombstones(txn_id, table_name, entries)

    def tombstones(self, table_name: str, key_jsons: list[str]) -> dict[str, str]:
        return self._batches.tombstones(table_name, key_jsons)

    # -- compaction queue and history (sql/compactions.py) -----------------------------------
    def enqueue_compaction(self, table_name: str, partition: str | None, compaction_type: str,
                           *, requester: str = "initiator", state: str = CompactionState.INITIATED,
                           error: str | None = None,
                           properties: dict[str, Any] | None = None) -> CompactionInfo:
        return self._compactions.enqueue_compaction(table_name, partition, compaction_type,
                                                    requester=requester, state=state, error=error,
                                                    properties=properties)

    def get_compaction(self, cq_id: int) -> CompactionInfo:
        return self._compactions.get_compaction(cq_id)

    def list_compactions(self, table_name: str | None = None, states: Iterable[str] | None = None,
                         partition: str | None = None, *, any_partition: bool = True
                         ) -> list[CompactionInfo]:
        return self._compactions.list_compactions(table_name, states, partition,
                                                  any_partition=any_partition)

    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        self.check_warehouse_owner()
        return self._compactions.claim_compaction(worker_id, cq_id)

    def heartbeat_compaction(self, cq_id: int) -> None:
        return self._compactions.heartbeat_compaction(cq_id)

    def update_compaction(self, cq_id: int, *, highest_write_id: int | None = None,
                          details: dict[str, Any] | None = None) -> None:
        return self._compactions.update_compaction(cq_id, highest_write_id=highest_write_id,
                                                   details=details)

    def mark_compaction_ready_for_cleaning(self, cq_id: int, highest_write_id: int,
                                           details: dict[str, Any] | None = None) -> int:
        return self._compactions.mark_compaction_ready_for_cleaning(cq_id, highest_write_id,
                                                                    details)

    def mark_compaction_succeeded(self, cq_id: int, details: dict[str, Any] | None = None) -> None:
        return self._compactions.mark_compaction_succeeded(cq_id, details)

    def mark_compaction_failed(self, cq_id: int, error: str,
                               details: dict[str, Any] | None = None) -> None:
        return self._compactions.mark_compaction_failed(cq_id, error, details)

    def reclaim_dead_compactions(self, timeout_s: float | None = None,
                                 now: datetime | None = None) -> list[int]:
        return self._compactions.reclaim_dead_compactions(timeout_s, now)

    def compaction_history(self, table_name: str, partition: str | None) -> list[CompactionInfo]:
        return self._compactions.compaction_history(table_name, partition)

    def purge_compaction_history(self, retention: dict[str, int] | None = None) -> list[int]:
        return self._compactions.purge_compaction_history(retention)

    def compaction_candidates(self) -> list[tuple[str, str | None, int]]:
        return self._compactions.compaction_candidates()

    def aborted_write_ids(self, table_name: str, partition: str | None = None, *,
                          any_partition: bool = False) -> list[int]:
        return self._compactions.aborted_write_ids(table_name, partition,
                                                   any_partition=any_partition)

    def forget_aborted_components(self, table_name: str, up_to_write_id: int) -> int:
        return self._compactions.forget_aborted_components(table_name, up_to_write_id)

    # -- reader registrations (sql/readers.py) -----------------------------------------------
    def register_reader(self, table_name: str,
                        valid_write_ids: ValidWriteIdList | None = None, *,
                        agent_info: str | None = None) -> ReaderInfo:
        return self._readers.register_reader(table_name, valid_write_ids, agent_info=agent_info)

    def set_reader_snapshot(self, reader_id: int, valid_write_ids: ValidWriteIdList) -> None:
        return self._readers.set_reader_snapshot(reader_id, valid_write_ids)

    def heartbeat_reader(self, reader_id: int) -> bool:
        return self._readers.heartbeat_reader(reader_id)

    def unregister_reader(self, reader_id: int) -> None:
        return self._readers.unregister_reader(reader_id)

    def list_readers(self, table_name: str | None = None) -> list[ReaderInfo]:
        return self._readers.list_readers(table_name)

    def purge_expired_readers(self, timeout_s: float | None = None,
                              now: datetime | None = None) -> list[int]:
        return self._readers.purge_expired_readers(timeout_s, now)

    def blocking_readers(self, table_name: str, commit_id: int, *,
                         timeout_s: float | None = None, now: datetime | None = None
                         ) -> dict[str, list[int]]:
        return self._readers.blocking_readers(table_name, commit_id, timeout_s=timeout_s, now=now)
