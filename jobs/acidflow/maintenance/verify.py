"""The verification of a compaction: an order-independent checksum of a partition's visible rows,
computed before the rewrite and again on its output (Hive's compactor has none; acidflow
publishes only when both agree). The rows are those of ``snapshot.read_task(..., row_id=True)``:
``(ROW__ID, *columns)``, hashed by DuckDB straight on the Arrow batches.

The output side of a major compaction is, by default (``acidflow.compactor.verify=writer``),
the digest each worker takes of the events it hands to the ORC writer
(:func:`events_checksum`), with every written file checked against its footer
(:func:`written_checksum`); ``readback`` reads the new base again instead (:func:`checksum_task`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import duckdb
import pyarrow as pa

from acidflow.format.fileio import FileIO
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.orc import files as acid_files
from acidflow.read import snapshot
from acidflow.storage.fs import TableFS

#: ``acidflow.compactor.verify`` values: the output side of a major compaction's verification
#: from the writers' own digests and the files' footers, or from a second read of the new base
VERIFY_WRITER = "writer"
VERIFY_READBACK = "readback"
VERIFY_MODES = (VERIFY_WRITER, VERIFY_READBACK)

_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class Checksum:
    """Order-independent digest of visible rows: ``rows`` and two sums mod 2**64 of two 64-bit
    hashes of each row ``(writeid, bucketid, rowid, *row)`` (:func:`checksum_batches`)."""

    rows: int = 0
    sum1: int = 0
    sum2: int = 0

    def __add__(self, other: "Checksum") -> "Checksum":
        return Checksum(
            self.rows + other.rows,
            (self.sum1 + other.sum1) & _MASK64,
            (self.sum2 + other.sum2) & _MASK64,
        )

    def to_dict(self) -> dict:
        """JSON-able form (sums as hex strings)."""
        return {"rows": self.rows, "sum1": f"{self.sum1:016x}", "sum2": f"{self.sum2:016x}"}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def checksum_batches(batches: Iterable[pa.RecordBatch], names: list[str]) -> Checksum:
    """Digest of rows from ``snapshot.read_task(..., row_id=True)`` batches: the row count and
    two sums mod 2**64 of DuckDB's 64-bit ``hash(ROW__ID, *values of names)`` (the second with
    a salt column), computed by DuckDB straight on the Arrow batches, streamed, one thread (a
    Spark task owns one core). Order- and chunking-independent; NULL hashes apart from every
    value. The hash is DuckDB's, stable within one DuckDB version -- both sides of a
    verification are computed by the same installation.
    """
    it = iter(batches)
    first = next((b for b in it if b.num_rows), None)
    if first is None:
        return Checksum()
    wanted = [snapshot.ROW_ID] + list(names)
    schema = first.select(wanted).schema

    def unified() -> Iterator[pa.RecordBatch]:
        yield first.select(wanted)
        for b in it:
            if b.num_rows:
                b = b.select(wanted)
                yield (
                    b
                    if b.schema.equals(schema)
                    else pa.RecordBatch.from_arrays(
                        [b.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema
                    )
                )

    cols = ", ".join(_quoted(n) for n in wanted)
    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("acid_rows", pa.RecordBatchReader.from_batches(schema, unified()))
        result: Any = con.execute(
            f"SELECT count(*), sum(hash({cols})::HUGEINT) % {1 << 64}, "
            f"sum(hash({cols}, 'acidflow')::HUGEINT) % {1 << 64} FROM acid_rows"
        ).fetchone()
    finally:
        con.close()
    rows, s1, s2 = result  # one row: an aggregate without GROUP BY
    return Checksum(int(rows), int(s1 or 0), int(s2 or 0))


def checksum_task(
    tfs_url: str, read: snapshot.ReadTask, columns: list[tuple[str, str]], valid: ValidWriteIdList
) -> Checksum:
    """:class:`Checksum` of the visible rows of one read task (executor side)."""
    tfs = TableFS(tfs_url)
    batches = snapshot.read_task(tfs, read, columns, [], valid, row_id=True)
    return checksum_batches(batches, [c[0] for c in columns])


def events_checksum(
    batches: Sequence[pa.RecordBatch], names: list[str], schema: pa.Schema | None = None
) -> Checksum:
    """:class:`Checksum` of insert events, equal to :func:`checksum_batches` of the snapshot
    rows they hold: ``ROW__ID`` is (originalTransaction, bucket, rowId), the row the ``row``
    struct's columns.

    Args:
        batches: event batches (``acidflow.format.orc.files.event_arrow_schema``, e.g. what
            ``columnar.write_event_table`` hands to its ``on_batch``), insert events only.
        names: the table's column names (the ``row`` struct's fields, in order).
        schema: the snapshot rows' schema of the other side; a column of another type is
            cast to it first (DuckDB's hash depends on the type), None = as they are.
    Returns:
        The count and sums of :func:`checksum_batches`.
    """
    rid_fields = list(snapshot.ROW_ID_TYPE)
    target = (
        [schema.field(snapshot.ROW_ID).type] + [schema.field(n).type for n in names]
        if schema is not None
        else None
    )

    def rows() -> Iterator[pa.RecordBatch]:
        for b in batches:
            rid = pa.StructArray.from_arrays(
                [b.column(i).cast(f.type) for i, f in zip((1, 2, 3), rid_fields)],
                fields=rid_fields,
            )
            row = b.column(5)
            cols = [rid] + (
                row.flatten() if row.null_count else [row.field(i) for i in range(len(names))]
            )
            if target is not None:
                cols = [c if c.type == t else c.cast(t) for c, t in zip(cols, target)]
            yield pa.RecordBatch.from_arrays(cols, names=[snapshot.ROW_ID] + list(names))

    return checksum_batches(rows(), names)


def written_checksum(
    tfs: FileIO, written: Sequence[dict], listed: Iterable[str]
) -> tuple[Checksum, list[str]]:
    """The output side of a major compaction's verification without reading the new base
    again: the sum of the digests the workers took of the events they handed to the ORC
    writer (:func:`events_checksum`), once every file is found to be what its writer
    reported.

    Checks, footers only (ORC file tail, ``files.file_info``): the data files listed in the
    output directory are exactly the written ones; each has the size its writer reported, and
    its footer the row count, the stripe count and Hive's ``hive.acid.key.index`` (one entry
    per stripe, ``OrcRecordUpdater``) the writer cut. A lost, short, truncated or replaced file
    fails one of them.

    Args:
        tfs: the table's storage.
        written: ``rewrite.run_task`` rows of the written files (``path``, ``rows``,
            ``bytes``, ``stripes``, ``key_index``, and the digest ``s1``/``s2``, decimal).
        listed: paths of the data files found in the output directories.
    Returns:
        ``(checksum, problems)``: problems name the file and what differs (empty: consistent);
        the checksum sums the written files' digests.
    """
    problems: list[str] = []
    total = Checksum()
    by_path = {f["path"]: f for f in written}
    listed = set(listed)
    for path in sorted(listed - set(by_path)):
        problems.append(f"{path}: in the output, not written by the compaction")
    for path, f in sorted(by_path.items()):
        if f.get("s1") is None:
            problems.append(f"{path}: its writer took no digest")
            continue
        total = total + Checksum(int(f["rows"]), int(f["s1"]), int(f["s2"]))
        if path not in listed:
            problems.append(f"{path}: written, missing from the output")
            continue
        try:
            size = tfs.size(path)
            info = acid_files.file_info(tfs, path)
        except (acid_files.AcidFileError, OSError) as exc:
            problems.append(f"{path}: footer unreadable: {exc}")
            continue
        index = info.metadata.get(acid_files.KEY_INDEX_KEY, b"").decode(errors="replace")
        found = (size, info.rows, info.stripes, index)
        wanted = (f["bytes"], f["rows"], f["stripes"], f.get("key_index"))
        for what, got, want in zip(("bytes", "rows", "stripes", "key index"), found, wanted):
            if got != want:
                problems.append(f"{path}: {what} {got!r}, its writer wrote {want!r}")
    return total, problems
