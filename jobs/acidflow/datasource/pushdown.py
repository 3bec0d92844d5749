"""Spark's pushed filters (``pyspark.sql.datasource.Filter``, PySpark 4.1+) as acidflow row
filters (:mod:`acidflow.read.predicates`), for :meth:`acidflow.datasource.read.AcidReader.pushFilters`.

Translated (on a top-level column of the table, literal values): ``EqualTo`` (``=``),
``Not(EqualTo)`` (``!=``), ``GreaterThan`` / ``GreaterThanOrEqual`` / ``LessThan`` /
``LessThanOrEqual``, ``In``, ``IsNull``, ``IsNotNull``. Not pushed (Spark evaluates them):
``EqualNullSafe``, other ``Not`` s, ``StringStartsWith`` / ``EndsWith`` / ``Contains``,
nested column paths, literals that do not compare with the column's type.

A pushed filter is applied exactly by the scan (``read_task(where=)``); it is *consumed*
(not returned to Spark, and listed as ``PushedFilters`` by ``df.explain("formatted")``) when
the column's type compares the same in Arrow as in Spark: partition columns, and data
columns of the types in :data:`EXACT_TYPES` (integers, ``string``, ``decimal``, ``date``,
``timestamp``, ``boolean``). Filters on ``float`` / ``double`` (NaN orders differently),
``char`` / ``varchar`` (padding, length semantics) and ``binary`` columns are pushed for
stripe skipping and still returned, so Spark evaluates them too.
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

from acidflow.format import types as htypes
from acidflow.read import predicates

#: Hive types whose comparisons Arrow (the scan) and Spark evaluate alike (module doc)
EXACT_TYPES = ("tinyint", "smallint", "int", "bigint", "string", "date", "timestamp", "boolean")

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
    target: Filter = f
    if isinstance(f, Not):
        if type(f.child) is not EqualTo:
            return None
        target, op = f.child, "!="
    else:
        found = _OPS.get(type(f))
        if found is None:
            return None
        op = found
    path: tuple[str, ...] = getattr(target, "attribute", ())
    if len(path) != 1:
        return None
    value = getattr(target, "value", None)
    return predicates.Predicate(path[0], op, value)


def pushed_predicates(
    filters: Sequence[Filter],
    columns: Sequence[tuple[str, str]],
    partition_columns: Sequence[tuple[str, str]],
) -> tuple[list[predicates.Predicate], list[Filter]]:
    """Split Spark's filters for a scan of a table with these columns.

    Returns:
        ``(pushed, still for Spark)``: the row filter the scan applies (checked with
        :func:`~acidflow.read.predicates.parse_where`), and the filters Spark must still
        evaluate -- the ones not pushed and those on columns whose type Spark compares
        otherwise (module doc); the others are consumed.
    """
    types = dict([*columns, *partition_columns])
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
        if checked.column not in pnames and not exact(types[checked.column]):
            rest.append(f)
    return pushed, rest


def exact(hive_type: str) -> bool:
    """Whether a filter on a data column of this Hive type may be consumed (module doc)."""
    t = htypes.normalize(hive_type)
    return t in EXACT_TYPES or t.startswith("decimal(")
