"""Kafka records -> canonical changes, whole source transactions only (pure: no Spark, no
catalog, no I/O).

A batch of Kafka records (topic, partition, offset, key and value bytes: what
``spark.read.format("kafka")`` returns, :class:`KafkaRecord`) read from an offset range becomes
the same :class:`~acidflow.sources.records.ParsedStream` a change file gives
(:func:`decode_records`). Each record's value is decoded by the format's own record decoder --
Debezium's (:func:`acidflow.sources.debezium.debezium_record`: JsonConverter values with or
without the ``{"schema", "payload"}`` envelope, the key's fields as primary key, op ``r``
(snapshot read) as an insert, ``t`` as a truncate) or GoldenGate's
(:func:`acidflow.sources.goldengate.goldengate_record`: ``op_type`` I/U/D, ordering ``op_ts`` then
``pos``) -- so there is one decoder per envelope. Here only the Kafka side:

* a null value (Debezium's tombstone after a delete) carries nothing and is skipped;
* the table is the envelope's (``source.schema``/``source.table``, GoldenGate's ``table``); an
  envelope that names none takes it from the topic name (``<prefix>.<schema>.<table>`` ->
  ``<schema>.<table>``);
* a record that cannot be decoded (not UTF-8, not JSON, not an envelope) is a
  :class:`~acidflow.sources.records.BadRecord` whose reason names the topic, partition and
  offset (it goes to quarantine with the batch; nothing is dropped);
* Avro keys and values written through a schema registry (Debezium with Apicurio's
  AvroConverter) are turned into the JSON envelope JsonConverter would have written by the
  decoder :func:`decode_records` is given (:mod:`acidflow.sources.avro`), then read as JSON ones
  are; their bad records keep the value as ``base64:<bytes>``;
* :attr:`Change.source <acidflow.sources.records.Change.source>` is ``<topic>/<partition>:<offset>``
  (plus `` lsn <LSN>`` for Debezium), the ``file:line`` of the file path;
* GoldenGate's ``txind`` transaction indicator is a file-level boundary
  (:mod:`acidflow.sources.formats`): on Kafka records stand alone (it is ignored).

Whole source transactions (Debezium with ``provide.transaction.metadata``, its BEGIN/END
records on the transaction topic): a source transaction is *complete* when its END is in the
batch and the batch holds as many of its events as END's ``data_collections`` count for every
collection whose topic is read (a collection ``schema.table`` is read when a data topic is
named ``schema.table`` or ends with ``.schema.table``; without ``data_collections``, END's
``event_count``). Transactions are ordered by their BEGIN on the transaction topic (one
partition, commit order). The batch ends before the first transaction that is not complete:
that transaction and every later one are left out, and the batch's end offsets stop before
their first record in each partition (the transaction topic: before its BEGIN), so the next
batch reads them again, whole. Change events whose transaction the batch's transaction records
do not know wait the same way (their BEGIN has not arrived yet), unless a record of a known
transaction follows them in their partition (then their transaction began before the range
read: they are applied as they are). An END without its BEGIN in the batch is a transaction that
began before the range read and is taken as complete. Records without a transaction (snapshot
reads, tombstones, records that do not decode) stand alone. Without a transaction topic every
offset range is applied as it is.

Offsets are Spark's JSON form ``{"topic": {"partition": offset}}`` (:data:`Offsets`), an end
offset being the next offset to read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from acidflow.sources import columns as cols
from acidflow.sources.avro import AvroDecoder
from acidflow.sources.columns import available, collector_paused
from acidflow.sources.debezium import (
    debezium_record,
    is_transaction_metadata,
    transaction_id,
    unwrap,
)
from acidflow.sources.fastdebezium import KafkaEvent, kafka_event, kafka_stream
from acidflow.sources.fastgoldengate import kafka_goldengate_event, kafka_goldengate_stream
from acidflow.sources.goldengate import goldengate_record
from acidflow.sources.lines import TxnTracker, loads
from acidflow.sources.records import (
    BadRecord,
    Change,
    IncompleteTransactionError,
    ParsedStream,
    RecordError,
)

#: ``{topic: {partition (as a string): offset}}``, Spark's ``startingOffsets`` JSON shape
Offsets = dict[str, dict[str, int]]

KAFKA_FORMATS = ("debezium", "goldengate")


@dataclass(frozen=True)
class KafkaRecord:
    """One Kafka record as Spark's Kafka source returns it.

    Attributes:
        topic, partition, offset: where it is.
        key, value: the raw bytes (``None`` for a null key / value).
        timestamp: the record's timestamp (informational).
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    value: bytes | None = None
    timestamp: Any = None

    @property
    def where(self) -> str:
        """``topic <t> partition <p> offset <o>`` (in bad records' reasons)."""
        return f"topic {self.topic} partition {self.partition} offset {self.offset}"


@dataclass
class KafkaBatch:
    """What :func:`decode_records` makes of an offset range.

    Attributes:
        stream: the changes and bad records to apply (whole source transactions only).
        end_offsets: where the next batch starts (:data:`Offsets`): the range's end, or, in a
            partition holding records of an incomplete source transaction, its first such record.
        carried: records left for the next batch (at or after the end offsets).
        transactions: complete source transactions in the batch.
        waiting: ids of the source transactions left for the next batch, in order.
    """

    stream: ParsedStream
    end_offsets: Offsets
    carried: int = 0
    transactions: int = 0
    waiting: list[str] = field(default_factory=list)


@dataclass
class _Decoded:
    record: KafkaRecord
    changes: list[Change]
    bad: BadRecord | None
    txid: str | None
    collection: str | None


@dataclass(frozen=True)
class _Marker:
    """A BEGIN/END record of the transaction topic, decoded."""

    txid: str | None
    begin: bool
    total: int | None = None  # END: events of the transaction
    counts: dict[str, int] | None = None  # END: events per collection (None: total only)


@dataclass
class _Txn:
    order: int  # offset of its first record on the transaction topic
    begin: int | None = None
    end: int | None = None
    counts: dict[str, int] | None = None  # expected events per collection (None: total only)
    total: int | None = None


def decode_records(
    fmt: str,
    records: Iterable[KafkaRecord],
    *,
    end_offsets: Offsets,
    transaction_topic: str | None = None,
    markers_seen: dict[tuple[int, int], Any] | None = None,
    decoder: AvroDecoder | None = None,
    columns: bool = False,
    topics: Iterable[str] = (),
) -> KafkaBatch:
    """Decode one offset range of Kafka records (module docstring).

    Args:
        fmt: ``debezium`` or ``goldengate`` (:data:`KAFKA_FORMATS`).
        records: the range's records, any order (data topics and the transaction topic).
        end_offsets: the range's end per topic-partition (next offset to read); partitions
            without records keep theirs.
        transaction_topic: Debezium's transaction metadata topic (``<prefix>.transaction``),
            None for none.
        markers_seen: the transaction topic's decoded records by (partition, offset), kept by
            a caller that decodes overlapping ranges (a drain's read-ahead: each batch reads
            the transaction topic past the markers it uses); filled here.
        decoder: how keys and values are decoded: None for JSON (Kafka Connect's
            JsonConverter), an :class:`~acidflow.sources.avro.AvroDecoder` for Avro through a
            schema registry (Debezium only; the transaction topic too).
        columns: decode JSON values straight into columns (Debezium:
            :func:`acidflow.sources.fastdebezium.kafka_stream`, GoldenGate:
            :func:`acidflow.sources.fastgoldengate.kafka_goldengate_stream`: the stream is then a
            :class:`~acidflow.sources.columns.ColumnStream`, equal to the one this function
            gives without it); ranges it cannot take are decoded record by record as without.
        topics: the source's data topics, also those not created yet: a transaction's END
            that counts events of a collection whose topic the source reads waits for them
            even when the topic has no partition yet (Debezium's producer creates a data
            topic on its first record, which may land after the END on the transaction
            topic). Topics of ``records`` and ``end_offsets`` count anyway.
    Returns:
        :class:`KafkaBatch`.
    Raises:
        ValueError: an unknown format, or a transaction topic or an Avro decoder with
            GoldenGate.
        acidflow.sources.avro.SchemaRegistryError: the schema registry cannot be reached.
    """
    if fmt not in KAFKA_FORMATS:
        raise ValueError(f"unknown Kafka change format {fmt!r}; expected {KAFKA_FORMATS}")
    if transaction_topic and fmt != "debezium":
        raise ValueError("a transaction topic is Debezium's: not with format goldengate")
    if decoder is not None and fmt != "debezium":
        raise ValueError("Avro values are read for format debezium only, not goldengate")
    ordered = sorted(records, key=lambda r: (r.topic, r.partition, r.offset))
    if columns and decoder is None:
        with collector_paused():
            return _decode_columns(
                fmt,
                ordered,
                end_offsets,
                transaction_topic,
                markers_seen,
                _events(fmt, ordered, transaction_topic),
                topics=topics,
            )
    return _decode_columns(
        fmt, ordered, end_offsets, transaction_topic, markers_seen, None, decoder, topics
    )


def _decode_columns(
    fmt: str,
    ordered: list[KafkaRecord],
    end_offsets: Offsets,
    transaction_topic: str | None,
    markers_seen: dict[tuple[int, int], Any] | None,
    events: list[KafkaEvent] | None,
    decoder: AvroDecoder | None = None,
    topics: Iterable[str] = (),
) -> KafkaBatch:
    """:func:`decode_records` of the sorted records: ``events`` (the data records' values,
    :func:`_events`) decoded into columns, or None to decode record by record."""
    scratch = ParsedStream()  # tables learnt from every decoded record
    data: list[_Decoded] = []
    markers: list[tuple[KafkaRecord, _Marker]] = []
    bad_markers: list[tuple[KafkaRecord, BadRecord]] = []
    for rec in ordered:
        if rec.topic == transaction_topic:
            marker = None if markers_seen is None else markers_seen.get((rec.partition, rec.offset))
            if marker is None:
                marker = _marker(rec, decoder)
                if markers_seen is not None:
                    markers_seen[(rec.partition, rec.offset)] = marker
            if isinstance(marker, BadRecord):
                bad_markers.append((rec, marker))
            else:
                markers.append((rec, marker))
            continue
        if events is None:
            data.append(_decode(fmt, rec, scratch, decoder))
        else:
            event = events[len(data)]
            data.append(_Decoded(rec, [], None, event.txid, event.collection))
    read_topics = {r.topic for r in ordered if r.topic != transaction_topic} | {
        t for t in [*end_offsets, *topics] if t != transaction_topic
    }
    txns = _transactions(markers)
    excluded = _excluded(txns, data, read_topics) if transaction_topic else set()
    cut = {t: dict(ps) for t, ps in end_offsets.items()}
    for d in data:
        if d.txid is not None and d.txid in excluded:
            _lower(cut, d.record)
    waiting = sorted((t for t in excluded if t in txns), key=lambda t: txns[t].order)
    # each waiting transaction's marker partition, found once (a scan of the markers per
    # transaction was quadratic in the backlog: bench/NOTES.md, "Kafka phase")
    marker_partition: dict[str, int] = {}
    for rec, marker in markers:
        if marker.txid is not None:
            marker_partition.setdefault(marker.txid, rec.partition)
    for txid in waiting:
        first = txns[txid].begin if txns[txid].begin is not None else txns[txid].end
        if first is not None and transaction_topic:
            _lower(cut, KafkaRecord(transaction_topic, marker_partition.get(txid, 0), first))
    if events is not None:
        kept = [d.record.offset < _end(cut, d.record) for d in data]
        stream = None
        if not any(rec.offset < _end(cut, rec) for rec, _ in bad_markers):
            try:
                stream = (kafka_stream if fmt == "debezium" else kafka_goldengate_stream)(
                    events,
                    [f"{d.record.topic}/{d.record.partition}" for d in data],
                    [d.record.offset for d in data],
                    kept,
                    lambda i, into: _learn(fmt, data[i].record, into),
                    lambda: (
                        decode_records(
                            fmt,
                            ordered,
                            end_offsets=end_offsets,
                            transaction_topic=transaction_topic,
                            topics=topics,
                        ).stream
                    ),
                )
            except (RecordError, ValueError, TypeError):
                stream = None
        if stream is None:  # the reference decoder reads the range
            return decode_records(
                fmt,
                ordered,
                end_offsets=end_offsets,
                transaction_topic=transaction_topic,
                markers_seen=markers_seen,
                topics=topics,
            )
        carried = kept.count(False) + sum(rec.offset >= _end(cut, rec) for rec, _ in markers)
        carried += sum(rec.offset >= _end(cut, rec) for rec, _ in bad_markers)
        applied = sum(1 for t in txns if t not in excluded)
        return KafkaBatch(stream, cut, carried, applied, waiting)
    out = ParsedStream(tables=scratch.tables)
    carried = 0
    for d in data:
        if d.record.offset >= _end(cut, d.record):
            carried += 1
            continue
        if d.bad is not None:
            out.bad.append(d.bad)
        for ch in d.changes:
            ch.seq = len(out.changes)
            out.changes.append(ch)
            if out.first_position is None or ch.position < out.first_position:
                out.first_position = ch.position
            if out.last_position is None or ch.position > out.last_position:
                out.last_position = ch.position
    for rec, _ in markers:
        carried += rec.offset >= _end(cut, rec)
    for rec, bad in bad_markers:
        if rec.offset < _end(cut, rec):
            out.bad.append(bad)
        else:
            carried += 1
    applied = sum(1 for t in txns if t not in excluded)
    return KafkaBatch(out, cut, carried, applied, waiting)


def _events(
    fmt: str, ordered: list[KafkaRecord], transaction_topic: str | None
) -> list[KafkaEvent] | None:
    """The data records' JSON values (Debezium: :func:`acidflow.sources.fastdebezium.kafka_event`,
    GoldenGate: :func:`acidflow.sources.fastgoldengate.kafka_goldengate_event`), None when one is not
    taken or the column decoder is off (the range is then decoded record by record)."""
    if not available() or not cols.ENABLED:
        return None
    try:
        if fmt == "goldengate":
            return [kafka_goldengate_event(rec.value, _topic_table(rec.topic)) for rec in ordered]
        return [
            kafka_event(rec.value, rec.key is not None, _topic_table(rec.topic))
            for rec in ordered
            if rec.topic != transaction_topic
        ]
    except (RecordError, ValueError, TypeError):  # msgspec's errors are ValueErrors
        return None


def _learn(fmt: str, rec: KafkaRecord, out: ParsedStream) -> None:
    """What the reference decoder learns from ``rec`` (its tables) into ``out``."""
    _decode(fmt, rec, out)


def _marker(rec: KafkaRecord, decoder: AvroDecoder | None) -> _Marker | BadRecord:
    """A transaction topic record decoded, or the bad record it is."""
    try:
        payload = unwrap(_json(rec) if decoder is None else decoder.value(rec))
        if not is_transaction_metadata(payload):
            raise RecordError("not a Debezium transaction BEGIN/END record")
    except RecordError as e:
        return _bad(rec, str(e), None, decoder)
    txid = transaction_id(payload)
    if payload["status"] == "BEGIN":
        return _Marker(txid, True)
    cols = payload.get("data_collections")
    counts = None
    if isinstance(cols, list):
        counts = {
            str(c.get("data_collection")).lower(): _int(c.get("event_count")) or 0
            for c in cols
            if isinstance(c, dict)
        }
    return _Marker(txid, False, _int(payload.get("event_count")), counts)


def _json(rec: KafkaRecord) -> Any:
    if rec.value is None:
        return None
    try:
        text = rec.value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"value is not UTF-8 text: {e}") from None
    try:
        return loads(text)
    except ValueError as e:
        raise RecordError(f"value is not JSON: {e}") from None


def _key(rec: KafkaRecord) -> Any:
    """The JSON key (Debezium's key struct), or None when absent or not JSON (the key only
    names the primary key columns; the value carries the row)."""
    if rec.key is None:
        return None
    try:
        return loads(rec.key.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _bad(
    rec: KafkaRecord, reason: str, table: str | None, decoder: AvroDecoder | None = None
) -> BadRecord:
    raw = "" if rec.value is None else rec.value.decode("utf-8", errors="replace")
    if decoder is not None:
        raw = decoder.raw(rec)
    return BadRecord(
        f"{rec.topic}/{rec.partition}:{rec.offset}", f"Kafka {rec.where}: {reason}", raw, table
    )


def _topic_table(topic: str) -> tuple[str | None, str]:
    """``(schema, table)`` of a topic named ``[<prefix>.]<schema>.<table>`` (or ``<table>``)."""
    parts = topic.split(".")
    return (parts[-2] if len(parts) >= 2 else None), parts[-1]


def _decode(
    fmt: str, rec: KafkaRecord, out: ParsedStream, decoder: AvroDecoder | None = None
) -> _Decoded:
    """Decode one data record with the format's record decoder (module docstring)."""
    name = f"{rec.topic}/{rec.partition}"
    txid: str | None = None
    collection: str | None = None
    try:
        value = _json(rec) if decoder is None else decoder.value(rec)
        if value is None:  # a tombstone (Debezium, after a delete): nothing to apply
            return _Decoded(rec, [], None, None, None)
        if fmt == "debezium":
            payload = unwrap(value)
            txid = transaction_id(payload)
            collection = _with_topic_table(payload, rec.topic)
            changes = debezium_record(
                {"key": _key(rec) if decoder is None else decoder.key(rec), "value": value},
                name,
                rec.offset,
                out,
                TxnTracker(name),
            )
        else:
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in ("txind", "tx_ind")}
                if not isinstance(value.get("table"), str) and "." in rec.topic:
                    value["table"] = ".".join(p for p in _topic_table(rec.topic) if p)
            changes = goldengate_record(value, name, rec.offset, out, TxnTracker(name))
        if changes:
            collection = changes[0].table
        return _Decoded(rec, changes, None, txid, collection)
    except (RecordError, IncompleteTransactionError) as e:
        return _Decoded(rec, [], _bad(rec, str(e), collection, decoder), txid, collection)


def _with_topic_table(payload: Any, topic: str) -> str | None:
    """Fill ``source.schema``/``source.table`` of a Debezium payload that names no table from
    the topic name; returns the payload's collection ``schema.table`` (lower case)."""
    if not isinstance(payload, dict) or "op" not in payload:
        return None
    src = payload.get("source")
    if src is None:
        src = payload["source"] = {}
    if not isinstance(src, dict):
        return None
    if not src.get("table"):
        schema, table = _topic_table(topic)
        src["table"] = table
        if schema:
            src["schema"] = schema
    ns = src.get("schema") or src.get("db") or "default"
    return f"{ns}.{src['table']}".lower()


def _transactions(markers: list[tuple[KafkaRecord, _Marker]]) -> dict[str, _Txn]:
    """The transactions of the batch's BEGIN/END records, by id, in transaction-topic order."""
    txns: dict[str, _Txn] = {}
    for rec, m in sorted(markers, key=lambda m: (m[0].partition, m[0].offset)):
        if m.txid is None:
            continue
        t = txns.get(m.txid)
        if t is None:
            t = txns[m.txid] = _Txn(rec.offset)
        if m.begin:
            t.begin = rec.offset
        else:
            t.end, t.total, t.counts = rec.offset, m.total, m.counts
    return txns


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def _read(collection: str, topics: set[str]) -> bool:
    """Whether a collection ``schema.table`` is among the topics read."""
    c = collection.lower()
    return any(t.lower() == c or t.lower().endswith("." + c) for t in topics)


def _excluded(txns: dict[str, _Txn], data: list[_Decoded], topics: set[str]) -> set[str]:
    """Ids of the transactions left for the next batch: the first incomplete one (in
    transaction-topic order) and every later one, plus the unknown transactions that wait for
    their BEGIN (module docstring)."""
    seen: dict[str, Counter[str]] = {}
    for d in data:
        if d.txid is not None:
            seen.setdefault(d.txid, Counter())[d.collection or "?"] += 1

    def complete(txid: str, t: _Txn) -> bool:
        if t.end is None:
            return False
        if t.begin is None:  # began before the range read
            return True
        got = seen.get(txid, Counter())
        if t.counts is not None:
            return all(got[c] >= n for c, n in t.counts.items() if _read(c, topics))
        return t.total is None or sum(got.values()) >= t.total

    out: set[str] = set()
    for txid, t in sorted(txns.items(), key=lambda kv: kv[1].order):
        if out or not complete(txid, t):
            out.add(txid)
    # change events of transactions the batch's BEGIN/END records do not know: their BEGIN
    # is yet to come -- unless a known transaction's record follows them in their partition
    last_known: dict[tuple[str, int], int] = {}
    for d in data:
        if d.txid is not None and d.txid in txns:
            k = (d.record.topic, d.record.partition)
            last_known[k] = max(last_known.get(k, -1), d.record.offset)
    for d in data:
        if d.txid is not None and d.txid not in txns:
            k = (d.record.topic, d.record.partition)
            if d.record.offset > last_known.get(k, -1):
                out.add(d.txid)
    return out


def _end(cut: Offsets, rec: KafkaRecord) -> int:
    got = cut.get(rec.topic, {}).get(str(rec.partition))
    return rec.offset + 1 if got is None else got


def _lower(cut: Offsets, rec: KafkaRecord) -> None:
    """End the batch at ``rec`` in its partition (when not already before it)."""
    parts = cut.setdefault(rec.topic, {})
    key = str(rec.partition)
    parts[key] = min(parts.get(key, rec.offset), rec.offset)
