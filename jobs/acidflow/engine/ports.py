"""What the engine asks of the catalog, as protocols.

``acidflow.engine`` imports nothing of ``acidflow.catalog``; a writer still needs a table
definition and a transaction catalog. These protocols name exactly what it uses, so any
catalog backend (the SQL one, the Hive Metastore one) fits without the engine knowing it:

* :class:`~acidflow.format.table.TableDesc` -- what ``acidflow.catalog.TableDef`` gives a
  writer (defined with the format's rules, re-exported here);
* :class:`StatementContext` -- what a write statement (``engine/statements``: update, delete
  where, merge) needs of the transaction it runs in; ``Transaction`` implements it, and the
  statements type against this protocol only (never against ``Transaction``);
* :class:`TxnCatalog` -- the transaction calls of Hive's ``IMetaStoreClient`` a writer makes
  (``openTxns``, ``heartbeat``, ``allocateTableWriteIds``, ``getValidWriteIds``, ``lock``,
  ``addDynamicPartitions``, ``commitTxn``, ``abortTxn``) plus the key-level write set
  (``add_write_keys``, no Hive counterpart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sequence

from acidflow.format.filerecords import FileRecord
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.table import ColumnDef, TableDesc
from acidflow.states import LockType

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from acidflow.engine.writer import FileRow, WriteResult, WriteSpec


class TxnRef(Protocol):
    """Anything that names an open transaction (``acidflow.engine.transaction.Transaction``)."""

    @property
    def txn_id(self) -> int | None: ...


class TxnCatalog(Protocol):
    """The transaction-catalog calls a writer makes (see ``acidflow.catalog`` for their
    contracts and errors)."""

    @property
    def txn_timeout_s(self) -> int: ...

    def get_table(self, name: str) -> TableDesc: ...

    def open_transaction(
        self, user: str | None = None, host: str | None = None, agent_info: str | None = None
    ) -> int: ...

    def heartbeat(self, txn_id: int) -> None: ...

    def allocate_write_id(self, txn_id: int, table_name: str) -> int: ...

    def valid_write_ids(
        self, table_name: str, txn_id: int | None = None, as_of_write_id: int | None = None
    ) -> ValidWriteIdList: ...

    def acquire_lock(
        self,
        txn_id: int,
        table_name: str,
        partition: str | None,
        lock_type: str,
        timeout_s: float = 60.0,
    ) -> int: ...

    def add_component(
        self, txn_id: int, table_name: str, partition: str | None, operation: str
    ) -> None: ...

    def add_write_keys(
        self,
        txn_id: int,
        table_name: str,
        scopes: Mapping[tuple[str | None, int], "np.ndarray | None"],
    ) -> None: ...

    def record_data_files(
        self, txn_id: int, table_name: str, files: Iterable[FileRecord]
    ) -> None: ...

    def commit_transaction(self, txn_id: int, stats: dict[str, dict] | None = None) -> int: ...

    def abort_transaction(self, txn_id: int, reason: str = "") -> None: ...

    def writer_schema_problem(self, name: str, txn_id: int) -> str | None: ...

    def visibility_lookup(self) -> Callable[[int], str] | None: ...


class StatementContext(Protocol):
    """The one seam between a write statement and its transaction.

    A statement (Hive's ``UpdateDeleteSemanticAnalyzer`` / ``MergeSemanticAnalyzer`` turn SQL
    into the same steps) takes its Spark session, locks the table, reads the rows it changes
    through ``catalog``/``txn_id`` and writes either one split-update (delete events for the
    old ROW__IDs plus insert events, :meth:`split_update`) or its own event files between
    :meth:`begin_statement` and :meth:`end_statement`.
    """

    @property
    def catalog(self) -> TxnCatalog: ...

    @property
    def txn_id(self) -> int | None: ...

    def session(self, *frames: Any) -> "SparkSession":
        """The Spark session the statement runs in (``RuntimeError`` when there is none)."""
        ...

    def lock_table(self, table: TableDesc, lock_type: LockType) -> None:
        """Take the statement's lock (:attr:`LockType.SHARED_WRITE` /
        :attr:`LockType.EXCLUSIVE`) and check that the table's schema did not change meanwhile
        (``SchemaMismatchError``)."""
        ...

    def begin_statement(self, table: TableDesc, *kinds: str, **options: Any) -> "list[WriteSpec]":
        """Next statement id of ``table``; one write spec per event kind written."""
        ...

    def end_statement(
        self,
        table: TableDesc,
        operation: str,
        written: "Sequence[tuple[WriteSpec, list[FileRow]]]",
        components: Sequence[tuple[str, str]],
        counts: dict[str, int],
        extra_partitions: Sequence[str] = (),
    ) -> "WriteResult":
        """The statement epilogue: directories finished, components and statistics recorded."""
        ...

    def reserve_statement_ids(self, table_name: str, last: int) -> None:
        """Count statement ids up to ``last`` as handed out (``ValueError`` above 4095)."""
        ...

    def split_update(
        self,
        table: TableDesc,
        aligned: "DataFrame | pa.Table",
        matched: "DataFrame | pa.Table",
        operation: str,
        counts: dict[str, int] | None = None,
        **options: Any,
    ) -> "WriteResult":
        """One split-update statement: delete events for ``matched``, insert events for
        ``aligned``, in one statement id."""
        ...


__all__ = ["ColumnDef", "StatementContext", "TableDesc", "TxnCatalog", "TxnRef"]
