"""The record-level key index of a base (Hudi's record-level index, on Hive's layout): the rules.

A major compaction writes, next to the bucket files of the new base, one hidden sidecar
``base_N/_acidflow_key_index.parquet`` (:data:`INDEX_FILE`). Its name starts with ``_``, so
Hive (``AcidUtils`` / ``FileUtils.HIDDEN_FILES_PATH_FILTER``), Trino (its listing skips names
starting with ``_`` or ``.``) and acidflow's own listing (``acidflow.format.names.is_hidden``:
``bucket_files``, the data-file checks of ``acidflow.format.filecheck``) never take it for data;
the cleaner removes it with its directory. It holds one row per row of the base (Parquet,
sorted by key hash, row groups of :data:`ROW_GROUP_ROWS`):

* ``hash`` -- :func:`acidflow.format.keys.key_hashes_of_columns` of the row's data key columns
  (the primary key columns that are not partition columns, in primary key order, with the
  table's types): the one key rule of acidflow;
* the data key columns themselves (to tell two keys of equal hash apart);
* ``file`` -- the bucket file's name inside the base (``bucket_00000``);
* ``originalTransaction``, ``bucket`` (the bucket property), ``rowId`` -- the row's ROW__ID.

Its Parquet metadata (:data:`COVERAGE_KEY`) records what it was built from (:class:`Coverage`):
the base's bucket files with their sizes and row counts, and the key columns with their Hive
types. A lookup uses a sidecar only when every base file it would read is covered with the same
size and the key columns still have those types (:func:`stale_reason`); otherwise -- and when
it is missing or unreadable -- the lookup reads the base as without it. The sidecar is derived
data: nothing needs it for correctness, ``acidflow fsck TABLE --rebuild-index`` rebuilds it.

A lookup of K keys hashes them, keeps the row groups whose hash range (Parquet statistics) holds
one (:func:`row_groups_for`), finds the matching rows by binary search in the sorted hashes
(:func:`match_positions`) and keeps those whose key columns equal a wanted key. The candidates
are then validated against the snapshot as the reader would (write id valid, no visible delete
event of the ROW__ID): delete events still come from the delete deltas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from acidflow.format.keys import HASH_DTYPE

#: The sidecar's file name inside a base directory (hidden: starts with ``_``).
INDEX_FILE = "_acidflow_key_index.parquet"

#: Version of the sidecar's layout (a reader ignores other versions: stale).
FORMAT_VERSION = 1

#: Parquet metadata key of the sidecar's :class:`Coverage` (JSON).
COVERAGE_KEY = b"acidflow.key_index"

#: Rows per Parquet row group: a lookup reads the row groups whose hash range holds a key.
ROW_GROUP_ROWS = 4096

HASH_COL = "hash"
FILE_COL = "file"
OWID_COL = "originalTransaction"
BUCKET_COL = "bucket"
ROWID_COL = "rowId"


@dataclass
class Coverage:
    """What a sidecar was built from.

    Attributes:
        files: ``{bucket file name: (size in bytes, rows)}`` of the base's files.
        key_columns: ``[(name, hive_type)]`` of the indexed (data) key columns, primary key order.
        version: :data:`FORMAT_VERSION` of the writer.
    """

    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    key_columns: list[tuple[str, str]] = field(default_factory=list)
    version: int = FORMAT_VERSION

    def to_json(self) -> bytes:
        """The metadata value stored under :data:`COVERAGE_KEY`."""
        return json.dumps(
            {
                "version": self.version,
                "files": {n: list(v) for n, v in sorted(self.files.items())},
                "key_columns": [list(c) for c in self.key_columns],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "Coverage":
        """Inverse of :meth:`to_json`.

        Raises:
            ValueError: not a coverage record (bad JSON or fields).
        """
        try:
            d = json.loads(raw)
            return cls(
                {str(n): (int(v[0]), int(v[1])) for n, v in d["files"].items()},
                [(str(c[0]), str(c[1])) for c in d["key_columns"]],
                int(d["version"]),
            )
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise ValueError(f"not a key index coverage record: {exc}") from exc


def index_schema(key_fields: list[pa.Field]) -> pa.Schema:
    """The sidecar's Arrow schema for data key columns ``key_fields`` (table types)."""
    return pa.schema(
        [pa.field(HASH_COL, pa.uint64()), *key_fields]
        + [
            pa.field(FILE_COL, pa.string()),
            pa.field(OWID_COL, pa.int64()),
            pa.field(BUCKET_COL, pa.int32()),
            pa.field(ROWID_COL, pa.int64()),
        ]
    )


def stale_reason(
    coverage: Coverage, files: dict[str, int], key_columns: list[tuple[str, str]]
) -> str | None:
    """Why a sidecar cannot answer for a base's files, or None when it can.

    Args:
        coverage: the sidecar's :class:`Coverage`.
        files: ``{bucket file name: size}`` of the base's files a lookup reads.
        key_columns: the table's data key columns ``[(name, hive_type)]`` now.
    Returns:
        A reason (names the first file or column that differs) or None.
    """
    if coverage.version != FORMAT_VERSION:
        return f"index version {coverage.version}, expected {FORMAT_VERSION}"
    if [(n.lower(), t.lower()) for n, t in coverage.key_columns] != [
        (n.lower(), t.lower()) for n, t in key_columns
    ]:
        return f"indexed key columns {coverage.key_columns}, the table's are {key_columns}"
    for name, size in sorted(files.items()):
        got = coverage.files.get(name)
        if got is None:
            return f"{name} is not covered"
        if got[0] != size:
            return f"{name} has {size} bytes, the index covers {got[0]}"
    return None


def sort_by_hash(index: pa.Table) -> pa.Table:
    """The sidecar rows sorted by key hash; rows of equal hash keep their order (a stable
    sort: built file by file in row order, they stay in (file, row) order)."""
    hashes = index.column(HASH_COL).to_numpy()
    return index.take(pa.array(np.argsort(hashes, kind="stable")))


def query_hashes(hashes: np.ndarray) -> np.ndarray:
    """The wanted keys' hashes as a sorted unique ``uint64`` array."""
    return np.unique(np.asarray(hashes, dtype=HASH_DTYPE))


def row_groups_for(bounds: list[tuple[int, int]], query: np.ndarray) -> list[int]:
    """Row groups (by index) whose hash range ``[lo, hi]`` holds a wanted hash.

    Args:
        bounds: ``(min, max)`` hash of each row group (Parquet statistics).
        query: sorted unique wanted hashes (:func:`query_hashes`).
    Returns:
        Ascending row group indices; O(G log K).
    """
    out = []
    for i, (lo, hi) in enumerate(bounds):
        j = int(np.searchsorted(query, np.uint64(lo), side="left"))
        if j < len(query) and int(query[j]) <= hi:
            out.append(i)
    return out


def match_positions(sorted_hashes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Positions of the rows whose hash is wanted, in a hash-sorted column (binary search of
    each wanted hash, every row of an equal run kept).

    Args:
        sorted_hashes: ascending ``uint64`` hashes (one row group or more).
        query: sorted unique wanted hashes.
    Returns:
        Ascending ``int64`` positions; O(K log N + matches).
    """
    sorted_hashes = np.asarray(sorted_hashes, dtype=HASH_DTYPE)
    lo = np.searchsorted(sorted_hashes, query, side="left")
    hi = np.searchsorted(sorted_hashes, query, side="right")
    hit = hi > lo
    if not hit.any():
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(lo[hit], hi[hit])])
