"""``acidflow fsck TABLE``: consistency checks of a table's directories and files.

Findings (``kind`` values) per partition:

* ``orphan`` -- hidden leftovers of a killed worker or cleaner (``.compact_tmp_*``,
  ``.cleaning_*``), directories that are neither base/delta nor ``key=value`` partitions, and
  base/delta directories whose write ids are unknown to the catalog (above the table's high
  watermark: no transaction of this catalog allocated them);
* ``aborted`` -- directories of aborted write ids, and of write ids whose transaction is still
  open but silent for longer than the catalog's ``txn_timeout_s`` (a killed writer, which the
  housekeeper aborts); the cleaner removes both;
* ``open`` -- directories of a write in progress (open write id, live heartbeat);
* ``obsolete`` -- directories superseded by a base or a wider delta, not yet cleaned;
* ``missing_metadata`` -- a *committed* base/delta dir without ``_orc_acid_version``, a data
  file of the current snapshot without ``hive.acid.key.index`` / ``hive.acid.stats`` /
  ``hive.acid.version``, a key index whose entry count differs from the stripe count;
* ``overlap`` -- two committed delta directories of the same kind whose write-id ranges overlap
  without one containing the other (Hive's walk would then drop data);
* ``duplicate_row_id`` -- the same ROW__ID visible twice in the current snapshot;
* ``duplicate_key`` -- in a table with a primary key, key values with more than one visible row
  in the current snapshot (merge-on-read of the key columns only), named with the write ids of
  their rows (partition ``''``: keys are unique across partitions).

``acidflow fsck --rebuild-index`` (:func:`key_index_report`) instead reports, per data file,
the key statistics and bloom filters key lookups skip stripes by (kind ``key_index``).

``severity`` is ``error`` for missing metadata, overlaps, duplicate ROW__IDs and duplicate keys
(validation fails), ``warning`` for orphans, ``info`` for aborted, open and obsolete directories.
The directories of a killed run (no ``_orc_acid_version``, partial files) are classified by the
state of their write ids, never as missing metadata: that error is kept for directories of
committed write ids, which readers open. The pure checks (:func:`check_layout`,
:func:`classify_dir`, :func:`duplicate_row_ids`, :func:`duplicate_keys`) work on listings,
write-id states and keys.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.catalog import Catalog
from acidflow.catalog.tabledef import as_utc
from acidflow.format import types as htypes
from acidflow.format.layout import (
    ACID_VERSION_FILE,
    LONG_MIN_VALUE,
    AcidState,
    DirEntry,
    ParsedDelta,
    RangeResponse,
    ValidWriteIdList,
    bucket_files,
    parse_base,
    parse_delta,
)
from acidflow.format.orc import files as acid_files
from acidflow.format.orc import orcindex
from acidflow.quality.findings import ERROR, INFO, WARNING, Finding
from acidflow.read import snapshot
from acidflow.read.snapshot import partition_dir
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state

#: at most this many duplicate keys (and duplicate ROW__IDs) are named
MAX_NAMED = 10
#: name of the write-id column :func:`duplicate_keys` expects next to the key columns
WRITE_ID_COL = "_writeid"


@dataclass(frozen=True)
class OpenWrite:
    """An open write id's transaction as fsck sees it.

    Attributes:
        txn_id: the transaction that allocated the write id.
        silent_s: seconds since its last heartbeat (at the time fsck ran).
    """

    txn_id: int
    silent_s: float


@dataclass(frozen=True)
class WriteIdView:
    """What fsck knows of a table's write ids, for classifying directories that no snapshot
    reads (:func:`classify_dir`).

    Attributes:
        valid: the table's ``ValidWriteIdList`` taken before the listing (no caller txn).
        known_high_watermark: the highest write id allocated, read *after* the listing
            (>= ``valid.high_watermark``): a directory above it was not allocated by this
            catalog when fsck looked.
        open_writes: ``{open write id: OpenWrite}``.
        timeout_s: the catalog's ``txn_timeout_s`` (Hive ``hive.txn.timeout``).
    """

    valid: ValidWriteIdList
    known_high_watermark: int
    open_writes: Mapping[int, OpenWrite]
    timeout_s: float


def classify_dir(lo: int, hi: int, view: WriteIdView) -> tuple[str, str, str] | None:
    """Classify a base/delta directory covering write ids ``lo..hi`` that may be the leftover
    of a killed or running writer (pure).

    Returns:
        ``(kind, severity, detail)`` -- ``orphan`` (write ids above the known high watermark),
        ``aborted`` (every write id aborted, or open but silent for longer than the txn
        timeout), ``open`` (a write in progress) -- or None when the directory holds a
        committed write id (or is the ``Long.MIN_VALUE`` base of a converted table): it is
        then checked like any committed directory.
    """
    valid = view.valid
    if lo == LONG_MIN_VALUE:
        return None
    if hi > view.known_high_watermark:
        return (
            "orphan",
            WARNING,
            f"write ids {lo}..{hi} are above the table's high watermark "
            f"{view.known_high_watermark}: no transaction of this catalog allocated them "
            "(a writer of another catalog, or a catalog restored from an older backup); "
            "no reader opens it and the cleaner leaves it alone -- find its origin, then "
            "delete it",
        )
    if hi > valid.high_watermark:
        return (
            "open",
            INFO,
            f"write ids {lo}..{hi} allocated after fsck's snapshot "
            f"(high watermark {valid.high_watermark}): a write in progress",
        )
    if valid.is_write_id_range_valid(lo, hi) is not RangeResponse.NONE:
        return None
    if valid.is_write_id_range_aborted(lo, hi) is RangeResponse.ALL:
        return ("aborted", INFO, "aborted write ids; the cleaner removes it")
    opens = [w for w in valid.open_write_ids if lo <= w <= hi]
    if not opens:  # pragma: no cover - every id <= HWM is valid, open or aborted
        return None
    known = [(w, view.open_writes[w]) for w in opens if w in view.open_writes]
    if known and len(known) == len(opens) and all(o.silent_s > view.timeout_s for _, o in known):
        w, o = known[0]
        return (
            "aborted",
            INFO,
            f"write id {w} of transaction {o.txn_id}, still open but silent for "
            f"{o.silent_s:.0f} s (> txn timeout {view.timeout_s:.0f} s): a killed writer's "
            "leftovers; the housekeeper aborts the transaction, then the cleaner removes it",
        )
    w = opens[0]
    o_ = view.open_writes.get(w)
    who = (
        f"transaction {o_.txn_id} (last heartbeat {o_.silent_s:.0f} s ago)"
        if o_ is not None
        else "an open transaction"
    )
    return (
        "open",
        INFO,
        f"write id {w} of {who}: a write in progress, invisible to readers "
        "until it commits; aborted by the housekeeper if its writer died",
    )


def check_layout(
    partition: str, entries: Iterable[DirEntry], state: AcidState, view: WriteIdView | None = None
) -> list[Finding]:
    """Name-level checks of one partition listing (pure): orphans, aborted, obsolete,
    missing ``_orc_acid_version``, overlapping delta ranges.

    Args:
        view: the table's write-id states; with it, base/delta directories of aborted, open
            or unknown write ids are reported by :func:`classify_dir` (``aborted`` / ``open``
            / ``orphan``) instead of being checked for metadata. Without it every directory
            not in ``state.aborted`` counts as committed.
    """
    entries = list(entries)
    out: list[Finding] = []
    tops: dict[str, bool] = {}
    for e in entries:
        first = e.path.split("/", 1)[0]
        tops[first] = tops.get(first, False) or e.is_dir or "/" in e.path
    files = {e.path for e in entries if not e.is_dir}
    aborted = set(state.aborted)
    deltas: list[ParsedDelta] = []
    for name, is_dir in sorted(tops.items()):
        if name.startswith(".compact_tmp_") or name.startswith(".cleaning_"):
            out.append(
                Finding(
                    partition,
                    "orphan",
                    WARNING,
                    name,
                    "leftover of a killed compactor worker or cleaner",
                )
            )
            continue
        if name.startswith(".") or name.startswith("_"):
            continue
        if not is_dir:
            continue
        b, d = parse_base(name), parse_delta(name)
        if b is None and d is None:
            if "=" not in name:
                out.append(
                    Finding(
                        partition,
                        "orphan",
                        WARNING,
                        name,
                        "directory that is not base/delta/delete_delta",
                    )
                )
            continue
        if name in aborted:
            continue  # reported below; the cleaner removes it
        if view is not None:
            lo, hi = (b.write_id, b.write_id) if b is not None else (d.min_write_id, d.max_write_id)  # type: ignore[union-attr]
            killed = classify_dir(lo, hi, view)
            if killed is not None:
                kind, severity, detail = killed
                if f"{name}/{ACID_VERSION_FILE}" not in files:
                    detail += f" (no {ACID_VERSION_FILE}: the writer did not finish it)"
                out.append(Finding(partition, kind, severity, name, detail))
                continue
        if f"{name}/{ACID_VERSION_FILE}" not in files:
            out.append(
                Finding(partition, "missing_metadata", ERROR, name, f"no {ACID_VERSION_FILE}")
            )
        if d is not None:
            deltas.append(d)
    for name in state.aborted:
        out.append(
            Finding(partition, "aborted", INFO, name, "aborted write ids; cleaner removes it")
        )
    for name in state.obsolete:
        out.append(Finding(partition, "obsolete", INFO, name, "superseded; cleaner removes it"))
    for deletes in (False, True):
        same = sorted(
            (d for d in deltas if d.is_delete == deletes),
            key=lambda d: (d.min_write_id, -d.max_write_id),
        )
        for i, wide in enumerate(same):
            for other in same[i + 1 :]:
                if other.min_write_id > wide.max_write_id:
                    break
                contains = (
                    wide.min_write_id <= other.min_write_id
                    and other.max_write_id <= wide.max_write_id
                )
                if not contains:
                    out.append(
                        Finding(
                            partition,
                            "overlap",
                            ERROR,
                            other.name,
                            f"write-id range overlaps {wide.name}",
                        )
                    )
    return out


def duplicate_row_ids(
    partition: str, keys: Iterable[tuple[int, int, int]], limit: int = MAX_NAMED
) -> list[Finding]:
    """ROW__IDs ``(writeid, bucketid, rowid)`` seen more than once (pure); at most ``limit``
    findings."""
    counts = Counter(keys)
    dups = sorted(k for k, n in counts.items() if n > 1)
    return [
        Finding(partition, "duplicate_row_id", ERROR, "", f"ROW__ID {k} visible {counts[k]} times")
        for k in dups[:limit]
    ]


def _key_text(key: Sequence[str], row: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={row[k]!r}" for k in key)


def duplicate_keys(key: Sequence[str], rows: pa.Table, limit: int = MAX_NAMED) -> list[Finding]:
    """Primary key values with more than one visible row (pure, Arrow).

    Args:
        key: the primary key columns.
        rows: one row per visible row of the snapshot: the key columns and
            :data:`WRITE_ID_COL` (the row's ROW__ID write id, originalTransaction).
        limit: key values named in the finding at most (the count covers all).
    Returns:
        ``[]`` or one ``duplicate_key`` finding (partition ``''``) naming the number of key
        values and surplus rows and, for the first ``limit`` keys in key order, their row
        count and the write ids that wrote the rows.
    """
    key = list(key)
    if not key or rows.num_rows == 0:
        return []
    counts = rows.select(key).group_by(key).aggregate([([], "count_all")])
    dups = counts.filter(pc.greater(counts["count_all"], 1))
    if dups.num_rows == 0:
        return []
    surplus = pc.sum(dups["count_all"]).as_py() - dups.num_rows
    named = dups.sort_by([(k, "ascending") for k in key]).slice(0, limit)
    writers = rows.select(key + [WRITE_ID_COL]).join(named.select(key), keys=key, join_type="inner")
    by_key: dict[tuple, list[int]] = {}
    for r in writers.to_pylist():
        by_key.setdefault(tuple(r[k] for k in key), []).append(int(r[WRITE_ID_COL]))
    examples = []
    for r in named.to_pylist():
        wids = sorted(by_key.get(tuple(r[k] for k in key), []))
        examples.append(
            f"({_key_text(key, r)}): {r['count_all']} rows, write ids " + ", ".join(map(str, wids))
        )
    more = f"; {dups.num_rows - len(examples)} more" if dups.num_rows > len(examples) else ""
    return [
        Finding(
            "",
            "duplicate_key",
            ERROR,
            "",
            f"{dups.num_rows} primary key value(s) of ({', '.join(key)}) have more "
            f"than one visible row ({surplus} surplus row(s)): " + "; ".join(examples) + more,
        )
    ]


def write_id_view(
    catalog: Catalog, table_name: str, valid: ValidWriteIdList, now: datetime | None = None
) -> WriteIdView:
    """The :class:`WriteIdView` of a table: call it *after* listing the table's directories
    (``valid`` was taken before), so a write id allocated in between is not taken for an
    orphan."""
    now = as_utc(now) if now is not None else datetime.now(timezone.utc)
    states = catalog.write_id_states(table_name)
    open_writes = {}
    for wid, txn_id, st in states:
        if st == "open":
            info = catalog.get_transaction(txn_id)
            open_writes[wid] = OpenWrite(
                txn_id, (now - as_utc(info.last_heartbeat)).total_seconds()
            )
    known = max([valid.high_watermark] + [w for w, _t, _s in states])
    return WriteIdView(valid, known, open_writes, float(catalog.txn_timeout_s))


def fsck_table(catalog: Catalog, name: str, *, max_named: int = MAX_NAMED) -> list[Finding]:
    """Run every check on a catalog table (pyarrow, in this process): the layout checks of
    each partition, the footers of the current snapshot's files, duplicate ROW__IDs per
    partition and, for a table with a primary key, duplicate keys across the table (the
    snapshot's key columns only are read).

    Args:
        max_named: duplicate keys / ROW__IDs named at most.
    Raises:
        NoSuchTableError.
    """
    table = catalog.get_table(name)
    tfs = TableFS(table.location)
    valid = catalog.valid_write_ids(table.name)
    findings: list[Finding] = []
    grouped = snapshot.split_partitions(
        tfs.list_recursive(table.location), len(table.partition_columns)
    )
    view = write_id_view(catalog, table.name, valid)
    key = list(table.primary_key)
    data_names = [c.name for c in table.columns]
    project = [k for k in key if k in data_names]
    key_rows: list[pa.Table] = []
    for part in sorted(grouped):
        entries = grouped[part]
        pdir = partition_dir(table, part or None)
        state = acid_state(tfs, pdir, valid, entries=entries, txn_state=catalog.visibility_lookup())
        findings += check_layout(part, entries, state, view)
        for d in state.current_dirs:
            for rel, _b in bucket_files(entries, d):
                info = acid_files.file_info(tfs, join(pdir, rel))
                missing = [
                    k
                    for k in (
                        acid_files.KEY_INDEX_KEY,
                        acid_files.ACID_STATS_KEY,
                        acid_files.ACID_VERSION_KEY,
                    )
                    if k not in info.metadata
                ]
                if missing:
                    findings.append(
                        Finding(
                            part,
                            "missing_metadata",
                            ERROR,
                            rel,
                            "footer lacks " + ", ".join(missing),
                        )
                    )
                elif (
                    len(acid_files.parse_key_index(info.metadata[acid_files.KEY_INDEX_KEY]))
                    != info.stripes
                ):
                    findings.append(
                        Finding(
                            part,
                            "missing_metadata",
                            ERROR,
                            rel,
                            f"key index entries != {info.stripes} stripes",
                        )
                    )
        plan = snapshot.plan_read(
            tfs,
            table.location,
            [(c.name, c.hive_type) for c in table.columns],
            [(c.name, c.hive_type) for c in table.partition_columns],
            valid,
            bucketed=table.num_buckets > 0,
            partitions=[part],
            txn_state=catalog.visibility_lookup(),
        )
        row_ids: list[tuple[int, int, int]] = []
        for batch in (
            b
            for t in plan.tasks
            for b in snapshot.read_task(
                tfs, t, plan.columns, plan.partition_columns, valid, row_id=True, project=project
            )
        ):
            rid = batch.column(batch.schema.get_field_index(snapshot.ROW_ID))
            row_ids += zip(*(rid.field(i).to_pylist() for i in range(3)))
            if key:
                key_rows.append(
                    pa.table(
                        [batch.column(batch.schema.get_field_index(k)) for k in key]
                        + [rid.field(0)],
                        names=key + [WRITE_ID_COL],
                    )
                )
        findings += duplicate_row_ids(part, row_ids, max_named)
    if key and key_rows:
        findings += duplicate_keys(key, pa.concat_tables(key_rows), max_named)
    return findings


def key_index_report(catalog: Catalog, name: str) -> list[Finding]:
    """``acidflow fsck --rebuild-index``: what the key index of a keyed table's lookups
    (``acidflow.format.orc.orcindex``) finds in each insert-side file of the current snapshot.

    acidflow's key index is derived entirely from the ORC files (stripe statistics and bloom
    filters of the primary key columns, which Hive writes and reads too); no sidecar file
    exists, so there is nothing to rebuild: this reports, per file, the stripes whose key
    columns have min/max statistics and bloom filters. A file with neither for every key
    column is read whole by lookups (``warning``: rewrite it -- major compaction -- to gain
    the index); otherwise ``info``. Delete deltas are never pruned and are not listed.

    Raises:
        NoSuchTableError; ValueError: the table has no primary key.
    """
    table = catalog.get_table(name)
    key = [k for k in table.primary_key if k in {c.name for c in table.columns}]
    if not key:
        raise ValueError(f"table {table.name} has no primary key (data column): no key index")
    tfs = TableFS(table.location)
    names = [c.name for c in table.columns]
    types = {c.name: htypes.arrow_type(c.hive_type) for c in table.columns}
    schema = pa.schema([(k, types[k]) for k in key])
    plan = snapshot.plan_read(
        tfs,
        table.location,
        [(c.name, c.hive_type) for c in table.columns],
        [(c.name, c.hive_type) for c in table.partition_columns],
        catalog.valid_write_ids(table.name),
        bucketed=table.num_buckets > 0,
        txn_state=catalog.visibility_lookup(),
    )
    findings: list[Finding] = []
    for task in plan.tasks:
        for df in task.data_files:
            info = acid_files.file_info(tfs, df.path)
            with tfs.open(df.path, "rb") as fh:
                cols = orcindex.describe_key_columns(
                    fh,
                    acid=info.is_acid,
                    positions=snapshot.source_positions(info, names, key),
                    keys=schema,
                )
            parts = [
                f"{c.column}: "
                + (
                    "not indexable (file type differs or unknown)"
                    if c.domain is None
                    else f"min/max {c.with_bounds}/{c.stripes}, bloom "
                    f"{c.with_blooms}/{c.stripes}"
                    + (f" ({', '.join(c.bloom_kinds)})" if c.bloom_kinds else "")
                )
                for c in cols
            ]
            useless = all(
                c.domain is None or (c.with_bounds == 0 and c.with_blooms == 0) for c in cols
            )
            rel = df.path[len(partition_dir(table, task.partition or None)) :].lstrip("/")
            findings.append(
                Finding(
                    task.partition,
                    "key_index",
                    WARNING if useless else INFO,
                    rel,
                    f"{info.stripes} stripes; " + "; ".join(parts),
                )
            )
    return findings
