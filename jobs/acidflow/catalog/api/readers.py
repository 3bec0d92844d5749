"""Reader registrations: what the cleaner waits for before it deletes obsolete files.

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``).
The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`.
"""

from __future__ import annotations

import abc
from datetime import datetime

from acidflow.catalog.records import (
    ReaderInfo,
)
from acidflow.format.layout import ValidWriteIdList


class ReaderRegistry(abc.ABC):
    """Reader registrations: what the cleaner waits for before it deletes obsolete files."""

    @abc.abstractmethod
    def register_reader(
        self,
        table_name: str,
        valid_write_ids: ValidWriteIdList | None = None,
        *,
        agent_info: str | None = None,
    ) -> ReaderInfo:
        """Register a snapshot reader of a table so the cleaner waits for it.

        The registration records the current value of the transaction sequence
        (``snapshot_seq``): a compaction committed with a commit id at or above it is newer
        than this reader's snapshot. Take the ValidWriteIdList *after* registering (or pass
        it here to have it recorded).

        Args:
            valid_write_ids: the reader's ``ValidWriteIdList`` (recorded for display).
            agent_info: free text; default ``"reader pid <pid>"``.
        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def set_reader_snapshot(self, reader_id: int, valid_write_ids: ValidWriteIdList) -> None:
        """Record the ValidWriteIdList a registered reader uses (display only)."""

    @abc.abstractmethod
    def heartbeat_reader(self, reader_id: int) -> bool:
        """Refresh a reader's heartbeat. Returns False when the registration is gone (it
        expired and was purged: the reader's files may have been cleaned)."""

    @abc.abstractmethod
    def unregister_reader(self, reader_id: int) -> None:
        """Remove a reader registration (missing is fine)."""

    @abc.abstractmethod
    def list_readers(self, table_name: str | None = None) -> list[ReaderInfo]:
        """Registered readers in id order, optionally of one table (expired ones included)."""

    @abc.abstractmethod
    def purge_expired_readers(
        self, timeout_s: float | None = None, now: datetime | None = None
    ) -> list[int]:
        """Delete registrations whose heartbeat is older than ``timeout_s`` (default
        ``txn_timeout_s``, Hive ``hive.txn.timeout``); returns their ids."""

    @abc.abstractmethod
    def blocking_readers(
        self,
        table_name: str,
        commit_id: int,
        *,
        timeout_s: float | None = None,
        now: datetime | None = None,
    ) -> dict[str, list[int]]:
        """Who may still read directories that a compaction committed at ``commit_id`` made
        obsolete: live readers of the table registered at or before it (``snapshot_seq <=
        commit_id``, heartbeat younger than ``timeout_s``) and open transactions that started
        before it (``txn_id < commit_id``; a writer reads the table too). Hive H4's cleaner uses
        the same "min open txn" rule.

        Returns:
            ``{"readers": [reader ids], "txns": [txn ids]}`` (empty lists = safe to clean).
        """
