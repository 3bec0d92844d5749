"""Reading ACID v1 (Hive 0.14-2.x) tables as Hive 2.3's reader does.

:func:`acidflow.read.snapshot.read_task` asks :func:`task_is_v1` whether a read task's event files
are v1 (``acidflow.format.acidv1.is_v2`` false for every base/delta directory); if so the task is
read here by :func:`read_task_v1` instead of refusing the files (Trino's rule,
``snapshot.check_acid_version``).

The planning is the same as for Hive 3 tables (``plan_read``: the base, the deltas and the
original files a snapshot reads, one task per (partition, bucket)); v1 txn ids are the table's
write ids (a v1 table is adopted with them, as Hive 3's upgrade keeps them: it starts the table's
write ids above the last txn id). What differs is the merge: the events of all files of the
bucket are merged and of each ROW__ID the newest valid event wins (``acidflow.format.acidv1``;
Hive 2.3 ``OrcRawRecordMerger``). A task is read whole (v1 buckets are small enough: Hive 2.3
itself keeps one merger per bucket).

A partition holding v1 and v2 directories together (a table upgraded in place to Hive 3 and
written again without the major compaction Hive's upgrade demands) is refused with
:class:`MixedAcidVersionError`.
"""

from __future__ import annotations

import posixpath
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format import acidv1 as rules
from acidflow.format import types as htypes
from acidflow.format.layout import DELETE_DELTA_PREFIX, DirEntry, bucket_files, parse_delta
from acidflow.format.orc import files as acid_files
from acidflow.format.orc import timestamps as orc_timestamps
from acidflow.format.schemaevolution import read_as
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read.rows import (
    ROW_ID_TYPE,
    map_columns,
    output_schema,
    partition_arrays,
    valid_mask,
)
from acidflow.read.tasks import ReadTask
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state
from acidflow.storage.tablepaths import split_partitions


class MixedAcidVersionError(acid_files.AcidFileError):
    """A partition holds ACID v1 (Hive 0.14-2.x) and v2 (Hive 3) base/delta directories
    together: no Hive reader reads that (names the partition, both directories and what to do)."""


def _dir_is_v2(tfs: TableFS, path: str, cache: dict[str, bool | None]) -> bool | None:
    """True: the directory of ``path`` is ACID v2; False: v1 (event schema, no version mark);
    None: not an event file (left to ``check_acid_version``'s refusal)."""
    directory = posixpath.dirname(path)
    if directory not in cache:
        version = acid_files.read_acid_version(tfs, directory)
        if version >= acid_files.ACID_VERSION:
            cache[directory] = True
        else:
            info = acid_files.file_info(tfs, path)
            cache[directory] = rules.is_v2(version, info.metadata) if info.is_acid else None
    return cache[directory]


def task_is_v1(tfs: TableFS, task: "ReadTask", cache: dict[str, bool | None] | None = None) -> bool:
    """Whether a read task's base/delta files are ACID v1 (read by :func:`read_task_v1`).

    Args:
        tfs: the table's file system.
        task: a task of ``acidflow.read.snapshot.plan_read``.
        cache: directory -> verdict, shared between calls (one ``_orc_acid_version`` read, and
            one footer when it is missing, per directory).
    Returns:
        True when every base/delta directory of the task is v1; False when the task has none
        (original files only) or they are v2 (or not event files: the v2 path refuses those).
    Raises:
        MixedAcidVersionError: v1 and v2 directories (or a delete delta, which v1 never has,
            next to v1 files) in the same task.
    """
    cache = {} if cache is None else cache
    v1: list[str] = []
    v2: list[str] = []
    for f in task.data_files:
        if f.kind == "original":
            continue
        verdict = _dir_is_v2(tfs, f.path, cache)
        if verdict is None:
            return False
        (v2 if verdict else v1).append(posixpath.dirname(f.path))
    if v1 and (v2 or task.delete_files):
        other = v2[0] if v2 else posixpath.dirname(task.delete_files[0])
        raise MixedAcidVersionError(
            f"partition {task.partition or '<unpartitioned>'}: directory {v1[0]} holds ACID v1 "
            f"(Hive 0.14-2.x) events and {other} ACID v2 (Hive 3) ones; no reader merges both: "
            f"{rules.UPGRADE_HINT}"
        )
    return bool(v1)


def partition_is_v1(
    tfs: TableFS,
    pdir: str,
    entries: Iterable[DirEntry],
    valid: ValidWriteIdList,
    *,
    txn_state: Callable[[int], str] | None = None,
) -> bool:
    """Whether a snapshot of a partition reads ACID v1 files.

    Args:
        tfs: the table's file system; pdir: the partition directory;
        entries: its recursive listing (``TableFS.list_recursive``);
        valid: the snapshot (the directories it reads are checked, not obsolete ones that
            wait for the cleaner); txn_state: ``_v<T>`` lookup (``get_acid_state``).
    Returns:
        True when the base or a delta the snapshot reads has an event file with no ACID
        version 2 mark (``acidflow.format.acidv1.is_v2``; one footer per directory).
    """
    entries = list(entries)
    state = acid_state(tfs, pdir, valid, entries=entries, txn_state=txn_state)
    cache: dict[str, bool | None] = {}
    for name in state.current_dirs:
        if name.startswith(DELETE_DELTA_PREFIX):
            continue
        files = bucket_files(entries, name)
        if files and _dir_is_v2(tfs, join(pdir, files[0][0]), cache) is False:
            return True
    return False


def _statement_id(path: str) -> int:
    parsed = parse_delta(posixpath.basename(posixpath.dirname(path)))
    return parsed.statement_id if parsed is not None and parsed.statement_id >= 0 else -1


def task_events(
    tfs: TableFS, task: "ReadTask", columns: list[tuple[str, str]]
) -> tuple[pa.Table, list[str]]:
    """All events of a v1 task's files in one table.

    Returns:
        ``(events, paths)``: columns ``operation, originalTransaction, bucket, rowId,
        currentTransaction, statement, file`` (index into ``paths``) and the table columns
        (read as their Hive types; NULL where a file lacks the column); original files give
        insert events with their synthetic ROW__IDs (write id 0, plain bucket id, rowId from
        the file's offset: Hive 2.3 ``OriginalReaderPair``) and currentTransaction 0.
    """
    names = [n for n, _ in columns]
    targets = [htypes.arrow_type(t) for _, t in columns]
    parts: list[pa.Table] = []
    paths: list[str] = []
    for idx, df in enumerate(task.data_files):
        paths.append(df.path)
        if df.kind == "original":
            with tfs.open(df.path, "rb") as fh:
                table = orc_timestamps.OrcReader(fh).read()
            n = table.num_rows
            src_names = table.column_names
            data = [acid_files.normalize_timestamps(c) for c in table.columns]
            keys = [
                pa.array(np.zeros(n, np.int32)),
                pa.array(np.zeros(n, np.int64)),
                pa.array(np.full(n, df.bucket_id, np.int32)),
                pa.array(np.arange(df.row_offset, df.row_offset + n, dtype=np.int64)),
                pa.array(np.zeros(n, np.int64)),
            ]
            stmt = 0
            positional = False
        else:
            table = acid_files.read_events(tfs, df.path)
            n = table.num_rows
            src_names = table.column_names[5:]
            data = table.columns[5:]
            keys = [table.column(i) for i in range(5)]
            stmt = _statement_id(df.path)
            positional = True
        mapping = map_columns(src_names, names, positional=positional)
        cols: list[pa.Array | pa.ChunkedArray] = list(keys)
        cols += [pa.array(np.full(n, stmt, np.int32)), pa.array(np.full(n, idx, np.int32))]
        for target, src in zip(targets, mapping):
            cols.append(pa.nulls(n, target) if src is None else read_as(data[src], target))
        parts.append(
            pa.table(
                cols,
                names=list(acid_files.EVENT_FIELDS[:5]) + ["statement", "file"] + names,
            )
        )
    if not parts:
        return pa.table({}), paths
    return pa.concat_tables(parts).combine_chunks(), paths


def read_task_v1(
    tfs: TableFS,
    task: "ReadTask",
    columns: list[tuple[str, str]],
    partition_columns: list[tuple[str, str]],
    valid: ValidWriteIdList,
    *,
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
    keys: pa.Table | None = None,
) -> Iterator[pa.RecordBatch]:
    """Visible rows of a v1 task (schema ``ReadPlan.output_schema``), as Hive 2.3's
    ``OrcRawRecordMerger`` returns them: per ROW__ID the newest event whose currentTransaction
    (a txn id, taken as the write id) ``valid`` sees; ROW__ID = ``(originalTransaction, bucket
    id, rowId)`` of the row's insert.

    Args:
        as ``acidflow.read.snapshot.read_task`` (``keys`` filters the merged rows).
    Raises:
        acidflow.format.orc.files.AcidFileError: an unreadable file (names it).
    """
    events, paths = task_events(tfs, task, columns)
    if events.num_rows == 0:
        return
    col = {n: events.column(n).to_numpy(zero_copy_only=False) for n in acid_files.EVENT_FIELDS[:5]}
    valid_np = np.asarray(
        valid_mask(events.column("currentTransaction"), valid).to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    win = rules.winning_events(
        col["operation"],
        col["originalTransaction"],
        col["bucket"],
        col["rowId"],
        col["currentTransaction"],
        events.column("statement").to_numpy(zero_copy_only=False),
        valid_np,
    )
    rows = events.take(pa.array(win, pa.int64()))
    if keys is not None and rows.num_rows:
        probe = rows.append_column("__pos", pa.array(np.arange(rows.num_rows), pa.int64()))
        hit = probe.join(
            keys, keys=list(keys.column_names), join_type="left semi", use_threads=False
        ).column("__pos")
        pos = hit.combine_chunks()
        rows = rows.take(pc.take(pos, pc.sort_indices(pos)))
    m = rows.num_rows
    if m == 0:
        return
    schema = output_schema(columns, partition_columns, row_id, file_name, project)
    arrays: list[pa.Array] = [
        rows.column(n).combine_chunks() for n, _ in columns if project is None or n in project
    ]
    arrays += partition_arrays(partition_columns, task.partition, m)
    if row_id:
        arrays.append(
            pa.StructArray.from_arrays(
                [
                    rows.column("originalTransaction").combine_chunks(),
                    rows.column("bucket").combine_chunks(),
                    rows.column("rowId").combine_chunks(),
                ],
                fields=list(ROW_ID_TYPE),
            )
        )
    if file_name:
        arrays.append(pc.take(pa.array(paths, pa.string()), rows.column("file")).combine_chunks())
    yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def v1_partitions(
    location: str,
    partition_depth: int,
    valid: ValidWriteIdList,
    *,
    txn_state: Callable[[int], str] | None = None,
) -> list[str]:
    """Relative paths of a table's partitions whose snapshot reads ACID v1 directories ('' for
    an unpartitioned table), sorted.

    Args:
        location: the table directory; partition_depth: its number of partition columns;
        valid: the snapshot (a catalog's ``valid_write_ids``); txn_state: ``_v<T>`` lookup
            (a catalog's ``visibility_lookup()``).
    Raises:
        MixedAcidVersionError: not here (:func:`partition_is_v1` judges directories only).
    """
    tfs = TableFS(location)
    grouped = split_partitions(tfs.list_recursive(location), partition_depth)
    out = []
    for ppath in sorted(grouped):
        pdir = join(location, ppath) if ppath else location
        if partition_is_v1(tfs, pdir, grouped[ppath], valid, txn_state=txn_state):
            out.append(ppath)
    return out
