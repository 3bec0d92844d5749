"""The executor side of a compaction: one task rewrites the events of one bucket (Hive's
compactor ``CompactorMR`` map task / Hive 4's query-based rewrite): it reads the bucket's
visible rows at the compactor's snapshot and writes them as a new base (major) or as one delta
and one delete delta (minor), with Hive's footer metadata, and returns the written files with
their checksums. Driven by :func:`acidflow.maintenance.compaction.compact_partition`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format import packing
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.orc import columnar
from acidflow.format.orc import files as acid_files
from acidflow.maintenance.verify import checksum_batches, events_checksum
from acidflow.read import snapshot
from acidflow.states import CompactionType
from acidflow.storage.fs import TableFS, join

MAJOR = CompactionType.MAJOR
MINOR = CompactionType.MINOR
#: default target stripe size of compacted files in bytes (ORC ``orc.stripe.size``, 64 MiB);
#: config key ``acidflow.compactor.target.stripe.bytes``
DEFAULT_TARGET_STRIPE_BYTES = 64 * 1024 * 1024
#: the ROW__ID columns of an event (originalTransaction, bucket, rowId)
_KEYS = list(acid_files.KEY_FIELDS)


@dataclass
class CompactTask:
    """One bucket's work (JSON-serialisable, shipped to a Spark task).

    Attributes:
        kind: major/minor; bucket_id: output file ``bucket_<N>``.
        read: the insert side and delete files (a ``snapshot.ReadTask`` as dict).
        minor_deletes: delete delta files whose events go to ``delete_delta_*/bucket_N`` (minor).
        out_dirs: ``{"insert"|"delete"|"base": absolute temp dir}``.
        bloom_columns: table columns whose ORC bloom filters the base / delta files carry (the
            primary key's data columns, ``files.key_bloom_filter_columns``); none in delete deltas.
        digest_written: major: digest the events handed to the ORC writer, per file (the
            output side of the verification, ``acidflow.compactor.verify=writer``).
    """

    kind: str
    bucket_id: int
    read: dict
    minor_deletes: list[str]
    out_dirs: dict[str, str]
    tfs_url: str
    columns: list[list[str]]
    valid: str
    stripe_rows: int
    compression: str = "zlib"
    stripe_bytes: int = DEFAULT_TARGET_STRIPE_BYTES
    #: major of an unbucketed table (acidflow.format.packing): further writer groups read by
    #: this task, and the output file numbers its sorted rows are cut into
    more_reads: list[dict] = field(default_factory=list)
    file_ids: list[int] = field(default_factory=list)
    bloom_columns: list[str] = field(default_factory=list)
    digest_written: bool = True

    def to_json(self) -> str:
        """JSON text of the task."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "CompactTask":
        """Inverse of :meth:`to_json`."""
        return cls(**json.loads(text))

    def read_task(self) -> snapshot.ReadTask:
        """The ReadTask of this bucket."""
        return snapshot.ReadTask.from_json(json.dumps(self.read))


def _ops(n: int, op: int) -> pa.Array:
    return pa.array(np.full(n, op, dtype=np.int32))


def _sorted_by_key(table: pa.Table) -> pa.Table:
    """``table`` ordered by ROW__ID (``_KEYS``); returned as is when it already is (a base
    followed by its later deltas usually is)."""
    if table.num_rows <= 1:
        return table
    if acid_files.keys_ascending([table.column(k).to_numpy() for k in _KEYS], strict=False).all():
        return table
    idx = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in _KEYS])
    return table.take(idx)


def run_task(task: CompactTask) -> list[dict]:
    """Write one bucket's output files into the temp directories (executor side).

    Major: the live rows of the bucket at the compactor snapshot (``snapshot.read_task``:
    delete events applied, invalid write ids dropped, original files with synthetic ROW__IDs)
    become insert events ``(0, w, b, r, w, row)`` sorted by ROW__ID in ``base/bucket_N``.
    Minor: valid insert events of the deltas' ``bucket_N`` files are copied unchanged into
    ``delta/bucket_N``; valid delete events (de-duplicated per ROW__ID, lowest
    ``currentTransaction`` kept) into ``delete_delta/bucket_N``. Files are written from Arrow
    (``columnar.write_event_table``).

    Returns:
        ``[{"kind", "bucket", "path", "rows", "bytes", "stripes", "key_index", "s1", "s2"}]``:
        one per file written (a major compaction's with ``digest_written``: ``s1``, ``s2`` the
        :class:`Checksum` of the events handed to the ORC writer, the output side of the
        verification, :func:`acidflow.maintenance.verify.written_checksum`), and for a major
        compaction one ``kind="read"`` entry with the :class:`Checksum` of the rows it read
        (``rows``, ``s1``, ``s2`` as decimal strings), the "before" side.
    Raises:
        acidflow.format.orc.files.AcidFileError: unreadable input, or events that are not unique.
    """
    tfs = TableFS(task.tfs_url)
    valid = ValidWriteIdList.from_string(task.valid)
    columns = [(c[0], c[1]) for c in task.columns]
    names = [c[0] for c in columns]
    out: list[dict] = []
    opts: dict[str, Any] = dict(
        compression=task.compression, stripe_rows=task.stripe_rows, stripe_bytes=task.stripe_bytes
    )

    def write(
        kind: str, events: pa.Table, file_id: int | None = None, rows: pa.Schema | None = None
    ) -> None:
        """Write one file; with ``rows`` (the snapshot rows' schema) digest its events."""
        fid = task.bucket_id if file_id is None else file_id
        path = join(task.out_dirs[kind], f"bucket_{fid:05d}")
        bloom = task.bloom_columns if kind != "delete" else []
        handed: list[pa.RecordBatch] = []
        done = columnar.write_event_table(
            tfs,
            path,
            columns,
            events,
            bloom_filter_columns=bloom,
            on_batch=handed.append if rows is not None else None,
            **opts,
        )
        if done is not None:
            digest = events_checksum(handed, names, rows) if rows is not None else None
            out.append(
                {
                    "kind": kind,
                    "bucket": fid,
                    "path": done.path,
                    "rows": done.rows,
                    "bytes": done.bytes,
                    "stripes": done.stripes,
                    "key_index": done.key_index,
                    "s1": None if digest is None else str(digest.sum1),
                    "s2": None if digest is None else str(digest.sum2),
                }
            )

    rt = task.read_task()
    if task.kind == MAJOR:
        batches = [
            b
            for r in [rt] + [snapshot.ReadTask.from_json(json.dumps(m)) for m in task.more_reads]
            for b in snapshot.read_task(tfs, r, columns, [], valid, row_id=True)
        ]
        read = checksum_batches(batches, names)
        out.append(
            {
                "kind": "read",
                "bucket": task.bucket_id,
                "path": "",
                "rows": read.rows,
                "bytes": 0,
                "stripes": 0,
                "key_index": None,
                "s1": str(read.sum1),
                "s2": str(read.sum2),
            }
        )
        if batches:
            t = pa.Table.from_batches(batches)
            digest = t.schema if task.digest_written else None
            del batches
            rid = t.column(snapshot.ROW_ID).combine_chunks()
            owid = rid.field(0)
            t = pa.table(
                [
                    _ops(len(owid), acid_files.OPERATION_INSERT),
                    owid,
                    rid.field(1),
                    rid.field(2),
                    owid,
                ]
                + [t.column(n) for n in names],
                names=list(acid_files.EVENT_FIELDS[:5]) + names,
            )
            t = _sorted_by_key(t)
            if task.file_ids:  # packed (unbucketed): sorted rows cut into the bin's files
                for fid, part in zip(task.file_ids, packing.split_rows(t, len(task.file_ids))):
                    write("base", part, fid, digest)
            else:
                write("base", t, rows=digest)
        return out

    # minor: insert events
    parts = []
    for df in rt.data_files:
        ev = acid_files.read_events(tfs, df.path)
        keep = pc.and_(
            snapshot.valid_mask(ev.column("currentTransaction"), valid),
            pc.not_equal(ev.column("operation"), acid_files.OPERATION_DELETE),
        )
        ev = ev.filter(keep)
        if ev.num_rows:
            row_cols = ev.column_names[5:]
            parts.append(
                pa.table(
                    [ev.column(i) for i in range(5)] + [ev.column(c) for c in row_cols],
                    names=list(acid_files.EVENT_FIELDS[:5]) + names[: len(row_cols)],
                )
            )
    if parts:
        write("insert", _sorted_by_key(pa.concat_tables(parts, promote_options="permissive")))
    # minor: delete events
    dparts = []
    for path in task.minor_deletes:
        ev = acid_files.read_events(tfs, path, keys_only=True)
        ev = ev.filter(
            pc.and_(
                snapshot.valid_mask(ev.column("currentTransaction"), valid),
                pc.equal(ev.column("operation"), acid_files.OPERATION_DELETE),
            )
        )
        if ev.num_rows:
            dparts.append(ev.select(_KEYS + ["currentTransaction"]))
    if dparts:
        t = pa.concat_tables(dparts)
        t = t.group_by(_KEYS).aggregate([("currentTransaction", "min")])
        t = pa.table(
            [_ops(t.num_rows, acid_files.OPERATION_DELETE)]
            + [t.column(k) for k in _KEYS]
            + [t.column("currentTransaction_min")],
            names=list(acid_files.EVENT_FIELDS[:5]),
        )
        write("delete", _sorted_by_key(t))
    return out
