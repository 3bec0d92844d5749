"""Oracle GoldenGate change records -> canonical changes (pure: no Spark, no catalog, no I/O).

GoldenGate JSON: ``table`` (``SCHEMA.TABLE``), ``op_type`` I/U/D, ``op_ts``, ``current_ts``,
``pos`` (sortable position string), ``primary_keys``, ``before`` / ``after`` images, and
optional ``<col>_isMissing`` flags in the images; optional ``txind`` (B/M/E/W) with
``xid``/``txid``/``csn`` marks transaction boundaries (without it every event stands alone).
Types are inferred from the JSON values.

Ordering value (the ``position`` string): ``op_ts`` normalised to ``YYYY-MM-DD
HH:MM:SS.ffffff`` (:func:`gg_timestamp`) then ``|`` then ``pos`` (the issue's "op_ts then
pos"). :func:`goldengate_record` reads one record; the line loop and the whole-transaction rules
are :func:`acidflow.sources.formats.parse_lines`'.
"""

from __future__ import annotations

import re
from typing import Any

from acidflow.sources.lines import TxnTracker, infer_hive_type
from acidflow.sources.records import (
    Change,
    IncompleteTransactionError,
    ParsedStream,
    RecordError,
)

_GG_CANONICAL = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$")
_GG_TS = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T:](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$")


def gg_timestamp(text: Any) -> str:
    """Normalise a GoldenGate timestamp (``2024-01-02 03:04:05.123456``, ``T`` or ``:`` between
    date and time, 0..9 fraction digits) to ``YYYY-MM-DD HH:MM:SS.ffffff``.

    Raises:
        RecordError: not a timestamp.
    """
    if (
        type(text) is str
        and len(text) == 26
        and text[10] == " "
        and text[19] == "."
        and _GG_CANONICAL.match(text)
    ):  # already YYYY-MM-DD HH:MM:SS.ffffff
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
    try:  # JSON object keys are strings: lower-cased at C speed
        values = dict(zip(map(str.lower, img), img.values()))
    except TypeError:
        values = {str(k).lower(): v for k, v in img.items()}
    if "_ismissing" not in "\x00".join(values):  # the common case: no flags at all
        return values, set()
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


def _gg_transaction(rec: dict, lineno: int, txns: TxnTracker) -> None:
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
            txns.file_name,
            txid,
            pos,
            lineno,
            f"txind {ind} without the transaction's begin: the file starts inside a "
            "transaction whose first records are not in it",
        )
    else:
        txns.seen(next(iter(txns.open)), pos)
    if ind in ("E", "W"):
        txns.open.clear()


def goldengate_record(
    rec: Any, file_name: str, lineno: int, out: ParsedStream, txns: TxnTracker
) -> list[Change]:
    """The change of one GoldenGate record (line ``lineno`` of ``file_name``), its ``txind``
    noted in ``txns``; the table's columns (inferred from the images; new columns only) and
    primary key (``primary_keys``) are learnt into ``out``.

    Raises:
        RecordError: not an object, bad ``table``/``op_type``/``op_ts``/``txind``, no ``pos``,
            a missing image (the record is quarantined).
        IncompleteTransactionError: a ``txind`` M/E without the transaction's begin in the file,
            or a begin while another transaction is open.
    """
    if not isinstance(rec, dict):
        raise RecordError("not a JSON object")
    if "txind" in rec or "tx_ind" in rec:
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
    if not st.primary_key or not st.columns.keys() >= img.keys():  # new columns only
        st.learn(
            [(n, t) for n, v in img.items() if (t := infer_hive_type(v))],
            [str(k).lower() for k in pk],
        )
    return [Change(table, op, position, after, before, frozenset(missing), f"{file_name}:{lineno}")]
