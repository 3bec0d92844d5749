"""wal2json change records -> canonical changes (pure: no Spark, no catalog, no I/O).

Format-version 2 as a PostgreSQL logical replication slot emits it
(``pg_logical_slot_get_changes(..., 'format-version', '2', 'include-lsn', '1', ...)``): one
object per action, ``B``/``C`` bracketing each transaction, ``I``/``U``/``D`` with ``schema``,
``table``, ``columns`` (``name``, ``type``, ``value``), ``identity`` (the old replica-identity
columns of U/D) and ``pk`` (``name``, ``type``); ``T`` truncates, ``M`` (logical message) is
ignored. Format-version 1 (one document per transaction: ``{"xid", "nextlsn", "change":
[{"kind", "schema", "table", "columnnames", "columntypes", "columnvalues", "oldkeys", "pk"}]}``)
is read too, ordered by ``nextlsn``. PostgreSQL types map to Hive types by :func:`pg_to_hive`.

Ordering value (the ``position`` string): ``<commit LSN as 16 hex digits>.<index of the change
in its transaction, 8 digits>`` -- logical decoding emits transactions in commit order, and
within a transaction changes are in statement order, so this is the order PostgreSQL applied
them. The whole-transaction rules are those of :mod:`acidflow.sources.formats`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable

from acidflow.sources.lines import complete_field, loads, numbered_lines, source_ref
from acidflow.sources.postgres.lsn import parse_lsn
from acidflow.sources.records import (
    BadRecord,
    Change,
    IncompleteTransactionError,
    ParsedStream,
    RecordError,
)

# ----------------------------------------------------------------------------- type mapping

_PG_SIMPLE = {
    "smallint": "smallint",
    "int2": "smallint",
    "integer": "int",
    "int": "int",
    "int4": "int",
    "serial": "int",
    "bigint": "bigint",
    "int8": "bigint",
    "bigserial": "bigint",
    "real": "float",
    "float4": "float",
    "double precision": "double",
    "float8": "double",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "bytea": "binary",
    "text": "string",
    "character varying": "string",
    "varchar": "string",
    "bpchar": "string",
    "character": "char(1)",
    "char": "char(1)",
    "numeric": "decimal(38,10)",
    "decimal": "decimal(38,10)",
}
_PG_PARAM = re.compile(
    r"^(character varying|varchar|character|char|bpchar|numeric|decimal)"
    r"\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$"
)


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


# ----------------------------------------------------------------------------- LSN


def _lsn(text: Any) -> int:
    """:func:`acidflow.sources.postgres.lsn.parse_lsn` for a record's LSN field.

    Raises:
        RecordError: not an LSN (the record goes to quarantine).
    """
    try:
        return parse_lsn(text)
    except ValueError as e:
        raise RecordError(str(e)) from None


# ----------------------------------------------------------------------------- records


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


def parse_wal2json(lines: Iterable[str], file_name: str) -> ParsedStream:
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
    pending: list[tuple[int, str, dict]] = []  # (line, raw, record) of the open transaction
    begin_lsn: int | None = None
    open_txn: dict[str, Any] | None = None  # the B seen without its C: line, xid, lsn
    seq = 0
    numbered = list(numbered_lines(lines))
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
                    raise RecordError(
                        "no LSN on the change or its commit: pull with 'include-lsn' = '1'"
                    )
                ch = _wal2json_change(rec, f"{order:016X}.{idx:08d}", file_name, lineno, out)
            except RecordError as e:
                out.bad.append(
                    BadRecord(source_ref(file_name, lineno, lsn_text), str(e), raw, _table_of(rec))
                )
                continue
            ch.seq = seq
            seq += 1
            out.changes.append(ch)
        batch.clear()

    last_lsn: Any = None  # the last complete record's LSN text
    for lineno, raw in numbered:
        try:
            rec = loads(raw)
        except ValueError as e:
            if lineno == last_line and open_txn is not None:
                raise IncompleteTransactionError(
                    file_name,
                    open_txn["xid"],
                    open_txn.get("last") or open_txn["lsn"],
                    open_txn["line"],
                    f"the last line ({lineno}) is cut (not JSON: {e}) and "
                    "the transaction has no COMMIT",
                ) from None
            if lineno == last_line and (
                v1_seen or _looks_like_v1(raw) or raw.lstrip().startswith('{"action":"B"')
            ):
                # the last line is a cut transaction (a v1 document or a v2 BEGIN)
                raise IncompleteTransactionError(
                    file_name,
                    _grep_field(raw, "xid"),
                    _grep_field(raw, "nextlsn") or _grep_field(raw, "lsn"),
                    lineno,
                    f"the last line is a cut transaction record (not JSON: {e})",
                ) from None
            if lineno == last_line:  # a cut I/U/D/T record without transaction records
                raise IncompleteTransactionError(
                    file_name,
                    complete_field(raw, "xid"),
                    complete_field(raw, "lsn") or last_lsn,
                    lineno,
                    f"the last line is a cut change record (not JSON: {e})",
                ) from None
            out.bad.append(BadRecord(source_ref(file_name, lineno), f"not JSON: {e}", raw))
            continue
        if isinstance(rec, dict):
            last_lsn = rec.get("nextlsn") or rec.get("lsn") or last_lsn
        if isinstance(rec, dict) and "action" not in rec and isinstance(rec.get("change"), list):
            v1_seen = True
            if open_txn is not None:
                raise IncompleteTransactionError(
                    file_name,
                    open_txn["xid"],
                    open_txn["lsn"],
                    open_txn["line"],
                    f"a format-version 1 transaction follows at line {lineno} before COMMIT",
                )
            _wal2json_v1_doc(rec, raw, lineno, file_name, out, flush)
            continue
        if not isinstance(rec, dict) or "action" not in rec:
            out.bad.append(
                BadRecord(
                    source_ref(file_name, lineno),
                    "not a wal2json record (no "
                    "'action' of format-version 2, no 'change' of "
                    "format-version 1)",
                    raw,
                )
            )
            continue
        action = rec["action"]
        try:
            if action == "B":
                if open_txn is not None:
                    raise IncompleteTransactionError(
                        file_name,
                        open_txn["xid"],
                        open_txn["lsn"],
                        open_txn["line"],
                        f"a new transaction begins at line {lineno} before its COMMIT",
                    )
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
            out.bad.append(
                BadRecord(
                    source_ref(file_name, lineno, rec.get("lsn")), str(e), raw, _table_of(rec)
                )
            )
    if open_txn is not None:
        raise IncompleteTransactionError(
            file_name,
            open_txn["xid"],
            open_txn.get("last") or open_txn["lsn"],
            open_txn["line"],
            f"the file ends after BEGIN and {len(pending)} change(s) but before COMMIT",
        )
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


_V1_ACTIONS = {"insert": "I", "update": "U", "delete": "D", "truncate": "T"}


def _wal2json_v1_doc(
    doc: dict,
    raw: str,
    lineno: int,
    file_name: str,
    out: ParsedStream,
    flush: Callable[[int | None, list[tuple[int, str, dict]]], None],
) -> None:
    """One format-version 1 document (a whole transaction): its changes as v2-shaped records,
    ordered by the document's ``nextlsn`` (end of the commit record; v1 has no per-change
    LSN). Changes of a document without ``nextlsn`` go to quarantine."""
    nextlsn = doc.get("nextlsn")
    try:
        commit = _lsn(nextlsn) if nextlsn is not None else None
    except RecordError as e:
        out.bad.append(BadRecord(source_ref(file_name, lineno), str(e), raw))
        return
    _widen(out, nextlsn)
    pending: list[tuple[int, str, dict]] = []
    for ch in doc["change"]:
        if not isinstance(ch, dict):
            out.bad.append(
                BadRecord(
                    source_ref(file_name, lineno, nextlsn),
                    "format-version 1 change is not an object",
                    raw,
                )
            )
            continue
        kind = ch.get("kind")
        if kind == "message":
            out.ignored += 1
            continue
        if kind not in _V1_ACTIONS:
            out.bad.append(
                BadRecord(
                    source_ref(file_name, lineno, nextlsn),
                    f"unknown wal2json format-version 1 kind {kind!r}",
                    json.dumps(ch, default=str),
                    _table_of(ch),
                )
            )
            continue
        rec: dict[str, Any] = {
            "action": _V1_ACTIONS[kind],
            "schema": ch.get("schema"),
            "table": ch.get("table"),
        }
        if nextlsn is not None:
            rec["lsn"] = nextlsn
        names, types_, values = (
            ch.get("columnnames") or [],
            ch.get("columntypes") or [],
            ch.get("columnvalues") or [],
        )
        if names:
            rec["columns"] = [
                {"name": n, "type": t, "value": v}
                for n, t, v in zip(names, types_ or [None] * len(names), values)
            ]
            if not types_:
                for c in rec["columns"]:
                    c.pop("type")
        old = ch.get("oldkeys")
        if isinstance(old, dict):
            kn, kt, kv = (
                old.get("keynames") or [],
                old.get("keytypes") or [],
                old.get("keyvalues") or [],
            )
            rec["identity"] = [
                {"name": n, "type": t, "value": v}
                for n, t, v in zip(kn, kt or ["text"] * len(kn), kv)
            ]
        pk = ch.get("pk")
        if isinstance(pk, dict):
            rec["pk"] = [
                {"name": n, "type": t}
                for n, t in zip(pk.get("pknames") or [], pk.get("pktypes") or [])
            ]
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


def _wal2json_change(
    rec: dict, position: str, file_name: str, lineno: int, out: ParsedStream
) -> Change:
    table = _table_of(rec)
    if table is None:
        raise RecordError("change without 'table'")
    action = rec["action"]
    if action == "T":
        out.table(table)
        return Change(
            table,
            "T",
            position,
            None,
            None,
            frozenset(),
            source_ref(file_name, lineno, rec.get("lsn")),
        )
    pk = [str(p["name"]).lower() for p in rec.get("pk") or [] if isinstance(p, dict)]
    after = before = None
    types: list[tuple[str, str]] = []
    if action in ("I", "U"):
        after, types = _wal2json_columns(rec.get("columns"), "columns")
    if action in ("U", "D") and rec.get("identity") is not None:
        before, t2 = _wal2json_columns(rec.get("identity"), "identity")
        types += t2
    if action == "D" and before is None:
        raise RecordError(
            "DELETE without 'identity' (old key): set REPLICA IDENTITY on the source table"
        )
    pk_types = [
        (str(p["name"]).lower(), pg_to_hive(str(p["type"])))
        for p in rec.get("pk") or []
        if isinstance(p, dict) and "type" in p
    ]
    out.table(table).learn(types + pk_types, pk)
    return Change(
        table,
        action,
        position,
        after,
        before,
        frozenset(),
        source_ref(file_name, lineno, rec.get("lsn")),
    )
