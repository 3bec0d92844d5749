"""Merge-on-read: the rows visible at a snapshot (a ``ValidWriteIdList``).

Two steps, as in Hive's vectorized ACID reader (``VectorizedOrcAcidRowBatchReader``):

1. **Plan** (driver, :func:`plan_read`): list the table, pick per partition the base, deltas and
   original files with ``acidflow.format.layout.get_acid_state`` (docs/hive-acid-format.md §6),
   and cut the work into :class:`ReadTask` s: one per (partition, bucket id). A task holds its
   insert-side files (base, insert deltas, original files with their synthetic ROW__ID offsets,
   docs/hive-acid-format.md §8) and the delete delta files it must apply: for a bucketed table
   only ``delete_delta_*/bucket_N`` of its own bucket, for an unbucketed table every delete delta
   file of the partition (Hive reads all of them for every split).
2. **Execute** (:func:`read_task`, pure Arrow, the same code in a Spark task or locally): load the
   delete events whose ``currentTransaction`` is valid, read the insert events stripe by stripe,
   drop events whose ``currentTransaction`` is not valid, and drop rows whose
   ``(originalTransaction, bucket, rowId)`` matches a delete event (the full bucket property,
   statement bits included, as Hive's ``ColumnizedDeleteEventRegistry.isDeleted`` compares).

:func:`read_spark` runs the tasks in Spark with ``mapInArrow`` and pyarrow's ORC reader. Spark's own
ORC reader is avoided on purpose: it breaks on files with the ACID event schema unless all six
columns are kept (env-notes, "Spark read trap").

Output schema: the table columns (Hive types mapped by ``acidflow.format.types``), then partition
columns, then optionally ``ROW__ID struct<writeid:bigint,bucketid:int,rowid:bigint>`` and
``INPUT__FILE__NAME string`` (Hive ``VirtualColumn``).
"""

from __future__ import annotations

import logging
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format import types as htypes
from acidflow.format.bucketing import encode_bucket_property
from acidflow.format.filecheck import FileProblem, check_files, raise_for
from acidflow.format.filerecords import FileRecord, by_partition
from acidflow.format.layout import (
    AcidState,
    ValidWriteIdList,
    bucket_files,
    parse_bucket_file,
    parse_original_bucket_id,
)
from acidflow.format.orc import files as acid_files
from acidflow.format.orc import orcindex, orcpredicate
from acidflow.format.orc import timestamps as orc_timestamps
from acidflow.read import acidv1, predicates, splits
from acidflow.read.deletes import load_delete_keys as load_delete_keys
from acidflow.read.deletes import surviving as _surviving
from acidflow.read.rows import (
    INPUT_FILE_NAME,
    ROW_ID,
    ROW_ID_TYPE,
    map_columns,
    output_schema,
    partition_arrays,
    table_column,
    valid_mask,
)
from acidflow.read.tasks import DataFile as DataFile
from acidflow.read.tasks import ReadPlan as ReadPlan
from acidflow.read.tasks import ReadTask as ReadTask
from acidflow.sparkmode import task_frame
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state
from acidflow.storage.tablepaths import split_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_KEYS = list(acid_files.KEY_FIELDS)
_log = logging.getLogger(__name__)


def plan_read(
    tfs: TableFS,
    table_dir: str,
    columns: list[tuple[str, str]],
    partition_columns: list[tuple[str, str]],
    valid_write_ids: ValidWriteIdList,
    *,
    bucketed: bool = False,
    partitions: Iterable[str] | None = None,
    buckets: Iterable[int] | None = None,
    read_optimized: bool = False,
    txn_state: Callable[[int], str] | None = None,
    file_records: Iterable[FileRecord] | None = None,
    table_name: str | None = None,
    partition_filter: Callable[[str], bool] | None = None,
) -> ReadPlan:
    """Plan a snapshot read of a table directory.

    Args:
        tfs: filesystem of the table.
        table_dir: table root.
        columns: table columns ``[(name, hive_type)]`` in table order.
        partition_columns: partition columns ``[(name, hive_type)]``.
        valid_write_ids: the snapshot (Hive ``ValidWriteIdList``).
        bucketed: the table is bucketed (CLUSTERED BY): delete files are matched per bucket.
        partitions: only these relative partition paths (default all).
        buckets: only these bucket ids (default all).
        read_optimized: base (or original files) only, no deltas.
        txn_state: visibility-txn state callback for ``_v<T>`` dirs (see ``get_acid_state``).
        file_records: the catalog's records of the table's files
            (``Catalog.data_file_records``), checked with this listing's sizes
            (:func:`acidflow.format.filecheck.check_files`); None = no check (a bare
            directory). Files acknowledged lost are left out (``ReadPlan.lost``).
        table_name: names the table in errors (default ``table_dir``).
        partition_filter: only the partition paths for which it is true (partition pruning,
            :func:`acidflow.read.predicates.partition_matches`): the others are neither
            resolved nor checked nor read.
    Returns:
        A :class:`ReadPlan`.
    Raises:
        acidflow.format.layout.NotEnoughHistoryError: no usable base for the snapshot (files cleaned).
        acidflow.format.filecheck.MissingDataFileError: a recorded file of the snapshot is
            missing (every such file of every partition read is named in ``problems``).
        acidflow.format.filecheck.DataFileMismatchError: a recorded file has another size.
        acidflow.format.orc.files.AcidFileError: an unreadable original file.
    """
    grouped = split_partitions(tfs.list_recursive(table_dir), len(partition_columns))
    wanted_parts = None if partitions is None else set(partitions)
    wanted_buckets = None if buckets is None else set(buckets)
    tasks: list[ReadTask] = []
    states: dict[str, AcidState] = {}
    records = None if file_records is None else by_partition(file_records)
    failures: list[FileProblem] = []
    lost: list[FileRecord] = []
    for ppath in sorted(grouped):
        if wanted_parts is not None and ppath not in wanted_parts:
            continue
        if partition_filter is not None and not partition_filter(ppath):
            continue
        pdir = join(table_dir, ppath) if ppath else table_dir
        entries = grouped[ppath]
        state = acid_state(tfs, pdir, valid_write_ids, entries=entries, txn_state=txn_state)
        states[ppath] = state
        skip: set[str] = set()
        if records is not None and records.get(ppath):
            only_base = [state.base.name] if read_optimized and state.base else None
            check = check_files(
                ppath, entries, state, records[ppath], valid_write_ids, dirs=only_base
            )
            failures += check.failures
            lost += check.lost
            skip = check.skip
        data: list[DataFile] = []
        deletes: list[tuple[str, int]] = []
        sizes = {join(pdir, e.path): e.size for e in entries if not e.is_dir}
        if state.base is not None:
            for rel, b in bucket_files(entries, state.base.name):
                if rel not in skip:
                    data.append(DataFile(join(pdir, rel), "base", b))
        else:
            data.extend(original_files(tfs, pdir, state.original_files))
        if not read_optimized:
            for d in state.deltas:
                for rel, b in bucket_files(entries, d.name):
                    if rel in skip:
                        continue
                    if d.is_delete:
                        deletes.append((join(pdir, rel), b))
                    else:
                        data.append(DataFile(join(pdir, rel), "delta", b))
        by_bucket: dict[int, ReadTask] = {}
        for f in data:
            if wanted_buckets is not None and f.bucket_id not in wanted_buckets:
                continue
            task = by_bucket.setdefault(f.bucket_id, ReadTask(ppath, f.bucket_id))
            task.data_files.append(f)
        for task in by_bucket.values():
            for f in task.data_files:
                f.size = sizes.get(f.path, 0)
            task.delete_files = [p for p, b in deletes if not bucketed or b == task.bucket_id]
        tasks.extend(by_bucket[b] for b in sorted(by_bucket))
    raise_for(table_name or table_dir, failures)
    return ReadPlan(
        table_dir, list(columns), list(partition_columns), valid_write_ids, tasks, states, lost
    )


def original_files(tfs: TableFS, pdir: str, rel_paths: list[str]) -> list[DataFile]:
    """Read-plan entries of a partition's original (pre-ACID, non-event) files, with their
    synthetic ROW__ID offsets.

    An original file has no event columns: a reader gives its rows a synthetic ROW__ID with
    write id 0 (files at the partition root), the bucket id of the file name (``000002_0`` -> 2,
    ``bucket_00002`` -> 2, any other name 0) and a rowId that continues across the original files
    of the same bucket id in path order (Hive ``OrcRawRecordMerger.OriginalReaderPair`` /
    ``VectorizedOrcAcidRowBatchReader.computeOffsetAndBucket``; docs/hive-acid-format.md §8).

    Args:
        tfs: the table's file system.
        pdir: the partition directory (the table directory when unpartitioned).
        rel_paths: the original files, relative to ``pdir`` (``AcidState.original_files``).
    Returns:
        One ``DataFile`` of kind ``"original"`` per file, in path order, with its bucket id and
        ``row_offset`` (the rows of the earlier original files of the same bucket id); each
        file's row count comes from its ORC footer.
    """
    out: list[DataFile] = []
    offsets: dict[int, int] = {}
    for rel in sorted(rel_paths):
        name = posixpath.basename(rel)
        bucket = parse_original_bucket_id(name)
        if bucket is None:
            parsed = parse_bucket_file(name)
            bucket = parsed[0] if parsed else 0
        path = join(pdir, rel)
        rows = acid_files.file_info(tfs, path).rows
        out.append(DataFile(path, "original", bucket, 0, 0, offsets.get(bucket, 0)))
        offsets[bucket] = offsets.get(bucket, 0) + rows
    return out


def source_positions(
    info: "acid_files.FileInfo", table_cols: list[str], wanted: list[str]
) -> list[int | None]:
    """Positions of the table columns ``wanted`` among a data file's data columns (the ``row``
    struct's fields of an ACID file), by :func:`read_task`'s mapping rule; None = missing."""
    mapping = map_columns(info.row_schema.names, table_cols, positional=info.is_acid)
    return [mapping[table_cols.index(c)] for c in wanted]


def check_acid_version(
    tfs: TableFS, info: "acid_files.FileInfo", cache: dict[str, int] | None = None
) -> None:
    """Trino's ACID version rule for files inside base/delta directories: the directory's
    ``_orc_acid_version`` must be >= 2, or else the file footer's ``hive.acid.version`` must be
    (Trino ``OrcPageSourceFactory``; Hive 3 writes both, Hive 3 fixtures carry only the footer).

    Raises:
        acidflow.format.orc.files.AcidFileError: neither says version 2 (a pre-Hive-3 or non-ACID file
            where ACID data is expected).
    """
    directory = posixpath.dirname(info.path)
    cache = {} if cache is None else cache
    if directory not in cache:
        cache[directory] = acid_files.read_acid_version(tfs, directory)
    if cache[directory] >= acid_files.ACID_VERSION:
        return
    raw = info.metadata.get(acid_files.ACID_VERSION_KEY, b"")
    try:
        version = int(raw.decode() or "0")
    except ValueError:
        version = 0
    if version < acid_files.ACID_VERSION:
        raise acid_files.AcidFileError(
            "Hive transactional tables are supported since Hive 3.0. Expected "
            f"`{acid_files.ACID_VERSION_KEY}` in ORC metadata of {info.path} to be >=2 but was "
            f"{raw.decode() or '<empty>'}"
        )


def key_filter_mask(
    data: list, positions: list[int | None], keys: pa.Table, types: list[pa.DataType]
) -> pa.Array:
    """Boolean mask: rows whose key columns (``data[positions[i]]``) are in ``keys``."""
    cols = []
    for pos, t in zip(positions, types):
        col = pa.nulls(len(data[0]), t) if pos is None or pos >= len(data) else data[pos]
        cols.append(col if col.type == t else col.cast(t))
    if len(cols) == 1:
        return pc.fill_null(pc.is_in(cols[0], value_set=keys.column(0)), False)
    probe = pa.table(
        cols + [pa.array(range(len(cols[0])), pa.int64())],
        names=list(keys.column_names) + ["__pos"],
    )
    hit = probe.join(
        keys, keys=list(keys.column_names), join_type="left semi", use_threads=False
    ).column("__pos")
    mask = np.zeros(len(cols[0]), dtype=bool)
    mask[hit.to_numpy()] = True
    return pa.array(mask)


def read_task(
    tfs: TableFS,
    task: ReadTask,
    columns: list[tuple[str, str]],
    partition_columns: list[tuple[str, str]],
    valid: ValidWriteIdList,
    *,
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
    keys: pa.Table | None = None,
    prune: bool | None = None,
    pruned: list[tuple[str, orcindex.StripeVerdict]] | None = None,
    where: list[predicates.Predicate] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Visible rows of one task as Arrow record batches (schema: ``ReadPlan.output_schema``).

    A split (``acidflow.read.splits``) reads only its files' stripe ranges
    (``DataFile.stripes``; an original file's synthetic rowIds start at its ``row_offset``)
    and loads only the delete events in its ``key_ranges``; a row outside them (a file not
    sorted by ROW__ID) logs a warning and makes the split load every delete event.

    Args:
        project: read only these data columns (ORC column projection: the other columns'
            streams are not read); None = all. Output keeps table order.
        keys: keep only rows whose values of ``keys``' columns (data columns, same names and
            types) are among its rows -- the key lookup of a merge, done inside the reader.
        prune: with ``keys``, skip the stripes that the files' key statistics and bloom
            filters prove free of them (``acidflow.format.orc.orcindex.file_stripes_to_read``; no
            stream of a skipped stripe is read). None (default): on unless the environment
            sets ``ACIDFLOW_KEY_INDEX=0``.
        pruned: when given, ``(path, verdict)`` of every pruned file is appended (measurement).
        where: keep only the rows every predicate keeps (:mod:`acidflow.read.predicates`,
            applied exactly to the rows after the delete events); a task whose partition
            fails is not read, and (unless ``prune`` is False or ``ACIDFLOW_KEY_INDEX=0``)
            stripes that statistics / bloom filters prove free of matches are skipped
            (:mod:`acidflow.format.orc.orcpredicate`; safe with delete events: they live in
            delete deltas, read whole, and a skipped stripe holds no matching row at all).
    Raises:
        acidflow.format.orc.files.AcidFileError: a file that is not readable ORC (names the file).
    """
    if where and not predicates.partition_matches(where, partition_columns, task.partition):
        return
    data_where = predicates.split(where or [], partition_columns)[1]
    if acidv1.task_is_v1(tfs, task):  # Hive 0.14-2.x files: Hive 2.3's merge (read/acidv1.py)
        # no stripe skipping there: the row filter is applied to its rows
        wide = (
            project
            if project is None or not data_where
            else [*project, *(p.column for p in data_where)]
        )
        yield from predicates.filter_batches(
            acidv1.read_task_v1(
                tfs, task, columns, partition_columns, valid, row_id=row_id,
                file_name=file_name, project=wide, keys=keys,
            ),
            data_where,
            output_schema(columns, partition_columns, row_id, file_name, project).names,
        )  # fmt: skip
        return
    ranges = task.key_ranges
    deletes = load_delete_keys(tfs, task.delete_files, valid, ranges)
    names = [n for n, _ in columns]
    wanted = [i for i, n in enumerate(names) if project is None or n in project]
    if keys is not None:
        missing = [k for k in keys.column_names if k not in names]
        if missing:
            raise ValueError(f"key filter columns {missing} are not table columns")
        wanted = sorted(set(wanted) | {names.index(k) for k in keys.column_names})
    wanted = sorted(set(wanted) | {names.index(p.column) for p in data_where})
    targets = [htypes.arrow_type(columns[i][1]) for i in wanted]
    out_idx = [j for j, i in enumerate(wanted) if project is None or names[i] in project]
    out_schema = output_schema(columns, partition_columns, row_id, file_name, project)
    dir_versions: dict[str, int] = {}
    for df in task.data_files:
        info = acid_files.file_info(tfs, df.path)
        if df.kind != "original":
            check_acid_version(tfs, info, dir_versions)
        acid = info.is_acid
        src_names = info.row_schema.names
        full_mapping = map_columns(src_names, names, positional=acid)
        mapping = [full_mapping[i] for i in wanted]
        # ORC column projection: read only the source columns needed (by name; the row struct's
        # children as "row.<name>"); positions below index the projected columns
        needed = sorted({m for m in mapping if m is not None})
        projectable = all("." not in src_names[m] for m in needed) and len(set(src_names)) == len(
            src_names
        )
        sel = None
        if projectable and (project is not None or keys is not None) and (needed or acid):
            top = info.schema.names
            sel = (
                (top[:5] + [f"{top[5]}.{src_names[m]}" for m in needed])
                if acid
                else [src_names[m] for m in needed]
            )
            remap = {m: j for j, m in enumerate(needed)}
            mapping = [remap.get(m) if m is not None else None for m in mapping]
        key_pos = (
            [mapping[wanted.index(names.index(k))] for k in keys.column_names]
            if keys is not None
            else None
        )
        key_types = (
            [keys.schema.field(k).type for k in keys.column_names] if keys is not None else None
        )
        offset = df.row_offset
        with tfs.open(df.path, "rb") as fh:
            verdict = None
            use_index = (
                prune if prune is not None else os.environ.get("ACIDFLOW_KEY_INDEX", "1") != "0"
            )
            if keys is not None and use_index:
                verdict = orcindex.file_stripes_to_read(
                    fh,
                    acid=acid,
                    positions=[full_mapping[names.index(k)] for k in keys.column_names],
                    keys=keys,
                )
            if data_where and use_index:
                verdict = orcpredicate.both(
                    verdict,
                    orcpredicate.file_stripes_matching(
                        fh,
                        acid=acid,
                        conditions=predicates.conditions(data_where, columns, full_mapping),
                    ),
                )
            if verdict is not None:
                if pruned is not None:
                    pruned.append((df.path, verdict))
                span = verdict.keep[slice(*df.stripes)] if df.stripes else verdict.keep
                if verdict.keep and not any(span):
                    continue  # no stripe may hold a key: not even the reader's tail is read
            orc = orc_timestamps.OrcReader(fh)  # pyarrow, timestamps of any year
            first, end = df.stripes if df.stripes is not None else (0, orc.nstripes)
            for s in range(first, min(end, orc.nstripes)):
                if verdict is not None and not verdict.reads(s):
                    offset += verdict.rows[s]  # original files: synthetic rowIds go on
                    continue
                batch = orc.read_stripe(s, columns=sel) if sel is not None else orc.read_stripe(s)
                n = batch.num_rows
                if n == 0:
                    continue
                if acid:
                    owid = batch.column(1)
                    bucket = batch.column(2)
                    rid = batch.column(3)
                    cwid = batch.column(4)
                    row = batch.column(5) if batch.num_columns > 5 else None
                    data = (
                        [row.field(i) for i in range(row.type.num_fields)]
                        if row is not None
                        else []
                    )
                    keep_mask = pc.and_(
                        valid_mask(cwid, valid),
                        pc.not_equal(batch.column(0), acid_files.OPERATION_DELETE),
                    )
                else:
                    owid = pa.array([df.write_id] * n, pa.int64())
                    bucket = pa.array(
                        [encode_bucket_property(df.bucket_id, df.statement_id)] * n, pa.int32()
                    )
                    rid = pa.array(range(offset, offset + n), pa.int64())
                    offset += n
                    data = list(batch.columns)
                    keep_mask = None
                if keys is not None and key_pos is not None and key_types is not None:
                    km = key_filter_mask(data, key_pos, keys, key_types)
                    keep_mask = km if keep_mask is None else pc.and_(keep_mask, km)
                keys_tbl = pa.table([owid, bucket, rid], names=_KEYS)
                if ranges is not None and not pc.all(splits.in_ranges(keys_tbl, ranges)).as_py():
                    # a row outside the split's key ranges (a file not sorted by ROW__ID):
                    # every delete event of the bucket applies from here on
                    _log.warning(
                        "%s stripe %d: a ROW__ID outside the split's key ranges %s (file not "
                        "sorted by ROW__ID?); this split loads every delete event",
                        df.path,
                        s,
                        ranges,
                    )
                    ranges = None
                    deletes = load_delete_keys(tfs, task.delete_files, valid)
                if keep_mask is not None and not pc.all(keep_mask).as_py():
                    keep_idx = pc.indices_nonzero(keep_mask)
                else:
                    keep_idx = None
                if keep_idx is not None:
                    keys_tbl = keys_tbl.take(keep_idx)
                    data = [c.take(keep_idx) for c in data]
                if data_where:
                    values = {
                        names[i]: table_column(data, mapping[j], targets[j], keys_tbl.num_rows)
                        for j, i in enumerate(wanted)
                        if any(p.column == names[i] for p in data_where)
                    }
                    hit = pc.indices_nonzero(
                        predicates.row_mask(values, data_where, keys_tbl.num_rows)
                    )
                    keys_tbl = keys_tbl.take(hit)
                    data = [c.take(hit) for c in data]
                survivors = _surviving(keys_tbl, deletes)
                if survivors is not None:
                    keys_tbl = keys_tbl.take(survivors)
                    data = [c.take(survivors) for c in data]
                m = keys_tbl.num_rows
                if m == 0:
                    continue
                arrays = []
                for j in out_idx:
                    arrays.append(table_column(data, mapping[j], targets[j], m))
                arrays += partition_arrays(partition_columns, task.partition, m)
                if row_id:
                    arrays.append(
                        pa.StructArray.from_arrays(
                            [
                                keys_tbl.column(0).combine_chunks(),
                                keys_tbl.column(1).combine_chunks(),
                                keys_tbl.column(2).combine_chunks(),
                            ],
                            fields=list(ROW_ID_TYPE),
                        )
                    )
                if file_name:
                    arrays.append(pa.array([df.path] * m, pa.string()))
                arrays = [
                    a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays
                ]
                yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)


def read_arrow(
    tfs: TableFS,
    plan: ReadPlan,
    *,
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
    keys: pa.Table | None = None,
    where: list[predicates.Predicate] | None = None,
    split_bytes: int | None = None,
) -> pa.Table:
    """Run every task of a plan in this process and return one Arrow table (no Spark);
    ``project``, ``keys`` and ``where`` as in :func:`read_task`; buckets larger than
    ``split_bytes`` (None = the ``ACIDFLOW_READ_SPLIT_BYTES`` setting) are read split by split
    (:func:`acidflow.read.splits.split_tasks`: a split holds only its delete events)."""
    schema = plan.output_schema(row_id, file_name, project)
    batches = [
        b
        for t in splits.split_tasks(tfs, plan.tasks, split_bytes)
        for b in read_task(
            tfs,
            t,
            plan.columns,
            plan.partition_columns,
            plan.valid_write_ids,
            row_id=row_id,
            file_name=file_name,
            project=project,
            keys=keys,
            where=where,
        )
    ]
    return pa.Table.from_batches(batches, schema=schema)


def read_arrow_parallel(
    tfs: TableFS,
    plan: ReadPlan,
    *,
    threads: int = 2,
    split_bytes: int | None = None,
    **kwargs: Any,
) -> pa.Table:
    """:func:`read_arrow` with the plan's tasks spread over ``threads`` threads of this process
    (pyarrow's ORC decoding releases the GIL). For small, selective reads -- a merge's key
    lookup -- this is much cheaper than a Spark job (no task scheduling, no Python workers, no
    Arrow stream to the JVM and back). Buckets larger than ``split_bytes`` are cut into
    splits (as :func:`read_arrow`), so threads share a big bucket. ``kwargs``: ``row_id``,
    ``file_name``, ``project``, ``keys`` as in :func:`read_task`."""
    schema = plan.output_schema(
        kwargs.get("row_id", False), kwargs.get("file_name", False), kwargs.get("project")
    )

    def one(task: ReadTask) -> list[pa.RecordBatch]:
        return list(
            read_task(
                tfs, task, plan.columns, plan.partition_columns, plan.valid_write_ids, **kwargs
            )
        )

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        parts_ = list(pool.map(one, splits.split_tasks(tfs, plan.tasks, split_bytes)))
    return pa.Table.from_batches([b for p in parts_ for b in p], schema=schema)


def planned_bytes(tfs: TableFS, plan: ReadPlan) -> int:
    """Total size in bytes of the data and delete files a plan reads."""
    paths = {f.path for t in plan.tasks for f in t.data_files}
    paths |= {p for t in plan.tasks for p in t.delete_files}
    return sum(tfs.size(p) for p in paths)


def split_plan(plan: ReadPlan, first: Callable[[DataFile], bool]) -> tuple[ReadPlan, ReadPlan]:
    """Two plans that together read what ``plan`` reads: the data files for which ``first``
    is true, and the others. Each task is cut in two with the same delete files (delete events
    match on ROW__ID, so applying them to a part of a task's insert events is the same as to
    the whole); tasks left with no data files are dropped."""
    a: list[ReadTask] = []
    b: list[ReadTask] = []
    for t in plan.tasks:
        for side, files in (
            (a, [f for f in t.data_files if first(f)]),
            (b, [f for f in t.data_files if not first(f)]),
        ):
            if files:
                side.append(ReadTask(t.partition, t.bucket_id, files, list(t.delete_files)))
    return (
        ReadPlan(
            plan.table_dir,
            plan.columns,
            plan.partition_columns,
            plan.valid_write_ids,
            a,
            plan.states,
        ),
        ReadPlan(
            plan.table_dir,
            plan.columns,
            plan.partition_columns,
            plan.valid_write_ids,
            b,
            plan.states,
        ),
    )


def read_spark(
    spark: "SparkSession",
    tfs_url: str,
    plan: ReadPlan,
    *,
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
    keys: pa.Table | None = None,
    where: list[predicates.Predicate] | None = None,
    split_bytes: int | None = None,
) -> "DataFrame":
    """Run a plan as a Spark job: one Spark partition per split, ``mapInArrow`` + pyarrow ORC.

    Args:
        spark: SparkSession.
        tfs_url: any path/URL of the table's filesystem (rebuilt inside each task).
        plan: from :func:`plan_read`.
        project, keys, where: as in :func:`read_task` (``keys`` is shipped to every task).
        split_bytes: buckets larger than this are cut into splits (stripe ranges,
            :func:`acidflow.read.splits.split_tasks`; planned here, on the driver); None = the
            ``ACIDFLOW_READ_SPLIT_BYTES`` setting.
    Returns:
        A DataFrame with the columns of ``plan.output_schema`` (Spark types from
        ``acidflow.format.types``; timestamps as ``TimestampNTZType``).
    """
    # deferred: pyspark stays out of the in-process (Arrow) read paths
    from pyspark.sql import types as T

    from acidflow import sparktypes  # deferred: it imports pyspark

    fields = [
        T.StructField(n, sparktypes.spark_type(t))
        for n, t in plan.columns
        if project is None or n in project
    ]
    fields += [T.StructField(n, sparktypes.spark_type(t)) for n, t in plan.partition_columns]
    if row_id:
        fields.append(
            T.StructField(
                ROW_ID,
                T.StructType(
                    [
                        T.StructField("writeid", T.LongType()),
                        T.StructField("bucketid", T.IntegerType()),
                        T.StructField("rowid", T.LongType()),
                    ]
                ),
            )
        )
    if file_name:
        fields.append(T.StructField(INPUT_FILE_NAME, T.StringType()))
    schema = T.StructType(fields)
    if not plan.tasks:
        return spark.createDataFrame([], schema)
    columns, pcols, valid = plan.columns, plan.partition_columns, plan.valid_write_ids

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local_fs = TableFS(tfs_url)
        for b in batches:
            for text in b.column(0).to_pylist():
                yield from read_task(
                    local_fs,
                    ReadTask.from_json(text),
                    columns,
                    pcols,
                    valid,
                    row_id=row_id,
                    file_name=file_name,
                    project=project,
                    keys=keys,
                    where=where,
                )

    tasks = splits.split_tasks(TableFS(tfs_url), plan.tasks, split_bytes)
    return task_frame(spark, [t.to_json() for t in tasks], "task").mapInArrow(run, schema)
