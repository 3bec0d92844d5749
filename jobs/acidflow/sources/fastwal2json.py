"""wal2json records parsed straight into columns (pure: no Spark, no catalog, no I/O):
format-version 2 records and format-version 1 documents (:func:`parse_wal2json`, for
:func:`acidflow.sources.fastparse.parse_columns`). See :mod:`acidflow.sources.fastparse` for
what is taken and what goes to the reference parser.
"""

from __future__ import annotations

from decimal import Decimal
from operator import attrgetter
from typing import Any, Callable

from acidflow.sources import columns as cols
from acidflow.sources.records import ParsedStream, RecordError, SourceTable
from acidflow.sources.wal2json import _V1_ACTIONS, _lsn, _widen, pg_to_hive

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    msgspec = None  # type: ignore[assignment]

if msgspec is not None:

    class _W2JColumn(msgspec.Struct, gc=False):
        """One ``{name, type, value}`` of a wal2json v2 ``columns`` / ``identity`` list."""

        name: Any
        type: Any = cols.ABSENT
        value: Any = None

    class _V1Keys(msgspec.Struct, gc=False):
        """``oldkeys`` of a format-version 1 change."""

        keynames: Any = None
        keytypes: Any = None
        keyvalues: Any = None

    class _V1Pk(msgspec.Struct, gc=False):
        """``pk`` of a format-version 1 change."""

        pknames: Any = None
        pktypes: Any = None

    class _V1Change(msgspec.Struct, gc=False):
        """One change of a format-version 1 document."""

        kind: Any = None
        schema: Any = None
        table: Any = None
        columnnames: Any = None
        columntypes: Any = None
        columnvalues: Any = None
        oldkeys: _V1Keys | None = None
        pk: _V1Pk | None = None

    class _W2JRecord(msgspec.Struct, gc=False):
        """A format-version 2 record or a format-version 1 document."""

        action: Any = cols.ABSENT
        lsn: Any = cols.ABSENT
        nextlsn: Any = None
        xid: Any = None
        schema: Any = None
        table: Any = None
        columns: list[_W2JColumn] | None = None
        identity: list[_W2JColumn] | None = None
        pk: list[_W2JColumn] | None = None
        change: list[_V1Change] | None = None

    _W2J_DECODER = msgspec.json.Decoder(_W2JRecord, float_hook=Decimal)

_Image = tuple[tuple[Any, ...], list[Any]]


class _W2JChange:
    """One change on its way to the columns (a slotted record, not a dict)."""

    __slots__ = ("after", "before", "line", "lsn", "op", "position", "src", "table")

    def __init__(
        self,
        table: str,
        op: str,
        line: int,
        lsn: Any,
        after: _Image | None,
        before: _Image | None,
        src: Any,
    ) -> None:
        self.table, self.op, self.line, self.lsn = table, op, line, lsn
        self.after, self.before, self.src = after, before, src
        self.position = ""

    def pk_names(self) -> list[str]:
        """The primary key columns the record names (lower case)."""
        src = self.src
        if isinstance(src, _V1Change):
            return [str(n).lower() for n in (src.pk.pknames or [])] if src.pk else []
        return [str(p.name).lower() for p in src.pk or []]

    def learn(self, out: ParsedStream) -> None:
        """What ``_wal2json_change`` learns from the change's record into ``out``: the column
        types (``columns``, ``identity``, ``pk`` entries with a type) and the primary key."""
        src, op = self.src, self.op
        if isinstance(src, _V1Change):
            types = src.columntypes or []
            kinds: list[tuple[Any, Any]] = []
            if op in ("I", "U") and types:
                kinds += [(n, t) for n, t, _ in zip(src.columnnames, types, src.columnvalues or [])]
            old = src.oldkeys
            if op in ("U", "D") and old is not None:
                kn = old.keynames or []
                kinds += [
                    (n, t)
                    for n, t, _ in zip(kn, old.keytypes or ["text"] * len(kn), old.keyvalues or [])
                ]
            pk = list(zip(src.pk.pknames or [], src.pk.pktypes or [])) if src.pk else []
        else:
            kinds = (
                [(c.name, c.type) for c in src.columns or [] if c.type is not cols.ABSENT]
                if op in ("I", "U")
                else []
            )
            if op in ("U", "D") and src.identity is not None:
                kinds += [(c.name, c.type) for c in src.identity if c.type is not cols.ABSENT]
            pk = [(p.name, p.type) for p in src.pk or []]
            kinds += [(n, t) for n, t in pk if t is not cols.ABSENT]
            pk_names = [str(n).lower() for n, _ in pk]
            out.table(self.table).learn(
                [(str(n).lower(), pg_to_hive(str(t))) for n, t in kinds], pk_names
            )
            return
        kinds += pk
        out.table(self.table).learn(
            [(str(n).lower(), pg_to_hive(str(t))) for n, t in kinds],
            [str(n).lower() for n, _ in pk],
        )


_NAME = attrgetter("name")
_VALUE = attrgetter("value")


def _w2j_image(items: list[Any]) -> _Image:
    return tuple(map(_NAME, items)), list(map(_VALUE, items))


def _w2j_v2_change(rec: Any, line: int) -> _W2JChange:
    """A v2 I/U/D record (``_wal2json_change``'s reading of it).

    Raises:
        RecordError: what the reference parser quarantines.
    """
    if not rec.table:
        raise RecordError("change without 'table'")
    op = rec.action
    after = before = None
    if op in ("I", "U"):
        if rec.columns is None:
            raise RecordError("'columns' must be a list")
        after = _w2j_image(rec.columns)
    if op in ("U", "D") and rec.identity is not None:
        before = _w2j_image(rec.identity)
    if op == "D" and before is None:
        raise RecordError("DELETE without 'identity'")
    ch = _W2JChange(
        f"{rec.schema or 'public'}.{rec.table}".lower(),
        op,
        line,
        None if rec.lsn is cols.ABSENT else rec.lsn,
        after,
        before,
        rec,
    )
    return ch


def _w2j_v1_change(ch: Any, nextlsn: Any, line: int) -> _W2JChange:
    """A v1 change (``_wal2json_v1_doc``'s v2-shaped record, then ``_wal2json_change``).

    Raises:
        RecordError: what the reference parser quarantines.
    """
    if ch.kind not in _V1_ACTIONS:
        raise RecordError("unknown kind")
    op = _V1_ACTIONS[ch.kind]
    if op == "T" or not ch.table:
        raise RecordError("truncate or no table")
    names, types, values = ch.columnnames or [], ch.columntypes or [], ch.columnvalues or []
    after = before = None
    if op in ("I", "U"):
        if not names:
            raise RecordError("'columns' must be a list")
        n = min(len(names), len(values), len(types) if types else len(names))
        after = (tuple(names[:n]), list(values[:n]))
    old = ch.oldkeys
    if op in ("U", "D") and old is not None:
        kn, kv = old.keynames or [], old.keyvalues or []
        n = min(len(kn), len(kv), len(old.keytypes) if old.keytypes else len(kn))
        before = (tuple(kn[:n]), list(kv[:n]))
    if op == "D" and before is None:
        raise RecordError("DELETE without 'identity'")
    out = _W2JChange(
        f"{ch.schema or 'public'}.{ch.table}".lower(), op, line, nextlsn, after, before, ch
    )
    return out


def parse_wal2json(
    numbered: list[tuple[int, str]], file_name: str, reference: Callable[[], ParsedStream]
) -> cols.ColumnStream | None:
    """wal2json v2 records and v1 documents (``parse_wal2json``'s loop, without the cases it
    quarantines or raises for: those answer None)."""
    scratch = ParsedStream()  # the LSN range and the ignored count, by the reference's rules
    changes: list[_W2JChange] = []
    pending: list[_W2JChange] = []
    begin_lsn: int | None = None
    open_txn = False
    has_pk: dict[str, bool] = {}
    owns: list[int] = []  # the changes' own LSNs: the reference widens the range with them

    def flush(commit: int | None, batch: list[_W2JChange]) -> None:
        for idx, ch in enumerate(batch):
            own = _lsn(ch.lsn) if ch.lsn is not None else None
            if own is not None:
                owns.append(own)
            order = commit if commit is not None else own
            if order is None:
                raise RecordError("no LSN")
            ch.position = f"{order:016X}.{idx:08d}"
            changes.append(ch)
        batch.clear()

    for lineno, raw in numbered:
        rec = _W2J_DECODER.decode(raw)
        if rec.action is cols.ABSENT:
            if rec.change is None or open_txn:
                return None
            commit = _lsn(rec.nextlsn) if rec.nextlsn is not None else None
            _widen(scratch, rec.nextlsn)
            doc: list[_W2JChange] = []
            for ch in rec.change:
                if ch.kind == "message":
                    scratch.ignored += 1
                    continue
                doc.append(_w2j_v1_change(ch, rec.nextlsn, lineno))
                has_pk[doc[-1].table] = has_pk.get(doc[-1].table, False) or bool(
                    ch.pk is not None and ch.pk.pknames
                )
            flush(commit, doc)
            continue
        action = rec.action
        lsn = None if rec.lsn is cols.ABSENT else rec.lsn
        if action == "B":
            if open_txn:
                return None
            begin_lsn = _lsn(lsn) if rec.lsn is not cols.ABSENT else None
            open_txn = True
            _widen(scratch, lsn)
        elif action == "C":
            end = lsn or rec.nextlsn
            commit = _lsn(end) if end is not None else begin_lsn
            _widen(scratch, rec.nextlsn or lsn)
            flush(commit, pending)
            begin_lsn, open_txn = None, False
        elif action in ("I", "U", "D"):
            change = _w2j_v2_change(rec, lineno)
            has_pk[change.table] = has_pk.get(change.table, False) or bool(rec.pk)
            pending.append(change)  # its LSN widens the range when flushed
        elif action == "M":
            scratch.ignored += 1
        else:
            return None  # TRUNCATE, an unknown action: the reference parser's
    if open_txn:
        return None
    flush(None, pending)
    if not changes:
        return None
    if owns:
        _widen(scratch, min(owns))
        _widen(scratch, max(owns))
    table_of = [ch.table for ch in changes]
    frames: dict[str, cols.TableColumns] = {}
    names: dict[str, set[str]] = {}
    for t, idx in cols.by_table(table_of).items():
        mine = cols.take(changes, idx)
        after = cols.image_rows([ch.after for ch in mine])
        before = cols.image_rows([ch.before for ch in mine])
        if after is None or before is None:
            return None
        names[t] = set(after.values) | set(before.values)
        pks: list[Any] = []  # the distinct primary key lists the table's records name
        for ch in mine:
            if ch.src.pk and ch.src.pk not in pks:
                pks.append(ch.src.pk)
                names[t].update(ch.pk_names())
        frames[t] = cols.TableColumns(
            t,
            [ch.op for ch in mine],
            [ch.position for ch in mine],
            idx,
            file_name,
            [ch.line for ch in mine],
            [f" lsn {ch.lsn}" if ch.lsn else "" for ch in mine],
            after,
            before,
        )

    def settled(st: SourceTable, t: str) -> bool:
        return st.columns.keys() >= names[t] and (bool(st.primary_key) or not has_pk[t])

    def learn(i: int, out: ParsedStream) -> None:
        changes[i].learn(out)

    learnt = cols.learn_tables(table_of, settled, learn)
    if learnt is None:
        return None
    return cols.ColumnStream(
        frames,
        reference,
        learnt,
        ignored=scratch.ignored,
        first_position=scratch.first_position,
        last_position=scratch.last_position,
    )
