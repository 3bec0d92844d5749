"""The verification of a compaction: an order-independent checksum of a partition's visible rows,
computed before the rewrite and again on its output (Hive's compactor has none; acidflow
publishes only when both agree). The rows are those of ``snapshot.read_task(..., row_id=True)``:
``(ROW__ID, *columns)``, hashed by DuckDB straight on the Arrow batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import duckdb
import pyarrow as pa

from acidflow.format.layout import ValidWriteIdList
from acidflow.read import snapshot
from acidflow.storage.fs import TableFS

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
