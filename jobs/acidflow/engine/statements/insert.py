"""INSERT INTO a full-ACID table (Hive ``INSERT INTO``) under the primary key rules of
:mod:`acidflow.format.keys` (module doc, "The primary key rules of writes"): the one place that
decides what an insert into a keyed table may write.

For a table with a primary key, before anything is written:

* a batch row with a NULL in a key column refuses the batch (:class:`NullKeyError`, naming the
  table, the column(s) and the number of rows);
* a key that repeats inside the batch refuses it (:class:`ExistingKeysError`, whatever
  ``on_existing`` says: which of the rows would win is not defined by an INSERT);
* a key that is visible in the writer's snapshot (the key lookup of a merge: only the
  partitions and buckets the keys hash to, ``acidflow.engine.lookup``) is handled as
  ``on_existing`` says: ``"error"`` (default) refuses the batch (:class:`ExistingKeysError`
  names the table, the first keys and the write ids holding them), ``"ignore"`` drops those
  rows and inserts the others (Hive ``MERGE ... WHEN NOT MATCHED THEN INSERT``), ``"upsert"``
  replaces the stored rows (``Transaction.upsert``, a split-update).

A key another transaction writes after the snapshot was taken is caught at commit by the
key-level write set (``WriteConflictError``). Tables without a primary key keep Hive's INSERT
semantics (every row appended; ``on_existing`` must be ``"error"``, the default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection, Sequence

import pyarrow as pa

from acidflow.engine import conform, lookup
from acidflow.engine.conform import DuplicateKeyError
from acidflow.engine.ports import StatementContext, TxnCatalog, TxnRef
from acidflow.engine.statements import external
from acidflow.engine.writer import WriteResult, write_insert_events
from acidflow.errors import AcidflowError
from acidflow.format import keys
from acidflow.format import partitions as parts
from acidflow.format.table import TableDesc
from acidflow.read import snapshot
from acidflow.states import LockType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ON_EXISTING",
    "OVERWRITE_HINT",
    "OVERWRITE_OUTSIDE_HINT",
    "ExistingKeysError",
    "NullKeyError",
    "check_batch_arrow",
    "check_batch_spark",
    "check_overwrite",
    "check_on_existing",
    "insert",
    "refuse_null_keys_arrow",
    "refuse_null_keys_spark",
]

#: what an insert into a keyed table does with a key that is already stored (module doc)
ON_EXISTING = ("error", "upsert", "ignore")
#: the advice an INSERT OVERWRITE's :class:`ExistingKeysError` ends with (repeated keys only:
#: the stored rows are replaced)
OVERWRITE_HINT = (
    "An insert overwrite replaces the stored rows but writes one row per key: keep one row of "
    "each key (e.g. the newest) and run it again."
)
#: the advice an INSERT OVERWRITE's :class:`ExistingKeysError` ends with when a key of its rows
#: is stored in a partition it does not replace
OVERWRITE_OUTSIDE_HINT = (
    "A key names one row of the table: the key is stored in a partition this overwrite does "
    "not replace; delete it there first, or overwrite that partition too."
)
#: keys named at most in an :class:`ExistingKeysError`
MAX_NAMED_KEYS = 10
#: the advice an :class:`ExistingKeysError` ends with, unless the caller words its own
INSERT_HINT = (
    "An insert never creates a second row of a key: insert with on_existing='upsert' to "
    "replace the stored rows, or on_existing='ignore' to insert only the new keys."
)


class NullKeyError(AcidflowError, ValueError):
    """Rows of an insert or upsert batch hold a NULL in a primary key column (the NULL-key rule,
    :mod:`acidflow.format.keys`); nothing was written.

    Attributes:
        table: the table; counts: ``{key column: rows with NULL in it}``.
    """

    def __init__(self, statement: str, table: str, counts: dict[str, int]) -> None:
        self.table, self.counts = table, dict(counts)
        super().__init__(
            f"{statement} {table}: "
            + ", ".join(
                f"{n} row(s) with NULL in primary key column {c}" for c, n in counts.items()
            )
            + "; a primary key column may not be NULL, nothing was written"
        )


class ExistingKeysError(DuplicateKeyError):
    """An insert into a table with a primary key met rows whose key is already in the table
    or repeats within the batch; nothing was written.

    Attributes:
        table: the table; key: the key columns; existing / repeated: how many key values are
            in the table already / occur more than once in the batch; examples: up to
            :data:`MAX_NAMED_KEYS` of them as ``{column: value}`` (stored ones first);
            write_ids: for each example, the write ids of the stored rows holding it (empty for
            a key repeated in the batch).
    """

    def __init__(
        self,
        table: str,
        key: list[str],
        existing: int,
        repeated: int,
        examples: list[dict[str, Any]],
        write_ids: Sequence[Sequence[int]] = (),
        *,
        statement: str = "insert into",
        hint: str = INSERT_HINT,
    ) -> None:
        self.table, self.key, self.existing, self.repeated = table, list(key), existing, repeated
        self.examples = examples
        self.write_ids = [list(w) for w in write_ids] + [[]] * (len(examples) - len(write_ids))
        what = []
        if existing:
            what.append(f"{existing} primary key value(s) already in the table")
        if repeated:
            what.append(f"{repeated} repeated within the batch")
        shown = ", ".join(
            f"{e} (write id(s) {', '.join(map(str, w))})" if w else f"{e} (repeated)"
            for e, w in zip(examples, self.write_ids)
        )
        super().__init__(
            f"{statement} {table}: {' and '.join(what)} (key {', '.join(key)}), e.g. {shown}; "
            f"nothing was written. {hint}"
        )
        self._statement, self._hint = statement, hint

    def reworded(self, statement: str, hint: str) -> "ExistingKeysError":
        """The same refusal, worded for another caller (``acidflow ingest``)."""
        return ExistingKeysError(
            self.table,
            self.key,
            self.existing,
            self.repeated,
            self.examples,
            self.write_ids,
            statement=statement,
            hint=hint,
        )


def check_on_existing(table: TableDesc, on_existing: str) -> None:
    """Raises:
    ValueError: ``on_existing`` not in :data:`ON_EXISTING`, or other than ``"error"`` for a
        table without a primary key (nothing to match on)."""
    if on_existing not in ON_EXISTING:
        raise ValueError(
            f"insert into {table.name}: on_existing must be one of {ON_EXISTING}, "
            f"got {on_existing!r}"
        )
    if on_existing != "error" and not table.primary_key:
        raise ValueError(
            f"insert into {table.name}: on_existing={on_existing!r} needs a primary key; "
            "the table has none (an insert appends every row)"
        )


def refuse_null_keys_arrow(table: TableDesc, rows: pa.Table, statement: str) -> None:
    """Raises:
    NullKeyError: a row of ``rows`` (aligned to ``table``) has a NULL key column."""
    counts = keys.null_key_counts(list(table.primary_key), rows)
    if counts:
        raise NullKeyError(statement, table.name, counts)


def refuse_null_keys_spark(table: TableDesc, df: "DataFrame", statement: str) -> None:
    """:func:`refuse_null_keys_arrow` of a Spark DataFrame (one aggregation job)."""
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    key = list(table.primary_key)
    row = df.select(*[F.sum(F.col(k).isNull().cast("long")).alias(k) for k in key]).first()
    counts = {k: int(row[k]) for k in key if row is not None and row[k]}
    if counts:
        raise NullKeyError(statement, table.name, counts)


def _no_rows(table: TableDesc) -> pa.Table:
    """An empty read result: the partition columns and ``ROW__ID``."""
    return pa.table(
        {
            **{c.name: pa.array([], pa.string()) for c in table.partition_columns},
            snapshot.ROW_ID: pa.array([], snapshot.ROW_ID_TYPE),
        }
    )


def _key_tuples(rows: pa.Table, key: list[str]) -> list[tuple[Any, ...]]:
    return list(zip(*(rows.column(k).to_pylist() for k in key)))


def check_batch_arrow(
    catalog: TxnCatalog,
    txn: TxnRef | None,
    table: TableDesc,
    rows: pa.Table,
    on_existing: str,
    *,
    statement: str = "insert into",
    hint: str = INSERT_HINT,
    stored: bool = True,
    spark: "SparkSession | None" = None,
) -> tuple[pa.Table, pa.Table]:
    """Apply the module's key rules to an Arrow batch of a keyed table (``rows`` aligned by
    ``conform.aligned_arrow``), reading the stored keys at ``txn``'s snapshot (None: the
    latest committed one).

    Args:
        statement, hint: the wording of the errors.
        stored: False checks the batch alone (NULL and repeated keys), without reading the
            stored keys (an INSERT OVERWRITE replaces the rows it would find).
    Returns:
        ``(rows to insert, stored rows to replace)``: ``"error"`` and ``"upsert"`` keep every
        row, ``"ignore"`` drops the rows of stored keys; the second table (``ROW__ID`` delete
        input: partition columns, ``owid``, ``bprop``, ``rowid``) holds the stored rows of the
        batch's keys for ``"upsert"`` and is empty otherwise.
    Raises:
        NullKeyError; ExistingKeysError: see the module doc.
    """
    key = list(table.primary_key)
    refuse_null_keys_arrow(table, rows, statement)
    repeated = keys.repeated_keys(key, rows)
    found = (
        lookup.existing_rows_arrow(catalog, table, txn, rows.select(key), spark=spark)
        if stored
        else rows.slice(0, 0)
    )
    if repeated.num_rows or (found.num_rows and on_existing == "error"):
        held: dict[tuple[Any, ...], set[int]] = {}
        if on_existing == "error" and found.num_rows:
            rid = found.column(snapshot.ROW_ID).combine_chunks().field("writeid").to_pylist()
            for k, w in zip(_key_tuples(found, key), rid):
                held.setdefault(k, set()).add(w)
        named = sorted(held)[:MAX_NAMED_KEYS]
        named += _key_tuples(repeated, key)[: MAX_NAMED_KEYS - len(named)]
        raise ExistingKeysError(
            table.name,
            key,
            len(held),
            repeated.num_rows,
            [dict(zip(key, k)) for k in named],
            [sorted(held.get(k, ())) for k in named],
            statement=statement,
            hint=hint,
        )
    if on_existing == "ignore" and found.num_rows:
        present = set(_key_tuples(found, key))
        keep = pa.array([k not in present for k in _key_tuples(rows, key)], pa.bool_())
        return rows.filter(keep), lookup.row_id_columns(table, _no_rows(table))
    if not stored or on_existing != "upsert":
        return rows, lookup.row_id_columns(table, _no_rows(table))
    return rows, lookup.row_id_columns(table, found)


def check_batch_spark(
    spark: "SparkSession",
    txn: StatementContext,
    table: TableDesc,
    rows: "DataFrame",
    on_existing: str,
    *,
    statement: str = "insert into",
    hint: str = INSERT_HINT,
    stored: bool = True,
) -> "DataFrame":
    """:func:`check_batch_arrow` of a Spark DataFrame (``conform.aligned``; cache it: it is
    read by several jobs) at the transaction's snapshot, for ``"error"`` and ``"ignore"``.
    ``statement``, ``hint``, ``stored``: as :func:`check_batch_arrow` (``stored=False``: NULL
    and repeated keys only, two jobs reading the key columns).

    Returns:
        The rows to insert (``"ignore"``: without the rows of stored keys; a cached frame the
        caller unpersists once written, or ``rows`` itself).
    Raises:
        NullKeyError; ExistingKeysError: see the module doc.
    """
    # deferred: pyspark is imported only by the statements that run Spark SQL
    from pyspark.sql import functions as F

    key = list(table.primary_key)
    refuse_null_keys_spark(table, rows, statement)
    batch_keys = rows.select(*key)
    repeated = batch_keys.groupBy(*key).count().where(F.col("count") > 1).select(*key).cache()
    if stored:
        matched = lookup.matching_rows(spark, txn.catalog, txn, table, batch_keys.distinct())
    else:  # the statement replaces the stored rows: nothing to look up
        matched = batch_keys.limit(0).withColumn("owid", F.lit(0).cast("long"))
    existing = (
        matched.groupBy(*key).agg(F.sort_array(F.collect_set("owid")).alias("_acid_owids")).cache()
    )
    try:
        n_rep = repeated.count()
        n_exist = existing.count() if on_existing == "error" and stored else 0
        if n_rep or n_exist:
            shown = existing.orderBy(*key).limit(MAX_NAMED_KEYS).collect() if n_exist else []
            examples = [{k: r[k] for k in key} for r in shown]
            write_ids = [list(r["_acid_owids"]) for r in shown]
            if len(examples) < MAX_NAMED_KEYS:
                examples += [
                    r.asDict()
                    for r in repeated.orderBy(*key).limit(MAX_NAMED_KEYS - len(examples)).collect()
                ]
            raise ExistingKeysError(
                table.name,
                key,
                n_exist,
                n_rep,
                examples,
                write_ids,
                statement=statement,
                hint=hint,
            )
        if on_existing != "ignore":
            return rows
        return rows.join(existing.select(*key), on=key, how="left_anti").cache()
    finally:
        repeated.unpersist()
        existing.unpersist()


def check_overwrite(
    txn: StatementContext,
    table: TableDesc,
    rows: "DataFrame | pa.Table",
    partitions: Collection[str] | None,
    *,
    statement: str = "insert overwrite",
) -> None:
    """The primary key rules of an INSERT OVERWRITE of a keyed table (``acidflow.format.keys``)
    for ``rows`` (aligned to ``table``, ``conform.aligned`` / ``aligned_arrow``), before
    anything is written: a NULL key or a key on more than one row refuses it; the keys stored
    in the partitions it replaces are not looked up (they go), but when the key does not name
    the partition (``keys.scope_rule``) a key stored in another partition refuses it too.

    Args:
        txn: the open transaction (its snapshot is read).
        partitions: the partition paths replaced (``ds=2024-01-01``); None: those of ``rows``
            (Hive's dynamic-partition overwrite; one Spark job for a DataFrame). Ignored for
            an unpartitioned table (all of it is replaced).
    Raises:
        NullKeyError: a NULL in a key column.
        ExistingKeysError: a key repeated in ``rows`` (hint :data:`OVERWRITE_HINT`), or stored
            in a partition not replaced (hint :data:`OVERWRITE_OUTSIDE_HINT`), naming the
            first keys and the write ids holding them.
    """
    kw: dict[str, Any] = {"statement": statement, "hint": OVERWRITE_HINT, "stored": False}
    if isinstance(rows, pa.Table):
        check_batch_arrow(txn.catalog, txn, table, rows, "error", **kw)
        if not rows.num_rows:
            return
    else:
        check_batch_spark(txn.session(rows), txn, table, rows, "error", **kw)
    by_partition, _ = keys.scope_rule(table)
    if not table.partition_columns or by_partition:
        return
    key = list(table.primary_key)
    pnames = [c.name for c in table.partition_columns]
    if partitions is None:
        if isinstance(rows, pa.Table):
            present = rows.select(pnames).group_by(pnames).aggregate([]).to_pylist()
        else:
            present = [r.asDict() for r in rows.select(*pnames).distinct().collect()]
        partitions = {parts.make_partition_path([(p, r[p]) for p in pnames]) for r in present}
    if isinstance(rows, pa.Table):
        found = lookup.existing_rows_arrow(
            txn.catalog, table, txn, rows.select(key), skip_partitions=partitions
        )
        held: dict[tuple[Any, ...], set[int]] = {}
        rid = found.column(snapshot.ROW_ID).combine_chunks().field("writeid").to_pylist()
        for k, w in zip(_key_tuples(found, key), rid):
            held.setdefault(k, set()).add(w)
        n = len(held)
        named = sorted(held)[:MAX_NAMED_KEYS]
        examples = [dict(zip(key, k)) for k in named]
        write_ids = [sorted(held[k]) for k in named]
    else:
        # deferred: pyspark is imported only by the statements that run Spark SQL
        from pyspark.sql import functions as F

        spark = txn.session(rows)
        stored = (
            lookup.matching_rows(
                spark, txn.catalog, txn, table, rows.select(*key), skip_partitions=partitions
            )
            .groupBy(*key)
            .agg(F.sort_array(F.collect_set("owid")).alias("_acid_owids"))
            .cache()
        )
        try:
            n = stored.count()
            shown = stored.orderBy(*key).limit(MAX_NAMED_KEYS).collect() if n else []
        finally:
            stored.unpersist()
        examples = [{k: r[k] for k in key} for r in shown]
        write_ids = [list(r["_acid_owids"]) for r in shown]
    if n:
        raise ExistingKeysError(
            table.name,
            key,
            n,
            0,
            examples,
            write_ids,
            statement=statement,
            hint=OVERWRITE_OUTSIDE_HINT,
        )


def insert(
    txn: StatementContext,
    table_name: str,
    df: "DataFrame | pa.Table",
    *,
    on_existing: str = "error",
    **options: Any,
) -> WriteResult:
    """``INSERT INTO table`` of ``df`` as one statement, refusing or dropping stored and repeated
    keys of a keyed table first (module doc). ``on_existing="upsert"`` is
    ``Transaction.upsert``'s; this function does ``"error"`` and ``"ignore"``.

    Args:
        txn: the open transaction.
        df: every table and partition column: a Spark DataFrame (written by Spark tasks) or a
            pyarrow Table (cast like ``conform.aligned_arrow``; looked up and written in this
            process).
        on_existing: ``"error"`` or ``"ignore"``.
        **options: writer options (``compression``, ``stripe_rows``).
    Returns:
        :class:`WriteResult` with ``rows_inserted``.
    Raises:
        SchemaMismatchError: before anything is written.
        NullKeyError, ExistingKeysError: keyed tables, before anything is written.
        ValueError: see :func:`check_on_existing`.
    """
    table = txn.catalog.get_table(table_name)
    check_on_existing(table, on_existing)
    if on_existing == "upsert":
        raise ValueError(f"insert into {table.name}: on_existing='upsert' is Transaction.upsert")
    keyed = bool(table.primary_key)
    if isinstance(df, pa.Table):
        arrow = conform.aligned_arrow(df, table)
        txn.lock_table(table, LockType.SHARED_WRITE)
        if keyed:
            arrow, _ = check_batch_arrow(txn.catalog, txn, table, arrow, on_existing)
        (spec,) = txn.begin_statement(table, "insert", **options)
        files = write_insert_events(arrow, table, spec)
        return external.end_insert_statement(txn, table, [(spec, files)], overwrite=False)
    aligned = conform.aligned(df, table)
    if not keyed:
        txn.lock_table(table, LockType.SHARED_WRITE)
        (spec,) = txn.begin_statement(table, "insert", **options)
        files = write_insert_events(aligned, table, spec)
        return external.end_insert_statement(txn, table, [(spec, files)], overwrite=False)
    aligned = aligned.cache()
    try:
        txn.lock_table(table, LockType.SHARED_WRITE)
        kept = check_batch_spark(txn.session(df), txn, table, aligned, on_existing)
        try:
            (spec,) = txn.begin_statement(table, "insert", **options)
            files = write_insert_events(kept, table, spec)
        finally:
            if kept is not aligned:
                kept.unpersist()
        return external.end_insert_statement(txn, table, [(spec, files)], overwrite=False)
    finally:
        aligned.unpersist()
