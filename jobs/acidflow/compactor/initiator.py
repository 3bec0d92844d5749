"""The initiator: which partitions need a compaction, and which kind
(docs/hive-acid-format.md §9, Hive 3.1 ``Initiator.run`` / ``checkForCompaction`` /
``determineCompactionType``).

Pure decision logic first (:func:`determine_compaction_type`, :func:`failed_too_often`,
:func:`decide`), then the I/O that feeds it (:func:`partition_stats`, :func:`run_initiator`).

Rules, in Hive's order:

0. requests Hive users queued in a metastore's own compaction queue (``thrift://`` catalog,
   ``Catalog.metastore_compaction_requests``) are queued as they are, or reported as waiting;
1. candidates: partitions written by a committed transaction (or by an aborted one) after the
   last compaction that covered them (``Catalog.compaction_candidates``);
2. skip tables with ``NO_AUTO_COMPACTION=true`` and partitions with an ``initiated`` or
   ``working`` entry;
3. after ``hive.compactor.initiator.failed.compacts.threshold`` (2) consecutive failures record
   ``did not initiate`` instead of queueing;
4. more aborted write ids than ``hive.compactor.abortedtxn.threshold`` (1000) -> major;
5. base (or original files) present and delta bytes / base bytes >
   ``hive.compactor.delta.pct.threshold`` (0.1) -> major;
6. small files (acidflow): more data files than ``acidflow.compactor.small.file.count``
   (32), or mostly files under ``acidflow.target.file.bytes`` / 4 (``small.file.ratio``, 0.5)
   -> major, which packs an unbucketed partition into files of about the target
   (:func:`small_files`, :mod:`acidflow.format.packing`);
7. more current delta directories (insert + delete) than ``hive.compactor.delta.num.threshold``
   (10) -> minor, or major when there is no base;
8. otherwise nothing.

Thresholds can be overridden per table with ``compactorthreshold.<hive key>`` properties.
Manual requests (:func:`request_compaction`, Hive ``ALTER TABLE ... COMPACT``) skip all this.
"""

from __future__ import annotations

import fnmatch
import getpass
import json
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from acidflow.catalog import Catalog, CompactionInfo, TableDef
from acidflow.catalog.records import CompactionState, CompactionType
from acidflow.compactor.config import CompactorConfig, no_auto_compaction
from acidflow.format.layout import DirEntry, ValidWriteIdList, bucket_files
from acidflow.storage.fs import TableFS
from acidflow.storage.state import acid_state
from acidflow.storage.tablepaths import partition_dir

MAJOR, MINOR = CompactionType.MAJOR, CompactionType.MINOR


@dataclass(frozen=True)
class PartitionStats:
    """What the decision looks at for one partition.

    Attributes:
        base_bytes: bytes of the bucket files directly in the current base plus original files
            (0 when there is neither).
        delta_bytes: bytes of the bucket files in the current deltas (delete deltas included).
        delta_count: number of current delta directories (insert + delete).
        aborted_count: aborted write ids that wrote the partition.
        data_file_sizes: bytes of each data file the small-file rule counts: in an unbucketed
            table every insert-side file (base, original and insert-delta ``bucket_N``), in a
            bucketed table the original files only (a base has one file per bucket).
    """

    base_bytes: int = 0
    delta_bytes: int = 0
    delta_count: int = 0
    aborted_count: int = 0
    data_file_sizes: tuple[int, ...] = ()
    delete_delta_count: int = 0


@dataclass(frozen=True)
class Decision:
    """The initiator's verdict for one (table, partition).

    Attributes:
        table, partition: where.
        action: ``"major"`` / ``"minor"`` to queue, ``"did not initiate"`` to record, or
            ``None`` (nothing to do / skipped).
        reason: why, in words.
        stats: the inputs (None when skipped before looking at files).
        queued_id: queue id after a real run (None in a dry run or when nothing was queued).
    """

    table: str
    partition: str | None
    action: str | None
    reason: str
    stats: PartitionStats | None = None
    queued_id: int | None = None

    def to_dict(self) -> dict:
        """JSON-able dict (the stats' ``data_file_sizes`` as ``data_files``, a count)."""
        d = asdict(self)
        if d.get("stats"):
            d["stats"]["data_files"] = len(d["stats"].pop("data_file_sizes"))
        return d


def determine_compaction_type(
    stats: PartitionStats, config: CompactorConfig
) -> tuple[str | None, str]:
    """Hive ``Initiator.determineCompactionType`` plus the aborted-txn shortcut (pure).

    Returns:
        ``(type or None, reason)``; type is ``"major"``, ``"minor"`` or ``None``.
    """
    if stats.aborted_count > config.aborted_txn_threshold:
        return MAJOR, (
            f"{stats.aborted_count} aborted write ids > "
            f"hive.compactor.abortedtxn.threshold {config.aborted_txn_threshold}"
        )
    if stats.base_bytes > 0 and stats.delta_bytes > 0:
        ratio = stats.delta_bytes / stats.base_bytes
        if ratio > config.delta_pct_threshold:
            return MAJOR, (
                f"delta/base size {ratio:.3f} > hive.compactor.delta.pct.threshold "
                f"{config.delta_pct_threshold}"
            )
    small = small_files(stats, config)
    if small is not None:  # packing needs a major compaction (acidflow.format.packing)
        return MAJOR, small
    if stats.delta_count > config.delta_num_threshold:
        kind = MAJOR if stats.base_bytes == 0 else MINOR
        return kind, (
            f"{stats.delta_count} deltas > hive.compactor.delta.num.threshold "
            f"{config.delta_num_threshold}" + (" and no base" if kind == MAJOR else "")
        )
    if stats.delta_count == 0:
        return None, "no deltas"
    size_ratio = (stats.delta_bytes / stats.base_bytes) if stats.base_bytes else None
    return None, (
        f"{stats.delta_count} deltas <= {config.delta_num_threshold}"
        + (
            f", delta/base size {size_ratio:.3f} <= {config.delta_pct_threshold}"
            if size_ratio is not None
            else ""
        )
        + f", {stats.aborted_count} aborted <= {config.aborted_txn_threshold}"
    )


def small_files(stats: PartitionStats, config: CompactorConfig) -> str | None:
    """The small-file rule (pure): ``"small files: ..."`` when the partition has more data
    files than ``acidflow.compactor.small.file.count``, or more than a quarter of that many
    and more than ``acidflow.compactor.small.file.ratio`` of them under a quarter of
    ``acidflow.target.file.bytes``; else ``None`` (always with a target of 0: packing off)."""
    if config.target_file_bytes <= 0:
        return None
    sizes = stats.data_file_sizes
    n = len(sizes)
    if n > config.small_file_count:
        return (
            f"small files: {n} data files > acidflow.compactor.small.file.count "
            f"{config.small_file_count}"
        )
    small = sum(1 for b in sizes if b < config.target_file_bytes / 4)
    if n > config.small_file_count / 4 and n > 1 and small / n > config.small_file_ratio:
        return (
            f"small files: {small} of {n} data files under acidflow.target.file.bytes/4 "
            f"({config.target_file_bytes // 4} bytes), ratio {small / n:.2f} > "
            f"acidflow.compactor.small.file.ratio {config.small_file_ratio}"
        )
    return None


def failed_too_often(history_states: Sequence[str], threshold: int) -> bool:
    """Hive ``checkFailedCompactions``: True when the newest finished entries hold at least
    ``threshold`` failures with no success in between (``did not initiate`` entries are
    skipped over; ``succeeded`` ends the run of failures).

    Args:
        history_states: finished states of the partition, newest first.
    """
    failures = 0
    for state in history_states:
        if state == CompactionState.SUCCEEDED:
            break
        if state in (CompactionState.FAILED, CompactionState.REFUSED):
            failures += 1
            if failures >= threshold:
                return True
    return False


def decide(
    table: str,
    partition: str | None,
    props: dict[str, str],
    *,
    active: bool,
    history_states: Sequence[str],
    stats: PartitionStats | None,
    config: CompactorConfig,
) -> Decision:
    """The whole initiator decision for one candidate (pure).

    Args:
        props: table properties (``NO_AUTO_COMPACTION``, ``compactorthreshold.*``).
        active: an ``initiated`` / ``working`` entry exists for the partition.
        history_states: finished states newest first.
        stats: file statistics (None = not gathered; only allowed when skipped earlier).
        config: global settings (table overrides are applied here).
    """
    if no_auto_compaction(props):
        return Decision(table, partition, None, "table property NO_AUTO_COMPACTION=true")
    if active:
        return Decision(table, partition, None, "a compaction is already initiated or working")
    cfg = config.with_properties(props, table=True)
    if failed_too_often(history_states, cfg.failed_compacts_threshold):
        return Decision(
            table,
            partition,
            CompactionState.DID_NOT_INITIATE,
            f"the last {cfg.failed_compacts_threshold} compactions failed "
            "(hive.compactor.initiator.failed.compacts.threshold)",
            stats,
        )
    if stats is None:
        raise ValueError("stats are needed when the candidate is not skipped")
    kind, reason = determine_compaction_type(stats, cfg)
    return Decision(table, partition, kind, reason, stats)


# ---------------------------------------------------------------------------------- I/O


def partition_stats(
    table: TableDef,
    partition: str | None,
    valid: ValidWriteIdList,
    aborted_count: int,
    txn_state: Callable[[int], str] | None = None,
    *,
    entries: list[DirEntry] | None = None,
) -> PartitionStats:
    """Gather :class:`PartitionStats` of a partition directory at the compactor's snapshot
    (``valid.for_compactor()``), like Hive's initiator (``getAcidState`` + file lengths).

    Args:
        table: the table; ``partition``: its spec (``ds=2024-01-01``) or ``None``.
        valid: the table's ValidWriteIdList (turned into the compactor's here).
        aborted_count: aborted write ids of the partition (from the catalog).
        txn_state: the ``_v<T>`` lookup (``Catalog.visibility_lookup``).
        entries: the partition directory's recursive listing when the caller has it (paths
            relative to the partition directory); default: listed here.
    Returns:
        sizes in bytes and current delta counts.
    Raises:
        OSError: the directory cannot be listed.
    """
    tfs = TableFS(table.location)
    pdir = partition_dir(table, partition)
    if entries is None:
        entries = tfs.list_recursive(pdir)
    sizes = {e.path: e.size for e in entries if not e.is_dir}
    state = acid_state(tfs, pdir, valid.for_compactor(), entries=entries, txn_state=txn_state)
    base = 0
    if state.base is not None:
        base = sum(sizes.get(rel, 0) for rel, _ in bucket_files(entries, state.base.name))
    base += sum(sizes.get(rel, 0) for rel in state.original_files)
    delta = sum(sizes.get(rel, 0) for d in state.deltas for rel, _ in bucket_files(entries, d.name))
    counted = list(state.original_files)
    if table.num_buckets <= 0:
        if state.base is not None:
            counted += [rel for rel, _ in bucket_files(entries, state.base.name)]
        counted += [
            rel for d in state.deltas if not d.is_delete for rel, _ in bucket_files(entries, d.name)
        ]
    return PartitionStats(
        base,
        delta,
        len(state.deltas),
        aborted_count,
        tuple(sizes.get(rel, 0) for rel in counted),
        sum(1 for d in state.deltas if d.is_delete),
    )


@dataclass
class InitiatorReport:
    """Result of one initiator pass: every decision and the queue ids it created."""

    decisions: list[Decision] = field(default_factory=list)
    queued_ids: list[int] = field(default_factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict:
        """JSON-able dict."""
        return {
            "dry_run": self.dry_run,
            "queued_ids": self.queued_ids,
            "decisions": [d.to_dict() for d in self.decisions],
        }


def run_initiator(
    catalog: Catalog,
    *,
    table_filter: str | None = None,
    dry_run: bool = False,
    config: CompactorConfig | None = None,
) -> InitiatorReport:
    """One initiator pass over the catalog (Hive ``Initiator.run`` loop body).

    Also reclaims working entries of dead workers and applies history retention first, as
    Hive's initiator/housekeeper do.

    Args:
        table_filter: fnmatch pattern on ``db.table`` (e.g. ``"sales.*"``).
        dry_run: decide and report, queue nothing, record nothing.
        config: settings (default :meth:`CompactorConfig.from_env`).
    Returns:
        :class:`InitiatorReport`; ``queued_ids`` are the ``initiated`` entries created.
    """
    cfg = config or CompactorConfig.from_env()
    report = InitiatorReport(dry_run=dry_run)
    if not dry_run:
        catalog.reclaim_dead_compactions(cfg.worker_timeout_s)
        catalog.purge_compaction_history(cfg.retention())
    # requests Hive users queued in the metastore (thrift:// catalog): queued or reported
    for req in catalog.metastore_compaction_requests(adopt=not dry_run):
        action = req.type if req.queued_id is not None else None
        report.decisions.append(
            Decision(req.table, req.partition, action, req.reason, queued_id=req.queued_id)
        )
        if req.queued_id is not None:
            report.queued_ids.append(req.queued_id)
    active = {
        (c.table, c.partition)
        for c in catalog.list_compactions(
            states=(CompactionState.INITIATED, CompactionState.WORKING)
        )
    }
    tables: dict[str, TableDef] = {}
    for name, partition, _w in catalog.compaction_candidates():
        if table_filter and not fnmatch.fnmatch(name, table_filter):
            continue
        if name not in tables:
            tables[name] = catalog.get_table(name)
        table = tables[name]
        history = [c.state for c in catalog.compaction_history(name, partition)]
        is_active = (name, partition) in active
        stats = None
        if not no_auto_compaction(table.properties) and not is_active:
            valid = catalog.valid_write_ids(name)
            aborted = len(catalog.aborted_write_ids(name, partition))
            stats = partition_stats(table, partition, valid, aborted, catalog.visibility_lookup())
        d = decide(
            name,
            partition,
            table.properties,
            active=is_active,
            history_states=history,
            stats=stats,
            config=cfg,
        )
        if not dry_run and d.action in (MAJOR, MINOR):
            info = catalog.enqueue_compaction(name, partition, d.action, requester="initiator")
            d = Decision(d.table, d.partition, d.action, d.reason, d.stats, info.id)
            report.queued_ids.append(info.id)
        elif not dry_run and d.action == CompactionState.DID_NOT_INITIATE:
            kind, _ = determine_compaction_type(stats, cfg) if stats else (None, "")
            info = catalog.enqueue_compaction(
                name,
                partition,
                kind or MAJOR,
                requester="initiator",
                state=CompactionState.DID_NOT_INITIATE,
                error=d.reason,
            )
            d = Decision(d.table, d.partition, d.action, d.reason, d.stats, info.id)
        report.decisions.append(d)
    return report


def request_compaction(
    catalog: Catalog,
    table_name: str,
    partition: str | None,
    compaction_type: str,
    *,
    requester: str | None = None,
    properties: dict[str, str] | None = None,
) -> CompactionInfo:
    """A manual request (Hive ``ALTER TABLE t [PARTITION (...)] COMPACT 'major'|'minor'``):
    queued regardless of thresholds and of ``NO_AUTO_COMPACTION``; an existing initiated or
    working entry for the partition is returned instead of a duplicate.

    Returns:
        ``acidflow.catalog.CompactionInfo``.
    Raises:
        ValueError: unknown type or bad partition spec; NoSuchTableError.
    """
    try:
        user = requester or getpass.getuser()
    except Exception:  # pragma: no cover
        user = "user"
    return catalog.enqueue_compaction(
        table_name, partition, compaction_type, requester=user, properties=properties
    )


def queued_ids_json(report: InitiatorReport) -> str:
    """The last stdout line for Airflow dynamic task mapping: a JSON list of queue ids."""
    return json.dumps(report.queued_ids)
