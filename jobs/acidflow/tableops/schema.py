"""Schema evolution of a table with Hive's rules (``acidflow table alter``).

:func:`alter_table` makes one change per call, in one transaction that allocates a write id on
the table, takes Hive's exclusive (DDL) lock, records the new schema as a version valid from that
write id (``Catalog.alter_schema``) and commits with the operation ``schema`` in its commit
record (``stats[table] = {"operations": ["schema"], "schema_change": {...}}``), so the change
shows in the timeline and a read of an older write id uses the schema of its time.

Metadata-only changes (no file is written; old files are read by ORC position, as Hive reads
ACID files, see :mod:`acidflow.format.schemaevolution`):

* ``rename_column`` -- a data column (primary key, bucketing and ordering references follow);
  partition columns are refused (their names are in every directory name). Hive 3.1's ORC
  reader maps a file's row struct by *name* when the file names its columns (acidflow's files
  do; Hive writes ``_col0, _col1 ...``, which it maps by position), so a rename also sets the
  table property ``orc.force.positional.evolution=true`` (ORC ``SchemaEvolution``); Trino maps
  full-ACID files by position anyway (``OrcPageSourceFactory.ensureColumnNameConsistency``);
* ``change_type`` -- Hive's widenings that the metastore and the ORC reader both accept and
  that change no value (:func:`acidflow.format.schemaevolution.check_type_change`); a bucketing
  column's type never changes;
* ``comment`` -- a column's comment (Hive ``ALTER TABLE ... CHANGE c c type COMMENT '...'``);
* ``add_columns`` -- appended at the end (as ``Catalog.add_columns``, but recorded).

Changes that move data positions -- ``drop_columns`` and ``reorder`` -- are refused unless
``rewrite=True``: then the same transaction writes, in every partition, a ``base_<W>`` holding
the snapshot's live rows in the new layout **with their ROW__IDs kept** (``currentTransaction =
originalTransaction``, as a major compaction writes them), like a Hive ``INSERT OVERWRITE`` base
(no ``_metadata_acid`` marker: readers use it exactly when W is valid, Hive ``AcidUtils
.isValidBase``). Keeping ROW__IDs (rather than an ``insert_overwrite`` with new ones) keeps
incremental reads across the change free of spurious delete/insert pairs and keeps delete events
of later writes addressed to the same rows; Hive 3.1 and Trino read such a base as any other.
The rewrite refuses to run while another transaction holds an open write id on the table (its
files would be written in the old layout below the new base).

Primary key, bucketing and ordering columns cannot be dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.catalog.base import Catalog
from acidflow.catalog.records import LockType, TxnState
from acidflow.catalog.tabledef import NAME_RE, Column, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.engine.writer import WriteResult
from acidflow.format.layout import format_base
from acidflow.format.orc import columnar
from acidflow.format.orc import files as acid_files
from acidflow.format.schemaevolution import SchemaChangeError, check_type_change
from acidflow.read import snapshot
from acidflow.read.table import plan_table
from acidflow.storage.fs import TableFS, join

log = logging.getLogger(__name__)

__all__ = ["SchemaChangeError", "AlterResult", "alter_table", "SCHEMA_OPERATION"]

#: The operation name of a schema change in the commit record's ``stats["operations"]``.
SCHEMA_OPERATION = "schema"
#: ORC's ``OrcConf.FORCE_POSITIONAL_EVOLUTION``: a rename sets it as a table property, which
#: Hive copies into its readers' conf, so Hive maps the file's row struct by position.
POSITIONAL_PROPERTY = "orc.force.positional.evolution"


@dataclass
class AlterResult:
    """What :func:`alter_table` did.

    Attributes:
        table: the definition after the change.
        write_id, txn_id: the change's write id (the schema version's start) and transaction.
        change: the recorded change (``{"op": ..., ...}``).
        rows_rewritten: rows written into new bases (``rewrite`` only, else 0).
        files: event files written (``rewrite`` only).
    """

    table: TableDef
    write_id: int
    txn_id: int
    change: dict[str, Any]
    rows_rewritten: int = 0
    files: list[str] = field(default_factory=list)


def _column(table: TableDef, name: str) -> Column:
    name = name.strip().lower()
    if name in table.partition_column_names():
        raise SchemaChangeError(
            f"table {table.name}: {name} is a partition column; partition "
            "columns cannot be renamed, retyped, dropped or reordered "
            "(their names and values are in every directory name)"
        )
    for c in table.columns:
        if c.name == name:
            return c
    raise SchemaChangeError(
        f"table {table.name}: no column {name!r} (columns: {', '.join(table.column_names())})"
    )


def _plan_change(
    table: TableDef,
    *,
    rename_column: tuple[str, str] | None,
    change_type: tuple[str, str] | None,
    comment: tuple[str, str | None] | None,
    add_columns: Sequence[Column | dict[str, Any]] | None,
    drop_columns: Sequence[str] | None,
    reorder: Sequence[str] | None,
    rewrite: bool,
) -> tuple[list[Column], dict[str, Any]]:
    """The new column list and the change record, or :class:`SchemaChangeError`."""
    given = [
        x
        for x in (rename_column, change_type, comment, add_columns, drop_columns, reorder)
        if x is not None
    ]
    if len(given) != 1:
        raise SchemaChangeError(
            f"table {table.name}: give exactly one change (rename, type, "
            f"comment, add, drop or reorder); got {len(given)}"
        )
    cols = [Column(c.name, c.hive_type, c.comment) for c in table.columns]
    protected = (
        set(table.primary_key)
        | set(table.bucket_columns)
        | ({table.ordering_column} if table.ordering_column else set())
    )
    if rename_column is not None:
        old, new = (s.strip().lower() for s in rename_column)
        col = _column(table, old)
        if not NAME_RE.match(new):
            raise SchemaChangeError(f"table {table.name}: invalid column name {new!r}")
        if new in table.column_names() or new in table.partition_column_names():
            raise SchemaChangeError(
                f"table {table.name}: cannot rename {old} to {new}: column {new} exists"
            )
        cols[table.columns.index(col)].name = new
        return cols, {"op": "rename_column", "column": old, "to": new, "renames": {old: new}}
    if change_type is not None:
        col = _column(table, change_type[0])
        new_type = check_type_change(
            table.name,
            col.name,
            col.hive_type,
            change_type[1],
            bucket_column=col.name in table.bucket_columns,
        )
        if new_type == col.hive_type:
            raise SchemaChangeError(f"table {table.name}: column {col.name} is {new_type} already")
        cols[table.columns.index(col)].hive_type = new_type
        return cols, {
            "op": "change_type",
            "column": col.name,
            "from": col.hive_type,
            "to": new_type,
        }
    if comment is not None:
        col = _column(table, comment[0])
        text = comment[1] or None
        cols[table.columns.index(col)].comment = text
        return cols, {"op": "comment", "column": col.name, "from": col.comment, "to": text}
    if add_columns is not None:
        added = [c if isinstance(c, Column) else Column.from_dict(c) for c in add_columns]
        if not added:
            raise SchemaChangeError(f"table {table.name}: no columns to add")
        return cols + added, {"op": "add_columns", "columns": [c.to_dict() for c in added]}
    if drop_columns is not None:
        names = [_column(table, n).name for n in drop_columns]
        if not names:
            raise SchemaChangeError(f"table {table.name}: no columns to drop")
        bad = [n for n in names if n in protected]
        if bad:
            raise SchemaChangeError(
                f"table {table.name}: cannot drop {', '.join(bad)}: primary "
                "key, bucketing and ordering columns stay"
            )
        if not rewrite:
            raise SchemaChangeError(
                f"table {table.name}: dropping {', '.join(names)} moves the positions of the "
                "later columns, and ACID files are read by position (Hive's ORC schema "
                "evolution): it needs a rewrite of the data (--rewrite / rewrite=True)"
            )
        kept = [c for c in cols if c.name not in names]
        return kept, {"op": "drop_columns", "columns": names, "rewrite": True}
    assert reorder is not None
    order = [_column(table, n).name for n in reorder]
    if sorted(order) != sorted(table.column_names()) or len(set(order)) != len(order):
        raise SchemaChangeError(
            f"table {table.name}: reorder must list every data column once "
            f"({', '.join(table.column_names())}); got {', '.join(order)}"
        )
    if order == table.column_names():
        raise SchemaChangeError(f"table {table.name}: the columns are in that order already")
    if not rewrite:
        raise SchemaChangeError(
            f"table {table.name}: reordering columns changes their positions, and ACID files "
            "are read by position (Hive's ORC schema evolution): it needs a rewrite of the data "
            "(--rewrite / rewrite=True)"
        )
    by_name = {c.name: c for c in cols}
    return [by_name[n] for n in order], {"op": "reorder", "columns": order, "rewrite": True}


def _rewrite(
    catalog: Catalog, table: TableDef, txn: Transaction, write_id: int, new_cols: list[Column]
) -> tuple[int, list[str], WriteResult]:
    """Write ``base_<write_id>`` of every partition with the snapshot's live rows in the new
    layout, ROW__IDs kept. Returns (rows, files, statistics)."""
    txn_id = txn.txn_id
    assert txn_id is not None
    valid = catalog.valid_write_ids(table.name, txn_id=txn_id)
    blockers = [w for w in valid.open_write_ids if w < write_id]
    if blockers:
        raise SchemaChangeError(
            f"table {table.name}: cannot rewrite while write ids {blockers} of other "
            "transactions are open or committed after this change began (their files would "
            "be written in the old layout under the new base); retry when they have ended"
        )
    plan = plan_table(catalog, table.name, valid=valid)
    tfs = TableFS(table.location)
    new_pairs = [(c.name, c.hive_type) for c in new_cols]
    names = [c.name for c in new_cols]
    base = format_base(write_id)
    result = WriteResult(write_id, 0)
    files: list[str] = []
    total = 0
    for ppath in sorted(plan.states):
        pdir = join(table.location, ppath) if ppath else table.location
        tfs.makedirs(join(pdir, base))
        acid_files.write_acid_version_file(tfs, join(pdir, base))
        result.partitions.setdefault(ppath, {"files": 0, "bytes": 0, "rows": 0})
    for task in plan.tasks:
        batches = list(
            snapshot.read_task(tfs, task, plan.columns, [], plan.valid_write_ids, row_id=True)
        )
        txn.catalog.heartbeat(txn_id)
        if not batches:
            continue
        t = pa.Table.from_batches(batches)
        rid = t.column(snapshot.ROW_ID).combine_chunks()
        owid = rid.field(0)
        events = pa.table(
            [
                pa.array([acid_files.OPERATION_INSERT] * len(owid), pa.int32()),
                owid,
                rid.field(1),
                rid.field(2),
                owid,
            ]
            + [t.column(n) for n in names],
            names=list(acid_files.EVENT_FIELDS[:5]) + names,
        )
        events = events.take(_key_order(events))
        pdir = join(table.location, task.partition) if task.partition else table.location
        path = join(pdir, base, f"bucket_{task.bucket_id:05d}")
        done = columnar.write_event_table(
            tfs,
            path,
            new_pairs,
            events,
            bloom_filter_columns=acid_files.key_bloom_filter_columns(new_pairs, table.primary_key),
        )
        if done is None:
            continue
        files.append(done.path)
        total += done.rows
        p = result.partitions[task.partition]
        p["files"] += 1
        p["bytes"] += done.bytes
        p["rows"] += done.rows
        result.files += 1
        result.bytes += done.bytes
        result.file_list.append(
            {"partition": task.partition, "path": done.path, "rows": done.rows, "bytes": done.bytes}
        )
    for ppath in sorted(plan.states):
        txn.catalog.add_component(txn_id, table.name, _spec(ppath), "insert_overwrite")
    result.rows_inserted = total
    return total, files, result


def _key_order(events: pa.Table) -> pa.Array:
    """Indices that sort ``events`` by ROW__ID (originalTransaction, bucket, rowId)."""
    return pc.sort_indices(events, sort_keys=[(k, "ascending") for k in acid_files.KEY_FIELDS[:3]])


def _spec(ppath: str) -> str | None:
    return ppath or None


def alter_table(
    catalog: Catalog,
    table_name: str,
    *,
    rename_column: tuple[str, str] | None = None,
    change_type: tuple[str, str] | None = None,
    comment: tuple[str, str | None] | None = None,
    add_columns: Sequence[Column | dict[str, Any]] | None = None,
    drop_columns: Sequence[str] | None = None,
    reorder: Sequence[str] | None = None,
    rewrite: bool = False,
    lock_timeout_s: float = 60.0,
    agent_info: str = "acidflow table alter",
) -> AlterResult:
    """Change a table's schema (module doc); exactly one of the change arguments.

    Args:
        catalog: the catalog; table_name: ``db.table``.
        rename_column: ``(old, new)``; change_type: ``(column, new Hive type)``;
        comment: ``(column, text or None)``; add_columns: columns to append;
        drop_columns: names; reorder: every data column in the new order.
        rewrite: allow drop/reorder by rewriting the data (one new base per partition).
        lock_timeout_s: seconds to wait for the exclusive lock (writers hold shared ones).
    Returns:
        :class:`AlterResult` (the committed change).
    Raises:
        SchemaChangeError: the change is refused (narrowing or incompatible type change,
            drop/reorder without ``rewrite``, unknown or partition column, name taken ...);
            nothing was written and no write id was used.
        acidflow.catalog.errors.LockTimeoutError: the lock was not granted in time (nothing
            was written; the transaction is aborted).
        acidflow.catalog.errors.NoSuchTableError: unknown table.
    """
    catalog.revert_aborted_schema_change(table_name, lock_timeout_s=lock_timeout_s)
    table = catalog.get_table(table_name)
    new_cols, change = _plan_change(
        table,
        rename_column=rename_column,
        change_type=change_type,
        comment=comment,
        add_columns=add_columns,
        drop_columns=drop_columns,
        reorder=reorder,
        rewrite=rewrite,
    )
    txn = Transaction(catalog, agent_info=agent_info)
    txn.begin()
    try:
        txn_id = txn.txn_id
        assert txn_id is not None
        write_id = txn.write_id(table.name)
        catalog.acquire_lock(txn_id, table.name, None, LockType.EXCLUSIVE, timeout_s=lock_timeout_s)
        current = catalog.get_table(table.name)
        if [c.to_dict() for c in current.columns] != [c.to_dict() for c in table.columns]:
            table = current  # changed while we waited: plan again against what is there now
            new_cols, change = _plan_change(
                table,
                rename_column=rename_column,
                change_type=change_type,
                comment=comment,
                add_columns=add_columns,
                drop_columns=drop_columns,
                reorder=reorder,
                rewrite=rewrite,
            )
        rows, files = 0, list[str]()
        result = WriteResult(write_id, 0)
        if change.get("rewrite"):
            rows, files, result = _rewrite(catalog, table, txn, write_id, new_cols)
        change["before"] = [c.to_dict() for c in table.columns]
        if change["op"] == "rename_column" and table.properties.get(POSITIONAL_PROPERTY) != "true":
            # Hive 3.1's ORC reader maps the row struct by NAME when a file names its columns
            # (acidflow's do; Hive's own are _col0, _col1 ...): positional from now on
            catalog.set_table_properties(table.name, {POSITIONAL_PROPERTY: "true"})
        after = catalog.alter_schema(txn_id, table.name, new_cols, change=change)
        txn.record(table.name, SCHEMA_OPERATION, result)
        txn.stats[table.name]["schema_change"] = change
        txn.stats[table.name]["schema"] = [c.to_dict() for c in after.columns]
    except BaseException as exc:
        txn.abort(f"{type(exc).__name__}: {exc}")
        _revert(catalog, table.name)
        raise
    try:
        txn.commit()
    except BaseException as exc:
        if catalog.get_transaction(txn_id).state == TxnState.OPEN:
            catalog.abort_transaction(txn_id, f"commit failed: {type(exc).__name__}: {exc}")
        _revert(catalog, table.name)
        raise
    return AlterResult(after, write_id, txn_id, change, rows, files)


def _revert(catalog: Catalog, name: str) -> None:
    """After the change's transaction was aborted: if the catalog had already taken its
    columns, put the committed ones back (``Catalog.revert_aborted_schema_change``, under an
    exclusive lock, recorded as a ``revert`` version). A failure here is logged, not raised
    (the original error is the one to report); writers stay stopped until the cleaner or the
    next ``table alter`` reverts."""
    try:
        catalog.revert_aborted_schema_change(name)
    except Exception as exc:  # noqa: BLE001 - the caller re-raises the original error
        log.warning("table %s: the aborted schema change is reverted later: %s", name, exc)
