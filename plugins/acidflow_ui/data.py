"""The data layer of the "ACID tables" page: read-only views of the transaction catalog and of
the tables' directories, as plain dataclasses (no Airflow, no HTML).

Everything here reads; nothing writes to the catalog or the warehouse (no migration, no
housekeeping, no reader registration). Sources:

* the catalog (:class:`acidflow.catalog.Catalog`): tables, ValidWriteIdList (high watermark, open
  and aborted write ids), transactions (SHOW TRANSACTIONS), locks (SHOW LOCKS), the compaction
  queue and history (SHOW COMPACTIONS), commit records, batch records;
* the files: Hive's ``getAcidState`` per partition directory at the current snapshot
  (:func:`acidflow.format.layout.get_acid_state`, the same selection a reader makes), file sizes from
  the directory listing.

Times are aware UTC ``datetime`` objects; sizes are bytes; durations are seconds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from acidflow.catalog import Catalog, CompactionState, TxnState
from acidflow.format.layout import bucket_files
from acidflow.read.snapshot import split_partitions
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state

#: Aborted transactions older than this are left off the transactions view by default.
DEFAULT_ABORTED_WINDOW = timedelta(hours=24)
#: SHOW COMPACTIONS states of an entry no worker has finished yet.
QUEUED_STATES = (CompactionState.INITIATED, CompactionState.WORKING)


def _now() -> datetime:
    return datetime.now(timezone.utc)


# ============================================================================================
# Shapes
# ============================================================================================


@dataclass(frozen=True)
class CompactionRow:
    """One SHOW COMPACTIONS line.

    Attributes:
        id: compaction id (queue id); table: ``db.table``; partition: spec or ``None``.
        type: ``"major"`` / ``"minor"``; state: Hive's word (``initiated``, ``working``,
            ``ready for cleaning``, ``succeeded``, ``failed``, ``did not initiate``, ``refused``).
        worker_id: the worker that claimed it, or ``None``.
        enqueued_at, started_at, ended_at: UTC times or ``None``.
        duration_s: ``ended_at - started_at`` in seconds; for an entry still ``working``, the
            time since it started (``running`` is then True); ``None`` when not started.
        highest_write_id: the compactor's high watermark, or ``None``.
        error: failure or refusal message, or ``None``.
    """

    id: int
    table: str
    partition: str | None
    type: str
    state: str
    worker_id: str | None
    enqueued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    duration_s: float | None
    running: bool
    highest_write_id: int | None
    error: str | None


@dataclass(frozen=True)
class PartitionState:
    """The current AcidState of one partition directory (``""`` = unpartitioned table).

    Attributes:
        partition: spec (``"ds=2024-01-01"``) or ``""``.
        base: name of the chosen base (``base_W``) or ``None``; base_bytes: bytes of its bucket
            files (original files count too when there is no base).
        deltas, delete_deltas: names of the current delta and delete delta directories.
        delta_bytes: bytes of the bucket files of every current delta and delete delta.
        obsolete, aborted: names a cleaner may remove (superseded; written by aborted write ids).
    """

    partition: str
    base: str | None
    base_bytes: int
    deltas: list[str]
    delete_deltas: list[str]
    delta_bytes: int
    obsolete: list[str]
    aborted: list[str]


@dataclass(frozen=True)
class TableSummary:
    """One line of the tables view.

    Attributes:
        name: ``db.table``; location: table root.
        high_watermark: the highest write id allocated for the table.
        valid_write_ids: the ValidWriteIdList in Hive's string form.
        open_txn_ids: open transactions holding a write id on the table, ascending;
            open_write_ids: their write ids, ascending.
        aborted_write_ids: aborted write ids still listed in the snapshot.
        partitions: partition directories found (1 for an unpartitioned table with files).
        deltas, delete_deltas: current delta / delete delta directories, summed over partitions.
        base_bytes: bytes of the current base files, summed over partitions.
        delta_bytes: bytes of the current delta and delete delta files, summed.
        last_compaction: the newest SHOW COMPACTIONS entry of the table that a worker got
            past (``ready for cleaning``, ``succeeded``, ``failed``, ``did not initiate``,
            ``refused``), or ``None``.
        queued_compaction: the newest ``initiated`` or ``working`` entry, or ``None``.
        error: why the AcidState could not be computed (``None`` when it was).
    """

    name: str
    location: str
    high_watermark: int
    valid_write_ids: str
    open_txn_ids: list[int]
    open_write_ids: list[int]
    aborted_write_ids: list[int]
    partitions: int
    deltas: int
    delete_deltas: int
    base_bytes: int
    delta_bytes: int
    last_compaction: CompactionRow | None
    queued_compaction: CompactionRow | None = None
    error: str | None = None

    @property
    def open_txns(self) -> int:
        """Number of open transactions with a write id on the table."""
        return len(self.open_txn_ids)


@dataclass(frozen=True)
class CommitRow:
    """One commit of one table (from its commit record).

    Attributes:
        write_id, txn_id, commit_id: ids; committed_at: UTC time.
        operations: ``insert``, ``update``, ``delete``, ``insert_overwrite`` (as registered).
        rows_inserted, rows_updated, rows_deleted, files, bytes: the writer's statistics
            (``None`` when the writer recorded none).
        batch_id: the CDC / ingest batch the transaction applied, or ``None``.
    """

    write_id: int
    txn_id: int
    commit_id: int
    committed_at: datetime
    operations: list[str]
    rows_inserted: int | None
    rows_updated: int | None
    rows_deleted: int | None
    files: int | None
    bytes: int | None
    batch_id: str | None


@dataclass(frozen=True)
class TxnRow:
    """One SHOW TRANSACTIONS line.

    Attributes:
        txn_id, state (``open`` / ``aborted`` / ``committed``), started_at, last_heartbeat,
        ended_at (abort or commit time), abort_reason, user, host, agent_info,
        write_ids: ``{"db.table": write id}``.
    """

    txn_id: int
    state: str
    started_at: datetime
    last_heartbeat: datetime | None
    ended_at: datetime | None
    abort_reason: str | None
    user: str | None
    host: str | None
    agent_info: str | None
    write_ids: dict[str, int]


@dataclass(frozen=True)
class LockRow:
    """One SHOW LOCKS line: lock id, table, partition (``None`` = whole table), state
    (``acquired`` / ``waiting``), type (``shared_read`` / ``shared_write`` / ``exclusive``),
    txn id, times, user, host, agent."""

    lock_id: int
    table: str
    partition: str | None
    state: str
    lock_type: str
    txn_id: int
    requested_at: datetime | None
    acquired_at: datetime | None
    last_heartbeat: datetime | None
    user: str | None
    host: str | None
    agent_info: str | None


@dataclass(frozen=True)
class Overview:
    """Everything the main page shows, read at ``read_at`` (UTC)."""

    read_at: datetime
    tables: list[TableSummary]
    compactions: list[CompactionRow]
    transactions: list[TxnRow]
    locks: list[LockRow]


@dataclass(frozen=True)
class TableDetail:
    """A table's page.

    Attributes:
        summary: its :class:`TableSummary`.
        columns, partition_columns: ``(name, Hive type)`` pairs; primary_key: column names;
        num_buckets: 0 = unbucketed; properties: TBLPROPERTIES.
        partitions: current :class:`PartitionState` per partition directory.
        commits: commit history in write id order.
        write_ids: every allocated write id as ``(write id, txn id, state)``.
        compactions: the table's SHOW COMPACTIONS entries in id order.
    """

    summary: TableSummary
    columns: list[tuple[str, str]]
    partition_columns: list[tuple[str, str]]
    primary_key: list[str]
    num_buckets: int
    properties: dict[str, str]
    partitions: list[PartitionState]
    commits: list[CommitRow]
    write_ids: list[tuple[int, int, str]]
    compactions: list[CompactionRow]


class CatalogNotReadyError(RuntimeError):
    """The catalog database has no acidflow schema yet (never migrated)."""


# ============================================================================================
# Conversions (pure)
# ============================================================================================


def compaction_row(c: Any, now: datetime | None = None) -> CompactionRow:
    """A :class:`CompactionRow` from a ``acidflow.catalog.CompactionInfo``; ``now`` (UTC) is the
    reference time for the duration of a ``working`` entry."""
    running = c.state == CompactionState.WORKING and c.ended_at is None
    duration = None
    if c.started_at is not None:
        end = c.ended_at or ((now or _now()) if running else None)
        if end is not None:
            duration = max(0.0, (end - c.started_at).total_seconds())
    return CompactionRow(
        id=c.id,
        table=c.table,
        partition=c.partition,
        type=c.type,
        state=c.state,
        worker_id=c.worker_id,
        enqueued_at=c.enqueued_at,
        started_at=c.started_at,
        ended_at=c.ended_at,
        duration_s=duration,
        running=running,
        highest_write_id=c.highest_write_id,
        error=c.error,
    )


def _int_or_none(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def commit_row(rec: Any, batch_by_txn: dict[int, str] | None = None) -> CommitRow:
    """A :class:`CommitRow` from a ``acidflow.catalog.CommitRecord`` and a ``{txn id: batch id}``
    map (committed batches)."""
    st = rec.stats or {}
    return CommitRow(
        write_id=rec.write_id,
        txn_id=rec.txn_id,
        commit_id=rec.commit_id,
        committed_at=rec.committed_at,
        operations=list(rec.operations or []),
        rows_inserted=_int_or_none(st.get("rows_inserted")),
        rows_updated=_int_or_none(st.get("rows_updated")),
        rows_deleted=_int_or_none(st.get("rows_deleted")),
        files=_int_or_none(st.get("files")),
        bytes=_int_or_none(st.get("bytes")),
        batch_id=(batch_by_txn or {}).get(rec.txn_id),
    )


def txn_row(t: Any) -> TxnRow:
    """A :class:`TxnRow` from a ``acidflow.catalog.TxnInfo``."""
    return TxnRow(
        txn_id=t.txn_id,
        state=t.state,
        started_at=t.started_at,
        last_heartbeat=t.last_heartbeat,
        ended_at=t.aborted_at or t.committed_at,
        abort_reason=t.abort_reason,
        user=t.user,
        host=t.host,
        agent_info=t.agent_info,
        write_ids=dict(t.write_ids or {}),
    )


def lock_row(lk: Any) -> LockRow:
    """A :class:`LockRow` from a ``acidflow.catalog.LockInfo``."""
    return LockRow(
        lock_id=lk.lock_id,
        table=lk.table,
        partition=lk.partition,
        state=lk.state,
        lock_type=lk.lock_type,
        txn_id=lk.txn_id,
        requested_at=lk.requested_at,
        acquired_at=lk.acquired_at,
        last_heartbeat=lk.last_heartbeat,
        user=lk.user,
        host=lk.host,
        agent_info=lk.agent_info,
    )


def recent_transactions(
    txns: Iterable[TxnRow],
    *,
    now: datetime | None = None,
    aborted_window: timedelta | None = DEFAULT_ABORTED_WINDOW,
) -> list[TxnRow]:
    """Open transactions plus those aborted within ``aborted_window`` of ``now`` (every aborted
    one when the window is ``None``), in txn id order. Committed ones are left out."""
    now = now or _now()
    out = []
    for t in txns:
        if t.state == TxnState.OPEN:
            out.append(t)
        elif t.state == TxnState.ABORTED and (
            aborted_window is None or t.ended_at is None or now - t.ended_at <= aborted_window
        ):
            out.append(t)
    return sorted(out, key=lambda t: t.txn_id)


# ============================================================================================
# Reading
# ============================================================================================


def partition_states(table: Any, valid: Any) -> list[PartitionState]:
    """Current AcidState of every partition directory of ``table`` (a ``TableDef``) at the
    snapshot ``valid`` (a ``ValidWriteIdList``), with sizes from one recursive listing.

    Raises:
        acidflow.format.layout.NotEnoughHistoryError: a partition has no usable base for ``valid``.
        ValueError: a ``base_``/``delta_`` name that does not parse.
        OSError: the table location cannot be listed.
    """
    tfs = TableFS(table.location)
    grouped = split_partitions(tfs.list_recursive(table.location), len(table.partition_columns))
    out = []
    for part in sorted(grouped):
        entries = grouped[part]
        if not entries:
            continue
        pdir = join(table.location, part) if part else table.location
        state = acid_state(tfs, pdir, valid, entries=entries)
        sizes = {e.path: e.size for e in entries if not e.is_dir}
        if state.base is not None:
            base_bytes = sum(sizes.get(rel, 0) for rel, _ in bucket_files(entries, state.base.name))
        else:
            base_bytes = sum(sizes.get(rel, 0) for rel in state.original_files)
        delta_bytes = sum(
            sizes.get(rel, 0) for d in state.deltas for rel, _ in bucket_files(entries, d.name)
        )
        out.append(
            PartitionState(
                partition=part,
                base=state.base.name if state.base else None,
                base_bytes=base_bytes,
                deltas=[d.name for d in state.deltas if not d.is_delete],
                delete_deltas=[d.name for d in state.deltas if d.is_delete],
                delta_bytes=delta_bytes,
                obsolete=list(state.obsolete),
                aborted=list(state.aborted),
            )
        )
    return out


class AcidUiData:
    """Read-only queries behind the page.

    Args:
        catalog: a ``acidflow.catalog.Catalog`` (build it with ``migrate=False``: this layer never
            changes the catalog; :meth:`from_settings` does).
        aborted_window: how far back the transactions view lists aborted transactions.
    """

    def __init__(
        self, catalog: Any, *, aborted_window: timedelta | None = DEFAULT_ABORTED_WINDOW
    ) -> None:
        self.catalog = catalog
        self.aborted_window = aborted_window

    @classmethod
    def from_settings(cls, settings: Any = None, **kwargs: Any) -> "AcidUiData":
        """From ``acidflow.config.load_settings()`` (``ACIDFLOW_CATALOG_URL``,
        ``ACIDFLOW_WAREHOUSE``), without migrating the catalog."""
        return cls(Catalog.from_settings(settings, migrate=False), **kwargs)

    def check_ready(self) -> None:
        """Raise :class:`CatalogNotReadyError` when the catalog has no schema yet."""
        try:
            rev = self.catalog.current_revision()
        except Exception as exc:  # noqa: BLE001 - unreachable database, bad URL...
            raise CatalogNotReadyError(f"catalog {self.catalog!r} cannot be read: {exc}") from exc
        if rev is None:
            raise CatalogNotReadyError(
                f"catalog {self.catalog!r} has no acidflow schema yet (run any acidflow job "
                "or `acidflow tables` once to create it)"
            )

    # -- pieces --------------------------------------------------------------------------
    def compactions(
        self, table: str | None = None, *, now: datetime | None = None
    ) -> list[CompactionRow]:
        """SHOW COMPACTIONS (queue and history) in compaction id order, optionally of one
        table."""
        now = now or _now()
        return [compaction_row(c, now) for c in self.catalog.list_compactions(table)]

    def transactions(self, *, now: datetime | None = None) -> list[TxnRow]:
        """Open transactions and those aborted within ``aborted_window``, in txn id order."""
        rows = [
            txn_row(t)
            for t in self.catalog.list_transactions(states=[TxnState.OPEN, TxnState.ABORTED])
        ]
        return recent_transactions(rows, now=now, aborted_window=self.aborted_window)

    def locks(self) -> list[LockRow]:
        """SHOW LOCKS in lock id order."""
        return [lock_row(lk) for lk in self.catalog.list_locks()]

    def _summary(
        self, table: Any, open_txns_by_table: dict[str, list[int]], comps: list[CompactionRow]
    ) -> tuple[TableSummary, list[PartitionState]]:
        valid = self.catalog.valid_write_ids(table.name)
        error = None
        parts: list[PartitionState] = []
        try:
            parts = partition_states(table, valid)
        except Exception as exc:  # noqa: BLE001 - shown on the page, the rest still renders
            error = f"{type(exc).__name__}: {exc}"
        summary = TableSummary(
            name=table.name,
            location=table.location,
            high_watermark=valid.high_watermark,
            valid_write_ids=valid.to_string(),
            open_txn_ids=sorted(open_txns_by_table.get(table.name, [])),
            open_write_ids=sorted(valid.open_write_ids),
            aborted_write_ids=sorted(valid.aborted_write_ids),
            partitions=len(parts),
            deltas=sum(len(p.deltas) for p in parts),
            delete_deltas=sum(len(p.delete_deltas) for p in parts),
            base_bytes=sum(p.base_bytes for p in parts),
            delta_bytes=sum(p.delta_bytes for p in parts),
            last_compaction=max(
                (c for c in comps if c.state not in QUEUED_STATES), key=lambda c: c.id, default=None
            ),
            queued_compaction=max(
                (c for c in comps if c.state in QUEUED_STATES), key=lambda c: c.id, default=None
            ),
            error=error,
        )
        return summary, parts

    def _open_txns_by_table(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for t in self.catalog.list_transactions(states=[TxnState.OPEN]):
            for name in t.write_ids or {}:
                out[name].append(t.txn_id)
        return out

    # -- pages ---------------------------------------------------------------------------
    def tables(self, *, compactions: list[CompactionRow] | None = None) -> list[TableSummary]:
        """One :class:`TableSummary` per catalog table, by name. ``compactions`` (SHOW
        COMPACTIONS rows) saves a second query when the caller has them."""
        comps = self.compactions() if compactions is None else compactions
        per_table: dict[str, list[CompactionRow]] = defaultdict(list)
        for c in comps:
            per_table[c.table].append(c)
        by_table = self._open_txns_by_table()
        return [
            self._summary(t, by_table, per_table.get(t.name, []))[0]
            for t in sorted(self.catalog.list_tables(), key=lambda t: t.name)
        ]

    def overview(self, *, now: datetime | None = None) -> Overview:
        """Everything on the main page (tables, SHOW COMPACTIONS, transactions, locks)."""
        now = now or _now()
        comps = self.compactions(now=now)
        return Overview(
            read_at=now,
            tables=self.tables(compactions=comps),
            compactions=comps,
            transactions=self.transactions(now=now),
            locks=self.locks(),
        )

    def table(self, name: str, *, now: datetime | None = None) -> TableDetail:
        """A table's page: definition, AcidState per partition, commit history (with batch
        ids), write ids and compactions.

        Raises:
            acidflow.catalog.NoSuchTableError: unknown table; ValueError: malformed name.
        """
        now = now or _now()
        table = self.catalog.get_table(name)
        comps = self.compactions(table.name, now=now)
        summary, parts = self._summary(table, self._open_txns_by_table(), comps)
        batch_by_txn = {
            b.txn_id: b.batch_id
            for b in self.catalog.list_batches()
            if b.state == TxnState.COMMITTED
        }
        commits = [commit_row(r, batch_by_txn) for r in self.catalog.commit_records(table.name)]
        return TableDetail(
            summary=summary,
            columns=[(c.name, c.hive_type) for c in table.columns],
            partition_columns=[(c.name, c.hive_type) for c in table.partition_columns],
            primary_key=list(table.primary_key),
            num_buckets=table.num_buckets,
            properties=dict(table.properties),
            partitions=parts,
            commits=commits,
            write_ids=self.catalog.write_id_states(table.name),
            compactions=comps,
        )


def to_jsonable(value: Any) -> Any:
    """Dataclasses, lists, dicts, tuples and datetimes -> JSON-able values (ISO times)."""
    if is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, TableSummary):
            out["open_txns"] = value.open_txns
        return out
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


__all__ = [
    "AcidUiData",
    "CatalogNotReadyError",
    "CommitRow",
    "CompactionRow",
    "LockRow",
    "Overview",
    "PartitionState",
    "TableDetail",
    "TableSummary",
    "TxnRow",
    "compaction_row",
    "commit_row",
    "lock_row",
    "partition_states",
    "recent_transactions",
    "to_jsonable",
    "txn_row",
]
