"""Compaction of a partition with very many deltas, in slices (Hive 3.1 ``CompactorMR.run``,
``hive.compactor.max.num.delta``, default 500).

Hive's worker, finding more current delta directories (insert and delete deltas, in
``AcidUtils`` order) than ``hive.compactor.max.num.delta``, first runs minor compactions over
consecutive slices of at most that many directories -- each writes its own
``delta_<min>_<max>`` / ``delete_delta_<min>_<max>`` -- then lists the partition again and runs
the requested compaction (minor or major) over what is now current: the slices' outputs and the
deltas left after the last full slice. A minor compaction of a slice follows the ordinary
rules (:func:`acidflow.maintenance.compaction.compact_partition`): it reads with the
compactor's ValidWriteIdList, verifies, and publishes like any compaction (rename from the
hidden temp dir on local disk and HDFS; ``_v<T>`` names under the compaction's transaction on
object stores, visible all at once when the worker commits T). The cleaner later removes what
the slices and the final step replaced once no reader needs it, as for any compaction.

One deviation, for correctness: Hive cuts slices at exactly ``max.num.delta`` directories,
which can separate the insert and delete delta of one write id (``delta_5_5`` and
``delete_delta_5_5``); the slice holding one of them then writes a range that covers the
other's write id and hides it from ``getAcidState``. Here a slice ends before a write-id range
that would not fit whole, so a slice may hold one directory fewer than the limit; slices are
cut while at least ``max.num.delta`` directories remain (Hive's ``n / max`` full slices).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable, Sequence

from acidflow.format.filerecords import FileRecord
from acidflow.format.layout import ParsedDelta, ValidWriteIdList, get_acid_state
from acidflow.format.table import TableDesc
from acidflow.maintenance import compaction
from acidflow.maintenance.rewrite import MINOR
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import compacted_base_check

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Hive's default of ``hive.compactor.max.num.delta``
DEFAULT_MAX_NUM_DELTA = 500


# ============================================================================ the rule (pure)


def plan_slices(deltas: Sequence[ParsedDelta], max_num_delta: int) -> list[list[str]]:
    """The minor-compaction slices a worker runs before the requested compaction (pure).

    Args:
        deltas: the partition's current deltas at the compactor's snapshot, in ``AcidState``
            order (``AcidState.deltas``).
        max_num_delta: ``hive.compactor.max.num.delta``; a value below 2 counts as 2 (a minor
            compaction needs two deltas).
    Returns:
        Delta directory names per slice, in order; empty when there are at most
        ``max_num_delta`` deltas (Hive compacts them in one go). A slice never separates the
        directories of one write-id range (module doc) and holds at least two ranges.
    """
    limit = max(2, max_num_delta)
    if len(deltas) <= limit:
        return []
    groups = [
        list(g)
        for _, g in itertools.groupby(
            # a write id's directories together: its insert and delete deltas, and those of
            # each of its statements (delta_W_W_S): a slice's output delta_x_y covers W
            deltas,
            key=lambda d: (d.min_write_id, d.max_write_id),
        )
    ]
    slices: list[list[str]] = []
    remaining, i = len(deltas), 0
    while remaining >= limit and i < len(groups):
        taken: list[list[ParsedDelta]] = []
        count = 0
        while i < len(groups) and count + len(groups[i]) <= limit:
            taken.append(groups[i])
            count += len(groups[i])
            i += 1
        if not taken:  # a range of more directories than the limit: leave the rest
            break
        remaining -= count
        if len(taken) >= 2:
            slices.append([d.name for g in taken for d in g])
    return slices


# ============================================================================ driver side


def compact_partition_sliced(
    spark: "SparkSession | None",
    table: TableDesc,
    partition: str,
    kind: str,
    valid: ValidWriteIdList,
    *,
    cq_id: int | str,
    max_num_delta: int = DEFAULT_MAX_NUM_DELTA,
    visibility_txn_id: int | None = None,
    txn_state: Callable[[int], str] | None = None,
    file_records: Sequence[FileRecord] | None = None,
    record_files: Callable[[list[FileRecord]], Any] | None = None,
    **options: Any,
) -> compaction.CompactionResult:
    """Compact one partition as Hive's worker does under ``hive.compactor.max.num.delta``:
    minor compactions of the slices :func:`plan_slices` picks, then ``kind`` over the result.

    Each slice is an ordinary minor compaction of :func:`compaction.compact_partition`
    (verified, published the same way, its output recorded under the compaction's
    transaction); the next step reads the slices' outputs and their records. On an object
    store the slices' ``_v<T>`` outputs belong to the compaction's own uncommitted
    transaction T: the later steps take T as committed (Hive 4: a compactor sees its own
    transaction's output), everyone else sees nothing until the worker commits T.

    Args:
        spark, table, partition, kind, valid, cq_id: as :func:`compaction.compact_partition`.
        max_num_delta: ``hive.compactor.max.num.delta`` (table override
            ``compactorthreshold.hive.compactor.max.num.delta``).
        visibility_txn_id, txn_state, file_records, record_files: as
            :func:`compaction.compact_partition`.
        options: the other keyword arguments of :func:`compaction.compact_partition`.
    Returns:
        The final step's :class:`compaction.CompactionResult`, its ``slices`` holding the
        slices' results (empty when the partition has at most ``max_num_delta`` deltas).
    Raises:
        What :func:`compaction.compact_partition` raises; a failing slice stops the
        compaction (slices published before it stay: each is a valid minor compaction).
    """
    tfs = TableFS(table.location)
    pdir = join(table.location, partition) if partition else table.location
    direct = not tfs.renames_atomically
    recovered: list[str] = []
    if not direct:  # an interrupted publish first: the slices are planned on the result
        recovered = compaction.finish_publish(tfs, pdir, join(pdir, compaction.tmp_dir_name(cq_id)))
    entries = list(tfs.list_recursive(pdir))
    state = get_acid_state(
        entries,
        valid.for_compactor(),
        compacted_base_check(tfs, pdir),
        txn_state if direct else None,
    )
    records = None if file_records is None else list(file_records)

    def record(recs: list[FileRecord]) -> None:
        if records is not None:
            records.extend(recs)  # the next step checks the slice's output against them
        if record_files is not None:
            record_files(recs)

    step_state = txn_state
    done: list[compaction.CompactionResult] = []
    for names in plan_slices(state.deltas, max_num_delta):
        done.append(
            compaction.compact_partition(
                spark,
                table,
                partition,
                MINOR,
                valid,
                cq_id=cq_id,
                visibility_txn_id=visibility_txn_id,
                txn_state=step_state,
                file_records=records,
                record_files=record,
                only_deltas=names,
                **options,
            )
        )
        if direct and visibility_txn_id is not None and step_state is not None:
            step_state = _own_txn_committed(step_state, visibility_txn_id)
    result = compaction.compact_partition(
        spark,
        table,
        partition,
        kind,
        valid,
        cq_id=cq_id,
        visibility_txn_id=visibility_txn_id,
        txn_state=step_state,
        file_records=records,
        record_files=record,
        **options,
    )
    result.slices = done
    result.published = recovered + result.published
    return result


def _own_txn_committed(lookup: Callable[[int], str], own: int) -> Callable[[int], str]:
    """``lookup`` answering ``committed`` for the compaction's own transaction ``own``."""
    return lambda t: "committed" if t == own else lookup(t)
