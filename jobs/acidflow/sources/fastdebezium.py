"""Debezium records parsed straight into columns (pure: no Spark, no catalog, no I/O): change
files (:func:`parse_debezium`, for :func:`acidflow.sources.fastparse.parse_columns`) and Kafka
record values (:func:`kafka_event`, :func:`kafka_stream`, for
:func:`acidflow.sources.kafka.decode_records`). See :mod:`acidflow.sources.fastparse` for what
is taken and what goes to the reference parser (``debezium_record``).
"""

from __future__ import annotations

from decimal import Decimal
from operator import attrgetter
from typing import Any, Callable

from acidflow.sources import columns as cols
from acidflow.sources.debezium import (
    debezium_record,
    debezium_value,
    schema_fields,
    transaction_id,
    transaction_id_text,
)
from acidflow.sources.lines import TxnTracker, loads
from acidflow.sources.records import ParsedStream, RecordError, SourceTable

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    msgspec = None  # type: ignore[assignment]

_NULL = b"null"

if msgspec is not None:

    class _DbzSource(msgspec.Struct, gc=False):
        """``source`` of a Debezium envelope (the fields the position and table come from)."""

        table: Any = None
        schema: Any = None
        db: Any = None
        lsn: Any = None
        file: Any = None
        pos: Any = None

    class _DbzTxn(msgspec.Struct, gc=False):
        """``transaction`` of a Debezium envelope."""

        id: Any = None

    class _DbzRecord(msgspec.Struct, gc=False):
        """Any level of a Debezium record: the envelope, ``{"schema", "payload"}``,
        ``{"key", "value"}`` or a transaction BEGIN/END record (raw JSON where nested)."""

        op: Any = cols.ABSENT
        source: _DbzSource | None = None
        before: msgspec.Raw = msgspec.Raw(_NULL)
        after: msgspec.Raw = msgspec.Raw(_NULL)
        ts_ms: Any = None
        status: Any = None
        id: Any = cols.ABSENT
        schema: msgspec.Raw = msgspec.Raw()
        payload: msgspec.Raw = msgspec.Raw()
        key: msgspec.Raw = msgspec.Raw()
        value: msgspec.Raw = msgspec.Raw()
        transaction: _DbzTxn | None = None

    _DBZ_DECODER = msgspec.json.Decoder(_DbzRecord, float_hook=Decimal)

_DBZ_OPS = {"c": "I", "r": "I", "u": "U", "d": "D"}
_NO_SCHEMA = msgspec.Raw() if msgspec is not None else None


def _is_marker(r: Any) -> bool:
    return r.status in ("BEGIN", "END") and r.id is not cols.ABSENT and r.op is cols.ABSENT


def _dbz_marker(r: Any, lineno: int, txns: TxnTracker) -> bool:
    """A transaction BEGIN/END record (``is_transaction_metadata``), noted in ``txns``."""
    if r.status not in ("BEGIN", "END") or r.id is cols.ABSENT or r.op is not cols.ABSENT:
        return False
    txid = transaction_id({"status": r.status, "id": r.id})
    if r.status == "BEGIN":
        txns.begin(txid, lineno)
    else:
        txns.end(txid)
    return True


def _object(raw: Any) -> Any:
    """A nested envelope decoded.

    Raises:
        RecordError: not a JSON object (the reference parser quarantines it).
    """
    if memoryview(raw)[:1] != b"{":
        raise RecordError("not an object")
    return _DBZ_DECODER.decode(raw)


def _dbz_envelope(r: Any, lineno: int, txns: TxnTracker) -> tuple[Any, Any, bool] | None:
    """``(envelope, schema raw, has a key)`` of a record, as
    :func:`acidflow.sources.debezium.debezium_record` unwraps it; None for a record without a
    change (a transaction marker, noted in ``txns``; a Kafka tombstone).

    Raises:
        RecordError: a shape the reference parser quarantines.
    """
    has_key = False
    schema = _NO_SCHEMA
    if _dbz_marker(r, lineno, txns):
        return None
    if len(r.value) and (len(r.key) or memoryview(r.value)[:1] == b"{"):
        has_key = len(r.key) > 0 and r.key != _NULL_RAW
        if r.value == _NULL_RAW:
            return None  # Kafka tombstone after a delete
        r = _object(r.value)
    if len(r.payload) and len(r.schema):
        schema = r.schema
        r = _object(r.payload)
    if _dbz_marker(r, lineno, txns):
        return None
    return r, schema, has_key


_NULL_RAW = msgspec.Raw(_NULL) if msgspec is not None else None


def _dbz_position(src: Any, ts_ms: Any) -> str:
    if src.lsn is not None:
        return f"{int(src.lsn):020d}"
    if src.pos is not None:
        return f"{src.file or ''}:{int(src.pos):020d}"
    if ts_ms is not None:
        return f"{int(ts_ms):020d}"
    raise RecordError("no ordering value")


def parse_debezium(
    numbered: list[tuple[int, str]], file_name: str, reference: Callable[[], ParsedStream]
) -> cols.ColumnStream | None:
    """Debezium lines (:func:`acidflow.sources.fastparse.parse_columns`), or None."""
    txns = TxnTracker(file_name)
    at: list[int] = []  # index into numbered of each change
    envs: list[Any] = []
    schemas: list[Any] = []
    keyed: list[bool] = []
    for i, (lineno, raw) in enumerate(numbered):
        got = _dbz_envelope(_DBZ_DECODER.decode(raw), lineno, txns)
        if got is None:
            continue
        env, schema, has_key = got
        if env.op not in _DBZ_OPS or env.source is None or not env.source.table:
            return None  # TRUNCATE, an unknown op, no table: the reference parser's
        at.append(i)
        envs.append(env)
        schemas.append(schema)
        keyed.append(has_key)
    if txns.open or not envs:
        return None  # an unclosed transaction: the reference parser raises

    def learn(i: int, out: ParsedStream) -> None:
        lineno, raw = numbered[at[i]]
        debezium_record(loads(raw), file_name, lineno, out, TxnTracker(file_name))

    lines = [numbered[i][0] for i in at]
    return _stream(envs, schemas, keyed, file_name, lines, None, learn, reference)


def _stream(
    envs: list[Any],
    schemas: list[Any],
    keyed: list[bool],
    file_name: str | list[str],
    lines: list[int],
    kept: list[int] | None,
    learn: Callable[[int, ParsedStream], None],
    reference: Callable[[], ParsedStream],
) -> cols.ColumnStream | None:
    """The :class:`~acidflow.sources.columns.ColumnStream` of Debezium envelopes (one change
    each, in stream order): ``kept`` (indexes; None: all) are the stream's changes, every
    envelope teaches the tables (``learn(i, stream)``: the reference record decoder)."""
    srcs = list(map(attrgetter("source"), envs))
    table_of = [f"{s.schema or s.db or 'default'}.{s.table}".lower() for s in srcs]
    positions = list(map(_dbz_position, srcs, map(attrgetter("ts_ms"), envs)))
    suffixes = [f" lsn {s.lsn}" if s.lsn is not None else "" for s in srcs]
    ops = [_DBZ_OPS[op] for op in map(attrgetter("op"), envs)]
    afters = list(map(attrgetter("after"), envs))
    befores = list(map(attrgetter("before"), envs))
    out = cols.StreamColumns(ops, positions, file_name, lines, suffixes, kept)
    names: dict[str, set[str]] = {}
    any_key: dict[str, bool] = {}
    for t, idx in cols.by_table(table_of).items():
        t_schemas = cols.take(schemas, idx)
        if not all(map(t_schemas[0].__eq__, t_schemas)):
            return None  # the schema changes within the stream: the reference parser
        fields = schema_fields(loads(bytes(t_schemas[0]).decode())) if len(t_schemas[0]) else {}
        images = cols.table_images(afters, befores, ops, idx)
        if images is None:
            return None
        after, before = images
        for img in (after, before):
            for n, col in img.values.items():
                f = fields.get(n)
                if f is not None and (f.get("name") or f.get("type") == "bytes"):
                    img.values[n] = [v if v is cols.ABSENT else debezium_value(f, v) for v in col]
        names[t] = set(fields) if fields else after.valued() | before.valued()
        any_key[t] = any(cols.take(keyed, idx))
        out.add(t, idx, after, before)

    def settled(st: SourceTable, t: str) -> bool:
        return st.columns.keys() >= names[t] and (bool(st.primary_key) or not any_key[t])

    return out.finish(table_of, settled, learn, reference)


# ----------------------------------------------------------------------------- Kafka values


class KafkaEvent:
    """A Kafka record's Debezium (or GoldenGate: ``acidflow.sources.fastparse.
    kafka_goldengate_event``) value, decoded as far as ``decode_records`` needs before it
    knows which records the batch keeps (a slotted record, not a dict).

    Attributes:
        txid: the source transaction (``transaction_id``), None without one.
        collection: the change's table ``schema.table`` (None: no change).
        env, schema, keyed: the envelope, its schema (raw JSON) and whether the record has a
            key; ``env`` None for a record without a change (a tombstone, a BEGIN/END record).
    """

    __slots__ = ("collection", "env", "keyed", "schema", "txid")

    def __init__(
        self, txid: Any, collection: str | None, env: Any, schema: Any, keyed: bool
    ) -> None:
        self.txid, self.collection, self.env = txid, collection, env
        self.schema, self.keyed = schema, keyed


def kafka_event(
    value: bytes | None, keyed: bool, topic_table: tuple[str | None, str]
) -> KafkaEvent:
    """One Kafka record's JSON value (``acidflow.sources.kafka._decode``'s reading of it:
    ``{"schema", "payload"}`` unwrapped, a table the envelope does not name taken from the
    topic, ``topic_table`` = ``(schema, table)``).

    Raises:
        RecordError, msgspec.ValidationError, msgspec.DecodeError, ValueError: a value the
            reference decoder quarantines or reads with rules not kept here (the caller
            decodes the range with it).
    """
    if value is None:
        return KafkaEvent(None, None, None, _NO_SCHEMA, keyed)
    r = _DBZ_DECODER.decode(value)
    schema = _NO_SCHEMA
    if len(r.payload) and len(r.schema):
        schema = r.schema
        r = _object(r.payload)
    if r.status in ("BEGIN", "END") and r.id is not cols.ABSENT and r.op is cols.ABSENT:
        raw = r.id if r.id is not None else (r.transaction.id if r.transaction else None)
        return KafkaEvent(
            None if raw is None else transaction_id_text(raw), None, None, schema, keyed
        )
    if r.op not in _DBZ_OPS:
        raise RecordError("TRUNCATE or an unknown op")
    src = r.source
    if src is None:
        src = r.source = _DbzSource()
    if not src.table:
        src.table = topic_table[1]
        if topic_table[0]:
            src.schema = topic_table[0]
    if src.lsn is None and src.pos is None and r.ts_ms is None:
        raise RecordError("no ordering value")
    txid = r.transaction.id if r.transaction is not None else None
    collection = f"{src.schema or src.db or 'default'}.{src.table}".lower()
    return KafkaEvent(
        None if txid is None else transaction_id_text(txid), collection, r, schema, keyed
    )


def kafka_stream(
    events: list[KafkaEvent],
    names: list[str],
    offsets: list[int],
    kept: list[bool],
    learn: Callable[[int, ParsedStream], None],
    reference: Callable[[], ParsedStream],
) -> cols.ColumnStream | None:
    """The :class:`~acidflow.sources.columns.ColumnStream` of a Kafka range's data records
    (``events``, ``names`` = ``topic/partition``, ``offsets``, in ``decode_records``' order);
    ``kept``: the records the batch keeps. ``learn(i, stream)`` runs the reference decoder on
    record i. None: the reference decoder must read the range."""
    at = [i for i, e in enumerate(events) if e.env is not None]
    envs = [events[i].env for i in at]
    if not envs:
        return None
    kept_changes = [j for j, i in enumerate(at) if kept[i]]
    return _stream(
        envs,
        [events[i].schema for i in at],
        [events[i].keyed for i in at],
        [names[i] for i in at],
        [offsets[i] for i in at],
        kept_changes,
        lambda j, out: learn(at[j], out),
        reference,
    )
