"""MERGE INTO a full-ACID table, in the builder shape of Delta's ``DeltaTable.merge`` (and the
clauses of Hive's and ANSI SQL's ``MERGE``)::

    (txn.merge("db.accounts", updates_df, on="t.aid = s.aid")      # or on=["aid"]
        .when_matched_delete(condition="s.closed")
        .when_matched_update(set={"bal": "t.bal + s.delta"})
        .when_not_matched_insert(values={"aid": "s.aid", "bal": "s.delta"})
        .execute())                                                 # -> WriteResult

Aliases: ``t`` is the target table, ``s`` the source DataFrame (``target_alias`` /
``source_alias`` change them). Conditions, ``on`` and values are Spark ``Column`` expressions
or Spark SQL strings. Clauses are evaluated in the order given; for each row the first
clause whose condition holds acts (SQL's and Delta's rule), a row no clause takes is left alone.

The target's rows are read with the merge-on-read reader at the transaction's snapshot, with
``ROW__ID``; the whole MERGE is one split-update statement (docs/hive-acid-format.md §5): a
delete event for every matched row that is updated or deleted, an insert event for every new
version and every inserted row, so the write-set rules (partition-level for update/delete,
key-level for keyed tables) apply as for an upsert.

Refused before anything is written (:class:`acidflow.engine.statements.dml.DmlError`):

* a target row matched by two or more source rows while a matched clause exists -- Hive's
  ``hive.merge.cardinality.check`` and Delta's "multiple source rows matched" error
  (:class:`CardinalityViolationError`, naming the target row's key);
* an update clause setting a partition, bucketing or primary key column
  (:func:`acidflow.engine.statements.dml.assignable_columns`);
* for a keyed table, new rows that would repeat a primary key (two inserts, or an insert of a
  key the target holds but ``on`` did not match), or an insert without every key column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from acidflow.engine.ports import StatementContext
from acidflow.engine.statements import dml
from acidflow.engine.statements.dml import DmlError, Expr
from acidflow.engine.writer import WriteResult
from acidflow.format import keys
from acidflow.format.partitions import make_partition_path
from acidflow.format.table import TableDesc
from acidflow.read import snapshot
from acidflow.states import LockType

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


_ACTION = "_acid_action"


class CardinalityViolationError(DmlError):
    """Two or more source rows match one target row of a MERGE that updates or deletes."""


@dataclass
class _Clause:
    kind: str  # "update" | "delete" | "insert"
    condition: Any
    values: Mapping[str, Any] | None  # None: insert every column by name


class MergeBuilder:
    """A MERGE statement being built; :meth:`execute` runs it in the transaction.

    Args:
        txn: the open transaction.
        table_name: target ``db.table``.
        source: Spark DataFrame of source rows.
        on: join condition (Column or SQL string over ``t`` and ``s``), or a list of column
            names equal in target and source.
        target_alias, source_alias: default ``t`` and ``s``.
    """

    def __init__(
        self,
        txn: StatementContext,
        table_name: str,
        source: "DataFrame",
        on: "Expr | Sequence[str]",
        *,
        target_alias: str = dml.TARGET,
        source_alias: str = "s",
        **options: Any,
    ):
        self._txn = txn
        self._table_name = table_name
        self._source = source
        self._on = on
        self._t = target_alias
        self._s = source_alias
        self._options = options
        self._clauses: list[_Clause] = []

    def when_matched_update(
        self,
        set: Mapping[str, Any],  # noqa: A002 - Delta's name
        condition: Expr | None = None,
    ) -> "MergeBuilder":
        """Update matched target rows: ``{column: value}`` (values over ``t`` and ``s``)."""
        self._clauses.append(_Clause("update", condition, dict(set)))
        return self

    def when_matched_update_all(self, condition: Expr | None = None) -> "MergeBuilder":
        """Update every data column that may change (not key, bucketing or partition
        columns) from the source column of the same name."""
        self._clauses.append(_Clause("update", condition, None))
        return self

    def when_matched_delete(self, condition: Expr | None = None) -> "MergeBuilder":
        """Delete matched target rows."""
        self._clauses.append(_Clause("delete", condition, None))
        return self

    def when_not_matched_insert(
        self, values: Mapping[str, Any] | None = None, condition: Expr | None = None
    ) -> "MergeBuilder":
        """Insert source rows no target row matches: ``{column: value}`` (values over ``s``;
        columns left out are NULL), or every table column from the source column of the
        same name (``values=None``)."""
        self._clauses.append(_Clause("insert", condition, None if values is None else dict(values)))
        return self

    def execute(self) -> WriteResult:
        """Run the MERGE as one split-update statement of the transaction.

        Returns:
            :class:`WriteResult` with ``rows_updated``, ``rows_deleted``, ``rows_inserted``.
        Raises:
            acidflow.engine.statements.dml.DmlError / CardinalityViolationError: see the module doc;
                nothing written.
            acidflow.catalog.errors.WriteConflictError: at commit, as for upsert.
        """
        return _execute(self)


def _execute(b: MergeBuilder) -> WriteResult:
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    txn = b._txn
    table = txn.catalog.get_table(b._table_name)
    what = f"merge into {table.name}"
    if not b._clauses:
        raise DmlError(f"{what}: no when_matched / when_not_matched clause")
    src_cols = {c.lower(): c for c in b._source.columns}
    t, s = b._t, b._s

    def tcol(name: str) -> "Column":
        return F.col(f"{t}.`{name}`")

    def scol(name: str) -> "Column":
        return F.col(f"{s}.`{src_cols[name.lower()]}`")

    def cond_of(c: _Clause, i: int) -> "Column":
        return (
            F.lit(True)
            if c.condition is None
            else dml.to_column(c.condition, what=f"{what}: condition of clause {i + 1}")
        )

    on = _on_condition(b, table, tcol, scol, what)
    matched_clauses: list[tuple[int, _Clause, dict[str, "Column"]]] = []
    insert_clauses: list[tuple[int, _Clause, dict[str, "Column"]]] = []
    for i, c in enumerate(b._clauses):
        if c.kind == "update":
            given = (
                c.values
                if c.values is not None
                else {
                    n.name: scol(n.name)
                    for n in table.columns
                    if n.name.lower() in src_cols and _settable(table, n.name)
                }
            )
            names = dml.assignable_columns(table, list(given), "merge into")
            vals = {names[k]: dml.to_column(v, what=f"{what} set {k}") for k, v in given.items()}
            matched_clauses.append((i, c, vals))
        elif c.kind == "delete":
            matched_clauses.append((i, c, {}))
        else:
            insert_clauses.append((i, c, _insert_values(table, c, src_cols, scol, what)))

    spark = txn.session(b._source)
    txn.lock_table(table, LockType.SHARED_WRITE)
    target = dml.target_rows(spark, txn, table, partitions=source_partitions(b, table)).alias(t)
    source = b._source.alias(s)

    frames: list["DataFrame"] = []
    try:
        with dml.analysis_errors(what):
            new_rows, deletes, counts = _plan(
                b,
                table,
                target,
                source,
                on,
                matched_clauses,
                insert_clauses,
                cond_of,
                tcol,
                frames,
                what,
            )
        return txn.split_update(table, new_rows, deletes, "merge", counts, **b._options)
    finally:
        for f in frames:
            f.unpersist()


def _plan(
    b: MergeBuilder,
    table: TableDesc,
    target: "DataFrame",
    source: "DataFrame",
    on: "Column",
    matched_clauses: list[tuple[int, _Clause, dict[str, "Column"]]],
    insert_clauses: list[tuple[int, _Clause, dict[str, "Column"]]],
    cond_of: Any,
    tcol: Any,
    frames: list["DataFrame"],
    what: str,
) -> tuple["DataFrame", "DataFrame", dict[str, int]]:
    """The MERGE's new rows (updated versions and inserts, table columns and types), the
    ROW__IDs to delete and the counts; refusals raised here, before anything is written.
    DataFrames to unpersist are appended to ``frames``."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    from acidflow import sparktypes  # deferred: it imports pyspark

    spark = target.sparkSession
    t = b._t
    rid = f"{t}.{snapshot.ROW_ID}"
    cols = [*table.columns, *table.partition_columns]
    counts = {"rows_updated": 0, "rows_deleted": 0, "rows_inserted": 0}
    acted = new_versions = inserts = None
    if matched_clauses:
        joined = target.join(source, on, "inner")
        _check_cardinality(joined, table, rid, tcol, what)
        action = _first_match([(i, cond_of(c, i)) for i, c, _ in matched_clauses])
        acted = joined.withColumn(_ACTION, action).where(F.col(_ACTION).isNotNull()).cache()
        frames.append(acted)
        by_action = {r[0]: r[1] for r in acted.groupBy(_ACTION).count().collect()}
        updates = [i for i, c, _ in matched_clauses if c.kind == "update"]
        counts["rows_updated"] = sum(by_action.get(i, 0) for i in updates)
        counts["rows_deleted"] = sum(n for i, n in by_action.items() if i not in updates)
        if updates:
            new_versions = acted.where(F.col(_ACTION).isin(updates)).select(
                *[
                    _choose(
                        tcol(c.name), [(i, v[c.name]) for i, _, v in matched_clauses if c.name in v]
                    )
                    .cast(sparktypes.spark_type(c.hive_type))
                    .alias(c.name)
                    for c in cols
                ]
            )
    if insert_clauses:
        unmatched = source.join(target, on, "left_anti")
        action = _first_match([(i, cond_of(c, i)) for i, c, _ in insert_clauses])
        chosen = unmatched.withColumn(_ACTION, action).where(F.col(_ACTION).isNotNull())
        inserts = chosen.select(
            *[
                _choose(F.lit(None), [(i, v[c.name]) for i, _, v in insert_clauses if c.name in v])
                .cast(sparktypes.spark_type(c.hive_type))
                .alias(c.name)
                for c in cols
            ]
        ).cache()
        frames.append(inserts)
        counts["rows_inserted"] = inserts.count()
    parts = [f for f in (new_versions, inserts) if f is not None]
    if not parts:
        new_rows = spark.createDataFrame(
            [], sparktypes.spark_schema([(c.name, c.hive_type) for c in cols])
        )
    else:
        new_rows = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    if table.primary_key:
        _check_keys(table, new_rows, inserts, target, acted, rid, t, what)
    if acted is not None:
        deletes = dml.row_ids(acted, table, t)
    else:
        deletes = spark.createDataFrame(
            [],
            sparktypes.spark_schema(
                [(c.name, c.hive_type) for c in table.partition_columns]
                + [("owid", "bigint"), ("bprop", "int"), ("rowid", "bigint")]
            ),
        )
    return new_rows, deletes, counts


def source_partitions(b: MergeBuilder, table: TableDesc) -> set[str] | None:
    """The partition paths a MERGE on key columns can touch: when ``on`` is a list naming
    every partition column (and, for a keyed table, the primary key holds every partition
    column too), only the partitions the source's rows name (values cast to the partition
    columns' types) are read; otherwise None (every partition)."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    from acidflow import sparktypes  # deferred: it imports pyspark

    pcols = table.partition_columns
    if not pcols or not isinstance(b._on, (list, tuple)):
        return None
    if table.primary_key and not keys.scope_rule(table)[0]:
        return None  # a key may sit in any partition: the key checks read them all
    on = {str(k).lower() for k in b._on}
    src = {c.lower(): c for c in b._source.columns}
    if not all(c.name.lower() in on and c.name.lower() in src for c in pcols):
        return None
    rows = (
        b._source.select(
            *[
                F.col(f"`{src[c.name.lower()]}`")
                .cast(sparktypes.spark_type(c.hive_type))
                .alias(c.name)
                for c in pcols
            ]
        )
        .distinct()
        .collect()
    )
    return {make_partition_path([(c.name, r[c.name]) for c in pcols]) for r in rows}


def _settable(table: TableDesc, name: str) -> bool:
    low = name.lower()
    fixed = {k.lower() for k in table.primary_key}
    if table.num_buckets > 0:
        fixed |= {k.lower() for k in table.bucket_columns}
    return low not in fixed


def _on_condition(b: MergeBuilder, table: TableDesc, tcol: Any, scol: Any, what: str) -> "Column":
    """The join condition: an expression, or equality of the named columns."""
    on = b._on
    if isinstance(on, (list, tuple)):
        if not on:
            raise DmlError(f"{what}: on= names no column")
        names = {c.name.lower() for c in [*table.columns, *table.partition_columns]}
        src = {c.lower() for c in b._source.columns}
        cond = None
        for k in on:
            if k.lower() not in names or k.lower() not in src:
                raise DmlError(
                    f"{what}: on column {k!r} is not a column of both the table and the source"
                )
            eq = tcol(k) == scol(k)
            cond = eq if cond is None else cond & eq
        assert cond is not None
        return cond
    if on is None:
        raise DmlError(f"{what}: on= is required (a condition or key columns)")
    return dml.to_column(on, what=f"{what} on")


def _insert_values(
    table: TableDesc, c: _Clause, src_cols: dict[str, str], scol: Any, what: str
) -> dict[str, "Column"]:
    cols = {x.name.lower(): x.name for x in [*table.columns, *table.partition_columns]}
    if c.values is None:
        missing = [n for n in cols if n not in src_cols]
        if missing:
            raise DmlError(
                f"{what}: when_not_matched_insert() without values needs every "
                f"table column in the source; missing {missing}"
            )
        out = {name: scol(name) for name in cols.values()}
    else:
        out = {}
        for k, v in c.values.items():
            name = cols.get(str(k).lower())
            if name is None:
                raise DmlError(
                    f"{what}: insert of unknown column {k!r} (columns: {', '.join(cols.values())})"
                )
            out[name] = dml.to_column(v, what=f"{what} insert {k}")
    absent = [k for k in table.primary_key if k not in out]
    if absent:
        raise DmlError(f"{what}: insert clause sets no value for primary key column(s) {absent}")
    return out


def _first_match(conditions: list[tuple[int, "Column"]]) -> "Column":
    """``CASE WHEN cond_i THEN i ... END``: the index of the first clause whose condition
    holds (NULL when none does)."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    i0, c0 = conditions[0]
    expr = F.when(c0, F.lit(i0))
    for i, c in conditions[1:]:
        expr = expr.when(c, F.lit(i))
    return expr


def _choose(default: "Column", options: list[tuple[int, "Column"]]) -> "Column":
    """``CASE _acid_action WHEN i THEN value_i ... ELSE default END``."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    if not options:
        return default
    expr = None
    for i, v in options:
        expr = F.when(F.col(_ACTION) == i, v) if expr is None else expr.when(F.col(_ACTION) == i, v)
    assert expr is not None
    return expr.otherwise(default)


def _check_cardinality(
    joined: "DataFrame", table: TableDesc, rid: str, tcol: Any, what: str
) -> None:
    """Refuse when a target row is matched by more than one source row."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    named = list(table.primary_key) or [c.name for c in [*table.columns, *table.partition_columns]]
    # a ROW__ID is unique within a partition (docs/hive-acid-format.md §3)
    pcols = [tcol(c.name).alias(f"_p_{c.name}") for c in table.partition_columns]
    bad = (
        joined.groupBy(F.col(rid).alias("_rid"), *pcols)
        .agg(F.count(F.lit(1)).alias("_n"), *[F.first(tcol(k)).alias(k) for k in named])
        .where(F.col("_n") > 1)
        .limit(1)
        .collect()
    )
    if bad:
        r = bad[0]
        ident = {k: r[k] for k in named}
        label = "key" if table.primary_key else "row"
        raise CardinalityViolationError(
            f"{what}: {r['_n']} source rows match the target row with {label} {ident} "
            f"(ROW__ID {tuple(r['_rid'])}); a MERGE may update or delete a target row once "
            "(cardinality violation) -- deduplicate the source"
        )


def _check_keys(
    table: TableDesc,
    new_rows: "DataFrame",
    inserts: "DataFrame | None",
    target: "DataFrame",
    acted: "DataFrame | None",
    rid: str,
    t: str,
    what: str,
) -> None:
    """A keyed table's new rows repeat no key, and no insert adds a key that a target row
    the MERGE leaves in place holds."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    key = list(table.primary_key)
    dups = new_rows.groupBy(*key).count().where(F.col("count") > 1).limit(1).collect()
    if dups:
        raise DmlError(
            f"{what}: the MERGE would write {dups[0]['count']} rows with primary "
            f"key { ({k: dups[0][k] for k in key}) } -- refused"
        )
    if inserts is None:
        return
    kept = target
    if acted is not None:  # a ROW__ID is unique within a partition
        pnames = [c.name for c in table.partition_columns]
        gone = acted.select(
            F.col(rid).alias("_gone"), *[F.col(f"{t}.`{p}`").alias(f"_gone_{p}") for p in pnames]
        )
        same = F.col(rid) == F.col("_gone")
        for p in pnames:
            same = same & (F.col(f"{t}.`{p}`") == F.col(f"_gone_{p}"))
        kept = target.join(gone, same, "left_anti")
    clash = (
        inserts.select(*key)
        .join(kept.select(*[F.col(f"{t}.`{k}`").alias(k) for k in key]), on=key, how="left_semi")
        .limit(1)
        .collect()
    )
    if clash:
        raise DmlError(
            f"{what}: the MERGE would insert primary key "
            f"{ ({k: clash[0][k] for k in key}) }, which the table already holds "
            "(the on condition does not match it) -- refused"
        )
