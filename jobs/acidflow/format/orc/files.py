"""ACID event files: write them exactly as Hive 3 does, read what Hive, Trino or we wrote.

An event file is an ORC file whose top-level struct has six fields, in this order and with these
names (Hive ``OrcRecordUpdater.createEventObjectInspector``)::

    operation:int, originalTransaction:bigint, bucket:int, rowId:bigint,
    currentTransaction:bigint, row:struct<table columns in table order>

``row`` is NULL in delete events but always carries the full table struct type. Every file we
write carries the footer user metadata Hive's readers need (docs/hive-acid-format.md §3.2):

* ``hive.acid.key.index`` -- one ``owid,bucket,rowId;`` entry per stripe, the last event of that
  stripe (``OrcRecordUpdater.KeyIndexBuilder``);
* ``hive.acid.stats`` -- ``inserts,updates,deletes`` (ORC ``AcidStats``);
* ``hive.acid.version`` -- ``2`` (``AcidUtils.OrcAcidVersion``).

and every directory gets ``_orc_acid_version`` holding the single byte ``2``. Compression is zlib
(or snappy), never zstd: Hive 3.1 ships ORC 1.5, which cannot read zstd.

Two writers produce the same files. Arrow batches of events (statements' writers, compaction)
go column by column through pyarrow's ORC writer; Hive's footer metadata is added at close
(:mod:`acidflow.format.orc.orcfooter`) with the last key of each stripe it cut
(:mod:`acidflow.format.orc.columnar`). Tables with varchar, char or nested columns, and snappy files,
go through pyorc (:class:`EventFileWriter`): its ``write_intermediate_footer`` flushes a
stripe when the pending rows fill whole write batches, so we write ``stripe_rows`` events (a
multiple of the batch size) per stripe, record each stripe's last key, and check the stripe
count after close.

Reading matches the six columns by position (Hive 3.1's query-based compactor wrote them in lower
case, with no metadata) and returns Arrow tables with the canonical names.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyorc
from pyorc.converters import ORCConverter

from acidflow.errors import AcidflowError
from acidflow.format import types as htypes
from acidflow.format.fileio import FileIO, join
from acidflow.format.hivetypes import (
    ArrayType,
    DecimalType,
    HiveType,
    MapType,
    PrimitiveType,
    StructType,
    UnionType,
)
from acidflow.format.layout import ACID_VERSION_FILE, METADATA_ACID_FILE
from acidflow.format.orc import timestamps

OPERATION_INSERT = 0
OPERATION_UPDATE = 1  # legacy (pre split-update) only; never written
OPERATION_DELETE = 2

EVENT_FIELDS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")
KEY_FIELDS = ("originalTransaction", "bucket", "rowId")
KEY_INDEX_KEY = "hive.acid.key.index"
ACID_STATS_KEY = "hive.acid.stats"
ACID_VERSION_KEY = "hive.acid.version"
ACID_VERSION = 2

WRITE_BATCH_ROWS = 1024
DEFAULT_STRIPE_ROWS = 256 * WRITE_BATCH_ROWS
_COMPRESSION = {
    "zlib": pyorc.CompressionKind.ZLIB,
    "snappy": pyorc.CompressionKind.SNAPPY,
    "none": pyorc.CompressionKind.NONE,
}

_EVENT_ARROW_TYPES = (pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64())
#: ORC column id of the ``row`` struct in an event file (0 = the root struct, 1..5 the event
#: fields); the table columns follow it in preorder
ROW_COLUMN_ID = 6
#: default false-positive probability of ORC bloom filters (``orc.bloom.filter.fpp``)
DEFAULT_BLOOM_FILTER_FPP = 0.05
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_TS_US = pa.timestamp("us")
#: timestamps ORC cannot store (:data:`acidflow.format.orc.timestamps.UNSTORABLE_US`)
_GAP = (_EPOCH + _dt.timedelta(microseconds=timestamps.UNSTORABLE_US[0]), _EPOCH)


class AcidFileError(AcidflowError, ValueError):
    """An event file that breaks the ACID file rules (names the file and the reason)."""


class _UtcTimestampConverter(ORCConverter):
    """Hive timestamps are wall-clock values: naive datetimes are written as UTC wall clock
    (pyorc would otherwise apply the process's local zone to naive values)."""

    @staticmethod
    def from_orc(
        seconds: int,
        nanoseconds: int,  # pragma: no cover - we read with pyarrow
        timezone: Any,
    ) -> _dt.datetime:
        return _EPOCH + _dt.timedelta(seconds=seconds, microseconds=nanoseconds // 1000)

    @staticmethod
    def to_orc(obj: _dt.datetime, timezone: Any) -> tuple[int, int]:
        """Floor seconds and nanoseconds ``0..999999999`` (ORC's C++ writer then stores them
        as Hive's Java writer does, :mod:`acidflow.format.orc.timestamps`).

        Raises:
            HiveRangeError: a value no ORC reader reads back (1969-12-31 23:59:59.001 ..
                23:59:59.999999); :meth:`EventFileWriter.write` names the column first.
        """
        delta = (obj - _EPOCH_UTC) if obj.tzinfo is not None else (obj - _EPOCH)
        seconds = delta.days * 86400 + delta.seconds
        if seconds == -1 and delta.microseconds >= 1000:
            raise timestamps.HiveRangeError(
                f"timestamp {obj}: ORC cannot store 1969-12-31 23:59:59.001 .. 23:59:59.999999"
            )
        return seconds, delta.microseconds * 1000


def event_schema(columns: list[tuple[str, str]]) -> str:
    """ORC type string of the event struct for table columns ``[(name, hive_type), ...]``.

    Example: ``[("id", "int")]`` -> ``struct<operation:int,originalTransaction:bigint,
    bucket:int,rowId:bigint,currentTransaction:bigint,row:struct<id:int>>``.
    """
    return (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        f"currentTransaction:bigint,row:{htypes.orc_struct(columns)}>"
    )


def _orc_type_ids(ht: HiveType) -> int:
    """How many ORC column ids a type takes: 1, plus those of its children (ORC numbers the
    type tree in preorder)."""
    if isinstance(ht, StructType):
        return 1 + sum(_orc_type_ids(t) for _, t in ht.fields)
    if isinstance(ht, ArrayType):
        return 1 + _orc_type_ids(ht.element)
    if isinstance(ht, MapType):
        return 1 + _orc_type_ids(ht.key) + _orc_type_ids(ht.value)
    if isinstance(ht, UnionType):
        return 1 + sum(_orc_type_ids(t) for t in ht.members)
    return 1


def key_bloom_filter_columns(columns: list[tuple[str, str]], key: Sequence[str]) -> list[str]:
    """The primary key columns ``key`` that are table columns (fields of ``row``; partition
    columns are not stored in the files), in key order: the columns acidflow's insert / base
    files carry ORC bloom filters for (Hive ``orc.bloom.filter.columns``)."""
    data = {c.lower() for c, _ in columns}
    return [k for k in key if k.lower() in data]


def event_column_ids(columns: list[tuple[str, str]], names: Sequence[str]) -> list[int]:
    """ORC column ids, in an event file, of the table columns ``names`` (fields of ``row``).

    ORC numbers the file's type tree in preorder: 0 the root struct, 1..5 the event fields,
    6 ``row``, then the table columns, a nested column taking one id for itself and one per
    type nested in it. Example: ``columns = [("id", "int"), ("tags", "array<string>"),
    ("k", "string")]`` -> ``id`` 7, ``tags`` 8 (its element 9), ``k`` 10. These ids are what
    ORC writers take for ``orc.bloom.filter.columns`` on nested schemas.

    Args:
        columns: table columns ``[(name, hive_type)]`` in table order.
        names: column names (case-insensitive), in any order.
    Returns:
        The ids, in the order of ``names``.
    Raises:
        ValueError: a name that is not a table column.
    """
    ids: dict[str, int] = {}
    next_id = ROW_COLUMN_ID + 1
    for name, hive_type in columns:
        ids[name.lower()] = next_id
        next_id += _orc_type_ids(htypes.mapped(hive_type))
    missing = [n for n in names if n.lower() not in ids]
    if missing:
        raise ValueError(
            f"bloom filter columns {missing} are not table columns ({[n for n, _ in columns]})"
        )
    return [ids[n.lower()] for n in names]


@dataclass
class WrittenFile:
    """What one event file holds. ``bytes`` is the file size; ``key_index`` the footer value."""

    path: str
    rows: int
    bytes: int
    stripes: int
    inserts: int
    deletes: int
    key_index: str
    min_key: tuple[int, int, int] = (0, 0, 0)
    max_key: tuple[int, int, int] = (0, 0, 0)

    def to_dict(self) -> dict:
        """JSON-able summary: path, rows, bytes, stripes, inserts, deletes."""
        return {
            "path": self.path,
            "rows": self.rows,
            "bytes": self.bytes,
            "stripes": self.stripes,
            "inserts": self.inserts,
            "deletes": self.deletes,
        }


@dataclass
class _Stripe:
    rows: int = 0
    last_key: tuple[int, int, int] | None = None


class EventFileWriter:
    """Streams sorted events into one ACID event file.

    Events are tuples ``(operation, originalTransaction, bucket, rowId, currentTransaction,
    row)`` with ``row`` a tuple in table-column order or ``None`` (delete events). They must come
    in strictly ascending (originalTransaction, bucket, rowId) order, the order every Hive
    reader's merge assumes (docs/hive-acid-format.md §5); the writer checks it.

    Args:
        tfs: the table filesystem.
        path: file path (parent dirs are created).
        columns: table columns ``[(name, hive_type)]`` (partition columns excluded).
        compression: ``zlib`` (default, Hive's), ``snappy`` or ``none``.
        stripe_rows: events per stripe; rounded up to a multiple of the 1024-row write batch.
        bloom_filter_columns: table columns (fields of ``row``) to write ORC bloom filters for
            (``orc.bloom.filter.columns``; :func:`event_column_ids`).
        bloom_filter_fpp: their false-positive probability (``orc.bloom.filter.fpp``).
    Raises:
        AcidFileError: events out of order, or a stripe count that does not match the key index.
        ValueError: a bloom filter column that is not a table column.
    """

    def __init__(
        self,
        tfs: FileIO,
        path: str,
        columns: list[tuple[str, str]],
        *,
        compression: str = "zlib",
        stripe_rows: int = DEFAULT_STRIPE_ROWS,
        bloom_filter_columns: Sequence[str] = (),
        bloom_filter_fpp: float = DEFAULT_BLOOM_FILTER_FPP,
    ):
        if compression not in _COMPRESSION:
            raise ValueError(
                f"compression must be one of {sorted(_COMPRESSION)} (never zstd: "
                "Hive 3.1's ORC 1.5 cannot read it), got {compression!r}"
            )
        self.tfs, self.path, self.columns = tfs, path, columns
        self.stripe_rows = max(1, -(-stripe_rows // WRITE_BATCH_ROWS)) * WRITE_BATCH_ROWS
        bloom_ids = event_column_ids(columns, bloom_filter_columns)
        self._fh = tfs.open(path, "wb")
        self._writer = pyorc.Writer(
            self._fh,
            event_schema(columns),
            batch_size=WRITE_BATCH_ROWS,
            stripe_size=1 << 40,
            compression=_COMPRESSION[compression],
            bloom_filter_columns=bloom_ids or None,
            bloom_filter_fpp=bloom_filter_fpp,
            converters={pyorc.TypeKind.TIMESTAMP: _UtcTimestampConverter},
        )
        self._timestamp_columns = [
            (i, name) for i, (name, t) in enumerate(columns) if htypes.arrow_type(t) == _TS_US
        ]
        self._stripes: list[_Stripe] = []
        self._cur = _Stripe()
        self._last: tuple[int, int, int] | None = None
        self._first: tuple[int, int, int] | None = None
        self.inserts = self.updates = self.deletes = 0
        self._closed = False

    def write(self, events: Iterable[tuple]) -> None:
        """Append events (see class doc for the tuple shape and order)."""
        buf: list[tuple] = []
        for ev in events:
            key = (ev[1], ev[2], ev[3])
            if self._last is not None and key <= self._last:
                raise AcidFileError(
                    f"{self.path}: event key {key} is not above the previous key {self._last}; "
                    "events must be sorted by (originalTransaction, bucket, rowId) and unique"
                )
            if self._first is None:
                self._first = key
            self._last = key
            if ev[5] is not None:
                self._check_timestamps(ev[5])
            op = ev[0]
            if op == OPERATION_DELETE:
                self.deletes += 1
            elif op == OPERATION_INSERT:
                self.inserts += 1
            else:
                self.updates += 1
            buf.append(ev)
            self._cur.rows += 1
            self._cur.last_key = key
            if self._cur.rows == self.stripe_rows:
                self._writer.writerows(buf)
                buf = []
                self._writer.write_intermediate_footer()
                self._stripes.append(self._cur)
                self._cur = _Stripe()
        if buf:
            self._writer.writerows(buf)

    def _check_timestamps(self, row: tuple) -> None:
        for i, name in self._timestamp_columns:
            v = row[i]
            if v is None:
                continue
            if v.tzinfo is not None:  # written as its UTC wall clock (_UtcTimestampConverter)
                v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            if _GAP[0] <= v < _GAP[1]:
                raise timestamps.HiveRangeError(
                    f"{self.path}: column {name!r} holds timestamp {v}; ORC cannot store "
                    "1969-12-31 23:59:59.001 .. 23:59:59.999999"
                )

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append an Arrow batch of events: the five event fields, then ``row`` (a struct of
        the table columns in table order, NULL in delete events)."""
        head = [batch.column(i).to_pylist() for i in range(5)]
        row = batch.column(5)
        for i in range(row.type.num_fields):
            timestamps.check_range(row.field(i), row.type.field(i).name, self.path)
        fields = [row.field(i).to_pylist() for i in range(row.type.num_fields)]
        rows = list(zip(*fields)) if fields else [()] * batch.num_rows
        valid = row.is_valid().to_pylist()
        self.write(zip(*head, (r if v else None for r, v in zip(rows, valid))))

    @property
    def rows(self) -> int:
        """Events written so far."""
        return self.inserts + self.updates + self.deletes

    def key_index(self) -> str:
        """The ``hive.acid.key.index`` value for the stripes written so far plus the open one."""
        stripes = self._stripes + ([self._cur] if self._cur.rows else [])
        # a stripe with rows has a last key
        return "".join(
            f"{k[0]},{k[1]},{k[2]};" for k in (s.last_key for s in stripes) if k is not None
        )

    def close(self) -> WrittenFile | None:
        """Write the footer metadata and close. An empty file is deleted and ``None`` returned
        (Hive's ``OrcRecordUpdater.close`` removes empty outputs too)."""
        if self._closed:
            raise AcidFileError(f"{self.path}: already closed")
        self._closed = True
        key_index = self.key_index()
        nstripes = len(self._stripes) + (1 if self._cur.rows else 0)
        self._writer.set_user_metadata(
            **{
                KEY_INDEX_KEY: key_index.encode(),
                ACID_STATS_KEY: f"{self.inserts},{self.updates},{self.deletes}".encode(),
                ACID_VERSION_KEY: str(ACID_VERSION).encode(),
            }
        )
        self._writer.close()
        self._fh.close()
        if self.rows == 0:
            self.tfs.delete(self.path)
            return None
        with self.tfs.open(self.path, "rb") as fh:
            actual = paorc.ORCFile(fh).nstripes
        if actual != nstripes:
            raise AcidFileError(
                f"{self.path}: wrote {actual} stripes but the key index has {nstripes} entries"
            )
        if self._first is None or self._last is None:  # rows > 0: both keys were seen
            raise AcidFileError(f"{self.path}: events written but no event key recorded")
        return WrittenFile(
            self.path,
            self.rows,
            self.tfs.size(self.path),
            nstripes,
            self.inserts,
            self.deletes,
            key_index,
            self._first,
            self._last,
        )

    def abort(self) -> None:
        """Close without keeping the file."""
        if not self._closed:
            self._closed = True
            try:
                self._writer.close()
            finally:
                self._fh.close()
                self.tfs.delete(self.path)


def write_event_file(
    tfs: FileIO, path: str, columns: list[tuple[str, str]], events: Iterable[tuple], **options: Any
) -> WrittenFile | None:
    """Write one event file from an iterable of sorted events; see :class:`EventFileWriter`.

    Returns:
        :class:`WrittenFile`, or ``None`` when there were no events (no file is left).
    """
    writer = EventFileWriter(tfs, path, columns, **options)
    try:
        writer.write(events)
    except BaseException:
        writer.abort()
        raise
    return writer.close()


#: Hive types whose Arrow type pyarrow's ORC writer stores as exactly that ORC type; tables
#: with other columns (varchar, char, nested types) are written through pyorc
_COLUMNAR_KINDS = (PrimitiveType, DecimalType)
#: default ``orc.stripe.size`` of the columnar writer (bytes, as Hive's ``OrcConf.STRIPE_SIZE``)
DEFAULT_STRIPE_BYTES = 64 * 1024 * 1024
#: codecs :mod:`acidflow.format.orc.orcfooter` can rewrite the footer of, and pyarrow's names of them
COLUMNAR_COMPRESSION = {"zlib": "zlib", "none": "uncompressed"}


def columnar_writable(columns: list[tuple[str, str]], compression: str = "zlib") -> bool:
    """True when pyarrow's ORC writer writes these columns (:mod:`acidflow.format.orc.columnar`):
    every column a primitive Hive type or a decimal (varchar, char and nested types keep
    their exact ORC type only through pyorc) and zlib or no compression."""
    return compression in COLUMNAR_COMPRESSION and all(
        isinstance(htypes.mapped(t), _COLUMNAR_KINDS) for _, t in columns
    )


def event_arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """Arrow schema of an event file: the five event fields and ``row`` as a struct of the
    table columns (:func:`acidflow.format.types.arrow_type`)."""
    return pa.schema(
        [pa.field(n, t) for n, t in zip(EVENT_FIELDS[:5], _EVENT_ARROW_TYPES)]
        + [pa.field("row", pa.struct(htypes.arrow_schema(columns)))]
    )


def keys_ascending(keys: list[np.ndarray], *, strict: bool = True) -> np.ndarray:
    """Boolean per adjacent pair ``i, i+1`` of event keys ``[originalTransaction, bucket,
    rowId]`` (three equal-length integer arrays): True where key ``i+1`` is above key ``i``
    (or equal, when not ``strict``) in Hive's event order (docs/hive-acid-format.md §5)."""
    o, b, r = keys
    last = (r[1:] > r[:-1]) if strict else (r[1:] >= r[:-1])
    return (o[1:] > o[:-1]) | ((o[1:] == o[:-1]) & ((b[1:] > b[:-1]) | ((b[1:] == b[:-1]) & last)))


def write_acid_version_file(tfs: FileIO, directory: str) -> None:
    """Create ``<directory>/_orc_acid_version`` holding the single byte ``2``
    (Hive ``AcidUtils.OrcAcidVersion.writeVersionFile``)."""
    tfs.write_bytes(join(directory, ACID_VERSION_FILE), str(ACID_VERSION).encode())


def write_compacted_marker(tfs: FileIO, base_dir: str) -> None:
    """Create ``<base_dir>/_metadata_acid`` marking a base made by major compaction
    (Hive ``AcidUtils.MetaDataFile.createCompactorMarker``)."""
    tfs.write_bytes(
        join(base_dir, METADATA_ACID_FILE),
        json.dumps({"thisFileVersion": "0", "dataFormat": "compacted"}).encode(),
    )


def is_compacted_base(tfs: FileIO, base_dir: str) -> bool:
    """True when ``base_dir`` holds a ``_metadata_acid`` with ``dataFormat: compacted``
    (Hive ``AcidUtils.MetaDataFile.isCompacted``; Trino ``AcidTables.isCompacted``).

    Raises:
        AcidFileError: the marker exists but is not the JSON Hive writes.
    """
    marker = join(base_dir, METADATA_ACID_FILE)
    if not tfs.exists(marker):
        return False
    try:
        meta = json.loads(tfs.read_bytes(marker))
    except ValueError as exc:
        raise AcidFileError(f"{marker}: not JSON: {exc}") from exc
    if meta.get("thisFileVersion") != "0":
        raise AcidFileError(f"{marker}: unknown thisFileVersion {meta.get('thisFileVersion')!r}")
    return meta.get("dataFormat") == "compacted"


def read_acid_version(tfs: FileIO, directory: str) -> int:
    """First byte of ``_orc_acid_version`` as a number; 0 when the file is missing or empty
    (Hive ``OrcAcidVersion.getAcidVersionFromMetaFile``)."""
    path = join(directory, ACID_VERSION_FILE)
    if not tfs.exists(path):
        return 0
    data = tfs.read_bytes(path)[:1]
    return int(data) if data.isdigit() else 0


def read_user_metadata(tfs: FileIO, path: str) -> dict[str, bytes]:
    """The ORC footer user metadata of a file (``{}`` when it has none)."""
    with tfs.open(path, "rb") as fh:
        meta = paorc.ORCFile(fh).metadata
    return {k.decode(): v for k, v in (meta or {}).items()}


def parse_key_index(value: str | bytes) -> list[tuple[int, int, int]]:
    """Parse ``hive.acid.key.index``: ``"2,536870912,4999;2,536870912,9999;"`` ->
    ``[(2, 536870912, 4999), (2, 536870912, 9999)]`` (Hive ``OrcRecordUpdater.parseKeyIndex``).

    Raises:
        AcidFileError: an entry that is not three integers.
    """
    text = value.decode() if isinstance(value, bytes) else value
    out = []
    for entry in text.split(";"):
        if not entry:
            continue
        parts = entry.split(",")
        if len(parts) != 3:
            raise AcidFileError(f"bad hive.acid.key.index entry {entry!r}")
        out.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return out


def parse_acid_stats(value: str | bytes) -> tuple[int, int, int]:
    """Parse ``hive.acid.stats`` ``"inserts,updates,deletes"`` (ORC ``AcidStats``)."""
    text = value.decode() if isinstance(value, bytes) else value
    parts = text.split(",")
    if len(parts) != 3:
        raise AcidFileError(f"bad hive.acid.stats {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def is_acid_schema(schema: pa.Schema) -> bool:
    """True when an ORC file's schema is the six-field ACID event struct, matched by position
    and type (names may be lower case, as Hive 3.1's query-based compactor wrote them)."""
    if len(schema) != 6 or not pa.types.is_struct(schema.field(5).type):
        return False
    return all(schema.field(i).type == t for i, t in enumerate(_EVENT_ARROW_TYPES))


@dataclass
class FileInfo:
    """Footer facts of an ORC data file: rows, stripes, schema, metadata, ACID or original."""

    path: str
    rows: int
    stripes: int
    schema: pa.Schema
    metadata: dict[str, bytes] = field(default_factory=dict)

    @property
    def is_acid(self) -> bool:
        """The file has the six-field ACID event schema."""
        return is_acid_schema(self.schema)

    @property
    def row_schema(self) -> pa.Schema:
        """Schema of the data columns (the ``row`` struct for ACID files)."""
        if self.is_acid:
            st = self.schema.field(5).type
            return pa.schema([st.field(i) for i in range(st.num_fields)])
        return self.schema


def file_info(tfs: FileIO, path: str) -> FileInfo:
    """Read an ORC file's footer only.

    Raises:
        AcidFileError: the file is not ORC (names the file).
    """
    try:
        with tfs.open(path, "rb") as fh:
            f = paorc.ORCFile(fh)
            meta = {k.decode(): v for k, v in (f.metadata or {}).items()}
            return FileInfo(path, f.nrows, f.nstripes, f.schema, meta)
    except (pa.ArrowInvalid, OSError) as exc:
        raise AcidFileError(f"{path}: not a readable ORC file: {exc}") from exc


def _read_table(tfs: FileIO, path: str, columns: list[str] | None = None) -> pa.Table:
    try:
        with tfs.open(path, "rb") as fh:
            return timestamps.OrcReader(fh).read(columns=columns)
    except (pa.ArrowInvalid, OSError) as exc:
        raise AcidFileError(f"{path}: cannot read ORC data: {exc}") from exc


def normalize_timestamps(arr: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A column read from an ORC file, with its timestamps in the data path's unit.

    pyarrow's ORC reader gives ``timestamp[ns]`` (:class:`acidflow.format.orc.timestamps.OrcReader`
    ``timestamp[us]`` for files beyond nanoseconds); acidflow's data path uses microseconds
    (Spark's unit, and the unit of :func:`acidflow.format.types.arrow_type` for Hive
    ``timestamp``). A timestamp column of any other unit becomes ``timestamp[us]`` (zone kept,
    sub-microsecond digits dropped: :func:`acidflow.format.orc.timestamps.to_micros`); any
    other column is returned as it is.

    Args:
        arr: one column (array or chunked array).
    Returns:
        The same kind of array, ``timestamp[us]`` when it held timestamps.
    """
    return timestamps.to_micros(arr)


def read_events(tfs: FileIO, path: str, *, keys_only: bool = False) -> pa.Table:
    """Read an ACID event file into an Arrow table with canonical column names.

    Returns:
        columns ``operation:int32, originalTransaction:int64, bucket:int32, rowId:int64,
        currentTransaction:int64`` followed (unless ``keys_only``) by the ``row`` struct's fields,
        flattened, named as in the file, timestamps in microseconds.
    Raises:
        AcidFileError: not ORC, or not the six-field event schema.
    """
    info = file_info(tfs, path)
    if not info.is_acid:
        raise AcidFileError(f"{path}: not an ACID event file (schema {info.schema})")
    names = info.schema.names
    wanted = names[:5] if keys_only else names
    table = _read_table(tfs, path, wanted)
    arrays = [table.column(i) for i in range(5)]
    out_names = list(EVENT_FIELDS[:5])
    if not keys_only:
        row = table.column(5)
        st = row.type
        for i in range(st.num_fields):
            child = pa.chunked_array([c.field(i) for c in row.chunks], type=st.field(i).type)
            arrays.append(normalize_timestamps(child))
            out_names.append(st.field(i).name)
    return pa.table(arrays, names=out_names)


def read_original(tfs: FileIO, path: str) -> pa.Table:
    """Read an original (non-ACID schema) ORC file: the data columns as stored.

    Raises:
        AcidFileError: not ORC.
    """
    table = _read_table(tfs, path)
    return pa.table([normalize_timestamps(c) for c in table.columns], names=table.column_names)


def iter_batches(table: pa.Table, max_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``max_rows`` rows."""
    yield from table.to_batches(max_chunksize=max_rows)
