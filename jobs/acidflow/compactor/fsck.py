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
* ``missing_file`` / ``size_mismatch`` / ``unexpected_file`` -- a file of the current snapshot
  differs from the catalog's record of its write (gone, another size: truncated, or a bucket
  file no write recorded in a recorded directory), named with the write id that owns it
  (:func:`acidflow.format.filecheck.check_files`; directories without records are unknown,
  never a finding);
* ``corrupt_file`` -- a file of the current snapshot whose ORC does not read; fsck goes on
  with the other files (and leaves damaged files out of the row checks below);
* ``lost_file`` -- a file a repair acknowledged lost (:func:`repair`), which readers skip;
* ``duplicate_row_id`` -- the same ROW__ID visible twice in the current snapshot;
* ``duplicate_key`` -- in a table with a primary key, key values with more than one visible row
  in the current snapshot (merge-on-read of the key columns only), named with the write ids of
  their rows (partition ``''``: keys are unique across partitions).

:func:`repair` acknowledges the damaged files of the snapshot as lost (marks the catalog's
records; never writes data), so reads proceed; it reports every loss.

``acidflow fsck --rebuild-index`` (:func:`key_index_report`) instead reports, per data file,
the key statistics and bloom filters key lookups skip stripes by (kind ``key_index``).

``severity`` is ``error`` for missing metadata, damaged files, overlaps, duplicate ROW__IDs and
duplicate keys (validation fails), ``warning`` for orphans and acknowledged losses, ``info`` for aborted, open and obsolete directories.
The directories of a killed run (no ``_orc_acid_version``, partial files) are classified by the
state of their write ids, never as missing metadata: that error is kept for directories of
committed write ids, which readers open. The pure checks (:func:`check_layout`,
:func:`classify_dir`, :func:`duplicate_row_ids`, :func:`duplicate_keys`) work on listings,
write-id states and keys.
"""

from __future__ import annotations

import getpass
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.catalog import Catalog
from acidflow.catalog.tabledef import TableDef, as_utc
from acidflow.format import types as htypes
from acidflow.format.filecheck import UNEXPECTED, FileCheck, check_files
from acidflow.format.filerecords import FileRecord, by_partition
from acidflow.format.keyindex import INDEX_FILE
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
    parse_bucket_file,
    parse_delta,
)
from acidflow.format.orc import files as acid_files
from acidflow.format.orc import orcindex
from acidflow.quality.findings import ERROR, INFO, WARNING, Finding
from acidflow.read import keyindex, snapshot
from acidflow.storage import tablepaths
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state
from acidflow.storage.tablepaths import partition_dir

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


@dataclass
class PartitionScan:
    """What fsck found of one partition's files (:func:`scan_files`).

    Attributes:
        partition: relative partition path; pdir: its directory.
        entries, state: the listing and its ``AcidState`` at fsck's snapshot.
        check: the records against the listing (:func:`acidflow.format.filecheck.check_files`).
        corrupt: ``{relative path: error}`` of files of the snapshot whose ORC footer does
            not read (never the ones already missing or resized).
        metadata: footer findings (``missing_metadata``) of the readable files.
        records: the catalog's records of the partition's files.
    """

    partition: str
    pdir: str
    entries: list[DirEntry]
    state: AcidState
    check: FileCheck
    corrupt: dict[str, str] = field(default_factory=dict)
    metadata: list[Finding] = field(default_factory=list)
    records: list[FileRecord] = field(default_factory=list)

    @property
    def unreadable(self) -> set[str]:
        """Absolute paths a read of this partition must leave out: files missing, resized,
        acknowledged lost or unreadable."""
        rels = set(self.corrupt) | {p.path for p in self.check.failures} | self.check.skip
        return {join(self.pdir, r) for r in rels}


def _footer_findings(part: str, rel: str, info: acid_files.FileInfo) -> list[Finding]:
    missing = [
        k
        for k in (acid_files.KEY_INDEX_KEY, acid_files.ACID_STATS_KEY, acid_files.ACID_VERSION_KEY)
        if k not in info.metadata
    ]
    if missing:
        return [Finding(part, "missing_metadata", ERROR, rel, "footer lacks " + ", ".join(missing))]
    if len(acid_files.parse_key_index(info.metadata[acid_files.KEY_INDEX_KEY])) != info.stripes:
        return [
            Finding(
                part, "missing_metadata", ERROR, rel, f"key index entries != {info.stripes} stripes"
            )
        ]
    return []


def scan_files(
    catalog: Catalog, table: TableDef, tfs: TableFS, valid: ValidWriteIdList
) -> list[PartitionScan]:
    """List the table once and, per partition, compare the catalog's file records with the
    listing and read the footer of every other file of the current snapshot; a file whose
    footer does not read is recorded as corrupt and the scan goes on."""
    grouped = tablepaths.split_partitions(
        tfs.list_recursive(table.location), len(table.partition_columns)
    )
    records = by_partition(catalog.data_file_records(table.name))
    out = []
    for part in sorted(grouped):
        entries = grouped[part]
        pdir = partition_dir(table, part or None)
        state = acid_state(tfs, pdir, valid, entries=entries, txn_state=catalog.visibility_lookup())
        recs = records.get(part, [])
        check = check_files(part, entries, state, recs, valid)
        scan = PartitionScan(part, pdir, entries, state, check, records=recs)
        bad = {p.path for p in check.failures} | check.skip
        for d in state.current_dirs:
            for rel, _b in bucket_files(entries, d):
                if rel in bad:
                    continue
                try:
                    info = acid_files.file_info(tfs, join(pdir, rel))
                except Exception as exc:  # noqa: BLE001 - any unreadable footer is a finding
                    scan.corrupt[rel] = f"{type(exc).__name__}: {exc}"
                    continue
                scan.metadata += _footer_findings(part, rel, info)
        out.append(scan)
    return out


def file_findings(scan: PartitionScan) -> list[Finding]:
    """Findings of one partition's files (pure): ``missing_file``, ``size_mismatch``,
    ``unexpected_file`` (errors, each naming the write id that owns the file), ``corrupt_file``
    (error) and ``lost_file`` (warning: acknowledged lost by a repair, read without it)."""
    part = scan.partition
    out = [Finding(part, p.kind, ERROR, p.path, p.describe()) for p in scan.check.problems]
    out += [
        Finding(part, "corrupt_file", ERROR, rel, f"unreadable ORC file: {err}")
        for rel, err in sorted(scan.corrupt.items())
    ]
    out += [
        Finding(
            part,
            "lost_file",
            WARNING,
            r.path,
            f"write id {r.write_id}: {r.rows} events acknowledged lost ({r.note})",
        )
        for r in scan.check.lost
    ]
    return out


def fsck_table(catalog: Catalog, name: str, *, max_named: int = MAX_NAMED) -> list[Finding]:
    """Run every check on a catalog table (pyarrow, in this process): the layout checks of
    each partition, the files of the current snapshot against the catalog's records of them
    (missing, resized, unexpected; :func:`file_findings`), their footers (an unreadable one is
    a ``corrupt_file`` finding and the check goes on), duplicate ROW__IDs per partition and,
    for a table with a primary key, duplicate keys across the table (the snapshot's key
    columns only are read, the damaged files left out).

    Args:
        max_named: duplicate keys / ROW__IDs named at most.
    Raises:
        NoSuchTableError.
    """
    table = catalog.get_table(name)
    tfs = TableFS(table.location)
    valid = catalog.valid_write_ids(table.name)
    findings: list[Finding] = []
    scans = scan_files(catalog, table, tfs, valid)
    view = write_id_view(catalog, table.name, valid)
    key = list(table.primary_key)
    data_names = [c.name for c in table.columns]
    project = [k for k in key if k in data_names]
    key_rows: list[pa.Table] = []
    for scan in scans:
        part = scan.partition
        findings += check_layout(part, scan.entries, scan.state, view)
        findings += file_findings(scan)
        findings += scan.metadata
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
        skip = scan.unreadable
        row_ids: list[tuple[int, int, int]] = []
        for task in plan.tasks:
            task.data_files = [f for f in task.data_files if f.path not in skip]
            task.delete_files = [p for p in task.delete_files if p not in skip]
            try:
                batches = list(
                    snapshot.read_task(
                        tfs,
                        task,
                        plan.columns,
                        plan.partition_columns,
                        valid,
                        row_id=True,
                        project=project,
                    )
                )
            except Exception as exc:  # noqa: BLE001 - a file that does not read is a finding
                files = [f.path for f in task.data_files] + task.delete_files
                findings.append(
                    Finding(
                        part,
                        "corrupt_file",
                        ERROR,
                        f"bucket {task.bucket_id}",
                        f"reading {', '.join(files)} failed: {type(exc).__name__}: {exc}",
                    )
                )
                continue
            for batch in batches:
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


@dataclass(frozen=True)
class LostFile:
    """A recorded file a repair acknowledged lost (:func:`repair`).

    Attributes:
        table, partition, path: the file (path relative to the partition directory).
        bucket: its bucket (writer) id; write_id: the write that owns it.
        rows: events its record counts: rows gone (an insert-side file) or deletes undone (a
            delete delta: the rows they deleted are visible again).
        reason: ``missing_file``, ``size_mismatch`` or ``corrupt_file``.
    """

    table: str
    partition: str
    path: str
    bucket: int | None
    write_id: int
    rows: int
    reason: str

    @property
    def is_delete(self) -> bool:
        """A delete delta's file."""
        return self.path.startswith("delete_delta_")

    def describe(self) -> str:
        """What the loss means for readers."""
        where = f"{self.partition}/{self.path}" if self.partition else self.path
        what = (
            f"{self.rows} delete events lost: the rows they deleted are visible again"
            if self.is_delete
            else f"{self.rows} rows lost"
        )
        return (
            f"{self.table} {where} (bucket {self.bucket}, write id {self.write_id}, "
            f"{self.reason}): {what}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (with ``detail``: :meth:`describe`)."""
        return {**asdict(self), "detail": self.describe()}


@dataclass
class RepairReport:
    """What :func:`repair` did.

    Attributes:
        table: ``db.table``. lost: files marked lost now (or that would be, in a dry run).
        already_lost: records a repair had acknowledged before (the reads skip them).
        not_repaired: findings a repair cannot mark (unexpected files, unreadable files the
            catalog has no record of): they need a person.
        dry_run: nothing was marked.
    """

    table: str
    lost: list[LostFile] = field(default_factory=list)
    already_lost: list[FileRecord] = field(default_factory=list)
    not_repaired: list[Finding] = field(default_factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return {
            "table": self.table,
            "dry_run": self.dry_run,
            "lost": [f.to_dict() for f in self.lost],
            "rows_lost": sum(f.rows for f in self.lost if not f.is_delete),
            "deletes_lost": sum(f.rows for f in self.lost if f.is_delete),
            "already_lost": [asdict(r) for r in self.already_lost],
            "not_repaired": [f.to_dict() for f in self.not_repaired],
        }


def _bucket_of(rel: str) -> int | None:
    parsed = parse_bucket_file(rel.rsplit("/", 1)[-1])
    return None if parsed is None else parsed[0]


def repair(
    catalog: Catalog, name: str, *, note: str | None = None, dry_run: bool = False
) -> RepairReport:
    """Acknowledge the damaged files of a table's current snapshot as lost, so reads proceed
    without them: mark, never invent. Every recorded file that is missing, has another size
    than recorded, or whose ORC footer does not read is marked lost in the catalog
    (``Catalog.mark_data_files_lost``, with ``note``); readers then leave it out and log it,
    and a compaction publishes what is left. No file is written or deleted, no transaction is
    aborted: what was committed stays committed. The report names each loss (partition,
    bucket, write id, the events the record counts; a lost delete delta brings the rows it
    deleted back). Restore the files from a backup instead when you can.

    Args:
        note: kept with each record (default: who and when).
        dry_run: report only, mark nothing.
    Returns:
        A :class:`RepairReport`.
    Raises:
        NoSuchTableError.
    """
    table = catalog.get_table(name)
    tfs = TableFS(table.location)
    valid = catalog.valid_write_ids(table.name)
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    note = note or f"fsck repair by {getpass.getuser()} at {stamp}"
    report = RepairReport(table.name, dry_run=dry_run)
    marks: dict[str, list[tuple[str, str]]] = {}
    for scan in scan_files(catalog, table, tfs, valid):
        part = scan.partition
        report.already_lost += scan.check.lost
        recorded = {r.path: r for r in scan.records}
        damaged = [(p.path, p.kind, p.write_id, p.rows) for p in scan.check.failures]
        for rel, err in sorted(scan.corrupt.items()):
            rec = recorded.get(rel)
            if rec is None:
                report.not_repaired.append(
                    Finding(part, "corrupt_file", ERROR, rel, f"no record to mark: {err}")
                )
            else:
                damaged.append((rel, "corrupt_file", rec.write_id, rec.rows))
        for rel, reason, wid, rows in damaged:
            report.lost.append(
                LostFile(
                    table.name,
                    part,
                    rel,
                    _bucket_of(rel),
                    wid if wid is not None else 0,
                    rows or 0,
                    reason,
                )
            )
            marks.setdefault(reason, []).append((part, rel))
        report.not_repaired += [
            Finding(part, p.kind, ERROR, p.path, p.describe())
            for p in scan.check.problems
            if p.kind == UNEXPECTED
        ]
    if not dry_run:
        for reason, files in sorted(marks.items()):
            catalog.mark_data_files_lost(table.name, files, f"{note} ({reason})")
    return report


def key_index_report(catalog: Catalog, name: str) -> list[Finding]:
    """``acidflow fsck --rebuild-index``: what the key index of a keyed table's lookups
    (``acidflow.format.orc.orcindex``) finds in each insert-side file of the current snapshot.

    Two indexes serve lookups. The stripe index lives in the ORC files (stripe statistics and
    bloom filters of the primary key columns, which Hive writes and reads too): this reports,
    per file, the stripes whose key columns have min/max statistics and bloom filters; a file
    with neither for every key column is read whole by lookups (``warning``: rewrite it --
    major compaction -- to gain the index); otherwise ``info``. Delete deltas are never pruned
    and are not listed. The sidecar key index of each base of the current snapshot
    (``base_N/_acidflow_key_index.parquet``, :mod:`acidflow.read.keyindex`) is derived data and
    is (re)built here for a table that opted in (``acidflow.key.index.sidecar=true``,
    :func:`acidflow.read.keyindex.wanted`), one ``info`` finding per base (``warning`` when its
    files cannot be read: lookups then read the base as without it).

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
    columns = [(c.name, c.hive_type) for c in table.columns]
    for part, state in sorted(plan.states.items()):
        if state.base is None or not keyindex.wanted(table.properties):
            continue
        base_dir = join(partition_dir(table, part or None), state.base.name)
        rel = f"{state.base.name}/{INDEX_FILE}"
        try:
            cov = keyindex.write_base_index(tfs, base_dir, columns, list(table.primary_key))
        except (acid_files.AcidFileError, OSError) as exc:
            findings.append(Finding(part, "key_index", WARNING, rel, f"sidecar not rebuilt: {exc}"))
            continue
        if cov is not None:
            rows = sum(r for _, r in cov.files.values())
            findings.append(
                Finding(
                    part,
                    "key_index",
                    INFO,
                    rel,
                    f"sidecar rebuilt: {rows} keys of {len(cov.files)} files",
                )
            )
    return findings
