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

import re
from itertools import repeat
from typing import Callable, Iterable

from acidflow.sources import columns as cols
from acidflow.sources import fastdebezium, fastgoldengate, fastwal2json
from acidflow.sources.formats import parse_lines
from acidflow.sources.lines import numbered_lines
from acidflow.sources.records import ParsedStream, RecordError

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    msgspec = None  # type: ignore[assignment]

#: the formats parsed into columns
FORMATS = ("goldengate", "debezium", "wal2json")


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
    if not cols.ENABLED or not cols.available():
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


_PARSERS: dict[
    str,
    Callable[[list[tuple[int, str]], str, Callable[[], ParsedStream]], cols.ColumnStream | None],
] = {
    "goldengate": fastgoldengate.parse_goldengate,
    "debezium": fastdebezium.parse_debezium,
    "wal2json": fastwal2json.parse_wal2json,
}
