"""Locks (Hive ``lock`` / ``check_lock`` / ``unlock`` / ``show_locks``).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``).
The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`.
"""

from __future__ import annotations

import abc

from acidflow.catalog.records import (
    LockInfo,
)


class LockCatalog(abc.ABC):
    """Locks (Hive ``lock`` / ``check_lock`` / ``unlock`` / ``show_locks``)."""

    @abc.abstractmethod
    def acquire_lock(
        self,
        txn_id: int,
        table_name: str,
        partition: str | None,
        lock_type: str,
        timeout_s: float = 60.0,
    ) -> int:
        """Lock a table or one partition for the transaction, waiting if needed (Hive
        ``TxnHandler.lock``/``checkLock`` as used by ``DbLockManager``).

        Compatibility (Hive's lock matrix since HIVE-13395): ``exclusive`` conflicts with
        every lock; ``shared_read`` and ``shared_write`` are compatible with each other and
        with themselves (concurrent writers are caught by the commit-time write set). A
        table-level lock (``partition=None``) overlaps every partition lock of the table.
        Locks of the same transaction never conflict. Requests are served in lock id order:
        a request also waits behind an earlier *waiting* conflicting request (no starvation
        of exclusive requests). While waiting it polls with short sleeps and heartbeats the
        transaction. The lock is released by commit, abort or :meth:`release_locks`.

        Args:
            partition: full partition spec or ``None`` (whole table).
            lock_type: a :class:`LockType` (or its word): ``"shared_read"``,
                ``"shared_write"`` or ``"exclusive"``.
            timeout_s: seconds to wait before giving up.
        Returns:
            The lock id (state ``"acquired"``); an identical lock the transaction already
            holds is returned instead of a new one.
        Raises:
            LockTimeoutError: not granted within ``timeout_s``; the request was removed.
            ValueError: unknown lock type, bad partition spec.
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def release_locks(self, txn_id: int) -> None:
        """Release every lock (acquired or waiting) of the transaction without ending it.

        Raises:
            NoSuchTransactionError: unknown id.
        """

    @abc.abstractmethod
    def list_locks(self, table_name: str | None = None) -> list[LockInfo]:
        """Current lock requests in lock id order, optionally of one table (Hive
        ``SHOW LOCKS``)."""
