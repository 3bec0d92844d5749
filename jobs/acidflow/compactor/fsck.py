"""``acidflow fsck TABLE``: consistency checks of a table's directories and files.

Findings (``kind`` values) per partition:

* ``orphan`` -- hidden leftovers of a killed worker or cleaner (``.compact_tmp_*``,
  ``.cleaning_*``) and directories that are neither base/delta nor ``key=value`` partitions;
* ``aborted`` -- directories of aborted write ids (the cleaner removes them);
* ``obsolete`` -- directories superseded by a base or a wider delta, not yet cleaned;
* ``missing_metadata`` -- a base/delta dir without ``_orc_acid_version``, a data file without
  ``hive.acid.key.index`` / ``hive.acid.stats`` / ``hive.acid.version``, a key index whose entry
  count differs from the stripe count;
* ``overlap`` -- two delta directories of the same kind whose write-id ranges overlap without
  one containing the other (Hive's walk would then drop data);
* ``duplicate_row_id`` -- the same ROW__ID visible twice in the current snapshot.

``severity`` is ``error`` for missing metadata, overlaps and duplicate ROW__IDs, ``warning``
for orphans, ``info`` for aborted/obsolete directories awaiting the cleaner. The pure checks
(:func:`check_layout`, :func:`duplicate_row_ids`) work on listings and keys only.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from acidflow.acid import files as acid_files
from acidflow.acid import snapshot
from acidflow.acid.compaction import partition_dir
from acidflow.acid.fs import TableFS, join
from acidflow.acid.layout import (ACID_VERSION_FILE, AcidState, DirEntry, ParsedDelta,
                                  bucket_files, parse_base, parse_delta)
from acidflow.acid.state import acid_state
from acidflow.catalog import Catalog
from acidflow.quality.findings import ERROR, INFO, WARNING, Finding


def check_layout(partition: str, entries: Iterable[DirEntry], state: AcidState) -> list[Finding]:
    """Name-level checks of one partition listing (pure): orphans, aborted, obsolete,
    missing ``_orc_acid_version``, overlapping delta ranges."""
    entries = list(entries)
    out: list[Finding] = []
    tops: dict[str, bool] = {}
    for e in entries:
        first = e.path.split("/", 1)[0]
        tops[first] = tops.get(first, False) or e.is_dir or "/" in e.path
    files = {e.path for e in entries if not e.is_dir}
    deltas: list[ParsedDelta] = []
    for name, is_dir in sorted(tops.items()):
        if name.startswith(".compact_tmp_") or name.startswith(".cleaning_"):
            out.append(Finding(partition, "orphan", WARNING, name,
                               "leftover of a killed compactor worker or cleaner"))
            continue
        if name.startswith(".") or name.startswith("_"):
            continue
        if not is_dir:
            continue
        b, d = parse_base(name), parse_delta(name)
        if b is None and d is None:
            if "=" not in name:
                out.append(Finding(partition, "orphan", WARNING, name,
                                   "directory that is not base/delta/delete_delta"))
            continue
        if f"{name}/{ACID_VERSION_FILE}" not in files:
            out.append(Finding(partition, "missing_metadata", ERROR, name,
                               f"no {ACID_VERSION_FILE}"))
        if d is not None:
            deltas.append(d)
    for name in state.aborted:
        out.append(Finding(partition, "aborted", INFO, name, "aborted write ids; cleaner removes it"))
    for name in state.obsolete:
        out.append(Finding(partition, "obsolete", INFO, name, "superseded; cleaner removes it"))
    for kind in (False, True):
        same = sorted((d for d in deltas if d.is_delete == kind),
                      key=lambda d: (d.min_write_id, -d.max_write_id))
        for i, wide in enumerate(same):
            for other in same[i + 1:]:
                if other.min_write_id > wide.max_write_id:
                    break
                contains = (wide.min_write_id <= other.min_write_id
                            and other.max_write_id <= wide.max_write_id)
                if not contains:
                    out.append(Finding(partition, "overlap", ERROR, other.name,
                                       f"write-id range overlaps {wide.name}"))
    return out


def duplicate_row_ids(partition: str, keys: Iterable[tuple[int, int, int]], limit: int = 10
                      ) -> list[Finding]:
    """ROW__IDs ``(writeid, bucketid, rowid)`` seen more than once (pure); at most ``limit``
    findings."""
    counts = Counter(keys)
    dups = sorted(k for k, n in counts.items() if n > 1)
    return [Finding(partition, "duplicate_row_id", ERROR, "", f"ROW__ID {k} visible {counts[k]} times")
            for k in dups[:limit]]


def fsck_table(catalog: Catalog, name: str) -> list[Finding]:
    """Run every check on a catalog table (pyarrow, in this process).

    Raises:
        NoSuchTableError.
    """
    table = catalog.get_table(name)
    tfs = TableFS(table.location)
    valid = catalog.valid_write_ids(table.name)
    findings: list[Finding] = []
    grouped = snapshot.split_partitions(tfs.list_recursive(table.location),
                                        len(table.partition_columns))
    for part in sorted(grouped):
        entries = grouped[part]
        pdir = partition_dir(table, part or None)
        state = acid_state(tfs, pdir, valid, entries=entries)
        findings += check_layout(part, entries, state)
        for d in state.current_dirs:
            for rel, _b in bucket_files(entries, d):
                info = acid_files.file_info(tfs, join(pdir, rel))
                missing = [k for k in (acid_files.KEY_INDEX_KEY, acid_files.ACID_STATS_KEY,
                                       acid_files.ACID_VERSION_KEY) if k not in info.metadata]
                if missing:
                    findings.append(Finding(part, "missing_metadata", ERROR, rel,
                                            "footer lacks " + ", ".join(missing)))
                elif len(acid_files.parse_key_index(info.metadata[acid_files.KEY_INDEX_KEY])) != info.stripes:
                    findings.append(Finding(part, "missing_metadata", ERROR, rel,
                                            f"key index entries != {info.stripes} stripes"))
        plan = snapshot.plan_read(tfs, table.location, [(c.name, c.hive_type) for c in table.columns],
                                  [(c.name, c.hive_type) for c in table.partition_columns], valid,
                                  bucketed=table.num_buckets > 0, partitions=[part])
        keys: list[tuple[int, int, int]] = []
        for batch in (b for t in plan.tasks for b in snapshot.read_task(
                tfs, t, plan.columns, plan.partition_columns, valid, row_id=True)):
            rid = batch.column(batch.schema.get_field_index(snapshot.ROW_ID))
            keys += zip(*(rid.field(i).to_pylist() for i in range(3)))
        findings += duplicate_row_ids(part, keys)
    return findings
