"""What a transaction catalog reports, backend-neutral: transactions, locks, commit records,
batches, compaction queue entries and reader registrations, plus the words they use.

Every backend (:mod:`acidflow.catalog.sql`, a Hive Metastore backend later) returns these frozen
dataclasses, so callers never see rows, sessions or thrift structs. Times are aware UTC
``datetime`` objects. State and type vocabularies are words, not Hive's one-letter codes
(``TXNS.TXN_STATE`` 'o'/'c'/'a', ``HIVE_LOCKS.HL_LOCK_TYPE`` 'r'/'w'/'e',
``COMPACTION_QUEUE.CQ_STATE`` 'i'/'w'/'r'/'s'/'f'/'a'); a thrift backend maps them.

The vocabularies are :class:`enum.StrEnum` classes, whose members compare equal to (and are
stored as) the same words: :class:`TxnState`, :class:`LockType` and :class:`CompactionType`
(defined in :mod:`acidflow.states`, since the engine and maintenance use them too, and
re-exported here), :class:`LockState` and :class:`CompactionState`. The records' ``state`` /
``type`` fields hold the words as read from the database (plain ``str``, equal to a member).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acidflow.states import CompactionType, LockType, TxnState

__all__ = [
    "ACTIVE_STATES",
    "COMPACTION_STATES",
    "COMPACTION_TYPES",
    "DEFAULT_RETENTION",
    "FINISHED_STATES",
    "LOCK_STATES",
    "LOCK_TYPES",
    "OPERATIONS",
    "TXN_STATES",
    "WRITE_SET_OPERATIONS",
    "BatchInfo",
    "CommitRecord",
    "CompactionInfo",
    "CompactionState",
    "CompactionType",
    "LockInfo",
    "LockState",
    "LockType",
    "MetastoreCompactionRequest",
    "ReaderInfo",
    "TxnInfo",
    "TxnState",
]


class LockState(enum.StrEnum):
    """State of a lock request (Hive ``LockState`` ACQUIRED / WAITING)."""

    ACQUIRED = "acquired"
    WAITING = "waiting"


class CompactionState(enum.StrEnum):
    """State of a compaction queue entry, Hive's SHOW COMPACTIONS words (H4 ``TxnStore``;
    ``DID_NOT_INITIATE`` is H3.1's "attempted").

    An entry is enqueued ``INITIATED``, claimed by a worker (``WORKING``), then either
    ``READY_FOR_CLEANING`` (published; the cleaner still has to delete the obsolete
    directories), then ``SUCCEEDED``; ``FAILED`` from any running state. ``DID_NOT_INITIATE``
    (the initiator refused to queue after too many failures) and ``REFUSED`` (a worker found
    nothing it may do) are recorded directly.
    """

    INITIATED = "initiated"
    WORKING = "working"
    READY_FOR_CLEANING = "ready for cleaning"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DID_NOT_INITIATE = "did not initiate"
    REFUSED = "refused"

    @property
    def active(self) -> bool:
        """Whether an entry in this state is still in the queue (Hive ``COMPACTION_QUEUE``)."""
        return self in _ACTIVE

    @property
    def finished(self) -> bool:
        """Whether an entry in this state is done (Hive ``COMPLETED_COMPACTIONS``)."""
        return not self.active


_ACTIVE = frozenset(
    {CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING}
)

# The tuples below are plain strings (the enums' values, in declaration order): they build the
# SQL CHECK constraints (``acidflow.catalog.sql.schema``), which must not change.

#: Transaction states (:class:`TxnState`; Hive ``TxnState`` OPEN / COMMITTED / ABORTED).
TXN_STATES: tuple[str, ...] = tuple(s.value for s in TxnState)
#: Operations a transaction registers per (table, partition) (Hive
#: ``TXN_COMPONENTS.TC_OPERATION_TYPE`` insert / update / delete, plus acidflow's
#: insert_overwrite).
OPERATIONS = ("insert", "update", "delete", "insert_overwrite")
#: Operations recorded in the write set and checked for conflicts at commit. Hive tracks
#: update and delete; acidflow adds insert_overwrite (it replaces the partition's rows).
WRITE_SET_OPERATIONS = frozenset({"update", "delete", "insert_overwrite"})
#: Lock types (:class:`LockType`; Hive ``LockType`` SHARED_READ / SHARED_WRITE / EXCLUSIVE).
LOCK_TYPES: tuple[str, ...] = tuple(t.value for t in LockType)
#: Lock states (:class:`LockState`; Hive ``LockState`` ACQUIRED / WAITING).
LOCK_STATES: tuple[str, ...] = tuple(s.value for s in LockState)
#: Compaction queue states (:class:`CompactionState`), Hive's SHOW COMPACTIONS words.
COMPACTION_STATES: tuple[str, ...] = tuple(s.value for s in CompactionState)
#: Compaction types (:class:`CompactionType`; Hive ``CompactionType`` MAJOR / MINOR).
COMPACTION_TYPES: tuple[str, ...] = tuple(t.value for t in CompactionType)
#: states of an entry that is still in the queue (Hive ``COMPACTION_QUEUE``)
ACTIVE_STATES: tuple[str, ...] = tuple(s.value for s in CompactionState if s.active)
#: finished states (Hive ``COMPLETED_COMPACTIONS``)
FINISHED_STATES: tuple[str, ...] = tuple(s.value for s in CompactionState if s.finished)
#: Hive ``hive.compactor.history.retention.succeeded`` / ``.failed`` / ``.attempted``
DEFAULT_RETENTION = {
    CompactionState.SUCCEEDED.value: 3,
    CompactionState.FAILED.value: 3,
    CompactionState.DID_NOT_INITIATE.value: 2,
}


@dataclass(frozen=True)
class TxnInfo:
    """A transaction as :meth:`Catalog.get_transaction` reports it.

    Attributes:
        txn_id: id from the global sequence.
        state: a :class:`TxnState` word: ``"open"``, ``"committed"`` or ``"aborted"``.
        user, host, agent_info: who opened it.
        started_at, last_heartbeat: UTC times.
        committed_at / aborted_at: UTC time of the end, ``None`` while open.
        abort_reason: ``"timed out"``, the write-conflict text, or the caller's reason.
        write_ids: ``{"db.table": write_id}`` allocated to this transaction.
        commit_id: id from the same sequence taken at commit (orders commits), else ``None``.
        heartbeat_count: heartbeats received.
    """

    txn_id: int
    state: str
    user: str | None
    host: str | None
    agent_info: str | None
    started_at: datetime
    last_heartbeat: datetime
    committed_at: datetime | None = None
    aborted_at: datetime | None = None
    abort_reason: str | None = None
    write_ids: dict[str, int] = field(default_factory=dict)
    commit_id: int | None = None
    heartbeat_count: int = 0


@dataclass(frozen=True)
class LockInfo:
    """One lock request (a ``hive_locks`` row).

    Attributes:
        lock_id, txn_id: ids; lower lock ids were requested earlier.
        table: ``db.table``; partition: spec or ``None`` (whole table).
        lock_type: a :class:`LockType` word: ``"shared_read"``, ``"shared_write"`` or
            ``"exclusive"``.
        state: a :class:`LockState` word: ``"acquired"`` or ``"waiting"``.
        requested_at, acquired_at, last_heartbeat: UTC times.
    """

    lock_id: int
    txn_id: int
    table: str
    partition: str | None
    lock_type: str
    state: str
    requested_at: datetime
    acquired_at: datetime | None
    last_heartbeat: datetime
    user: str | None = None
    host: str | None = None
    agent_info: str | None = None


@dataclass(frozen=True)
class CommitRecord:
    """What one committed transaction did to one table.

    Attributes:
        table: ``db.table``; write_id: the table write id the transaction used.
        txn_id, commit_id: the transaction and its commit id.
        committed_at: UTC commit time.
        operations: distinct operations registered with :meth:`Catalog.add_component`, in the
            order insert, update, delete, insert_overwrite.
        stats: the caller's statistics for this table (``rows_inserted``, ``rows_updated``,
            ``rows_deleted``, ``partitions: {spec: {files, bytes, rows, ...}}``, ...); ``{}``
            if none were given.
    """

    table: str
    write_id: int
    txn_id: int
    commit_id: int
    committed_at: datetime
    operations: list[str]
    stats: dict[str, Any]


@dataclass(frozen=True)
class BatchInfo:
    """The idempotence record of one batch.

    Attributes:
        batch_id: digest of the batch's source (files and checksums, or an LSN range).
        kind: ``"cdc"`` or ``"ingest"`` (free text).
        txn_id: the transaction that applies or applied it.
        state: that transaction's :class:`TxnState`: ``"committed"`` (applied), ``"open"`` (being
            applied) or ``"aborted"`` (not applied; the next attempt replaces the record).
        registered_at: UTC time of the registration.
        source: human-readable description (paths, LSN range).
        details: caller's JSON (files, checksums, tables, data interval...).
        committed_at: commit time of the transaction, or ``None``.
    """

    batch_id: str
    kind: str
    txn_id: int
    state: str
    registered_at: datetime
    source: str | None
    details: dict[str, Any]
    committed_at: datetime | None = None


@dataclass(frozen=True)
class CompactionInfo:
    """One compaction queue entry, as SHOW COMPACTIONS reports it.

    Attributes:
        id: queue id (``cq_id``); lower ids were enqueued earlier.
        table: ``db.table``; partition: spec (``"ds=2024-01-01"``) or ``None``.
        type: a :class:`CompactionType` word: ``"major"`` / ``"minor"``.
        state: a :class:`CompactionState` word (one of :data:`COMPACTION_STATES`).
        requester: ``"initiator"`` or the user who asked (Hive ``CQ_INITIATOR_ID`` / run-as).
        worker_id: ``host-pid-...`` of the worker that claimed it, else ``None``.
        enqueued_at, started_at, ended_at, heartbeat: UTC times (``None`` until reached).
        error: failure or refusal message.
        highest_write_id: the compactor's high watermark (write ids the result covers).
        txn_id: the compaction's own transaction; commit_id: its commit id.
        properties: request overrides (Hive ``CQ_TBLPROPERTIES``).
        details: the worker's / cleaner's report (JSON).
        metastore_cq_id: the ``CQ_ID`` of the same entry in the Hive metastore's compaction
            queue (``thrift://`` catalog with ``metastore_db``; docs/hms-catalog.md), else
            ``None``.
    """

    id: int
    table: str
    partition: str | None
    type: str
    state: str
    requester: str
    worker_id: str | None
    enqueued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    heartbeat: datetime | None
    error: str | None
    highest_write_id: int | None
    txn_id: int | None
    commit_id: int | None
    properties: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    metastore_cq_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (times as ISO strings)."""
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            out[k] = v.isoformat() if isinstance(v, datetime) else v
        return out


@dataclass(frozen=True)
class SavepointInfo:
    """One savepoint (``Catalog.list_savepoints``).

    Attributes:
        table: ``db.table``; name: the savepoint's name (unique per table).
        write_id: the state it pins is ``as_of_write_id=write_id``.
        valid_write_ids: that state's ValidWriteIdList (string form).
        created_at: UTC time; created_by: who made it (user@host or free text).
    """

    table: str
    name: str
    write_id: int
    valid_write_ids: str
    created_at: datetime
    created_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (``created_at`` as an ISO string)."""
        out: dict[str, Any] = dict(self.__dict__)
        out["created_at"] = self.created_at.isoformat()
        return out


@dataclass(frozen=True)
class ReaderInfo:
    """One registered snapshot reader.

    Attributes:
        reader_id: id; table: ``db.table``.
        snapshot_seq: the transaction sequence value when the snapshot was taken (compare with
            a compaction's ``commit_id``: ``snapshot_seq <= commit_id`` = snapshot predates it).
        high_watermark, valid_write_ids: the reader's ValidWriteIdList (HWM and string form).
        started_at, last_heartbeat: UTC times.
    """

    reader_id: int
    table: str
    snapshot_seq: int
    high_watermark: int | None
    valid_write_ids: str | None
    started_at: datetime
    last_heartbeat: datetime
    user: str | None = None
    host: str | None = None
    agent_info: str | None = None


@dataclass(frozen=True)
class MetastoreCompactionRequest:
    """A compaction request a Hive user queued in the metastore (``ALTER TABLE ... COMPACT``,
    thrift ``compact2``), as the ``thrift://`` catalog reports it to the initiator
    (docs/hms-catalog.md, "Compaction").

    Attributes:
        metastore_cq_id: Hive's ``CQ_ID``.
        table: ``db.table``; partition: spec or ``None``; type: ``"major"`` / ``"minor"``.
        requester: the user Hive runs it as (``CQ_RUN_AS``), else ``"hive"``.
        queued_id: the side entry acidflow's worker runs it as, ``None`` while it waits.
        reason: what happened to it, or why it waits (e.g. no ``metastore_db`` configured).
    """

    metastore_cq_id: int
    table: str
    partition: str | None
    type: str
    requester: str
    queued_id: int | None
    reason: str
