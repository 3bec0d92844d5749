"""Change-record formats -> one canonical change record (pure: no Spark, no catalog, no I/O).

Three formats are read, one JSON document per line; :func:`parse_lines` dispatches to each:

* ``wal2json`` (:mod:`acidflow.sources.wal2json`) -- format-version 2 from a PostgreSQL logical
  replication slot (``B``/``C`` bracket transactions), and format-version 1 (one document per
  transaction); PostgreSQL types mapped to Hive types.
* ``debezium`` (:mod:`acidflow.sources.debezium`) -- the Debezium JSON envelope, bare, as
  ``{"schema", "payload"}`` or as a Kafka record; transaction metadata records
  (``{"status": "BEGIN"|"END", "id", ...}``) mark boundaries.
* ``goldengate`` (:mod:`acidflow.sources.goldengate`) -- Oracle GoldenGate JSON; optional
  ``txind`` (B/M/E/W) with ``xid``/``txid``/``csn`` marks transaction boundaries.

Debezium and GoldenGate read one record at a time; this module runs their line loop
(:func:`_parse_simple`). The pieces every format shares are in :mod:`acidflow.sources.lines`.

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

Ordering values (the ``position`` string) are each format's: see its module.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from acidflow.sources.debezium import debezium_record
from acidflow.sources.goldengate import goldengate_record
from acidflow.sources.lines import (
    TxnTracker,
    complete_field,
    loads,
    numbered_lines,
    source_ref,
)
from acidflow.sources.records import (
    BadRecord,
    Change,
    IncompleteTransactionError,
    ParsedStream,
    RecordError,
)
from acidflow.sources.wal2json import parse_wal2json

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
        return parse_wal2json(lines, file_name)
    if fmt == "debezium":
        return _parse_simple(
            lines, file_name, debezium_record, "its transaction's END record", ("lsn", "pos")
        )
    if fmt == "goldengate":
        return _parse_simple(
            lines, file_name, goldengate_record, "its transaction's end (txind E)", ("pos",)
        )
    raise ValueError(f"unknown change format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _parse_simple(
    lines: Iterable[str],
    file_name: str,
    fn: Callable[[Any, str, int, ParsedStream, TxnTracker], list[Change]],
    end_marker: str,
    position_fields: tuple[str, ...],
) -> ParsedStream:
    """Debezium / GoldenGate lines: ``fn`` turns one record into changes; a line that is not
    JSON is a bad record, except the last (non-blank) line, which is a cut record
    (:class:`IncompleteTransactionError` naming the file, the line, the open transaction if
    any, and the position: ``position_fields`` found whole in the cut text, else the last
    position before it)."""
    out = ParsedStream()
    txns = TxnTracker(file_name)
    numbered = list(numbered_lines(lines))
    last_line = numbered[-1][0] if numbered else 0
    last_position: Any = None
    for lineno, raw in numbered:
        try:
            rec = loads(raw)
        except ValueError as e:
            if lineno == last_line:
                found = [v for f in position_fields if (v := complete_field(raw, f))]
                if txns.open:
                    txid, st = min(txns.open.items(), key=lambda kv: kv[1]["line"])
                    raise IncompleteTransactionError(
                        file_name,
                        txid,
                        found[0] if found else st["position"],
                        st["line"],
                        f"the last line ({lineno}) is cut (not JSON: {e}) and the file ends "
                        f"before {end_marker}",
                    ) from None
                raise IncompleteTransactionError(
                    file_name,
                    None,
                    found[0] if found else last_position,
                    lineno,
                    f"the last line is a cut change record (not JSON: {e})",
                ) from None
            out.bad.append(BadRecord(source_ref(file_name, lineno), f"not JSON: {e}", raw))
            continue
        try:
            changes = fn(rec, file_name, lineno, out, txns)
        except RecordError as e:
            out.bad.append(BadRecord(source_ref(file_name, lineno), str(e), raw, _guess_table(rec)))
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
