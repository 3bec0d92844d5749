"""Read splits finer than a bucket: stripe ranges of one event file, and the delete events
each split must apply.

A snapshot read plans one :class:`acidflow.read.snapshot.ReadTask` per (partition, bucket).
When a task's insert-side files together exceed a target size (:func:`split_target`, setting
``ACIDFLOW_READ_SPLIT_BYTES``, 128 MiB by default like Spark's
``spark.sql.files.maxPartitionBytes``), :func:`split_tasks` cuts it, as Hive's ``OrcSplit`` /
``VectorizedOrcAcidRowBatchReader`` and Trino's ORC ACID splits do:

* **Stripe ranges.** A file larger than the target is cut into runs of consecutive stripes of
  about the target's bytes (:func:`cut_stripes`; Hive: an ``OrcSplit`` is a byte range of one
  file and reads the stripes whose start offset lies in it -- the same stripes). Smaller files
  stay whole. The pieces (whole files and stripe ranges, in the task's file order) are packed
  in order into splits of at most the target (:func:`pack`, next-fit, as Spark packs small
  files), so reading the splits one after the other yields the rows of the task in its order.
  A bucket below the target stays one task, and planning reads no footer for it.
* **Synthetic ROW__IDs.** An original file's rowIds continue across the stripes and files of
  its bucket (``DataFile.row_offset``): a stripe range starts at the file's offset plus the
  rows of its earlier stripes (Hive ``OrcSplit`` + ``computeOffsetAndBucket``).
* **Delete events per split.** Every split loads the delete delta files of its bucket, but
  keeps only the delete events whose ``(originalTransaction, bucket, rowId)`` lies in one of
  the split's key ranges (:func:`file_key_range`; Hive ``OrcRawRecordMerger`` minKey/maxKey
  from ``hive.acid.key.index``, and a search argument on the delete deltas' stripes,
  :func:`stripes_in_ranges`) -- a split does not hold all of its bucket's delete events.
  ACID event files are sorted by that key, so a stripe range's keys lie between the key index
  entries of the stripe before it and of its last stripe (both taken inclusive); an original
  file's synthetic keys are known exactly. A file without a usable key index gives no range
  (the split loads every delete event). The reader checks that each row's key lies in its
  split's ranges and falls back to every delete event if one does not (a file not sorted
  as Hive writes them).

The rules here (:func:`cut_stripes`, :func:`pack`, :func:`file_key_range`,
:func:`stripes_in_ranges`, :func:`in_ranges`) are pure; :func:`split_tasks` does the I/O
(ORC tails of the files of the buckets that are cut).
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from typing import Sequence, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format.bucketing import encode_bucket_property
from acidflow.format.orc import files as acid_files
from acidflow.format.orc import orcindex
from acidflow.read import acidv1
from acidflow.read.tasks import DataFile, Key, KeyRange, ReadTask
from acidflow.storage.fs import TableFS

#: default target bytes of a read split (Spark ``spark.sql.files.maxPartitionBytes``)
DEFAULT_SPLIT_BYTES = 128 << 20
#: environment key of the target (bytes; 0 = never split a bucket)
SPLIT_BYTES_ENV = "ACIDFLOW_READ_SPLIT_BYTES"


T = TypeVar("T")


def split_target(value: int | None = None) -> int:
    """The target bytes of a read split.

    Args:
        value: an explicit target (bytes); None = ``ACIDFLOW_READ_SPLIT_BYTES`` from the
            environment, else :data:`DEFAULT_SPLIT_BYTES`.
    Returns:
        Bytes; 0 or less means buckets are never cut.
    Raises:
        ValueError: the environment value is not an integer.
    """
    if value is not None:
        return value
    raw = os.environ.get(SPLIT_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_SPLIT_BYTES
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{SPLIT_BYTES_ENV}={raw!r} is not a number of bytes") from None


# ------------------------------------------------------------------------------ pure rules


def cut_stripes(stripe_bytes: Sequence[int], target: int) -> list[tuple[int, int]]:
    """Runs of consecutive stripes of about ``target`` bytes each.

    A run closes once it holds at least ``target`` bytes (a stripe larger than the target is
    a run of its own), so every run but the last holds at least the target; the last run is
    merged into the one before when it holds less than half of it (no tiny trailing split).

    Args:
        stripe_bytes: each stripe's length in bytes (index + data + footer), in file order.
        target: bytes per run (> 0).
    Returns:
        ``[(first, end)]`` stripe index ranges (end exclusive) covering every stripe once, in
        order; ``[]`` for a file without stripes.
    """
    runs: list[tuple[int, int]] = []
    start, acc = 0, 0
    for i, b in enumerate(stripe_bytes):
        acc += b
        if acc >= target:
            runs.append((start, i + 1))
            start, acc = i + 1, 0
    if start < len(stripe_bytes):
        if runs and acc * 2 < target:
            runs[-1] = (runs[-1][0], len(stripe_bytes))
        else:
            runs.append((start, len(stripe_bytes)))
    return runs


def pack(pieces: Sequence[tuple[T, int]], target: int) -> list[list[T]]:
    """Consecutive pieces packed into groups of at most ``target`` bytes (next-fit, order
    kept; a piece larger than the target is a group of its own).

    Args:
        pieces: ``(item, bytes)`` in read order.
        target: bytes per group (> 0).
    Returns:
        The groups, in order, each non-empty.
    """
    groups: list[list[T]] = []
    acc = 0
    for item, size in pieces:
        if groups and acc + size <= target:
            groups[-1].append(item)
            acc += size
        else:
            groups.append([item])
            acc = size
    return groups


def file_key_range(
    *,
    acid: bool,
    first: int,
    end: int,
    nstripes: int,
    key_index: Sequence[tuple[int, int, int]] | None = None,
    first_key: Key | None = None,
    write_id: int = 0,
    bucket_property: int = 0,
    first_row: int = 0,
    rows: int = 0,
) -> KeyRange | None:
    """The ROW__ID keys stripes ``[first, end)`` of one insert-side file can hold.

    ACID event file: its events are sorted by ``(originalTransaction, bucket, rowId)`` and
    ``hive.acid.key.index`` holds each stripe's last key (Hive ``OrcRecordUpdater``), so the
    range is ``[key of stripe first-1, key of stripe end-1]`` (the low end inclusive, one key
    more than needed; for the first stripe ``first_key``, a lower bound from its statistics,
    else unbounded) -- Hive ``OrcRawRecordMerger.discoverKeyBounds`` and
    ``VectorizedOrcAcidRowBatchReader.findMinMaxKeys``. Original file: ``[(write_id, bucket_property,
    first_row), (write_id, bucket_property, first_row + rows - 1)]`` exactly (Hive
    ``discoverOriginalKeyBounds``).

    Args:
        acid: an ACID event file (else an original file).
        first, end: the stripe range (end exclusive); nstripes: the file's stripe count.
        key_index: the parsed key index (ACID files; None or a count other than ``nstripes``:
            no range).
        first_key: a lower bound of the file's first key (:func:`first_key_bound`), or None.
        write_id, bucket_property, first_row, rows: the synthetic ROW__IDs of an original
            file's range (``rows`` in the range, ``first_row`` the first one's rowId).
    Returns:
        ``[low, high]`` (each ``[owid, bucket, rowId]`` or None = unbounded), or None when
        nothing bounds the keys.
    """
    if not acid:
        if rows <= 0:
            return [[write_id, bucket_property, first_row], [write_id, bucket_property, first_row]]
        return [
            [write_id, bucket_property, first_row],
            [write_id, bucket_property, first_row + rows - 1],
        ]
    if key_index is None or len(key_index) != nstripes or not 0 <= first < end <= nstripes:
        return None
    low = list(key_index[first - 1]) if first > 0 else first_key
    return [low, list(key_index[end - 1])]


def first_key_bound(tail: orcindex.OrcTailIndex) -> Key | None:
    """A lower bound of the first ``(originalTransaction, bucket, rowId)`` of an ACID event
    file: the three columns' minima in its first stripe's statistics (each component is at
    most the first key's, so the tuple is lexicographically at most every key).

    Args:
        tail: the file's parsed tail (:func:`acidflow.format.orc.orcindex.read_tail_index`).
    Returns:
        ``[owid, bucket, rowId]``, or None when the statistics do not give all three.
    """
    if not tail.types or len(tail.types[0].subtypes) != 6 or not tail.stripes:
        return None
    out = []
    for column in tail.types[0].subtypes[1:4]:
        stats = tail.column_stats(0, column)
        if stats is None or not isinstance(stats.minimum, int):
            return None
        out.append(stats.minimum)
    return out


def _le(a: Sequence[int], b: Sequence[int]) -> bool:
    return tuple(a) <= tuple(b)


def stripes_in_ranges(
    key_index: Sequence[tuple[int, int, int]], nstripes: int, ranges: Sequence[KeyRange]
) -> list[int] | None:
    """The stripes of a sorted event file (a delete delta) that may hold a key of ``ranges``
    (Hive's search argument on the delete deltas of a split, from the split's key interval).

    Stripe ``s`` holds keys in ``[key_index[s-1], key_index[s]]`` (unbounded below for the
    first stripe).

    Args:
        key_index: the file's parsed ``hive.acid.key.index``; nstripes: its stripe count.
        ranges: inclusive key ranges (:func:`file_key_range`).
    Returns:
        Stripe numbers in order, or None when the key index does not describe every stripe
        or is not ascending (a file not sorted by ROW__ID, as Hive's writers sort them: read
        the whole file rather than skip a stripe holding a needed delete event).
    """
    if len(key_index) != nstripes:
        return None
    if any(tuple(a) > tuple(b) for a, b in zip(key_index, key_index[1:])):
        return None
    out = []
    for s in range(nstripes):
        s_low = key_index[s - 1] if s > 0 else None
        s_high = key_index[s]
        for low, high in ranges:
            if (low is None or _le(low, s_high)) and (
                high is None or s_low is None or _le(s_low, high)
            ):
                out.append(s)
                break
    return out


def _cmp_mask(keys: pa.Table, bound: Key, *, low: bool) -> pa.Array:
    """``keys >= bound`` (low) or ``keys <= bound`` lexicographically, element by element."""
    o, b, r = (keys.column(i) for i in range(3))
    strict = pc.greater if low else pc.less
    last = pc.greater_equal if low else pc.less_equal
    return pc.or_(
        strict(o, bound[0]),
        pc.and_(
            pc.equal(o, bound[0]),
            pc.or_(strict(b, bound[1]), pc.and_(pc.equal(b, bound[1]), last(r, bound[2]))),
        ),
    )


def in_ranges(keys: pa.Table, ranges: Sequence[KeyRange]) -> pa.Array:
    """Which ``(originalTransaction, bucket, rowId)`` rows lie in one of ``ranges``.

    Args:
        keys: a table whose first three columns are those keys (int64, int32, int64).
        ranges: inclusive key ranges (:func:`file_key_range`).
    Returns:
        A boolean array of ``keys.num_rows`` (False for a NULL key).
    """
    mask: pa.Array | None = None
    for low, high in ranges:
        m: pa.Array | None = None
        if low is not None:
            m = _cmp_mask(keys, low, low=True)
        if high is not None:
            h = _cmp_mask(keys, high, low=False)
            m = h if m is None else pc.and_(m, h)
        if m is None:  # unbounded both ways
            return pa.array([True] * keys.num_rows, pa.bool_())
        mask = m if mask is None else pc.or_(mask, m)
    if mask is None:
        return pa.array([False] * keys.num_rows, pa.bool_())
    out = pc.fill_null(mask, False)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


# ------------------------------------------------------------------------------- planning


def _pieces(tfs: TableFS, df: DataFile, target: int) -> list[tuple[DataFile, int, KeyRange | None]]:
    """A data file as whole-file or stripe-range pieces ``(DataFile, bytes, key range)``."""
    size = df.size or tfs.size(df.path)
    info = acid_files.file_info(tfs, df.path)
    acid = info.is_acid
    key_index = None
    if acid and acid_files.KEY_INDEX_KEY in info.metadata:
        try:
            key_index = acid_files.parse_key_index(info.metadata[acid_files.KEY_INDEX_KEY])
        except (acid_files.AcidFileError, ValueError):
            key_index = None
    bucket_property = encode_bucket_property(df.bucket_id, df.statement_id)
    tail = None
    if acid or (size > target and info.stripes > 1):
        with tfs.open(df.path, "rb") as fh:
            try:
                tail = orcindex.read_tail_index(fh, size, path=df.path)
            except (orcindex.OrcIndexError, IndexError, ValueError, zlib.error):
                tail = None  # a tail the index cannot parse: no bound, the file stays whole
    first_key = None
    if acid and tail is not None:
        try:
            first_key = first_key_bound(tail)
        except (orcindex.OrcIndexError, IndexError, ValueError, zlib.error):
            first_key = None
    stripes: list[orcindex.StripeInfo] = []
    if tail is not None and size > target and len(tail.stripes) == info.stripes > 1:
        stripes = tail.stripes
    if not stripes:
        rng = file_key_range(
            acid=acid,
            first=0,
            end=info.stripes,
            nstripes=info.stripes,
            key_index=key_index,
            first_key=first_key,
            write_id=df.write_id,
            bucket_property=bucket_property,
            first_row=df.row_offset,
            rows=info.rows,
        )
        return [(df, size, rng)]
    out: list[tuple[DataFile, int, KeyRange | None]] = []
    rows_before = 0
    for first, end in cut_stripes(
        [s.index_length + s.data_length + s.footer_length for s in stripes], target
    ):
        rows = sum(s.rows for s in stripes[first:end])
        piece = dataclasses.replace(
            df,
            stripes=[first, end],
            row_offset=df.row_offset + (0 if acid else rows_before),
        )
        rng = file_key_range(
            acid=acid,
            first=first,
            end=end,
            nstripes=len(stripes),
            key_index=key_index,
            first_key=first_key,
            write_id=df.write_id,
            bucket_property=bucket_property,
            first_row=piece.row_offset,
            rows=rows,
        )
        nbytes = sum(s.index_length + s.data_length + s.footer_length for s in stripes[first:end])
        out.append((piece, nbytes, rng))
        rows_before += rows
    return out


def split_task(tfs: TableFS, task: ReadTask, target: int) -> list[ReadTask]:
    """One read task cut into splits of about ``target`` bytes (module doc).

    Args:
        tfs: the table's file system.
        task: a (partition, bucket) task of :func:`acidflow.read.snapshot.plan_read`
            (``DataFile.size`` from the listing; 0 = asked of the file system).
        target: bytes per split; 0 or less = never cut.
    Returns:
        ``[task]`` when its files hold at most ``target`` bytes (no footer read), are ACID v1
        files (:mod:`acidflow.read.acidv1`: merged per bucket) or cannot be cut; else the splits in read order, each with the task's partition, bucket and delete
        files, its files (stripe ranges in ``DataFile.stripes``) and ``key_ranges`` (None
        when a file of it has no usable key index: every delete event applies).
    Raises:
        acidflow.format.orc.files.AcidFileError: a file that is not readable ORC.
    """
    if target <= 0 or task.key_ranges is not None or not task.data_files:
        return [task]
    sizes = [f.size or tfs.size(f.path) for f in task.data_files]
    if sum(sizes) <= target:
        return [task]
    if acidv1.task_is_v1(tfs, task):  # ACID v1: Hive 2.3 merges a bucket's events whole
        return [task]
    pieces = [p for f in task.data_files for p in _pieces(tfs, f, target)]
    groups = pack([((f, r), n) for f, n, r in pieces], target)
    if len(groups) < 2:
        return [task]
    out = []
    for g in groups:
        ranges = [r for _, r in g if r is not None]
        out.append(
            dataclasses.replace(
                task,
                data_files=[f for f, _ in g],
                delete_files=list(task.delete_files),
                key_ranges=ranges if len(ranges) == len(g) else None,
            )
        )
    return out


def split_tasks(tfs: TableFS, tasks: Sequence[ReadTask], target: int | None = None) -> list:
    """:func:`split_task` over a plan's tasks, in order.

    Args:
        tfs: the table's file system; tasks: ``ReadPlan.tasks``.
        target: bytes per split; None = :func:`split_target` (the setting).
    Returns:
        ``list[ReadTask]``: the splits (a task below the target unchanged).
    """
    t = split_target(target)
    return [s for task in tasks for s in split_task(tfs, task, t)]
