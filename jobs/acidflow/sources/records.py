"""The canonical change records every change format is turned into (pure data, no I/O).

:class:`Change` is one row change of a source table (insert, update, delete or truncate) with its
ordering value; :class:`SourceTable` is what a stream tells about a table (columns with Hive types,
primary key); :class:`BadRecord` is a record that could not be understood (it goes to quarantine,
``acidflow.quarantine``, never dropped); :class:`ParsedStream` is the result of parsing one change
file (``acidflow.sources.formats.parse_lines``).

Both jobs share these: the CDC job (``acidflow.cdc``) folds changes into split-update statements,
and batch ingest (``acidflow.ingest``) quarantines its unparseable rows as :class:`BadRecord`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from acidflow.errors import AcidflowError


@dataclass
class SourceTable:
    """What the stream tells about one source table.

    Attributes:
        name: source name, ``schema.table`` in lower case.
        columns: ``{column: hive type}`` in first-seen order (types mapped from the source's
            own types; inferred from JSON values when the format has none).
        primary_key: key column names (``pk`` of wal2json, the Kafka key of Debezium,
            ``primary_keys`` of GoldenGate); empty for keyless tables.
        typed: True when the types came from the source's schema, False when inferred.
    """

    name: str
    columns: dict[str, str] = field(default_factory=dict)
    primary_key: list[str] = field(default_factory=list)
    typed: bool = True

    def learn(self, columns: Iterable[tuple[str, str]], primary_key: list[str] | None) -> None:
        """Record ``(column, hive type)`` pairs not seen yet (first type wins) and the primary
        key when none is known yet."""
        for name, hive_type in columns:
            self.columns.setdefault(name, hive_type)
        if primary_key and not self.primary_key:
            self.primary_key = list(primary_key)


@dataclass
class Change:
    """One row change in canonical form.

    Attributes:
        table: source table ``schema.table`` (lower case).
        op: ``"I"``, ``"U"``, ``"D"``, or ``"T"`` (truncate: every earlier row of the table is
            gone; no images).
        position: ordering value (see module docstring); larger = newer.
        after: new row image ``{column: value}`` (I/U), ``None`` for D. Values are JSON-ish
            Python values (int, Decimal, str, bool, None) or already-typed ``date``/``datetime``/
            ``bytes`` where the format says so; :func:`acidflow.cdc.changes.coerce` makes them
            Hive-typed.
        before: old row image or old key columns (U/D), ``None`` when the source did not
            send one.
        missing: columns the source flagged as not sent in ``after`` (GoldenGate
            ``_isMissing``); besides these, any column absent from an update's ``after`` keeps
            its stored value (wal2json leaves out unchanged TOAST values), see
            :func:`acidflow.cdc.changes.fold`.
        source: ``"<file>:<line>"`` plus ``" lsn <LSN>"`` when known.
        seq: index of the change in its input stream (stable tie-break).
    """

    table: str
    op: str
    position: str
    after: dict[str, Any] | None
    before: dict[str, Any] | None
    missing: frozenset[str] = frozenset()
    source: str = ""
    seq: int = 0


@dataclass
class BadRecord:
    """A record that could not be turned into a change; goes to quarantine.

    Attributes:
        source: ``"<file>:<line>"`` (plus LSN when known).
        reason: why, in one sentence.
        raw: the raw line (text) as read.
        table: source table when it could be determined, else ``None``.
    """

    source: str
    reason: str
    raw: str
    table: str | None = None


@dataclass
class ParsedStream:
    """Result of parsing one change file.

    Attributes:
        changes: changes in stream order.
        bad: records that could not be parsed.
        tables: ``{source table: SourceTable}`` seen in the stream.
        ignored: count of records that carry no row change by design (wal2json ``M`` logical
            messages, B/C brackets are not counted).
        first_position, last_position: LSN range of the stream (wal2json), else positions of
            the first/last change; ``None`` when empty.
    """

    changes: list[Change] = field(default_factory=list)
    bad: list[BadRecord] = field(default_factory=list)
    tables: dict[str, SourceTable] = field(default_factory=dict)
    ignored: int = 0
    first_position: str | None = None
    last_position: str | None = None

    def change_count(self) -> int:
        """Number of changes (``len(changes)``; a stream held as columns counts them without
        making ``Change`` objects)."""
        return len(self.changes)

    def table(self, name: str, typed: bool = True) -> SourceTable:
        """The :class:`SourceTable` of ``name``, created (with ``typed``) on first sight."""
        t = self.tables.get(name)
        if t is None:
            t = self.tables[name] = SourceTable(name, typed=typed)
        return t


class RecordError(AcidflowError, ValueError):
    """A record is malformed (the message is the quarantine reason)."""


class IncompleteTransactionError(AcidflowError, ValueError):
    """A change file ends (or a new transaction begins) inside a source transaction: the
    transaction's end marker (wal2json ``C`` / the end of a v1 document, Debezium's ``END``
    transaction record, GoldenGate's end-of-transaction indicator) is missing, so the file was
    cut short (a pull interrupted, a copy still in progress). None of the file's changes may be
    applied: a batch must never commit part of a source transaction.

    Attributes:
        file: the change file.
        txid: the source transaction's id (wal2json ``xid``, Debezium ``transaction.id``,
            GoldenGate ``xid``/``csn``), ``None`` when the source did not send one.
        position: the LSN (wal2json ``lsn`` of ``B``, or of the last change seen), Debezium
            ``source.lsn``/binlog position or GoldenGate ``pos`` where the transaction was last
            seen; ``None`` when unknown.
        line: line of the file where the transaction begins.
    """

    def __init__(
        self, file: str, txid: Any, position: Any, line: int | None, detail: str = ""
    ) -> None:
        self.file, self.txid, self.position, self.line = file, txid, position, line
        self.detail = detail
        where = f"{file}:{line}" if line is not None else file
        super().__init__(
            f"{where}: incomplete source transaction (xid {txid if txid is not None else '?'}, "
            f"position {position if position is not None else '?'}): "
            f"{detail or 'the file ends before the transaction ends'}; the file is cut short "
            "(an interrupted pull or copy) and none of it was applied. Replace it with a "
            f"complete copy, or set it aside with 'acidflow cdc quarantine-file {file} --reason "
            "TEXT' to go on with the later files"
        )


class UnreadableFileError(AcidflowError, ValueError):
    """An input file cannot be read as text at all (a binary file, a truncated or corrupt
    ``.gz``, bytes that are not UTF-8). Nothing of it was applied.

    Attributes:
        file: the file; offset: byte offset of the problem (in the decompressed data for
            ``.gz``) when known; line: its line number when known; reason: what is wrong.
    """

    def __init__(
        self,
        file: str,
        reason: str,
        offset: int | None = None,
        line: int | None = None,
        hint: str = "",
    ) -> None:
        self.file, self.reason, self.offset, self.line = file, reason, offset, line
        where = (
            file
            + (f":{line}" if line is not None else "")
            + (f" (byte {offset})" if offset is not None else "")
        )
        super().__init__(
            f"{where}: unreadable input file: {reason}" + (f"; {hint}" if hint else "")
        )
