"""INSERT INTO / INSERT OVERWRITE statements whose event files are written elsewhere.

A Spark data source write (``acidflow.datasource``) opens the statement in one Python worker,
has Spark tasks write the event files (``acidflow.engine.writer.write_task``) and ends it from
another worker with the file rows the tasks returned; ``Transaction.insert`` and
``Transaction.insert_overwrite`` end theirs through the same epilogue
(:func:`end_insert_statement`).
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from acidflow.engine.ports import StatementContext
from acidflow.engine.writer import FileRow, WriteResult, WriteSpec, write_delete_events
from acidflow.format.table import TableDesc
from acidflow.states import LockType

__all__ = ["begin_insert", "end_insert", "end_insert_statement", "end_upsert"]


def begin_insert(
    txn: StatementContext, table_name: str, *, overwrite: bool = False, **options: Any
) -> tuple[TableDesc, WriteSpec]:
    """Open an INSERT INTO (or, ``overwrite``, INSERT OVERWRITE) statement of ``txn`` whose
    event files are written elsewhere (with the returned spec or copies of it with higher
    statement ids): the same lock (shared write, exclusive for an overwrite), write id and
    statement id as ``Transaction.insert`` / ``insert_overwrite``. End it with
    :func:`end_insert`.

    Returns:
        ``(table, spec)``: spec kind ``insert`` (``delta_W_W_S``) or ``base`` (``base_W``).
    Raises:
        SchemaMismatchError: the table's schema changed while waiting for the lock.
        acidflow.catalog.errors.LockTimeoutError: the lock was not granted.
    """
    table = txn.catalog.get_table(table_name)
    txn.lock_table(table, LockType.EXCLUSIVE if overwrite else LockType.SHARED_WRITE)
    (spec,) = txn.begin_statement(table, "base" if overwrite else "insert", **options)
    return table, spec


def end_insert(
    txn: StatementContext,
    table: TableDesc,
    written: Sequence[tuple[WriteSpec, list[FileRow]]],
    *,
    overwrite: bool = False,
    partitions: Sequence[str] = (),
) -> WriteResult:
    """End a statement opened by :func:`begin_insert` with the file rows its writers returned
    (``write_task`` results, one list per spec), exactly as ``Transaction.insert`` /
    ``insert_overwrite`` end theirs. Specs may carry statement ids above the one handed out
    (one per writer task, as Hive numbers the statements of one write id): they count as
    used.

    Args:
        partitions: overwrite only: partition paths to empty even when no row went there.
    Raises:
        ValueError: a statement id above 4095.
    """
    last = max([spec.statement_id for spec, _ in written] or [0])
    txn.reserve_statement_ids(table.name, last)
    return end_insert_statement(txn, table, written, overwrite=overwrite, partitions=partitions)


def end_upsert(
    txn: StatementContext,
    table: TableDesc,
    written: Sequence[tuple[WriteSpec, list[FileRow]]],
    deletes: pa.Table,
    **options: Any,
) -> WriteResult:
    """End an INSERT INTO opened by :func:`begin_insert` whose rows replace stored rows of
    their keys (the ``acid`` data source's ``onExisting=upsert``): delete events for the
    ROW__IDs in ``deletes`` (partition columns, ``owid``, ``bprop``, ``rowid``), written here
    under the next statement id of the same write id, and one ``upsert`` statement record with
    ``Transaction.split_update``'s counts and components (a partition with a delete event is
    an ``update`` component).

    Args:
        options: writer options of the delete events (``compression``, ``stripe_rows``).
    Raises:
        ValueError: a statement id above 4095.
    """
    last = max([spec.statement_id for spec, _ in written] or [0])
    txn.reserve_statement_ids(table.name, last)
    (del_spec,) = txn.begin_statement(table, "delete", **options)
    del_files = write_delete_events(deletes, table, del_spec)
    ins_files = [f for _, fs in written for f in fs]
    deleted = sum(f["rows"] for f in del_files)
    counts = {"rows_updated": deleted, "rows_inserted": sum(f["rows"] for f in ins_files) - deleted}
    del_parts = {f["partition"] for f in del_files}
    components = [(p, "update") for p in sorted(del_parts)]
    components += [(p, "insert") for p in sorted({f["partition"] for f in ins_files} - del_parts)]
    return txn.end_statement(table, "upsert", [(del_spec, del_files), *written], components, counts)


def end_insert_statement(
    txn: StatementContext,
    table: TableDesc,
    written: Sequence[tuple[WriteSpec, list[FileRow]]],
    *,
    overwrite: bool,
    partitions: Sequence[str] = (),
) -> WriteResult:
    """The epilogue of an INSERT INTO (``overwrite`` False: every partition written is an
    ``insert`` component) or INSERT OVERWRITE (``base_W`` also in each of ``partitions``,
    emptied when no row went there, or at the table root of an unpartitioned table; every
    touched partition is an ``insert_overwrite`` component)."""
    files = [f for _, fs in written for f in fs]
    counts = {"rows_inserted": sum(f["rows"] for f in files)}
    if not overwrite:
        return txn.end_statement(
            table,
            "insert",
            written,
            [(p, "insert") for p in sorted({f["partition"] for f in files})],
            counts,
        )
    touched = sorted({f["partition"] for f in files} | set(partitions)) or [""]
    return txn.end_statement(
        table,
        "insert_overwrite",
        written,
        [(p, "insert_overwrite") for p in touched],
        counts,
        extra_partitions=partitions if table.partition_columns else [""],
    )
