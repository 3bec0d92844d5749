"""Shared pieces of the change-format parsers (pure: no Spark, no catalog, no I/O).

Every format (``acidflow.sources.wal2json``, ``.debezium``, ``.goldengate``, dispatched by
``acidflow.sources.formats.parse_lines``) reads one JSON document per line. This module holds
what more than one of them uses: the JSON decoding of a line (:func:`loads`), the numbering of
non-blank lines (:func:`numbered_lines`), the whole-value lookup in a cut line
(:func:`complete_field`), the ``file:line [lsn N]`` reference of a record (:func:`source_ref`),
the type inference of formats without types (:func:`infer_hive_type`) and the tracker of
transaction boundaries of Debezium / GoldenGate streams (:class:`TxnTracker`).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any, Iterable, Iterator

from acidflow.sources.records import IncompleteTransactionError

try:
    import msgspec

    _DECODER: msgspec.json.Decoder[Any] | None = msgspec.json.Decoder(float_hook=Decimal)
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    _DECODER = None


def loads(line: str) -> Any:
    """One JSON record; numbers with a fraction stay exact (``Decimal``), ints stay ints.
    msgspec (C, ~4x faster) first; what it refuses (``NaN``, ``Infinity``, which Python's json
    accepts) goes through ``json.loads``, whose error is the one reported.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``).
    """
    if _DECODER is not None:
        try:
            return _DECODER.decode(line)
        except ValueError:
            pass
    return json.loads(line, parse_float=Decimal)


def numbered_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """``(line number from 1, line without its line ending)`` for every non-blank line; blank
    lines are skipped but counted, so the numbers are the file's own."""
    for i, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if line.strip():
            yield i, line


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


def complete_field(raw: str, name: str) -> str | None:
    """The value of ``"name": <value>`` in a cut JSON text when the value itself is whole
    (a closing quote, or a ``,``/``}`` after a bare value), else None: a cut line must not
    report a cut LSN or position."""
    m = re.search(r'"' + re.escape(name) + r'"\s*:\s*(?:"([^"\\]*)"|([^",}\s]+)\s*[,}])', raw)
    if not m:
        return None
    return m.group(1) if m.group(1) is not None else m.group(2)


def source_ref(file_name: str, lineno: int, lsn: Any = None) -> str:
    """Where a record came from, as :attr:`Change.source` / :attr:`BadRecord.source` hold it:
    ``file:line``, plus `` lsn <lsn>`` when ``lsn`` is given (truthy)."""
    return f"{file_name}:{lineno}" + (f" lsn {lsn}" if lsn else "")


class TxnTracker:
    """Transaction boundaries of a Debezium or GoldenGate file, where the stream carries them.

    ``begin``/``end`` mark a transaction's first and last record; ``seen`` notes a change of a
    transaction (its last position, for the error). :meth:`finish` raises
    :class:`IncompleteTransactionError` for a transaction begun in the file but not ended in it.

    Attributes:
        file_name: the change file (named in the errors).
        open: the transactions begun and not ended, ``{txid: {"line", "position"}}`` in the
            order they began.
    """

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.open: dict[Any, dict[str, Any]] = {}  # txid -> {line, position}

    def begin(self, txid: Any, line: int, position: Any = None, *, exclusive: bool = False) -> None:
        """Transaction ``txid`` begins at ``line`` (at ``position``, when known).

        Raises:
            IncompleteTransactionError: ``exclusive`` and another transaction is still open
                (the stream carries one transaction at a time, as GoldenGate's ``txind``).
        """
        if exclusive and self.open:
            other, st = next(iter(self.open.items()))
            raise IncompleteTransactionError(
                self.file_name,
                other,
                st["position"],
                st["line"],
                f"a new transaction begins at line {line} before it ends",
            )
        self.open[txid] = {"line": line, "position": position}

    def seen(self, txid: Any, position: Any) -> None:
        """A change of transaction ``txid`` at ``position`` (ignored when it is not open)."""
        if txid in self.open:
            self.open[txid]["position"] = position

    def end(self, txid: Any) -> None:
        """Transaction ``txid`` ends (ignored when it is not open)."""
        self.open.pop(txid, None)

    def finish(self, what: str) -> None:
        """The file ends.

        Raises:
            IncompleteTransactionError: a transaction is still open; names the one begun first
                (file, txid, last position, begin line) and says the file ends before ``what``.
        """
        if self.open:
            txid, st = min(self.open.items(), key=lambda kv: kv[1]["line"])
            raise IncompleteTransactionError(
                self.file_name, txid, st["position"], st["line"], f"the file ends before {what}"
            )
