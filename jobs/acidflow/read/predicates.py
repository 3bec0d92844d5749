"""Row filters of reads (``read_table(where=...)``, the ``acid`` data source's pushed filters):
one typed form, its exact evaluation on rows, and the rules that let a read skip work.

The form (as pyarrow's and pyiceberg's row filters): a conjunction, a list of
``(column, op, value)`` tuples (or :class:`Predicate` s)::

    [("region", "=", "eu"), ("amount", ">=", Decimal("10.00")), ("id", "in", [1, 2, 3]),
     ("closed", "is null")]

* ``column``: a data column or a partition column of the table (names as in the table's
  schema, matched case-insensitively, as Hive and Spark do).
* ``op``: ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in`` (value: a list/tuple/set),
  ``is null``, ``is not null`` (no value; a 2-tuple).
* ``value``: a Python value of the column's type: ``int``, ``float``, ``str``,
  ``Decimal``, ``datetime.date``, ``datetime.datetime`` (naive, as the table's
  ``timestamp`` values), ``bool``. ``None`` is refused for comparisons (SQL ``x = NULL`` is
  never true: write ``is null``); NULLs inside an ``in`` list never match.

Semantics: SQL ``WHERE`` -- a row is kept when every predicate is TRUE (NULL counts as
false); the result of a filtered read is exactly the result of reading everything and
filtering afterwards. Pushdown only skips work: partition directories whose values fail
(:func:`partition_matches`, values typed per the partition column's Hive type), ORC stripes
whose statistics or bloom filters prove that no row matches
(:mod:`acidflow.format.orc.orcpredicate`). Pure rules: Arrow in, Arrow out, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.errors import AcidflowError
from acidflow.format import partitions as parts
from acidflow.format import types as htypes
from acidflow.format.orc.orcpredicate import OPS, ColumnCondition


class PredicateError(AcidflowError, ValueError):
    """A row filter that is not of the supported form: names the table, the column and why."""


class PartitionValueError(AcidflowError, ValueError):
    """A partition directory whose value is not of its column's Hive type (``dt=abc`` for a
    ``date`` column): names the partition path, the column, the value and the type."""


@dataclass(frozen=True)
class Predicate:
    """One predicate of a conjunction (module doc).

    Attributes:
        column: the column's name as the table spells it.
        op: one of ``=, !=, <, <=, >, >=, in, is null, is not null``.
        value: the literal; a tuple for ``in`` (NULLs removed); None for the NULL tests.
    """

    column: str
    op: str
    value: Any = None

    def __str__(self) -> str:
        if self.op in ("is null", "is not null"):
            return f"{self.column} {self.op.upper()}"
        if self.op == "in":
            return f"{self.column} IN ({', '.join(repr(v) for v in self.value)})"
        return f"{self.column} {self.op} {self.value!r}"


Where = Sequence["Predicate | tuple[Any, ...]"]


def parse_where(
    where: Where | None,
    columns: Sequence[tuple[str, str]],
    partition_columns: Sequence[tuple[str, str]] = (),
    *,
    table: str = "",
) -> list[Predicate]:
    """Check a row filter against a table's columns and return it typed.

    Args:
        where: ``(column, op[, value])`` tuples or :class:`Predicate` s; None = no filter.
        columns, partition_columns: ``[(name, hive_type)]`` of the table.
        table: names the table in errors.
    Returns:
        The predicates, columns spelled as the table does, ``in`` values as tuples.
    Raises:
        PredicateError: an unknown column or operator, a missing or NULL value, or a value
            that cannot be compared with the column's type.
    """
    if not where:
        return []
    types = {n.lower(): (n, t) for n, t in [*columns, *partition_columns]}
    out: list[Predicate] = []
    for item in where:
        p = item if isinstance(item, Predicate) else _from_tuple(item, table)
        op = str(p.op).strip().lower()
        if op not in OPS:
            raise PredicateError(
                f"table {table}, column {p.column}: unknown operator {p.op!r} (one of "
                f"{', '.join(OPS)})"
            )
        found = types.get(str(p.column).lower())
        if found is None:
            raise PredicateError(
                f"table {table}: no column {p.column!r} to filter on (columns: "
                f"{', '.join(n for n, _ in [*columns, *partition_columns])})"
            )
        name, hive_type = found
        value = p.value
        if op == "in":
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise PredicateError(f"table {table}, column {name}: 'in' takes a list of values")
            value = tuple(v for v in value if v is not None)
        elif op in ("is null", "is not null"):
            value = None
        elif value is None:
            raise PredicateError(
                f"table {table}, column {name}: {op} NULL is never true; use 'is null'"
            )
        pred = Predicate(name, op, value)
        try:
            column_mask(pa.array([], htypes.arrow_type(hive_type)), pred)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise PredicateError(
                f"table {table}, column {name} ({hive_type}): cannot compare with "
                f"{p.value!r}: {exc}"
            ) from None
        out.append(pred)
    return out


def _from_tuple(item: Any, table: str) -> Predicate:
    if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
        raise PredicateError(
            f"table {table}: a row filter is a list of (column, op, value) or "
            f"(column, 'is null'|'is not null') tuples, not {item!r}"
        )
    return Predicate(item[0], item[1], item[2] if len(item) == 3 else None)


def column_mask(values: pa.Array | pa.ChunkedArray, pred: Predicate) -> pa.Array:
    """SQL truth of ``pred`` on a column's values, NULL as false (bool array, no NULLs)."""
    op = pred.op
    if op == "is null":
        return pc.is_null(values)
    if op == "is not null":
        return pc.is_valid(values)
    if op == "in":
        if not pred.value:
            return pa.array([False] * len(values), pa.bool_())
        mask = pc.is_in(values, value_set=pa.array(list(pred.value)), skip_nulls=True)
        return pc.fill_null(pc.and_(mask, pc.is_valid(values)), False)
    fn = {
        "=": pc.equal,
        "!=": pc.not_equal,
        "<": pc.less,
        "<=": pc.less_equal,
        ">": pc.greater,
        ">=": pc.greater_equal,
    }[op]
    return pc.fill_null(fn(values, pa.scalar(pred.value)), False)


def row_mask(
    columns: Mapping[str, pa.Array | pa.ChunkedArray], where: Sequence[Predicate], n: int
) -> pa.Array:
    """Which of ``n`` rows every predicate keeps (bool array): ``columns`` holds, by name, the
    values of every column a predicate names (as the table's types)."""
    mask: pa.Array = pa.array([True] * n, pa.bool_())
    for p in where:
        mask = pc.and_(mask, column_mask(columns[p.column], p))
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return mask


def filter_batches(
    batches: Iterable[pa.RecordBatch], where: Sequence[Predicate], names: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` that every predicate keeps, in the columns ``names`` (the
    batches hold at least these and the predicates' columns); empty batches dropped."""
    for b in batches:
        if where:
            cols = {p.column: b.column(p.column) for p in where}
            b = b.filter(row_mask(cols, where, b.num_rows))
        if b.num_rows:
            yield b if list(b.schema.names) == list(names) else b.select(list(names))


def split(
    where: Sequence[Predicate], partition_columns: Sequence[tuple[str, str]]
) -> tuple[list[Predicate], list[Predicate]]:
    """``(on partition columns, on data columns)``."""
    pnames = {n for n, _ in partition_columns}
    return [p for p in where if p.column in pnames], [p for p in where if p.column not in pnames]


def partition_values(
    partition_columns: Sequence[tuple[str, str]], ppath: str
) -> dict[str, pa.Array]:
    """The typed values (one-element arrays) of a partition path's columns: the directory's
    text cast to the column's Hive type, ``__HIVE_DEFAULT_PARTITION__`` as NULL (as
    :func:`acidflow.read.snapshot.read_task` fills partition columns).

    Raises:
        PartitionValueError: a directory's value that is not of its column's type (names the
            partition path, the column, the value and the type).
    """
    given = dict(parts.parse_partition_path(ppath)) if ppath else {}
    out = {}
    for n, t in partition_columns:
        try:
            out[n] = pa.array([given.get(n)], pa.string()).cast(htypes.arrow_type(t))
        except pa.ArrowException as exc:
            raise PartitionValueError(
                f"partition {ppath}: column {n} holds {given.get(n)!r}, not a {t}: {exc}"
            ) from exc
    return out


def partition_matches(
    where: Sequence[Predicate], partition_columns: Sequence[tuple[str, str]], ppath: str
) -> bool:
    """Whether the rows of partition ``ppath`` can pass the predicates on partition columns
    (those on data columns are ignored): partition pruning, exact -- every row of the
    partition has these values."""
    on_parts, _ = split(where, partition_columns)
    if not on_parts:
        return True
    values = partition_values(partition_columns, ppath)
    return bool(row_mask(values, on_parts, 1)[0].as_py())


def conditions(
    where: Sequence[Predicate],
    columns: Sequence[tuple[str, str]],
    positions: Sequence[int | None],
) -> list[ColumnCondition]:
    """The predicates on data columns as :class:`ColumnCondition` s of one file, whose data
    column positions per table column are ``positions`` (None: the file lacks the column)."""
    index = {n: i for i, (n, _) in enumerate(columns)}
    out = []
    for p in where:
        i = index.get(p.column)
        if i is None:
            continue
        values: tuple[Any, ...] = (
            tuple(p.value) if p.op == "in" else () if p.value is None else (p.value,)
        )
        out.append(ColumnCondition(positions[i], p.op, values, columns[i][1]))
    return out


_TEXT = re.compile(
    r"^\s*(?P<col>`[^`]+`|[^\s=!<>]+)\s*"
    r"(?:(?P<null>is\s+(?:not\s+)?null)|(?P<op>!=|<>|<=|>=|=|<|>|in\b)\s*(?P<value>.*?))\s*$",
    re.IGNORECASE | re.DOTALL,
)


def _unquote(text: str) -> str | None:
    """A literal's text: quotes removed (``'a'`` / ``"a"``, a doubled quote inside kept
    once, SQL's rule); ``NULL`` unquoted is None."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1].replace(t[0] * 2, t[0])
    return None if t.lower() == "null" else t


def where_from_text(
    texts: Sequence[str],
    columns: Sequence[tuple[str, str]],
    partition_columns: Sequence[tuple[str, str]] = (),
    *,
    table: str = "",
) -> list[Predicate]:
    """Predicates from their SQL text, one per item, ANDed (``acidflow cat --where``)::

        ["region = 'eu'", "amount >= 10.50", "id in (1, 2, 3)", "closed is null"]

    ``column op literal`` with the operators of the module doc (``<>`` = ``!=``); a literal
    is quoted (``'a b'``, a doubled quote stands for one) or bare, and is read as the
    column's Hive type by Arrow's cast from text (``2024-01-31`` for a date,
    ``2024-01-31 10:00:00`` for a timestamp, ``true`` for a boolean), as a partition
    directory's value is. A column name may be back-quoted.

    Returns:
        :func:`parse_where` of the typed tuples.
    Raises:
        PredicateError: text that is not of this form, an unknown column, or a literal that
            is not of the column's type (names the table, the text and why).
    """
    types = {n.lower(): t for n, t in [*columns, *partition_columns]}
    items: list[tuple[Any, ...]] = []
    for text in texts:
        m = _TEXT.match(text)
        if m is None:
            raise PredicateError(
                f"table {table}: cannot read the filter {text!r}: expected 'column op value' "
                f"(op one of {', '.join(OPS)}) or 'column is [not] null'"
            )
        col = m["col"].strip("`")
        if m["null"] is not None:
            items.append((col, " ".join(m["null"].lower().split())))
            continue
        op = "!=" if m["op"] == "<>" else m["op"].lower()
        hive_type = types.get(col.lower())
        if hive_type is None:  # parse_where names the columns there are
            items.append((col, op, m["value"]))
            continue
        raw = m["value"]
        if op == "in":
            inner = raw.strip()
            if not (inner.startswith("(") and inner.endswith(")")):
                raise PredicateError(
                    f"table {table}, column {col}: 'in' takes a list in parentheses: {text!r}"
                )
            literals = [_unquote(v) for v in _split_list(inner[1:-1])]
        else:
            literals = [_unquote(raw)]
        try:
            typed = pa.array(literals, pa.string()).cast(htypes.arrow_type(hive_type)).to_pylist()
        except (pa.ArrowException, ValueError) as exc:
            raise PredicateError(
                f"table {table}, column {col} ({hive_type}): {text!r}: not a {hive_type}: {exc}"
            ) from None
        items.append((col, op, typed if op == "in" else typed[0]))
    return parse_where(items, columns, partition_columns, table=table)


def _split_list(text: str) -> list[str]:
    """``a, 'b,c', d`` -> the three literals (commas inside quotes kept)."""
    out, cur, quote = [], "", ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            cur += ch
        elif ch == ",":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [v for v in out if v.strip()]


def describe(where: Sequence[Predicate]) -> str:
    """The conjunction as text (``a = 1 AND b IS NULL``), for logs and ``explain()``."""
    return " AND ".join(str(p) for p in where)
