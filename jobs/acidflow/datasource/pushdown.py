"""Spark's pushed filters (``pyspark.sql.datasource.Filter``, PySpark 4.1+) as acidflow row
filters (:mod:`acidflow.read.predicates`), for :meth:`acidflow.datasource.read.AcidReader.pushFilters`.

Translated (on a top-level column of the table, literal values): ``EqualTo`` (``=``),
``Not(EqualTo)`` (``!=``), ``GreaterThan`` / ``GreaterThanOrEqual`` / ``LessThan`` /
``LessThanOrEqual``, ``In``, ``IsNull``, ``IsNotNull``. Not pushed (Spark evaluates them):
``EqualNullSafe``, other ``Not`` s, ``StringStartsWith`` / ``EndsWith`` / ``Contains``,
nested column paths, literals that do not compare with the column's type.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from acidflow.read import predicates

_OPS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
    In: "in",
    IsNull: "is null",
    IsNotNull: "is not null",
}


def to_predicate(f: Filter) -> predicates.Predicate | None:
    """One Spark filter as a :class:`~acidflow.read.predicates.Predicate` (unchecked against
    the table), or None when its form is not pushed (module doc)."""
    op = _OPS.get(type(f))
    negated = isinstance(f, Not) and type(f.child) is EqualTo
    target = f.child if negated else f
    if op is None and not negated:
        return None
    path = getattr(target, "attribute", ())
    if len(path) != 1:
        return None
    value = getattr(target, "value", None)
    return predicates.Predicate(path[0], "!=" if negated else str(op), value)


def pushed_predicates(
    filters: Sequence[Filter],
    columns: Sequence[tuple[str, str]],
    partition_columns: Sequence[tuple[str, str]],
) -> tuple[list[predicates.Predicate], list[Filter]]:
    """Split Spark's filters for a scan of a table with these columns.

    Returns:
        ``(pushed, still for Spark)``: the row filter the scan applies (checked with
        :func:`~acidflow.read.predicates.parse_where`), and the filters Spark must still
        evaluate -- the ones not pushed and the ones on data columns (the scan skips work
        and filters exactly, Spark re-checks them); pushed filters on partition columns are
        consumed (the scan applies them exactly).
    """
    pnames = {n for n, _ in partition_columns}
    pushed: list[predicates.Predicate] = []
    rest: list[Filter] = []
    for f in filters:
        pred = to_predicate(f)
        if pred is None:
            rest.append(f)
            continue
        try:
            (checked,) = predicates.parse_where([pred], columns, partition_columns)
        except predicates.PredicateError:
            rest.append(f)
            continue
        pushed.append(checked)
        if checked.column not in pnames:
            rest.append(f)
    return pushed, rest
