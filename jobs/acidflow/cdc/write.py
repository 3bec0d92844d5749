"""The write step of a CDC batch: a merge plan (new row versions and the ROW__IDs they replace)
becomes one split-update statement of the batch transaction, written in this process or, for a
large batch, by Spark tasks.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from acidflow.catalog import TableDef
from acidflow.cdc import changes as chg
from acidflow.cdc import stored
from acidflow.engine.statements import changes
from acidflow.sparkmode import arrow_frame

#: A batch's merge plan (already in the driver) is written by this process when it has at most
#: this many insert + delete rows, else by Spark tasks (``ACIDFLOW_LOCAL_WRITE_ROWS``).
LOCAL_WRITE_ROWS = int(os.environ.get("ACIDFLOW_LOCAL_WRITE_ROWS", "2000000"))


def delete_rows(table: TableDef, plan: chg.MergePlan) -> pa.Table:
    """The plan's deletes as ``apply_row_changes``' delete events (partition columns,
    ``owid``, ``bprop``, ``rowid``)."""
    pcols = [(c.name, c.hive_type) for c in table.partition_columns]
    del_rows = [
        {**{p: row.get(p) for p, _ in pcols}, "owid": rid[0], "bprop": rid[1], "rowid": rid[2]}
        for row, rid in plan.deletes
    ]
    return stored.arrow_rows(
        del_rows, pcols + [("owid", "bigint"), ("bprop", "int"), ("rowid", "bigint")]
    )


def write_arrow(
    spark: Any,
    txn: Any,
    table: TableDef,
    inserts: pa.Table,
    deletes: pa.Table,
    stats: dict[str, int],
) -> Any:
    """Write new row versions (``inserts``: the table's columns, ``types.arrow_schema``) and
    delete events (``deletes``: partition columns, ``owid``, ``bprop``, ``rowid``) as one
    split-update statement (``changes.apply_row_changes``); Spark tasks write them when
    they exceed :data:`LOCAL_WRITE_ROWS` rows. ``stats``: the plan's statistics (the commit
    record's counts)."""
    if inserts.num_rows + deletes.num_rows > LOCAL_WRITE_ROWS:
        inserts, deletes = arrow_frame(spark, inserts), arrow_frame(spark, deletes)
    counts = {k: stats[k] for k in ("rows_inserted", "rows_updated", "rows_deleted")}
    return changes.apply_row_changes(
        txn, table.name, inserts, deletes, counts=counts, operation="cdc_merge"
    )
