"""Columnar ACID event files: Arrow batches of events through pyarrow's ORC writer, streamed
to storage, with Hive's footer metadata added at close.

pyarrow's ORC writer (the ORC C++ library) writes Arrow columns several times faster than
feeding Python tuples to pyorc, but it cannot set the footer's user metadata that Hive's ACID
readers need (``hive.acid.key.index``, ``hive.acid.stats``, ``hive.acid.version``;
``OrcRecordUpdater``). :class:`ColumnarEventWriter` streams the ORC writer's output to the
event file and holds back only its last bytes; at close the footer (the last thing an ORC
writer writes) is parsed, the metadata appended to it (:mod:`acidflow.format.orc.orcfooter`), with
the key index taken from the stripes the writer actually cut, and the new footer written in
place of the old one. Every stripe and the stripe statistics stay byte for byte as written.

Stripes: by size (``orc.stripe.size``, ``stripe_bytes``: ORC cuts a stripe when its encoded
streams reach it), or by events (``stripe_rows``: the ORC writer gets exactly that many events
per write batch and a 1-byte stripe target, so it cuts a stripe after every batch -- once a
stripe's compressed streams hold any bytes, so very compressible data (a few KiB per batch)
makes stripes of several batches; the key index always follows the stripes actually cut).

The pyorc writer (:class:`acidflow.format.orc.files.EventFileWriter`) stays for what pyarrow cannot
write with the exact ORC type (varchar, char, nested types) and for snappy
(:func:`acidflow.format.orc.files.columnar_writable`); :func:`write_event_table` chooses. It also
takes a file holding a timestamp before 1970 with a fraction of a second, which pyarrow's ORC
writer stores with negative nanoseconds that Hive cannot read
(:mod:`acidflow.format.orc.timestamps`); :class:`ColumnarEventWriter` moves there on its own.
Both writers refuse timestamps and dates outside Hive's range.
"""

from __future__ import annotations

import bisect
import io
from collections import deque
from typing import Any, BinaryIO, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as paorc

from acidflow.format.fileio import FileIO
from acidflow.format.orc import orcfooter, timestamps
from acidflow.format.orc.files import (
    ACID_STATS_KEY,
    ACID_VERSION,
    ACID_VERSION_KEY,
    COLUMNAR_COMPRESSION,
    DEFAULT_BLOOM_FILTER_FPP,
    DEFAULT_STRIPE_BYTES,
    DEFAULT_STRIPE_ROWS,
    EVENT_FIELDS,
    KEY_FIELDS,
    KEY_INDEX_KEY,
    OPERATION_DELETE,
    OPERATION_INSERT,
    OPERATION_UPDATE,
    WRITE_BATCH_ROWS,
    AcidFileError,
    EventFileWriter,
    WrittenFile,
    columnar_writable,
    event_arrow_schema,
    event_column_ids,
    keys_ascending,
    read_events,
    write_event_file,
)

#: bytes of the ORC writer's output held back until close: the footer and postscript must be
#: among them (a footer holds ~20 bytes per stripe plus the file's column statistics)
TAIL_HOLD_BYTES = 8 * 1024 * 1024
#: ORC compression block size of the columnar writer (Hive's ``orc.compress.size`` default)
COMPRESSION_BLOCK_BYTES = 256 * 1024
#: string columns are dictionary-encoded while distinct values / non-null values stay at or
#: below this (Java ORC's ``orc.dictionary.key.threshold`` default, what Hive and Spark write;
#: pyarrow's default 0 never uses a dictionary, which leaves zlib more bytes to compress)
DICTIONARY_KEY_THRESHOLD = 0.8
#: ORC C++'s ``SPEED`` strategy, Java ORC's ``orc.compression.strategy`` default (zlib at a
#: fast level; the codec, and so every reader, is unchanged)
COMPRESSION_STRATEGY = "speed"
_KEY_TYPES = (pa.int64(), pa.int32(), pa.int64())


class _HeldTailSink(io.RawIOBase):
    """Write-only file for the ORC writer: passes bytes on to ``fh`` except the last
    ``hold`` bytes written, which stay in memory until :meth:`take_held`."""

    def __init__(self, fh: BinaryIO, hold: int):
        super().__init__()
        self._fh, self._hold = fh, hold
        self._held: deque[bytes] = deque()
        self._held_bytes = 0
        self.passed = 0  # bytes written on to fh

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        self._held.append(data)
        self._held_bytes += len(data)
        while self._held_bytes - len(self._held[0]) >= self._hold:
            first = self._held.popleft()
            self._held_bytes -= len(first)
            self._fh.write(first)
            self.passed += len(first)
        return len(data)

    def take_held(self) -> bytes:
        """The held bytes (the file's end, from offset :attr:`passed`)."""
        out = b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        return out


class _KeyLog:
    """The event keys written, compactly: a batch whose keys are one writer's consecutive
    rowIds (insert events) is kept as its first key; other batches keep their key arrays."""

    def __init__(self) -> None:
        self.starts: list[int] = []  # first row number of each batch
        self.runs: list[Any] = []  # (o, b, r0) or (o_array, b_array, r_array)
        self.rows = 0

    def add(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> None:
        n = len(r)
        self.starts.append(self.rows)
        # strictly ascending keys with o and b equal at both ends are one writer's rowIds;
        # consecutive when the rowIds span exactly n
        if o[0] == o[-1] and b[0] == b[-1] and int(r[-1]) - int(r[0]) == n - 1:
            self.runs.append((int(o[0]), int(b[0]), int(r[0])))
        else:
            self.runs.append((o, b, r))
        self.rows += n

    def key(self, row: int) -> tuple[int, int, int]:
        """The key of event number ``row`` (0-based, file order)."""
        i = bisect.bisect_right(self.starts, row) - 1
        run, off = self.runs[i], row - self.starts[i]
        if isinstance(run[2], int):
            return run[0], run[1], run[2] + off
        return int(run[0][off]), int(run[1][off]), int(run[2][off])


class ColumnarEventWriter:
    """Streams Arrow batches of sorted events into one ACID event file (see module doc).

    Batches have the event schema (:func:`acidflow.format.orc.files.event_arrow_schema`: the five
    event fields, no NULLs, and ``row``, NULL for delete events; :func:`event_batch`,
    :func:`insert_events`, :func:`delete_events` build them), in strictly ascending
    (originalTransaction, bucket, rowId) order across the whole file (checked). Nothing is
    created at ``path`` before the first event; :meth:`close` of a writer that got none
    returns ``None``.

    Args:
        tfs, path: where the file goes.
        columns: table columns ``[(name, hive_type)]``; must be
            :func:`acidflow.format.orc.files.columnar_writable`.
        compression: ``zlib`` (default) or ``none``.
        stripe_bytes: ORC stripe size target (``orc.stripe.size``), when ``stripe_rows`` is
            not given.
        stripe_rows: events per stripe instead (see module doc).
        bloom_filter_columns, bloom_filter_fpp: ORC bloom filters on these table columns
            (``orc.bloom.filter.columns`` / ``orc.bloom.filter.fpp``).
    Raises:
        ValueError: columns or compression the columnar writer cannot write, or an unknown
            bloom filter column.
        AcidFileError: (from :meth:`write` / :meth:`close`) events out of order, NULL event
            fields, operations outside 0..2, a footer the writer cannot rewrite.
    """

    def __init__(
        self,
        tfs: FileIO,
        path: str,
        columns: list[tuple[str, str]],
        *,
        compression: str = "zlib",
        stripe_bytes: int = DEFAULT_STRIPE_BYTES,
        stripe_rows: int | None = None,
        bloom_filter_columns: Sequence[str] = (),
        bloom_filter_fpp: float = DEFAULT_BLOOM_FILTER_FPP,
    ):
        if not columnar_writable(columns, compression):
            raise ValueError(
                f"{path}: the columnar writer cannot write {columns} with "
                f"{compression!r} (use files.EventFileWriter)"
            )
        self.tfs, self.path, self.columns = tfs, path, columns
        self.schema = event_arrow_schema(columns)
        self._options = dict(
            file_version="0.12",
            compression=COLUMNAR_COMPRESSION[compression],
            compression_block_size=COMPRESSION_BLOCK_BYTES,
            compression_strategy=COMPRESSION_STRATEGY,
            dictionary_key_size_threshold=DICTIONARY_KEY_THRESHOLD,
            batch_size=stripe_rows or WRITE_BATCH_ROWS,
            stripe_size=1 if stripe_rows else stripe_bytes,
            bloom_filter_columns=event_column_ids(columns, bloom_filter_columns) or None,
            bloom_filter_fpp=bloom_filter_fpp,
        )
        self.stripe_rows = stripe_rows
        self.compression = compression
        self._bloom = (list(bloom_filter_columns), bloom_filter_fpp)
        #: the pyorc writer the file went to once a batch held a pre-1970 timestamp with a
        #: fraction of a second (see :meth:`write`)
        self._pyorc: EventFileWriter | None = None
        self._fh: BinaryIO | None = None
        self._sink: _HeldTailSink | None = None
        self._writer: paorc.ORCWriter | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._keys = _KeyLog()
        self._last: tuple[int, int, int] | None = None
        self._ops = np.zeros(3, dtype=np.int64)
        self._closed = False

    @property
    def rows(self) -> int:
        """Events written so far."""
        return self._pyorc.rows if self._pyorc is not None else self._keys.rows

    def write(self, batch: pa.RecordBatch) -> None:
        """Append a batch of events (see class doc).

        Timestamps and dates outside Hive's range are refused
        (:func:`acidflow.format.orc.timestamps.check_range`). The first batch holding a
        timestamp before 1970 with a fraction of a second (which pyarrow's ORC writer stores
        with negative nanoseconds, unreadable by Hive) moves the file to pyorc
        (:class:`acidflow.format.orc.files.EventFileWriter`), which stores it as Hive's writer
        does: the events written so far are read back and written again through it.

        Raises:
            HiveRangeError: a timestamp or date outside Hive's range (names file and column).
            AcidFileError: see class doc.
        """
        n = batch.num_rows
        if n == 0:
            return
        if not batch.schema.equals(self.schema):
            raise AcidFileError(
                f"{self.path}: events batch schema {batch.schema} is not the "
                f"event schema {self.schema}"
            )
        for i, name in enumerate(EVENT_FIELDS[:5]):
            if batch.column(i).null_count:
                raise AcidFileError(f"{self.path}: NULL in event field {name!r}")
        op = batch.column(0).to_numpy()
        if op.min() < 0 or op.max() > OPERATION_DELETE:
            raise AcidFileError(f"{self.path}: operation values outside 0..2")
        row = batch.column(5)
        children = [row.field(i) for i in range(row.type.num_fields)]
        for child, f in zip(children, row.type):
            timestamps.check_range(child, f.name, self.path)
        if self._pyorc is None and any(timestamps.needs_pyorc(c) for c in children):
            self._move_to_pyorc()
        if self._pyorc is not None:
            self._pyorc.write_batch(batch)
            return
        o, b, r = (batch.column(i).to_numpy() for i in (1, 2, 3))
        self._check_order(o, b, r)
        self._ops += np.bincount(op, minlength=3)
        self._keys.add(o, b, r)
        self._last = (int(o[-1]), int(b[-1]), int(r[-1]))
        if self.stripe_rows is None:
            self._orc().write(pa.Table.from_batches([batch]))
            return
        self._pending.append(batch)
        self._pending_rows += n
        while self._pending_rows >= self.stripe_rows:
            self._flush(self.stripe_rows)

    def _move_to_pyorc(self) -> None:
        """Continue the file with pyorc: the events the ORC writer got so far are finished
        into the file, read back, and written again through pyorc."""
        done = None
        if self._writer is not None or self._pending_rows:
            if self._pending_rows:
                self._flush(self._pending_rows)
            done = self._finish()
            self._closed = False
        events = read_events(self.tfs, self.path) if done is not None else None
        if done is not None:
            self.tfs.delete(self.path)
        self._writer = self._fh = self._sink = None
        self._pyorc = EventFileWriter(
            self.tfs,
            self.path,
            self.columns,
            compression=self.compression,
            stripe_rows=self.stripe_rows or DEFAULT_STRIPE_ROWS,
            bloom_filter_columns=self._bloom[0],
            bloom_filter_fpp=self._bloom[1],
        )
        if events is not None:
            for b in events.to_batches():
                self._pyorc.write_batch(event_batch(self.path, self.columns, b, self.schema))

    def _check_order(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> None:
        first = (int(o[0]), int(b[0]), int(r[0]))
        if self._last is not None and first <= self._last:
            self._order_error(first, self._last)
        up = keys_ascending([o, b, r])
        if not up.all():
            i = int(np.argmin(up)) + 1
            self._order_error(
                (int(o[i]), int(b[i]), int(r[i])), (int(o[i - 1]), int(b[i - 1]), int(r[i - 1]))
            )

    def _order_error(self, key: tuple[int, int, int], previous: tuple[int, int, int]) -> None:
        raise AcidFileError(
            f"{self.path}: event key {key} is not above the previous key "
            f"{previous}; events must be sorted by (originalTransaction, "
            "bucket, rowId) and unique"
        )

    def _orc(self) -> paorc.ORCWriter:
        if self._writer is None:
            self._fh = self.tfs.open(self.path, "wb")
            self._sink = _HeldTailSink(self._fh, TAIL_HOLD_BYTES)
            self._writer = paorc.ORCWriter(self._sink, **self._options)
        return self._writer

    def _flush(self, rows: int) -> None:
        """Give the ORC writer the first ``rows`` pending events as one write batch."""
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        self._orc().write(table.slice(0, rows))
        rest = table.slice(rows)
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows

    def close(self) -> WrittenFile | None:
        """Finish the file: write the footer with Hive's metadata. Returns ``None`` (and
        leaves no file) when no event was written. On error the partial file is deleted."""
        if self._closed:
            raise AcidFileError(f"{self.path}: already closed")
        if self._pyorc is not None:
            self._closed = True
            return self._pyorc.close()
        try:
            if self._pending_rows:
                self._flush(self._pending_rows)
            if self._writer is None:
                self._closed = True
                return None
            return self._finish()
        except BaseException:
            self.abort()
            raise

    def _finish(self) -> WrittenFile:
        assert self._writer is not None and self._sink is not None and self._fh is not None
        self._writer.close()
        held, offset = self._sink.take_held(), self._sink.passed
        try:
            tail = orcfooter.read_tail(held, file_offset=offset)
        except orcfooter.OrcFooterError as exc:
            raise AcidFileError(f"{self.path}: cannot add Hive's metadata: {exc}") from exc
        counts = tail.stripe_rows
        if sum(counts) != self.rows:
            raise AcidFileError(
                f"{self.path}: the ORC writer's stripes hold {sum(counts)} rows, not {self.rows}"
            )
        ends = np.cumsum(counts) - 1
        key_index = "".join("%d,%d,%d;" % self._keys.key(int(e)) for e in ends)
        inserts, updates, deletes = (
            int(self._ops[i]) for i in (OPERATION_INSERT, OPERATION_UPDATE, OPERATION_DELETE)
        )
        patched = orcfooter.add_user_metadata(
            tail,
            {
                KEY_INDEX_KEY: key_index.encode(),
                ACID_STATS_KEY: f"{inserts},{updates},{deletes}".encode(),
                ACID_VERSION_KEY: str(ACID_VERSION).encode(),
            },
        )
        self._fh.write(memoryview(held)[: patched.keep - offset])
        self._fh.write(patched.tail)
        self._fh.close()
        self._closed = True
        return WrittenFile(
            self.path,
            self.rows,
            patched.keep + len(patched.tail),
            len(counts),
            inserts,
            deletes,
            key_index,
            self._keys.key(0),
            self._keys.key(self.rows - 1),
        )

    def abort(self) -> None:
        """Stop without keeping the file (nothing is left at ``path``)."""
        if self._closed:
            return
        self._closed = True
        self._pending = []
        if self._pyorc is not None:
            self._pyorc.abort()
            return
        try:
            if self._writer is not None:
                try:
                    self._writer.close()
                except Exception:  # the file is deleted anyway
                    pass
        finally:
            if self._fh is not None:
                self._fh.close()
                if self.tfs.exists(self.path):
                    self.tfs.delete(self.path)


def event_batch(
    path: str,
    columns: list[tuple[str, str]],
    batch: pa.RecordBatch,
    schema: pa.Schema | None = None,
) -> pa.RecordBatch:
    """A batch of flat events as the event schema (no copy of the row data).

    Args:
        path: the file (for messages).
        batch: columns ``operation, originalTransaction, bucket, rowId, currentTransaction``
            (any integer types), then table columns by name (missing ones become NULL, e.g. a
            column added after these events were written); ``row`` is NULL for delete events.
        schema: :func:`acidflow.format.orc.files.event_arrow_schema` of ``columns`` (computed when
            not given).
    Raises:
        AcidFileError: an event field missing.
    """
    schema = schema or event_arrow_schema(columns)
    row_fields = list(schema.field("row").type)
    n = batch.num_rows
    for name in EVENT_FIELDS[:5]:
        if name not in batch.schema.names:
            raise AcidFileError(f"{path}: events have no {name!r} column")
    head = [batch.column(name).cast(schema.field(name).type) for name in EVENT_FIELDS[:5]]
    children = [
        batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(n, f.type)
        for f in row_fields
    ]
    row = pa.StructArray.from_arrays(
        children, fields=row_fields, mask=pc.equal(head[0], OPERATION_DELETE)
    )
    return pa.RecordBatch.from_arrays(head + [row], schema=schema)


def _constant(n: int, value: int, typ: pa.DataType) -> pa.Array:
    return pa.array(np.full(n, value, dtype=typ.to_pandas_dtype()), typ)


def insert_events(
    schema: pa.Schema,
    data: Sequence[pa.Array],
    write_id: int,
    bucket: int,
    first_row_id: int,
    *,
    cast: bool = True,
) -> pa.RecordBatch:
    """Insert events ``(0, W, bucket property, rowId, W, row)`` of one writer's rows.

    Args:
        schema: the event schema (:func:`acidflow.format.orc.files.event_arrow_schema`).
        data: the rows' table columns in table order, equal lengths.
        write_id: W. bucket: the bucket property (``encode_bucket_property``).
        first_row_id: rowId of the first row; the others follow one by one.
        cast: cast the columns to the table's Arrow types (timestamps with a zone become the
            zone-less UTC wall clock, as Hive stores them); ``False`` keeps them as given.
    """
    n = len(data[0]) if data else 0
    row_type = schema.field("row").type
    children = [a.cast(f.type) for a, f in zip(data, row_type)] if cast else list(data)
    fields = list(row_type) if cast else [pa.field(f.name, a.type) for a, f in zip(data, row_type)]
    row = (
        pa.StructArray.from_arrays(children, fields=fields)
        if fields
        else pa.array([{}] * n, pa.struct([]))
    )
    head = [
        _constant(n, OPERATION_INSERT, pa.int32()),
        _constant(n, write_id, pa.int64()),
        _constant(n, bucket, pa.int32()),
        pa.array(np.arange(first_row_id, first_row_id + n, dtype=np.int64)),
        _constant(n, write_id, pa.int64()),
    ]
    names = list(EVENT_FIELDS)
    if cast:
        return pa.RecordBatch.from_arrays(head + [row], schema=schema)
    return pa.RecordBatch.from_arrays(head + [row], names=names)


def delete_events(
    schema: pa.Schema,
    original_write_id: pa.Array,
    bucket: pa.Array,
    row_id: pa.Array,
    write_id: int,
) -> pa.RecordBatch:
    """Delete events ``(2, owid, bucket property, rowId, W, NULL)`` of the deleted ROW__IDs
    (three equal-length integer arrays, in the file's order)."""
    n = len(row_id)
    row_type = schema.field("row").type
    row = pa.StructArray.from_arrays(
        [pa.nulls(n, f.type) for f in row_type],
        fields=list(row_type),
        mask=pa.array(np.ones(n, bool)),
    )
    head = (
        [_constant(n, OPERATION_DELETE, pa.int32())]
        + [a.cast(t) for a, t in zip((original_write_id, bucket, row_id), _KEY_TYPES)]
        + [_constant(n, write_id, pa.int64())]
    )
    return pa.RecordBatch.from_arrays(head + [row], schema=schema)


def write_event_table(
    tfs: FileIO,
    path: str,
    columns: list[tuple[str, str]],
    events: pa.Table,
    *,
    compression: str = "zlib",
    stripe_bytes: int = DEFAULT_STRIPE_BYTES,
    stripe_rows: int = DEFAULT_STRIPE_ROWS,
    bloom_filter_columns: Sequence[str] = (),
    bloom_filter_fpp: float = DEFAULT_BLOOM_FILTER_FPP,
    on_batch: Callable[[pa.RecordBatch], Any] | None = None,
) -> WrittenFile | None:
    """Write one event file from an Arrow table of sorted events, column by column.

    Args:
        events: columns ``operation, originalTransaction, bucket, rowId, currentTransaction``
            (any integer types, no NULLs), then the table columns by name (missing ones are
            written as NULL; ``row`` is NULL for delete events), sorted strictly ascending by
            (originalTransaction, bucket, rowId).
        columns: table columns ``[(name, hive_type)]``.
        compression: ``zlib`` (default), ``none``, or ``snappy`` (through pyorc).
        stripe_bytes: ORC stripe size target (``orc.stripe.size``) for the columnar writer.
        stripe_rows: events per stripe when the table falls back to
            :class:`acidflow.format.orc.files.EventFileWriter`.
        bloom_filter_columns, bloom_filter_fpp: ORC bloom filters on these table columns
            (``orc.bloom.filter.columns`` / ``orc.bloom.filter.fpp``).
        on_batch: called with every batch of events the file gets, in the event schema
            (:func:`event_batch`: what :class:`ColumnarEventWriter` hands to the ORC writer;
            for pyorc, the same events as the tuples it writes), before it is written -- e.g.
            to digest the rows written (a compaction's verification).
    Returns:
        :class:`acidflow.format.orc.files.WrittenFile`, or ``None`` when ``events`` is empty (no
        file is left).
    Raises:
        AcidFileError: events out of order or with NULL keys (nothing is left at ``path``).
        HiveRangeError: a timestamp or date outside Hive's range
            (:func:`acidflow.format.orc.timestamps.check_range`).

    With :func:`acidflow.format.orc.files.columnar_writable` columns the file is written by
    :class:`ColumnarEventWriter` (ORC C++, file version 0.12, 256 KiB compression blocks, string
    dictionaries up to Java ORC's 0.8 key ratio);
    otherwise, or when a timestamp before 1970 has a fraction of a second
    (:func:`acidflow.format.orc.timestamps.needs_pyorc`), the rows go through pyorc.
    """
    if events.num_rows == 0:
        return None
    data = [events.column(c) for c, _ in columns if c in events.column_names]
    for c, _ in columns:
        if c in events.column_names:
            timestamps.check_range(events.column(c), c, path)
    # pre-1970 timestamps with a fraction of a second: pyorc (ColumnarEventWriter would move
    # there on its own, after writing and reading back what came before)
    if not columnar_writable(columns, compression) or any(timestamps.needs_pyorc(a) for a in data):
        keys = [events.column(k) for k in KEY_FIELDS]
        if any(k.null_count for k in keys):
            raise AcidFileError(f"{path}: NULL in an event key field")
        if on_batch is not None:
            schema = event_arrow_schema(columns)
            for b in events.to_batches():
                on_batch(event_batch(path, columns, b, schema))
        return write_event_file(
            tfs,
            path,
            columns,
            event_tuples(columns, events),
            compression=compression,
            stripe_rows=stripe_rows,
            bloom_filter_columns=bloom_filter_columns,
            bloom_filter_fpp=bloom_filter_fpp,
        )
    writer = ColumnarEventWriter(
        tfs,
        path,
        columns,
        compression=compression,
        stripe_bytes=stripe_bytes,
        bloom_filter_columns=bloom_filter_columns,
        bloom_filter_fpp=bloom_filter_fpp,
    )
    try:
        for b in events.to_batches():
            batch = event_batch(path, columns, b, writer.schema)
            if on_batch is not None:
                on_batch(batch)
            writer.write(batch)
    except BaseException:
        writer.abort()
        raise
    return writer.close()


def event_tuples(columns: list[tuple[str, str]], events: pa.Table) -> Iterator[tuple]:
    """Event tuples for :class:`acidflow.format.orc.files.EventFileWriter` from an events table
    (see :func:`write_event_table`)."""
    n = events.num_rows
    head = [events.column(k).to_pylist() for k in EVENT_FIELDS[:5]]
    cols = [
        events.column(c).to_pylist() if c in events.column_names else [None] * n for c, _ in columns
    ]
    rows = list(zip(*cols)) if cols else [()] * n
    for i in range(n):
        op = head[0][i]
        yield (
            op,
            head[1][i],
            head[2][i],
            head[3][i],
            head[4][i],
            None if op == OPERATION_DELETE else rows[i],
        )
