"""Transactions, write ids and snapshots (Hive ``open_txns`` / ``heartbeat`` /
``allocate_table_write_ids`` / ``add_dynamic_partitions`` / ``commit_txn`` / ``abort_txn`` /
``show_txns`` / ``get_valid_write_ids``).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``).
The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import numpy as np

from acidflow.catalog.records import (
    CommitRecord,
    TxnInfo,
)
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.timetravel import WriteIdHistory


class TransactionCatalog(abc.ABC):
    """Transactions, write ids and snapshots (Hive ``open_txns`` / ``heartbeat`` /
    ``allocate_table_write_ids`` / ``commit_txn`` / ``abort_txn`` / ``get_valid_write_ids``)."""

    @abc.abstractmethod
    def open_transaction(
        self, user: str | None = None, host: str | None = None, agent_info: str | None = None
    ) -> int:
        """Open a transaction (Hive ``TxnHandler.openTxns``).

        Args:
            user, host: recorded for display; default the OS user and host name.
            agent_info: free text (job, task, pid); default ``"acidflow pid <pid>"``.
        Returns:
            The new transaction id from the global increasing sequence (Hive ``NEXT_TXN_ID``).
        """

    @abc.abstractmethod
    def heartbeat(self, txn_id: int) -> None:
        """Record that the transaction's owner is alive; also refreshes its locks (Hive
        ``TxnHandler.heartbeat``). Call well within ``txn_timeout_s``.

        Raises:
            NoSuchTransactionError: unknown id.
            TxnAbortedError: aborted (e.g. timed out by the housekeeper).
            TxnNotOpenError: already committed.
        """

    @abc.abstractmethod
    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        """The transaction's write id for a table (Hive ``allocateTableWriteIds``): the table's
        next write id on first call, the same id again on later calls for the same pair.

        Write ids of one table increase in allocation order (Hive ``NEXT_WRITE_ID``; the pair
        goes to ``TXN_TO_WRITE_ID``). Concurrent allocations for one table are serialised.

        Raises:
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
            WarehouseOwnedError: another catalog owns the warehouse
                (:meth:`check_warehouse_owner`).
        """

    @abc.abstractmethod
    def add_component(
        self, txn_id: int, table_name: str, partition: str | None, operation: str
    ) -> None:
        """Register that the transaction writes a partition (Hive ``TXN_COMPONENTS``, as
        ``addDynamicPartitions`` / lock components do). Repeats are ignored.

        Args:
            partition: ``"ds=2024-01-01/region=eu"`` (all partition columns, in order) or
                ``None`` for an unpartitioned table or a whole-table operation.
            operation: ``"insert"``, ``"update"``, ``"delete"`` or ``"insert_overwrite"``;
                the last three take part in the commit-time write-conflict check.
        Raises:
            ValueError: unknown operation, partition spec not matching the table.
            CatalogError: no write id allocated yet for this (transaction, table).
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def add_write_keys(
        self,
        txn_id: int,
        table_name: str,
        scopes: Mapping[tuple[str | None, int], np.ndarray | None],
    ) -> None:
        """Record the primary keys the open transaction wrote into a keyed table: the
        key-level write set (acidflow's; Hive keeps only the partition-level ``WRITE_SET``).
        ``Transaction`` calls it from every statement that writes insert events (insert,
        upsert, CDC merge, insert overwrite), with the hashes its write tasks computed.

        At commit, if a transaction that committed after this one opened (commit id > txn id)
        recorded one of the same key hashes in an overlapping scope, this transaction is
        aborted with :class:`WriteConflictError` (first committer wins): two overlapping
        transactions can never both insert a key, so no duplicate primary key is committed.
        Unkeyed tables record nothing (Hive: inserts never conflict).

        Args:
            scopes: ``{(partition spec or None = every partition, bucket or -1 = every
                bucket): hashes}``; hashes are ``acidflow.format.keys.key_hash64`` values as a
                ``uint64`` numpy array, or ``None`` = the whole scope (more than
                ``acidflow.format.keys.MAX_KEYS_PER_SCOPE`` keys; any key write there overlaps).
        Raises:
            ValueError: a partition spec not matching the table.
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def purge_write_sets(self) -> dict[str, int]:
        """Housekeeper (Hive ``AcidHouseKeeperService``, ``WRITE_SET`` cleanup): delete
        partition- and key-level write-set entries no open transaction can conflict with any
        more and the key entries of aborted transactions. An entry is only ever compared with
        transactions that opened before it committed, so the entries whose commit id is below
        the oldest open transaction (all of them when none is open) can go. The cleaner runs it.

        Returns:
            ``{"write_set": rows deleted, "write_set_keys": rows deleted}``.
        """

    @abc.abstractmethod
    def purge_commit_records(
        self, table_name: str, keep_from_write_id: int, *, reader_timeout_s: float | None = None
    ) -> int:
        """Delete the table's commit records of commits before the commit of
        ``keep_from_write_id`` in commit order: the oldest state history retention keeps
        (``acidflow.read.history.RetainedRange.oldest``; 0 = the whole history, nothing is
        deleted). Kept: that commit's record and every later one (time travel, incremental
        reads, restore and rollback within retention, and the timeline, read them), and for each
        live reader of the table (heartbeat younger than ``reader_timeout_s``, default the
        catalog's ``txn_timeout_s``) the newest commit its snapshot includes and every later one,
        and for each savepoint of the table (:meth:`list_savepoints`) the commit of its write id
        and every later one (all of them for a savepoint of write id 0).
        Transactions (their states, commit ids and times) are not touched: time travel orders
        commits by them (:meth:`write_id_history`), not by the records. The cleaner runs it.

        Returns:
            The number of records deleted.
        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def purge_transactions(self) -> int:
        """Delete committed transactions (their ``txns`` and ``txn_to_write_id`` rows) that no
        reader, time travel or ledger can need any more (Hive's housekeeper does the same to
        ``TXN_TO_WRITE_ID`` and ``TXNS``): a missing write id below the rows still listed then
        counts as committed, as in Hive's ``getValidWriteIds``.

        A committed transaction goes when (1) its commit id is below every open transaction's
        id (every snapshot taken from now on includes it), (2) for every table it wrote, its
        commit is older than the table's oldest commit record (:meth:`purge_commit_records`:
        outside the timeline, so no retained time-travel state, incremental read or restore
        orders commits by it) and every lower write id of that table goes too (purged write ids
        are always a table's lowest, so the commit order of the remaining ones is unchanged),
        and (3) no batch record, CDC tombstone, component or lock refers to it. Tables without
        commit records keep their transactions; open and aborted transactions are never
        deleted. The cleaner runs it after the other purges.

        Returns:
            The number of transactions deleted.
        """

    @abc.abstractmethod
    def commit_transaction(
        self, txn_id: int, stats: dict[str, dict[str, Any]] | None = None
    ) -> int:
        """Commit atomically across every table the transaction wrote (Hive
        ``TxnHandler.commitTxn``).

        Atomically: take a commit id from the global sequence; run the
        write-set check; record the update/delete/insert_overwrite footprint in ``write_set``;
        move the components to ``completed_txn_components``; write one commit record per table
        that has a write id (write id, txn id, operations, time, ``stats[table]``); mark the
        transaction committed; release its locks.

        Write-set check (HIVE-13395, first committer wins): if this transaction updated,
        deleted or overwrote a (table, partition) that another transaction also updated /
        deleted / overwrote and that other transaction committed after this one opened (its
        commit id > this txn id), this transaction is aborted instead. A whole-table (``None``)
        component overlaps every partition of its table. Inserts into unkeyed tables never
        conflict; for keyed tables the key-level check of :meth:`add_write_keys` runs too.

        Committing an already committed transaction returns its commit id again (Hive's
        idempotent ``commitTxn``).

        Args:
            stats: ``{"db.table": {...}}`` JSON-serialisable statistics per written table.
        Returns:
            The commit id (larger than every txn id opened before the commit).
        Raises:
            WriteConflictError: a check failed (partition or key level; metastore backend: or
                Hive's own write-set check at ``commit_txn``); the transaction is now aborted.
            TxnAbortedError: the transaction was already aborted (e.g. timed out; metastore
                backend: also when the metastore aborted it, which is then mirrored).
            NoSuchTransactionError: unknown id.
            ValueError: stats for a table the transaction has no write id for, or stats that
                are not JSON-serialisable.
        """

    @abc.abstractmethod
    def abort_transaction(self, txn_id: int, reason: str = "") -> None:
        """Abort (Hive ``TxnHandler.abortTxn``): the transaction's write ids become aborted
        (invisible to readers, see :meth:`valid_write_ids`), its locks are released, its
        components are kept for the cleaner. Aborting an aborted transaction does nothing.

        Raises:
            NoSuchTransactionError: unknown id.
            TxnNotOpenError: already committed.
        """

    @abc.abstractmethod
    def get_transaction(self, txn_id: int) -> TxnInfo:
        """State and details of one transaction.

        Raises:
            NoSuchTransactionError: unknown id.
        """

    @abc.abstractmethod
    def list_transactions(self, states: Iterable[str] | None = None) -> list[TxnInfo]:
        """Transactions in id order, optionally only those in ``states`` (``"open"``,
        ``"committed"``, ``"aborted"``) (Hive ``SHOW TRANSACTIONS``).

        Raises:
            ValueError: unknown state.
        """

    @abc.abstractmethod
    def abort_timed_out_transactions(self, now: datetime | None = None) -> list[int]:
        """The housekeeper (Hive ``AcidHouseKeeperService`` -> ``TxnHandler.performTimeOuts``):
        abort every open transaction whose last heartbeat is older than ``txn_timeout_s`` and
        drop its locks; abort reason ``"timed out"``. Transactions busy committing at that
        moment may be skipped (they are aborted by a later run).

        Args:
            now: the reference time (UTC; naive = UTC); default the current time.
        Returns:
            Ids of the transactions aborted, ascending (metastore backend: with the open
            transactions it brought up to the metastore's state - aborted by the metastore's
            own housekeeper, or committed there by a process that died before recording it).
        """

    @abc.abstractmethod
    def valid_write_ids(
        self,
        table_name: str,
        txn_id: int | None = None,
        as_of_write_id: int | None = None,
        *,
        as_of_timestamp: datetime | None = None,
    ) -> ValidWriteIdList:
        """The reader's snapshot of a table (Hive ``getValidWriteIds`` ->
        ``ValidReaderWriteIdList``, see docs/hive-acid-format.md §6).

        * high watermark = the highest write id allocated for the table;
        * exceptions = write ids <= high watermark whose transaction is open (``open_write_ids``)
          or aborted (``aborted_write_ids``), ascending;
        * with ``txn_id``: the snapshot taken when that transaction opened (Hive's
          ``ValidTxnList`` at ``openTxns``) plus its own writes -- a write id whose transaction
          committed after ``txn_id`` opened (commit id > ``txn_id``; txn ids and commit ids come
          from one sequence) is an open exception, so every read of one transaction (key
          lookups of upsert/delete/CDC, ``read_table(..., txn_id=)``) agrees with its first;
        * the write id of ``txn_id`` (the caller's own transaction) is valid, not an exception,
          so a transaction reads its own writes;
        * ``min_open_write_id`` = lowest open exception, ``None`` when there is none.

        Time travel (``txn_id`` is then ignored), :mod:`acidflow.format.timetravel`: exactly the
        committed state right after a commit, as Hive's snapshot of that moment was --

        * ``as_of_write_id=W``: right after W's commit: valid = the table's write ids committed
          at or before it in commit order, high watermark = the largest of them (it may be above
          W, when a higher write id committed first), every lower write id not committed by then
          an exception (aborted if its transaction aborted, else open); a W that never committed
          gives the state after the commit of the largest committed write id below it (0: the
          empty table), a W above every allocated write id the current state;
        * ``as_of_timestamp=T`` (naive = UTC): the state after the last commit at or before T.

        Returns:
            ``acidflow.format.layout.ValidWriteIdList``.
        Raises:
            NoSuchTableError, NoSuchTransactionError (``txn_id`` unknown),
            ValueError (negative ``as_of_write_id``, or both ``as_of_*`` given).
        """

    @abc.abstractmethod
    def compactor_valid_write_ids(self, table_name: str) -> ValidWriteIdList:
        """The snapshot a compaction may cover (Hive 3 ``MIN_HISTORY_LEVEL`` rule): the one
        the oldest open transaction took when it opened, without its own writes, so no open
        transaction -- whose reads use the snapshot of its open -- is left without a usable
        base. Equals :meth:`valid_write_ids` when nothing is open; the compactor applies
        ``for_compactor()`` to it. Metastore backend: the oldest open transaction may be
        Hive's; Hive transactions below it that committed after it opened are not known (Hive
        3.1 keeps no such history; its own compactor has the same limit).

        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def write_id_states(self, table_name: str) -> list[tuple[int, int, str]]:
        """Every allocated write id of a table as ``(write_id, txn_id, state)`` in write id
        order; state is the owning transaction's (``"open"``, ``"committed"``, ``"aborted"``).

        Raises:
            NoSuchTableError: unknown table.
        """

    @abc.abstractmethod
    def write_id_history(self, table_name: str) -> list[WriteIdHistory]:
        """Every allocated write id of a table with its state, commit id and commit time
        (:class:`acidflow.format.timetravel.WriteIdHistory`), in write id order: the history
        time travel and history retention order commits by. Commit ids and times come from
        the transactions (kept), not from the commit records (purged beyond retention).
        Metastore backend: the metastore's write ids (states of its current snapshot), with
        commit ids and times for acidflow's own commits only (Hive's count as committed in
        write id order, ``acidflow.format.timetravel``).

        Raises:
            NoSuchTableError: unknown table.
        """

    @abc.abstractmethod
    def commit_records(self, table_name: str) -> list[CommitRecord]:
        """Commit records of a table in write id order (one per committed transaction that
        allocated a write id for it).

        Raises:
            NoSuchTableError: unknown table.
        """
