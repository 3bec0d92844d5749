"""Primary keys as the catalog sees them: one canonical text form of a key tuple and its
64-bit hash, the unit of the key-level write set.

* :func:`key_json` -- the canonical JSON of a key tuple (values in primary key order). The CDC
  tombstones of the catalog are keyed by it, and it is what :func:`key_hash64` hashes, so there
  is one rule for "the same key" in acidflow.
* :func:`key_hash64` -- the first 8 bytes of BLAKE2b over the UTF-8 of :func:`key_json`, read
  little-endian as an unsigned 64-bit integer: stable across processes, Python versions and
  machines (unlike ``hash()``), cheap (about a microsecond per key).
* :func:`pack_hashes` / :func:`unpack_hashes` / :func:`intersect_hashes` -- the stored form of a
  set of key hashes (a sorted, de-duplicated little-endian ``uint64`` array) and the sorted
  intersection the commit-time check runs on two of them.

Writers compute the hashes of the keys they write per (partition, bucket) inside the write
task that already holds the rows (:func:`acidflow.engine.writer.write_task`) and hand them to the
catalog with the transaction (``Catalog.add_write_keys``). Two transactions that wrote the same
key and overlap in time cannot both commit (Hive keeps only a
partition-level ``WRITE_SET``, HIVE-13395). A collision of two different keys' hashes
(probability about n^2 / 2^65 for n keys written concurrently) can only abort a transaction that
did not need aborting, never let a duplicate through.

**The primary key rules of writes** (one home; every writer refers here):

* *No NULL in a key.* A row whose primary key has a NULL in any key column names no key: it
  can be neither found nor replaced by key (SQL's ``NULL = NULL`` is not true, and Hive's
  ``PRIMARY KEY ... DISABLE NOVALIDATE`` columns are ``NOT NULL`` in intent). Statements that
  take rows from a caller refuse the batch (``Transaction.insert`` / ``upsert`` and the
  ``acid`` data source: ``acidflow.engine.statements.insert.NullKeyError`` naming the table,
  the column(s) and the row count); pipelines that load records quarantine each such row
  with the reason :func:`null_key_reason` (``acidflow ingest``, CDC) and load the rest.
  :func:`null_key_counts` finds them.
* *An insert never creates a second live row of a key.* An INSERT of a key that is visible
  in the writer's snapshot, or that repeats inside the inserted batch, is refused by default
  (``acidflow.engine.statements.insert``: ``on_existing="error"``); ``"upsert"`` replaces
  the stored row (split-update), ``"ignore"`` inserts only the new keys (Hive's ``MERGE ...
  WHEN NOT MATCHED THEN INSERT``). Keys written concurrently are caught at commit by the
  key-level write set above. Tables without a primary key keep Hive's INSERT semantics.
* *An INSERT OVERWRITE writes one row per key.* A NULL key or a key on more than one of its
  rows refuses it; the keys stored in what it replaces are not looked up (they go), but a key
  stored in a partition it does not replace refuses it when the key does not name the
  partition (:func:`scope_rule`): ``Transaction.insert_overwrite``
  (``acidflow.engine.statements.insert.check_overwrite``). The ``acid`` data source's overwrite
  refuses NULL keys and keys repeated within or across its write tasks (at commit), but does
  not look for keys stored in partitions it does not replace.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format.table import TableDesc

#: Above this many keys written by one statement into one (partition, bucket), the statement
#: records that scope as written "whole" instead of listing key hashes: any concurrent key write
#: in it then conflicts. Correct, coarser, and it bounds the memory and catalog space of huge
#: loads (8 bytes per key below the limit).
MAX_KEYS_PER_SCOPE = 1_000_000

#: The bucket of a write-set scope that is not narrowed to one bucket (unbucketed tables, or
#: bucket columns that are not all key columns): it overlaps every bucket.
ANY_BUCKET = -1

#: dtype of a stored key hash array (little-endian unsigned 64-bit)
HASH_DTYPE = np.dtype("<u8")


def key_json(key: tuple[Any, ...]) -> str:
    """Canonical JSON of a key tuple: integers and strings as JSON, any other value (decimal,
    date, timestamp, bool, float) as the JSON string of its ``str()``; no spaces.

    >>> key_json((1, "a"))
    '[1,"a"]'
    """
    if all(type(v) is int for v in key):  # same text as json.dumps, without its overhead
        return "[" + ",".join(map(str, key)) + "]"
    return json.dumps(
        [str(v) if not isinstance(v, (int, str)) or isinstance(v, bool) else v for v in key],
        separators=(",", ":"),
    )


def key_hash64(key: tuple[Any, ...]) -> int:
    """The stable 64-bit hash of a key tuple (see module doc), 0 <= h < 2**64."""
    return int.from_bytes(
        hashlib.blake2b(key_json(key).encode("utf-8"), digest_size=8).digest(), "little"
    )


def _blake2b_64_each(texts: pa.Array) -> np.ndarray:
    """:func:`key_hash64`'s hash of each string of a NULL-free string array (its UTF-8 bytes
    read straight from the Arrow buffers)."""
    texts = texts.cast(pa.string())
    n = len(texts)
    offsets = np.frombuffer(
        texts.buffers()[1], dtype=np.int32, count=n + 1, offset=texts.offset * 4
    ).tolist()
    data = memoryview(texts.buffers()[2])
    blake = hashlib.blake2b
    digests = b"".join(
        [blake(data[a:b], digest_size=8).digest() for a, b in zip(offsets, offsets[1:])]
    )
    return np.frombuffer(digests, dtype=HASH_DTYPE)


#: Characters ``json.dumps`` (``ensure_ascii``) writes unchanged inside a string: printable
#: ASCII (space to ``~``) without ``"`` and ``\\``; a string of only these is written
#: ``"s"``.
_PLAIN_JSON_STRING = r"^[\x20\x21\x23-\x5b\x5d-\x7e]*$"


def _fast_part(p: Any) -> bool:
    """Whether a key part's JSON text can be built by Arrow kernels (see
    :func:`key_hashes_of_columns`)."""
    if isinstance(p, pa.Array):
        return p.null_count == 0 and (
            pa.types.is_integer(p.type)
            or pa.types.is_string(p.type)
            or pa.types.is_large_string(p.type)
        )
    return type(p) is int or (type(p) is str and re.fullmatch(_PLAIN_JSON_STRING, p) is not None)


def key_hashes_of_columns(parts: Sequence[Any], n: int) -> np.ndarray:
    """:func:`key_hash64` of ``n`` keys given column by column, in row order (not de-duplicated).

    Args:
        parts: one entry per key column, in primary key order: an Arrow array of ``n`` values,
            or a Python value shared by all ``n`` keys (a partition column's value).
        n: number of keys.
    Returns:
        ``uint64`` array of ``n`` hashes, equal to ``key_hash64`` of each row's key tuple (the
        tuple of the arrays' ``to_pylist`` values): keys made of integers and strings (arrays
        without NULLs, ``int`` / ``str`` values) have their JSON text built by Arrow kernels
        (a string holding a character JSON escapes -- quote, backslash, control or non-ASCII
        -- is redone by :func:`key_hash64`); others go through :func:`key_hash64` row by row.
    """
    if n == 0:
        return np.zeros(0, dtype=HASH_DTYPE)
    if not parts or not all(_fast_part(p) for p in parts):
        cols = [p.to_pylist() if isinstance(p, pa.Array) else [p] * n for p in parts]
        return np.fromiter(
            (key_hash64(k) for k in zip(*cols)) if cols else (key_hash64(()) for _ in range(n)),
            dtype=HASH_DTYPE,
            count=n,
        )
    texts = []
    escaped = None  # rows with a string JSON escapes
    for p in parts:
        if not isinstance(p, pa.Array):
            texts.append(pa.scalar(f'"{p}"' if type(p) is str else str(p)))
        elif pa.types.is_integer(p.type):
            texts.append(pc.cast(p, pa.string()))
        else:
            plain = pc.match_substring_regex(p, _PLAIN_JSON_STRING)
            bad = pc.invert(plain)
            escaped = bad if escaped is None else pc.or_(escaped, bad)
            texts.append(pc.binary_join_element_wise('"', p.cast(pa.string()), '"', ""))
    joined = pc.binary_join_element_wise(*texts, ",") if len(texts) > 1 else texts[0]
    if not isinstance(joined, pa.Array):  # every part a constant
        joined = pa.array([joined.as_py()] * n, pa.string())
    out = _blake2b_64_each(pc.binary_join_element_wise("[", joined, "]", ""))
    if escaped is not None and pc.any(escaped).as_py():
        out = out.copy()
        rows = np.flatnonzero(escaped.to_numpy(zero_copy_only=False))
        cols = [
            p.take(pa.array(rows)).to_pylist() if isinstance(p, pa.Array) else [p] * len(rows)
            for p in parts
        ]
        out[rows] = [key_hash64(k) for k in zip(*cols)]
    return out


def null_key_reason(columns: Sequence[str]) -> str:
    """The quarantine reason of a row whose primary key has a NULL in ``columns`` (the NULL-key
    rule of the module doc; ingest and CDC record it word for word)."""
    return f"NULL in primary key column(s) {list(columns)}"


def null_key_counts(key: Sequence[str], rows: pa.Table) -> dict[str, int]:
    """``{key column: rows with NULL in it}`` of an Arrow table holding the key columns, only
    the columns that have any (empty: every row names a key; the NULL-key rule of the module
    doc)."""
    return {k: rows.column(k).null_count for k in key if rows.column(k).null_count}


def repeated_keys(key: Sequence[str], rows: pa.Table) -> pa.Table:
    """The key values that occur more than once in ``rows`` (an Arrow table holding the key
    columns), sorted by key, with their number of rows as ``count``."""
    if not rows.num_rows:
        return pa.table({**{k: rows.column(k) for k in key}, "count": pa.array([], pa.int64())})
    counted = rows.select(list(key)).group_by(list(key)).aggregate([([], "count_all")])
    many = counted.filter(pc.greater(counted.column("count_all"), 1))
    return pa.table(
        {**{k: many.column(k) for k in key}, "count": many.column("count_all")}
    ).sort_by([(k, "ascending") for k in key])


def hash_array(hashes: Iterable[int]) -> np.ndarray:
    """Key hashes as a sorted, de-duplicated ``uint64`` array."""
    return np.unique(np.fromiter(hashes, dtype=HASH_DTYPE))


def key_hashes(keys: Iterable[tuple[Any, ...]]) -> np.ndarray:
    """:func:`key_hash64` of every key, sorted and de-duplicated (``uint64``)."""
    return hash_array(key_hash64(k) for k in keys)


def pack_hashes(hashes: np.ndarray) -> bytes:
    """The stored form: sorted unique little-endian ``uint64`` values, 8 bytes each."""
    return np.unique(np.asarray(hashes, dtype=HASH_DTYPE)).tobytes()


def unpack_hashes(blob: bytes | None) -> np.ndarray:
    """Inverse of :func:`pack_hashes` (``None`` or empty -> empty array)."""
    if not blob:
        return np.zeros(0, dtype=HASH_DTYPE)
    return np.frombuffer(blob, dtype=HASH_DTYPE)


def intersect_hashes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hashes in both sorted unique arrays (``numpy.intersect1d`` with ``assume_unique``)."""
    return np.intersect1d(a, b, assume_unique=True)


def scope_rule(table: TableDesc) -> tuple[bool, bool]:
    """Whether a key determines the partition (every partition column is a key column) and the
    bucket (the table is bucketed and every bucket column is a key column) of its row. Only
    then can key lookups and key write sets be narrowed to one partition / bucket."""
    key_cols = {k.lower() for k in table.primary_key}
    pnames = [c.name.lower() for c in table.partition_columns]
    by_partition = bool(pnames) and all(p in key_cols for p in pnames)
    by_bucket = table.num_buckets > 0 and {b.lower() for b in table.bucket_columns} <= key_cols
    return by_partition, by_bucket


def write_scopes(
    table: TableDesc, files: Sequence[Mapping[str, Any]]
) -> dict[tuple[str | None, int], np.ndarray | None]:
    """The key write set of one statement: the packed key hashes of the files it wrote
    (``FileRow`` dicts with ``partition``, ``bucket``, ``key_hashes``) merged per scope (see
    :func:`scope_rule`). A scope with a file that carries no hashes, or with more than
    :data:`MAX_KEYS_PER_SCOPE` keys, maps to ``None`` ("whole scope written").

    Returns:
        ``{(partition or None, bucket or ANY_BUCKET): sorted uint64 array | None}``; empty for
        an unkeyed table.
    """
    if not table.primary_key:
        return {}
    by_partition, by_bucket = scope_rule(table)
    parts: dict[tuple[str | None, int], list[np.ndarray] | None] = {}
    for f in files:
        scope = (
            (f["partition"] or None) if by_partition else None,
            int(f["bucket"]) if by_bucket else ANY_BUCKET,
        )
        blob = f.get("key_hashes")
        if scope in parts and parts[scope] is None:
            continue
        if blob is None:
            parts[scope] = None
            continue
        parts.setdefault(scope, [])
        got = parts[scope]
        if got is not None:
            got.append(unpack_hashes(bytes(blob)))
    out: dict[tuple[str | None, int], np.ndarray | None] = {}
    for scope, arrays in parts.items():
        if arrays is None or sum(len(a) for a in arrays) > MAX_KEYS_PER_SCOPE:
            out[scope] = None
        else:
            out[scope] = (
                np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, dtype=HASH_DTYPE)
            )
    return out
