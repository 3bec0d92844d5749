"""The compaction queue and its history (Hive ``compact2`` / ``show_compact`` and the
compactor's ``CompactionTxnHandler``).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``).
The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from acidflow.catalog.records import (
    CompactionInfo,
    CompactionState,
    MetastoreCompactionRequest,
)


class CompactionQueue(abc.ABC):
    """The compaction queue and its history (Hive ``compact2`` / ``show_compact`` and the
    compactor's ``CompactionTxnHandler``)."""

    @abc.abstractmethod
    def enqueue_compaction(
        self,
        table_name: str,
        partition: str | None,
        compaction_type: str,
        *,
        requester: str = "initiator",
        state: str = CompactionState.INITIATED,
        error: str | None = None,
        properties: dict[str, Any] | None = None,
    ) -> CompactionInfo:
        """Queue a compaction request (Hive ``TxnHandler.compact``), or record a finished
        decision (``state="did not initiate"`` / ``"refused"`` with ``error``).

        A request for a (table, partition) that already has an ``initiated`` or ``working``
        entry is not queued twice: that entry is returned instead (Hive answers
        ``accepted=false`` with the existing id).

        Args:
            table_name: ``db.table``; partition: full spec or ``None``.
            compaction_type: a :class:`CompactionType` (or its word): ``"major"`` or
                ``"minor"``.
            requester: ``"initiator"`` or a user name (manual ALTER TABLE COMPACT).
            state: a :class:`CompactionState` (or its word): ``"initiated"`` (default),
                ``"did not initiate"`` or ``"refused"``.
            properties: request overrides (JSON-able).
        Returns:
            The new (or existing) :class:`CompactionInfo`.
        Raises:
            ValueError: unknown type/state, bad partition spec; NoSuchTableError.
        """

    def metastore_compaction_requests(
        self, *, adopt: bool = True
    ) -> list[MetastoreCompactionRequest]:
        """Compaction requests queued in a Hive metastore's own queue that acidflow has not
        taken yet (Hive ``show_compact`` entries in state ``initiated``), each either queued
        here (``adopt``: a linked ``initiated`` entry the worker runs) or reported as waiting
        with the reason. The initiator calls it first on every pass.

        The SQL catalog has no foreign queue: ``[]``. The ``thrift://`` catalog: see
        docs/hms-catalog.md ("Compaction"); without ``metastore_db`` every such request is
        reported as waiting.

        Args:
            adopt: queue them (False: only report, e.g. a dry run).
        Returns:
            One :class:`MetastoreCompactionRequest` per such request, oldest first.
        """
        return []

    @abc.abstractmethod
    def get_compaction(self, cq_id: int) -> CompactionInfo:
        """One queue entry.

        Raises:
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def list_compactions(
        self,
        table_name: str | None = None,
        states: Iterable[str] | None = None,
        partition: str | None = None,
        *,
        any_partition: bool = True,
    ) -> list[CompactionInfo]:
        """Queue and history in id order (Hive ``SHOW COMPACTIONS``).

        Args:
            table_name: only this table; states: only these states.
            partition, any_partition: with ``any_partition=False`` only entries of exactly
                ``partition`` (``None`` = the whole-table entries).
        Raises:
            ValueError: unknown state.
        """

    @abc.abstractmethod
    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        """A worker takes an ``initiated`` entry (Hive ``CompactionTxnHandler.findNextToCompact``
        + the worker opening its transaction): the entry becomes ``working`` with this worker
        id, start time and heartbeat, and a new transaction (the compaction's own, agent info
        ``compactor <worker>``) is opened for it atomically with the claim.

        Entries whose (table, partition) already has a ``working`` entry are skipped.

        Args:
            worker_id: e.g. ``"host-1234-0"``.
            cq_id: claim exactly this entry; default the oldest claimable one.
        Returns:
            The claimed entry, or ``None`` when nothing is claimable (or ``cq_id`` is not
            ``initiated``).
        Raises:
            WarehouseOwnedError: another catalog owns the warehouse
                (:meth:`check_warehouse_owner`).
        """

    @abc.abstractmethod
    def heartbeat_compaction(self, cq_id: int) -> None:
        """The worker is alive: refresh the entry's heartbeat and its transaction's.

        Raises:
            CompactionStateError: the entry is no longer ``working`` (reclaimed after a
                timeout, or failed): the worker must stop.
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def update_compaction(
        self,
        cq_id: int,
        *,
        highest_write_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record the compactor's high watermark and/or merge ``details`` into the report of
        an active entry.

        Raises:
            CompactionStateError: the entry is finished.
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def mark_compaction_ready_for_cleaning(
        self, cq_id: int, highest_write_id: int, details: dict[str, Any] | None = None
    ) -> int:
        """The worker published its result (Hive ``markCompacted`` + commit of the compactor
        transaction): commit the compaction's transaction (taking a commit id from the global
        sequence) and set the entry ``ready for cleaning`` with the highest write id covered.

        Returns:
            The commit id: readers whose snapshot is at or below it may still use the old
            directories, so the cleaner waits for them.
        Raises:
            CompactionStateError: the entry is not ``working`` (e.g. it was reclaimed).
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def mark_compaction_succeeded(self, cq_id: int, details: dict[str, Any] | None = None) -> None:
        """The cleaner removed everything the compaction made obsolete (Hive ``markCleaned``):
        ``ready for cleaning`` -> ``succeeded`` with the end time.

        Raises:
            CompactionStateError: the entry is not ``ready for cleaning``.
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def mark_compaction_failed(
        self, cq_id: int, error: str, details: dict[str, Any] | None = None
    ) -> None:
        """The compaction failed (Hive ``markFailed``): the entry becomes ``failed`` with the
        error and end time, its transaction (if still open) is aborted. Already finished
        entries are left alone (idempotent for ``failed``).

        Raises:
            CompactionStateError: the entry already ``succeeded``.
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def reclaim_dead_compactions(
        self, timeout_s: float | None = None, now: datetime | None = None
    ) -> list[int]:
        """Put ``working`` entries whose worker stopped heartbeating back into the queue (Hive
        ``revokeTimedoutWorkers``): state ``initiated``, worker and start cleared, the dead
        worker's transaction aborted. A later worker re-runs them (the worker's temp directory
        is per entry, so the rerun finishes or discards what the dead one left).

        Args:
            timeout_s: heartbeat age that counts as dead; default ``txn_timeout_s``.
            now: reference time (UTC), default now.
        Returns:
            The reclaimed entry ids.
        """

    @abc.abstractmethod
    def compaction_history(self, table_name: str, partition: str | None) -> list[CompactionInfo]:
        """Finished entries of one (table, partition), newest first (Hive
        ``COMPLETED_COMPACTIONS`` as ``checkFailedCompactions`` reads it)."""

    @abc.abstractmethod
    def purge_compaction_history(self, retention: dict[str, int] | None = None) -> list[int]:
        """Apply history retention (Hive ``purgeCompactionHistory``): per (table, partition)
        keep the newest ``succeeded`` (3), ``failed`` (3, ``refused`` counted with them) and
        ``did not initiate`` (2) entries; delete older finished entries.

        Args:
            retention: overrides of :data:`DEFAULT_RETENTION` (state -> count).
        Returns:
            Ids deleted, ascending.
        """

    @abc.abstractmethod
    def purge_completed_components(self) -> int:
        """Delete the completed components (Hive ``COMPLETED_TXN_COMPONENTS``) the initiator no
        longer needs: per (table, partition) only the one with the highest write id is kept,
        which is all :meth:`compaction_candidates` reads (Hive deletes them when a compaction is
        cleaned). The cleaner runs it.

        Returns:
            The number of rows deleted.
        """

    @abc.abstractmethod
    def compaction_candidates(self) -> list[tuple[str, str | None, int]]:
        """(table, partition, highest write id written) of every partition written by a
        committed transaction after the last compaction that covered it (Hive
        ``findPotentialCompactions`` over ``COMPLETED_TXN_COMPONENTS``), plus partitions with
        aborted writes not yet covered. Sorted by table, partition.

        Metastore backend: also what other engines (Hive, Trino) wrote since - the metastore
        does not tell which partitions a foreign write touched, so every partition of such a
        table not yet compacted up to its high watermark is offered, and the initiator's
        thresholds (on the directory listing) decide."""

    @abc.abstractmethod
    def aborted_write_ids(
        self, table_name: str, partition: str | None = None, *, any_partition: bool = False
    ) -> list[int]:
        """Write ids of aborted transactions that wrote (registered a component in) the
        partition (Hive: aborted ``TXN_COMPONENTS``), ascending; with ``any_partition`` every
        aborted write id of the table, written or not.

        Raises:
            NoSuchTableError: metastore backend with ``any_partition``: unknown table (the SQL
                backend answers ``[]`` for a table it does not know).
        """

    @abc.abstractmethod
    def forget_aborted_components(self, table_name: str, up_to_write_id: int) -> int:
        """After the cleaner removed a table's aborted directories: delete the
        ``txn_components`` rows of aborted transactions with write id <= ``up_to_write_id``
        (Hive ``markCleaned`` removes cleaned aborted ``TXN_COMPONENTS``). The write ids stay
        aborted in every ValidWriteIdList. Returns the rows deleted."""
