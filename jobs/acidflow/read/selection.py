"""The columns and rows a read returns: ``read_table(columns=...)``'s output columns (and the
data columns they decode), and a row filter (:mod:`acidflow.read.predicates`) as a Spark
condition for the executors that let Spark filter."""

from __future__ import annotations

from typing import Any, Sequence

from acidflow.errors import AcidflowError
from acidflow.read import predicates, snapshot


class UnknownColumnError(AcidflowError, ValueError):
    """``read_table(columns=...)`` names a column the table does not have (names the table and
    the columns)."""


def output_columns(
    plan: snapshot.ReadPlan, columns: Sequence[str] | None, row_id: bool, file_name: bool
) -> tuple[list[str] | None, bool, bool, list[str] | None]:
    """What a read with ``columns`` decodes and returns: ``(project, row_id, file_name,
    order)`` -- the data columns to read (ORC column projection; None = all), whether
    ``ROW__ID`` / ``INPUT__FILE__NAME`` are read (asked by flag or named), and the output
    columns in order (None = the plan's full output). Names match case-insensitively.

    Raises:
        UnknownColumnError: a name that is neither a data column, a partition column,
            ``ROW__ID`` nor ``INPUT__FILE__NAME``.
    """
    if columns is None:
        return None, row_id, file_name, None
    known = [n for n, _ in plan.columns] + [n for n, _ in plan.partition_columns]
    known += [snapshot.ROW_ID, snapshot.INPUT_FILE_NAME]
    by_lower = {n.lower(): n for n in known}
    order = []
    for c in columns:
        name = by_lower.get(str(c).lower())
        if name is None:
            raise UnknownColumnError(
                f"table {plan.table_dir}: no column {c!r} to read (columns: {', '.join(known)})"
            )
        if name not in order:
            order.append(name)
    row_id = row_id or snapshot.ROW_ID in order
    file_name = file_name or snapshot.INPUT_FILE_NAME in order
    for flag, extra in ((row_id, snapshot.ROW_ID), (file_name, snapshot.INPUT_FILE_NAME)):
        if flag and extra not in order:
            order.append(extra)
    data = {n for n, _ in plan.columns}
    return [n for n in order if n in data], row_id, file_name, order


def spark_condition(where: Sequence[predicates.Predicate]) -> Any:
    """A row filter as one Spark ``Column`` (SQL semantics: a NULL result drops the row)."""
    # deferred: pyspark only for Spark reads
    from pyspark.sql import functions as F

    cond = F.lit(True)
    for p in where:
        col = F.col(f"`{p.column}`")
        if p.op == "is null":
            c = col.isNull()
        elif p.op == "is not null":
            c = col.isNotNull()
        elif p.op == "in":
            c = col.isin(list(p.value)) if p.value else F.lit(False)
        else:
            lit = F.lit(p.value)
            c = {
                "=": col == lit,
                "!=": col != lit,
                "<": col < lit,
                "<=": col <= lit,
                ">": col > lit,
                ">=": col >= lit,
            }[p.op]
        cond = cond & c
    return cond
