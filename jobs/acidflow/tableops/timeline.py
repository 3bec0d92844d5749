"""The commit timeline of one table (Hudi CLI ``commits show``), built from the catalog.

One :class:`TimelineEntry` per committed write of the table (its commit record: write id,
transaction, commit time, the statements' statistics) and per compaction of the table (its
queue entry: minor/major, the write-id range it covers, its own transaction -- Hive 4's
visibility txn id -- and state). Pure reads of the catalog; the CLI (``acidflow commits``) only
prints what :func:`timeline` returns.

Order: entries are ordered by commit id, the catalog's global commit sequence (Hive
``TXN_COMPONENTS``/``COMPLETED_TXN_COMPONENTS`` ``CTC_ID`` order), so a compaction sits between
the commits it came after and before; an entry with no commit yet (a compaction that is
*initiated*, *working* or *failed*) is placed after the last commit at or before its time.
:func:`timeline` returns them newest first, as Hudi's ``commits show`` does.

Operation words (one per entry, from the commit record's ``stats["operations"]``, else its
component operations): ``insert``, ``upsert`` (``Transaction.upsert`` and a CDC batch's
``cdc_merge``), ``delete``, ``update``, ``merge``, ``overwrite`` (``insert_overwrite``),
``compaction``; any other name a writer records (``restore``, ``rollback``, ``schema``, ...) is
passed through. A transaction with several statements on the table gets: the one word when they
agree; else the first passed-through name; else ``overwrite`` if one overwrote; else ``upsert``
for inserts with upserts; else ``merge``. No operations recorded (a commit Hive or an adopted
history made) gives ``commit``.

Compaction history is what the catalog keeps (``hive.compactor.history.retention.*``: the
newest succeeded/failed entries per partition), so old compactions drop out of the timeline as
they drop out of ``SHOW COMPACTIONS``; decisions that are no compaction (*did not initiate*,
*refused*) are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from acidflow.catalog import Catalog
from acidflow.catalog.records import (
    BatchInfo,
    CommitRecord,
    CompactionInfo,
    CompactionState,
    TxnState,
)
from acidflow.format.layout import parse_base, parse_delta

#: statement names as writers record them -> the timeline's word
OPERATION_WORDS: dict[str, str] = {
    "insert": "insert",
    "upsert": "upsert",
    "cdc_merge": "upsert",
    "delete": "delete",
    "update": "update",
    "merge": "merge",
    "insert_overwrite": "overwrite",
    "overwrite": "overwrite",
}
_KNOWN = set(OPERATION_WORDS.values())
#: compaction states that are not a compaction (a decision recorded in the queue)
_NOT_COMPACTIONS = {CompactionState.DID_NOT_INITIATE, CompactionState.REFUSED}


@dataclass(frozen=True)
class TimelineEntry:
    """One row of the timeline.

    Attributes:
        kind: ``"commit"`` or ``"compaction"``.
        operation: one word (see the module doc).
        operations: the names recorded, in statement order (a compaction: ``[type]``).
        write_id: the table write id of a commit; ``None`` for a compaction.
        txn_id: the writing transaction, or the compaction's own (its visibility txn id);
            ``None`` for a compaction not claimed yet.
        commit_id: the commit's place in the global commit sequence, ``None`` until committed.
        time: UTC commit time; a compaction not committed: its end, start or enqueue time.
        batch_id, batch_kind: the batch ledger record (``Catalog.list_batches``) of the
            transaction (``"cdc"``/``"ingest"``), else ``None``.
        rows_inserted, rows_updated, rows_deleted: the commit's counts (a compaction: rows it
            wrote as ``rows_inserted``).
        files, bytes: files written and their size in bytes.
        partitions: ``{partition spec ("" unpartitioned): {"files", "bytes", "rows"}}``.
        compaction: for a compaction ``{"id", "type", "state", "partition", "min_write_id"
            (``None`` for a major: a base covers every write id up to max), "max_write_id",
            "visibility_txn_id", "inputs", "outputs", "error"}``, else ``None``.
        savepoints: names of the savepoints pinning the state of this commit's write id
            (``acidflow.tableops.savepoint``), in name order; empty for a compaction.
    """

    kind: str
    operation: str
    operations: list[str]
    write_id: int | None
    txn_id: int | None
    commit_id: int | None
    time: datetime | None
    batch_id: str | None = None
    batch_kind: str | None = None
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    files: int = 0
    bytes: int = 0
    partitions: dict[str, dict[str, int]] = field(default_factory=dict)
    compaction: dict[str, Any] | None = None
    savepoints: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict with the attribute names as keys (``time`` as ISO 8601 UTC)."""
        out = dict(self.__dict__)
        out["time"] = self.time.isoformat() if self.time else None
        return out


def operation_word(names: list[str]) -> str:
    """One word for the operation names of a commit (rules in the module doc)."""
    words: list[str] = []
    for n in names:
        w = OPERATION_WORDS.get(n, n)
        if w not in words:
            words.append(w)
    if not words:
        return "commit"
    if len(words) == 1:
        return words[0]
    passed = [w for w in words if w not in _KNOWN]
    if passed:
        return passed[0]
    if "overwrite" in words:
        return "overwrite"
    if set(words) <= {"insert", "upsert"}:
        return "upsert"
    return "merge"


def _commit_entry(rec: CommitRecord, batch: BatchInfo | None) -> TimelineEntry:
    st = rec.stats or {}
    names = list(st.get("operations") or rec.operations)
    parts = {
        str(p): {
            "files": int(v.get("files", 0)),
            "bytes": int(v.get("bytes", 0)),
            "rows": int(v.get("rows", 0)),
        }
        for p, v in (st.get("partitions") or {}).items()
    }
    return TimelineEntry(
        kind="commit",
        operation=operation_word(names),
        operations=names,
        write_id=rec.write_id,
        txn_id=rec.txn_id,
        commit_id=rec.commit_id,
        time=rec.committed_at,
        batch_id=batch.batch_id if batch else None,
        batch_kind=batch.kind if batch else None,
        rows_inserted=int(st.get("rows_inserted", 0)),
        rows_updated=int(st.get("rows_updated", 0)),
        rows_deleted=int(st.get("rows_deleted", 0)),
        files=int(st.get("files", 0)),
        bytes=int(st.get("bytes", 0)),
        partitions=parts,
    )


def _write_id_range(c: CompactionInfo) -> tuple[int | None, int | None]:
    """(min, max) write ids a compaction covers, from the directories it published (a major:
    ``(None, W)`` of ``base_W``); before the worker reported: ``(None, highest_write_id)``."""
    for name in c.details.get("outputs") or []:
        base = parse_base(name)
        if base is not None:
            return None, base.write_id
        delta = parse_delta(name)
        if delta is not None:
            return delta.min_write_id, delta.max_write_id
    return None, c.highest_write_id


def _compaction_entry(c: CompactionInfo) -> TimelineEntry:
    d = c.details
    lo, hi = _write_id_range(c)
    files, size, rows = (
        int(d.get("files") or 0),
        int(d.get("bytes") or 0),
        int(d.get("rows_written") or 0),
    )
    part = c.partition or ""
    return TimelineEntry(
        kind="compaction",
        operation="compaction",
        operations=[c.type],
        write_id=None,
        txn_id=c.txn_id,
        commit_id=c.commit_id,
        time=c.ended_at or c.started_at or c.enqueued_at,
        rows_inserted=rows,
        files=files,
        bytes=size,
        partitions={part: {"files": files, "bytes": size, "rows": rows}} if files else {},
        compaction={
            "id": c.id,
            "type": c.type,
            "state": c.state,
            "partition": c.partition,
            "min_write_id": lo,
            "max_write_id": hi,
            "visibility_txn_id": c.txn_id,
            "inputs": list(d.get("inputs") or []),
            "outputs": list(d.get("published") or d.get("outputs") or []),
            "error": c.error,
        },
    )


def timeline(
    catalog: Catalog, table_name: str, *, limit: int | None = None, include_compactions: bool = True
) -> list[TimelineEntry]:
    """The commit timeline of ``table_name``, newest first.

    Args:
        catalog: any :class:`acidflow.catalog.Catalog` backend.
        table_name: ``db.table``.
        limit: keep only the newest ``limit`` entries (``None``: all).
        include_compactions: list compactions too (default).
    Returns:
        :class:`TimelineEntry` list, newest first (ordering rules in the module doc).
    Raises:
        acidflow.catalog.NoSuchTableError: unknown table.
        ValueError: ``limit`` below 1.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    name = catalog.get_table(table_name).name
    batches = {b.txn_id: b for b in catalog.list_batches() if b.state == TxnState.COMMITTED}
    keyed: list[tuple[tuple[int, int, int], TimelineEntry]] = []
    commits = catalog.commit_records(name)
    pinned: dict[int, list[str]] = {}
    for sp in catalog.list_savepoints(name):
        pinned.setdefault(sp.write_id, []).append(sp.name)
    for rec in commits:
        entry = replace(
            _commit_entry(rec, batches.get(rec.txn_id)),
            savepoints=sorted(pinned.get(rec.write_id, [])),
        )
        keyed.append(((rec.commit_id, 0, rec.write_id), entry))
    if include_compactions:
        stamps = sorted((r.committed_at, r.commit_id) for r in commits)
        for c in catalog.list_compactions(name):
            if c.state in _NOT_COMPACTIONS:
                continue
            e = _compaction_entry(c)
            if c.commit_id is not None:
                key = (c.commit_id, 0, c.id)
            else:  # not committed (yet): after the last commit at or before its time
                anchor = max(
                    (cid for t, cid in stamps if e.time is not None and t <= e.time), default=0
                )
                key = (anchor, 1, c.id)
            keyed.append((key, e))
    keyed.sort(key=lambda ke: ke[0], reverse=True)
    out = [e for _, e in keyed]
    return out[:limit] if limit is not None else out
