"""GoldenGate JSON records parsed straight into columns (pure): the change files' lines
(:func:`parse_goldengate`, through ``acidflow.sources.fastparse.parse_columns``) and the values
of GoldenGate's Kafka handler (:func:`kafka_goldengate_event`, :func:`kafka_goldengate_stream`,
through ``acidflow.sources.kafka.decode_records(columns=True)``), as the reference record
decoder :func:`acidflow.sources.goldengate.goldengate_record` reads them (module docstring of
:mod:`acidflow.sources.fastparse`: what is taken; anything else answers None and the
reference decodes it).
"""

from __future__ import annotations

import re
from decimal import Decimal
from operator import attrgetter, itemgetter
from typing import Any, Callable

from acidflow.sources import columns as cols
from acidflow.sources.fastdebezium import KafkaEvent
from acidflow.sources.goldengate import gg_timestamp, goldengate_record
from acidflow.sources.lines import TxnTracker, loads
from acidflow.sources.records import ParsedStream, RecordError, SourceTable

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    msgspec = None  # type: ignore[assignment]

_NULL = b"null"

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


def parse_goldengate(
    numbered: list[tuple[int, str]], file_name: str, reference: Callable[[], ParsedStream]
) -> cols.ColumnStream | None:
    """A GoldenGate change file's numbered lines as columns, or None (the reference parser
    reads them); ``reference`` runs that parser (``ColumnStream.changes`` when asked).

    Raises:
        msgspec.ValidationError, msgspec.DecodeError, RecordError, ValueError, TypeError: a
            line the reference parser must read (``parse_columns`` then answers None).
    """
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


def kafka_goldengate_event(value: bytes | None, topic_table: tuple[str | None, str]) -> KafkaEvent:
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
        return KafkaEvent(None, None, None, None, False)
    r = _GG_DECODER.decode(value)
    if not isinstance(r.table, str) and topic_table[0] is not None:
        r.table = ".".join(p for p in topic_table if p)  # the reference's words: "a..b" -> "a.b"
    collection = r.table.lower() if isinstance(r.table, str) else None
    return KafkaEvent(None, collection, r, None, False)


def kafka_goldengate_stream(
    events: list[KafkaEvent],
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
