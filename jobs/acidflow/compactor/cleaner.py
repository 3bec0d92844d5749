"""The cleaner: deletes what compactions made obsolete, and the directories of aborted
transactions (Hive ``Cleaner`` / ``CompactionTxnHandler.markCleaned``;
docs/hive-acid-format.md §9 "Cleaner").

For every ``ready for cleaning`` entry:

1. wait while any reader registered at or before the compaction's commit is alive, or any
   transaction that started before it is still open (a writer reads the table too) -- the
   entry stays ``ready for cleaning`` and the report says who it waits for;
2. otherwise compute ``get_acid_state`` with a ValidWriteIdList capped at the compaction's
   highest write id (aborted ids kept), and remove its ``obsolete`` and ``aborted`` entries;
3. mark the entry ``succeeded`` -- only after every removal is done.

**History retention** (``acidflow.history.retain.commits`` / ``.hours``,
:mod:`acidflow.storage.retention`): step 2 keeps every obsolete directory that a retained
snapshot (a time-travel or incremental read at a write id within retention) still reads. An
entry that kept something stays ``ready for cleaning`` with ``retained`` (the names kept) and
``retained_until`` (why) in its details, and every later cleaner pass revisits it; once those
directories fall out of retention a pass removes them and marks it ``succeeded``. Aborted
directories are never retained. A savepoint's snapshot (``acidflow.tableops.savepoint``) is
kept the same way, whatever its age, until the savepoint is deleted.

Directories of aborted write ids are removed in every partition of a table that has aborted
write ids (no reader ever reads them), and the aborted components are forgotten in the catalog
so the initiator's aborted count drops (Hive ``markCleaned``).

Removal is safe to kill at any point. Local disk and HDFS: each directory is first *renamed*
to a hidden name (``.cleaning_<name>``, atomic; readers skip names starting with ``.``), then
deleted; a killed cleaner leaves only hidden leftovers, which the next run deletes. Object
stores (S3: no rename): the prefix's objects are deleted directly. No reader can be reading
them -- an obsolete directory is removed only once no reader of a snapshot that used it is
left (step 1), and an aborted one was never read -- so a half-deleted prefix is as unread as a
whole one, and the next pass deletes what is left (the entry is still ``ready for cleaning``,
the aborted directory still aborted). Leftover ``.compact_tmp_<id>`` dirs of entries that are
no longer running are removed too.

Object stores also get their aborted compaction output removed: a compaction there writes
``base_N_v<T>`` / ``delta_x_y_v<T>`` directly (``acidflow.maintenance.compaction``), and when its
transaction T aborted (a crashed or failed worker), ``get_acid_state`` lists those
directories as aborted; every pass removes them from every partition, as it does the
directories of aborted write ids.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable

from acidflow.catalog import Catalog, CatalogError, TableDef
from acidflow.catalog.records import CommitRecord, CompactionState
from acidflow.format.layout import NotEnoughHistoryError, ValidWriteIdList
from acidflow.maintenance.compaction import TMP_PREFIX
from acidflow.read import history
from acidflow.storage import retention
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state, history_floor, write_history_floor
from acidflow.storage.tablepaths import partition_dir, partition_paths
from acidflow.tableops.savepoint import savepoint_snapshots

log = logging.getLogger(__name__)

CLEANING_PREFIX = ".cleaning_"


def capped_list(valid: ValidWriteIdList, highest_write_id: int) -> ValidWriteIdList:
    """The cleaner's snapshot (pure): high watermark = the compaction's highest write id, only
    aborted exceptions at or below it, nothing open (Hive 3.1 Cleaner builds a list capped at
    ``highestWriteId``)."""
    return ValidWriteIdList(
        valid.table_name,
        highest_write_id,
        (),
        [a for a in valid.aborted_write_ids if a <= highest_write_id],
    )


def remove_safely(tfs: TableFS, pdir: str, name: str) -> None:
    """Rename ``pdir/name`` to ``pdir/.cleaning_<name>`` (atomic: readers stop seeing it at
    once) and delete it; on an object store delete the prefix ``pdir/name/`` directly (module
    doc). Missing is fine (idempotent)."""
    src = join(pdir, name)
    if not tfs.renames_atomically:
        tfs.delete(src)
        return
    hidden = join(pdir, CLEANING_PREFIX + name)
    if tfs.exists(src):
        if tfs.exists(hidden):
            tfs.delete(hidden)
        tfs.rename(src, hidden)
    tfs.delete(hidden)


def clean_partition(
    table: TableDef,
    partition: str | None,
    valid: ValidWriteIdList,
    txn_state: Callable[[int], str] | None = None,
) -> list[str]:
    """Remove the obsolete and aborted directories (and obsolete original files) of one
    partition as seen at ``valid``; returns the names removed, in removal order (aborted
    first, then obsolete ones, oldest first). No retention (see
    :func:`clean_partition_retaining`)."""
    return clean_partition_retaining(table, partition, valid, None, None, txn_state)[0]


def clean_partition_retaining(
    table: TableDef,
    partition: str | None,
    valid: ValidWriteIdList,
    current: ValidWriteIdList | None,
    oldest_retained: int | None,
    txn_state: Callable[[int], str] | None = None,
    interleaved: Iterable[ValidWriteIdList] = (),
) -> tuple[list[str], list[str]]:
    """:func:`clean_partition` that keeps what retained snapshots read.

    Args:
        valid: the cleaner's capped snapshot (:func:`capped_list`).
        current: the table's current ValidWriteIdList (retained snapshots derive from it);
            None = no retention.
        oldest_retained: ``acidflow.read.history.RetainedRange.oldest``.
        txn_state: the ``_v<T>`` lookup (``Catalog.visibility_lookup``).
        interleaved: ``RetainedRange.interleaved`` (retained states that are no cut of
            ``current``; their directories are kept too).
    Returns:
        ``(removed, kept)``: names removed (aborted first, then obsolete, oldest first) and
        obsolete names kept for retention.
    """
    tfs = TableFS(table.location)
    pdir = partition_dir(table, partition)
    entries = tfs.list_recursive(pdir)
    state = acid_state(tfs, pdir, valid, entries=entries, txn_state=txn_state)
    obsolete = [o for o in state.obsolete if o not in state.aborted]
    keep: set[str] = set()
    if current is not None and oldest_retained is not None and obsolete:
        keep = retention.retained_names(
            tfs,
            pdir,
            current,
            oldest_retained,
            entries=entries,
            txn_state=txn_state,
            extra=interleaved,
        )
    doomed = list(state.aborted) + [o for o in obsolete if o not in keep]
    gone = set(doomed)
    lost = retention.history_loss(
        [o for o in obsolete if o in gone], {e.path.split("/", 1)[0] for e in entries} - gone
    )
    if lost is not None:  # record the loss before it happens (a killed cleaner errs safe)
        floor = history_floor(tfs, pdir, entries)
        if floor is not None and lost < floor:
            write_history_floor(tfs, pdir, lost)
    for name in doomed:
        remove_safely(tfs, pdir, name)
    return doomed, [o for o in obsolete if o in keep]


def remove_leftovers(table: TableDef, partition: str | None, live_cq_ids: set[int]) -> list[str]:
    """Delete hidden leftovers in a partition: ``.cleaning_*`` (a killed cleaner) and
    ``.compact_tmp_<id>`` of entries not in ``live_cq_ids`` (a killed worker whose entry was
    finished or purged). Returns the names deleted."""
    tfs = TableFS(table.location)
    pdir = partition_dir(table, partition)
    gone = []
    for name, _is_dir in tfs.list_dir(pdir):
        if name.startswith(CLEANING_PREFIX):
            tfs.delete(join(pdir, name))
            gone.append(name)
        elif name.startswith(TMP_PREFIX):
            try:
                cq = int(name[len(TMP_PREFIX) :])
            except ValueError:
                continue
            if cq not in live_cq_ids:
                tfs.delete(join(pdir, name))
                gone.append(name)
    return gone


@dataclass
class CleanerReport:
    """One cleaner pass.

    Attributes:
        cleaned: ``{queue id: [names removed]}`` of entries now ``succeeded``.
        waiting: ``{queue id: {"readers": [...], "txns": [...]}}`` still ready for cleaning.
        aborted: ``{"table/partition": [names removed]}`` aborted dirs removed.
        leftovers: hidden leftovers removed.
        errors: ``{queue id: message}`` of entries whose cleaning failed (kept ready).
        retained: ``{queue id: [names kept]}`` of entries kept ready for cleaning because
            retained snapshots still read those obsolete directories.
        schema_reverted: tables whose aborted schema change had left its columns behind and
            got the committed ones back (``Catalog.revert_aborted_schema_change``).
        schema_errors: ``{table: message}`` of such reverts deferred to a later pass (the
            table's lock was not granted within 5 s).
        purged: catalog history rows deleted, per kind (:func:`purge_history`).
    """

    cleaned: dict[int, list[str]] = field(default_factory=dict)
    waiting: dict[int, dict] = field(default_factory=dict)
    aborted: dict[str, list[str]] = field(default_factory=dict)
    leftovers: list[str] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    retained: dict[int, list[str]] = field(default_factory=dict)
    schema_reverted: list[str] = field(default_factory=list)
    schema_errors: dict[str, str] = field(default_factory=dict)
    purged: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-able dict."""
        return {
            "cleaned": {str(k): v for k, v in self.cleaned.items()},
            "waiting": {str(k): v for k, v in self.waiting.items()},
            "aborted": self.aborted,
            "leftovers": self.leftovers,
            "errors": {str(k): v for k, v in self.errors.items()},
            "retained": {str(k): v for k, v in self.retained.items()},
            "schema_reverted": self.schema_reverted,
            "schema_errors": self.schema_errors,
            "purged": self.purged,
        }


def run_cleaner(
    catalog: Catalog,
    *,
    reader_timeout_s: float | None = None,
    retention: dict[str, int] | None = None,
) -> CleanerReport:
    """One cleaner pass over the queue and the tables with aborted write ids.

    Args:
        reader_timeout_s: a reader whose heartbeat is older counts as gone (default the
            catalog's ``txn_timeout_s``).
        retention: history retention passed to ``purge_compaction_history``.
    Returns:
        :class:`CleanerReport`.
    """
    report = CleanerReport()
    catalog.abort_timed_out_transactions()
    catalog.purge_expired_readers(reader_timeout_s)
    for tdef in catalog.list_tables():  # a crashed schema change: its columns go back
        try:
            if catalog.revert_aborted_schema_change(tdef.name, lock_timeout_s=5) is not None:
                report.schema_reverted.append(tdef.name)
        except CatalogError as exc:  # e.g. a writer holds the table: the next pass reverts
            log.warning("cleaner: schema revert of %s deferred: %s", tdef.name, exc)
            report.schema_errors[tdef.name] = str(exc)
    tables: dict[str, TableDef] = {}

    def table_of(name: str) -> TableDef:
        if name not in tables:
            tables[name] = catalog.get_table(name)
        return tables[name]

    for entry in catalog.list_compactions(states=(CompactionState.READY_FOR_CLEANING,)):
        blockers = catalog.blocking_readers(
            entry.table, entry.commit_id or 0, timeout_s=reader_timeout_s
        )
        if blockers["readers"] or blockers["txns"]:
            report.waiting[entry.id] = blockers
            continue
        try:
            table = table_of(entry.table)
            valid = catalog.valid_write_ids(table.name)
            kept_range = history.retained_range(catalog, table.name, table=table)
            # a savepoint's snapshot is kept like a retained one (acidflow.tableops.savepoint)
            pinned = savepoint_snapshots(catalog, table.name)
            removed, kept = clean_partition_retaining(
                table,
                entry.partition,
                capped_list(valid, entry.highest_write_id or 0),
                valid,
                kept_range.oldest,
                catalog.visibility_lookup(),
                tuple(kept_range.interleaved) + tuple(pinned),
            )
            # the records of the files removed go too (they stay bounded by what the table holds)
            catalog.forget_data_files(table.name, [(entry.partition or "", n) for n in removed])
            done = list((entry.details or {}).get("cleaned") or []) + removed
            if kept:
                catalog.update_compaction(
                    entry.id,
                    details={
                        "cleaned": done,
                        "retained": kept,
                        "retained_until": f"history retention: {kept_range.describe()}"
                        + (f", {len(pinned)} savepoint(s)" if pinned else "")
                        + "; kept until no retained or savepointed snapshot reads them",
                    },
                )
                report.retained[entry.id] = kept
                continue
            catalog.mark_compaction_succeeded(entry.id, {"cleaned": done, "retained": []})
            report.cleaned[entry.id] = done
        except NotEnoughHistoryError as exc:
            # A newer compaction already published a base above this one's high watermark
            # (this entry's cleaning waited for a reader meanwhile): what this compaction made
            # obsolete is obsolete under that base too and goes with its cleaning. Done.
            log.info("compaction %s superseded by a newer base: %s", entry.id, exc)
            catalog.mark_compaction_succeeded(entry.id, {"cleaned": [], "superseded": str(exc)})
            report.cleaned[entry.id] = []
        except Exception as exc:  # noqa: BLE001 - reported; the entry stays ready for cleaning
            log.warning("cleaning compaction %s failed: %s", entry.id, exc)
            report.errors[entry.id] = f"{type(exc).__name__}: {exc}"

    # aborted directories, every table that has aborted write ids
    live = {
        c.id
        for c in catalog.list_compactions(
            states=(CompactionState.INITIATED, CompactionState.WORKING)
        )
    }
    for table in catalog.list_tables():
        aborted = catalog.aborted_write_ids(table.name, any_partition=True)
        tfs = TableFS(table.location)
        if not tfs.exists(table.location):
            continue
        for part in partition_paths(table):
            report.leftovers += [
                f"{table.name}/{part}/{n}" if part else f"{table.name}/{n}"
                for n in remove_leftovers(table, part or None, live)
            ]
            if not aborted and tfs.renames_atomically:
                continue  # object stores: aborted compaction output (_v<T>) is looked for too
            valid = catalog.valid_write_ids(table.name)
            pdir = partition_dir(table, part or None)
            entries = tfs.list_recursive(pdir)
            state = acid_state(
                tfs,
                pdir,
                ValidWriteIdList(
                    valid.table_name,
                    valid.high_watermark,
                    valid.open_write_ids,
                    valid.aborted_write_ids,
                ),
                entries=entries,
                txn_state=catalog.visibility_lookup(),
            )
            if state.aborted:
                for name in state.aborted:
                    remove_safely(tfs, pdir, name)
                catalog.forget_data_files(table.name, [(part, n) for n in state.aborted])
                report.aborted[f"{table.name}/{part}" if part else table.name] = list(state.aborted)
        if aborted:
            catalog.forget_aborted_components(table.name, max(aborted))
    catalog.purge_compaction_history(retention)
    report.purged = purge_history(catalog, reader_timeout_s=reader_timeout_s)
    return report


def timeline_cut(records: list[CommitRecord], oldest_retained: int, keep: int) -> int:
    """The write id from whose commit on a table's commit records stay (0: all stay): the older,
    in commit order, of the oldest retained state's commit and the ``keep``-th newest record
    (:func:`acidflow.storage.retention.timeline_keep_commits`)."""
    if not oldest_retained or len(records) <= keep:
        return 0
    ordered = sorted(records, key=lambda r: r.commit_id)
    if keep == 0:
        return oldest_retained
    cut = ordered[-keep]
    retained = next((r for r in ordered if r.write_id == oldest_retained), None)
    if retained is not None and retained.commit_id < cut.commit_id:
        return retained.write_id
    return cut.write_id


def purge_history(catalog: Catalog, *, reader_timeout_s: float | None = None) -> dict[str, int]:
    """Keep the catalog's history bounded (every cleaner pass): write sets no open transaction
    can hit, commit records beyond the timeline (older than each table's oldest retained state,
    :func:`acidflow.read.history.retained_range`, and its newest
    ``acidflow.timeline.keep.commits`` records; live readers keep theirs), completed components
    the initiator no longer reads, superseded CDC tombstones, batch records beyond the batch
    retention (:func:`acidflow.storage.retention.batch_retention`; each source's newest stays)
    and then the committed transactions none of those need any more. The contract of each purge
    is on its role (``acidflow.catalog.api``). Returns rows deleted per kind."""
    out = dict(catalog.purge_write_sets())
    records = 0
    for tdef in catalog.list_tables():
        try:
            oldest = history.retained_range(catalog, tdef.name, table=tdef).oldest
            keep = retention.timeline_keep_commits(tdef.name, tdef.properties)
        except ValueError as exc:  # a bad retention property: keep the table's records
            log.warning("cleaner: commit records of %s kept: %s", tdef.name, exc)
            continue
        keep_from = timeline_cut(catalog.commit_records(tdef.name), oldest, keep)
        if keep_from:
            records += catalog.purge_commit_records(
                tdef.name, keep_from, reader_timeout_s=reader_timeout_s
            )
    out["commit_records"] = records
    out["completed_txn_components"] = catalog.purge_completed_components()
    out["cdc_tombstones"] = catalog.purge_tombstones()
    try:
        keep_batches = retention.batch_retention()
    except ValueError as exc:  # a bad setting: keep every committed batch record
        log.warning("cleaner: batch records kept: %s", exc)
        keep_batches = None
    out["batches"] = catalog.purge_batches(keep_batches)
    out["transactions"] = catalog.purge_transactions()
    return out
