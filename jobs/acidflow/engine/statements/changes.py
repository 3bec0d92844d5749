"""The split-update primitive behind CDC merges and restores: in one statement, delete the row
versions a caller already looked up and insert new rows.

Hive's ``OrcRecordUpdater`` in split-update mode writes an UPDATE as a delete event for the old
ROW__ID plus an insert event with a new one (docs/hive-acid-format.md §5); a CDC batch or a
restore knows the ROW__IDs it replaces (read at the transaction's snapshot), so it hands both
halves over at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from acidflow.engine import conform
from acidflow.engine.ports import StatementContext
from acidflow.states import LockType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from acidflow.engine.writer import WriteResult

__all__ = ["apply_row_changes"]


def apply_row_changes(
    txn: StatementContext,
    table_name: str,
    inserts_df: "DataFrame | pa.Table",
    deletes_df: "DataFrame | pa.Table",
    *,
    counts: dict[str, int],
    operation: str = "merge",
    **options: Any,
) -> "WriteResult":
    """Delete the row versions named by ``deletes_df`` and insert the rows of ``inserts_df``
    in one split-update statement of ``txn``.

    Args:
        txn: the open transaction (``acidflow.engine.transaction.Transaction``).
        table_name: ``db.table``.
        inserts_df: full rows (every column; aligned and cast like ``Transaction.insert``).
            A Spark DataFrame is written by Spark tasks; a pyarrow Table (columns and types
            exactly the table's, as ``acidflow.format.types.arrow_schema`` gives) is written in
            this process -- much cheaper for a change batch already in the driver.
        deletes_df: one row per row version to delete: the table's partition columns plus
            ``owid`` (originalTransaction), ``bprop`` (bucket property) and ``rowid`` (the
            ROW__ID read at the transaction's snapshot, e.g. from
            ``acidflow.engine.lookup.current_rows``); Spark DataFrame or pyarrow Table.
        counts: ``{"rows_inserted", "rows_updated", "rows_deleted"}`` for the commit record
            (the caller knows which delete+insert pairs are updates).
        operation: name recorded in the commit record's operation list.
    Returns:
        The statement's ``WriteResult``.
    Raises:
        SchemaMismatchError: ``inserts_df`` does not fit the table (nothing written).
        acidflow.catalog.errors.LockTimeoutError: the table's lock was not granted.
    """
    table = txn.catalog.get_table(table_name)
    if isinstance(inserts_df, pa.Table):
        aligned: "DataFrame | pa.Table" = conform.aligned_arrow(inserts_df, table)
    else:
        aligned = conform.aligned(inserts_df, table)
    txn.lock_table(table, LockType.SHARED_WRITE)
    return txn.split_update(table, aligned, deletes_df, operation, counts, **options)
