"""Change files parsed straight into columns (pure: no Spark, no catalog, no I/O).

:func:`parse_columns` reads the lines of a change file the way
:func:`acidflow.sources.formats.parse_lines` does (the reference: the same changes, positions,
sources, tables, LSN range and errors) but into a :class:`~acidflow.sources.columns.ColumnStream`:
each line is decoded by msgspec into a typed Struct of the format's envelope (the images kept as
raw JSON), then each table's images are decoded in one call into a Struct type of their keys
(:func:`acidflow.sources.columns.decode_images`). No ``dict`` and no ``Change`` is made per
event; ``acidflow.cdc.columnar.column_frame`` turns the columns into the columnar fold's
``EventFrame``.

It takes the common streams only and answers None -- the caller then runs the reference
parser, whose outcome (bad records with their file, line and reason; the
``IncompleteTransactionError`` of a cut file) is therefore never different -- for everything
else: a line that is not JSON or not the format's envelope of a change, a value msgspec refuses
(``NaN``), a field of an unexpected type, an op the reference parser quarantines, a TRUNCATE,
GoldenGate ``_isMissing`` flags or ``txind``, an unclosed Debezium transaction, a Debezium
schema that changes within the file, two image keys equal but for case, a table whose columns
and key the reference would still be learning after 2,000 records (a keyless table: the
tables' learning is replayed with the reference's own record functions until nothing more can
be learnt, :func:`acidflow.sources.columns.learn_tables`). What is taken, per format:

* ``goldengate``: ``table``, ``op_type`` I/U/D, ``op_ts`` (:func:`~acidflow.sources.goldengate.
  gg_timestamp`), ``pos``, ``primary_keys``, ``before``/``after`` objects; the position is
  ``op_ts|pos``, the source ``file:line``.
* ``debezium``: the envelope bare, as ``{"schema", "payload"}`` or as ``{"key", "value"}``
  (a null value: Kafka's tombstone, no change), ops c/r/u/d, ``source.lsn`` / ``file``+``pos``
  / ``ts_ms`` ordering; transaction BEGIN/END records (bare or wrapped) close as the reference
  requires (an unclosed one: None); with a schema, the logical values are decoded by
  :func:`acidflow.sources.debezium.debezium_value`'s rules, column by column.
* ``wal2json``: format-version 2 (``B``/``C``, ``I``/``U``/``D``: ``columns`` and ``identity``
  lists of ``{name, type, value}``) and format-version 1 documents (``columnnames`` /
  ``columntypes`` / ``columnvalues``, ``oldkeys``), positions from the commit LSN.

Kafka's Debezium and GoldenGate JSON values take the same envelope Structs
(:func:`acidflow.sources.fastdebezium.kafka_event`, :func:`kafka_goldengate_event`,
``decode_records(columns=True)``). Avro values (a schema registry's) are decoded record by
record: fastavro, the decoder, makes a ``dict`` per record and pyarrow has no Avro reader.

The parse runs with Python's cyclic garbage collector paused
(:func:`acidflow.sources.columns.collector_paused`): it makes no reference cycle, and the
collector's passes over the many small containers cost as much as the parse (bench/NOTES.md).

Environment: ``ACIDFLOW_CDC_FASTPARSE=0`` turns it off (every file and Kafka range goes the
reference parser).
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any, Callable, Iterable

from acidflow.sources import columns as cols
from acidflow.sources import fastdebezium, fastwal2json
from acidflow.sources.formats import parse_lines
from acidflow.sources.goldengate import gg_timestamp, goldengate_record
from acidflow.sources.lines import TxnTracker, loads, numbered_lines
from acidflow.sources.records import ParsedStream, RecordError, SourceTable

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    msgspec = None  # type: ignore[assignment]

#: ``ACIDFLOW_CDC_FASTPARSE=0`` sends every change file through the reference parser
ENABLED = os.environ.get("ACIDFLOW_CDC_FASTPARSE", "1") not in ("0", "false", "no")
#: the formats parsed into columns
FORMATS = ("goldengate", "debezium", "wal2json")

_NULL = b"null"


def parse_columns(
    fmt: str, lines: Iterable[str], file_name: str, formats: tuple[str, ...] | None = None
) -> cols.ColumnStream | None:
    """The change file's lines as columns (module docstring), or None when the reference
    parser (:func:`acidflow.sources.formats.parse_lines`) must read them.

    Args:
        fmt: ``wal2json``, ``debezium`` or ``goldengate``.
        lines: the file's text lines.
        file_name: as in :attr:`Change.source`.
        formats: the formats taken (default :data:`FORMATS`); others answer None.
    Returns:
        a :class:`~acidflow.sources.columns.ColumnStream` whose ``tables``, positions and
        changes (``changes`` re-parses with the reference parser when asked for) are the
        reference parser's; its :meth:`~acidflow.sources.columns.ColumnStream.by_table`
        columns hold the same values. None: see the module docstring.
    """
    if not ENABLED or not cols.available():
        return None
    numbered = _numbered(lines)
    if not numbered:
        return None
    parser = _PARSERS.get(fmt) if fmt in (FORMATS if formats is None else formats) else None
    if parser is None:
        return None
    try:
        with cols.collector_paused():
            return parser(numbered, file_name, _reference(fmt, numbered, file_name))
    except (msgspec.ValidationError, msgspec.DecodeError, RecordError, ValueError, TypeError):
        return None


_BLANK_LINE = re.compile(r"^\s*$", re.M)


def _numbered(lines: Iterable[str]) -> list[tuple[int, str]]:
    """:func:`acidflow.sources.lines.numbered_lines` as a list; a list of lines without
    ``\r`` and blank lines (a file's ``splitlines``, the common case) is numbered at C speed."""
    if isinstance(lines, list):
        text = "\n".join(lines)
        if "\r" not in text and not _BLANK_LINE.search(text):
            return list(enumerate(lines, start=1))
    return list(numbered_lines(lines))


def _reference(
    fmt: str, numbered: list[tuple[int, str]], file_name: str
) -> Callable[[], ParsedStream]:
    """The reference parse of the same lines (blank lines put back for the line numbers)."""

    def run() -> ParsedStream:
        lines: list[str] = []
        for lineno, raw in numbered:
            lines.extend(repeat("", lineno - 1 - len(lines)))
            lines.append(raw)
        return parse_lines(fmt, lines, file_name)

    return run


# ----------------------------------------------------------------------------- GoldenGate

if msgspec is not None:

    class _GGRecord(msgspec.Struct, gc=False):
        """A GoldenGate record's envelope (images as raw JSON)."""

        table: Any = None  # a str with a dot is taken (a Kafka value may take the topic's)
        op_type: Any = None
        pos: Any = None
        op_ts: Any = None
        primary_keys: Any = None
        before: msgspec.Raw = msgspec.Raw(_NULL)
        after: msgspec.Raw = msgspec.Raw(_NULL)
        txind: Any = cols.ABSENT
        tx_ind: Any = cols.ABSENT

    _GG_DECODER = msgspec.json.Decoder(_GGRecord, float_hook=Decimal)


def _gg_positions(recs: list[Any]) -> list[str]:
    """``op_ts|pos`` per record (:func:`~acidflow.sources.goldengate.gg_timestamp`); canonical
    timestamps checked by one match over all of them."""
    op_ts = list(map(attrgetter("op_ts"), recs))
    pos = list(map(attrgetter("pos"), recs))
    if None in pos:
        raise RecordError("no 'pos'")
    if set(map(type, op_ts)) != {str} or not _GG_ALL_CANONICAL.fullmatch("\n".join(op_ts) + "\n"):
        op_ts = list(map(gg_timestamp, op_ts))
    return list(map("{}|{}".format, op_ts, pos))


_GG_ALL_CANONICAL = re.compile(r"(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}\n)*")


def _parse_goldengate(
    numbered: list[tuple[int, str]], file_name: str, reference: Callable[[], ParsedStream]
) -> cols.ColumnStream | None:
    recs: list[_GGRecord] = list(map(_GG_DECODER.decode, map(itemgetter(1), numbered)))
    if any(r.txind is not cols.ABSENT or r.tx_ind is not cols.ABSENT for r in recs):
        return None  # transaction indicators: the reference parser tracks them

    def learn(i: int, out: ParsedStream) -> None:
        lineno, raw = numbered[i]
        goldengate_record(loads(raw), file_name, lineno, out, TxnTracker(file_name))

    lines = list(map(itemgetter(0), numbered))
    return _gg_stream(recs, file_name, lines, None, learn, reference)


def _gg_stream(
    recs: list[Any],
    file_name: str | list[str],
    lines: list[int],
    kept: list[int] | None,
    learn: Callable[[int, ParsedStream], None],
    reference: Callable[[], ParsedStream],
) -> cols.ColumnStream | None:
    """The :class:`~acidflow.sources.columns.ColumnStream` of GoldenGate records (one change
    each, in stream order): ``kept`` (indexes; None: all) are the stream's changes, every
    record teaches the tables (``learn(i, stream)``: the reference record decoder).

    Raises:
        RecordError: a record without ``pos`` or with an ``op_ts`` the reference refuses;
        TypeError: a field of a type the reference quarantines (the callers then run it).
    """
    ops = list(map(attrgetter("op_type"), recs))
    if not set(ops) <= {"I", "U", "D"}:
        return None
    tables = list(map(attrgetter("table"), recs))
    if not all(isinstance(t, str) and "." in t for t in tables):
        return None
    positions = _gg_positions(recs)
    pks = list(map(attrgetter("primary_keys"), recs))
    if not all(pk is None or isinstance(pk, list) or not pk for pk in pks):
        return None
    afters = list(map(attrgetter("after"), recs))
    befores = list(map(attrgetter("before"), recs))
    table_of = list(map(str.lower, tables))
    out = cols.StreamColumns(ops, positions, file_name, lines, None, kept)
    names: dict[str, set[str]] = {}
    for t, idx in cols.by_table(table_of).items():
        images = cols.table_images(afters, befores, ops, idx)
        if images is None:
            return None
        after, before = images
        seen = set(after.values) | set(before.values)
        if any(k.endswith("_ismissing") for k in seen):
            return None  # _isMissing flags: the reference parser's rules
        names[t] = after.valued() | before.valued()  # what types can be inferred from
        out.add(t, idx, after, before)

    def settled(st: SourceTable, t: str) -> bool:
        return bool(st.primary_key) and st.columns.keys() >= names[t]

    return out.finish(table_of, settled, learn, reference)


# ----------------------------------------------------------------------------- Kafka values


def kafka_goldengate_event(
    value: bytes | None, topic_table: tuple[str | None, str]
) -> fastdebezium.KafkaEvent:
    """One Kafka record's GoldenGate JSON value, read as ``acidflow.sources.kafka._decode``
    reads it: ``txind``/``tx_ind`` ignored (on Kafka a record stands alone), a ``table`` that
    is not a string taken from the topic ``<prefix>.<schema>.<table>`` (``topic_table`` =
    ``(schema, table)``); GoldenGate has no transaction id. A null value carries nothing.

    Raises:
        msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError: not a UTF-8 JSON
            object of the envelope's types (all ValueErrors: the caller decodes the range
            with the reference decoder).
    """
    if value is None:
        return fastdebezium.KafkaEvent(None, None, None, None, False)
    r = _GG_DECODER.decode(value)
    if not isinstance(r.table, str) and topic_table[0] is not None:
        r.table = ".".join(p for p in topic_table if p)  # the reference's words: "a..b" -> "a.b"
    collection = r.table.lower() if isinstance(r.table, str) else None
    return fastdebezium.KafkaEvent(None, collection, r, None, False)


def kafka_goldengate_stream(
    events: list[fastdebezium.KafkaEvent],
    names: list[str],
    offsets: list[int],
    kept: list[bool],
    learn: Callable[[int, ParsedStream], None],
    reference: Callable[[], ParsedStream],
) -> cols.ColumnStream | None:
    """:func:`acidflow.sources.fastdebezium.kafka_stream` of GoldenGate values
    (:func:`kafka_goldengate_event`): the same arguments and answer.

    Raises:
        RecordError, TypeError: as :func:`_gg_stream` (``decode_records`` then decodes the
            range record by record).
    """
    at = [i for i, e in enumerate(events) if e.env is not None]
    if not at:
        return None
    return _gg_stream(
        [events[i].env for i in at],
        [names[i] for i in at],
        [offsets[i] for i in at],
        [j for j, i in enumerate(at) if kept[i]],
        lambda j, out: learn(at[j], out),
        reference,
    )


_PARSERS: dict[
    str,
    Callable[[list[tuple[int, str]], str, Callable[[], ParsedStream]], cols.ColumnStream | None],
] = {
    "goldengate": _parse_goldengate,
    "debezium": fastdebezium.parse_debezium,
    "wal2json": fastwal2json.parse_wal2json,
}
