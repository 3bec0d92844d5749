"""Predicate UPDATE and DELETE of a full-ACID table (Hive ``UPDATE t SET ... WHERE ...`` and
``DELETE FROM t WHERE ...``; Delta's ``DeltaTable.update`` / ``delete``), and the parts the MERGE
builder (:mod:`acidflow.engine.statements.merge`) shares with them.

The rows are found with the merge-on-read reader at the transaction's snapshot
(``acidflow.engine.lookup.plan_current``: its own ``ValidWriteIdList``, so earlier statements of
the same transaction are seen), with ``ROW__ID``; a predicate that names partition columns only
reads only the partitions it keeps. Then one split-update statement
(docs/hive-acid-format.md §5): a delete event for each matched ROW__ID in
``delete_delta_W_W_S`` and, for UPDATE, an insert event of the new version in ``delta_W_W_S``.
Unkeyed tables work the same way (the ROW__ID names the row).

Predicates and values are Spark ``Column`` expressions or Spark SQL strings (``F.expr``); the
target's columns can be written bare or as ``t.<col>``. A new value is cast to its column's type
(as Hive casts an assigned value).

Refused before anything is written (:class:`DmlError`): an unknown column, and -- Hive's
``UpdateDeleteSemanticAnalyzer`` rules, "Updating values of bucketing columns is not supported"
and the same for partition columns -- an UPDATE of a bucketing or partition column, and
(acidflow) of a primary key column: a key change is a delete plus an insert.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Union

from acidflow.engine import lookup
from acidflow.engine.ports import StatementContext
from acidflow.engine.writer import WriteResult, write_delete_events
from acidflow.errors import AcidflowError
from acidflow.format.partitions import parse_partition_path
from acidflow.format.table import TableDesc
from acidflow.read import snapshot
from acidflow.states import LockType

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


#: a predicate or a value: a Spark Column, or a Spark SQL expression string
Expr = Union[str, "Column"]

#: alias of the target table's rows in predicates and values (MERGE's source is ``s``)
TARGET = "t"


class DmlError(AcidflowError, ValueError):
    """An UPDATE, DELETE or MERGE refused before anything was written (the message names the
    table, the column or key, and why)."""


def to_column(expr: Any, *, what: str) -> "Column":
    """A Spark Column of a predicate or value: Columns as they are, strings parsed as Spark
    SQL (``F.expr``; Spark parses them when the statement's DataFrames are built, inside
    :func:`analysis_errors`), other Python values as literals.

    Raises:
        DmlError: ``None`` or an empty string, naming ``what``.
    """
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(expr, Column):
        return expr
    if isinstance(expr, str):
        if not expr.strip():
            raise DmlError(f"{what}: empty expression")
        return F.expr(expr)
    if expr is None:
        raise DmlError(f"{what}: no expression (None)")
    return F.lit(expr)


@contextmanager
def analysis_errors(what: str) -> Iterator[None]:
    """Turn Spark's parse and analysis errors (bad SQL text, unknown columns, type errors) of
    a statement's predicates and values into :class:`DmlError` naming ``what``. Spark parses
    ``F.expr`` text lazily, so this wraps the building of the statement's DataFrames, before
    anything is written."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.errors import AnalysisException, ParseException

    try:
        yield
    except (ParseException, AnalysisException) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DmlError(
            f"{what}: not a valid Spark SQL expression over the table's columns: {first}"
        ) from None


def assignable_columns(table: TableDesc, names: Any, statement: str) -> dict[str, str]:
    """``{given name: table column name}`` of the columns an UPDATE (or MERGE's update
    clause) sets, matched case-insensitively.

    Raises:
        DmlError: no column given, an unknown column, a partition column, a bucketing column
            or a primary key column (the first two are Hive's own refusals).
    """
    if not names:
        raise DmlError(f"{statement} {table.name}: no column to set")
    data = {c.name.lower(): c.name for c in table.columns}
    pcols = {c.name.lower() for c in table.partition_columns}
    buckets = {b.lower() for b in table.bucket_columns} if table.num_buckets > 0 else set()
    key = {k.lower() for k in table.primary_key}
    out = {}
    for given in names:
        low = str(given).strip().lower()
        if low in pcols:
            raise DmlError(
                f"{statement} {table.name}: updating values of partition columns is "
                f"not supported (column {given!r}; Hive refuses it too)"
            )
        if low in buckets:
            raise DmlError(
                f"{statement} {table.name}: updating values of bucketing columns is "
                f"not supported (column {given!r}; Hive refuses it too)"
            )
        if low in key:
            raise DmlError(
                f"{statement} {table.name}: column {given!r} is part of the primary "
                "key, which an update may not change (delete the row and insert "
                "the new key instead)"
            )
        if low not in data:
            raise DmlError(
                f"{statement} {table.name}: no column {given!r} (columns: {', '.join(data)})"
            )
        out[str(given)] = data[low]
    return out


def target_rows(
    spark: "SparkSession",
    txn: StatementContext,
    table: TableDesc,
    where: "Column | None" = None,
    partitions: set[str] | None = None,
) -> "DataFrame":
    """The table's visible rows at the transaction's snapshot, every column plus ``ROW__ID``,
    aliased :data:`TARGET`. When ``where`` can be evaluated on the partition columns alone,
    only the partitions it keeps are read (the predicate is still applied by the caller);
    ``partitions`` (partition paths) narrows the read the same way."""
    current = lookup.plan_current(txn.catalog, table, txn)
    plan = current.plan
    keep = partitions
    if where is not None and table.partition_columns and plan.states:
        kept = _partitions_kept(spark, table, list(plan.states), where)
        if kept is not None:
            keep = kept if keep is None else keep & kept
    if keep is not None and table.partition_columns:
        plan = replace(plan, tasks=[t for t in plan.tasks if t.partition in keep])
    return snapshot.read_spark(spark, current.table_dir, plan, row_id=True).alias(TARGET)


def _partitions_kept(
    spark: "SparkSession", table: TableDesc, paths: list[str], where: "Column"
) -> set[str] | None:
    """The partition paths whose values satisfy ``where``, or None when ``where`` names
    other columns too (then every partition is read).

    Which columns ``where`` names is read from Spark's analysis of it over a frame that has
    every column of the table (data columns as typed NULLs), so a predicate on data columns
    is never an analysis error (PySpark logs every one at ERROR level, with its stack)."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from acidflow import sparktypes  # deferred: it imports pyspark

    pcols = [c.name for c in table.partition_columns]
    rows = []
    for path in paths:
        values = dict(parse_partition_path(path)) if path else {}
        rows.append(tuple([path] + [values.get(p) for p in pcols]))
    try:
        named = _columns_named(spark, table, where)
    except AnalysisException:  # not a predicate on the table: the statement reports it
        return None
    if named is not None and not named <= {p.lower() for p in pcols}:
        return None
    schema = T.StructType(
        [T.StructField("_acid_path", T.StringType())]
        + [T.StructField(p, T.StringType()) for p in pcols]
    )
    frame = (
        spark.createDataFrame(rows, schema)
        .select(
            "_acid_path",
            *[
                F.col(c.name).cast(sparktypes.spark_type(c.hive_type)).alias(c.name)
                for c in table.partition_columns
            ],
        )
        .alias(TARGET)
    )
    try:
        kept = frame.where(where).select("_acid_path").collect()
    except AnalysisException:
        return None
    return {r[0] for r in kept}


def _columns_named(spark: "SparkSession", table: TableDesc, where: "Column") -> set[str] | None:
    """The table columns (lower case) ``where`` refers to, from the analyzed plan of a filter
    over a one-row frame of every table column; None when that cannot be told (a session
    without the JVM plan, e.g. Spark Connect)."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    from acidflow import sparktypes  # deferred: it imports pyspark

    columns = [*table.columns, *table.partition_columns]
    probe = (
        spark.range(1)
        .select(
            *[F.lit(None).cast(sparktypes.spark_type(c.hive_type)).alias(c.name) for c in columns]
        )
        .alias(TARGET)
        .where(where)
    )
    jdf = getattr(probe, "_jdf", None)
    if jdf is None:
        return None
    refs = jdf.queryExecution().analyzed().condition().references().toList()
    return {str(refs.apply(i).name()).lower() for i in range(refs.size())}


def row_ids(df: "DataFrame", table: TableDesc, alias: str = TARGET) -> "DataFrame":
    """The delete-event input of rows read with ``ROW__ID`` (the target aliased ``alias``):
    partition columns, ``owid``, ``bprop``, ``rowid``."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    rid = snapshot.ROW_ID
    return df.select(
        *[F.col(f"{alias}.`{c.name}`").alias(c.name) for c in table.partition_columns],
        F.col(f"{alias}.{rid}.writeid").alias("owid"),
        F.col(f"{alias}.{rid}.bucketid").alias("bprop"),
        F.col(f"{alias}.{rid}.rowid").alias("rowid"),
    )


def update(
    txn: StatementContext,
    table_name: str,
    where: Expr | None,
    set_: Mapping[str, Any],
    **options: Any,
) -> WriteResult:
    """``UPDATE table SET col = value, ... [WHERE where]`` as one split-update statement.

    Args:
        txn: the open transaction.
        table_name: ``db.table``.
        where: predicate on the target's columns (None = every row).
        set_: ``{column: value}``; values are Columns, SQL strings (a string literal must be
            quoted: ``"'closed'"``) or Python literals, cast to the column's type.
        **options: writer options (``compression``, ``stripe_rows``).
    Returns:
        :class:`WriteResult` with ``rows_updated``.
    Raises:
        DmlError: see the module doc; nothing written.
    """
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    from acidflow import sparktypes  # deferred: it imports pyspark

    table = txn.catalog.get_table(table_name)
    targets = assignable_columns(table, list(set_), "update")
    values = {
        targets[k]: to_column(v, what=f"update {table.name} set {k}") for k, v in set_.items()
    }
    cond = to_column(where, what=f"update {table.name} where") if where is not None else None
    spark = txn.session()
    txn.lock_table(table, LockType.SHARED_WRITE)
    with analysis_errors(f"update {table.name}"):
        rows = target_rows(spark, txn, table, cond)
        matched = rows.where(cond) if cond is not None else rows
        new_rows = matched.select(
            *[
                (
                    values[c.name].cast(sparktypes.spark_type(c.hive_type))
                    if c.name in values
                    else F.col(f"{TARGET}.`{c.name}`")
                ).alias(c.name)
                for c in [*table.columns, *table.partition_columns]
            ]
        )
    matched = matched.cache()
    try:
        n = matched.count()
        return txn.split_update(
            table,
            new_rows,
            row_ids(matched, table),
            "update",
            {"rows_updated": n, "rows_inserted": 0, "rows_deleted": 0},
            **options,
        )
    finally:
        matched.unpersist()


def delete_where(
    txn: StatementContext, table_name: str, where: "Expr | bool | None", **options: Any
) -> WriteResult:
    """``DELETE FROM table WHERE where``: a delete event for every matching row.

    Args:
        where: predicate on the target's columns; ``True``/``"true"`` deletes every row (a
            predicate is required so that "delete everything" is said on purpose).
    Returns:
        :class:`WriteResult` with ``rows_deleted``.
    Raises:
        DmlError: a bad SQL string; nothing written.
    """
    table = txn.catalog.get_table(table_name)
    if where is None:
        raise DmlError(
            f"delete from {table.name}: a predicate is required (where=True deletes every row)"
        )
    cond = to_column(where, what=f"delete from {table.name} where")
    spark = txn.session()
    txn.lock_table(table, LockType.SHARED_WRITE)
    with analysis_errors(f"delete from {table.name}"):
        matched = target_rows(spark, txn, table, cond).where(cond)
        deletes = row_ids(matched, table).cache()
    try:
        (spec,) = txn.begin_statement(table, "delete", **options)
        files = write_delete_events(deletes, table, spec)
        return txn.end_statement(
            table,
            "delete",
            [(spec, files)],
            [(p, "delete") for p in sorted({f["partition"] for f in files})],
            {"rows_deleted": sum(f["rows"] for f in files)},
        )
    finally:
        deletes.unpersist()
