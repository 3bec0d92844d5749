"""Change-record formats -> one canonical change record (pure: no Spark, no catalog, no I/O).

Three formats are read, one JSON document per line:

* ``wal2json`` -- format-version 2 as a PostgreSQL logical replication slot emits it
  (``pg_logical_slot_get_changes(..., 'format-version', '2', 'include-lsn', '1', ...)``):
  one object per action, ``B``/``C`` bracketing each transaction, ``I``/``U``/``D`` with
  ``schema``, ``table``, ``columns`` (``name``, ``type``, ``value``), ``identity`` (the old
  replica-identity columns of U/D) and ``pk`` (``name``, ``type``); ``T`` truncates, ``M``
  (logical message) is ignored. Format-version 1 (one document per transaction:
  ``{"xid", "nextlsn", "change": [{"kind", "schema", "table", "columnnames",
  "columntypes", "columnvalues", "oldkeys", "pk"}]}``) is read too, ordered by ``nextlsn``.
* ``debezium`` -- the Debezium JSON envelope (``op`` c/u/d/r, t = truncate, ``before``, ``after``, ``source``
  with ``lsn`` or ``file``+``pos``, ``ts_ms``), bare, wrapped as ``{"schema", "payload"}``, or as
  a Kafka record ``{"key": ..., "value": ...}`` whose key names the primary key columns.
  Transaction metadata records (``{"status": "BEGIN"|"END", "id", ...}``) mark boundaries.
* ``goldengate`` -- Oracle GoldenGate JSON: ``table`` (``SCHEMA.TABLE``), ``op_type`` I/U/D,
  ``op_ts``, ``current_ts``, ``pos`` (sortable position string), ``primary_keys``, ``before`` /
  ``after`` images, and optional ``<col>_isMissing`` flags in the images; optional ``txind``
  (B/M/E/W) with ``xid``/``txid``/``csn`` marks transaction boundaries.

Whole source transactions only: a file that ends inside a transaction -- wal2json v2 ``B``
without its ``C``, a cut last v1 document, a Debezium ``BEGIN`` without its ``END``, a
GoldenGate ``txind`` B/M without E -- raises :class:`IncompleteTransactionError` naming the
file, the transaction id and the LSN / position; none of the file is applied. The same holds,
in every format and with or without boundary records, for a last (non-blank) line that is not
JSON: a record cut by an interrupted pull or copy, never quarantined as a bad record (which
would drop the change and commit the rest); only the other lines' JSON errors are bad records. None of these
formats defines a continuation of a transaction into the next file, and ``acidflow cdc pull``
lands whole transactions only, so this is always a cut file (interrupted pull or copy).
Without boundary records (Debezium without transaction metadata, GoldenGate without
``txind``, wal2json without ``include-transaction``) every event stands alone: there is no end
marker to wait for.

Every change becomes a :class:`Change`: source table, op I/U/D, the ordering value
(``position``, a fixed-width string whose lexical order is the source's commit order), the
before and after images with lower-cased column names, the set of columns the source did not
send (``missing``: unchanged TOAST values in wal2json, ``_isMissing`` in GoldenGate) and where it
came from (``source``: file and line, plus the LSN when there is one). Records that cannot be
understood become :class:`BadRecord` with a reason; nothing is dropped silently.

Ordering values (the ``position`` string):

* wal2json: ``<commit LSN as 16 hex digits>.<index of the change in its transaction, 8 digits>``
  -- logical decoding emits transactions in commit order, and within a transaction changes are
  in statement order, so this is the order PostgreSQL applied them.
* Debezium: ``source.lsn`` (20 digits), else ``source.file:source.pos`` (binlog), else
  ``ts_ms``; the change's index within the line stream breaks ties inside one batch.
* GoldenGate: ``op_ts`` normalised to ``YYYY-MM-DD HH:MM:SS.ffffff`` then ``|`` then ``pos``
  (the issue's "op_ts then pos").
"""
from __future__ import annotations

import base64
import json
import re
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Callable, Iterable, Iterator

from acidflow.sources.postgres.lsn import parse_lsn
from acidflow.sources.records import (
    BadRecord,
    Change,
    IncompleteTransactionError,
    ParsedStream,
    RecordError,
)

FORMATS = ("wal2json", "debezium", "goldengate")


def parse_lines(fmt: str, lines: Iterable[str], file_name: str) -> ParsedStream:
    """Parse the lines of one change file in the given format.

    Args:
        fmt: one of :data:`FORMATS`.
        lines: text lines (blank lines are skipped).
        file_name: used in :attr:`Change.source` and :attr:`BadRecord.source`.
    Returns:
        :class:`ParsedStream`.
    Raises:
        IncompleteTransactionError: the lines end inside a source transaction, or the last
            non-blank line is not JSON (a cut record); names the file, line and position.
        ValueError: unknown format.
    """
    if fmt == "wal2json":
        return _parse_wal2json(lines, file_name)
    if fmt == "debezium":
        return _parse_simple(lines, file_name, _debezium_record,
                             "its transaction's END record", ("lsn", "pos"))
    if fmt == "goldengate":
        return _parse_simple(lines, file_name, _goldengate_record,
                             "its transaction's end (txind E)", ("pos",))
    raise ValueError(f"unknown change format {fmt!r}; expected one of {', '.join(FORMATS)}")


try:
    import msgspec

    _DECODER: msgspec.json.Decoder[Any] | None = msgspec.json.Decoder(float_hook=Decimal)
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    _DECODER = None


def _loads(line: str) -> Any:
    """One JSON record; numbers with a fraction stay exact (``Decimal``), ints stay ints.
    msgspec (C, ~4x faster) first; what it refuses (``NaN``, ``Infinity``, which Python's json
    accepts) goes through ``json.loads``, whose error is the one reported."""
    if _DECODER is not None:
        try:
            return _DECODER.decode(line)
        except ValueError:
            pass
    return json.loads(line, parse_float=Decimal)


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for i, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if line.strip():
            yield i, line


# ----------------------------------------------------------------------------- type mapping

_PG_SIMPLE = {
    "smallint": "smallint", "int2": "smallint",
    "integer": "int", "int": "int", "int4": "int", "serial": "int",
    "bigint": "bigint", "int8": "bigint", "bigserial": "bigint",
    "real": "float", "float4": "float",
    "double precision": "double", "float8": "double",
    "boolean": "boolean", "bool": "boolean",
    "date": "date",
    "bytea": "binary",
    "text": "string", "character varying": "string", "varchar": "string",
    "bpchar": "string", "character": "char(1)", "char": "char(1)",
    "numeric": "decimal(38,10)", "decimal": "decimal(38,10)",
}
_PG_PARAM = re.compile(r"^(character varying|varchar|character|char|bpchar|numeric|decimal)"
                       r"\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")


def pg_to_hive(pg_type: str) -> str:
    """Hive type for a PostgreSQL type name as wal2json writes it (``include-typmod``).

    ``integer`` -> int, ``bigint`` -> bigint, ``numeric(p,s)`` -> decimal(p,s) (p <= 38, else
    string), unconstrained ``numeric`` -> decimal(38,10), ``character(n)`` -> char(n)
    (n <= 255), ``character varying(n)`` -> varchar(n), ``timestamp ...`` -> timestamp (with
    time zone: converted to UTC), ``bytea`` -> binary; arrays, json, uuid, intervals, times and
    every other type -> string (their text form).
    """
    t = pg_type.strip().lower().strip('"')
    if t.endswith("[]"):
        return "string"
    if t in _PG_SIMPLE:
        return _PG_SIMPLE[t]
    if t.startswith("timestamp"):
        return "timestamp"
    m = _PG_PARAM.match(t)
    if m:
        kind, n, s = m.group(1), int(m.group(2)), m.group(3)
        if kind in ("numeric", "decimal"):
            return f"decimal({n},{int(s or 0)})" if n <= 38 else "string"
        if kind in ("character", "char", "bpchar"):
            return f"char({n})" if n <= 255 else "string"
        return f"varchar({n})" if n <= 65535 else "string"
    return "string"


def infer_hive_type(value: Any) -> str | None:
    """Hive type inferred from a JSON value (formats without types); ``None`` for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, (float, Decimal)):
        return "double"
    return "string"


# ----------------------------------------------------------------------------- wal2json


def _lsn(text: Any) -> int:
    """:func:`acidflow.sources.postgres.lsn.parse_lsn` for a record's LSN field.

    Raises:
        RecordError: not an LSN (the record goes to quarantine).
    """
    try:
        return parse_lsn(text)
    except ValueError as e:
        raise RecordError(str(e)) from None


def _wal2json_columns(items: Any, what: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    if not isinstance(items, list):
        raise RecordError(f"'{what}' must be a list of {{name, type, value}}")
    values, types = {}, []
    for c in items:
        if not isinstance(c, dict) or "name" not in c:
            raise RecordError(f"'{what}' entry without a name: {c!r}")
        name = str(c["name"]).lower()
        values[name] = c.get("value")
        if "type" in c:
            types.append((name, pg_to_hive(str(c["type"]))))
    return values, types


def _parse_wal2json(lines: Iterable[str], file_name: str) -> ParsedStream:
    """wal2json format-version 2 (one record per action) and format-version 1 (one document
    per transaction, ``{"xid", "nextlsn", "change": [...]}``), told apart per record.

    Transactions must be whole: a file that ends after a ``B`` but before its ``C`` (v2), or
    whose last line is a cut v1 document, or where a ``B`` follows a ``B`` without a ``C``,
    raises :class:`IncompleteTransactionError`; so does a last line that is not JSON at all
    (a cut ``I``/``U``/``D`` record of a stream without ``B``/``C``: its position is the
    record's own ``lsn`` when whole in the cut text, else the last LSN before it). wal2json defines no continuation of a
    transaction into another file, and ``acidflow cdc pull`` lands whole transactions only
    (``acidflow.sources.postgres.pull``), so a trailing open transaction is always a cut file.
    """
    out = ParsedStream()
    pending: list[tuple[int, str, dict]] = []   # (line, raw, record) of the open transaction
    begin_lsn: int | None = None
    open_txn: dict[str, Any] | None = None      # the B seen without its C: line, xid, lsn
    seq = 0
    numbered = list(_numbered(lines))
    last_line = numbered[-1][0] if numbered else 0
    v1_seen = False

    def flush(commit_lsn: int | None, items: list[tuple[int, str, dict]] | None = None) -> None:
        nonlocal seq
        batch = pending if items is None else items
        for idx, (lineno, raw, rec) in enumerate(batch):
            lsn_text = rec.get("lsn")
            try:
                own = _lsn(lsn_text) if lsn_text is not None else None
                order = commit_lsn if commit_lsn is not None else own
                if order is None:
                    raise RecordError("no LSN on the change or its commit: pull with "
                                      "'include-lsn' = '1'")
                ch = _wal2json_change(rec, f"{order:016X}.{idx:08d}", file_name, lineno, out)
            except RecordError as e:
                out.bad.append(BadRecord(_src(file_name, lineno, lsn_text), str(e), raw,
                                         _table_of(rec)))
                continue
            ch.seq = seq
            seq += 1
            out.changes.append(ch)
        batch.clear()

    last_lsn: Any = None                        # the last complete record's LSN text
    for lineno, raw in numbered:
        try:
            rec = _loads(raw)
        except ValueError as e:
            if lineno == last_line and open_txn is not None:
                raise IncompleteTransactionError(
                    file_name, open_txn["xid"], open_txn.get("last") or open_txn["lsn"],
                    open_txn["line"], f"the last line ({lineno}) is cut (not JSON: {e}) and "
                    "the transaction has no COMMIT") from None
            if lineno == last_line and \
                    (v1_seen or _looks_like_v1(raw) or raw.lstrip().startswith('{"action":"B"')):
                # the last line is a cut transaction (a v1 document or a v2 BEGIN)
                raise IncompleteTransactionError(
                    file_name, _grep_field(raw, "xid"),
                    _grep_field(raw, "nextlsn") or _grep_field(raw, "lsn"), lineno,
                    f"the last line is a cut transaction record (not JSON: {e})") from None
            if lineno == last_line:  # a cut I/U/D/T record without transaction records
                raise IncompleteTransactionError(
                    file_name, _complete_field(raw, "xid"),
                    _complete_field(raw, "lsn") or last_lsn, lineno,
                    f"the last line is a cut change record (not JSON: {e})") from None
            out.bad.append(BadRecord(_src(file_name, lineno), f"not JSON: {e}", raw))
            continue
        if isinstance(rec, dict):
            last_lsn = rec.get("nextlsn") or rec.get("lsn") or last_lsn
        if isinstance(rec, dict) and "action" not in rec and isinstance(rec.get("change"), list):
            v1_seen = True
            if open_txn is not None:
                raise IncompleteTransactionError(
                    file_name, open_txn["xid"], open_txn["lsn"], open_txn["line"],
                    f"a format-version 1 transaction follows at line {lineno} before COMMIT")
            _wal2json_v1_doc(rec, raw, lineno, file_name, out, flush)
            continue
        if not isinstance(rec, dict) or "action" not in rec:
            out.bad.append(BadRecord(_src(file_name, lineno), "not a wal2json record (no "
                                     "'action' of format-version 2, no 'change' of "
                                     "format-version 1)", raw))
            continue
        action = rec["action"]
        try:
            if action == "B":
                if open_txn is not None:
                    raise IncompleteTransactionError(
                        file_name, open_txn["xid"], open_txn["lsn"], open_txn["line"],
                        f"a new transaction begins at line {lineno} before its COMMIT")
                begin_lsn = _lsn(rec["lsn"]) if "lsn" in rec else None
                open_txn = {"line": lineno, "xid": rec.get("xid"), "lsn": rec.get("lsn")}
                _widen(out, rec.get("lsn"))
            elif action == "C":
                lsn = rec.get("lsn") or rec.get("nextlsn")
                commit = _lsn(lsn) if lsn is not None else begin_lsn
                _widen(out, rec.get("nextlsn") or rec.get("lsn"))
                flush(commit)
                begin_lsn = None
                open_txn = None
            elif action in ("I", "U", "D"):
                pending.append((lineno, raw, rec))
                _widen(out, rec.get("lsn"))
                if open_txn is not None and rec.get("lsn"):
                    open_txn["last"] = rec.get("lsn")
            elif action == "M":
                out.ignored += 1
            elif action == "T":
                pending.append((lineno, raw, rec))
            else:
                raise RecordError(f"unknown wal2json action {action!r}")
        except RecordError as e:
            out.bad.append(BadRecord(_src(file_name, lineno, rec.get("lsn")), str(e), raw,
                                     _table_of(rec)))
    if open_txn is not None:
        raise IncompleteTransactionError(
            file_name, open_txn["xid"], open_txn.get("last") or open_txn["lsn"],
            open_txn["line"], f"the file ends after BEGIN and {len(pending)} change(s) but "
            "before COMMIT")
    if pending:  # changes without a transaction (include-transaction off): order by own LSN
        flush(None)
    return out


def _looks_like_v1(raw: str) -> bool:
    head = raw.lstrip()[:200]
    return head.startswith('{"xid"') or '"change":[' in head.replace(" ", "")


def _grep_field(raw: str, name: str) -> str | None:
    """The value of ``"name": <value>`` in a cut JSON text (for error messages)."""
    m = re.search(r'"' + re.escape(name) + r'"\s*:\s*"?([^",}\s]+)', raw)
    return m.group(1) if m else None


def _complete_field(raw: str, name: str) -> str | None:
    """The value of ``"name": <value>`` in a cut JSON text when the value itself is whole
    (a closing quote, or a ``,``/``}`` after a bare value), else None: a cut line must not
    report a cut LSN or position."""
    m = re.search(r'"' + re.escape(name) + r'"\s*:\s*(?:"([^"\\]*)"|([^",}\s]+)\s*[,}])', raw)
    if not m:
        return None
    return m.group(1) if m.group(1) is not None else m.group(2)


_V1_ACTIONS = {"insert": "I", "update": "U", "delete": "D", "truncate": "T"}


def _wal2json_v1_doc(doc: dict, raw: str, lineno: int, file_name: str, out: ParsedStream,
                     flush: Callable[[int | None, list[tuple[int, str, dict]]], None]) -> None:
    """One format-version 1 document (a whole transaction): its changes as v2-shaped records,
    ordered by the document's ``nextlsn`` (end of the commit record; v1 has no per-change
    LSN). Changes of a document without ``nextlsn`` go to quarantine."""
    nextlsn = doc.get("nextlsn")
    try:
        commit = _lsn(nextlsn) if nextlsn is not None else None
    except RecordError as e:
        out.bad.append(BadRecord(_src(file_name, lineno), str(e), raw))
        return
    _widen(out, nextlsn)
    pending: list[tuple[int, str, dict]] = []
    for ch in doc["change"]:
        if not isinstance(ch, dict):
            out.bad.append(BadRecord(_src(file_name, lineno, nextlsn),
                                     "format-version 1 change is not an object", raw))
            continue
        kind = ch.get("kind")
        if kind == "message":
            out.ignored += 1
            continue
        if kind not in _V1_ACTIONS:
            out.bad.append(BadRecord(_src(file_name, lineno, nextlsn),
                                     f"unknown wal2json format-version 1 kind {kind!r}",
                                     json.dumps(ch, default=str), _table_of(ch)))
            continue
        rec: dict[str, Any] = {"action": _V1_ACTIONS[kind], "schema": ch.get("schema"),
                               "table": ch.get("table")}
        if nextlsn is not None:
            rec["lsn"] = nextlsn
        names, types_, values = (ch.get("columnnames") or [], ch.get("columntypes") or [],
                                 ch.get("columnvalues") or [])
        if names:
            rec["columns"] = [{"name": n, "type": t, "value": v}
                              for n, t, v in zip(names, types_ or [None] * len(names), values)]
            if not types_:
                for c in rec["columns"]:
                    c.pop("type")
        old = ch.get("oldkeys")
        if isinstance(old, dict):
            kn, kt, kv = (old.get("keynames") or [], old.get("keytypes") or [],
                          old.get("keyvalues") or [])
            rec["identity"] = [{"name": n, "type": t, "value": v}
                               for n, t, v in zip(kn, kt or ["text"] * len(kn), kv)]
        pk = ch.get("pk")
        if isinstance(pk, dict):
            rec["pk"] = [{"name": n, "type": t} for n, t in
                         zip(pk.get("pknames") or [], pk.get("pktypes") or [])]
        pending.append((lineno, json.dumps(ch, default=str), rec))
    flush(commit, pending)


def _widen(out: ParsedStream, lsn_text: Any) -> None:
    if lsn_text is None:
        return
    try:
        v = f"{_lsn(lsn_text):016X}"
    except RecordError:
        return
    if out.first_position is None or v < out.first_position:
        out.first_position = v
    if out.last_position is None or v > out.last_position:
        out.last_position = v


def _table_of(rec: Any) -> str | None:
    if isinstance(rec, dict) and rec.get("table"):
        schema = rec.get("schema") or "public"
        return f"{schema}.{rec['table']}".lower()
    return None


def _src(file_name: str, lineno: int, lsn: Any = None) -> str:
    return f"{file_name}:{lineno}" + (f" lsn {lsn}" if lsn else "")


def _wal2json_change(rec: dict, position: str, file_name: str, lineno: int,
                     out: ParsedStream) -> Change:
    table = _table_of(rec)
    if table is None:
        raise RecordError("change without 'table'")
    action = rec["action"]
    if action == "T":
        out.table(table)
        return Change(table, "T", position, None, None, frozenset(),
                      _src(file_name, lineno, rec.get("lsn")))
    pk = [str(p["name"]).lower() for p in rec.get("pk") or [] if isinstance(p, dict)]
    after = before = None
    types: list[tuple[str, str]] = []
    if action in ("I", "U"):
        after, types = _wal2json_columns(rec.get("columns"), "columns")
    if action in ("U", "D") and rec.get("identity") is not None:
        before, t2 = _wal2json_columns(rec.get("identity"), "identity")
        types += t2
    if action == "D" and before is None:
        raise RecordError("DELETE without 'identity' (old key): set REPLICA IDENTITY on the "
                          "source table")
    pk_types = [(str(p["name"]).lower(), pg_to_hive(str(p["type"])))
                for p in rec.get("pk") or [] if isinstance(p, dict) and "type" in p]
    out.table(table).learn(types + pk_types, pk)
    return Change(table, action, position, after, before, frozenset(),
                  _src(file_name, lineno, rec.get("lsn")))


# ----------------------------------------------------------------------------- Debezium / GG


class _Txns:
    """Transaction boundaries of a Debezium or GoldenGate file, where the stream carries them.

    ``begin``/``end`` mark a transaction's first and last record; ``seen`` notes a change of a
    transaction (its last position, for the error). :meth:`finish` raises
    :class:`IncompleteTransactionError` for a transaction begun in the file but not ended in it.
    """

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.open: dict[Any, dict[str, Any]] = {}   # txid -> {line, position}

    def begin(self, txid: Any, line: int, position: Any = None, *, exclusive: bool = False
              ) -> None:
        if exclusive and self.open:
            other, st = next(iter(self.open.items()))
            raise IncompleteTransactionError(
                self.file_name, other, st["position"], st["line"],
                f"a new transaction begins at line {line} before it ends")
        self.open[txid] = {"line": line, "position": position}

    def seen(self, txid: Any, position: Any) -> None:
        if txid in self.open:
            self.open[txid]["position"] = position

    def end(self, txid: Any) -> None:
        self.open.pop(txid, None)

    def finish(self, what: str) -> None:
        if self.open:
            txid, st = min(self.open.items(), key=lambda kv: kv[1]["line"])
            raise IncompleteTransactionError(self.file_name, txid, st["position"], st["line"],
                                             f"the file ends before {what}")


def _parse_simple(lines: Iterable[str], file_name: str,
                  fn: Callable[[Any, str, int, ParsedStream, _Txns], list[Change]],
                  end_marker: str, position_fields: tuple[str, ...]) -> ParsedStream:
    """Debezium / GoldenGate lines: ``fn`` turns one record into changes; a line that is not
    JSON is a bad record, except the last (non-blank) line, which is a cut record
    (:class:`IncompleteTransactionError` naming the file, the line, the open transaction if
    any, and the position: ``position_fields`` found whole in the cut text, else the last
    position before it)."""
    out = ParsedStream()
    txns = _Txns(file_name)
    numbered = list(_numbered(lines))
    last_line = numbered[-1][0] if numbered else 0
    last_position: Any = None
    for lineno, raw in numbered:
        try:
            rec = _loads(raw)
        except ValueError as e:
            if lineno == last_line:
                found = [v for f in position_fields if (v := _complete_field(raw, f))]
                if txns.open:
                    txid, st = min(txns.open.items(), key=lambda kv: kv[1]["line"])
                    raise IncompleteTransactionError(
                        file_name, txid, found[0] if found else st["position"], st["line"],
                        f"the last line ({lineno}) is cut (not JSON: {e}) and the file ends "
                        f"before {end_marker}") from None
                raise IncompleteTransactionError(
                    file_name, None, found[0] if found else last_position, lineno,
                    f"the last line is a cut change record (not JSON: {e})") from None
            out.bad.append(BadRecord(_src(file_name, lineno), f"not JSON: {e}", raw))
            continue
        try:
            changes = fn(rec, file_name, lineno, out, txns)
        except RecordError as e:
            out.bad.append(BadRecord(_src(file_name, lineno), str(e), raw,
                                     _guess_table(rec)))
            continue
        for ch in changes:
            ch.seq = len(out.changes)
            out.changes.append(ch)
            last_position = ch.position
            if out.first_position is None or ch.position < out.first_position:
                out.first_position = ch.position
            if out.last_position is None or ch.position > out.last_position:
                out.last_position = ch.position
    txns.finish(end_marker)
    return out


def _guess_table(rec: Any) -> str | None:
    try:
        if isinstance(rec, dict) and "table" in rec and isinstance(rec["table"], str):
            return rec["table"].lower()
        payload = rec.get("payload", rec.get("value", rec)) if isinstance(rec, dict) else None
        src = (payload or {}).get("source") or {}
        ns = src.get("schema") or src.get("db")
        return f"{ns}.{src['table']}".lower() if src.get("table") else None
    except (AttributeError, TypeError, KeyError):
        return None


_CONNECT_TYPES: dict[str | None, str] = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint",
                  "float32": "float", "float64": "double", "boolean": "boolean",
                  "string": "string", "bytes": "binary"}
_EPOCH = datetime(1970, 1, 1)


def _debezium_field_type(f: dict) -> str:
    name = f.get("name") or ""
    params = f.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal":
        p = int(params.get("connect.decimal.precision", 38))
        s = int(params.get("scale", 0))
        return f"decimal({p},{s})" if p <= 38 else "string"
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return "date"
    if name in ("io.debezium.time.Timestamp", "io.debezium.time.MicroTimestamp",
                "io.debezium.time.NanoTimestamp", "io.debezium.time.ZonedTimestamp",
                "org.apache.kafka.connect.data.Timestamp"):
        return "timestamp"
    if name:
        if f.get("type") in ("int8", "int16", "int32", "int64", "float32", "float64", "boolean"):
            return _CONNECT_TYPES[f["type"]]
        return "string"
    return _CONNECT_TYPES.get(f.get("type"), "string")


def _debezium_value(f: dict | None, value: Any) -> Any:
    """Decode a Debezium logical value (dates as days, timestamps as epoch units, decimals as
    base64 big-endian unscaled bytes) into a Python value."""
    if value is None or f is None:
        return value
    name = f.get("name") or ""
    try:
        if name == "org.apache.kafka.connect.data.Decimal" and isinstance(value, str):
            scale = int((f.get("parameters") or {}).get("scale", 0))
            unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
            return Decimal(unscaled).scaleb(-scale)
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
    except (ValueError, TypeError) as e:
        raise RecordError(f"bad {name or f.get('type')} value {value!r}: {e}") from e
    return value


def _debezium_txn_marker(rec: dict, lineno: int, txns: _Txns) -> bool:
    """Debezium transaction metadata (``provide.transaction.metadata``): ``{"status":
    "BEGIN"|"END", "id": ..., "event_count": ..., "data_collections": ...}``, bare or wrapped
    like data events. Returns True (and notes the boundary) when ``rec`` is one."""
    if rec.get("status") in ("BEGIN", "END") and "id" in rec and "op" not in rec:
        if rec["status"] == "BEGIN":
            txns.begin(str(rec["id"]), lineno)
        else:
            txns.end(str(rec["id"]))
        return True
    return False


def _debezium_record(rec: Any, file_name: str, lineno: int, out: ParsedStream,
                     txns: _Txns) -> list[Change]:
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
    fields: dict[str, dict] = {}
    if isinstance(schema, dict):
        for part in schema.get("fields") or []:
            if part.get("field") in ("after", "before"):
                for f in part.get("fields") or []:
                    fields[str(f.get("field")).lower()] = f
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
        return {str(k).lower(): _debezium_value(fields.get(str(k).lower()), v)
                for k, v in img.items()}

    after, before = image("after"), image("before")
    kind = ops[op]
    txn_info = rec.get("transaction")
    if isinstance(txn_info, dict) and txn_info.get("id") is not None:
        txns.seen(str(txn_info["id"]), src.get("lsn") if src.get("lsn") is not None
                  else position)
    if kind == "T":
        out.table(table, typed=bool(fields))
        return [Change(table, "T", position, None, None, frozenset(), f"{file_name}:{lineno}")]
    if kind in ("I", "U") and after is None:
        raise RecordError(f"op {op!r} without 'after'")
    if kind == "D" and before is None:
        raise RecordError("op 'd' without 'before': set REPLICA IDENTITY (or the source's "
                          "equivalent) so deletes carry the old key")
    st = out.table(table, typed=bool(fields))
    if fields:
        st.learn([(n, _debezium_field_type(f)) for n, f in fields.items()], key_cols)
    else:
        img = after or before or {}
        st.learn([(n, t) for n, v in img.items() if (t := infer_hive_type(v))], key_cols)
    lsn = f" lsn {src['lsn']}" if src.get("lsn") is not None else ""
    return [Change(table, kind, position, after, before, frozenset(),
                   f"{file_name}:{lineno}{lsn}")]


_GG_CANONICAL = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$")
_GG_TS = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T:](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$")


def gg_timestamp(text: Any) -> str:
    """Normalise a GoldenGate timestamp (``2024-01-02 03:04:05.123456``, ``T`` or ``:`` between
    date and time, 0..9 fraction digits) to ``YYYY-MM-DD HH:MM:SS.ffffff``.

    Raises:
        RecordError: not a timestamp.
    """
    if type(text) is str and len(text) == 26 and text[10] == " " and text[19] == "." and \
            _GG_CANONICAL.match(text):  # already YYYY-MM-DD HH:MM:SS.ffffff
        return text
    m = _GG_TS.match(str(text or "").strip())
    if not m:
        raise RecordError(f"op_ts is not a timestamp: {text!r}")
    frac = (m.group(3) or "")[:6].ljust(6, "0")
    return f"{m.group(1)} {m.group(2)}.{frac}"


def _gg_image(img: Any, name: str) -> tuple[dict | None, set[str]]:
    if img is None:
        return None, set()
    if not isinstance(img, dict):
        raise RecordError(f"'{name}' is not an object")
    values = {(k.lower() if type(k) is str else str(k).lower()): v for k, v in img.items()}
    flags = [k for k in values if k.endswith("_ismissing")]
    if not flags:
        return values, set()
    missing = set()
    for k in flags:
        v = values.pop(k)
        if v is True or str(v).lower() == "true":
            missing.add(k[: -len("_ismissing")])
    for m in missing:
        values.pop(m, None)
    return values, missing


_GG_TXIND = {"B": "B", "M": "M", "E": "E", "W": "W", "0": "B", "1": "M", "2": "E", "3": "W"}


def _gg_transaction(rec: dict, lineno: int, txns: _Txns) -> None:
    """GoldenGate's transaction indicator (the ``txind`` metacolumn: ``B`` begin, ``M`` middle,
    ``E`` end, ``W`` whole transaction in one operation; ``0``..``3`` likewise) with the
    transaction's id in ``xid``/``txid``/``csn`` when the formatter writes one. Records
    without ``txind`` stand alone (GoldenGate's JSON formatter marks no boundaries by
    default)."""
    raw = rec.get("txind", rec.get("tx_ind"))
    if raw is None:
        return
    ind = _GG_TXIND.get(str(raw).strip().upper())
    if ind is None:
        raise RecordError(f"unknown txind {raw!r} (expected B, M, E or W)")
    txid = rec.get("xid", rec.get("txid", rec.get("csn")))
    txid = "?" if txid is None else str(txid)
    pos = rec.get("pos")
    if ind in ("B", "W"):
        txns.begin(txid, lineno, pos, exclusive=True)
    elif not txns.open:
        raise IncompleteTransactionError(
            txns.file_name, txid, pos, lineno,
            f"txind {ind} without the transaction's begin: the file starts inside a "
            "transaction whose first records are not in it")
    else:
        txns.seen(next(iter(txns.open)), pos)
    if ind in ("E", "W"):
        txns.open.clear()


def _goldengate_record(rec: Any, file_name: str, lineno: int, out: ParsedStream,
                       txns: _Txns) -> list[Change]:
    if not isinstance(rec, dict):
        raise RecordError("not a JSON object")
    _gg_transaction(rec, lineno, txns)
    table = rec.get("table")
    if not isinstance(table, str) or "." not in table:
        raise RecordError(f"'table' must be SCHEMA.TABLE, got {table!r}")
    op = rec.get("op_type")
    if op not in ("I", "U", "D"):
        raise RecordError(f"unknown or missing op_type {op!r} (expected I, U, D)")
    if rec.get("pos") is None:
        raise RecordError("no 'pos'")
    position = f"{gg_timestamp(rec.get('op_ts'))}|{rec['pos']}"
    pk = rec.get("primary_keys") or []
    if not isinstance(pk, list):
        raise RecordError("'primary_keys' must be a list of column names")
    after, missing = _gg_image(rec.get("after"), "after")
    before, _ = _gg_image(rec.get("before"), "before")
    if op in ("I", "U") and after is None:
        raise RecordError(f"op_type {op} without 'after'")
    if op == "D" and before is None:
        raise RecordError("op_type D without 'before'")
    table = table.lower()
    st = out.table(table, typed=False)
    img = after or before or {}
    if not st.primary_key or any(n not in st.columns for n in img):  # new columns only
        st.learn([(n, t) for n, v in img.items() if (t := infer_hive_type(v))],
                 [str(k).lower() for k in pk])
    return [Change(table, op, position, after, before, frozenset(missing),
                   f"{file_name}:{lineno}")]
