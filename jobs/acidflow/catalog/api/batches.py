"""The batch ledger and CDC tombstones (acidflow's idempotence ledger; no Hive counterpart).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``).
The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`.
"""

from __future__ import annotations

import abc
from datetime import timedelta
from typing import Any

from acidflow.catalog.records import (
    BatchInfo,
)


class BatchLedger(abc.ABC):
    """The batch ledger and CDC tombstones (acidflow's idempotence ledger; no Hive counterpart)."""

    @abc.abstractmethod
    def register_batch(
        self,
        txn_id: int,
        batch_id: str,
        kind: str,
        *,
        source: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> BatchInfo:
        """Claim ``batch_id`` for the open transaction ``txn_id``. ``source`` names the stream
        the batch belongs to (an ingest input path, a CDC landing directory, a Kafka source, a
        data source application); its newest committed record outlives the batch retention
        (:meth:`purge_batches`). The claim becomes an
        "applied" record atomically with the transaction's commit; if the transaction aborts,
        the next attempt re-claims the batch and applies it again.

        Timed-out transactions are aborted first (the housekeeper's rule), so a crashed run
        does not block its batch for longer than the transaction timeout.

        Raises:
            BatchAlreadyAppliedError: a committed transaction applied this batch.
            BatchInProgressError: another open transaction holds it.
            NoSuchTransactionError, TxnAbortedError, TxnNotOpenError: ``txn_id`` is not open.
            ValueError: empty or over-long batch id.
        """

    @abc.abstractmethod
    def get_batch(self, batch_id: str) -> BatchInfo | None:
        """The record of ``batch_id`` with its transaction's state, or ``None``."""

    @abc.abstractmethod
    def list_batches(self, kind: str | None = None) -> list[BatchInfo]:
        """Batch records in registration order, optionally of one ``kind``."""

    @abc.abstractmethod
    def newest_batch(self, kind: str, source: str) -> BatchInfo | None:
        """The newest committed record of ``(kind, source)`` (largest commit id), or ``None``:
        the source's high-water mark (a Kafka source's end offsets, a data source
        application's highest ``txnVersion``), which :meth:`purge_batches` always keeps. One
        indexed lookup (a stream asks every micro-batch)."""

    @abc.abstractmethod
    def add_tombstones(self, txn_id: int, table_name: str, entries: list[tuple[str, str]]) -> None:
        """Record CDC deletes of the open transaction: ``[(key as canonical JSON, ordering
        value of the delete)]``. They count once the transaction commits.

        Raises:
            NoSuchTransactionError, TxnAbortedError, TxnNotOpenError: ``txn_id`` is not open.
        """

    @abc.abstractmethod
    def tombstones(self, table_name: str, key_jsons: list[str]) -> dict[str, str]:
        """Largest committed delete position per key among ``key_jsons`` (keys never deleted
        by CDC are absent)."""

    @abc.abstractmethod
    def purge_tombstones(self) -> int:
        """Delete CDC tombstones that can no longer change :meth:`tombstones`' answer: those of
        aborted transactions (they never counted) and, per key, committed ones below the key's
        largest committed position (the largest wins). Kept: per deleted key its largest
        committed position (the late-event rule needs it as long as a late event for the key can
        arrive) and the entries of open transactions. The cleaner runs it.

        Returns:
            The number of tombstones deleted.
        """

    @abc.abstractmethod
    def purge_batches(self, retain: timedelta | None = None) -> int:
        """Delete the batch records that no longer decide anything: those whose transaction
        aborted (such a record means "not applied", as no record does: the next attempt claims
        the batch again) and, with ``retain``, the committed ones that committed more than
        ``retain`` ago and are not the newest committed record of their (kind, source).

        Kept: every record of an open transaction (its claim); every committed record younger
        than ``retain`` (a rerun of that batch -- an Airflow retry or clear, the same CDC file
        landing again, a replayed micro-batch -- is skipped by it: exactly once within the
        window, Delta Lake's ``delta.setTransactionRetentionDuration`` idea); per (kind, source)
        the newest committed record whatever its age: the source's high-water mark (a Kafka
        source's end offsets, a data source application's highest ``txnVersion``). ``retain``
        None keeps every committed record. The cleaner runs it with
        :func:`acidflow.storage.retention.batch_retention`.

        Returns:
            The number of records deleted.
        """
