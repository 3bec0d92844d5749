"""Timestamps and dates across Hive's whole range (0001-01-01 .. 9999-12-31) in ORC files.

Three rules live here:

* **Range.** Hive 3 stores timestamps from ``0001-01-01 00:00:00`` to
  ``9999-12-31 23:59:59.999999999`` and dates from ``0001-01-01`` to ``9999-12-31``
  (``org.apache.hadoop.hive.common.type.Timestamp`` / ``Date``). Every writer refuses a value
  outside that range (:func:`check_range`, :class:`HiveRangeError`).
* **How ORC stores a timestamp.** An ORC timestamp is two streams: seconds (relative to
  2015-01-01) and nanoseconds ``0..999999999``. ORC's writers (Java
  ``TimestampTreeWriter``, C++ ``TimestampColumnWriter``) store, for a value of floor seconds
  ``S`` and nanoseconds ``N``, the seconds ``S + 1`` when ``S < 0`` and ``N > 999999`` (Java
  divides milliseconds by 1000 rounding toward zero) and ``S`` otherwise; their readers
  (Java ``TimestampTreeReader``, which Hive 3.1.3 runs, and C++ ``TimestampColumnReader``)
  subtract 1 again when the seconds are negative and ``N > 999999``. pyarrow's ORC writer
  instead hands the ORC writer ``(S + 1, N - 10**9)`` for every pre-1970 value with a
  fraction -- negative nanoseconds, which Hive 3.1.3 rejects (``DateTimeException: Invalid
  value for NanoOfSecond``). Such values are written through pyorc, which gets ``(S, N)``
  (:func:`needs_pyorc`). One second cannot be stored at all: for
  ``1969-12-31 23:59:59.001 .. 23:59:59.999999`` the writers store seconds 0, which no reader
  adjusts (Hive itself reads ``1969-12-31 23:59:59.5`` back as ``1970-01-01 00:00:00.5``);
  those values are refused like out-of-range ones.
* **Reading beyond nanoseconds.** pyarrow's ORC reader builds ``timestamp[ns]``, which holds
  only 1677-09-21 .. 2262-04-11, and fails on a file holding anything else.
  :class:`OrcReader` reads with pyarrow and, for a file it fails on, reads the timestamp
  columns through pyorc (seconds and nanoseconds as the C++ reader gives them, to
  ``timestamp[us]``) and every other column through pyarrow.

Sub-microsecond digits (Hive keeps nanoseconds) are dropped from the wall-clock fraction, as
Spark does (:func:`to_micros`).
"""

from __future__ import annotations

import datetime as _dt
import zoneinfo
from typing import Any, BinaryIO, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as paorc
import pyorc
from pyorc.converters import ORCConverter

from acidflow.errors import AcidflowError

_EPOCH = _dt.datetime(1970, 1, 1)
_US = _dt.timedelta(microseconds=1)
#: Hive's first and last timestamp, in microseconds since 1970-01-01 (wall clock)
MIN_TIMESTAMP_US = (_dt.datetime(1, 1, 1) - _EPOCH) // _US
MAX_TIMESTAMP_US = (_dt.datetime(9999, 12, 31, 23, 59, 59, 999999) - _EPOCH) // _US
#: Hive's first and last date, in days since 1970-01-01
MIN_DATE_DAYS = (_dt.date(1, 1, 1) - _EPOCH.date()).days
MAX_DATE_DAYS = (_dt.date(9999, 12, 31) - _EPOCH.date()).days
#: the microsecond values ORC cannot store (see the module doc): 1969-12-31 23:59:59.001000
#: .. 23:59:59.999999
UNSTORABLE_US = (-999_000, -1)
_NS_OVERFLOW = "out of range for nanosecond resolution"
_UTC = zoneinfo.ZoneInfo("UTC")


class HiveRangeError(AcidflowError, ValueError):
    """A timestamp or date value Hive cannot store; the message names the file (or table),
    the column and the value."""


def to_micros(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A timestamp column as ``timestamp[us]`` (zone kept), sub-microsecond digits dropped
    toward the earlier instant (floor, as Spark's ``DateTimeUtils`` does for Hive's
    nanosecond timestamps; pyarrow's cast rounds toward 1970 instead). Other columns are
    returned as they are.

    Args:
        arr: one column.
    Returns:
        The same kind of array.
    """
    if not pa.types.is_timestamp(arr.type) or arr.type.unit == "us":
        return arr
    target = pa.timestamp("us", arr.type.tz)
    if arr.type.unit != "ns":
        return arr.cast(target)  # s / ms: exact
    ns = arr.cast(pa.int64())
    us = pc.divide(ns, 1000)  # rounds toward zero
    below = pc.and_(pc.less(ns, 0), pc.not_equal(ns, pc.multiply(us, 1000)))
    us = pc.subtract(us, below.cast(pa.int64()))
    return us.cast(target)


def _as_ints(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The non-NULL values of a timestamp (as microseconds) or date (as days) column, their
    row numbers, and ``"timestamp"`` / ``"date"``; None for other types."""
    if pa.types.is_timestamp(arr.type):
        kind = "timestamp"
        ints = to_micros(arr).cast(pa.int64()) if arr.type.unit == "ns" else arr.cast(pa.int64())
    elif pa.types.is_date32(arr.type) or pa.types.is_date64(arr.type):
        kind = "date"
        ints = arr.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
    else:
        return None
    if isinstance(ints, pa.ChunkedArray):
        ints = ints.combine_chunks()
    valid = ints.is_valid().to_numpy(zero_copy_only=False)
    values = ints.fill_null(0).to_numpy(zero_copy_only=False)
    if kind == "timestamp" and arr.type.unit in ("s", "ms"):
        values = values * (1_000_000 if arr.type.unit == "s" else 1000)
    rows = np.flatnonzero(valid)
    return values[rows], rows, kind


def _show(value: int, kind: str) -> str:
    """A value as ``yyyy-mm-dd[ hh:mm:ss.ffffff]``, any year (numpy's calendar)."""
    if kind == "timestamp":
        return str(np.datetime64(int(value), "us")).replace("T", " ")
    return str(np.datetime64(int(value), "D"))


def check_range(arr: pa.Array | pa.ChunkedArray, column: str, where: str) -> None:
    """Refuse timestamps and dates Hive cannot store (other columns pass).

    Timestamps must lie in 0001-01-01 00:00:00 .. 9999-12-31 23:59:59.999999 and outside
    1969-12-31 23:59:59.001 .. 23:59:59.999999 (no ORC reader reads those back, see module
    doc); dates in 0001-01-01 .. 9999-12-31 (Hive ``Timestamp`` / ``Date``).

    Args:
        arr: one column (any timestamp unit, date32 or date64).
        column: its name, for the message.
        where: the file or table written, for the message.
    Raises:
        HiveRangeError: the first value out of range, with its row number.
    """
    got = _as_ints(arr)
    if got is None or not len(got[0]):
        return
    values, rows, kind = got
    if kind == "timestamp":
        bad = (values < MIN_TIMESTAMP_US) | (values > MAX_TIMESTAMP_US)
        gap = (values >= UNSTORABLE_US[0]) & (values <= UNSTORABLE_US[1])
        reason = "Hive stores timestamps from 0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999"
        if not bad.any() and gap.any():
            bad, reason = (
                gap,
                (
                    "ORC cannot store 1969-12-31 23:59:59.001 .. 23:59:59.999999: its writers "
                    "store seconds 0 there and every reader, Hive 3.1's included, reads it back "
                    "one second late"
                ),
            )
    else:
        bad = (values < MIN_DATE_DAYS) | (values > MAX_DATE_DAYS)
        reason = "Hive stores dates from 0001-01-01 to 9999-12-31"
    if bad.any():
        i = int(np.argmax(bad))
        raise HiveRangeError(
            f"{where}: column {column!r} row {int(rows[i])} holds {kind} "
            f"{_show(values[i], kind)}; {reason}"
        )


def needs_pyorc(arr: pa.Array | pa.ChunkedArray) -> bool:
    """True when a column holds a timestamp before 1970 with a fraction of a second: pyarrow's
    ORC writer would store it with negative nanoseconds, which Hive cannot read; pyorc stores
    it as ORC's Java writer does (module doc)."""
    if not pa.types.is_timestamp(arr.type):
        return False
    got = _as_ints(arr)
    if got is None:
        return False
    values = got[0]
    return bool(((values < 0) & (values % 1_000_000 != 0)).any())


# ---- reading --------------------------------------------------------------------------------


class _MicrosConverter(ORCConverter):
    """ORC timestamp ``(seconds, nanoseconds)``, as the ORC C++ reader gives them (seconds
    already adjusted, see module doc; negative nanoseconds in files pyarrow wrote), to
    microseconds since 1970 (floor)."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> int:
        return seconds * 1_000_000 + nanoseconds // 1000

    @staticmethod
    def to_orc(obj: Any, timezone: Any) -> tuple[int, int]:  # pragma: no cover - read only
        raise NotImplementedError("read-only converter")


def _has_timestamp(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return True
    return any(_has_timestamp(t.field(i).type) for i in range(t.num_fields))


def _micros_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp made ``timestamp[us]`` (zone kept)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_micros_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_micros_type(t.key_type), _micros_type(t.item_type))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_micros_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_micros_type(t.value_type)))
    return t


def _selection(schema: pa.Schema, columns: Sequence[str] | None) -> dict[str, Any]:
    """The selected part of a file schema as a tree: ``{name: True}`` for a whole field,
    ``{name: {child: ...}}`` for some children of a struct (pyarrow's dotted names)."""
    if columns is None:
        return {f.name: True for f in schema}
    tree: dict[str, Any] = {}
    for name in columns:
        node, parts = tree, name.split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if nxt is True:
                break
            node = node.setdefault(part, {})
        else:
            node[parts[-1]] = True
    return tree


def _plan(
    fields: Sequence[pa.Field], sel: dict[str, Any], prefix: str, arrow: list[str], orc: list[str]
) -> None:
    """Split the selected fields into dotted paths pyarrow reads and paths pyorc reads (the
    timestamp fields, and lists / maps holding timestamps)."""
    for f in fields:
        if f.name not in sel:
            continue
        path, node = prefix + f.name, sel[f.name]
        if pa.types.is_struct(f.type) and _has_timestamp(f.type):
            kids = node if isinstance(node, dict) else {c.name: True for c in f.type}
            _plan(list(f.type), kids, path + ".", arrow, orc)
        elif _has_timestamp(f.type):
            orc.append(path)
        elif isinstance(node, dict):
            _plan(list(f.type), node, path + ".", arrow, orc)
        else:
            arrow.append(path)


def _dig(value: Any, parts: Sequence[int]) -> Any:
    for p in parts:
        if value is None:
            return None
        value = value[p]
    return value


class OrcReader:
    """An ORC file read with pyarrow, timestamps of any year 0001..9999 included.

    Like ``pyarrow.orc.ORCFile`` (``schema``, ``nrows``, ``nstripes``, ``read``,
    ``read_stripe``, columns by name, nested ones as ``"row.<name>"``), but when pyarrow fails
    because a timestamp lies outside ``timestamp[ns]`` the file is read again with its
    timestamp columns through pyorc and its other columns through pyarrow; timestamps then come
    as ``timestamp[us]`` (pyarrow gives ``timestamp[ns]``; callers normalise with
    :func:`to_micros`). A file that failed once goes straight to that second read.

    Args:
        fh: the open file (seekable).
    """

    def __init__(self, fh: BinaryIO):
        self._fh = fh
        self._orc = paorc.ORCFile(fh)
        self.schema: pa.Schema = self._orc.schema
        self.nrows: int = self._orc.nrows
        self.nstripes: int = self._orc.nstripes
        self.metadata = self._orc.metadata
        self.wide = False  # True once pyarrow failed on a timestamp beyond nanoseconds

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """All stripes (see class doc)."""
        if not self.wide:
            try:
                return self._orc.read(columns=columns)
            except pa.ArrowInvalid as exc:
                if _NS_OVERFLOW not in str(exc):
                    raise
                self.wide = True
        return self._read_wide(columns, None)

    def read_stripe(self, n: int, columns: Sequence[str] | None = None) -> pa.RecordBatch:
        """Stripe ``n`` (see class doc)."""
        if not self.wide:
            try:
                return self._orc.read_stripe(n, columns=columns)
            except pa.ArrowInvalid as exc:
                if _NS_OVERFLOW not in str(exc):
                    raise
                self.wide = True
        table = self._read_wide(columns, n)
        return table.combine_chunks().to_batches()[0] if table.num_rows else _empty(table)

    def _read_wide(self, columns: Sequence[str] | None, stripe: int | None) -> pa.Table:
        sel = _selection(self.schema, columns)
        arrow_paths: list[str] = []
        orc_paths: list[str] = []
        _plan(list(self.schema), sel, "", arrow_paths, orc_paths)
        part = None
        if arrow_paths:
            part = (
                self._orc.read(columns=arrow_paths)
                if stripe is None
                else pa.Table.from_batches([self._orc.read_stripe(stripe, columns=arrow_paths)])
            )
        if not orc_paths:  # this selection has no timestamps: pyarrow read all of it
            assert part is not None
            return part
        self._fh.seek(0)
        reader = pyorc.Reader(
            self._fh,
            column_names=orc_paths,
            timezone=_UTC,
            struct_repr=pyorc.StructRepr.TUPLE,  # a third of the time of DICT
            converters={pyorc.TypeKind.TIMESTAMP: _MicrosConverter},
        )
        rows = list(reader.read_stripe(stripe) if stripe is not None else reader)
        # positions in pyorc's tuples: the selected fields only, in file order
        selected: Any = reader.selected_schema
        at: dict[str, list[int]] = {}
        for path in orc_paths:
            node = selected
            prefix: list[str] = []
            idx: list[int] = []
            for name in path.split("."):
                idx.append(list(node.fields).index(name))
                node, prefix = node.fields[name], prefix + [name]
                at.setdefault(".".join(prefix), list(idx))
        arrays, fields = [], []
        for f in self.schema:
            if f.name in sel:
                arrays.append(self._build(f, sel[f.name], [f.name], part, rows, at))
                fields.append(f.with_type(arrays[-1].type))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def _build(
        self,
        f: pa.Field,
        node: Any,
        path: list[str],
        part: pa.Table | None,
        rows: list[Any],
        at: dict[str, list[int]],
    ) -> pa.Array:
        """The array of field ``f`` at ``path``: from pyorc's ``rows`` (tuple positions ``at``
        each dotted path pyorc read, and its parents), from pyarrow's ``part``, or a struct
        assembled from both."""
        dotted = ".".join(path)
        if pa.types.is_struct(f.type) and _has_timestamp(f.type):
            kids = node if isinstance(node, dict) else {c.name: True for c in f.type}
            chosen = [c for c in f.type if c.name in kids]
            children = [
                self._build(c, kids[c.name], path + [c.name], part, rows, at) for c in chosen
            ]
            from_arrow = _arrow_at(part, path)
            valid = (
                from_arrow.is_valid()
                if from_arrow is not None
                else pa.array([_dig(r, at[dotted]) is not None for r in rows], pa.bool_())
            )
            return pa.StructArray.from_arrays(
                children,
                fields=[c.with_type(a.type) for c, a in zip(chosen, children)],
                mask=pc.invert(valid),
            )
        if _has_timestamp(f.type):
            return pa.array([_dig(r, at[dotted]) for r in rows], _micros_type(f.type))
        got = _arrow_at(part, path)
        assert got is not None  # every selected path without timestamps was read by pyarrow
        return got


def _arrow_at(part: pa.Table | None, path: Sequence[str]) -> pa.Array | None:
    """The array at a dotted path of pyarrow's part of a read (None when not read there)."""
    if part is None or path[0] not in part.column_names:
        return None
    arr: Any = part.column(path[0]).combine_chunks()
    for name in path[1:]:
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        if name not in names:
            return None
        arr = arr.field(names.index(name))
    return arr


def _empty(table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([], f.type) for f in table.schema], schema=table.schema
    )
