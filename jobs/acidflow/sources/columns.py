"""Change records as columns: what the columnar parsers give (pure: no Spark, no catalog, no I/O).

:func:`acidflow.sources.fastparse.parse_columns` reads a change file straight into per-table
columns (:class:`TableColumns`: op, position, seq and source per event, the after and before
images column by column) instead of one :class:`~acidflow.sources.records.Change` with two
dicts per event. The columnar CDC fold (``acidflow.cdc.columnar.column_frame``) takes these
columns as they are; everything else reads the stream as a
:class:`~acidflow.sources.records.ParsedStream` and gets exactly what
:func:`acidflow.sources.formats.parse_lines` gives: :class:`ColumnStream` runs that reference
parser the first time its ``changes`` are asked for (a table that takes the row path, a keyless
table, new columns), so the row path keeps its one definition of the rules.

Also here: the per-table decoding of images with msgspec Structs (:func:`decode_images`: one
Struct type per table, built from the image keys, no dict per image) and the exact replay of
the reference parser's table learning (:func:`learn_tables`).
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import repeat
from operator import is_not, itemgetter
from typing import Any, Callable, overload

from acidflow.sources.records import Change, ParsedStream, SourceTable

try:
    import msgspec

    #: a column the image does not carry (JSON has no such key; ``None`` is JSON ``null``)
    ABSENT: Any = msgspec.UNSET
except ImportError:  # pragma: no cover - msgspec comes with Airflow
    msgspec = None  # type: ignore[assignment]
    ABSENT = object()

#: most distinct image keys a table's Struct type grows to before the reference parser is used
MAX_IMAGE_KEYS = 1024
_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `(.*)` - at `[^`]*`$", re.S)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a stream is parsed into columns: the
    parse makes many small containers and no reference cycle, and the collector's passes over
    them cost as much as the parse itself (bench/NOTES.md); it is resumed (when it was on)
    whatever happens."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: ``ACIDFLOW_CDC_FASTPARSE=0`` sends every change file and Kafka range through the reference
#: parser / record decoder (the column parsers are off)
ENABLED = os.environ.get("ACIDFLOW_CDC_FASTPARSE", "1") not in ("0", "false", "no")


def available() -> bool:
    """Whether the columnar parsers can run (msgspec is installed)."""
    return msgspec is not None


@dataclass
class ImageColumns:
    """One image (after or before) of a table's events, column by column.

    Attributes:
        present: per event, whether the event carries the image (False: the row path's
            ``None``).
        values: ``{column (lower case): value per event}``; :data:`ABSENT` where the image
            does not carry the column or the event has no image. Values are what
            :func:`acidflow.sources.lines.loads` gives (ints, ``Decimal``, str, bool, None,
            lists, dicts) or the format's decoded logical values.
    """

    present: list[bool]
    values: dict[str, list[Any]]

    def column(self, name: str) -> list[Any]:
        """The values of ``name`` per event, ``None`` where absent (the row path's
        ``image.get(name)``)."""
        col = self.values.get(name)
        if col is None:
            return [None] * len(self.present)
        return [None if v is ABSENT else v for v in col]

    def take(self, idx: list[int]) -> ImageColumns:
        """The events ``idx`` only."""
        return ImageColumns(
            take(self.present, idx), {n: take(c, idx) for n, c in self.values.items()}
        )

    def valued(self) -> set[str]:
        """The columns some image gives a value (not null) -- the ones a format without types
        can infer a type from."""
        return {
            n
            for n, col in self.values.items()
            if any(v is not None and v is not ABSENT for v in col)
        }

    def image(self, i: int) -> dict[str, Any] | None:
        """Event ``i``'s image as the row path's dict (None when it has none)."""
        if not self.present[i]:
            return None
        return {n: col[i] for n, col in self.values.items() if col[i] is not ABSENT}


@dataclass
class TableColumns:
    """One source table's changes of a stream, as columns (event i = the table's i-th change
    in stream order).

    Attributes:
        table: source table ``schema.table`` (lower case).
        ops: ``I``/``U``/``D`` per event (no ``T``, no ``missing`` columns: such streams are
            parsed by the reference parser).
        positions: the ordering value per event (``Change.position``).
        seqs: the event's index in the whole stream (``Change.seq``).
        file_name, lines: ``Change.source`` is ``file_name:line`` ... (``file_name[i]`` when
            a list: Kafka's ``topic/partition``, the line being the offset) ...
        suffixes: ... followed by this per event (`` lsn N``), when given.
        after, before: the images (:class:`ImageColumns`).
    """

    table: str
    ops: list[str]
    positions: list[str]
    seqs: list[int]
    file_name: str | list[str]
    lines: list[int]
    suffixes: list[str] | None
    after: ImageColumns
    before: ImageColumns

    def source(self, i: int) -> str:
        """``Change.source`` of event ``i``."""
        suffix = self.suffixes[i] if self.suffixes is not None else ""
        name = self.file_name if isinstance(self.file_name, str) else self.file_name[i]
        return f"{name}:{self.lines[i]}{suffix}"

    def change(self, i: int) -> Change:
        """Event ``i`` as the :class:`Change` the reference parser makes of it."""
        return Change(
            self.table,
            self.ops[i],
            self.positions[i],
            self.after.image(i),
            self.before.image(i),
            frozenset(),
            self.source(i),
            self.seqs[i],
        )

    def image_names(self) -> set[str]:
        """Every column some image of the table carries."""
        return {
            n
            for img in (self.after, self.before)
            for n, col in img.values.items()
            if any(v is not ABSENT for v in col)
        }


class EventChanges(Sequence[Change]):
    """The events of a :class:`TableColumns` as :class:`Change` objects, each made when asked
    for (``acidflow.cdc.columnar``'s bad records)."""

    def __init__(self, columns: TableColumns) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns.ops)

    @overload
    def __getitem__(self, i: int) -> Change: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Change]: ...
    def __getitem__(self, i: int | slice) -> Change | Sequence[Change]:
        if isinstance(i, slice):
            return [self.columns.change(j) for j in range(len(self))[i]]
        return self.columns.change(range(len(self))[i])


class ColumnStream(ParsedStream):
    """A :class:`ParsedStream` whose changes are held as columns per table.

    ``tables``, ``bad`` (always empty: a stream with a bad record is parsed by the reference
    parser), ``ignored``, ``first_position`` and ``last_position`` are the reference parser's
    values; ``changes`` runs the reference parser (once) and returns its changes, so every
    reader of a ``ParsedStream`` sees exactly what it would have seen. :meth:`by_table` gives
    the columns without doing so.

    Attributes:
        frames: ``{source table: TableColumns}`` in first-seen order.
        count: number of changes.
    """

    def __init__(
        self,
        frames: dict[str, TableColumns],
        reference: Callable[[], ParsedStream],
        tables: dict[str, SourceTable],
        *,
        ignored: int = 0,
        first_position: str | None = None,
        last_position: str | None = None,
    ) -> None:
        self.frames = frames
        self.count = sum(len(f.ops) for f in frames.values())
        self._reference = reference
        self._materialized: ParsedStream | None = None
        self.bad = []
        self.tables = tables
        self.ignored = ignored
        self.first_position = first_position
        self.last_position = last_position

    def change_count(self) -> int:
        """Number of changes, without parsing them (:attr:`count`)."""
        return self.count

    def materialized(self) -> ParsedStream:
        """The reference parser's stream (parsed on the first call)."""
        if self._materialized is None:
            self._materialized = self._reference()
        return self._materialized

    @property
    def changes(self) -> list[Change]:
        """The reference parser's changes (see the class docstring)."""
        return self.materialized().changes

    @changes.setter
    def changes(self, value: list[Change]) -> None:
        self.materialized().changes = value

    def by_table(self) -> dict[str, TableChanges]:
        """``{source table: its changes}`` (:class:`TableChanges`), first-seen order."""
        return {t: TableChanges(self, f) for t, f in self.frames.items()}


class TableChanges(Sequence[Change]):
    """One table's changes of a :class:`ColumnStream`: the columns (``columns``) and, read as a
    sequence, the reference parser's :class:`Change` objects of the table."""

    def __init__(self, stream: ColumnStream, columns: TableColumns) -> None:
        self.stream = stream
        self.columns = columns
        self._changes: list[Change] | None = None

    def _list(self) -> list[Change]:
        if self._changes is None:
            table = self.columns.table
            self._changes = [c for c in self.stream.changes if c.table == table]
        return self._changes

    def __len__(self) -> int:
        return len(self.columns.ops)

    @overload
    def __getitem__(self, i: int) -> Change: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Change]: ...
    def __getitem__(self, i: int | slice) -> Change | Sequence[Change]:
        return self._list()[i]

    def __iter__(self) -> Iterator[Change]:
        return iter(self._list())


def by_table(table_of: list[str]) -> dict[str, list[int]]:
    """Record indexes per table, tables in first-seen order."""
    if len(set(table_of)) == 1:
        return {table_of[0]: list(range(len(table_of)))}
    out: dict[str, list[int]] = {}
    for i, t in enumerate(table_of):
        out.setdefault(t, []).append(i)
    return out


def take(values: list[Any], idx: list[int]) -> list[Any]:
    """``values`` at ``idx``."""
    return list(map(values.__getitem__, idx))


def position_range(positions: list[str]) -> tuple[str | None, str | None]:
    """Smallest and largest position (None, None when there is none)."""
    return (min(positions), max(positions)) if positions else (None, None)


def carried(img: ImageColumns, ops: list[str], need: tuple[str, ...]) -> bool:
    """Every event whose op is in ``need`` carries the image."""
    return all(p for p, op in zip(img.present, ops) if op in need)


def table_images(
    afters: list[Any], befores: list[Any], ops: list[str], idx: list[int]
) -> tuple[ImageColumns, ImageColumns] | None:
    """``(after, before)`` of one table's changes ``idx`` (raw JSON images of every change,
    :func:`decode_images`); None when one does not decode or an insert / update lacks its after
    image or a delete its before image (the reference parser's cases)."""
    t_ops = take(ops, idx)
    after = decode_images(take(afters, idx))
    before = decode_images(take(befores, idx))
    if after is None or before is None:
        return None
    if not carried(after, t_ops, ("I", "U")) or not carried(before, t_ops, ("D",)):
        return None
    return after, before


# ----------------------------------------------------------------------------- images


def decode_images(raws: list[Any]) -> ImageColumns | None:
    """The images ``raws`` (JSON texts as bytes or ``msgspec.Raw``: an object or ``null``
    each) column by column, keys lower-cased as the formats' parsers do; one msgspec Struct type
    with every key seen (grown on each unknown key), values decoded as
    :func:`acidflow.sources.lines.loads` does (``Decimal`` for fractions).

    Returns:
        :class:`ImageColumns`; None when the images cannot be taken (not JSON objects, a value
        msgspec refuses such as ``NaN``, two keys equal but for case, too many keys): the
        reference parser then reads the stream.
    """
    if msgspec is None:
        return None
    keys: list[str] = []  # raw keys; field i is named f"f{i}", encoded as keys[i]
    lower: set[str] = set()
    text = b"[" + b",".join(raws) + b"]"
    while True:
        fields = [(f"f{i}", Any, ABSENT) for i in range(len(keys))]
        image = msgspec.defstruct(
            "Image",
            fields,
            rename={f"f{i}": k for i, k in enumerate(keys)},
            forbid_unknown_fields=True,
            gc=False,  # JSON values only: no reference cycles, nothing for the collector
        )
        decoder = msgspec.json.Decoder(list[image | None], float_hook=Decimal)  # type: ignore[valid-type]
        try:
            decoded = decoder.decode(text)
            break
        except msgspec.ValidationError as e:
            m = _UNKNOWN_FIELD.match(str(e))
            if m is None or len(keys) >= MAX_IMAGE_KEYS:
                return None
            key = m.group(1)
            if key in keys or key.lower() in lower:
                return None
            keys.append(key)
            lower.add(key.lower())
        except msgspec.DecodeError:
            return None
    values = {
        k.lower(): list(map(getattr, decoded, repeat(f"f{i}"), repeat(ABSENT)))
        for i, k in enumerate(keys)
    }
    return ImageColumns(list(map(is_not, decoded, repeat(None))), values)


def image_rows(rows: list[tuple[tuple[Any, ...], list[Any]] | None]) -> ImageColumns | None:
    """Images given per event as ``(names, values)`` (wal2json's column lists; None: no
    image) column by column, names lower-cased (``str(name).lower()``).

    Returns:
        :class:`ImageColumns`; None when an image names a column twice (but for case) or by
        something else than a string.
    """
    n = len(rows)
    if n and None not in rows:
        whole: list[Any] = rows  # every event has the image
        names = whole[0][0]
        if _all_str(names) and list(map(itemgetter(0), whole)).count(names) == n:
            # one shape (names compared as strings): transposed at C speed
            lowered = [str(x).lower() for x in names]
            if len(set(lowered)) != len(lowered):
                return None
            by_column = zip(*map(itemgetter(1), whole)) if names else ()
            return ImageColumns([True] * n, dict(zip(lowered, map(list, by_column))))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        if r is not None:
            groups.setdefault(r[0], []).append(i)
    values: dict[str, list[Any]] = {}
    for names, idx in groups.items():
        if not _all_str(names):  # 1 and true would share a group: the reference parser
            return None
        lowered = [str(x).lower() for x in names]
        if len(set(lowered)) != len(lowered):
            return None
        for j, name in enumerate(lowered):
            col = values.get(name)
            if col is None:
                col = values[name] = [ABSENT] * n
            for i in idx:
                col[i] = rows[i][1][j]  # type: ignore[index]
    return ImageColumns([r is not None for r in rows], values)


def _all_str(names: tuple[Any, ...]) -> bool:
    return all(type(x) is str for x in names)


def learn_tables(
    table_of: list[str],
    settled: Callable[[SourceTable, str], bool],
    learn: Callable[[int, ParsedStream], None],
    budget: int = 2000,
) -> dict[str, SourceTable] | None:
    """The reference parser's ``tables`` (columns, types, primary key, in its order), learnt by
    running the reference record function (``learn(i, stream)``) on the records of each table
    until the table is ``settled`` (no later record can teach it anything: see the callers);
    the other records are not looked at.

    Args:
        table_of: the table of each change record, in stream order.
        settled: ``f(source table, name)`` -- no later record of the table changes it.
        learn: runs the reference record function on record ``i`` into ``stream``.
        budget: most records learnt from before giving up.
    Returns:
        the tables; None when more than ``budget`` records were needed or a record's table was
        not learnt from it (the caller falls back to the reference parser).
    """
    scratch = ParsedStream()
    pending = set(table_of)
    used = 0
    for i, t in enumerate(table_of):
        if not pending:
            break
        if t not in pending:
            continue
        learn(i, scratch)
        used += 1
        if t not in scratch.tables:
            return None  # the reference learnt no such table (it refused the record)
        if settled(scratch.tables[t], t):
            pending.discard(t)
        elif used > budget:
            return None
    return scratch.tables


@dataclass
class StreamColumns:
    """A change stream being turned into a :class:`ColumnStream` by a format's column parser:
    the per-change lists (one change per record, in stream order) and which changes the
    batch keeps; each table's images are added with :meth:`add`, then :meth:`finish`.

    Attributes:
        ops, positions, file_name, lines, suffixes: as :class:`TableColumns`, for every change.
        kept: indexes of the changes the batch keeps (a Kafka range's end offsets cut the
            others); None: all.
    """

    ops: list[str]
    positions: list[str]
    file_name: str | list[str]
    lines: list[int]
    suffixes: list[str] | None
    kept: list[int] | None
    frames: dict[str, TableColumns] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.ops)
        # whether change i is kept, and its Change.seq (its index among the kept ones)
        self._is_kept = [self.kept is None] * n
        self._seq_of = list(range(n)) if self.kept is None else [-1] * n
        for seq, i in enumerate(self.kept or ()):
            self._is_kept[i], self._seq_of[i] = True, seq

    def add(self, table: str, idx: list[int], after: ImageColumns, before: ImageColumns) -> None:
        """The table's changes (``idx``, their images aligned with them): its frame holds the
        kept ones (no frame when none is kept)."""
        mine = [j for j, i in enumerate(idx) if self._is_kept[i]]
        if not mine:
            return
        if len(mine) < len(idx):
            after, before = after.take(mine), before.take(mine)
        rows = take(idx, mine)
        self.frames[table] = TableColumns(
            table,
            take(self.ops, rows),
            take(self.positions, rows),
            take(self._seq_of, rows),
            self.file_name if isinstance(self.file_name, str) else take(self.file_name, rows),
            take(self.lines, rows),
            None if self.suffixes is None else take(self.suffixes, rows),
            after,
            before,
        )

    def finish(
        self,
        table_of: list[str],
        settled: Callable[[SourceTable, str], bool],
        learn: Callable[[int, ParsedStream], None],
        reference: Callable[[], ParsedStream],
    ) -> ColumnStream | None:
        """The stream, its tables learnt from every change (:func:`learn_tables`), its
        position range from the kept ones; None when the tables cannot be learnt."""
        learnt = learn_tables(table_of, settled, learn)
        if learnt is None:
            return None
        kept = self.positions if self.kept is None else take(self.positions, self.kept)
        first, last = position_range(kept)
        return ColumnStream(
            self.frames, reference, learnt, first_position=first, last_position=last
        )
