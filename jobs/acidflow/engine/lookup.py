"""What a writer reads before it writes: the snapshot its transaction sees, narrowed to the
partitions and buckets a key batch can touch, and the current rows (with ``ROW__ID``) of those
keys -- the input of a delete's or a split-update's delete events.

The snapshot is the transaction's own ``ValidWriteIdList`` (Hive ``getValidWriteIds`` with the
caller's txn id, so the transaction's earlier statements are visible). Key lookups read only
the buckets the keys hash to (when the bucket columns are key columns), only the partitions
the keys name (when the partition columns are key columns), and in each base/delta file only
the stripes whose key statistics and bloom filters may hold one of the keys (the key index,
``acidflow.format.orc.orcindex``, applied by ``snapshot.read_task``; ``ACIDFLOW_KEY_INDEX=0`` turns it
off), and in each base the sidecar key index (the record-level index written by major
compaction, ``acidflow.read.keyindex``) answers without reading the base's key column
(``ACIDFLOW_KEY_SIDECAR=0`` turns it off; a missing or stale sidecar falls back to reading).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection, Iterable

import pyarrow as pa
import pyorc

from acidflow.engine.ports import TableDesc, TxnCatalog, TxnRef
from acidflow.engine.writer import BUCKET_COL, bucket_ids_arrow, with_buckets
from acidflow.format import keys
from acidflow.format import partitions as parts
from acidflow.read import keyindex, snapshot
from acidflow.storage.fs import TableFS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: A merge's key lookup reads in the driver (threads) when the files it plans to read hold at
#: most this many bytes, else as a Spark job (``ACIDFLOW_LOCAL_LOOKUP_BYTES``).
LOCAL_LOOKUP_BYTES = int(os.environ.get("ACIDFLOW_LOCAL_LOOKUP_BYTES", str(8 << 30)))


def _scope_columns(table: TableDesc) -> tuple[list[str] | None, bool]:
    """What a key batch can be narrowed by: the partition columns when all of them are key
    columns (else None), and whether the bucket columns are all key columns."""
    by_partition, by_bucket = keys.scope_rule(table)
    return ([c.name for c in table.partition_columns] if by_partition else None), by_bucket


def key_scope(table: TableDesc, keys_df: "DataFrame") -> tuple[list[str] | None, list[int] | None]:
    """Partitions and buckets the keys of a Spark DataFrame can touch (None = all)."""
    pnames, by_bucket = _scope_columns(table)
    partitions = buckets = None
    if pnames:
        rows = keys_df.select(*pnames).distinct().collect()
        partitions = [parts.make_partition_path([(p, r[p]) for p in pnames]) for r in rows]
    if by_bucket:
        rows = with_buckets(keys_df, table).select(BUCKET_COL).distinct().collect()
        buckets = [r[0] for r in rows]
    return partitions, buckets


def key_scope_arrow(table: TableDesc, keys: pa.Table) -> tuple[list[str] | None, list[int] | None]:
    """Partitions and buckets the keys of an Arrow table can touch (None = all), computed in
    this process (Hive's bucket hash of the bucket columns, as the writers use)."""
    pnames, by_bucket = _scope_columns(table)
    partitions = buckets = None
    if pnames:
        rows = keys.select(pnames).group_by(pnames).aggregate([]).to_pylist()
        partitions = [parts.make_partition_path([(p, r[p]) for p in pnames]) for r in rows]
    if by_bucket:
        buckets = sorted(set(bucket_ids_arrow(table, keys)))
    return partitions, buckets


@dataclass
class CurrentPlan:
    """The snapshot a writer sees, planned once: the transaction's own ``ValidWriteIdList``
    (its earlier statements included), restricted to partitions/buckets.

    Attributes:
        tfs, table_dir: where the table lives; plan: ``acidflow.read.snapshot`` read plan.
    """

    tfs: TableFS
    table_dir: str
    plan: snapshot.ReadPlan


def plan_current(
    catalog: TxnCatalog,
    table: TableDesc,
    txn: TxnRef | None,
    *,
    partitions: Iterable[str] | None = None,
    buckets: Iterable[int] | None = None,
    skip_partitions: Collection[str] = (),
) -> CurrentPlan:
    """Plan the read of the snapshot a writer sees (one catalog query, one listing), of
    ``partitions`` (None: all) but ``skip_partitions`` (partition paths), ``buckets`` (None:
    all).

    Raises:
        acidflow.format.layout.NotEnoughHistoryError: as ``snapshot.plan_read``.
    """
    valid = catalog.valid_write_ids(table.name, txn_id=txn.txn_id if txn else None)
    tfs = TableFS(table.location)
    current = CurrentPlan(
        tfs,
        table.location,
        snapshot.plan_read(
            tfs,
            table.location,
            [(c.name, c.hive_type) for c in table.columns],
            [(c.name, c.hive_type) for c in table.partition_columns],
            valid,
            bucketed=table.num_buckets > 0,
            partitions=partitions,
            buckets=buckets,
            txn_state=catalog.visibility_lookup(),
        ),
    )
    if skip_partitions:
        skip = set(skip_partitions)
        tasks = [t for t in current.plan.tasks if t.partition not in skip]
        current.plan = dataclasses.replace(current.plan, tasks=tasks)
    return current


def stored_column_max(current: CurrentPlan, column: str) -> tuple[bool, str | None]:
    """:func:`string_column_max` of a string column over the files of a
    planned snapshot (ORC footers only)."""
    return string_column_max(current.tfs, current.plan, column)


def split_by_column_bound(
    current: CurrentPlan, column: str, below: str
) -> tuple[CurrentPlan, CurrentPlan]:
    """The planned snapshot cut in two by the ORC statistics of a string column (footers
    only, :func:`string_column_maxima`): the files whose every value of
    ``column`` is known to be below ``below`` (or NULL), and the rest. A lookup can skip
    reading ``column`` in the first part: a CDC batch reads the stored ``_cdc_position`` only
    of the files that may hold a position as new as its oldest event (usually the recent
    deltas, not the base)."""
    maxima = string_column_maxima(current.tfs, current.plan, column)

    def older(f: snapshot.DataFile) -> bool:
        known, top = maxima.get(f.path, (False, None))
        return known and (top is None or top < below)

    old, rest = snapshot.split_plan(current.plan, older)
    return (
        CurrentPlan(current.tfs, current.table_dir, old),
        CurrentPlan(current.tfs, current.table_dir, rest),
    )


def lookup_rows(
    spark: "SparkSession | None",
    current: CurrentPlan,
    keys: pa.Table,
    *,
    project: list[str] | None = None,
    sidecar: bool | None = None,
) -> pa.Table:
    """The visible rows (with ROW__ID) of a planned snapshot whose key is among ``keys``, as an
    Arrow table in the driver (any row order).

    The bases with a usable sidecar key index are answered by it first
    (:func:`acidflow.read.keyindex.lookup_indexed`: binary search over the sorted key hashes,
    the candidates checked against the snapshot's write ids and delete events); the rest --
    deltas, original files, bases without a usable sidecar -- is read with the key filter and
    the column projection inside the ORC readers: in this process with one thread per core
    when those files are at most :data:`LOCAL_LOOKUP_BYTES` (or with no ``spark``), else as a
    Spark job.

    Args:
        keys: Arrow table of data key columns in primary key order.
        project: data columns to return (None: all).
        sidecar: use the sidecar key indexes (None: unless ``ACIDFLOW_KEY_SIDECAR=0``).
    Returns:
        Arrow table with ``current.plan.output_schema(row_id=True, project=project)``.
    """
    tfs = current.tfs
    indexed = keyindex.lookup_indexed(tfs, current.plan, keys, project=project, use=sidecar)
    plan = indexed.rest
    if not plan.tasks:
        return indexed.found
    if spark is None or snapshot.planned_bytes(tfs, plan) <= LOCAL_LOOKUP_BYTES:
        rest = snapshot.read_arrow_parallel(
            tfs, plan, threads=os.cpu_count() or 2, row_id=True, project=project, keys=keys
        )
    else:
        rest = snapshot.read_spark(
            spark, current.table_dir, plan, row_id=True, project=project, keys=keys
        ).toArrow()
    if not indexed.found.num_rows:
        return rest
    return pa.concat_tables([indexed.found, rest.cast(indexed.found.schema)])


def existing_rows_arrow(
    catalog: TxnCatalog,
    table: TableDesc,
    txn: TxnRef | None,
    keys_tbl: pa.Table,
    *,
    extra: Iterable[str] = (),
    spark: "SparkSession | None" = None,
    skip_partitions: Collection[str] = (),
) -> pa.Table:
    """The visible rows whose primary key is among ``keys_tbl`` (an Arrow table of the key
    columns), as an Arrow table in the driver: the key columns, the partition columns, the
    ``extra`` data columns and ``ROW__ID``. Only the partitions and buckets the keys can touch
    are planned (:func:`key_scope_arrow`), at ``txn``'s snapshot (None: the latest committed
    one), but ``skip_partitions``, and read by :func:`lookup_rows` (in this process without
    ``spark``)."""
    key = list(table.primary_key)
    data_cols = {c.name for c in table.columns}
    partitions, buckets = key_scope_arrow(table, keys_tbl)
    current = plan_current(
        catalog, table, txn, partitions=partitions, buckets=buckets, skip_partitions=skip_partitions
    )
    project = [k for k in key if k in data_cols]
    project += [f for f in extra if f in data_cols and f not in project]
    found = lookup_rows(
        spark, current, keys_tbl.select([k for k in key if k in data_cols]), project=project
    )
    if found.num_rows and any(k not in data_cols for k in key):
        # partition key columns are matched here (the readers filter data columns)
        wanted = set(zip(*(keys_tbl.column(k).to_pylist() for k in key)))
        got = zip(*(found.column(k).to_pylist() for k in key))
        found = found.filter(pa.array([t in wanted for t in got], pa.bool_()))
    return found


def row_id_columns(table: TableDesc, found: pa.Table) -> pa.Table:
    """The delete-event input of rows read with ``ROW__ID`` (Arrow): partition columns,
    ``owid``, ``bprop``, ``rowid``."""
    pnames = [c.name for c in table.partition_columns]
    rid = found.column(snapshot.ROW_ID).combine_chunks()
    return pa.table(
        [found.column(p) for p in pnames]
        + [rid.field("writeid"), rid.field("bucketid"), rid.field("rowid")],
        names=pnames + ["owid", "bprop", "rowid"],
    )


def current_rows(
    spark: "SparkSession",
    catalog: TxnCatalog,
    table: TableDesc,
    txn: TxnRef | None,
    *,
    partitions: Iterable[str] | None = None,
    buckets: Iterable[int] | None = None,
    row_id: bool = True,
    project: list[str] | None = None,
    keys: pa.Table | None = None,
    skip_partitions: Collection[str] = (),
) -> "DataFrame":
    """The table's visible rows for a writer: snapshot at the transaction's own
    ``ValidWriteIdList`` (its earlier statements included), restricted to partitions/buckets
    (:func:`plan_current`); ``project`` (data columns to read) and ``keys`` (rows whose key is
    among these) are pushed into the readers (``acidflow.read.snapshot.read_task``)."""
    cur = plan_current(
        catalog, table, txn, partitions=partitions, buckets=buckets, skip_partitions=skip_partitions
    )
    return snapshot.read_spark(
        spark, cur.table_dir, cur.plan, row_id=row_id, project=project, keys=keys
    )


def matching_rows(
    spark: "SparkSession",
    catalog: TxnCatalog,
    txn: TxnRef,
    table: TableDesc,
    keys_df: "DataFrame",
    extra: Iterable[str] = (),
    skip_partitions: Collection[str] = (),
) -> "DataFrame":
    """Existing rows (key columns, partition columns, the ``extra`` columns, ``owid``,
    ``bprop``, ``rowid`` of the ROW__ID) whose key is in ``keys_df``, in every partition the
    keys can touch but ``skip_partitions``.

    Raises:
        ValueError: the table has no primary key.
    """
    # deferred: pyspark stays out of the Arrow-only lookup path (lookup_rows)
    from pyspark.sql import functions as F

    key = list(table.primary_key)
    if not key:
        raise ValueError(f"table {table.name} has no primary key; delete/upsert need one")
    partitions, buckets = key_scope(table, keys_df)
    existing = current_rows(
        spark,
        catalog,
        table,
        txn,
        partitions=partitions,
        buckets=buckets,
        skip_partitions=skip_partitions,
    )
    pnames = [c.name for c in table.partition_columns]
    cols = list(dict.fromkeys(key + pnames + list(extra)))
    existing = existing.select(
        *cols,
        F.col(snapshot.ROW_ID + ".writeid").alias("owid"),
        F.col(snapshot.ROW_ID + ".bucketid").alias("bprop"),
        F.col(snapshot.ROW_ID + ".rowid").alias("rowid"),
    )
    return existing.join(keys_df.select(*key).distinct(), on=key, how="left_semi")


def string_column_maxima(
    tfs: TableFS, plan: snapshot.ReadPlan, column: str
) -> dict[str, tuple[bool, str | None]]:
    """Upper bound of a string data column in each insert-side file a plan reads, from the ORC
    file statistics alone (footers, no data): ``{path: (True, max)}``, ``(True, None)`` when
    every value in the file is NULL or the file has no such column (added later), ``(False,
    None)`` when the file has no usable statistics (original files, or a writer that wrote
    none) -- the caller must then read the column of that file. ORC may truncate long string
    statistics, but only to a bound that is still >= the true maximum (ORC-203), which is all a
    caller comparing with it needs."""
    idx = [n for n, _ in plan.columns].index(column)
    out: dict[str, tuple[bool, str | None]] = {}
    for f in {f.path: f for t in plan.tasks for f in t.data_files}.values():
        out[f.path] = (False, None) if f.kind == "original" else _file_string_max(tfs, f.path, idx)
    return out


def _file_string_max(tfs: TableFS, path: str, idx: int) -> tuple[bool, str | None]:
    """One file's bound of the ``idx``-th row column (see :func:`string_column_maxima`)."""
    with tfs.open(path, "rb") as fh:
        reader = pyorc.Reader(fh)
        schema: Any = reader.schema  # a struct TypeDescription (pyorc's stubs lack .fields)
        top = list(schema.fields.values())
        if len(top) != 6:
            return False, None
        fields = list(top[5].fields.values())
        if idx >= len(fields):
            return True, None  # the column was added after this file was written: all NULL
        stats = reader[fields[idx].column_id].statistics
    if not stats.get("number_of_values"):
        return True, None
    top_value = stats.get("maximum")
    return (True, top_value) if isinstance(top_value, str) else (False, None)


def string_column_max(
    tfs: TableFS, plan: snapshot.ReadPlan, column: str
) -> tuple[bool, str | None]:
    """Upper bound of a string data column over every insert-side file a plan reads:
    ``(True, max)``, ``(True, None)`` when all values are NULL, ``(False, None)`` when some
    file has no usable statistics (see :func:`string_column_maxima`)."""
    best = None
    for known, top_value in string_column_maxima(tfs, plan, column).values():
        if not known:
            return False, None
        if top_value is not None and (best is None or top_value > best):
            best = top_value
    return True, best
