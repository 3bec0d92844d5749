"""The record-level key index of a base: build, write and look up its sidecar
(``base_N/_acidflow_key_index.parquet``; the rules: :mod:`acidflow.format.keyindex`).

* :func:`write_base_index` -- build and write the sidecar of one base directory (major
  compaction after verification, ``acidflow fsck --rebuild-index``).
* :func:`lookup_indexed` -- the first half of a key lookup (``acidflow.engine.lookup``): the
  rows of the plan's bases found through their sidecars (O(K log N) per base instead of reading
  the key column of every stripe), validated against the snapshot (write id valid, no visible
  delete event), and the plan of what is still to be read as before (deltas, original files,
  and bases whose sidecar is missing, stale or unreadable -- the fallback, logged once per base).

When the lookup projects only key columns, the base's ORC files are not opened at all. When it
needs other columns (the ordering column of an upsert, stored values), only the keys the sidecar
found are looked up in the base's files, so the stripes read are those whose key statistics and
bloom filters admit a found key (``acidflow.format.orc.orcindex``).

``ACIDFLOW_KEY_SIDECAR=0`` turns sidecar lookups off (the lookup then reads as before).

Opt-in per table, as Hudi's record-level index (``hoodie.metadata.record.index.enable``, off by
default): major compaction writes a sidecar only for tables with the property
:data:`SIDECAR_PROPERTY` = ``true`` (:func:`wanted`). Measured (bench/NOTES.md, "Key index
sidecar"): for thousands of random keys the sidecar is read nearly whole and holds more bytes
per row than the ORC key column, so it pays off only for few keys per row of the table, and
building it costs about half of a major compaction (driver-side hashing).
"""

from __future__ import annotations

import io
import logging
import os
import posixpath
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from acidflow.format import keyindex as rules
from acidflow.format import types as htypes
from acidflow.format.keys import key_hashes_of_columns
from acidflow.format.names import is_hidden, parse_bucket_file
from acidflow.format.orc import files as acid_files
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read import snapshot
from acidflow.read.deletes import surviving
from acidflow.read.rows import partition_arrays
from acidflow.storage.fs import TableFS, join

log = logging.getLogger(__name__)

#: Sees every write id: a sidecar indexes every row of its base (a base chosen for a snapshot
#: holds only rows valid in it; the lookup checks the write ids again).
_ALL_VALID = ValidWriteIdList(None, 2**63 - 1)

#: (base dir, reason) already logged by this process: a fallback is logged once.
_LOGGED: set[tuple[str, str]] = set()


#: table property that makes major compaction write the sidecar (Hive ``TBLPROPERTIES``)
SIDECAR_PROPERTY = "acidflow.key.index.sidecar"


def wanted(properties: Mapping[str, str]) -> bool:
    """Whether major compaction writes a sidecar for a table with these properties:
    :data:`SIDECAR_PROPERTY` is ``true`` (case-insensitive)."""
    return properties.get(SIDECAR_PROPERTY, "false").strip().lower() == "true"


def enabled(flag: bool | None = None) -> bool:
    """Whether lookups use sidecars: ``flag`` when given, else unless ``ACIDFLOW_KEY_SIDECAR=0``."""
    return flag if flag is not None else os.environ.get("ACIDFLOW_KEY_SIDECAR", "1") != "0"


def index_path(base_dir: str) -> str:
    """Path of the sidecar of the base directory ``base_dir``."""
    return join(base_dir, rules.INDEX_FILE)


def data_key_columns(
    columns: list[tuple[str, str]], primary_key: list[str]
) -> list[tuple[str, str]]:
    """The indexed key columns: the primary key columns that are data columns, in primary key
    order, with their Hive types (``[]``: nothing to index)."""
    types = {n.lower(): (n, t) for n, t in columns}
    return [types[k.lower()] for k in primary_key if k.lower() in types]


def build_base_index(
    tfs: TableFS, base_dir: str, columns: list[tuple[str, str]], key_columns: list[tuple[str, str]]
) -> tuple[pa.Table, rules.Coverage]:
    """The sidecar rows (sorted by hash) and coverage of the base directory ``base_dir``: every
    row of its bucket files, read with the table's schema (``snapshot.read_task``: positional
    schema evolution and Hive's conversions, as a lookup reads them).

    Args:
        columns: table columns ``[(name, hive_type)]``; key_columns: :func:`data_key_columns`.
    Returns:
        ``(rows, coverage)``.
    Raises:
        acidflow.format.orc.files.AcidFileError: an unreadable bucket file.
    """
    key_names = [n for n, _ in key_columns]
    fields = [pa.field(n, htypes.arrow_type(t)) for n, t in key_columns]
    schema = rules.index_schema(fields)
    parts: list[pa.Table] = []
    coverage = rules.Coverage(key_columns=list(key_columns))
    for e in sorted(tfs.list_recursive(base_dir), key=lambda e: e.path):
        name = e.path
        if e.is_dir or "/" in name or is_hidden(name) or parse_bucket_file(name) is None:
            continue
        bucket = parse_bucket_file(name)
        assert bucket is not None
        path = join(base_dir, name)
        task = snapshot.ReadTask("", bucket[0], [snapshot.DataFile(path, "base", bucket[0])], [])
        batches = list(
            snapshot.read_task(tfs, task, columns, [], _ALL_VALID, row_id=True, project=key_names)
        )
        got = pa.Table.from_batches(
            batches,
            schema=snapshot.ReadPlan("", columns, [], _ALL_VALID, [], {}).output_schema(
                True, False, key_names
            ),
        )
        n = got.num_rows
        rid = got.column(snapshot.ROW_ID).combine_chunks()
        keys = [got.column(k).combine_chunks() for k in key_names]
        parts.append(
            pa.table(
                [pa.array(key_hashes_of_columns(keys, n), pa.uint64()), *keys]
                + [
                    pa.array([name] * n, pa.string()),
                    rid.field("writeid"),
                    rid.field("bucketid"),
                    rid.field("rowid"),
                ],
                schema=schema,
            )
        )
        coverage.files[name] = (tfs.size(path), n)
    rows = pa.concat_tables(parts) if parts else schema.empty_table()
    return rules.sort_by_hash(rows), coverage


def write_base_index(
    tfs: TableFS, base_dir: str, columns: list[tuple[str, str]], primary_key: list[str]
) -> rules.Coverage | None:
    """Build and write the sidecar of ``base_dir`` (replacing one there: a single atomic put).

    Returns:
        Its :class:`acidflow.format.keyindex.Coverage`, or None when the table has no data key
        column (nothing written).
    Raises:
        acidflow.format.orc.files.AcidFileError: an unreadable bucket file; OSError.
    """
    key_columns = data_key_columns(columns, primary_key)
    if not key_columns:
        return None
    rows, coverage = build_base_index(tfs, base_dir, columns, key_columns)
    meta = dict(rows.schema.metadata or {})
    meta[rules.COVERAGE_KEY] = coverage.to_json()
    buf = io.BytesIO()
    pq.write_table(
        rows.replace_schema_metadata(meta),
        buf,
        row_group_size=rules.ROW_GROUP_ROWS,
        compression="zstd",
        write_statistics=[rules.HASH_COL],
    )
    tfs.put_atomic(index_path(base_dir), buf.getvalue())
    return coverage


@dataclass
class IndexedLookup:
    """What :func:`lookup_indexed` found and what remains to be read.

    Attributes:
        found: rows found through sidecars (``plan.output_schema(row_id=True, project)``).
        rest: the plan of the files still to read as before (same delete files per task).
        answered: base data files answered by a sidecar (their ORC files read only for the
            found keys' non-key columns).
        index_rows: sidecar rows read (the row groups whose hash range holds a key).
        fallbacks: ``{base dir: reason}`` of bases read as before.
    """

    found: pa.Table
    rest: snapshot.ReadPlan
    answered: list[str] = field(default_factory=list)
    index_rows: int = 0
    fallbacks: dict[str, str] = field(default_factory=dict)


def _fallback(out: IndexedLookup, base_dir: str, reason: str) -> None:
    out.fallbacks[base_dir] = reason
    if (base_dir, reason) not in _LOGGED:
        _LOGGED.add((base_dir, reason))
        log.info("key index of %s not used (%s): reading the base", base_dir, reason)


def _candidates(
    tfs: TableFS,
    base_dir: str,
    sizes: dict[str, int],
    key_columns: list[tuple[str, str]],
    query: np.ndarray,
    out: IndexedLookup,
) -> pa.Table | None:
    """The sidecar rows of ``base_dir`` whose hash is wanted; None when the sidecar cannot
    answer (the reason recorded in ``out.fallbacks``)."""
    path = index_path(base_dir)
    try:
        if not tfs.exists(path):
            _fallback(out, base_dir, "no index")
            return None
        with tfs.open(path, "rb") as fh:  # footer + the row groups a key may be in, no more
            pf = pq.ParquetFile(fh)
            raw = (pf.schema_arrow.metadata or {}).get(rules.COVERAGE_KEY)
            if raw is None:
                _fallback(out, base_dir, "index without coverage record")
                return None
            why = rules.stale_reason(rules.Coverage.from_json(raw), sizes, key_columns)
            if why is not None:
                _fallback(out, base_dir, f"stale: {why}")
                return None
            meta = pf.metadata
            schema = pf.schema_arrow.remove_metadata()
            hcol = schema.get_field_index(rules.HASH_COL)
            others = [n for n in schema.names if n != rules.HASH_COL]
            bounds = []
            for i in range(meta.num_row_groups):
                st = meta.row_group(i).column(hcol).statistics
                bounds.append(
                    (int(st.min), int(st.max))
                    if st is not None and st.has_min_max
                    else (0, 2**64 - 1)
                )
            groups = rules.row_groups_for(bounds, query)
            if not groups:
                return schema.empty_table()
            # one read of the hash column of the groups that may hold a key, one read of the
            # other columns of the groups that do
            hashes = pf.read_row_groups(groups, columns=[rules.HASH_COL]).column(0)
            out.index_rows += len(hashes)
            pos = rules.match_positions(hashes.to_numpy(), query)
            if not len(pos):
                return schema.empty_table()
            lengths = np.array([meta.row_group(g).num_rows for g in groups], dtype=np.int64)
            starts = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
            which = np.searchsorted(starts, pos, side="right") - 1  # group of each match
            hit = np.unique(which)
            # positions inside the concatenation of the hit groups only
            hit_starts = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths[hit])])
            inner = pos - starts[which] + hit_starts[np.searchsorted(hit, which)]
            rest = pf.read_row_groups([groups[i] for i in hit], columns=others)
            rest = rest.take(pa.array(inner)).add_column(
                0, rules.HASH_COL, hashes.take(pa.array(pos))
            )
            return rest.select(schema.names).cast(schema)
    except (OSError, ValueError, pa.ArrowException) as exc:
        _fallback(out, base_dir, f"unreadable: {type(exc).__name__}: {exc}")
        return None


def lookup_indexed(
    tfs: TableFS,
    plan: snapshot.ReadPlan,
    keys: pa.Table,
    *,
    project: list[str] | None,
    use: bool | None = None,
) -> IndexedLookup:
    """Look the keys up in the sidecars of the plan's bases (module doc).

    Args:
        plan: the snapshot's read plan (``acidflow.read.snapshot.plan_read``).
        keys: the wanted keys: an Arrow table of data key columns (NULL-free).
        project: the data columns the lookup returns (as ``snapshot.read_task``).
        use: sidecars on/off (None: :func:`enabled`).
    Returns:
        :class:`IndexedLookup`: ``found`` + reading ``rest`` as before = the rows of reading
        ``plan`` with ``keys`` (same rows, same ROW__IDs, any order).
    """
    schema = plan.output_schema(True, False, project)
    nothing = IndexedLookup(schema.empty_table(), plan)
    key_columns = data_key_columns(plan.columns, list(keys.column_names))
    if (
        not enabled(use)
        or not keys.num_rows
        or len(key_columns) != keys.num_columns
        or not any(f.kind == "base" for t in plan.tasks for f in t.data_files)
    ):
        return nothing
    # the wanted keys with the table's types, in the order the sidecars hash them
    order = [n for n, _ in key_columns]
    try:
        typed = pa.table(
            [keys.column(n).cast(htypes.arrow_type(t)).combine_chunks() for n, t in key_columns],
            names=order,
        )
    except pa.ArrowException:  # keys not castable to the table's types: the readers decide
        return nothing
    out = IndexedLookup(schema.empty_table(), plan)
    by_base: dict[str, list[snapshot.DataFile]] = defaultdict(list)
    for t in plan.tasks:
        for f in t.data_files:
            if f.kind == "base":
                by_base[posixpath.dirname(f.path)].append(f)
    query = rules.query_hashes(
        key_hashes_of_columns([c.combine_chunks() for c in typed.columns], typed.num_rows)
    )
    answered: dict[str, pa.Table] = {}  # data file path -> its candidate rows
    for base_dir, files in sorted(by_base.items()):
        sizes = {posixpath.basename(f.path): f.size or tfs.size(f.path) for f in files}
        # the stored key columns must be the table's (the coverage check) in key order
        cand = _candidates(tfs, base_dir, sizes, key_columns, query, out)
        if cand is None:
            continue
        if cand.num_rows:
            cand = cand.filter(
                snapshot.key_filter_mask(
                    [cand.column(n).combine_chunks() for n in order],
                    list(range(len(order))),
                    typed,
                    [typed.schema.field(n).type for n in order],
                )
            )
        by_file = cand.column(rules.FILE_COL).to_pylist()
        rows_of: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(by_file):
            rows_of[name].append(i)
        for f in files:
            idx = rows_of.get(posixpath.basename(f.path), [])
            answered[f.path] = cand.take(pa.array(idx, pa.int64()))
    out.answered = sorted(answered)
    if not answered:
        return out
    key_only = project is not None and set(project) <= set(order)
    valid = plan.valid_write_ids
    found: list[pa.Table] = []
    rest: list[snapshot.ReadTask] = []
    for task in plan.tasks:
        mine = [f for f in task.data_files if f.path in answered]
        others = [f for f in task.data_files if f.path not in answered]
        if others:
            rest.append(
                snapshot.ReadTask(task.partition, task.bucket_id, others, task.delete_files)
            )
        cand = [answered[f.path] for f in mine if answered[f.path].num_rows]
        if not cand:
            continue
        rows = pa.concat_tables(cand)
        rows = rows.filter(
            pc.fill_null(snapshot.valid_mask(rows.column(rules.OWID_COL), valid), False)
        )
        deletes = snapshot.load_delete_keys(tfs, task.delete_files, valid)
        rid = pa.table(
            [
                rows.column(rules.OWID_COL),
                rows.column(rules.BUCKET_COL),
                rows.column(rules.ROWID_COL),
            ],
            names=list(acid_files.KEY_FIELDS),
        )
        survivors = surviving(rid, deletes)
        if survivors is not None:
            rows = rows.take(survivors)
        if not rows.num_rows:
            continue
        if key_only:
            found.append(_output(rows, schema, plan, task.partition, project))
            continue
        # other columns needed: read the found keys only, from the stripes that may hold them
        wanted = rows.select(order).group_by(order).aggregate([])
        wanted = wanted.cast(pa.schema([keys.schema.field(n) for n in order]))
        sub = snapshot.ReadTask(task.partition, task.bucket_id, mine, task.delete_files)
        batches = list(
            snapshot.read_task(
                tfs,
                sub,
                plan.columns,
                plan.partition_columns,
                valid,
                row_id=True,
                project=project,
                keys=wanted.select(list(keys.column_names)),
            )
        )
        found.append(pa.Table.from_batches(batches, schema=schema))
    out.found = pa.concat_tables([schema.empty_table(), *found])
    out.rest = snapshot.ReadPlan(
        plan.table_dir,
        plan.columns,
        plan.partition_columns,
        valid,
        rest,
        plan.states,
        plan.lost,
    )
    return out


def _output(
    rows: pa.Table,
    schema: pa.Schema,
    plan: snapshot.ReadPlan,
    partition: str,
    project: list[str] | None,
) -> pa.Table:
    """Sidecar rows as lookup output (data columns of ``project``, partition columns, ROW__ID)."""
    n = rows.num_rows
    arrays: list[pa.Array] = []
    for name, hive_type in plan.columns:
        if project is not None and name not in project:
            continue
        arrays.append(rows.column(name).combine_chunks().cast(htypes.arrow_type(hive_type)))
    arrays += partition_arrays(plan.partition_columns, partition, n)
    arrays.append(
        pa.StructArray.from_arrays(
            [
                rows.column(rules.OWID_COL).combine_chunks(),
                rows.column(rules.BUCKET_COL).combine_chunks(),
                rows.column(rules.ROWID_COL).combine_chunks(),
            ],
            fields=list(snapshot.ROW_ID_TYPE),
        )
    )
    return pa.Table.from_arrays(arrays, schema=schema)


def try_write_base_index(
    tfs: TableFS, base_dir: str, columns: list[tuple[str, str]], primary_key: list[str]
) -> bool:
    """:func:`write_base_index` for a writer that must not fail because of it (major
    compaction): an error is logged and the base stays without a sidecar (lookups read it).

    Returns:
        Whether a sidecar was written.
    """
    try:
        return write_base_index(tfs, base_dir, columns, primary_key) is not None
    except Exception as exc:  # derived data: the compaction's output is complete without it
        log.warning("key index of %s not written: %s: %s", base_dir, type(exc).__name__, exc)
        return False
