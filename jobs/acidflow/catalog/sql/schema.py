"""SQLAlchemy 2 declarative schema of the SQL transaction catalog (``SqlCatalog``).

The tables play the role of the Hive metastore's table metadata (``TBLS``, ``COLUMNS_V2``,
``PARTITION_KEYS``, ``BUCKETING_COLS``, ``TABLE_PARAMS``) and of its transaction tables
(``NEXT_TXN_ID``, ``TXNS``, ``TXN_COMPONENTS``, ``COMPLETED_TXN_COMPONENTS``, ``NEXT_WRITE_ID``,
``TXN_TO_WRITE_ID``, ``WRITE_SET``, ``NEXT_LOCK_ID``, ``HIVE_LOCKS``), with Hive's names in
lower case. ``commit_records`` is ours: one row per (committed txn, table written) with the
write statistics. Tables are referred to by ``db_name`` + ``tbl_name`` (as in Hive's TXN tables),
partitions by their spec ``part_name`` (``"ds=2024-01-01/region=eu"``; ``NULL`` = whole table).

This module describes the schema at the newest migration; the migrations under
``migrations/versions`` create it (they never import this module). A test compares the two.
All timestamps are UTC, stored without time zone (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Column value vocabularies (stored as words, not Hive's one-letter codes), shared with the
# backend-neutral records.
from acidflow.catalog.records import (
    COMPACTION_STATES,
    COMPACTION_TYPES,
    LOCK_STATES,
    LOCK_TYPES,
    OPERATIONS,
    TXN_STATES,
)

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: Name of Alembic's version table (not ``alembic_version``, so the catalog can share a
#: PostgreSQL database with Airflow's metadata, which has its own ``alembic_version``).
VERSION_TABLE = "acidflow_alembic_version"

#: 64-bit ids that autoincrement on both backends (SQLite only autoincrements INTEGER PRIMARY KEY).
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class UTCDateTime(sa.TypeDecorator):
    """A ``DateTime`` that stores naive UTC and returns aware UTC ``datetime`` objects.

    Naive values given to the database are taken to be UTC already.
    """

    impl = sa.DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # defensive: SQLite returns str for unknown column types
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=timezone.utc)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    """Declarative base; its ``metadata`` is Alembic's ``target_metadata``."""

    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


# --------------------------------------------------------------------------------------------
# Table metadata (Hive TBLS & friends, simplified: no SDS/CDS indirection, no databases table)
# --------------------------------------------------------------------------------------------


class Tbl(Base):
    """One ACID table (Hive ``TBLS`` + the storage descriptor fields we need)."""

    __tablename__ = "tbls"
    __table_args__ = (sa.UniqueConstraint("db_name", "tbl_name"),)

    tbl_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    location: Mapped[str] = mapped_column(sa.Text)
    num_buckets: Mapped[int] = mapped_column(sa.Integer, default=0)
    bucketing_version: Mapped[int] = mapped_column(sa.Integer, default=2)
    ordering_column: Mapped[str | None] = mapped_column(sa.String(256))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ColumnV2(Base):
    """Data columns in order (Hive ``COLUMNS_V2``)."""

    __tablename__ = "columns_v2"
    __table_args__ = (sa.UniqueConstraint("tbl_id", "column_name"),)

    tbl_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("tbls.tbl_id", ondelete="CASCADE"), primary_key=True
    )
    integer_idx: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    column_name: Mapped[str] = mapped_column(sa.String(256))
    type_name: Mapped[str] = mapped_column(sa.Text)
    comment: Mapped[str | None] = mapped_column(sa.Text)  # revision 0007


class PartitionKey(Base):
    """Partition columns in order (Hive ``PARTITION_KEYS``)."""

    __tablename__ = "partition_keys"
    __table_args__ = (sa.UniqueConstraint("tbl_id", "pkey_name"),)

    tbl_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("tbls.tbl_id", ondelete="CASCADE"), primary_key=True
    )
    integer_idx: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    pkey_name: Mapped[str] = mapped_column(sa.String(256))
    pkey_type: Mapped[str] = mapped_column(sa.Text)


class BucketingCol(Base):
    """CLUSTERED BY columns in order (Hive ``BUCKETING_COLS``)."""

    __tablename__ = "bucketing_cols"

    tbl_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("tbls.tbl_id", ondelete="CASCADE"), primary_key=True
    )
    integer_idx: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    bucket_col_name: Mapped[str] = mapped_column(sa.String(256))


class PrimaryKeyCol(Base):
    """Primary-key (upsert key) columns in order (the role of Hive's ``KEY_CONSTRAINTS``)."""

    __tablename__ = "primary_key_cols"

    tbl_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("tbls.tbl_id", ondelete="CASCADE"), primary_key=True
    )
    integer_idx: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    column_name: Mapped[str] = mapped_column(sa.String(256))


class TableParam(Base):
    """Table properties (Hive ``TABLE_PARAMS``): transactional, bucketing_version, ..."""

    __tablename__ = "table_params"

    tbl_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("tbls.tbl_id", ondelete="CASCADE"), primary_key=True
    )
    param_key: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    param_value: Mapped[str] = mapped_column(sa.Text)


# --------------------------------------------------------------------------------------------
# Transactions (Hive TxnHandler's tables)
# --------------------------------------------------------------------------------------------


class NextTxnId(Base):
    """Single row: the next transaction id (Hive ``NEXT_TXN_ID.NTXN_NEXT``).

    Commit ids are drawn from the same sequence, so a commit id is comparable with txn ids.
    Locked ``FOR UPDATE`` by open and commit, which serialises them.
    """

    __tablename__ = "next_txn_id"
    __table_args__ = (sa.CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    ntxn_next: Mapped[int] = mapped_column(sa.BigInteger)


class Txn(Base):
    """One transaction (Hive ``TXNS``; unlike Hive, committed rows are kept)."""

    __tablename__ = "txns"
    __table_args__ = (
        sa.CheckConstraint(_in("txn_state", TXN_STATES), name="txn_state"),
        sa.Index(None, "txn_state", "txn_last_heartbeat"),
    )

    txn_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    txn_state: Mapped[str] = mapped_column(sa.String(16))
    txn_started: Mapped[datetime] = mapped_column(UTCDateTime)
    txn_last_heartbeat: Mapped[datetime] = mapped_column(UTCDateTime)
    txn_heartbeat_count: Mapped[int] = mapped_column(sa.Integer, default=0)
    txn_user: Mapped[str | None] = mapped_column(sa.String(256))
    txn_host: Mapped[str | None] = mapped_column(sa.String(256))
    txn_agent_info: Mapped[str | None] = mapped_column(sa.Text)
    txn_commit_id: Mapped[int | None] = mapped_column(sa.BigInteger, unique=True)
    txn_committed: Mapped[datetime | None] = mapped_column(UTCDateTime)
    txn_aborted: Mapped[datetime | None] = mapped_column(UTCDateTime)
    txn_abort_reason: Mapped[str | None] = mapped_column(sa.Text)


class TxnComponent(Base):
    """Partitions an open or aborted transaction writes (Hive ``TXN_COMPONENTS``).

    Moved to ``completed_txn_components`` at commit; kept for aborted transactions (the
    cleaner later needs to know where their data lies).
    """

    __tablename__ = "txn_components"
    __table_args__ = (
        sa.CheckConstraint(_in("operation", OPERATIONS), name="operation"),
        sa.Index(None, "db_name", "tbl_name", "part_name"),
    )

    tc_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger, sa.ForeignKey("txns.txn_id"), index=True)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    part_name: Mapped[str | None] = mapped_column(sa.Text)
    operation: Mapped[str] = mapped_column(sa.String(16))
    write_id: Mapped[int] = mapped_column(sa.BigInteger)


class CompletedTxnComponent(Base):
    """Partitions written by committed transactions (Hive ``COMPLETED_TXN_COMPONENTS``):
    the compaction initiator's candidate list."""

    __tablename__ = "completed_txn_components"
    __table_args__ = (sa.Index(None, "db_name", "tbl_name", "part_name"),)

    ctc_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger, index=True)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    part_name: Mapped[str | None] = mapped_column(sa.Text)
    write_id: Mapped[int] = mapped_column(sa.BigInteger)
    committed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    update_delete: Mapped[bool] = mapped_column(sa.Boolean)


class NextWriteId(Base):
    """Per-table next write id (Hive ``NEXT_WRITE_ID``); created with the table at 1 and
    locked ``FOR UPDATE`` by write id allocation."""

    __tablename__ = "next_write_id"

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    nwi_next: Mapped[int] = mapped_column(sa.BigInteger)


class TxnToWriteId(Base):
    """Which transaction owns which write id of which table (Hive ``TXN_TO_WRITE_ID``)."""

    __tablename__ = "txn_to_write_id"
    __table_args__ = (sa.UniqueConstraint("txn_id", "db_name", "tbl_name"),)

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    write_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger)


class WriteSet(Base):
    """Update/delete footprint of committed transactions (Hive ``WRITE_SET``), used by the
    commit-time write-conflict check."""

    __tablename__ = "write_set"
    __table_args__ = (
        sa.CheckConstraint(_in("operation", OPERATIONS), name="operation"),
        sa.Index(None, "db_name", "tbl_name", "commit_id"),
    )

    ws_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger)
    commit_id: Mapped[int] = mapped_column(sa.BigInteger)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    part_name: Mapped[str | None] = mapped_column(sa.Text)
    operation: Mapped[str] = mapped_column(sa.String(16))


class WriteSetKey(Base):
    """Key-level write set of keyed tables (acidflow's; Hive's ``WRITE_SET`` is per
    partition): the 64-bit hashes of the primary keys a transaction wrote into one scope
    (partition or NULL = every partition, bucket or -1 = every bucket), packed as a sorted
    little-endian ``uint64`` array (``acidflow.format.keys.pack_hashes``). ``whole`` = the scope
    was recorded without hashes (too many keys): any key write there overlaps. ``commit_id`` is
    NULL until the transaction commits; the commit-time check compares with entries committed
    after the committing transaction opened."""

    __tablename__ = "write_set_keys"
    __table_args__ = (
        sa.Index(None, "db_name", "tbl_name", "commit_id"),
        sa.Index(None, "txn_id"),
    )

    wk_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger)
    commit_id: Mapped[int | None] = mapped_column(sa.BigInteger)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    part_name: Mapped[str | None] = mapped_column(sa.Text)
    bucket: Mapped[int] = mapped_column(sa.Integer)
    whole: Mapped[bool] = mapped_column(sa.Boolean)
    key_count: Mapped[int] = mapped_column(sa.BigInteger)
    key_hashes: Mapped[bytes | None] = mapped_column(sa.LargeBinary)


class NextLockId(Base):
    """Single row: the next lock id (Hive ``NEXT_LOCK_ID.NL_NEXT``); also the mutex that
    serialises lock grant decisions (Hive's ``CheckLock`` mutex)."""

    __tablename__ = "next_lock_id"
    __table_args__ = (sa.CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    nl_next: Mapped[int] = mapped_column(sa.BigInteger)


class HiveLock(Base):
    """Table/partition locks of open transactions (Hive ``HIVE_LOCKS``), one row per request."""

    __tablename__ = "hive_locks"
    __table_args__ = (
        sa.CheckConstraint(_in("lock_type", LOCK_TYPES), name="lock_type"),
        sa.CheckConstraint(_in("lock_state", LOCK_STATES), name="lock_state"),
        sa.Index(None, "db_name", "tbl_name"),
    )

    lock_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger, sa.ForeignKey("txns.txn_id"), index=True)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    part_name: Mapped[str | None] = mapped_column(sa.Text)
    lock_type: Mapped[str] = mapped_column(sa.String(16))
    lock_state: Mapped[str] = mapped_column(sa.String(16))
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime)
    acquired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_heartbeat: Mapped[datetime] = mapped_column(UTCDateTime)
    lock_user: Mapped[str | None] = mapped_column(sa.String(256))
    lock_host: Mapped[str | None] = mapped_column(sa.String(256))
    agent_info: Mapped[str | None] = mapped_column(sa.Text)


class CommitRecordRow(Base):
    """One row per table written by a committed transaction: its write id, the operations
    and the caller's statistics (JSON). Written atomically with the commit."""

    __tablename__ = "commit_records"
    __table_args__ = (sa.UniqueConstraint("txn_id", "db_name", "tbl_name"),)

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    write_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger)
    commit_id: Mapped[int] = mapped_column(sa.BigInteger, index=True)
    committed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    operations: Mapped[list] = mapped_column(sa.JSON)
    stats: Mapped[dict] = mapped_column(sa.JSON)


class DataFileRow(Base):
    """One event file a transaction wrote (revision 0008): its partition directory, path
    ``<dir>/<file>`` inside it, owning write id, size and event count
    (:class:`acidflow.format.filerecords.FileRecord`). It counts once ``txn_id`` committed;
    ``lost_at`` / ``lost_note``: a repair acknowledged the file lost (readers skip it)."""

    __tablename__ = "data_files"
    __table_args__ = (sa.Index(None, "txn_id"),)

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    part_path: Mapped[str] = mapped_column(sa.Text, primary_key=True)
    file_path: Mapped[str] = mapped_column(sa.Text, primary_key=True)
    write_id: Mapped[int] = mapped_column(sa.BigInteger)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger)
    file_size: Mapped[int] = mapped_column(sa.BigInteger)
    row_count: Mapped[int] = mapped_column(sa.BigInteger)
    lost_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lost_note: Mapped[str | None] = mapped_column(sa.Text)


class SavepointRow(Base):
    """A savepoint of a table (revision 0010): a name, the write id whose time-travel state it
    pins and that state's ValidWriteIdList. The cleaner keeps the directories that state
    reads, and the purge of commit records keeps the records from its commit on."""

    __tablename__ = "savepoints"

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    sp_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    write_id: Mapped[int] = mapped_column(sa.BigInteger)
    valid_write_ids: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_by: Mapped[str | None] = mapped_column(sa.String(256))


class BatchRow(Base):
    """Idempotence record of an ingest or CDC batch (revision 0002): the batch id and the
    transaction that applies it. The batch is applied exactly when that transaction committed;
    a row pointing at an aborted transaction is replaced by the next attempt."""

    __tablename__ = "batches"
    # revision 0009: the newest record of a (kind, source), every micro-batch of a stream
    __table_args__ = (sa.Index("ix_batches_kind_source", "kind", "source"),)

    batch_id: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(sa.String(32), index=True)
    txn_id: Mapped[int] = mapped_column(sa.BigInteger, sa.ForeignKey("txns.txn_id"), index=True)
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime)
    source: Mapped[str | None] = mapped_column(sa.Text)
    details: Mapped[dict] = mapped_column(sa.JSON)


class CompactionQueueRow(Base):
    """One compaction request and its history (revision 0003): Hive's ``COMPACTION_QUEUE`` and
    ``COMPLETED_COMPACTIONS`` in one table. ``cq_txn_id`` is the compaction's own transaction
    (opened when a worker claims the entry), ``cq_commit_id`` its commit id (the point after
    which new readers see the compacted layout), ``cq_highest_write_id`` the compactor's high
    watermark. ``cq_properties``: request overrides (Hive ``CQ_TBLPROPERTIES``); ``cq_details``:
    the worker's and cleaner's report (dirs, rows, checksums, files)."""

    __tablename__ = "compaction_queue"
    __table_args__ = (
        sa.CheckConstraint(_in("cq_state", COMPACTION_STATES), name="cq_state"),
        sa.CheckConstraint(_in("cq_type", COMPACTION_TYPES), name="cq_type"),
        sa.Index(None, "db_name", "tbl_name", "part_name"),
    )

    cq_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    part_name: Mapped[str | None] = mapped_column(sa.Text)
    cq_type: Mapped[str] = mapped_column(sa.String(16))
    cq_state: Mapped[str] = mapped_column(sa.String(32), index=True)
    cq_requester: Mapped[str] = mapped_column(sa.String(256))
    cq_worker_id: Mapped[str | None] = mapped_column(sa.String(256))
    cq_enqueue_time: Mapped[datetime] = mapped_column(UTCDateTime)
    cq_start: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cq_end: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cq_heartbeat: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cq_error_message: Mapped[str | None] = mapped_column(sa.Text)
    cq_highest_write_id: Mapped[int | None] = mapped_column(sa.BigInteger)
    cq_txn_id: Mapped[int | None] = mapped_column(sa.BigInteger)
    cq_commit_id: Mapped[int | None] = mapped_column(sa.BigInteger)
    cq_properties: Mapped[dict] = mapped_column(sa.JSON)
    cq_details: Mapped[dict] = mapped_column(sa.JSON)
    #: the Hive metastore's ``COMPACTION_QUEUE.CQ_ID`` of the same entry (revision 0011)
    cq_metastore_id: Mapped[int | None] = mapped_column(sa.BigInteger)


class ReaderRegistration(Base):
    """A snapshot reader of a table (revision 0003). ``snapshot_seq`` is the value of the
    transaction sequence (``next_txn_id``) when the reader took its snapshot: the cleaner waits
    for live readers (heartbeat younger than the timeout) with ``snapshot_seq <=`` a
    compaction's ``cq_commit_id``."""

    __tablename__ = "reader_registrations"
    __table_args__ = (sa.Index(None, "db_name", "tbl_name"),)

    reader_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    db_name: Mapped[str] = mapped_column(sa.String(128))
    tbl_name: Mapped[str] = mapped_column(sa.String(256))
    snapshot_seq: Mapped[int] = mapped_column(sa.BigInteger)
    high_watermark: Mapped[int | None] = mapped_column(sa.BigInteger)
    valid_write_ids: Mapped[str | None] = mapped_column(sa.Text)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_heartbeat: Mapped[datetime] = mapped_column(UTCDateTime)
    reader_user: Mapped[str | None] = mapped_column(sa.String(256))
    reader_host: Mapped[str | None] = mapped_column(sa.String(256))
    agent_info: Mapped[str | None] = mapped_column(sa.Text)


class CdcTombstone(Base):
    """The ordering value of a CDC delete (revision 0004): keeps late events from resurrecting
    a deleted key. Valid once ``txn_id`` committed; the largest committed position wins."""

    __tablename__ = "cdc_tombstones"

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    key_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    txn_id: Mapped[int] = mapped_column(
        sa.BigInteger, sa.ForeignKey("txns.txn_id"), primary_key=True, index=True
    )
    key_json: Mapped[str] = mapped_column(sa.Text)
    position: Mapped[str] = mapped_column(sa.String(256))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class CatalogIdentity(Base):
    """The catalog's stable id (revision 0005): one row, ``identity_key`` = 1. The warehouse
    marker (``_acidflow_warehouse.json``) names this id as the warehouse's owner."""

    __tablename__ = "catalog_identity"

    identity_key: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    catalog_id: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


# --- schema evolution
class SchemaHistoryRow(Base):
    """One schema version of a table (revision 0007): the data columns valid from ``write_id``
    (the write id of the transaction that changed the schema; 0 = the schema before the first
    recorded change). Readers take the newest version whose write id their ValidWriteIdList
    sees (``acidflow.catalog.base.Catalog.schema_for``)."""

    __tablename__ = "schema_history"

    db_name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tbl_name: Mapped[str] = mapped_column(sa.String(256), primary_key=True)
    write_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    txn_id: Mapped[int | None] = mapped_column(sa.BigInteger)
    columns: Mapped[list] = mapped_column(sa.JSON)
    change: Mapped[dict] = mapped_column(sa.JSON)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
