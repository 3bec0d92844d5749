"""acidflow's transaction catalog: the Hive metastore's TXN role (tables, transactions,
write ids, write set, locks, heartbeats, commit records) on SQLAlchemy.

SQLite file by default (``<warehouse>/_acidflow_catalog.db``), PostgreSQL for shared
deployments; schema managed by Alembic (``jobs/acidflow/catalog/migrations``), upgraded on start-up.

    from acidflow.catalog import Catalog, TableDef, Column
    cat = Catalog.from_settings()
    txn = cat.open_transaction()
    wid = cat.allocate_write_id(txn, "db.t")
    ...
    cat.commit_transaction(txn, stats={"db.t": {"rows_inserted": 10}})
"""
from acidflow.catalog.errors import (
    BatchAlreadyAppliedError,
    BatchInProgressError,
    CatalogError,
    LockTimeoutError,
    NoSuchTableError,
    NoSuchTransactionError,
    TableExistsError,
    TxnAbortedError,
    TxnNotOpenError,
    WriteConflictError,
)
from acidflow.catalog.compactions import (
    COMPACTION_STATES,
    COMPACTION_TYPES,
    CompactionInfo,
    CompactionStateError,
    ReaderInfo,
)
from acidflow.catalog.store import (
    LOCK_TYPES,
    OPERATIONS,
    TXN_STATES,
    BatchInfo,
    Catalog,
    Column,
    CommitRecord,
    LockInfo,
    TableDef,
    TxnInfo,
    alembic_config,
    head_revision,
    normalize_hive_type,
    normalize_table_name,
)

__all__ = [
    "Catalog", "Column", "BatchInfo", "BatchAlreadyAppliedError", "BatchInProgressError", "TableDef", "TxnInfo", "LockInfo", "CommitRecord",
    "CatalogError", "NoSuchTableError", "TableExistsError", "NoSuchTransactionError",
    "TxnAbortedError", "TxnNotOpenError", "WriteConflictError", "LockTimeoutError",
    "OPERATIONS", "LOCK_TYPES", "TXN_STATES",
    "CompactionInfo", "CompactionStateError", "ReaderInfo", "COMPACTION_STATES", "COMPACTION_TYPES",
    "alembic_config", "head_revision", "normalize_hive_type", "normalize_table_name",
]
