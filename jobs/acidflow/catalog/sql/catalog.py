"""``SqlCatalog``: the :class:`~acidflow.catalog.base.Catalog` interface on SQLAlchemy, composed
of one part per idea, all sharing one :class:`~acidflow.catalog.sql.db.Database`:

* :class:`~acidflow.catalog.sql.tables.SqlTables` - table definitions;
* :class:`~acidflow.catalog.sql.txns.SqlTransactions` - transactions, write ids, commit,
  the housekeeper's timeout;
* :class:`~acidflow.catalog.sql.writeids.SqlWriteIds` - snapshots and commit records;
* :class:`~acidflow.catalog.sql.locks.SqlLocks` - locks;
* :class:`~acidflow.catalog.sql.batches.SqlBatches` - batch ledger and CDC tombstones;
* :class:`~acidflow.catalog.sql.compactions.SqlCompactions` - compaction queue and history;
* :class:`~acidflow.catalog.sql.readers.SqlReaders` - reader registrations;
* :class:`~acidflow.catalog.sql.datafiles.SqlDataFiles` - data file records;
* :class:`~acidflow.catalog.sql.savepoints.SqlSavepoints` - savepoints.
* :class:`~acidflow.catalog.sql.purge.SqlHistoryPurge` - history purges (commit records,
  completed components, tombstones, aborted batch claims).

This class only wires them: a role method that is the part's own is declared with
:func:`acidflow.catalog.forward.forward` (documented once on the roles,
:mod:`acidflow.catalog.api`). SQLite file by default
(``<warehouse>/_acidflow_catalog.db``), PostgreSQL for shared deployments; the schema
(:mod:`acidflow.catalog.sql.schema`) is managed by Alembic and upgraded on start-up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from typing import Any

import sqlalchemy as sa

from acidflow.catalog.base import Catalog
from acidflow.catalog.errors import NewCatalogOnOwnedWarehouseError
from acidflow.catalog.forward import forward
from acidflow.catalog.records import (
    CompactionInfo,
)
from acidflow.catalog.sql import schema as m
from acidflow.catalog.sql.adopt import SqlAdoption
from acidflow.catalog.sql.batches import SqlBatches
from acidflow.catalog.sql.compactions import SqlCompactions
from acidflow.catalog.sql.datafiles import SqlDataFiles
from acidflow.catalog.sql.db import Database, utcnow
from acidflow.catalog.sql.locks import SqlLocks
from acidflow.catalog.sql.purge import SqlHistoryPurge
from acidflow.catalog.sql.readers import SqlReaders
from acidflow.catalog.sql.savepoints import SqlSavepoints
from acidflow.catalog.sql.schemahistory import SqlSchemaHistory
from acidflow.catalog.sql.shared import TxnHooks
from acidflow.catalog.sql.tables import SqlTables
from acidflow.catalog.sql.txns import SqlTransactions
from acidflow.catalog.sql.writeids import SqlWriteIds
from acidflow.catalog.tabledef import TableDef
from acidflow.catalog.warehouse import read_marker, warehouse_root
from acidflow.config import load_settings
from acidflow.format.layout import ValidWriteIdList

log = logging.getLogger(__name__)


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

    def __init__(
        self,
        url: str,
        *,
        warehouse: str | None = None,
        txn_timeout_s: int = 300,
        migrate: bool = True,
        txn_hooks: TxnHooks | None = None,
    ) -> None:
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
        self._data_files = SqlDataFiles(self.db)
        self._savepoints = SqlSavepoints(self.db)
        self._purge = SqlHistoryPurge(self.db, self.txn_timeout_s)
        self._adoption = SqlAdoption(self.db, self._tables)
        self._schema = SqlSchemaHistory(self.db, self.warehouse)  # schema evolution
        if migrate:
            sqlite_file = self._sqlite_file()
            existed = sqlite_file is None or os.path.exists(sqlite_file)
            fresh = not existed or self.db.current_revision() is None
            self.upgrade()
            if fresh:
                self._refuse_new_catalog_on_owned_warehouse(None if existed else sqlite_file)

    def _sqlite_file(self) -> str | None:
        """The SQLite database file of the URL (None: PostgreSQL or an in-memory database)."""
        path = self.db.url.database if self.db.is_sqlite else None
        return None if not path or path == ":memory:" else os.path.abspath(path)

    def _refuse_new_catalog_on_owned_warehouse(self, created_file: str | None) -> None:
        """After migrating a database that held no catalog: refuse it when the warehouse
        already belongs to another catalog, undoing the creation (``created_file``: the SQLite
        file this process made, deleted; else the schema migrated back to empty).

        Raises:
            NewCatalogOnOwnedWarehouseError: the warehouse marker names another catalog.
        """
        try:
            owner = read_marker(self.warehouse)
        except Exception as exc:  # noqa: BLE001 - unreachable store: the write-time check holds
            log.info("warehouse %s not checked at open: %s", self.warehouse, exc)
            return
        if owner is None or owner.get("catalog_id") == self.catalog_id():
            return
        error = NewCatalogOnOwnedWarehouseError(
            self.warehouse,
            owner.get("catalog_id", "?"),
            owner.get("catalog_url", "?"),
            self.catalog_id(),
            self.display_url(),
        )
        if created_file is not None:
            self.db.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(created_file + suffix)
        else:
            self.db.downgrade("base")
            self.db.close()
        raise error

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
        """SQL: disposes of the engine's connection pool."""
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
                found = conn.execute(
                    sa.select(m.CatalogIdentity.catalog_id).where(
                        m.CatalogIdentity.identity_key == 1
                    )
                ).scalar()
                if found is None:  # emptied by hand: a new identity, made once
                    found = str(uuid.uuid4())
                    conn.execute(
                        sa.insert(m.CatalogIdentity).values(
                            identity_key=1, catalog_id=found, created_at=utcnow()
                        )
                    )
                return str(found)

            try:
                self._catalog_id = self.db.run(fn)
            except sa.exc.IntegrityError:  # a concurrent process made it first
                self._catalog_id = self.db.run(fn, write=False)
        return self._catalog_id

    # -- tables (sql/tables.py) --------------------------------------------------------------
    def create_table(
        self, table: TableDef | dict[str, Any], if_not_exists: bool = False
    ) -> TableDef:
        self.check_warehouse_owner()
        return self._tables.create_table(table, if_not_exists)

    def adopt_table(self, table: TableDef | dict[str, Any], history: ValidWriteIdList) -> TableDef:
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

    get_table = forward("_tables", SqlTables)
    table_exists = forward("_tables", SqlTables)
    list_tables = forward("_tables", SqlTables)
    drop_table = forward("_tables", SqlTables)
    set_table_properties = forward("_tables", SqlTables)
    add_columns = forward("_tables", SqlTables)

    # --- schema evolution
    alter_schema = forward("_schema", SqlSchemaHistory)
    schema_history = forward("_schema", SqlSchemaHistory)
    set_primary_key = forward("_tables", SqlTables)

    # -- transactions (sql/txns.py) ----------------------------------------------------------
    open_transaction = forward("_txns", SqlTransactions)
    heartbeat = forward("_txns", SqlTransactions)

    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        self.check_warehouse_owner()
        return self._txns.allocate_write_id(txn_id, table_name)

    add_component = forward("_txns", SqlTransactions)
    add_write_keys = forward("_txns", SqlTransactions)
    purge_write_sets = forward("_txns", SqlTransactions)
    purge_commit_records = forward("_purge", SqlHistoryPurge)
    purge_transactions = forward("_purge", SqlHistoryPurge)
    commit_transaction = forward("_txns", SqlTransactions)
    abort_transaction = forward("_txns", SqlTransactions)
    get_transaction = forward("_txns", SqlTransactions)
    list_transactions = forward("_txns", SqlTransactions)
    abort_timed_out_transactions = forward("_txns", SqlTransactions)

    # -- write ids and snapshots (sql/writeids.py) -------------------------------------------
    valid_write_ids = forward("_write_ids", SqlWriteIds)
    compactor_valid_write_ids = forward("_write_ids", SqlWriteIds)
    write_id_states = forward("_write_ids", SqlWriteIds)
    write_id_history = forward("_write_ids", SqlWriteIds)
    commit_records = forward("_write_ids", SqlWriteIds)

    # -- locks (sql/locks.py) ----------------------------------------------------------------
    acquire_lock = forward("_locks", SqlLocks)
    release_locks = forward("_locks", SqlLocks)
    list_locks = forward("_locks", SqlLocks)

    # -- batches and tombstones (sql/batches.py) ---------------------------------------------
    register_batch = forward("_batches", SqlBatches)
    get_batch = forward("_batches", SqlBatches)
    list_batches = forward("_batches", SqlBatches)
    newest_batch = forward("_batches", SqlBatches)
    add_tombstones = forward("_batches", SqlBatches)
    tombstones = forward("_batches", SqlBatches)
    purge_tombstones = forward("_purge", SqlHistoryPurge)
    purge_batches = forward("_purge", SqlHistoryPurge)

    # -- savepoints (sql/savepoints.py) -------------------------------------------------------
    add_savepoint = forward("_savepoints", SqlSavepoints)
    list_savepoints = forward("_savepoints", SqlSavepoints)
    drop_savepoint = forward("_savepoints", SqlSavepoints)

    # -- compaction queue and history (sql/compactions.py) -----------------------------------
    enqueue_compaction = forward("_compactions", SqlCompactions)
    get_compaction = forward("_compactions", SqlCompactions)
    list_compactions = forward("_compactions", SqlCompactions)

    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        self.check_warehouse_owner()
        return self._compactions.claim_compaction(worker_id, cq_id)

    heartbeat_compaction = forward("_compactions", SqlCompactions)
    update_compaction = forward("_compactions", SqlCompactions)
    mark_compaction_ready_for_cleaning = forward("_compactions", SqlCompactions)
    mark_compaction_succeeded = forward("_compactions", SqlCompactions)
    mark_compaction_failed = forward("_compactions", SqlCompactions)
    reclaim_dead_compactions = forward("_compactions", SqlCompactions)
    link_metastore_compaction = forward("_compactions", SqlCompactions)
    compaction_history = forward("_compactions", SqlCompactions)
    purge_compaction_history = forward("_compactions", SqlCompactions)
    compaction_candidates = forward("_compactions", SqlCompactions)
    purge_completed_components = forward("_purge", SqlHistoryPurge)
    aborted_write_ids = forward("_compactions", SqlCompactions)
    forget_aborted_components = forward("_compactions", SqlCompactions)

    # -- reader registrations (sql/readers.py) -----------------------------------------------
    register_reader = forward("_readers", SqlReaders)
    set_reader_snapshot = forward("_readers", SqlReaders)
    heartbeat_reader = forward("_readers", SqlReaders)
    unregister_reader = forward("_readers", SqlReaders)
    list_readers = forward("_readers", SqlReaders)
    purge_expired_readers = forward("_readers", SqlReaders)
    blocking_readers = forward("_readers", SqlReaders)

    # -- data file records (sql/datafiles.py) ------------------------------------------------
    record_data_files = forward("_data_files", SqlDataFiles)
    data_file_records = forward("_data_files", SqlDataFiles)
    mark_data_files_lost = forward("_data_files", SqlDataFiles)
    forget_data_files = forward("_data_files", SqlDataFiles)
