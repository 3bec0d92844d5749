"""The state and type words a transaction, a lock and a compaction share between packages.

These are the vocabularies the engine (``acidflow.engine``: a transaction takes locks and ends
committed or aborted) and maintenance (``acidflow.maintenance``: a compaction is major or minor)
use as well as the catalog (``acidflow.catalog``), which stores them; this module imports nothing
of acidflow, so every package may import it. The catalog-only vocabularies (lock states,
compaction queue states) are in :mod:`acidflow.catalog.records`, which re-exports these.

Each is an :class:`enum.StrEnum`: a member *is* its string (``TxnState.OPEN == "open"``,
``str(TxnState.OPEN) == "open"``, it binds to SQL and serialises to JSON as ``"open"``), so the
words stored in a catalog database or sent to a Hive Metastore are exactly the strings they
always were, and callers that compare with the bare strings keep working. They are Hive's enums
spelled as words, not Hive's one-letter codes (``TXNS.TXN_STATE`` 'o'/'c'/'a',
``HIVE_LOCKS.HL_LOCK_TYPE`` 'r'/'w'/'e', ``COMPACTION_QUEUE.CQ_TYPE`` 'a'/'i').
"""

from __future__ import annotations

import enum

__all__ = ["CompactionType", "LockType", "TxnState"]


class TxnState(enum.StrEnum):
    """State of a catalog transaction (Hive ``TxnState`` OPEN / COMMITTED / ABORTED)."""

    OPEN = "open"
    COMMITTED = "committed"
    ABORTED = "aborted"


class LockType(enum.StrEnum):
    """Type of a table or partition lock (Hive ``LockType`` SHARED_READ / SHARED_WRITE /
    EXCLUSIVE). A writer takes ``SHARED_WRITE`` (insert, update, delete, merge: writers of one
    table run concurrently, the write set settles conflicts at commit); ``EXCLUSIVE`` is for an
    insert overwrite, a schema change or a restore and waits for every other lock."""

    SHARED_READ = "shared_read"
    SHARED_WRITE = "shared_write"
    EXCLUSIVE = "exclusive"


class CompactionType(enum.StrEnum):
    """Type of a compaction (Hive ``CompactionType`` MAJOR / MINOR): major rewrites base and
    deltas into a new ``base_N``, minor merges the deltas into one ``delta_M_N`` (and
    ``delete_delta_M_N``)."""

    MAJOR = "major"
    MINOR = "minor"
