"""Small-file packing for the major compaction of an unbucketed table (pure helpers).

In an unbucketed table ``bucket_N`` is named by the writer (task) id, so every insert of every
writer leaves its own file, and Hive 3.1's major compaction keeps one output file per writer id.
acidflow's major compaction of an unbucketed partition instead packs the live rows into files
of about ``acidflow.target.file.bytes`` (default 128 MiB): the input writer groups, in writer-id
order, are put into bins of about that many input bytes, each bin is one task, and a bin larger
than the target is cut into several files by row count. Output files are numbered
``bucket_00000``, ``bucket_00001``, ... across the partition.

ROW__IDs are kept (a major compaction in Hive keeps them): a packed file holds rows of several
bucket properties, sorted by (originalTransaction, bucket property, rowId) as every ACID file
must be. Hive 3.1.3's readers (row-by-row and vectorized) read such a base, and apply later
delete events to its rows, equal to acidflow -- checked with the Hive 3.1.3 oracle in
``tests/integration/test_small_files.py``. Bucketed tables keep one file per bucket (Hive's
rule: a reader of bucket N opens ``bucket_N`` only).
"""

from __future__ import annotations

import math

import pyarrow as pa

#: default ``acidflow.target.file.bytes``: the size packed base files aim at (128 MiB)
DEFAULT_TARGET_FILE_BYTES = 128 * 1024 * 1024


def plan_bins(input_bytes: dict[int, int], target_bytes: int) -> list[tuple[list[int], list[int]]]:
    """Group writer ids into packing bins (pure).

    Args:
        input_bytes: ``{writer/bucket id: bytes of its input files}``.
        target_bytes: ``acidflow.target.file.bytes`` (> 0).
    Returns:
        ``[(writer ids read by the bin, output file numbers of the bin)]`` in writer-id order;
        a bin collects writer groups until their bytes reach ``target_bytes`` (closing early
        rather than passing 1.5 x the target) and gets ``round(bytes / target)`` file numbers
        (at least one), numbered 0, 1, ... across bins, so files land between about 2/3 and
        1.5 x the target (less when deletes or better compression shrink the rows).
    Raises:
        ValueError: ``target_bytes`` not positive.
    """
    if target_bytes <= 0:
        raise ValueError(f"acidflow.target.file.bytes must be positive, got {target_bytes}")
    bins: list[tuple[list[int], int]] = []
    ids: list[int] = []
    size = 0
    for b in sorted(input_bytes):
        if ids and (size >= target_bytes or size + input_bytes[b] > 1.5 * target_bytes):
            bins.append((ids, size))
            ids, size = [], 0
        ids.append(b)
        size += input_bytes[b]
    if ids:
        bins.append((ids, size))
    out: list[tuple[list[int], list[int]]] = []
    next_file = 0
    for group, nbytes in bins:
        n = max(1, round(nbytes / target_bytes))
        out.append((group, list(range(next_file, next_file + n))))
        next_file += n
    return out


def split_rows(table: pa.Table, parts: int) -> list[pa.Table]:
    """``table`` cut into ``parts`` consecutive slices of (almost) equal row counts; empty
    slices are dropped (pure)."""
    if parts <= 1 or table.num_rows == 0:
        return [table] if table.num_rows else []
    step = math.ceil(table.num_rows / parts)
    return [table.slice(i, step) for i in range(0, table.num_rows, step)]
