"""Partitions the initiator would queue but nobody queued: eligible, not queued, since when.

Hive's own initiator has skipped tables that were eligible (HIVE-26487, HIVE-30026): a partition
over the thresholds stays uncompacted and its deltas pile up with nothing in SHOW COMPACTIONS to
say so. This module asks the initiator itself, in a dry run (:func:`run_initiator` with
``dry_run=True``: the same candidates, the same skips for ``NO_AUTO_COMPACTION`` and for
partitions with an ``initiated`` / ``working`` entry, the same thresholds and table overrides,
nothing queued or recorded), which partitions it would queue now. A partition it would queue is
*unqueued*: no entry is waiting for it.

Since when (:func:`first_eligible_write_id`): the decision is replayed over the partition's
current deltas, newest first, at the high-water marks of their write ids
(``ValidWriteIdList.update_high_watermark``): the oldest write id from which on every state was
eligible is the one whose delta made the partition eligible, and its commit time
(``Catalog.write_id_history``, kept beyond the commit records) is the start. A compaction of the
partition that finished later (``Catalog.compaction_history``) moves the start to its end: the
partition was queued then.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from acidflow.catalog import Catalog, CompactionInfo, TableDef
from acidflow.compactor.config import CompactorConfig
from acidflow.compactor.initiator import MAJOR, MINOR, decide, partition_stats, run_initiator
from acidflow.format.layout import DirEntry, ValidWriteIdList
from acidflow.storage.fs import TableFS
from acidflow.storage.state import acid_state
from acidflow.storage.tablepaths import partition_dir


@dataclass(frozen=True)
class UnqueuedPartition:
    """A partition over the initiator's thresholds with no compaction queued for it.

    Attributes:
        table: ``db.table``; partition: spec (``ds=2024-01-01``) or ``None`` (unpartitioned).
        compaction_type: what the initiator would queue (``"major"`` / ``"minor"``).
        reason: the initiator's reason (the threshold passed).
        deltas, delete_deltas: current delta / delete delta directories (the initiator's
            compactor snapshot).
        eligible_write_id: the write id whose delta made the partition eligible (None when
            no delta did: e.g. original files alone over the small-file rule).
        eligible_since: UTC time since when it has been eligible (the commit of
            ``eligible_write_id``, or the end of a later compaction of the partition); None
            when the catalog knows no such time (a write id older than its history).
    """

    table: str
    partition: str | None
    compaction_type: str
    reason: str
    deltas: int
    delete_deltas: int
    eligible_write_id: int | None
    eligible_since: datetime | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (``eligible_since`` in ISO 8601 or None)."""
        d = asdict(self)
        d["eligible_since"] = self.eligible_since.isoformat() if self.eligible_since else None
        return d


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def first_eligible_write_id(
    table: TableDef,
    partition: str | None,
    valid: ValidWriteIdList,
    aborted_write_ids: Sequence[int],
    config: CompactorConfig,
    *,
    entries: list[DirEntry],
    txn_state: Callable[[int], str] | None = None,
) -> int | None:
    """The write id from which on the initiator's decision (:func:`decide`, no queue entry,
    no failure history) has been "compact" at every commit up to now.

    The partition's current deltas are taken at the compactor's snapshot of ``valid``; the
    decision is replayed at the high-water mark of each distinct delta end write id, newest
    first, over the same listing (deltas above the mark are invisible there; deltas a later
    minor compaction covered reappear while the cleaner has not removed them, as they were).

    Args:
        table: the table; partition: its spec or ``None``.
        valid: the table's ValidWriteIdList now.
        aborted_write_ids: aborted write ids of the partition (counted up to each mark).
        config: the compactor's settings (table overrides applied by the decision).
        entries: the partition directory's recursive listing.
        txn_state: the ``_v<T>`` lookup (``Catalog.visibility_lookup``).
    Returns:
        the write id, or None when the partition is not eligible now or no delta made it so.
    Raises:
        OSError: a file cannot be read (the ``_metadata_acid`` of a base).
    """
    pdir = partition_dir(table, partition)
    state = acid_state(
        TableFS(table.location), pdir, valid.for_compactor(), entries=entries, txn_state=txn_state
    )
    first: int | None = None
    for mark in sorted({d.max_write_id for d in state.deltas}, reverse=True):
        at_mark = valid.update_high_watermark(mark)
        aborted = sum(1 for a in aborted_write_ids if a <= mark)
        stats = partition_stats(table, partition, at_mark, aborted, txn_state, entries=entries)
        verdict = decide(
            table.name,
            partition,
            table.properties,
            active=False,
            history_states=(),
            stats=stats,
            config=config,
        )
        if verdict.action not in (MAJOR, MINOR):
            break
        first = mark
    return first


def eligible_since(
    write_id: int | None,
    commit_times: dict[int, datetime | None],
    history: Sequence[CompactionInfo],
) -> datetime | None:
    """Since when a partition has been eligible and not compacted (pure).

    Args:
        write_id: :func:`first_eligible_write_id`'s answer.
        commit_times: write id -> commit time (``Catalog.write_id_history``); an unknown time
            is taken from the next later write id that has one.
        history: the partition's finished compactions (``Catalog.compaction_history``): the
            end (else the enqueue time) of the newest one, when later, is the start instead.
    Returns:
        aware UTC time, or None when neither gives one.
    """
    since: datetime | None = None
    if write_id is not None:
        known = sorted((w, t) for w, t in commit_times.items() if w >= write_id and t is not None)
        if known:
            since = _utc(known[0][1])
    ends = [_utc(c.ended_at or c.enqueued_at) for c in history]
    if ends:  # eligible through original files only (no write id): the newest end
        since = max(ends) if since is None else max(since, max(ends))
    return since


def unqueued_partitions(
    catalog: Catalog,
    *,
    config: CompactorConfig | None = None,
    table_filter: str | None = None,
) -> list[UnqueuedPartition]:
    """Every partition the initiator would queue now, with its deltas and since when.

    Args:
        catalog: any backend (read only: the initiator runs dry).
        config: compactor settings (default :meth:`CompactorConfig.from_env`, the initiator's).
        table_filter: fnmatch pattern on ``db.table``.
    Returns:
        one entry per partition, in the initiator's candidate order.
    Raises:
        OSError: a partition directory cannot be listed.
    """
    cfg = config or CompactorConfig.from_env()
    report = run_initiator(catalog, table_filter=table_filter, dry_run=True, config=cfg)
    lookup = catalog.visibility_lookup()
    out: list[UnqueuedPartition] = []
    tables: dict[str, TableDef] = {}
    for d in report.decisions:
        if d.action not in (MAJOR, MINOR) or d.stats is None:
            continue
        table = tables.setdefault(d.table, catalog.get_table(d.table))
        entries = TableFS(table.location).list_recursive(partition_dir(table, d.partition))
        write_id = first_eligible_write_id(
            table,
            d.partition,
            catalog.valid_write_ids(d.table),
            catalog.aborted_write_ids(d.table, d.partition),
            cfg,
            entries=entries,
            txn_state=lookup,
        )
        times = {h.write_id: h.committed_at for h in catalog.write_id_history(d.table)}
        since = eligible_since(write_id, times, catalog.compaction_history(d.table, d.partition))
        out.append(
            UnqueuedPartition(
                table=d.table,
                partition=d.partition,
                compaction_type=str(d.action),
                reason=d.reason,
                deltas=d.stats.delta_count - d.stats.delete_delta_count,
                delete_deltas=d.stats.delete_delta_count,
                eligible_write_id=write_id,
                eligible_since=since,
            )
        )
    return out
