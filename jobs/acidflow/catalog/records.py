"""What a transaction catalog reports, backend-neutral: transactions, locks, commit records,
batches, compaction queue entries and reader registrations, plus the words they use.

Every backend (:mod:`acidflow.catalog.sql`, a Hive Metastore backend later) returns these frozen
dataclasses, so callers never see rows, sessions or thrift structs. Times are aware UTC
``datetime`` objects. State and type vocabularies are words, not Hive's one-letter codes
(``TXNS.TXN_STATE`` 'o'/'c'/'a', ``HIVE_LOCKS.HL_LOCK_TYPE`` 'r'/'w'/'e',
``COMPACTION_QUEUE.CQ_STATE`` 'i'/'w'/'r'/'s'/'f'/'a'); a thrift backend maps them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: Transaction states (Hive ``TxnState`` OPEN / COMMITTED / ABORTED).
TXN_STATES = ("open", "committed", "aborted")
#: Operations a transaction registers per (table, partition) (Hive
#: ``TXN_COMPONENTS.TC_OPERATION_TYPE`` insert / update / delete, plus acidflow's
#: insert_overwrite).
OPERATIONS = ("insert", "update", "delete", "insert_overwrite")
#: Operations recorded in the write set and checked for conflicts at commit. Hive tracks
#: update and delete; acidflow adds insert_overwrite (it replaces the partition's rows).
WRITE_SET_OPERATIONS = frozenset({"update", "delete", "insert_overwrite"})
#: Lock types (Hive ``LockType`` SHARED_READ / SHARED_WRITE / EXCLUSIVE).
LOCK_TYPES = ("shared_read", "shared_write", "exclusive")
#: Lock states (Hive ``LockState`` ACQUIRED / WAITING).
LOCK_STATES = ("acquired", "waiting")
#: Compaction queue states, Hive's SHOW COMPACTIONS words (H4 ``TxnStore``; "did not initiate"
#: is H3.1's "attempted").
COMPACTION_STATES = ("initiated", "working", "ready for cleaning", "succeeded", "failed",
                     "did not initiate", "refused")
#: Compaction types (Hive ``CompactionType`` MAJOR / MINOR).
COMPACTION_TYPES = ("major", "minor")
#: states of an entry that is still in the queue (Hive ``COMPACTION_QUEUE``)
ACTIVE_STATES = ("initiated", "working", "ready for cleaning")
#: finished states (Hive ``COMPLETED_COMPACTIONS``)
FINISHED_STATES = ("succeeded", "failed", "did not initiate", "refused")
#: Hive ``hive.compactor.history.retention.succeeded`` / ``.failed`` / ``.attempted``
DEFAULT_RETENTION = {"succeeded": 3, "failed": 3, "did not initiate": 2}


@dataclass(frozen=True)
class TxnInfo:
    """A transaction as :meth:`Catalog.get_transaction` reports it.

    Attributes:
        txn_id: id from the global sequence.
        state: ``"open"``, ``"committed"`` or ``"aborted"``.
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
        lock_type: ``"shared_read"``, ``"shared_write"`` or ``"exclusive"``.
        state: ``"acquired"`` or ``"waiting"``.
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
        state: that transaction's state: ``"committed"`` (applied), ``"open"`` (being
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
        type: ``"major"`` / ``"minor"``.
        state: one of :data:`COMPACTION_STATES`.
        requester: ``"initiator"`` or the user who asked (Hive ``CQ_INITIATOR_ID`` / run-as).
        worker_id: ``host-pid-...`` of the worker that claimed it, else ``None``.
        enqueued_at, started_at, ended_at, heartbeat: UTC times (``None`` until reached).
        error: failure or refusal message.
        highest_write_id: the compactor's high watermark (write ids the result covers).
        txn_id: the compaction's own transaction; commit_id: its commit id.
        properties: request overrides (Hive ``CQ_TBLPROPERTIES``).
        details: the worker's / cleaner's report (JSON).
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (times as ISO strings)."""
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            out[k] = v.isoformat() if isinstance(v, datetime) else v
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
