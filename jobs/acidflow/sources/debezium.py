"""Debezium change records -> canonical changes (pure: no Spark, no catalog, no I/O).

The Debezium JSON envelope (``op`` c/u/d/r, t = truncate, ``before``, ``after``, ``source`` with
``lsn`` or ``file``+``pos``, ``ts_ms``), bare, wrapped as ``{"schema", "payload"}``, or as a
Kafka record ``{"key": ..., "value": ...}`` whose key names the primary key columns. Transaction
metadata records (``{"status": "BEGIN"|"END", "id", ...}``) mark boundaries; without them every
event stands alone. Debezium's logical types (Decimal, Date, Micro/NanoTimestamp ...) are
decoded; without a schema, types are inferred from the JSON values.

Ordering value (the ``position`` string): ``source.lsn`` (20 digits), else
``source.file:source.pos`` (binlog), else ``ts_ms``; the change's index within the line stream
breaks ties inside one batch. :func:`debezium_record` reads one record; the line loop and the
whole-transaction rules are :func:`acidflow.sources.formats.parse_lines`'.
"""

from __future__ import annotations

import base64
import re
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from acidflow.sources.lines import TxnTracker, infer_hive_type
from acidflow.sources.records import Change, ParsedStream, RecordError

_CONNECT_TYPES: dict[str | None, str] = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "float32": "float",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "binary",
}
_EPOCH = datetime(1970, 1, 1)
#: Debezium PostgreSQL's transaction id, ``<txId>:<LSN>`` (:func:`transaction_id`)
_PG_TXN_ID = re.compile(r"^\d+:\d+$")


def _debezium_field_type(f: dict) -> str:
    name = f.get("name") or ""
    params = f.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal":
        p = int(params.get("connect.decimal.precision", 38))
        s = int(params.get("scale", 0))
        return f"decimal({p},{s})" if p <= 38 else "string"
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return "date"
    if name in (
        "io.debezium.time.Timestamp",
        "io.debezium.time.MicroTimestamp",
        "io.debezium.time.NanoTimestamp",
        "io.debezium.time.ZonedTimestamp",
        "org.apache.kafka.connect.data.Timestamp",
    ):
        return "timestamp"
    if name:
        if f.get("type") in ("int8", "int16", "int32", "int64", "float32", "float64", "boolean"):
            return _CONNECT_TYPES[f["type"]]
        return "string"
    return _CONNECT_TYPES.get(f.get("type"), "string")


def debezium_value(f: dict | None, value: Any) -> Any:
    """Decode a Debezium logical value (dates as days, timestamps as epoch units, decimals as
    base64 big-endian unscaled bytes; a VariableScaleDecimal, ``{"scale", "value"}``, as the
    decimal's text: its column is a string, the scale varying per value) into a Python value;
    ``value`` itself for a plain field or without a schema (``f`` None).

    Raises:
        RecordError: a logical value that does not decode.
    """
    if value is None or f is None:
        return value
    name = f.get("name") or ""
    try:
        if name == "org.apache.kafka.connect.data.Decimal" and isinstance(value, str):
            scale = int((f.get("parameters") or {}).get("scale", 0))
            unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
            return Decimal(unscaled).scaleb(-scale)
        if name == "io.debezium.data.VariableScaleDecimal" and isinstance(value, dict):
            unscaled = int.from_bytes(base64.b64decode(value["value"]), "big", signed=True)
            return str(Decimal(unscaled).scaleb(-int(value["scale"])))
        if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
            return date(1970, 1, 1) + timedelta(days=int(value))
        if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
            return _EPOCH + timedelta(milliseconds=int(value))
        if name == "io.debezium.time.MicroTimestamp":
            return _EPOCH + timedelta(microseconds=int(value))
        if name == "io.debezium.time.NanoTimestamp":
            return _EPOCH + timedelta(microseconds=int(value) // 1000)
        if f.get("type") == "bytes" and isinstance(value, str):
            return base64.b64decode(value)
    except (ValueError, TypeError, KeyError) as e:
        raise RecordError(f"bad {name or f.get('type')} value {value!r}: {e}") from e
    return value


def is_transaction_metadata(rec: Any) -> bool:
    """Whether ``rec`` (an unwrapped payload) is Debezium transaction metadata
    (``provide.transaction.metadata``): ``{"status": "BEGIN"|"END", "id": ..., "event_count":
    ..., "data_collections": [{"data_collection", "event_count"}]}``."""
    return (
        isinstance(rec, dict)
        and rec.get("status") in ("BEGIN", "END")
        and "id" in rec
        and "op" not in rec
    )


def unwrap(rec: Any) -> Any:
    """The payload of a JsonConverter record with schemas (``{"schema", "payload"}``), else
    ``rec`` itself."""
    if isinstance(rec, dict) and "payload" in rec and "schema" in rec:
        return rec["payload"]
    return rec


def transaction_id(payload: Any) -> str | None:
    """The source transaction of a change event (its ``transaction.id``) or of a transaction
    metadata record (its ``id``), or None. Debezium's PostgreSQL connector writes
    ``"<txId>:<LSN>"`` with the LSN of the event at hand; the part before the first ``:`` is
    what stays the same through one source transaction, and is returned for such ids (two
    decimal parts); any other id (MySQL's GTID ``<server uuid>:<n>``...) is returned whole."""
    if not isinstance(payload, dict):
        return None
    raw = payload.get("id") if is_transaction_metadata(payload) else None
    if raw is None:
        block = payload.get("transaction")
        raw = block.get("id") if isinstance(block, dict) else None
    return None if raw is None else transaction_id_text(raw)


def transaction_id_text(raw: Any) -> str:
    """A transaction id as :func:`transaction_id` returns it (``raw``: the id as sent, not
    None): PostgreSQL's ``<txId>:<LSN>`` cut to ``<txId>``, any other id whole."""
    text = str(raw)
    return text.split(":", 1)[0] if _PG_TXN_ID.match(text) else text


def _debezium_txn_marker(rec: dict, lineno: int, txns: TxnTracker) -> bool:
    """Debezium transaction metadata (:func:`is_transaction_metadata`), bare or wrapped like
    data events. Returns True (and notes the boundary) when ``rec`` is one."""
    if is_transaction_metadata(rec):
        if rec["status"] == "BEGIN":
            txns.begin(transaction_id(rec), lineno)
        else:
            txns.end(transaction_id(rec))
        return True
    return False


def schema_fields(schema: Any) -> dict[str, dict]:
    """The image columns of an envelope's schema (JsonConverter's ``schema``: the ``after`` and
    ``before`` structs' fields), ``{column (lower case): field}``; empty without a schema."""
    fields: dict[str, dict] = {}
    if isinstance(schema, dict):
        for part in schema.get("fields") or []:
            if part.get("field") in ("after", "before"):
                for f in part.get("fields") or []:
                    fields[str(f.get("field")).lower()] = f
    return fields


def debezium_record(
    rec: Any, file_name: str, lineno: int, out: ParsedStream, txns: TxnTracker
) -> list[Change]:
    """The changes of one Debezium record (line ``lineno`` of ``file_name``): none for a
    transaction metadata record (noted in ``txns``) or a Kafka tombstone, else one
    :class:`Change`; the table's columns (typed from the envelope's schema, else inferred) and
    primary key (the Kafka key's fields) are learnt into ``out``.

    Raises:
        RecordError: not an envelope, unknown op, no ``source.table``, no ordering value, a
            missing image, a logical value that does not decode (the record is quarantined).
    """
    if not isinstance(rec, dict):
        raise RecordError("not a JSON object")
    if _debezium_txn_marker(rec, lineno, txns):
        return []
    key_cols: list[str] = []
    schema = None
    if "value" in rec and ("key" in rec or isinstance(rec.get("value"), dict)):
        key = rec.get("key")
        if isinstance(key, dict):
            key_payload = key.get("payload", key) if "schema" in key else key
            if isinstance(key_payload, dict):
                key_cols = [str(k).lower() for k in key_payload]
        rec = rec.get("value")
        if rec is None:
            return []  # Kafka tombstone after a delete: carries nothing new
        if not isinstance(rec, dict):
            raise RecordError("Kafka record 'value' is not an object")
    if "payload" in rec and "schema" in rec:
        schema, rec = rec.get("schema"), rec.get("payload")
        if not isinstance(rec, dict):
            raise RecordError("'payload' is not an object")
    if _debezium_txn_marker(rec, lineno, txns):
        return []
    op = rec.get("op")
    ops = {"c": "I", "r": "I", "u": "U", "d": "D", "t": "T"}
    if op not in ops:
        raise RecordError(f"unknown or missing Debezium op {op!r} (expected c, r, u, d)")
    src = rec.get("source")
    if not isinstance(src, dict) or not src.get("table"):
        raise RecordError("no source.table")
    ns = src.get("schema") or src.get("db") or "default"
    table = f"{ns}.{src['table']}".lower()
    fields = schema_fields(schema)
    if src.get("lsn") is not None:
        position = f"{int(src['lsn']):020d}"
    elif src.get("pos") is not None:
        position = f"{src.get('file') or ''}:{int(src['pos']):020d}"
    elif rec.get("ts_ms") is not None:
        position = f"{int(rec['ts_ms']):020d}"
    else:
        raise RecordError("no ordering value: source.lsn, source.pos or ts_ms required")

    def image(name: str) -> dict | None:
        img = rec.get(name)
        if img is None:
            return None
        if not isinstance(img, dict):
            raise RecordError(f"'{name}' is not an object")
        return {
            str(k).lower(): debezium_value(fields.get(str(k).lower()), v) for k, v in img.items()
        }

    after, before = image("after"), image("before")
    kind = ops[op]
    txid = transaction_id(rec)
    if txid is not None:
        txns.seen(txid, src.get("lsn") if src.get("lsn") is not None else position)
    if kind == "T":
        out.table(table, typed=bool(fields))
        return [Change(table, "T", position, None, None, frozenset(), f"{file_name}:{lineno}")]
    if kind in ("I", "U") and after is None:
        raise RecordError(f"op {op!r} without 'after'")
    if kind == "D" and before is None:
        raise RecordError(
            "op 'd' without 'before': set REPLICA IDENTITY (or the source's "
            "equivalent) so deletes carry the old key"
        )
    st = out.table(table, typed=bool(fields))
    if fields:
        st.learn([(n, _debezium_field_type(f)) for n, f in fields.items()], key_cols)
    else:
        img = after or before or {}
        st.learn([(n, t) for n, v in img.items() if (t := infer_hive_type(v))], key_cols)
    lsn = f" lsn {src['lsn']}" if src.get("lsn") is not None else ""
    return [Change(table, kind, position, after, before, frozenset(), f"{file_name}:{lineno}{lsn}")]
