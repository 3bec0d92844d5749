"""Restore a table to an earlier write id, and roll back its latest commit (Delta ``RESTORE
TABLE ... TO VERSION AS OF``, Hudi's restore / rollback), as ONE new transaction.

The restore's commit makes the table's snapshot equal to ``read_table(as_of_write_id=W)``:

* row versions are compared by (partition, ROW__ID) (immutable, unique in a partition; major
  compaction keeps them): a version visible now but not at W gets a delete event, a version
  visible at W but not now is inserted again (a new ROW__ID in the restore's write id, as any
  insert) -- split-update events through :func:`acidflow.engine.statements.changes.apply_row_changes`; a version to
  delete and one to insert with equal values cancel out (the same logical row under another
  ROW__ID, e.g. after a new base rewrote it);
* per partition (the whole table when unpartitioned) a new base (``base_W`` of an INSERT
  OVERWRITE, :meth:`Transaction.insert_overwrite`) replaces the events when cheaper: when the
  rows to delete plus the rows to insert are more than ``base_fraction`` (0.5) of the rows the
  partition holds at W.

So locks, write set, components and the commit record are the usual ones. The restore holds an
exclusive table lock; if another writer committed between the restore's snapshot (its
transaction's open) and that lock, the restore starts again in a new transaction (at most 3
times), so the result is exactly the table as of W. The commit record's stats say
``operation`` / ``operations`` = ``restore`` (or ``rollback``), ``restored_to_write_id`` = W and
``restore_method`` = ``{partition: "events" | "base"}``. Older snapshots stay readable (time
travel to write ids before the restore is unchanged).

Refused before anything is written (:class:`RestoreError`): a write id never allocated,
aborted or not yet committed; W outside history retention (``acidflow.read.history``) unless a
savepoint pins it (``acidflow.tableops.savepoint``: restore to a savepoint works past
retention); W whose
columns differ from today's (a schema change committed after W, ``acidflow.tableops.schema``:
Delta's RESTORE brings the old schema back, acidflow's keeps it, so the change must be undone
with ``acidflow table alter`` first); and
``NotEnoughHistoryError`` when the files of W were cleaned. W equal to the current state: nothing
to do, nothing committed (``RestoreResult.noop``).

``spark=None`` reads and writes with pyarrow in this process (no JVM; what the CLI does); with a
SparkSession the reads, the comparison and the writes are Spark jobs.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.catalog.records import LockType, TxnState
from acidflow.engine.statements import changes
from acidflow.engine.transaction import Transaction
from acidflow.errors import AcidflowError
from acidflow.format import partitions as parts
from acidflow.read import history
from acidflow.read import table as reads
from acidflow.read.snapshot import ROW_ID
from acidflow.tableops.savepoint import savepointed_write_ids

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from acidflow.catalog.base import Catalog
    from acidflow.catalog.tabledef import TableDef

log = logging.getLogger(__name__)

__all__ = ["RestoreError", "RestoreResult", "restore", "rollback", "rollback_target"]

#: restore attempts when a writer commits between the restore's snapshot and its lock
ATTEMPTS = 3
_KEYS = ["__w", "__b", "__r", "__p"]


class RestoreError(AcidflowError, ValueError):
    """A restore or rollback refused before anything was written (message says what and why)."""


@dataclass
class RestoreResult:
    """What a restore or rollback did.

    Attributes:
        table: ``db.table``; operation: ``restore`` or ``rollback``.
        to_write_id: W, the write id whose snapshot the table now equals.
        write_id / txn_id: the restore's write id and transaction (None when nothing to do).
        rows_deleted / rows_inserted: row versions visible now and not at W (deleted), and
            visible at W and not now (inserted again) -- the logical change, whether written
            as events or as a new base.
        methods: ``{partition spec ("" when unpartitioned): "events" | "base"}`` of the
            partitions that changed.
        noop: True when the table already equalled the snapshot at W (nothing committed).
    """

    table: str
    operation: str
    to_write_id: int
    write_id: int | None = None
    txn_id: int | None = None
    rows_deleted: int = 0
    rows_inserted: int = 0
    methods: dict[str, str] = field(default_factory=dict)
    noop: bool = False

    def summary(self) -> str:
        """One line for people, e.g. ``restored db.t to write id 3 as write id 7 (txn 12):
        4 rows deleted, 2 rows inserted; events in 1 partition, a new base in 1``."""
        if self.noop:
            return (
                f"{self.table} already equals its snapshot at write id {self.to_write_id}: "
                f"nothing to do, nothing committed"
            )
        verb = "rolled back" if self.operation == "rollback" else "restored"
        n_ev = sum(1 for m in self.methods.values() if m == "events")
        n_base = sum(1 for m in self.methods.values() if m == "base")
        how = []
        if n_ev:
            how.append(
                f"delete/insert events in {n_ev} partition{'s' if n_ev != 1 else ''}"
                if any(self.methods)
                else "delete/insert events"
            )
        if n_base:
            how.append(
                f"a new base in {n_base} partition{'s' if n_base != 1 else ''}"
                if any(self.methods)
                else "a new base"
            )
        return (
            f"{verb} {self.table} to write id {self.to_write_id} as write id "
            f"{self.write_id} (txn {self.txn_id}): {self.rows_deleted} rows deleted, "
            f"{self.rows_inserted} rows inserted; {', '.join(how)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return {
            "table": self.table,
            "operation": self.operation,
            "to_write_id": self.to_write_id,
            "write_id": self.write_id,
            "txn_id": self.txn_id,
            "rows_deleted": self.rows_deleted,
            "rows_inserted": self.rows_inserted,
            "methods": dict(self.methods),
            "noop": self.noop,
        }


# ------------------------------------------------------------------------------ checks


def check_target(catalog: Catalog, table: TableDef, write_id: int, operation: str) -> None:
    """Refuse a restore target that is not a committed write id (0 = the empty table before
    the first write) or lies outside history retention and is pinned by no savepoint (Hudi's
    restore to a savepoint).

    Raises:
        RestoreError.
    """
    states = {w: state for w, _txn, state in catalog.write_id_states(table.name)}
    what = f"{operation} {table.name} to write id {write_id}"
    if write_id < 0 or (write_id != 0 and write_id not in states):
        known = f"1..{max(states)}" if states else "none yet"
        raise RestoreError(f"{what}: no such write id (write ids allocated: {known})")
    state = states.get(write_id, TxnState.COMMITTED)
    if state == TxnState.ABORTED:
        raise RestoreError(
            f"{what}: write id {write_id} was aborted, nothing it wrote is "
            "visible; restore to a committed write id"
        )
    if state == TxnState.OPEN:
        raise RestoreError(
            f"{what}: write id {write_id} is not committed yet (its transaction is open)"
        )
    kept = history.retained_range(catalog, table.name, table=table)
    if not kept.contains(write_id) and write_id not in savepointed_write_ids(catalog, table.name):
        raise RestoreError(
            f"{what}: write id {write_id} is outside history retention "
            f"({kept.describe()}); the oldest write id that can be restored is {kept.oldest} "
            "(or one a savepoint pins: acidflow savepoint list)"
        )
    then = [(c.name, c.hive_type) for c in catalog.schema_at(table.name, write_id)]
    now = [(c.name, c.hive_type) for c in table.columns]
    if then != now:
        raise RestoreError(
            f"{what}: the table's columns changed after write id {write_id} ("
            + ", ".join(f"{n} {t}" for n, t in then)
            + " -> "
            + ", ".join(f"{n} {t}" for n, t in now)
            + "); a restore keeps today's columns and "
            "cannot write rows of the old ones: change the columns back with `acidflow table "
            "alter` first, or restore to a write id after the change"
        )


def rollback_target(catalog: Catalog, table_name: str) -> tuple[int, int]:
    """``(latest, W)``: the latest committed write id that changed data (rows inserted,
    updated or deleted, or an overwrite; a write with no commit record, e.g. Hive's, counts)
    and the committed write id before it (0 when it was the first).

    Raises:
        RestoreError: nothing committed that changed data.
    """
    records = {r.write_id: r for r in catalog.commit_records(table_name)}
    committed = [w for w, _t, s in catalog.write_id_states(table_name) if s == TxnState.COMMITTED]

    def changed(w: int) -> bool:
        rec = records.get(w)
        if rec is None:
            return True
        st = rec.stats or {}
        rows = sum(int(st.get(k) or 0) for k in ("rows_inserted", "rows_updated", "rows_deleted"))
        return rows > 0 or "insert_overwrite" in rec.operations

    for i in range(len(committed) - 1, -1, -1):
        if changed(committed[i]):
            return committed[i], committed[i - 1] if i > 0 else 0
    raise RestoreError(
        f"rollback {table_name}: no committed write changed its data; nothing to roll back"
    )


# ------------------------------------------------------------------------------ diff (pyarrow)


def _part_paths(tbl: pa.Table, pnames: list[str]) -> list[str]:
    if not pnames:
        return [""] * tbl.num_rows
    cols = [tbl.column(p).to_pylist() for p in pnames]
    return [parts.make_partition_path(list(zip(pnames, vals))) for vals in zip(*cols)]


def _keys(tbl: pa.Table, pnames: list[str]) -> pa.Table:
    rid = tbl.column(ROW_ID).combine_chunks()
    return pa.table(
        [
            rid.field("writeid"),
            rid.field("bucketid"),
            rid.field("rowid"),
            pa.array(_part_paths(tbl, pnames), pa.string()),
            pa.array(range(tbl.num_rows), pa.int64()),
        ],
        names=_KEYS + ["__pos"],
    )


def _minus(a: pa.Table, b: pa.Table, pnames: list[str]) -> pa.Table:
    """Rows of ``a`` whose (partition, ROW__ID) is not in ``b`` (order of ``a``): a ROW__ID is
    unique within a partition only."""
    if a.num_rows == 0 or b.num_rows == 0:
        return a
    kept = _keys(a, pnames).join(
        _keys(b, pnames).select(_KEYS), keys=_KEYS, join_type="left anti", use_threads=False
    )
    pos = kept.column("__pos")
    return a.take(pc.take(pos, pc.sort_indices(pos)))


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    return value


def _cancel_equal(gone: pa.Table, back: pa.Table, cols: list[str]) -> tuple[pa.Table, pa.Table]:
    """Drop pairs of a row version to delete and one to insert with equal values (the same
    logical row under another ROW__ID, e.g. after a new base rewrote it): a restore changes
    only what differs, and a table equal in values to W needs nothing."""
    if not gone.num_rows or not back.num_rows:
        return gone, back
    gv = [
        tuple(_hashable(v) for v in row) for row in zip(*(gone.column(c).to_pylist() for c in cols))
    ]
    bv = [
        tuple(_hashable(v) for v in row) for row in zip(*(back.column(c).to_pylist() for c in cols))
    ]
    common = collections.Counter(gv) & collections.Counter(bv)
    if not common:
        return gone, back

    def keep(values: list[tuple[Any, ...]]) -> pa.Array:
        left = collections.Counter(common)
        out = []
        for v in values:
            out.append(left[v] <= 0)
            left[v] -= 1
        return pa.array(out, pa.bool_())

    return gone.filter(keep(gv)), back.filter(keep(bv))


def _count_by(paths: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in paths:
        out[p] = out.get(p, 0) + 1
    return out


@dataclass
class _Diff:
    """The difference between now and W, per partition path."""

    then_rows: dict[str, int]
    deletes: dict[str, int]
    inserts: dict[str, int]
    specs: dict[str, dict[str, Any]]

    def changed(self) -> list[str]:
        return sorted(
            p
            for p in set(self.deletes) | set(self.inserts)
            if self.deletes.get(p) or self.inserts.get(p)
        )

    def methods(self, fraction: float) -> dict[str, str]:
        return {
            p: (
                "base"
                if self.deletes.get(p, 0) + self.inserts.get(p, 0)
                > fraction * self.then_rows.get(p, 0)
                else "events"
            )
            for p in self.changed()
        }


def _restore_arrow(
    txn: Transaction,
    table: TableDef,
    now: pa.Table,
    then: pa.Table,
    fraction: float,
    operation: str,
) -> tuple[_Diff, dict[str, str]]:
    pnames = [c.name for c in table.partition_columns]
    data = [c.name for c in table.columns] + pnames
    gone, back = _cancel_equal(_minus(now, then, pnames), _minus(then, now, pnames), data)
    gone_p, back_p, then_p = (
        _part_paths(gone, pnames),
        _part_paths(back, pnames),
        _part_paths(then, pnames),
    )
    specs: dict[str, dict[str, Any]] = {}
    for tbl, paths in ((gone, gone_p), (back, back_p)):
        for i, p in enumerate(paths):
            if p not in specs:
                specs[p] = {n: tbl.column(n)[i].as_py() for n in pnames}
    diff = _Diff(_count_by(then_p), _count_by(gone_p), _count_by(back_p), specs)
    methods = diff.methods(fraction)
    ev = [p for p, m in methods.items() if m == "events"]
    base = [p for p, m in methods.items() if m == "base"]
    if ev:
        mask_g = pa.array([p in ev for p in gone_p], pa.bool_())
        mask_b = pa.array([p in ev for p in back_p], pa.bool_())
        g, b = gone.filter(mask_g), back.filter(mask_b)
        rid = g.column(ROW_ID).combine_chunks() if g.num_rows else None
        deletes = pa.table(
            [g.column(p) for p in pnames]
            + (
                [rid.field("writeid"), rid.field("bucketid"), rid.field("rowid")]
                if rid is not None
                else [pa.array([], pa.int64()), pa.array([], pa.int32()), pa.array([], pa.int64())]
            ),
            names=pnames + ["owid", "bprop", "rowid"],
        )
        changes.apply_row_changes(
            txn,
            table.name,
            b.select(data),
            deletes,
            counts={"rows_inserted": b.num_rows, "rows_updated": 0, "rows_deleted": g.num_rows},
            operation=operation,
        )
    if base:
        mask_t = pa.array([p in base for p in then_p], pa.bool_())
        rows = then.filter(mask_t).select(data)
        txn.insert_overwrite(  # rows of this table's own snapshot: taken as they were
            table.name,
            rows,
            partitions=[diff.specs[p] for p in base] if pnames else None,
            check_keys=False,
        )
    return diff, methods


# ------------------------------------------------------------------------------ diff (Spark)


def _restore_spark(
    spark: SparkSession,
    txn: Transaction,
    table: TableDef,
    now: DataFrame,
    then: DataFrame,
    fraction: float,
    operation: str,
) -> tuple[_Diff, dict[str, str]]:
    # deferred: the pyarrow path (the CLI) runs without pyspark
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    pnames = [c.name for c in table.partition_columns]
    data = [c.name for c in table.columns] + pnames

    def minus(a: DataFrame, b: DataFrame) -> DataFrame:
        # a ROW__ID is unique within a partition only
        other = b.select(*[F.col(c).alias(f"__o_{c}") for c in [ROW_ID, *pnames]])
        cond = [a[c].eqNullSafe(other[f"__o_{c}"]) for c in [ROW_ID, *pnames]]
        return a.join(other, on=cond, how="left_anti")

    def cancel(a: DataFrame, b: DataFrame) -> DataFrame:
        # rows of a without an equal-valued partner in b (n-th copy pairs with n-th copy)
        if any("map<" in c.hive_type for c in [*table.columns, *table.partition_columns]):
            return a  # maps cannot be grouped: no cancelling
        w = Window.partitionBy(*data).orderBy(ROW_ID)
        an = a.withColumn("__n", F.row_number().over(w))
        bn = b.withColumn("__n", F.row_number().over(w)).select(
            *[F.col(c).alias(f"__o_{c}") for c in [*data, "__n"]]
        )
        cond = [an[c].eqNullSafe(bn[f"__o_{c}"]) for c in [*data, "__n"]]
        return an.join(bn, on=cond, how="left_anti").drop("__n")

    gone0, back0 = minus(now, then), minus(then, now)
    gone = cancel(gone0, back0).cache()
    back = cancel(back0, gone0).cache()
    try:

        def counts(df: DataFrame) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
            if not pnames:
                n = df.count()
                return ({"": n} if n else {}), {"": {}}
            out, specs = {}, {}
            for r in df.groupBy(*pnames).count().collect():
                vals = [(p, r[p]) for p in pnames]
                path = parts.make_partition_path(vals)
                out[path] = r["count"]
                specs[path] = dict(vals)
            return out, specs

        then_c, _ = counts(then)
        del_c, del_s = counts(gone)
        ins_c, ins_s = counts(back)
        diff = _Diff(then_c, del_c, ins_c, {**del_s, **ins_s})
        methods = diff.methods(fraction)

        def only(df: DataFrame, chosen: list[str]) -> DataFrame:
            if not pnames:
                return df
            sel = spark.createDataFrame(
                [tuple(diff.specs[p][n] for n in pnames) for p in chosen], df.select(*pnames).schema
            )
            cond = [df[n].eqNullSafe(sel[n]) for n in pnames]
            return df.join(sel, on=cond, how="left_semi")

        ev = [p for p, m in methods.items() if m == "events"]
        base = [p for p, m in methods.items() if m == "base"]
        if ev:
            g, b = only(gone, ev), only(back, ev)
            deletes = g.select(
                *pnames,
                F.col(ROW_ID + ".writeid").alias("owid"),
                F.col(ROW_ID + ".bucketid").alias("bprop"),
                F.col(ROW_ID + ".rowid").alias("rowid"),
            )
            changes.apply_row_changes(
                txn,
                table.name,
                b.select(*data),
                deletes,
                counts={
                    "rows_inserted": sum(ins_c.get(p, 0) for p in ev),
                    "rows_updated": 0,
                    "rows_deleted": sum(del_c.get(p, 0) for p in ev),
                },
                operation=operation,
            )
        if base:
            txn.insert_overwrite(  # rows of this table's own snapshot: taken as they were
                table.name,
                only(then, base).select(*data),
                partitions=[diff.specs[p] for p in base] if pnames else None,
                check_keys=False,
            )
        return diff, methods
    finally:
        gone.unpersist()
        back.unpersist()


# ------------------------------------------------------------------------------ restore


def _moved_since_open(catalog: Catalog, table: str, txn_id: int) -> list[int]:
    """Write ids committed now that the transaction's snapshot does not see."""
    mine = catalog.valid_write_ids(table, txn_id=txn_id)
    cur = catalog.valid_write_ids(table)
    return [
        w
        for w in range(1, cur.high_watermark + 1)
        if cur.is_write_id_valid(w) and not mine.is_write_id_valid(w)
    ]


def restore(
    catalog: Catalog,
    table_name: str,
    to_write_id: int,
    *,
    spark: SparkSession | None = None,
    base_fraction: float = 0.5,
    operation: str = "restore",
) -> RestoreResult:
    """Make the table equal to its snapshot at ``to_write_id`` in one new transaction (module
    doc).

    Args:
        catalog: the table's catalog; table_name: ``db.table``.
        to_write_id: W, a committed write id within retention or pinned by a savepoint (0 =
            empty the table, when the whole history is retained).
        spark: a SparkSession, or None for pyarrow in this process.
        base_fraction: a partition gets a new base instead of events when the rows to delete
            plus insert exceed this fraction of its rows at W.
        operation: ``restore`` or ``rollback`` (recorded in the commit record).
    Returns:
        :class:`RestoreResult`.
    Raises:
        RestoreError: bad target (see :func:`check_target`), or writers kept committing
            between the snapshot and the lock (3 attempts).
        acidflow.format.layout.NotEnoughHistoryError: the files of W were cleaned (the message
            names the oldest readable write id).
        NoSuchTableError; LockTimeoutError.
    """
    table = catalog.get_table(table_name)
    check_target(catalog, table, to_write_id, operation)
    result = RestoreResult(table.name, operation, to_write_id)
    for attempt in range(1, ATTEMPTS + 1):
        txn = Transaction(catalog, spark=spark, agent_info=f"acidflow {operation}")
        txn.begin()
        try:
            catalog.acquire_lock(txn._open_id(), table.name, None, LockType.EXCLUSIVE)
            moved = _moved_since_open(catalog, table.name, txn._open_id())
            if moved:
                txn.abort(f"{operation}: write ids {moved} committed before the lock; retry")
                log.info(
                    "%s %s: write ids %s committed meanwhile, attempt %d",
                    operation,
                    table.name,
                    moved,
                    attempt,
                )
                continue
            # under the lock: the definition and the target's checks as they are now (a
            # schema change may have committed since the first check)
            table = catalog.get_table(table.name)
            check_target(catalog, table, to_write_id, operation)
            then = reads.read_table(
                spark, catalog, table.name, row_id=True, as_of_write_id=to_write_id
            )
            now = reads.read_table(spark, catalog, table.name, row_id=True, txn_id=txn._open_id())
            if spark is None:
                diff, methods = _restore_arrow(txn, table, now, then, base_fraction, operation)
            else:
                diff, methods = _restore_spark(
                    spark, txn, table, now, then, base_fraction, operation
                )
            if not methods:
                txn.commit()  # read-only: no write id, no commit record
                result.noop = True
                return result
            st = txn.stats[table.name]
            st["operations"] = [operation]
            st["operation"] = operation
            st["restored_to_write_id"] = to_write_id
            st["restore_method"] = methods
            st["rows_deleted"] = sum(diff.deletes.get(p, 0) for p in methods)
            st["rows_inserted"] = sum(diff.inserts.get(p, 0) for p in methods)
            st["rows_updated"] = 0
            result.write_id = txn.write_id(table.name)
            result.txn_id = txn._open_id()
            result.rows_deleted, result.rows_inserted = st["rows_deleted"], st["rows_inserted"]
            result.methods = methods
            txn.commit()
            return result
        except BaseException as exc:
            if txn.state == TxnState.OPEN:
                txn.abort(f"{type(exc).__name__}: {exc}")
            raise
    raise RestoreError(
        f"{operation} {table.name} to write id {to_write_id}: other writers "
        f"committed between its snapshot and its lock {ATTEMPTS} times; "
        "try again"
    )


def rollback(
    catalog: Catalog, table_name: str, *, spark: SparkSession | None = None
) -> RestoreResult:
    """Undo the table's latest commit that changed data (:func:`rollback_target`): a restore
    to the committed write id before it, recorded as ``rollback``. A rollback of a rollback
    brings the rolled-back commit's rows back (as new row versions).

    Raises:
        RestoreError, NotEnoughHistoryError: as :func:`restore`.
    """
    table = catalog.get_table(table_name)
    _latest, target = rollback_target(catalog, table.name)
    return restore(catalog, table.name, target, spark=spark, operation="rollback")
