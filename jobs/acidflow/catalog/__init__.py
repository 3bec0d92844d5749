"""acidflow's transaction catalog: the Hive metastore's TXN role (tables, transactions,
write ids, write set, locks, heartbeats, commit records, batches, compaction queue, readers).

:class:`Catalog` (:mod:`acidflow.catalog.base`) is the interface the rest of acidflow uses;
:class:`SqlCatalog` (:mod:`acidflow.catalog.sql`) implements it on SQLAlchemy - SQLite file by
default (``<warehouse>/_acidflow_catalog.db``), PostgreSQL for shared deployments; schema
managed by Alembic (``jobs/acidflow/catalog/sql/migrations``), upgraded on start-up.
:class:`HiveMetastoreCatalog` (:mod:`acidflow.catalog.hms`) implements it on a Hive 3.1
metastore (``thrift://host:port``) with a SQL side catalog (docs/hms-catalog.md); it needs the
``hms`` extra (``pip install 'acidflow[hms]'``).

The backends load on first use: ``import acidflow.catalog`` imports neither SQLAlchemy nor the
metastore's thrift client; ``SqlCatalog``, ``HiveMetastoreCatalog``, ``alembic_config`` and
``head_revision`` resolve lazily (PEP 562), and :func:`load_catalog` imports the backend its
URL names.

    from acidflow.catalog import Column, TableDef, load_catalog
    cat = load_catalog()                      # or Catalog.from_settings(), SqlCatalog(url)
    txn = cat.open_transaction()
    wid = cat.allocate_write_id(txn, "db.t")
    ...
    cat.commit_transaction(txn, stats={"db.t": {"rows_inserted": 10}})
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from acidflow.catalog.base import Catalog, load_catalog, register_backend
from acidflow.catalog.errors import (
    BatchAlreadyAppliedError,
    BatchInProgressError,
    CatalogError,
    CompactionStateError,
    LockTimeoutError,
    NoSuchSavepointError,
    NoSuchTableError,
    NoSuchTransactionError,
    SavepointExistsError,
    TableExistsError,
    TxnAbortedError,
    TxnNotOpenError,
    WriteConflictError,
)
from acidflow.catalog.records import (
    COMPACTION_STATES,
    COMPACTION_TYPES,
    LOCK_TYPES,
    OPERATIONS,
    TXN_STATES,
    BatchInfo,
    CommitRecord,
    CompactionInfo,
    CompactionState,
    CompactionType,
    LockInfo,
    LockState,
    LockType,
    ReaderInfo,
    SavepointInfo,
    TxnInfo,
    TxnState,
)
from acidflow.catalog.tabledef import (
    Column,
    TableDef,
    normalize_table_name,
    parse_partition_spec,
    split_table_name,
)
from acidflow.format.hivetypes import normalize_hive_type

if TYPE_CHECKING:
    from acidflow.catalog.hms.catalog import HiveMetastoreCatalog, make_hms_catalog
    from acidflow.catalog.sql import SqlCatalog, alembic_config, head_revision

# The SQL backend serves every URL that no other backend claims; thrift:// is the metastore.
# Both registered by path: load_catalog imports one on first use (thrift:// needs the extra).
register_backend(None, "acidflow.catalog.sql:SqlCatalog")
register_backend("thrift", "acidflow.catalog.hms.catalog:make_hms_catalog")

#: public name -> the module that defines it, imported on first use
_LAZY = {
    "SqlCatalog": "acidflow.catalog.sql",
    "alembic_config": "acidflow.catalog.sql",
    "head_revision": "acidflow.catalog.sql",
    "HiveMetastoreCatalog": "acidflow.catalog.hms.catalog",
    "make_hms_catalog": "acidflow.catalog.hms.catalog",
}


def __getattr__(name: str) -> Any:
    """Import a backend's public name on first use (``from acidflow.catalog import SqlCatalog``);
    the metastore's raise :class:`acidflow._extras.MissingExtraError` without the ``hms`` extra."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acidflow.catalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Catalog",
    "SqlCatalog",
    "HiveMetastoreCatalog",
    "make_hms_catalog",
    "load_catalog",
    "register_backend",
    "Column",
    "TableDef",
    "TxnInfo",
    "LockInfo",
    "CommitRecord",
    "BatchInfo",
    "CompactionInfo",
    "ReaderInfo",
    "SavepointInfo",
    "CatalogError",
    "NoSuchTableError",
    "NoSuchSavepointError",
    "SavepointExistsError",
    "TableExistsError",
    "NoSuchTransactionError",
    "TxnAbortedError",
    "TxnNotOpenError",
    "WriteConflictError",
    "LockTimeoutError",
    "BatchAlreadyAppliedError",
    "BatchInProgressError",
    "CompactionStateError",
    "OPERATIONS",
    "LOCK_TYPES",
    "TXN_STATES",
    "COMPACTION_STATES",
    "COMPACTION_TYPES",
    "TxnState",
    "LockType",
    "LockState",
    "CompactionState",
    "CompactionType",
    "alembic_config",
    "head_revision",
    "normalize_hive_type",
    "normalize_table_name",
    "split_table_name",
    "parse_partition_spec",
]
