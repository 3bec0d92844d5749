"""The transaction catalog: acidflow's stand-in for the Hive metastore's table and TXN tables.

:class:`Catalog` keeps table definitions (:class:`TableDef`), transactions, per-table write ids,
the write set, table/partition locks and one commit record per (transaction, table). It mirrors
Hive's ``TxnHandler`` (open/commit/abort, ``allocateTableWriteIds``, ``getValidWriteIds``,
``lock``/``checkLock``, ``heartbeat``) and ``AcidHouseKeeperService`` (timed-out transactions),
so files written under its write ids follow Hive's ACID visibility rules.

Storage: SQLAlchemy 2 Core over the schema of :mod:`acidflow.catalog.models`, migrated with Alembic
at start-up. Every public method is one database transaction (lock waits poll in several).
Several processes may use the same catalog at once:

* PostgreSQL: ``SELECT ... FOR UPDATE`` on ``next_txn_id`` (open, commit), on the transaction's
  ``txns`` row (anything that changes a transaction), on the table's ``next_write_id`` row
  (write id allocation) and on ``next_lock_id`` (lock grants). Deadlocks/serialisation failures
  are retried.
* SQLite: every writing transaction starts with ``BEGIN IMMEDIATE`` (one writer at a time),
  WAL journal (readers do not block the writer), 30 s busy timeout. Local disks only.

Times are UTC ``datetime`` objects (aware) taken from the client clock: keep hosts in NTP sync.
Create one :class:`Catalog` per process (SQLAlchemy engines do not survive ``fork``).
"""
from __future__ import annotations

import functools
import getpass
import json
import os
import random
import re
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event

from acidflow.acid.hivetypes import normalize_hive_type
from acidflow.catalog import models as m
from acidflow.catalog.compactions import CompactionQueueMixin
from acidflow.catalog.errors import (
    BatchAlreadyAppliedError,
    BatchInProgressError,
    CatalogError,
    LockTimeoutError,
    NoSuchTableError,
    NoSuchTransactionError,
    TableExistsError,
    TxnAbortedError,
    TxnNotOpenError,
    WriteConflictError,
)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

TXN_STATES = m.TXN_STATES
OPERATIONS = m.OPERATIONS
LOCK_TYPES = m.LOCK_TYPES
#: Operations recorded in the write set and checked for conflicts at commit. Hive tracks
#: update and delete; acidflow adds insert_overwrite (it replaces the partition's rows).
WRITE_SET_OPERATIONS = frozenset({"update", "delete", "insert_overwrite"})

DEFAULT_DB = "default"
TABLE_PROPERTIES_FIXED = {"transactional": "true", "transactional_properties": "default"}
MAX_BUCKETS = 4096  # BucketCodec V1 keeps the bucket id in 12 bits
SQLITE_BUSY_TIMEOUT_S = 30
_PG_MIGRATION_LOCK_KEY = 0x61636964666C6F77 & 0x7FFFFFFFFFFFFFFF  # "acidflow"

_NAME_RE = re.compile(r"^[a-z0-9_]+$")
T = TypeVar("T")


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


# ============================================================================================
# Names, partition specs and Hive types
# ============================================================================================

def normalize_table_name(name: str) -> str:
    """Return ``db.table`` in lower case; a bare ``t`` becomes ``default.t``.

    Raises:
        ValueError: empty parts, more than one dot, or characters other than ``[a-z0-9_]``.
    """
    if not isinstance(name, str):
        raise ValueError(f"table name must be a string, got {name!r}")
    full = name.strip().lower()
    if "." not in full:
        full = f"{DEFAULT_DB}.{full}"
    parts = full.split(".")
    if len(parts) != 2 or not all(_NAME_RE.match(p) for p in parts):
        raise ValueError(f"invalid table name {name!r}: expected 'db.table' of [a-z0-9_]")
    return full


def split_table_name(name: str) -> tuple[str, str]:
    """``"db.t"`` (or ``"t"``) -> ``("db", "t")`` after :func:`normalize_table_name`."""
    db, tbl = normalize_table_name(name).split(".")
    return db, tbl


def parse_partition_spec(spec: str) -> list[tuple[str, str]]:
    """``"ds=2024-01-01/region=eu"`` -> ``[("ds", "2024-01-01"), ("region", "eu")]``.

    Keys are lower-cased; values are kept as given (Hive's escaped path form).

    Raises:
        ValueError: empty spec, a part without ``=``, an empty key or value.
    """
    if not isinstance(spec, str) or not spec.strip("/"):
        raise ValueError(f"invalid partition spec {spec!r}")
    out = []
    for part in spec.strip("/").split("/"):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or value == "":
            raise ValueError(f"invalid partition spec {spec!r}: expected 'k=v/k2=v2'")
        out.append((key.strip().lower(), value))
    return out


# ============================================================================================
# Value objects
# ============================================================================================

@dataclass
class Column:
    """One column: ``name`` (lower-cased) and ``hive_type`` (a Hive type string such as
    ``"int"``, ``"varchar(20)"``, ``"decimal(10,2)"``, ``"array<string>"``)."""

    name: str
    hive_type: str

    def __post_init__(self) -> None:
        self.name = str(self.name).strip().lower()
        try:
            self.hive_type = normalize_hive_type(self.hive_type)
        except ValueError:
            self.hive_type = re.sub(r"\s+", " ", str(self.hive_type).strip().lower())

    def to_dict(self) -> dict[str, str]:
        """``{"name": ..., "type": ...}`` (the YAML shape)."""
        return {"name": self.name, "type": self.hive_type}

    @classmethod
    def from_dict(cls, data: Any) -> "Column":
        """Build from ``{"name", "type"|"hive_type"}`` or a ``Column``.

        Raises:
            ValueError: missing keys.
        """
        if isinstance(data, Column):
            return cls(data.name, data.hive_type)
        if not isinstance(data, dict) or "name" not in data or not (
                "type" in data or "hive_type" in data):
            raise ValueError(f"column must be a mapping with 'name' and 'type', got {data!r}")
        extra = set(data) - {"name", "type", "hive_type", "comment"}
        if extra:
            raise ValueError(f"unknown column keys {sorted(extra)} in {data!r}")
        return cls(data["name"], data.get("type", data.get("hive_type")))


def _columns_from(value: Any, what: str) -> list[Column]:
    if value is None:
        return []
    if isinstance(value, dict):  # {name: type}
        return [Column(k, v) for k, v in value.items()]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of columns or a name->type mapping")
    return [Column.from_dict(c) for c in value]


@dataclass
class TableDef:
    """Definition of one full-ACID ORC table, as stored in the catalog and in YAML.

    Attributes:
        name: ``"db.table"`` in lower case (a bare ``"t"`` becomes ``"default.t"``).
        columns: data columns in file order.
        partition_columns: partition columns in directory order (not stored in the files).
        primary_key: upsert key column names (data or partition columns); may be empty.
        ordering_column: data column whose larger value wins among events for one key
            (CDC precombine); optional.
        bucket_columns: CLUSTERED BY columns; defaults to ``primary_key`` when
            ``num_buckets > 0``.
        num_buckets: number of buckets, ``0`` = unbucketed (all rows in ``bucket_00000``).
        bucketing_version: Hive bucketing hash version, 1 or 2 (Hive 3 default 2).
        properties: table properties (Hive ``TBLPROPERTIES``); ``transactional='true'``,
            ``transactional_properties='default'`` and ``bucketing_version`` are always set.
        location: table root; empty = ``<warehouse>/<db>.db/<table>`` filled in by
            :meth:`Catalog.create_table`.
        table_id: catalog id, set by the catalog.
        created_at: creation time (UTC), set by the catalog.
    """

    name: str
    columns: list[Column]
    partition_columns: list[Column] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    ordering_column: str | None = None
    bucket_columns: list[str] = field(default_factory=list)
    num_buckets: int = 0
    bucketing_version: int = 2
    properties: dict[str, str] = field(default_factory=dict)
    location: str = ""
    table_id: int | None = None
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        name = str(self.name).strip().lower()
        self.name = name if "." in name else f"{DEFAULT_DB}.{name}"
        self.columns = [c if isinstance(c, Column) else Column.from_dict(c) for c in self.columns]
        self.partition_columns = [c if isinstance(c, Column) else Column.from_dict(c)
                                  for c in self.partition_columns]
        self.primary_key = [str(k).strip().lower() for k in self.primary_key]
        self.bucket_columns = [str(k).strip().lower() for k in self.bucket_columns]
        if self.ordering_column is not None:
            self.ordering_column = str(self.ordering_column).strip().lower() or None
        self.num_buckets = int(self.num_buckets)
        self.bucketing_version = int(self.bucketing_version)
        if self.num_buckets > 0 and not self.bucket_columns:
            # CLUSTERED BY takes data columns only: the key minus its partition columns
            pcols = {c.name for c in self.partition_columns}
            self.bucket_columns = [k for k in self.primary_key if k not in pcols]
        props = {str(k): str(v) for k, v in (self.properties or {}).items()}
        for key, value in TABLE_PROPERTIES_FIXED.items():
            props.setdefault(key, value)
        props.setdefault("bucketing_version", str(self.bucketing_version))
        self.properties = props
        self.location = self.location or ""

    # -- views ---------------------------------------------------------------------------
    @property
    def db_name(self) -> str:
        """Database part of :attr:`name`."""
        return self.name.split(".", 1)[0]

    @property
    def table_name(self) -> str:
        """Table part of :attr:`name`."""
        return self.name.split(".", 1)[1]

    def column_names(self) -> list[str]:
        """Data column names in order (partition columns excluded; Hive ``columns``)."""
        return [c.name for c in self.columns]

    def hive_types(self) -> list[str]:
        """Data column types in order, parallel to :meth:`column_names` (Hive ``columns.types``)."""
        return [c.hive_type for c in self.columns]

    def partition_column_names(self) -> list[str]:
        """Partition column names in order."""
        return [c.name for c in self.partition_columns]

    @property
    def is_partitioned(self) -> bool:
        """True when the table has partition columns."""
        return bool(self.partition_columns)

    # -- checks ----------------------------------------------------------------------------
    def validate(self) -> None:
        """Check the definition; returns ``None``.

        Raises:
            ValueError: bad table/column names or types, duplicate columns, key / ordering /
                bucket columns that are not columns, inconsistent bucketing, or properties
                that would make the table something other than full ACID.
        """
        normalize_table_name(self.name)
        if not self.columns:
            raise ValueError(f"table {self.name}: at least one data column is required")
        seen: set[str] = set()
        for col in [*self.columns, *self.partition_columns]:
            if not _NAME_RE.match(col.name):
                raise ValueError(f"table {self.name}: invalid column name {col.name!r}")
            if col.name in seen:
                raise ValueError(f"table {self.name}: duplicate column {col.name!r}")
            seen.add(col.name)
            col.hive_type = normalize_hive_type(col.hive_type)
        for col in self.partition_columns:
            if "<" in col.hive_type:
                raise ValueError(f"table {self.name}: partition column {col.name!r} must have "
                                 f"a primitive type, not {col.hive_type!r}")
        data = set(self.column_names())
        if len(set(self.primary_key)) != len(self.primary_key):
            raise ValueError(f"table {self.name}: duplicate primary key columns {self.primary_key}")
        for key in self.primary_key:
            if key not in seen:
                raise ValueError(f"table {self.name}: unknown primary key column {key!r}")
        if self.ordering_column is not None and self.ordering_column not in data:
            raise ValueError(f"table {self.name}: unknown ordering column {self.ordering_column!r}")
        if not 0 <= self.num_buckets <= MAX_BUCKETS:
            raise ValueError(f"table {self.name}: num_buckets must be 0..{MAX_BUCKETS}")
        if self.num_buckets == 0 and self.bucket_columns:
            raise ValueError(f"table {self.name}: bucket_columns given but num_buckets is 0")
        if self.num_buckets > 0 and not self.bucket_columns:
            raise ValueError(f"table {self.name}: num_buckets > 0 needs bucket_columns "
                             "(or a primary_key)")
        if len(set(self.bucket_columns)) != len(self.bucket_columns):
            raise ValueError(f"table {self.name}: duplicate bucket columns {self.bucket_columns}")
        for key in self.bucket_columns:
            if key not in data:
                raise ValueError(f"table {self.name}: unknown bucket column {key!r} "
                                 "(must be a data column)")
        if self.bucketing_version not in (1, 2):
            raise ValueError(f"table {self.name}: bucketing_version must be 1 or 2")
        _check_fixed_properties(self.name, self.properties, self.bucketing_version)

    # -- YAML ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict for YAML/JSON: columns as ``[{"name", "type"}]``; ``table_id`` and
        ``created_at`` (ISO 8601) only when set."""
        out: dict[str, Any] = {
            "name": self.name,
            "columns": [c.to_dict() for c in self.columns],
            "partition_columns": [c.to_dict() for c in self.partition_columns],
            "primary_key": list(self.primary_key),
            "ordering_column": self.ordering_column,
            "bucket_columns": list(self.bucket_columns),
            "num_buckets": self.num_buckets,
            "bucketing_version": self.bucketing_version,
            "properties": dict(self.properties),
            "location": self.location,
        }
        if self.table_id is not None:
            out["table_id"] = self.table_id
        if self.created_at is not None:
            out["created_at"] = self.created_at.isoformat()
        return out

    _KEYS = frozenset({"name", "columns", "partition_columns", "primary_key", "ordering_column",
                       "bucket_columns", "num_buckets", "bucketing_version", "properties",
                       "location", "table_id", "created_at"})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TableDef":
        """Inverse of :meth:`to_dict`. Columns may also be a ``{name: type}`` mapping; a
        ``bucketing_version`` given only in ``properties`` is honoured.

        Raises:
            ValueError: not a mapping, unknown keys, missing ``name``/``columns``.
        """
        if not isinstance(data, dict):
            raise ValueError(f"table definition must be a mapping, got {type(data).__name__}")
        unknown = set(data) - cls._KEYS
        if unknown:
            raise ValueError(f"unknown table definition keys: {sorted(unknown)}")
        if "name" not in data or "columns" not in data:
            raise ValueError("table definition needs 'name' and 'columns'")
        props = {str(k): str(v) for k, v in (data.get("properties") or {}).items()}
        bv = data.get("bucketing_version", props.get("bucketing_version", 2))
        created = data.get("created_at")
        if isinstance(created, str):
            created = _as_utc(datetime.fromisoformat(created))
        return cls(
            name=data["name"],
            columns=_columns_from(data["columns"], "columns"),
            partition_columns=_columns_from(data.get("partition_columns"), "partition_columns"),
            primary_key=list(data.get("primary_key") or []),
            ordering_column=data.get("ordering_column"),
            bucket_columns=list(data.get("bucket_columns") or []),
            num_buckets=int(data.get("num_buckets") or 0),
            bucketing_version=int(bv),
            properties=props,
            location=data.get("location") or "",
            table_id=data.get("table_id"),
            created_at=created,
        )


def _check_fixed_properties(table: str, props: dict[str, str], bucketing_version: int) -> None:
    for key, value in TABLE_PROPERTIES_FIXED.items():
        if str(props.get(key, value)).lower() != value:
            raise ValueError(f"table {table}: property {key}={props[key]!r} is not allowed; "
                             f"acidflow tables are full ACID ({key}={value!r})")
    if str(props.get("bucketing_version", bucketing_version)) != str(bucketing_version):
        raise ValueError(f"table {table}: property bucketing_version="
                         f"{props['bucketing_version']!r} disagrees with bucketing_version="
                         f"{bucketing_version}")


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


class _Deferred:
    """An error to raise after the surrounding database transaction has committed."""

    def __init__(self, error: Exception):
        self.error = error


# ============================================================================================
# Alembic
# ============================================================================================

def alembic_config(connection: sa.Connection | None = None, url: str | None = None):
    """An ``alembic.config.Config`` for the catalog migrations, built in code (no ini file).

    Args:
        connection: an open connection to run on (stored in ``config.attributes``); it may
            already be inside a transaction, which the migration then joins.
        url: SQLAlchemy URL, used when no connection is given.
    """
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    cfg.set_main_option("path_separator", "os")
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", str(url).replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@functools.lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest migration revision id (cached per process)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


# ============================================================================================
# Catalog
# ============================================================================================

class Catalog(CompactionQueueMixin):
    """Tables, transactions, write ids, locks and commit records in one SQL database.

    The Hive metastore's transactional half (``TxnHandler``) re-done on SQLAlchemy: open a
    transaction, allocate one write id per table it writes, register the partitions it touches,
    take locks, heartbeat, then commit atomically (with Hive's write-set conflict check) or
    abort. Readers build a ``ValidWriteIdList`` with :meth:`valid_write_ids`.

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db`` or ``postgresql+psycopg2://...``). For a
            SQLite file its directory is created.
        warehouse: table root used for default table locations
            (``<warehouse>/<db>.db/<table>``); ``None`` = :func:`acidflow.config.load_settings`'s.
        txn_timeout_s: seconds without heartbeat after which
            :meth:`abort_timed_out_transactions` aborts a transaction (Hive ``hive.txn.timeout``).
        migrate: run ``alembic upgrade head`` now (serialised between processes).
    """

    def __init__(self, url: str, *, warehouse: str | None = None, txn_timeout_s: int = 300,
                 migrate: bool = True):
        self.url = sa.engine.make_url(url)
        if warehouse is None:
            from acidflow.config import load_settings

            warehouse = load_settings().warehouse
        self.warehouse = str(warehouse)
        self.txn_timeout_s = int(txn_timeout_s)
        self.backend = self.url.get_backend_name()
        self.is_sqlite = self.backend == "sqlite"
        self.is_postgres = self.backend == "postgresql"
        self.engine = self._create_engine()
        self._user = _default_user()
        self._host = socket.gethostname()
        if migrate:
            self.upgrade()

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_settings(cls, settings=None, *, migrate: bool = True) -> "Catalog":
        """A catalog from :class:`acidflow.config.Settings` (``load_settings()`` when ``None``):
        its ``catalog_url``, ``warehouse`` and ``txn_timeout_s``."""
        if settings is None:
            from acidflow.config import load_settings

            settings = load_settings()
        return cls(settings.catalog_url, warehouse=settings.warehouse,
                   txn_timeout_s=settings.txn_timeout_s, migrate=migrate)

    def _create_engine(self) -> sa.Engine:
        if not self.is_sqlite:
            return sa.create_engine(self.url, pool_pre_ping=True)
        database = self.url.database or ""
        memory = database in ("", ":memory:") or database.startswith("file::memory:")
        if memory:
            engine = sa.create_engine(self.url, poolclass=sa.pool.StaticPool,
                                      connect_args={"check_same_thread": False})
        else:
            Path(database).expanduser().absolute().parent.mkdir(parents=True, exist_ok=True)
            engine = sa.create_engine(self.url, connect_args={
                "timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):  # pragma: no cover - trivial
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_S * 1000}")
            if not memory:
                cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            write = conn.get_execution_options().get("acidflow_write", True)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")

        return engine

    def close(self) -> None:
        """Dispose of the connection pool. The catalog can still be used afterwards (new
        connections are opened on demand)."""
        self.engine.dispose()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Catalog({self.url.render_as_string(hide_password=True)!r})"

    # -- migrations ----------------------------------------------------------------------
    def upgrade(self, revision: str = "head") -> None:
        """``alembic upgrade <revision>`` inside one catalog transaction, serialised between
        processes (SQLite ``BEGIN IMMEDIATE``, PostgreSQL advisory transaction lock)."""
        from alembic import command

        if revision == "head" and self.current_revision() == head_revision():
            return  # fast path: nothing to do, no lock taken
        with self._migration_connection() as conn:
            command.upgrade(alembic_config(connection=conn), revision)

    def downgrade(self, revision: str) -> None:
        """``alembic downgrade <revision>`` (``"base"`` drops every catalog table)."""
        from alembic import command

        with self._migration_connection() as conn:
            command.downgrade(alembic_config(connection=conn), revision)

    def current_revision(self) -> str | None:
        """The revision the database is at (``None`` if never migrated)."""
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as conn:
            if self.is_sqlite:
                conn.execution_options(acidflow_write=False)
            ctx = MigrationContext.configure(conn, opts={"version_table": m.VERSION_TABLE})
            return ctx.get_current_revision()

    def _migration_connection(self):
        from contextlib import contextmanager

        @contextmanager
        def cm():
            with self.engine.connect() as conn:
                if self.is_sqlite:
                    conn.execution_options(acidflow_write=True)
                with conn.begin():
                    if self.is_postgres:
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"),
                                     {"k": _PG_MIGRATION_LOCK_KEY})
                    yield conn

        return cm()

    # -- transaction runner --------------------------------------------------------------
    def _run(self, fn: Callable[[sa.Connection], T], *, write: bool = True,
             attempts: int = 8) -> T:
        """Run ``fn(conn)`` in one database transaction; retry on deadlock / serialisation
        failure / SQLite busy. A returned :class:`_Deferred` is raised after the commit."""
        delay = 0.02
        for attempt in range(attempts):
            try:
                with self.engine.connect() as conn:
                    if self.is_sqlite:
                        conn.execution_options(acidflow_write=write)
                    with conn.begin():
                        result = fn(conn)
            except sa.exc.OperationalError as exc:
                if attempt + 1 < attempts and self._retryable(exc):
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 1.0)
                    continue
                raise
            if isinstance(result, _Deferred):
                raise result.error
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _retryable(exc: sa.exc.OperationalError) -> bool:
        code = getattr(exc.orig, "pgcode", None)
        if code in ("40001", "40P01"):
            return True
        text = str(exc.orig).lower()
        return "database is locked" in text or "database table is locked" in text

    # -- shared helpers ------------------------------------------------------------------
    def _default_location(self, db: str, tbl: str) -> str:
        return f"{self.warehouse.rstrip('/')}/{db}.db/{tbl}"

    @staticmethod
    def _tbl_row(conn: sa.Connection, db: str, tbl: str):
        row = conn.execute(sa.select(m.Tbl.__table__).where(
            m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)).first()
        if row is None:
            raise NoSuchTableError(f"{db}.{tbl}")
        return row

    @staticmethod
    def _load_tables(conn: sa.Connection, rows) -> list[TableDef]:
        ids = [r.tbl_id for r in rows]
        if not ids:
            return []

        def grouped(model, *cols):
            out: dict[int, list] = {i: [] for i in ids}
            q = sa.select(model.__table__).where(model.tbl_id.in_(ids)).order_by(*cols)
            for r in conn.execute(q):
                out[r.tbl_id].append(r)
            return out

        cols = grouped(m.ColumnV2, m.ColumnV2.tbl_id, m.ColumnV2.integer_idx)
        pkeys = grouped(m.PartitionKey, m.PartitionKey.tbl_id, m.PartitionKey.integer_idx)
        bcols = grouped(m.BucketingCol, m.BucketingCol.tbl_id, m.BucketingCol.integer_idx)
        pk = grouped(m.PrimaryKeyCol, m.PrimaryKeyCol.tbl_id, m.PrimaryKeyCol.integer_idx)
        params = grouped(m.TableParam, m.TableParam.tbl_id, m.TableParam.param_key)
        out = []
        for r in rows:
            out.append(TableDef(
                name=f"{r.db_name}.{r.tbl_name}",
                columns=[Column(c.column_name, c.type_name) for c in cols[r.tbl_id]],
                partition_columns=[Column(c.pkey_name, c.pkey_type) for c in pkeys[r.tbl_id]],
                primary_key=[c.column_name for c in pk[r.tbl_id]],
                ordering_column=r.ordering_column,
                bucket_columns=[c.bucket_col_name for c in bcols[r.tbl_id]],
                num_buckets=r.num_buckets,
                bucketing_version=r.bucketing_version,
                properties={p.param_key: p.param_value for p in params[r.tbl_id]},
                location=r.location,
                table_id=r.tbl_id,
                created_at=r.created_at,
            ))
        return out

    def _table(self, conn: sa.Connection, name: str) -> TableDef:
        db, tbl = split_table_name(name)
        return self._load_tables(conn, [self._tbl_row(conn, db, tbl)])[0]

    def _check_partition(self, conn: sa.Connection, db: str, tbl: str,
                         partition: str | None) -> str | None:
        """Validate ``partition`` against the table's partition columns; return its
        normalised spec (keys lower-case, in table order) or ``None`` (whole table)."""
        row = self._tbl_row(conn, db, tbl)
        if partition is None:
            return None
        keys = [r.pkey_name for r in conn.execute(
            sa.select(m.PartitionKey.pkey_name).where(m.PartitionKey.tbl_id == row.tbl_id)
            .order_by(m.PartitionKey.integer_idx))]
        if not keys:
            raise ValueError(f"table {db}.{tbl} is not partitioned; partition must be None, "
                             f"got {partition!r}")
        parts = parse_partition_spec(partition)
        if [k for k, _ in parts] != keys:
            raise ValueError(f"partition {partition!r} does not match the partition columns "
                             f"{keys} of table {db}.{tbl}")
        return "/".join(f"{k}={v}" for k, v in parts)

    @staticmethod
    def _txn_row(conn: sa.Connection, txn_id: int, *, for_update: bool = False):
        q = sa.select(m.Txn.__table__).where(m.Txn.txn_id == txn_id)
        if for_update:
            q = q.with_for_update()
        row = conn.execute(q).first()
        if row is None:
            raise NoSuchTransactionError(txn_id)
        return row

    def _open_txn_row(self, conn: sa.Connection, txn_id: int):
        """Lock the transaction's row and check it is open.

        Raises:
            NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """
        row = self._txn_row(conn, txn_id, for_update=True)
        if row.txn_state == "aborted":
            raise TxnAbortedError(txn_id, row.txn_abort_reason)
        if row.txn_state != "open":
            raise TxnNotOpenError(txn_id, row.txn_state)
        return row

    @staticmethod
    def _abort_rows(conn: sa.Connection, txn_ids: list[int], reason: str, now: datetime) -> None:
        if not txn_ids:
            return
        conn.execute(sa.update(m.Txn).where(m.Txn.txn_id.in_(txn_ids)).values(
            txn_state="aborted", txn_aborted=now, txn_abort_reason=reason))
        conn.execute(sa.delete(m.HiveLock).where(m.HiveLock.txn_id.in_(txn_ids)))

    # ====================================================================================
    # Tables
    # ====================================================================================
    def create_table(self, table: TableDef, if_not_exists: bool = False) -> TableDef:
        """Register a table (Hive ``CREATE TABLE ... STORED AS ORC TBLPROPERTIES
        ('transactional'='true')``) and its write id sequence (starting at 1).

        Args:
            table: the definition; validated, name normalised, location defaulted.
            if_not_exists: return the existing definition instead of raising.
        Returns:
            The stored definition (with ``table_id``, ``created_at``, ``location``).
        Raises:
            ValueError: invalid definition (:meth:`TableDef.validate`).
            TableExistsError: the name is taken and ``if_not_exists`` is false.
        """
        table = TableDef.from_dict(table.to_dict()) if isinstance(table, TableDef) else \
            TableDef.from_dict(table)
        table.validate()
        db, tbl = split_table_name(table.name)
        location = table.location or self._default_location(db, tbl)

        def fn(conn: sa.Connection):
            exists = conn.execute(sa.select(m.Tbl.tbl_id).where(
                m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)).first()
            if exists is not None:
                if if_not_exists:
                    return self._table(conn, table.name)
                raise TableExistsError(table.name)
            now = _utcnow()
            tbl_id = conn.execute(sa.insert(m.Tbl).values(
                db_name=db, tbl_name=tbl, location=location, num_buckets=table.num_buckets,
                bucketing_version=table.bucketing_version, ordering_column=table.ordering_column,
                created_at=now).returning(m.Tbl.tbl_id)).scalar_one()
            self._insert_columns(conn, tbl_id, table.columns, 0)
            if table.partition_columns:
                conn.execute(sa.insert(m.PartitionKey), [
                    {"tbl_id": tbl_id, "integer_idx": i, "pkey_name": c.name,
                     "pkey_type": c.hive_type} for i, c in enumerate(table.partition_columns)])
            if table.bucket_columns:
                conn.execute(sa.insert(m.BucketingCol), [
                    {"tbl_id": tbl_id, "integer_idx": i, "bucket_col_name": c}
                    for i, c in enumerate(table.bucket_columns)])
            if table.primary_key:
                conn.execute(sa.insert(m.PrimaryKeyCol), [
                    {"tbl_id": tbl_id, "integer_idx": i, "column_name": c}
                    for i, c in enumerate(table.primary_key)])
            conn.execute(sa.insert(m.TableParam), [
                {"tbl_id": tbl_id, "param_key": k, "param_value": v}
                for k, v in sorted(table.properties.items())])
            conn.execute(sa.insert(m.NextWriteId).values(db_name=db, tbl_name=tbl, nwi_next=1))
            return self._table(conn, table.name)

        try:
            return self._run(fn)
        except sa.exc.IntegrityError:
            # Lost a race with a concurrent create of the same name.
            if if_not_exists:
                return self.get_table(table.name)
            raise TableExistsError(table.name) from None

    @staticmethod
    def _insert_columns(conn: sa.Connection, tbl_id: int, columns: list[Column], start: int):
        if columns:
            conn.execute(sa.insert(m.ColumnV2), [
                {"tbl_id": tbl_id, "integer_idx": start + i, "column_name": c.name,
                 "type_name": c.hive_type} for i, c in enumerate(columns)])

    def get_table(self, name: str) -> TableDef:
        """The definition of ``name`` (``"db.t"`` or ``"t"`` = ``"default.t"``).

        Raises:
            NoSuchTableError: unknown table.
        """
        return self._run(lambda conn: self._table(conn, name), write=False)

    def table_exists(self, name: str) -> bool:
        """True when ``name`` is registered."""
        db, tbl = split_table_name(name)
        return self._run(lambda conn: conn.execute(sa.select(m.Tbl.tbl_id).where(
            m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)).first() is not None, write=False)

    def list_tables(self, db_name: str | None = None) -> list[TableDef]:
        """All tables (optionally of one database), sorted by name."""

        def fn(conn):
            q = sa.select(m.Tbl.__table__).order_by(m.Tbl.db_name, m.Tbl.tbl_name)
            if db_name is not None:
                q = q.where(m.Tbl.db_name == db_name.strip().lower())
            return self._load_tables(conn, conn.execute(q).all())

        return self._run(fn, write=False)

    def drop_table(self, name: str, if_exists: bool = False) -> None:
        """Remove a table and all its transactional metadata (write ids, components, write
        set, commit records), like Hive's ``DROP TABLE`` cleanup (``TxnHandler.cleanupRecords``).
        Data files are not touched.

        Raises:
            NoSuchTableError: unknown table (unless ``if_exists``).
            CatalogError: an open transaction holds a write id or a lock on the table.
        """
        db, tbl = split_table_name(name)

        def fn(conn):
            try:
                row = self._tbl_row(conn, db, tbl)
            except NoSuchTableError:
                if if_exists:
                    return None
                raise
            users = {r.txn_id for r in conn.execute(
                sa.select(m.TxnToWriteId.txn_id).join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id)
                .where(m.TxnToWriteId.db_name == db, m.TxnToWriteId.tbl_name == tbl,
                       m.Txn.txn_state == "open"))}
            users |= {r.txn_id for r in conn.execute(sa.select(m.HiveLock.txn_id).where(
                m.HiveLock.db_name == db, m.HiveLock.tbl_name == tbl))}
            if users:
                raise CatalogError(f"cannot drop table {db}.{tbl}: open transactions "
                                   f"{sorted(users)} write to or lock it")
            for model in (m.NextWriteId, m.TxnToWriteId, m.TxnComponent,
                          m.CompletedTxnComponent, m.WriteSet, m.CommitRecordRow):
                conn.execute(sa.delete(model).where(model.db_name == db, model.tbl_name == tbl))
            for model in (m.ColumnV2, m.PartitionKey, m.BucketingCol, m.PrimaryKeyCol,
                          m.TableParam):
                conn.execute(sa.delete(model).where(model.tbl_id == row.tbl_id))
            conn.execute(sa.delete(m.Tbl).where(m.Tbl.tbl_id == row.tbl_id))
            return None

        self._run(fn)

    def set_table_properties(self, name: str, props: dict[str, str]) -> TableDef:
        """Add or replace table properties (Hive ``ALTER TABLE ... SET TBLPROPERTIES``);
        values are stored as strings.

        Returns:
            The updated definition.
        Raises:
            NoSuchTableError: unknown table.
            ValueError: changing ``transactional``, ``transactional_properties`` or
                ``bucketing_version`` (Hive forbids the first two; the third would misplace
                rows in buckets).
        """
        props = {str(k): str(v) for k, v in props.items()}

        def fn(conn):
            current = self._table(conn, name)
            _check_fixed_properties(current.name, props, current.bucketing_version)
            for key, value in props.items():
                updated = conn.execute(sa.update(m.TableParam).where(
                    m.TableParam.tbl_id == current.table_id, m.TableParam.param_key == key)
                    .values(param_value=value)).rowcount
                if not updated:
                    conn.execute(sa.insert(m.TableParam).values(
                        tbl_id=current.table_id, param_key=key, param_value=value))
            return self._table(conn, name)

        return self._run(fn)

    def add_columns(self, name: str, columns: list[Column]) -> TableDef:
        """Append data columns at the end (Hive ``ALTER TABLE ... ADD COLUMNS``; ORC schema
        evolution reads older files with the new columns as NULL).

        Returns:
            The updated definition.
        Raises:
            NoSuchTableError: unknown table.
            ValueError: a name already used (data or partition column), bad name or type.
        """
        columns = [c if isinstance(c, Column) else Column.from_dict(c) for c in columns]

        def fn(conn):
            current = self._table(conn, name)
            taken = set(current.column_names()) | set(current.partition_column_names())
            for col in columns:
                if not _NAME_RE.match(col.name):
                    raise ValueError(f"table {current.name}: invalid column name {col.name!r}")
                if col.name in taken:
                    raise ValueError(f"table {current.name}: column {col.name!r} already exists")
                col.hive_type = normalize_hive_type(col.hive_type)
                taken.add(col.name)
            self._insert_columns(conn, current.table_id, columns, len(current.columns))
            return self._table(conn, name)

        return self._run(fn)

    # ====================================================================================
    # Transactions
    # ====================================================================================
    def open_transaction(self, user: str | None = None, host: str | None = None,
                         agent_info: str | None = None) -> int:
        """Open a transaction (Hive ``TxnHandler.openTxns``).

        Args:
            user, host: recorded for display; default the OS user and host name.
            agent_info: free text (job, task, pid); default ``"acidflow pid <pid>"``.
        Returns:
            The new transaction id from the global increasing sequence (Hive ``NEXT_TXN_ID``).
        """
        now = _utcnow()

        def fn(conn):
            txn_id = self._next_txn_id(conn)
            conn.execute(sa.insert(m.Txn).values(
                txn_id=txn_id, txn_state="open", txn_started=now, txn_last_heartbeat=now,
                txn_heartbeat_count=0, txn_user=user or self._user, txn_host=host or self._host,
                txn_agent_info=agent_info if agent_info is not None else
                f"acidflow pid {os.getpid()}"))
            return txn_id

        return self._run(fn)

    @staticmethod
    def _next_txn_id(conn: sa.Connection) -> int:
        """Take the next value of the global sequence (row locked ``FOR UPDATE``)."""
        value = conn.execute(sa.select(m.NextTxnId.ntxn_next).where(m.NextTxnId.id == 1)
                             .with_for_update()).scalar_one()
        conn.execute(sa.update(m.NextTxnId).where(m.NextTxnId.id == 1)
                     .values(ntxn_next=value + 1))
        return value

    def heartbeat(self, txn_id: int) -> None:
        """Record that the transaction's owner is alive; also refreshes its locks (Hive
        ``TxnHandler.heartbeat``). Call well within ``txn_timeout_s``.

        Raises:
            NoSuchTransactionError: unknown id.
            TxnAbortedError: aborted (e.g. timed out by the housekeeper).
            TxnNotOpenError: already committed.
        """
        now = _utcnow()

        def fn(conn):
            row = self._open_txn_row(conn, txn_id)
            conn.execute(sa.update(m.Txn).where(m.Txn.txn_id == txn_id).values(
                txn_last_heartbeat=now, txn_heartbeat_count=row.txn_heartbeat_count + 1))
            conn.execute(sa.update(m.HiveLock).where(m.HiveLock.txn_id == txn_id)
                         .values(last_heartbeat=now))

        self._run(fn)

    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        """The transaction's write id for a table (Hive ``allocateTableWriteIds``): the table's
        next write id on first call, the same id again on later calls for the same pair.

        Write ids of one table increase in allocation order (Hive ``NEXT_WRITE_ID``; the pair
        goes to ``TXN_TO_WRITE_ID``). Serialised by a row lock on the table's sequence row.

        Raises:
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """
        db, tbl = split_table_name(table_name)

        def fn(conn):
            self._open_txn_row(conn, txn_id)
            self._tbl_row(conn, db, tbl)
            existing = conn.execute(sa.select(m.TxnToWriteId.write_id).where(
                m.TxnToWriteId.txn_id == txn_id, m.TxnToWriteId.db_name == db,
                m.TxnToWriteId.tbl_name == tbl)).scalar()
            if existing is not None:
                return existing
            write_id = conn.execute(sa.select(m.NextWriteId.nwi_next).where(
                m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl)
                .with_for_update()).scalar_one()
            conn.execute(sa.update(m.NextWriteId).where(
                m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl)
                .values(nwi_next=write_id + 1))
            conn.execute(sa.insert(m.TxnToWriteId).values(
                db_name=db, tbl_name=tbl, write_id=write_id, txn_id=txn_id))
            return write_id

        return self._run(fn)

    def add_component(self, txn_id: int, table_name: str, partition: str | None,
                      operation: str) -> None:
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
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; expected one of {OPERATIONS}")
        db, tbl = split_table_name(table_name)

        def fn(conn):
            self._open_txn_row(conn, txn_id)
            part = self._check_partition(conn, db, tbl, partition)
            write_id = conn.execute(sa.select(m.TxnToWriteId.write_id).where(
                m.TxnToWriteId.txn_id == txn_id, m.TxnToWriteId.db_name == db,
                m.TxnToWriteId.tbl_name == tbl)).scalar()
            if write_id is None:
                raise CatalogError(f"txn {txn_id} has no write id for table {db}.{tbl}: call "
                                   "allocate_write_id before add_component")
            same_part = (m.TxnComponent.part_name.is_(None) if part is None
                         else m.TxnComponent.part_name == part)
            dup = conn.execute(sa.select(m.TxnComponent.tc_id).where(
                m.TxnComponent.txn_id == txn_id, m.TxnComponent.db_name == db,
                m.TxnComponent.tbl_name == tbl, same_part,
                m.TxnComponent.operation == operation)).first()
            if dup is None:
                conn.execute(sa.insert(m.TxnComponent).values(
                    txn_id=txn_id, db_name=db, tbl_name=tbl, part_name=part,
                    operation=operation, write_id=write_id))

        self._run(fn)

    def commit_transaction(self, txn_id: int, stats: dict[str, dict] | None = None) -> int:
        """Commit atomically across every table the transaction wrote (Hive
        ``TxnHandler.commitTxn``).

        In one database transaction: take a commit id from the global sequence; run the
        write-set check; record the update/delete/insert_overwrite footprint in ``write_set``;
        move the components to ``completed_txn_components``; write one commit record per table
        that has a write id (write id, txn id, operations, time, ``stats[table]``); mark the
        transaction committed; release its locks.

        Write-set check (HIVE-13395, first committer wins): if this transaction updated,
        deleted or overwrote a (table, partition) that another transaction also updated /
        deleted / overwrote and that other transaction committed after this one opened (its
        commit id > this txn id), this transaction is aborted instead. A whole-table (``None``)
        component overlaps every partition of its table. Inserts never conflict.

        Committing an already committed transaction returns its commit id again (Hive's
        idempotent ``commitTxn``).

        Args:
            stats: ``{"db.table": {...}}`` JSON-serialisable statistics per written table.
        Returns:
            The commit id (larger than every txn id opened before the commit).
        Raises:
            WriteConflictError: the check failed; the transaction is now aborted.
            TxnAbortedError: the transaction was already aborted (e.g. timed out).
            NoSuchTransactionError: unknown id.
            ValueError: stats for a table the transaction has no write id for, or stats that
                are not JSON-serialisable.
        """
        stats_by_table: dict[tuple[str, str], dict] = {}
        for key, value in (stats or {}).items():
            if not isinstance(value, dict):
                raise ValueError(f"stats for {key!r} must be a dict")
            try:
                value = json.loads(json.dumps(value))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"stats for {key!r} are not JSON-serialisable: {exc}") from None
            stats_by_table[split_table_name(key)] = value

        def fn(conn):
            current = self._txn_row(conn, txn_id)  # cheap pre-check before the global lock
            if current.txn_state == "committed":
                return current.txn_commit_id
            commit_id = self._next_txn_id(conn)  # global order: next_txn_id, then txn row
            row = self._txn_row(conn, txn_id, for_update=True)
            if row.txn_state == "committed":
                return row.txn_commit_id
            if row.txn_state == "aborted":
                raise TxnAbortedError(txn_id, row.txn_abort_reason)
            now = _utcnow()
            write_ids = {(r.db_name, r.tbl_name): r.write_id for r in conn.execute(
                sa.select(m.TxnToWriteId.__table__).where(m.TxnToWriteId.txn_id == txn_id))}
            unknown = set(stats_by_table) - set(write_ids)
            if unknown:
                raise ValueError(f"txn {txn_id}: stats given for tables it did not write: "
                                 f"{sorted('.'.join(u) for u in unknown)}")
            comps = conn.execute(sa.select(m.TxnComponent.__table__).where(
                m.TxnComponent.txn_id == txn_id).order_by(m.TxnComponent.tc_id)).all()
            ws_comps = [c for c in comps if c.operation in WRITE_SET_OPERATIONS]
            for comp in ws_comps:
                hit = self._write_set_conflict(conn, txn_id, comp)
                if hit is not None:
                    err = WriteConflictError(
                        txn_id, hit.txn_id, hit.commit_id, f"{comp.db_name}.{comp.tbl_name}",
                        comp.part_name if comp.part_name is not None else hit.part_name,
                        comp.operation, hit.operation)
                    # Undo the sequence bump (we hold its row lock), then abort for good.
                    conn.execute(sa.update(m.NextTxnId).where(m.NextTxnId.id == 1)
                                 .values(ntxn_next=commit_id))
                    self._abort_rows(conn, [txn_id], err.reason, now)
                    return _Deferred(err)
            if ws_comps:
                seen = set()
                rows = []
                for c in ws_comps:
                    key = (c.db_name, c.tbl_name, c.part_name, c.operation)
                    if key not in seen:
                        seen.add(key)
                        rows.append({"txn_id": txn_id, "commit_id": commit_id,
                                     "db_name": c.db_name, "tbl_name": c.tbl_name,
                                     "part_name": c.part_name, "operation": c.operation})
                conn.execute(sa.insert(m.WriteSet), rows)
            if comps:
                conn.execute(sa.insert(m.CompletedTxnComponent), [
                    {"txn_id": txn_id, "db_name": c.db_name, "tbl_name": c.tbl_name,
                     "part_name": c.part_name, "write_id": c.write_id, "committed_at": now,
                     "update_delete": c.operation in WRITE_SET_OPERATIONS} for c in comps])
                conn.execute(sa.delete(m.TxnComponent).where(m.TxnComponent.txn_id == txn_id))
            if write_ids:
                records = []
                for (db, tbl), write_id in sorted(write_ids.items()):
                    ops = {c.operation for c in comps if (c.db_name, c.tbl_name) == (db, tbl)}
                    records.append({
                        "db_name": db, "tbl_name": tbl, "write_id": write_id, "txn_id": txn_id,
                        "commit_id": commit_id, "committed_at": now,
                        "operations": [o for o in OPERATIONS if o in ops],
                        "stats": stats_by_table.get((db, tbl), {})})
                conn.execute(sa.insert(m.CommitRecordRow), records)
            conn.execute(sa.update(m.Txn).where(m.Txn.txn_id == txn_id).values(
                txn_state="committed", txn_commit_id=commit_id, txn_committed=now))
            conn.execute(sa.delete(m.HiveLock).where(m.HiveLock.txn_id == txn_id))
            return commit_id

        return self._run(fn)

    @staticmethod
    def _write_set_conflict(conn: sa.Connection, txn_id: int, comp):
        ws = m.WriteSet
        overlap = [ws.part_name.is_(None)]
        if comp.part_name is None:
            overlap = [sa.true()]
        else:
            overlap.append(ws.part_name == comp.part_name)
        return conn.execute(
            sa.select(ws.txn_id, ws.commit_id, ws.part_name, ws.operation).where(
                ws.db_name == comp.db_name, ws.tbl_name == comp.tbl_name,
                ws.commit_id > txn_id, ws.txn_id != txn_id,
                ws.operation.in_(sorted(WRITE_SET_OPERATIONS)), sa.or_(*overlap))
            .order_by(ws.commit_id).limit(1)).first()

    def abort_transaction(self, txn_id: int, reason: str = "") -> None:
        """Abort (Hive ``TxnHandler.abortTxn``): the transaction's write ids become aborted
        (invisible to readers, see :meth:`valid_write_ids`), its locks are released, its
        components are kept for the cleaner. Aborting an aborted transaction does nothing.

        Raises:
            NoSuchTransactionError: unknown id.
            TxnNotOpenError: already committed.
        """
        now = _utcnow()

        def fn(conn):
            row = self._txn_row(conn, txn_id, for_update=True)
            if row.txn_state == "aborted":
                return None
            if row.txn_state == "committed":
                raise TxnNotOpenError(txn_id, row.txn_state)
            self._abort_rows(conn, [txn_id], reason or "aborted by caller", now)
            return None

        self._run(fn)

    def _txn_infos(self, conn: sa.Connection, rows) -> list[TxnInfo]:
        ids = [r.txn_id for r in rows]
        write_ids: dict[int, dict[str, int]] = {i: {} for i in ids}
        if ids:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                for r in conn.execute(sa.select(m.TxnToWriteId.__table__).where(
                        m.TxnToWriteId.txn_id.in_(chunk))):
                    write_ids[r.txn_id][f"{r.db_name}.{r.tbl_name}"] = r.write_id
        return [TxnInfo(
            txn_id=r.txn_id, state=r.txn_state, user=r.txn_user, host=r.txn_host,
            agent_info=r.txn_agent_info, started_at=r.txn_started,
            last_heartbeat=r.txn_last_heartbeat, committed_at=r.txn_committed,
            aborted_at=r.txn_aborted, abort_reason=r.txn_abort_reason,
            write_ids=dict(sorted(write_ids[r.txn_id].items())), commit_id=r.txn_commit_id,
            heartbeat_count=r.txn_heartbeat_count) for r in rows]

    def get_transaction(self, txn_id: int) -> TxnInfo:
        """State and details of one transaction.

        Raises:
            NoSuchTransactionError: unknown id.
        """
        return self._run(lambda conn: self._txn_infos(conn, [self._txn_row(conn, txn_id)])[0],
                         write=False)

    def list_transactions(self, states: Iterable[str] | None = None) -> list[TxnInfo]:
        """Transactions in id order, optionally only those in ``states`` (``"open"``,
        ``"committed"``, ``"aborted"``) (Hive ``SHOW TRANSACTIONS``).

        Raises:
            ValueError: unknown state.
        """
        if isinstance(states, str):
            states = [states]
        wanted = None if states is None else sorted(set(states))
        if wanted is not None and set(wanted) - set(TXN_STATES):
            raise ValueError(f"unknown transaction states {wanted}; expected {TXN_STATES}")

        def fn(conn):
            q = sa.select(m.Txn.__table__).order_by(m.Txn.txn_id)
            if wanted is not None:
                q = q.where(m.Txn.txn_state.in_(wanted))
            return self._txn_infos(conn, conn.execute(q).all())

        return self._run(fn, write=False)

    # ====================================================================================
    # Snapshots
    # ====================================================================================
    def _write_id_snapshot(self, table_name: str, txn_id: int | None = None,
                           as_of_write_id: int | None = None
                           ) -> tuple[str, int, tuple[int, ...], tuple[int, ...], int | None]:
        """Raw ``(table, high_watermark, open_write_ids, aborted_write_ids, min_open_write_id)``
        behind :meth:`valid_write_ids` (sorted tuples)."""
        if as_of_write_id is not None and as_of_write_id < 0:
            raise ValueError(f"as_of_write_id must be >= 0, got {as_of_write_id}")
        db, tbl = split_table_name(table_name)

        def fn(conn):
            self._tbl_row(conn, db, tbl)
            if txn_id is not None:
                self._txn_row(conn, txn_id)
            hwm = conn.execute(sa.select(m.NextWriteId.nwi_next).where(
                m.NextWriteId.db_name == db, m.NextWriteId.tbl_name == tbl)).scalar_one() - 1
            if as_of_write_id is not None:
                hwm = min(hwm, as_of_write_id)
            rows = conn.execute(
                sa.select(m.TxnToWriteId.write_id, m.TxnToWriteId.txn_id, m.Txn.txn_state)
                .join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id)
                .where(m.TxnToWriteId.db_name == db, m.TxnToWriteId.tbl_name == tbl,
                       m.TxnToWriteId.write_id <= hwm,
                       m.Txn.txn_state.in_(("open", "aborted")))
                .order_by(m.TxnToWriteId.write_id)).all()
            open_ids = tuple(r.write_id for r in rows
                             if r.txn_state == "open" and r.txn_id != txn_id)
            aborted = tuple(r.write_id for r in rows
                            if r.txn_state == "aborted" and r.txn_id != txn_id)
            return (f"{db}.{tbl}", hwm, open_ids, aborted, open_ids[0] if open_ids else None)

        return self._run(fn, write=False)

    def valid_write_ids(self, table_name: str, txn_id: int | None = None,
                        as_of_write_id: int | None = None):
        """The reader's snapshot of a table (Hive ``getValidWriteIds`` ->
        ``ValidReaderWriteIdList``, see hive-acid-format.md §6).

        * high watermark = the highest write id allocated for the table, or
          ``as_of_write_id`` if smaller (time travel);
        * exceptions = write ids <= high watermark whose transaction is open (``open_write_ids``)
          or aborted (``aborted_write_ids``), ascending;
        * the write id of ``txn_id`` (the caller's own transaction) is valid, not an exception,
          so a transaction reads its own writes;
        * ``min_open_write_id`` = lowest open exception, ``None`` when there is none.

        Returns:
            ``acidflow.acid.layout.ValidWriteIdList``.
        Raises:
            NoSuchTableError, NoSuchTransactionError (``txn_id`` unknown),
            ValueError (negative ``as_of_write_id``).
        """
        from acidflow.acid.layout import ValidWriteIdList

        name, hwm, open_ids, aborted, min_open = self._write_id_snapshot(
            table_name, txn_id, as_of_write_id)
        return ValidWriteIdList(name, hwm, open_write_ids=open_ids, aborted_write_ids=aborted,
                                min_open_write_id=min_open)

    def write_id_states(self, table_name: str) -> list[tuple[int, int, str]]:
        """Every allocated write id of a table as ``(write_id, txn_id, state)`` in write id
        order; state is the owning transaction's (``"open"``, ``"committed"``, ``"aborted"``).

        Raises:
            NoSuchTableError: unknown table.
        """
        db, tbl = split_table_name(table_name)

        def fn(conn):
            self._tbl_row(conn, db, tbl)
            rows = conn.execute(
                sa.select(m.TxnToWriteId.write_id, m.TxnToWriteId.txn_id, m.Txn.txn_state)
                .join(m.Txn, m.Txn.txn_id == m.TxnToWriteId.txn_id, isouter=True)
                .where(m.TxnToWriteId.db_name == db, m.TxnToWriteId.tbl_name == tbl)
                .order_by(m.TxnToWriteId.write_id)).all()
            return [(r.write_id, r.txn_id, r.txn_state or "committed") for r in rows]

        return self._run(fn, write=False)

    def commit_records(self, table_name: str) -> list[CommitRecord]:
        """Commit records of a table in write id order (one per committed transaction that
        allocated a write id for it).

        Raises:
            NoSuchTableError: unknown table.
        """
        db, tbl = split_table_name(table_name)

        def fn(conn):
            self._tbl_row(conn, db, tbl)
            rows = conn.execute(sa.select(m.CommitRecordRow.__table__).where(
                m.CommitRecordRow.db_name == db, m.CommitRecordRow.tbl_name == tbl)
                .order_by(m.CommitRecordRow.write_id)).all()
            return [CommitRecord(
                table=f"{db}.{tbl}", write_id=r.write_id, txn_id=r.txn_id,
                commit_id=r.commit_id, committed_at=r.committed_at,
                operations=list(r.operations or []), stats=dict(r.stats or {})) for r in rows]

        return self._run(fn, write=False)

    # ====================================================================================
    # Batches (idempotence records)
    # ====================================================================================
    @staticmethod
    def _batch_infos(conn: sa.Connection, rows) -> list[BatchInfo]:
        out = []
        for r in rows:
            t = conn.execute(sa.select(m.Txn.txn_state, m.Txn.txn_committed)
                             .where(m.Txn.txn_id == r.txn_id)).first()
            out.append(BatchInfo(batch_id=r.batch_id, kind=r.kind, txn_id=r.txn_id,
                                 state=t.txn_state if t else "aborted",
                                 registered_at=r.registered_at, source=r.source,
                                 details=dict(r.details or {}),
                                 committed_at=t.txn_committed if t else None))
        return out

    def register_batch(self, txn_id: int, batch_id: str, kind: str, *,
                       source: str | None = None, details: dict[str, Any] | None = None
                       ) -> BatchInfo:
        """Claim ``batch_id`` for the open transaction ``txn_id``. The claim becomes an
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
        if not batch_id or len(batch_id) > 128:
            raise ValueError(f"batch id must be 1..128 characters, got {batch_id!r}")
        self.abort_timed_out_transactions()
        now = _utcnow()

        def fn(conn):
            self._open_txn_row(conn, txn_id)
            row = conn.execute(sa.select(m.BatchRow.__table__).where(
                m.BatchRow.batch_id == batch_id).with_for_update()).first()
            values = dict(kind=kind, txn_id=txn_id, registered_at=now, source=source,
                          details=details or {})
            if row is not None and row.txn_id != txn_id:
                prev = self._batch_infos(conn, [row])[0]
                if prev.state == "committed":
                    return _Deferred(BatchAlreadyAppliedError(batch_id, prev.txn_id,
                                                              prev.committed_at))
                if prev.state == "open":
                    return _Deferred(BatchInProgressError(batch_id, prev.txn_id))
                conn.execute(sa.update(m.BatchRow).where(
                    m.BatchRow.batch_id == batch_id).values(**values))
            elif row is None:
                conn.execute(sa.insert(m.BatchRow).values(batch_id=batch_id, **values))
            else:
                conn.execute(sa.update(m.BatchRow).where(
                    m.BatchRow.batch_id == batch_id).values(**values))
            return BatchInfo(batch_id=batch_id, state="open", committed_at=None, **values)

        try:
            return self._run(fn)
        except sa.exc.IntegrityError:
            # a concurrent claim inserted the row first: report its state
            return self._run(fn)

    def get_batch(self, batch_id: str) -> BatchInfo | None:
        """The record of ``batch_id`` with its transaction's state, or ``None``."""
        def fn(conn):
            rows = conn.execute(sa.select(m.BatchRow.__table__).where(
                m.BatchRow.batch_id == batch_id)).all()
            return self._batch_infos(conn, rows)[0] if rows else None

        return self._run(fn, write=False)

    def list_batches(self, kind: str | None = None) -> list[BatchInfo]:
        """Batch records in registration order, optionally of one ``kind``."""
        def fn(conn):
            q = sa.select(m.BatchRow.__table__).order_by(m.BatchRow.registered_at,
                                                         m.BatchRow.batch_id)
            if kind is not None:
                q = q.where(m.BatchRow.kind == kind)
            return self._batch_infos(conn, conn.execute(q).all())

        return self._run(fn, write=False)

    # -- CDC tombstones --------------------------------------------------------------------
    @staticmethod
    def _key_hash(key_json: str) -> str:
        import hashlib

        return hashlib.sha256(key_json.encode("utf-8")).hexdigest()

    def add_tombstones(self, txn_id: int, table_name: str,
                       entries: list[tuple[str, str]]) -> None:
        """Record CDC deletes of the open transaction: ``[(key as canonical JSON, ordering
        value of the delete)]``. They count once the transaction commits.

        Raises:
            NoSuchTransactionError, TxnAbortedError, TxnNotOpenError: ``txn_id`` is not open.
        """
        if not entries:
            return
        db, tbl = split_table_name(table_name)
        now = _utcnow()
        latest: dict[str, tuple[str, str]] = {}
        for key_json, position in entries:
            h = self._key_hash(key_json)
            if h not in latest or position > latest[h][1]:
                latest[h] = (key_json, position)

        def fn(conn):
            self._open_txn_row(conn, txn_id)
            hashes = list(latest)
            for i in range(0, len(hashes), 500):
                conn.execute(sa.delete(m.CdcTombstone).where(
                    m.CdcTombstone.db_name == db, m.CdcTombstone.tbl_name == tbl,
                    m.CdcTombstone.txn_id == txn_id,
                    m.CdcTombstone.key_hash.in_(hashes[i:i + 500])))
            conn.execute(sa.insert(m.CdcTombstone), [
                {"db_name": db, "tbl_name": tbl, "key_hash": h, "txn_id": txn_id,
                 "key_json": kj, "position": pos, "created_at": now}
                for h, (kj, pos) in latest.items()])

        self._run(fn)

    def tombstones(self, table_name: str, key_jsons: list[str]) -> dict[str, str]:
        """Largest committed delete position per key among ``key_jsons`` (keys never deleted
        by CDC are absent)."""
        db, tbl = split_table_name(table_name)
        by_hash = {self._key_hash(k): k for k in key_jsons}

        def fn(conn):
            base = (sa.select(m.CdcTombstone.key_hash, sa.func.max(m.CdcTombstone.position))
                    .join(m.Txn, m.Txn.txn_id == m.CdcTombstone.txn_id)
                    .where(m.CdcTombstone.db_name == db, m.CdcTombstone.tbl_name == tbl,
                           m.Txn.txn_state == "committed"))
            probe = (sa.select(m.CdcTombstone.key_hash)
                     .where(m.CdcTombstone.db_name == db, m.CdcTombstone.tbl_name == tbl)
                     .limit(1))
            if conn.execute(probe).first() is None:
                return {}
            out: dict[str, str] = {}
            hashes = list(by_hash)
            for i in range(0, len(hashes), 500):
                q = base.where(m.CdcTombstone.key_hash.in_(hashes[i:i + 500])) \
                    .group_by(m.CdcTombstone.key_hash)
                for h, pos in conn.execute(q):
                    if pos is not None:
                        out[by_hash[h]] = pos
            return out

        return self._run(fn, write=False)

    # ====================================================================================
    # Locks
    # ====================================================================================
    def acquire_lock(self, txn_id: int, table_name: str, partition: str | None,
                     lock_type: str, timeout_s: float = 60.0) -> int:
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
            lock_type: ``"shared_read"``, ``"shared_write"`` or ``"exclusive"``.
            timeout_s: seconds to wait before giving up.
        Returns:
            The lock id (state ``"acquired"``); an identical lock the transaction already
            holds is returned instead of a new one.
        Raises:
            LockTimeoutError: not granted within ``timeout_s``; the request was removed.
            ValueError: unknown lock type, bad partition spec.
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """
        if lock_type not in LOCK_TYPES:
            raise ValueError(f"unknown lock type {lock_type!r}; expected one of {LOCK_TYPES}")
        db, tbl = split_table_name(table_name)
        deadline = time.monotonic() + max(0.0, float(timeout_s))

        def enqueue(conn):
            txn = self._open_txn_row(conn, txn_id)
            part = self._check_partition(conn, db, tbl, partition)
            same_part = (m.HiveLock.part_name.is_(None) if part is None
                         else m.HiveLock.part_name == part)
            held = conn.execute(sa.select(m.HiveLock.lock_id).where(
                m.HiveLock.txn_id == txn_id, m.HiveLock.db_name == db,
                m.HiveLock.tbl_name == tbl, same_part, m.HiveLock.lock_type == lock_type,
                m.HiveLock.lock_state == "acquired")).scalar()
            if held is not None:
                return held, part, None
            lock_id = conn.execute(sa.select(m.NextLockId.nl_next).where(m.NextLockId.id == 1)
                                   .with_for_update()).scalar_one()
            conn.execute(sa.update(m.NextLockId).where(m.NextLockId.id == 1)
                         .values(nl_next=lock_id + 1))
            now = _utcnow()
            conn.execute(sa.insert(m.HiveLock).values(
                lock_id=lock_id, txn_id=txn_id, db_name=db, tbl_name=tbl, part_name=part,
                lock_type=lock_type, lock_state="waiting", requested_at=now, acquired_at=None,
                last_heartbeat=now, lock_user=txn.txn_user, lock_host=txn.txn_host,
                agent_info=txn.txn_agent_info))
            blocker = self._grant(conn, lock_id, txn_id, db, tbl, part, lock_type, now)
            return lock_id, part, blocker

        lock_id, part, blocker = self._run(enqueue)
        sleep = 0.02
        while blocker is not None:
            if time.monotonic() >= deadline:
                self._run(lambda conn: conn.execute(sa.delete(m.HiveLock).where(
                    m.HiveLock.lock_id == lock_id, m.HiveLock.lock_state == "waiting")))
                raise LockTimeoutError(txn_id, f"{db}.{tbl}", part, lock_type, timeout_s,
                                       blocker[0], blocker[1])
            time.sleep(min(sleep, max(0.0, deadline - time.monotonic())))
            sleep = min(sleep * 1.5, 0.5)

            def poll(conn):
                # An abort/commit meanwhile has already deleted our request; just raise.
                self._open_txn_row(conn, txn_id)
                now = _utcnow()
                conn.execute(sa.update(m.Txn).where(m.Txn.txn_id == txn_id)
                             .values(txn_last_heartbeat=now))
                conn.execute(sa.select(m.NextLockId.nl_next).where(m.NextLockId.id == 1)
                             .with_for_update())
                return self._grant(conn, lock_id, txn_id, db, tbl, part, lock_type, now)

            blocker = self._run(poll)
        return lock_id

    @staticmethod
    def _grant(conn: sa.Connection, lock_id: int, txn_id: int, db: str, tbl: str,
               part: str | None, lock_type: str, now: datetime) -> tuple[int, int] | None:
        """Grant the waiting lock if nothing blocks it; else return ``(lock_id, txn_id)`` of
        a blocker. Caller holds the ``next_lock_id`` row lock (Hive's CheckLock mutex)."""
        others = conn.execute(sa.select(
            m.HiveLock.lock_id, m.HiveLock.txn_id, m.HiveLock.part_name, m.HiveLock.lock_type,
            m.HiveLock.lock_state).where(
            m.HiveLock.db_name == db, m.HiveLock.tbl_name == tbl, m.HiveLock.txn_id != txn_id)
            .order_by(m.HiveLock.lock_id)).all()
        for other in others:
            if part is not None and other.part_name is not None and other.part_name != part:
                continue  # different partitions
            if lock_type != "exclusive" and other.lock_type != "exclusive":
                continue  # shared_read / shared_write are mutually compatible
            if other.lock_state == "acquired" or other.lock_id < lock_id:
                return other.lock_id, other.txn_id
        conn.execute(sa.update(m.HiveLock).where(m.HiveLock.lock_id == lock_id).values(
            lock_state="acquired", acquired_at=now, last_heartbeat=now))
        return None

    def release_locks(self, txn_id: int) -> None:
        """Release every lock (acquired or waiting) of the transaction without ending it.

        Raises:
            NoSuchTransactionError: unknown id.
        """

        def fn(conn):
            self._txn_row(conn, txn_id, for_update=True)
            conn.execute(sa.delete(m.HiveLock).where(m.HiveLock.txn_id == txn_id))

        self._run(fn)

    def list_locks(self, table_name: str | None = None) -> list[LockInfo]:
        """Current lock requests in lock id order, optionally of one table (Hive
        ``SHOW LOCKS``)."""

        def fn(conn):
            q = sa.select(m.HiveLock.__table__).order_by(m.HiveLock.lock_id)
            if table_name is not None:
                db, tbl = split_table_name(table_name)
                q = q.where(m.HiveLock.db_name == db, m.HiveLock.tbl_name == tbl)
            return [LockInfo(
                lock_id=r.lock_id, txn_id=r.txn_id, table=f"{r.db_name}.{r.tbl_name}",
                partition=r.part_name, lock_type=r.lock_type, state=r.lock_state,
                requested_at=r.requested_at, acquired_at=r.acquired_at,
                last_heartbeat=r.last_heartbeat, user=r.lock_user, host=r.lock_host,
                agent_info=r.agent_info) for r in conn.execute(q)]

        return self._run(fn, write=False)

    # ====================================================================================
    # Housekeeping
    # ====================================================================================
    def abort_timed_out_transactions(self, now: datetime | None = None) -> list[int]:
        """The housekeeper (Hive ``AcidHouseKeeperService`` -> ``TxnHandler.performTimeOuts``):
        abort every open transaction whose last heartbeat is older than ``txn_timeout_s`` and
        drop its locks; abort reason ``"timed out"``. Transactions busy committing at that
        moment (row locked) are skipped on PostgreSQL.

        Args:
            now: the reference time (UTC; naive = UTC); default the current time.
        Returns:
            Ids of the transactions aborted, ascending.
        """
        now = _as_utc(now) if now is not None else _utcnow()
        cutoff = now - timedelta(seconds=self.txn_timeout_s)

        def fn(conn):
            ids = [r.txn_id for r in conn.execute(
                sa.select(m.Txn.txn_id).where(m.Txn.txn_state == "open",
                                              m.Txn.txn_last_heartbeat < cutoff)
                .order_by(m.Txn.txn_id).with_for_update(skip_locked=True))]
            self._abort_rows(conn, ids, "timed out", now)
            return ids

        return self._run(fn)


def _default_user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # pragma: no cover - no passwd entry
        return None
