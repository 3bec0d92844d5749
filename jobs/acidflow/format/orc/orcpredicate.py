"""Predicate pushdown into ORC files: which stripes of a data file may hold a row matching a
conjunction of simple column predicates, from what the file already says about each stripe --
its column statistics (min/max, ``hasNull``, number of values) and, for ``=`` / ``in``, its
bloom filters (ORC's ``SearchArgument`` / ``RecordReaderImpl.pickRowGroups`` at stripe level,
Trino's ``TupleDomainOrcPredicate``).

Pure file-format code on top of :mod:`acidflow.format.orc.orcindex` (its tail parser, its
statistics, its bloom filter hashing and its consistency rule for the statistics of Hive
streaming files): bytes in, a :class:`~acidflow.format.orc.orcindex.StripeVerdict` out.

Soundness (a stripe is skipped only when it is *proven* that no row of it matches):

* A condition is used only when the file column's values read as the table column's type
  without any change (:func:`lossless_domain`): integers read into an integer type at least
  as wide, ``string``/``varchar`` files read as ``string``, decimals into a decimal with at
  least as many integer and fraction digits, dates as dates. Schema evolution that changes
  values (a narrower type, a ``varchar(n)`` that truncates, a decimal that rounds, a change of
  type family) keeps the stripe; statistics of a widened column are in the old type, compared
  by value.
* A column the file lacks (added after the file was written) reads as NULL in every row:
  only ``is null`` can match it, every other condition proves the stripe empty.
* Statistics bound every event of the stripe, delete events included; a stripe of insert
  events skipped this way has no matching row, visible or not -- delete events of delete
  deltas are read in full by the caller, never skipped.
* Timestamps, floating point, booleans, char and binary columns, values of another Python
  type than the column's natural one (``int`` for integers, ``str`` for strings, ``Decimal``
  / ``int`` for decimals, ``date`` for dates), statistics that are absent, inconsistent
  (:func:`~acidflow.format.orc.orcindex.consistent_stats`) or of a codec this module does not
  read: the stripe is kept.
"""

from __future__ import annotations

import datetime as _dt
import zlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, BinaryIO, Sequence

import numpy as np
import pyarrow as pa

from acidflow.format import types as htypes
from acidflow.format.orc import orcindex
from acidflow.format.orc.orcfooter import OrcFooterError
from acidflow.format.orc.orcindex import (
    DATE,
    DAYS,
    DEC,
    DECIMAL,
    INTEGER,
    STRING,
    TEXT,
    VARCHAR,
    ColumnStats,
    KeyValues,
    OrcTailIndex,
    OrcType,
    StripeVerdict,
)

#: the comparison operators of :class:`ColumnCondition`
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
#: every operator of :class:`ColumnCondition`
OPS = (*COMPARISONS, "in", "is null", "is not null")

_WIDTH = {orcindex.BYTE: 8, orcindex.SHORT: 16, orcindex.INT: 32, orcindex.LONG: 64}
_EPOCH = _dt.date(1970, 1, 1)
_ARROW = {INTEGER: pa.int64(), TEXT: pa.string(), DAYS: pa.date32()}


@dataclass(frozen=True)
class ColumnCondition:
    """One predicate on one data column of a file.

    Attributes:
        position: the column's position among the file's data columns (the ``row`` struct's
            fields of an ACID event file, the root struct's of an original file); None when
            the file lacks it (it reads as NULL).
        op: one of :data:`OPS`.
        values: the literal (one for a comparison, the non-NULL list for ``in``, none for the
            NULL tests), as Python values of the table column's type.
        hive_type: the table column's Hive type (what the rows are read as).
    """

    position: int | None
    op: str
    values: tuple[Any, ...]
    hive_type: str


def lossless_domain(otype: OrcType, hive_type: str) -> str | None:
    """The comparison domain (``orcindex.INTEGER`` / ``TEXT`` / ``DEC`` / ``DAYS``) of a file
    column of ORC type ``otype`` read as ``hive_type`` when reading keeps every value
    unchanged (module doc), else None (the file column's statistics cannot decide)."""
    target = htypes.arrow_type(hive_type)
    if otype.kind in _WIDTH and pa.types.is_integer(target):
        return INTEGER if target.bit_width >= _WIDTH[otype.kind] else None
    if otype.kind in (STRING, VARCHAR) and htypes.normalize(hive_type) == "string":
        return TEXT
    if otype.kind == DECIMAL and pa.types.is_decimal(target) and otype.precision > 0:
        wide = target.precision - target.scale >= otype.precision - otype.scale
        return DEC if wide and target.scale >= otype.scale else None
    if otype.kind == DATE and pa.types.is_date32(target):
        return DAYS
    return None


def domain_value(domain: str, value: Any) -> Any:
    """``value`` as the statistics of ``domain`` hold values (``int``, UTF-8 ``bytes``,
    ``Decimal``, days since 1970-01-01), or None when its Python type is not the domain's
    natural one (the condition then keeps every stripe)."""
    if domain == INTEGER and isinstance(value, int) and not isinstance(value, bool):
        return value
    if domain == TEXT and isinstance(value, str):
        return value.encode("utf-8")
    if domain == DEC and isinstance(value, (Decimal, int)) and not isinstance(value, bool):
        d = Decimal(value)
        return d if d.is_finite() else None
    if domain == DAYS and isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return (value - _EPOCH).days
    return None


def stats_may_match(stats: ColumnStats | None, op: str, values: Sequence[Any]) -> bool:
    """Whether a stripe whose column statistics are ``stats`` (None: unknown) may hold a row
    with ``column <op> values`` (``values`` in the domain's form, :func:`domain_value`).

    SQL semantics: a comparison or ``in`` never matches NULL; ``is null`` needs ``hasNull``
    not False. Truncated string bounds (ORC-203) still bound every value, so only ``!=``
    (which needs exact bounds) ignores them."""
    if stats is None:
        return True
    if op == "is null":
        return stats.has_null is not False
    if op == "is not null":
        return stats.values != 0
    if stats.values == 0 and stats.has_null is not None:
        return False  # no non-NULL value: no comparison holds
    lo, hi = stats.minimum, stats.maximum
    if lo is None or hi is None:
        return True
    if op == "in":
        return any(lo <= v <= hi for v in values)
    v = values[0]
    if op == "=":
        return bool(lo <= v <= hi)
    if op == "!=":
        return stats.truncated or not (lo == v == hi)
    if op == "<":
        return bool(lo < v)
    if op == "<=":
        return bool(lo <= v)
    if op == ">":
        return bool(hi > v)
    if op == ">=":
        return bool(hi >= v)
    return True


def stripes_matching(
    fh: BinaryIO,
    tail: OrcTailIndex,
    columns: Sequence[int | None],
    conditions: Sequence[ColumnCondition],
    *,
    blooms: bool = True,
) -> StripeVerdict:
    """Which stripes of a file may hold a row matching every condition.

    Args:
        fh: the open file; tail: its :func:`orcindex.read_tail_index`.
        columns: per condition, the file's type id of its column (None: the file lacks it).
        conditions: the conjunction.
        blooms: for ``=`` / ``in`` with at most :data:`orcindex.BLOOM_MAX_KEYS` values on an
            integer, string or date column, also test the stripe's bloom filters (two more
            reads per stripe the statistics kept; used only when the file has them).
    Raises:
        orcindex.OrcIndexError: malformed statistics or bloom filter bytes.
    """
    n = len(tail.stripes)
    rows = [s.rows for s in tail.stripes]
    verdict = StripeVerdict([True] * n, rows, indexed=False)
    usable: list[tuple[int, ColumnCondition, str, list[Any]]] = []
    for col, cond in zip(columns, conditions):
        if col is None:
            if cond.op != "is null":  # every row reads NULL: nothing else matches
                return StripeVerdict([False] * n, rows, by_stats=n)
            continue
        if col >= len(tail.types):
            continue
        domain = lossless_domain(tail.types[col], cond.hive_type)
        if domain is None:
            continue
        dvalues = [domain_value(domain, v) for v in cond.values]
        if any(v is None for v in dvalues):
            continue
        usable.append((col, cond, domain, dvalues))
    if not usable:
        return verdict
    verdict.indexed = True
    no_blooms: set[int] = set()
    for s in range(n):
        if not all(
            stats_may_match(orcindex.consistent_stats(tail.column_stats(s, col), rows[s]), c.op, v)
            for col, c, _, v in usable
        ):
            verdict.keep[s] = False
            verdict.by_stats += 1
            continue
        if not blooms:
            continue
        streams = None
        for col, cond, domain, _ in usable:
            if (
                col in no_blooms
                or cond.op not in ("=", "in")
                or domain not in _ARROW
                or len(cond.values) > orcindex.BLOOM_MAX_KEYS
            ):
                continue
            streams = streams if streams is not None else orcindex.stripe_streams(fh, tail, s)
            filters = orcindex.read_bloom_filters(
                fh,
                tail,
                s,
                col,
                kinds=(orcindex.BLOOM_FILTER_UTF8,)
                if domain == TEXT
                else (orcindex.BLOOM_FILTER_UTF8, orcindex.BLOOM_FILTER),
                streams=streams,
            )
            if filters is None:
                no_blooms.add(col)  # writers put bloom filters in every stripe or in none
                continue
            kv = KeyValues.of(pa.array(list(cond.values), _ARROW[domain]), domain)
            if not orcindex.bloom_mask(filters, kv).any():
                verdict.keep[s] = False
                verdict.by_bloom += 1
                break
    return verdict


def file_stripes_matching(
    fh: BinaryIO, *, acid: bool, conditions: Sequence[ColumnCondition], blooms: bool = True
) -> StripeVerdict:
    """:func:`stripes_matching` for an open data file (an ACID event file when ``acid``, else
    an original file). A tail this module cannot parse keeps every stripe (pushdown is never
    needed for correctness)."""
    fh.seek(0, 2)
    size = fh.tell()
    try:
        tail = orcindex.read_tail_index(fh, size)
        if not tail.readable or not tail.types:
            return StripeVerdict(
                [True] * len(tail.stripes), [s.rows for s in tail.stripes], indexed=False
            )
        data_ids = tail.data_column_ids(acid)
        columns = [
            data_ids[c.position] if c.position is not None and c.position < len(data_ids) else None
            for c in conditions
        ]
        return stripes_matching(fh, tail, columns, conditions, blooms=blooms)
    except (OrcFooterError, IndexError, ValueError, zlib.error, pa.ArrowException):
        return StripeVerdict([], indexed=False)


def both(a: StripeVerdict | None, b: StripeVerdict | None) -> StripeVerdict | None:
    """The stripes both verdicts read (a verdict with no stripes reads every stripe); None
    when both are None."""
    if a is None or b is None:
        return a if b is None else b
    if not a.keep or not b.keep:
        return b if not a.keep else a
    keep = list(np.logical_and(a.keep, b.keep))
    return StripeVerdict(
        [bool(k) for k in keep],
        a.rows or b.rows,
        a.by_stats + b.by_stats,
        a.by_bloom + b.by_bloom,
        a.indexed or b.indexed,
    )
