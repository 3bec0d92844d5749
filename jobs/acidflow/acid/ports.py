"""What the format package asks of the layers above it, as protocols.

``acidflow.acid`` imports nothing of ``acidflow.catalog``; a writer still needs a table
definition and a transaction catalog. These protocols name exactly what it uses, so any
catalog backend (the SQL one, wave 2's Hive Metastore one) fits without acid knowing it:

* :class:`ColumnDef` / :class:`TableDesc` -- what ``acidflow.catalog.TableDef`` gives a writer
  (Hive's ``Table`` / ``StorageDescriptor``: columns, partition keys, bucket columns,
  ``bucketing_version``, location);
* :class:`TxnCatalog` -- the transaction calls of Hive's ``IMetaStoreClient`` a writer makes
  (``openTxns``, ``heartbeat``, ``allocateTableWriteIds``, ``getValidWriteIds``, ``lock``,
  ``addDynamicPartitions``, ``commitTxn``, ``abortTxn``) plus the key-level write set
  (``add_write_keys``, no Hive counterpart).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from acidflow.acid.layout import ValidWriteIdList

if TYPE_CHECKING:
    import numpy as np


class ColumnDef(Protocol):
    """A table column: name and Hive type string."""

    @property
    def name(self) -> str: ...

    @property
    def hive_type(self) -> str: ...


class TableDesc(Protocol):
    """A full-ACID table as the writers and readers of this package see it."""

    @property
    def name(self) -> str: ...

    @property
    def location(self) -> str: ...

    @property
    def columns(self) -> Sequence[ColumnDef]: ...

    @property
    def partition_columns(self) -> Sequence[ColumnDef]: ...

    @property
    def primary_key(self) -> Sequence[str]: ...

    @property
    def bucket_columns(self) -> Sequence[str]: ...

    @property
    def num_buckets(self) -> int: ...

    @property
    def bucketing_version(self) -> int: ...


class TxnRef(Protocol):
    """Anything that names an open transaction (``acidflow.acid.transaction.Transaction``)."""

    @property
    def txn_id(self) -> int | None: ...


class TxnCatalog(Protocol):
    """The transaction-catalog calls a writer makes (see ``acidflow.catalog`` for their
    contracts and errors)."""

    @property
    def txn_timeout_s(self) -> int: ...

    def get_table(self, name: str) -> TableDesc: ...

    def open_transaction(self, user: str | None = None, host: str | None = None,
                         agent_info: str | None = None) -> int: ...

    def heartbeat(self, txn_id: int) -> None: ...

    def allocate_write_id(self, txn_id: int, table_name: str) -> int: ...

    def valid_write_ids(self, table_name: str, txn_id: int | None = None,
                        as_of_write_id: int | None = None) -> ValidWriteIdList: ...

    def acquire_lock(self, txn_id: int, table_name: str, partition: str | None,
                     lock_type: str, timeout_s: float = 60.0) -> int: ...

    def add_component(self, txn_id: int, table_name: str, partition: str | None,
                      operation: str) -> None: ...

    def add_write_keys(self, txn_id: int, table_name: str,
                       scopes: Mapping[tuple[str | None, int], "np.ndarray | None"]) -> None: ...

    def commit_transaction(self, txn_id: int, stats: dict[str, dict] | None = None) -> int: ...

    def abort_transaction(self, txn_id: int, reason: str = "") -> None: ...

    def writer_schema_problem(self, name: str, txn_id: int) -> str | None: ...
