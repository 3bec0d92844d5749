"""Reads of catalog tables and of bare table directories: the glue between the catalog
(``ValidWriteIdList`` of a table) and the merge-on-read engine (``acidflow.read.snapshot``).

* :func:`read_table` -- snapshot read (current, or as of a write id: time travel while the files
  exist), optionally read-optimized (base only), with ``ROW__ID`` / ``INPUT__FILE__NAME``.
* :func:`read_incremental` -- the changes between two write ids, as rows with an ``op`` column
  (``I`` inserted, ``D`` deleted; an update shows as a ``D`` of the old version and an ``I`` of
  the new one, as split-update stores it).
* :func:`describe_path` / :func:`plan_path` -- a bare directory with no catalog entry (Hive- or
  Trino-written data): schema from the files, partitions from ``key=value`` directories.
* :func:`reader_snapshot` -- a registered, heartbeating snapshot for long reads: the compactor's
  cleaner does not delete directories such a reader may still need (see below).

Reader registration: every catalog read registers itself (``Catalog.register_reader``) before it
takes its ValidWriteIdList, so the cleaner waits for it before deleting directories made obsolete
by a compaction that committed after the snapshot. A pyarrow read (``spark=None``) is eager and
unregisters when done. A Spark DataFrame is lazy: :func:`read_table` cannot know when it is
consumed, so without an explicit snapshot its registration is left to expire after the catalog's
heartbeat timeout (``ACIDFLOW_TXN_TIMEOUT``, 300 s) -- enough for short jobs. Long Spark reads
should pin their snapshot explicitly::

    with reads.reader_snapshot(catalog, "db.t") as snap:     # registers + heartbeats
        df = snap.read(spark)                                # or read_table(..., snapshot=snap)
        df.write.parquet(...)                                # consume inside the block

``spark=None`` runs the same tasks in this process with pyarrow (the CLI uses it; no JVM).
"""

from __future__ import annotations

import logging
import posixpath
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.catalog.schemahistory import renames_of
from acidflow.format import partitions as parts
from acidflow.format import types as htypes
from acidflow.format.layout import (
    NotEnoughHistoryError,
    ValidWriteIdList,
    is_hidden,
    parse_base,
    parse_delta,
)
from acidflow.format.orc import files as acid_files
from acidflow.format.schemaevolution import read_as
from acidflow.read import history, predicates, snapshot
from acidflow.read.selection import output_columns, spark_condition
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state

if TYPE_CHECKING:
    from acidflow.catalog.base import Catalog
    from acidflow.format.layout import AcidState

LONG_MAX = 2**63 - 1

log = logging.getLogger(__name__)


def plan_table(
    catalog: Catalog,
    name: str,
    *,
    as_of_write_id: int | None = None,
    txn_id: int | None = None,
    read_optimized: bool = False,
    partitions: Iterable[str] | None = None,
    buckets: Iterable[int] | None = None,
    valid: ValidWriteIdList | None = None,
    as_of_timestamp: datetime | None = None,
    where: predicates.Where | None = None,
) -> snapshot.ReadPlan:
    """Plan a snapshot read of a catalog table.

    Args:
        catalog: ``acidflow.catalog.Catalog``.
        name: table name.
        as_of_write_id: time travel: the committed state right after this write id's commit
            (``Catalog.valid_write_ids``: write ids that committed before it are in it, even
            higher ones; lower ones that committed later are not).
        as_of_timestamp: time travel: the state after the last commit at or before this time
            (naive = UTC); not with ``as_of_write_id``.
        txn_id: read inside this transaction (its own writes are visible).
        read_optimized: base only.
        valid: use this ValidWriteIdList (a pinned snapshot) instead of asking the catalog.
        where: a row filter (:mod:`acidflow.read.predicates`): its predicates on partition
            columns prune the partitions planned (partition values typed per the column's
            Hive type; the plan's tasks cover only matching partitions). Predicates on data
            columns are applied when the plan runs (:func:`run_plan`).
    The plan's columns are the schema version the snapshot sees (``Catalog.schema_for``).
    Every file the snapshot reads is checked against the catalog's record of it
    (``Catalog.data_file_records``, :mod:`acidflow.format.filecheck`); files a repair
    acknowledged lost are left out and logged (``plan.lost``).
    Raises:
        acidflow.format.filecheck.MissingDataFileError / DataFileMismatchError: a recorded file
            of the snapshot is missing or has another size (names table, file, write id).
        acidflow.catalog.errors.NoSuchTableError; acidflow.format.layout.NotEnoughHistoryError when the
        files for an old snapshot were cleaned (beyond retention, ``acidflow.read.history``): the
        message ends with "the oldest write id still readable is N".
    """
    table = catalog.get_table(name)
    if valid is None:
        valid = (
            catalog.valid_write_ids(table.name, txn_id=txn_id, as_of_write_id=as_of_write_id)
            if as_of_timestamp is None
            else catalog.valid_write_ids(
                table.name, as_of_write_id=as_of_write_id, as_of_timestamp=as_of_timestamp
            )
        )
    tfs = TableFS(table.location)
    # the schema of the snapshot (a time-travel read sees the names and types of its
    # time; a schema change is seen once its transaction committed)
    columns = catalog.schema_for(table, valid)
    pcols = [(c.name, c.hive_type) for c in table.partition_columns]
    on_parts, _ = predicates.split(
        predicates.parse_where(
            where, [(c.name, c.hive_type) for c in columns], pcols, table=table.name
        ),
        pcols,
    )
    wanted = None if partitions is None else list(partitions)
    only = wanted[0] if wanted is not None and len(wanted) == 1 else None
    try:
        plan = snapshot.plan_read(
            tfs,
            table.location,
            [(c.name, c.hive_type) for c in columns],
            pcols,
            valid,
            bucketed=table.num_buckets > 0,
            read_optimized=read_optimized,
            partitions=wanted,
            buckets=buckets,
            txn_state=catalog.visibility_lookup(),
            file_records=catalog.data_file_records(table.name, only),
            table_name=table.name,
            partition_filter=(
                (lambda ppath: predicates.partition_matches(on_parts, pcols, ppath))
                if on_parts
                else None
            ),
        )
    except NotEnoughHistoryError as exc:
        if exc.oldest_readable_write_id is not None:
            raise
        oldest = history.oldest_readable_write_id(catalog, table.name)
        if oldest is None:
            raise
        raise exc.with_oldest_readable(oldest) from None
    for r in plan.lost:
        log.warning(
            "table %s: %s/%s (write id %s, %s events) was acknowledged lost (%s); read without it",
            table.name,
            r.partition or ".",
            r.path,
            r.write_id,
            r.rows,
            r.note,
        )
    return plan


def run_plan(
    spark: Any,
    plan: snapshot.ReadPlan,
    *,
    row_id: bool = False,
    file_name: bool = False,
    columns: Sequence[str] | None = None,
    where: predicates.Where | None = None,
) -> Any:
    """Execute a plan: a Spark DataFrame when ``spark`` is given, else a ``pyarrow.Table``.

    With Spark the executor is ``ACIDFLOW_SPARK_READER``'s
    (:func:`acidflow.read.engine.reader_setting`): acidflow's JVM reader (``jvm``, the default:
    :func:`acidflow.read.jvm.read_jvm`, which hands the plans it cannot read, and every plan
    of a session without the reader on its class path, to ``arrow``),
    Spark's own ORC scans (``engine``: :func:`acidflow.read.engine.read_engine`) or
    ``mapInArrow`` + pyarrow (``arrow``: :func:`acidflow.read.snapshot.read_spark`).

    Args:
        columns: the output columns, in this order (:func:`read_table`); None = all.
        where: a row filter (:mod:`acidflow.read.predicates`), applied exactly. pyarrow and
            ``arrow`` executors: inside the read tasks (partition and stripe skipping, then
            the rows); ``jvm``: stripes cut on the driver
            (:func:`acidflow.read.jvm.prune_stripes`), then a Spark filter on the reader's
            rows; ``engine``: as a Spark filter on the scans' DataFrame, which Spark's
            ORC source pushes down itself (``spark.sql.orc.filterPushdown``), and ORC
            column pruning by Spark's nested schema pruning.
    Raises:
        acidflow.read.engine.ReaderSettingError: an unknown ``ACIDFLOW_SPARK_READER``.
        UnknownColumnError: ``columns`` names a column the plan does not have.
        acidflow.read.predicates.PredicateError: a malformed ``where``.
    """
    preds = predicates.parse_where(where, plan.columns, plan.partition_columns)
    project, row_id, file_name, order = output_columns(plan, columns, row_id, file_name)
    if spark is None:
        t = snapshot.read_arrow(
            TableFS(plan.table_dir),
            plan,
            row_id=row_id,
            file_name=file_name,
            project=project,
            where=preds or None,
        )
        return t if order is None else t.select(order)
    # deferred: the Spark executors import pyspark; reads without Spark (the CLI) never load it
    from acidflow.read import engine, jvm

    setting = engine.reader_setting()
    if setting == engine.JVM:
        df = jvm.read_jvm(
            spark, plan, row_id=row_id, file_name=file_name, project=project, where=preds or None
        )
    elif setting == engine.ENGINE:
        needed = (
            None
            if project is None
            else sorted(set(project) | {p.column for p in preds if p.column in dict(plan.columns)})
        )
        df = engine.read_engine(spark, plan, row_id=row_id, file_name=file_name, project=needed)
        if preds:
            df = df.filter(spark_condition(preds))
    else:
        df = snapshot.read_spark(
            spark,
            plan.table_dir,
            plan,
            row_id=row_id,
            file_name=file_name,
            project=project,
            where=preds or None,
        )
    return df if order is None else df.select(*[f"`{c}`" for c in order])


def read_table(
    spark: Any,
    catalog: Catalog,
    name: str,
    *,
    as_of_write_id: int | None = None,
    read_optimized: bool = False,
    row_id: bool = False,
    file_name: bool = False,
    txn_id: int | None = None,
    snapshot: ReaderSnapshot | None = None,
    as_of_timestamp: datetime | None = None,
    columns: Sequence[str] | None = None,
    where: predicates.Where | None = None,
) -> Any:
    """Visible rows of a catalog table (see :func:`plan_table` for the arguments;
    ``as_of_timestamp``: the state after the last commit at or before it).

    ``columns``: the output columns in this order (data columns, partition columns,
    ``ROW__ID``, ``INPUT__FILE__NAME``; case-insensitive); only the data columns named are
    decoded (ORC column projection). ``ROW__ID`` / ``INPUT__FILE__NAME`` asked by flag are
    appended when not named. None = every column.

    ``where``: a row filter, ``[(column, op, value), ...]`` ANDed (:mod:`acidflow.read.predicates`:
    ``=, !=, <, <=, >, >=, in, is null, is not null``). The result is exactly the rows of
    the unfiltered read that pass it; pushdown only skips work: partition pruning (predicates
    on partition columns), and stripes whose ORC statistics (min/max, NULLs) or bloom filters
    (``=`` / ``in``) prove no row matches (delete events are always applied; a column added
    after a file was written reads as NULL there). ``ACIDFLOW_SPARK_READER=engine`` hands the
    filter and the columns to Spark's ORC source, which pushes and prunes natively.

    The read is registered with the catalog for the cleaner (module doc): a pyarrow read
    unregisters when done; a Spark read's registration expires after the heartbeat timeout
    unless ``snapshot`` (from :func:`reader_snapshot`) is given, whose ValidWriteIdList is then
    used (``as_of_write_id`` / ``as_of_timestamp`` / ``txn_id`` are ignored).

    Returns:
        Spark DataFrame (or ``pyarrow.Table`` when ``spark`` is None): table columns, partition
        columns, then ``ROW__ID`` / ``INPUT__FILE__NAME`` when asked.
    """
    if snapshot is not None:
        plan = plan_table(
            catalog,
            name,
            read_optimized=read_optimized,
            valid=snapshot.valid_write_ids,
            where=where,
        )
        return run_plan(
            spark, plan, row_id=row_id, file_name=file_name, columns=columns, where=where
        )
    reader = catalog.register_reader(name, agent_info="read_table" + (" (spark)" if spark else ""))
    try:
        plan = plan_table(
            catalog,
            name,
            as_of_write_id=as_of_write_id,
            txn_id=txn_id,
            read_optimized=read_optimized,
            as_of_timestamp=as_of_timestamp,
            where=where,
        )
        result = run_plan(
            spark, plan, row_id=row_id, file_name=file_name, columns=columns, where=where
        )
    except BaseException:
        catalog.unregister_reader(reader.reader_id)
        raise
    if spark is None:
        catalog.unregister_reader(reader.reader_id)
    else:
        catalog.set_reader_snapshot(reader.reader_id, plan.valid_write_ids)
    return result


class ReaderSnapshot:
    """A registered snapshot of one table: its ValidWriteIdList is fixed at creation, and a
    daemon thread heartbeats the registration so the cleaner keeps every directory the
    snapshot needs until :meth:`close`.

    Args:
        catalog: ``acidflow.catalog.Catalog``; name: table.
        as_of_write_id / as_of_timestamp / txn_id: as in :func:`plan_table`.
        heartbeat_s: heartbeat period (default a third of the catalog's ``txn_timeout_s``).
    Attributes:
        reader_id: the registration id; valid_write_ids: the pinned snapshot.
    Raises:
        NoSuchTableError.
    """

    def __init__(
        self,
        catalog: Catalog,
        name: str,
        *,
        as_of_write_id: int | None = None,
        txn_id: int | None = None,
        heartbeat_s: float | None = None,
        as_of_timestamp: datetime | None = None,
    ) -> None:
        self.catalog, self.name = catalog, name
        info = catalog.register_reader(name, agent_info="reader_snapshot")
        self.reader_id = info.reader_id
        try:
            self.valid_write_ids = (
                catalog.valid_write_ids(name, txn_id=txn_id, as_of_write_id=as_of_write_id)
                if as_of_timestamp is None
                else catalog.valid_write_ids(name, as_of_timestamp=as_of_timestamp)
            )
            catalog.set_reader_snapshot(self.reader_id, self.valid_write_ids)
        except BaseException:
            catalog.unregister_reader(self.reader_id)
            raise
        self._period = (catalog.txn_timeout_s / 3.0) if heartbeat_s is None else heartbeat_s
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, daemon=True, name=f"reader-{self.reader_id}-heartbeat"
        )
        if self._period > 0:
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self.catalog.heartbeat_reader(self.reader_id)
            except Exception:  # noqa: BLE001 - the next beat retries
                pass

    def read(
        self,
        spark: Any,
        *,
        read_optimized: bool = False,
        row_id: bool = False,
        file_name: bool = False,
        columns: Sequence[str] | None = None,
        where: predicates.Where | None = None,
    ) -> Any:
        """Rows of the pinned snapshot (Spark DataFrame, or pyarrow Table when spark is None);
        ``columns`` / ``where`` as in :func:`read_table`."""
        return read_table(
            spark,
            self.catalog,
            self.name,
            read_optimized=read_optimized,
            row_id=row_id,
            file_name=file_name,
            snapshot=self,
            columns=columns,
            where=where,
        )

    def close(self) -> None:
        """Stop heartbeating and unregister (the cleaner may then delete old directories)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.catalog.unregister_reader(self.reader_id)

    def __enter__(self) -> "ReaderSnapshot":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reader_snapshot(catalog: Catalog, name: str, **kwargs: Any) -> ReaderSnapshot:
    """A :class:`ReaderSnapshot` for ``with``-blocks around long reads (consume the DataFrame
    inside the block)."""
    return ReaderSnapshot(catalog, name, **kwargs)


def read_incremental(
    spark: Any,
    catalog: Catalog,
    name: str,
    start_write_id: int | None = None,
    end_write_id: int | None = None,
    *,
    start_timestamp: datetime | None = None,
    end_timestamp: datetime | None = None,
) -> Any:
    """Changes between the committed states as of ``start_write_id`` (exclusive) and
    ``end_write_id`` (inclusive, default the current state); each state as
    ``read_table(as_of_write_id=)`` shows it (the state right after that write id's commit).
    ``start_timestamp`` / ``end_timestamp`` (naive = UTC) instead: the states after the last
    commit at or before those times (:func:`acidflow.read.history.write_id_at`).

    Returns:
        Spark DataFrame (a ``pyarrow.Table`` when ``spark`` is None, the same columns and
        rows): ``op`` (``I``/``D``), ``write_id`` (the write id that inserted the row for
        ``I``; NULL for ``D``), the table and partition columns, ``ROW__ID``. ``I`` = rows of
        the end state that the start state does not have, ``D`` = rows of the start state the
        end state no longer has (by partition and ROW__ID); rows inserted and deleted inside
        the range do not appear.
    Raises:
        ValueError: the start state comes after the end state (commit order), or neither or
            both of ``start_write_id`` / ``start_timestamp`` given.
    """
    start, end = incremental_range(
        catalog, name, start_write_id, end_write_id, start_timestamp, end_timestamp
    )
    if spark is None:
        return _incremental_arrow(catalog, name, start, end)
    # deferred: reads run without Spark (the CLI, pyarrow readers); only this one needs it
    from pyspark.sql import functions as F

    before = read_table(spark, catalog, name, as_of_write_id=start, row_id=True)
    before = _in_schema_of_end(before, catalog, name, start, end)
    after = read_table(spark, catalog, name, as_of_write_id=end, row_id=True)
    rid = snapshot.ROW_ID
    # a ROW__ID is unique within a partition only (every partition's files count rowids from
    # 0): a version is new / gone when its (partition, ROW__ID) is
    pnames = [p.name for p in catalog.get_table(name).partition_columns]
    part = (
        F.concat_ws(
            "\u0001", *[F.coalesce(F.col(f"`{p}`").cast("string"), F.lit("\u0000")) for p in pnames]
        )
        if pnames
        else F.lit("")
    )
    inserted = (
        after.withColumn("__part", part)
        .join(before.select(rid, part.alias("__part")), on=[rid, "__part"], how="left_anti")
        .drop("__part")
        .withColumn("op", F.lit("I"))
        .withColumn("write_id", F.col(rid + ".writeid"))
    )
    gone = (
        before.withColumn("__part", part)
        .join(after.select(rid, part.alias("__part")), on=[rid, "__part"], how="left_anti")
        .drop("__part")
    )
    deleted = gone.withColumn("op", F.lit("D")).withColumn("write_id", F.lit(None).cast("bigint"))
    cols = ["op", "write_id"] + [c for c in after.columns]
    return deleted.select(*cols).unionByName(inserted.select(*cols))


def incremental_range(
    catalog: Catalog,
    name: str,
    start_write_id: int | None,
    end_write_id: int | None = None,
    start_timestamp: datetime | None = None,
    end_timestamp: datetime | None = None,
) -> tuple[int, int]:
    """The start and end write ids of an incremental read (timestamps resolved to the write
    id of the last commit at or before them; end default the current state).

    Raises:
        ValueError: neither or both of a start write id and timestamp (or both end ones),
            or the start state after the end state in commit order.
        NoSuchTableError.
    """
    if (start_write_id is None) == (start_timestamp is None):
        raise ValueError("give exactly one of start_write_id and start_timestamp")
    if end_write_id is not None and end_timestamp is not None:
        raise ValueError("give end_write_id or end_timestamp, not both")
    start = (
        start_write_id
        if start_write_id is not None
        else history.write_id_at(catalog, name, start_timestamp)  # type: ignore[arg-type]
    )
    end = end_write_id
    if end_timestamp is not None:
        end = history.write_id_at(catalog, name, end_timestamp)
    return start, incremental_end(catalog, name, start, end)


def incremental_end(
    catalog: Catalog, name: str, start_write_id: int, end_write_id: int | None = None
) -> int:
    """The end write id of an incremental read (``end_write_id``, default the table's current
    high watermark).

    Raises:
        ValueError: the state as of ``start_write_id`` comes after the end's in commit order.
        NoSuchTableError.
    """
    end = end_write_id
    if end is None:
        end = catalog.valid_write_ids(catalog.get_table(name).name).high_watermark
    if history.commit_position(catalog, name, start_write_id) > history.commit_position(
        catalog, name, end
    ):
        raise ValueError(
            f"start write id {start_write_id} is after end write id {end} (commit order)"
        )
    return end


def end_schema_mapping(
    catalog: Catalog, name: str, start: int, end: int
) -> list[tuple[str, str | None, str]] | None:
    """How rows read as of ``start`` map onto ``end``'s schema version: one
    ``(end name, start name or None, end hive type)`` per data column of ``end``; columns
    renamed in between take their new names (``change["renames"]`` of every version committed
    the end state sees and the start state does not,
    :func:`acidflow.catalog.schemahistory.renames_of`), widened ones the new type, added ones
    NULL (start name None), dropped ones go. None when the schema did not change."""
    start_cols = catalog.schema_at(name, start)
    table_name = catalog.get_table(name).name
    start_valid = catalog.valid_write_ids(table_name, as_of_write_id=start)
    end_valid = catalog.valid_write_ids(table_name, as_of_write_id=end)
    end_cols = catalog.schema_for(name, end_valid)
    if [(c.name, c.hive_type) for c in start_cols] == [(c.name, c.hive_type) for c in end_cols]:
        return None
    current = {c.name: c.name for c in start_cols}  # start name -> its name now
    for version in catalog.schema_history(name):
        if end_valid.is_write_id_valid(version.write_id) and not start_valid.is_write_id_valid(
            version.write_id
        ):
            renames = renames_of(version)
            current = {old: renames.get(now, now) for old, now in current.items()}
    source = {now: old for old, now in current.items()}
    return [(c.name, source.get(c.name), c.hive_type) for c in end_cols]


def _in_schema_of_end(df: Any, catalog: Catalog, name: str, start: int, end: int) -> Any:
    """A Spark DataFrame read as of ``start`` in the columns of ``end``'s schema version
    (:func:`end_schema_mapping`); the same DataFrame when the schema did not change."""
    mapping = end_schema_mapping(catalog, name, start, end)
    if mapping is None:
        return df
    # deferred: only the Spark incremental read needs pyspark here
    from pyspark.sql import functions as F

    from acidflow import sparktypes  # deferred: it imports pyspark

    cols = []
    for end_name, start_name, hive_type in mapping:
        dtype = sparktypes.spark_type(hive_type)
        src = F.col(f"`{start_name}`") if start_name is not None else F.lit(None)
        cols.append(src.cast(dtype).alias(end_name))
    table = catalog.get_table(name)
    cols += [F.col(f"`{p.name}`") for p in table.partition_columns] + [F.col(snapshot.ROW_ID)]
    return df.select(*cols)


def _arrow_in_schema_of_end(
    t: pa.Table, catalog: Catalog, name: str, start: int, end: int
) -> pa.Table:
    """:func:`_in_schema_of_end` for a pyarrow Table (widened columns converted as Hive's ORC
    reader converts them, :func:`acidflow.format.schemaevolution.read_as`)."""
    mapping = end_schema_mapping(catalog, name, start, end)
    if mapping is None:
        return t
    pnames = [p.name for p in catalog.get_table(name).partition_columns]
    return arrow_in_mapping(t, mapping, pnames + [snapshot.ROW_ID])


def arrow_in_mapping(
    t: pa.Table, mapping: list[tuple[str, str | None, str]], extras: list[str]
) -> pa.Table:
    """Rows read in a start schema version, in the end version's data columns
    (:func:`end_schema_mapping`'s ``mapping``), then the ``extras`` columns unchanged."""
    arrays, names = [], []
    for end_name, start_name, hive_type in mapping:
        target = htypes.arrow_type(hive_type)
        arrays.append(
            read_as(t.column(start_name), target)
            if start_name is not None
            else pa.nulls(t.num_rows, target)
        )
        names.append(end_name)
    for extra in extras:
        arrays.append(t.column(extra))
        names.append(extra)
    return pa.table(arrays, names=names)


def _incremental_arrow(catalog: Catalog, name: str, start: int, end: int) -> pa.Table:
    """:func:`read_incremental` in this process with pyarrow (the same rule: ``I`` = rows of the
    end snapshot inserted after ``start``, ``D`` = rows of the start snapshot whose
    (partition, ROW__ID) is gone at the end)."""
    before = read_table(None, catalog, name, as_of_write_id=start, row_id=True)
    before = _arrow_in_schema_of_end(before, catalog, name, start, end)
    after = read_table(None, catalog, name, as_of_write_id=end, row_id=True)
    return changes_between(
        before, after, start, [p.name for p in catalog.get_table(name).partition_columns]
    )


def changes_between(before: pa.Table, after: pa.Table, start: int, pnames: list[str]) -> pa.Table:
    """The rule of :func:`read_incremental` on two snapshots already read (``row_id=True``,
    ``before`` in ``after``'s columns): ``I`` rows of ``after`` whose (partition ``pnames``,
    ROW__ID) ``before`` does not have, ``D`` rows of ``before`` whose (partition, ROW__ID) is
    gone; columns ``op``, ``write_id`` then ``after``'s. ``start`` (the start write id) is
    not needed by the rule (a row committed before the start state is in ``before`` whatever
    its write id) and kept for callers."""
    rid = snapshot.ROW_ID

    def keys(t: pa.Table) -> pa.Table:
        """(partition, ROW__ID) of each row: a ROW__ID is unique within a partition only."""
        if not t.num_rows:
            return pa.table(
                {
                    "w": pa.array([], pa.int64()),
                    "b": pa.array([], pa.int32()),
                    "r": pa.array([], pa.int64()),
                    "p": pa.array([], pa.string()),
                }
            )
        r = t.column(rid).combine_chunks()
        part = pa.array([""] * t.num_rows, pa.string())
        for p in pnames:
            value = pc.fill_null(t.column(p).cast(pa.string()), "\u0000")
            part = pc.binary_join_element_wise(part, value, "\u0001")
        return pa.table({"w": r.field(0), "b": r.field(1), "r": r.field(2), "p": part})

    after_keys = keys(after)
    before_keys = keys(before)
    ak = after_keys.append_column("i", pa.array(range(after.num_rows), pa.int64()))
    new_idx = ak.join(before_keys, keys=["w", "b", "r", "p"], join_type="left anti").column("i")
    inserted = after.take(new_idx.combine_chunks().sort()) if len(new_idx) else after.slice(0, 0)
    ins_w = keys(inserted).column("w").cast(pa.int64())
    bk = before_keys.append_column("i", pa.array(range(before.num_rows), pa.int64()))
    gone_idx = bk.join(after_keys, keys=["w", "b", "r", "p"], join_type="left anti").column("i")
    deleted = before.take(gone_idx.combine_chunks().sort()) if len(gone_idx) else before.slice(0, 0)
    cols = after.column_names
    n_del = deleted.num_rows
    d = pa.table(
        [pa.array(["D"] * n_del, pa.string()), pa.nulls(n_del, pa.int64())]
        + [deleted.column(c) for c in cols],
        names=["op", "write_id"] + cols,
    )
    i = pa.table(
        [pa.array(["I"] * inserted.num_rows, pa.string()), ins_w]
        + [inserted.column(c) for c in cols],
        names=["op", "write_id"] + cols,
    )
    return pa.concat_tables([d, i.cast(d.schema)])


@dataclass
class PathInfo:
    """Schema found in a bare table directory: columns and partition columns as Hive types."""

    columns: list[tuple[str, str]]
    partition_columns: list[tuple[str, str]]
    max_write_id: int


def describe_path(path: str) -> PathInfo:
    """Infer the schema of a table directory with no catalog entry.

    Columns come from the first data file found (the ``row`` struct of an event file, or an
    original file's columns); partition columns (type ``string``) from ``key=value`` directory
    levels; ``max_write_id`` is the largest write id named by any base or delta directory.

    Raises:
        FileNotFoundError: no such directory, or no ORC data file in it.
    """
    tfs = TableFS(path)
    if not tfs.isdir(path):
        raise FileNotFoundError(f"no such table directory: {path}")
    entries = tfs.list_recursive(path)
    pcols: list[str] = []
    prefix = ""
    while True:
        level = [
            e
            for e in entries
            if e.path.startswith(prefix)
            and "/" not in e.path[len(prefix) :]
            and not is_hidden(e.path[len(prefix) :])
        ]
        if not level or not all(
            e.is_dir and parts.is_partition_dir_name(e.path[len(prefix) :]) for e in level
        ):
            break
        first = level[0].path[len(prefix) :]
        pcols.append(first.split("=", 1)[0])
        prefix = level[0].path + "/"
    max_wid = 0
    data_file = None
    for e in entries:
        comps = e.path.split("/")[len(pcols) :]
        if not comps or any(is_hidden(c) for c in comps):
            continue
        top = comps[0]
        pb, pd = parse_base(top), parse_delta(top)
        if pb is not None:
            max_wid = max(max_wid, pb.write_id)
        if pd is not None:
            max_wid = max(max_wid, pd.max_write_id)
        if not e.is_dir and data_file is None and not (pd is not None and pd.is_delete):
            data_file = join(path, e.path)
    if data_file is None:
        # only delete deltas: take the row struct from one of them
        for e in entries:
            if not e.is_dir and not any(is_hidden(c) for c in e.path.split("/")):
                data_file = join(path, e.path)
                break
    if data_file is None:
        raise FileNotFoundError(f"no data files under {path}")
    info = acid_files.file_info(tfs, data_file)
    cols = [(f.name, htypes.hive_type_from_arrow(f.type)) for f in info.row_schema]
    return PathInfo(cols, [(p, "string") for p in pcols], max_wid)


def plan_path(
    path: str,
    *,
    high_watermark: int | None = None,
    open_write_ids: Iterable[int] = (),
    aborted_write_ids: Iterable[int] = (),
    read_optimized: bool = False,
) -> snapshot.ReadPlan:
    """Plan a read of a bare directory. With no ``high_watermark`` every write id found is
    committed (high watermark = Long.MAX_VALUE), as the MANIFEST's fixtures assume."""
    info = describe_path(path)
    hwm = LONG_MAX if high_watermark is None else high_watermark
    valid = ValidWriteIdList(
        posixpath.basename(path.rstrip("/")),
        hwm,
        open_write_ids=tuple(sorted(open_write_ids)),
        aborted_write_ids=tuple(sorted(aborted_write_ids)),
    )
    return snapshot.plan_read(
        TableFS(path),
        path,
        info.columns,
        info.partition_columns,
        valid,
        read_optimized=read_optimized,
    )


def acid_state_of(
    path: str,
    valid: ValidWriteIdList | None = None,
    txn_state: Callable[[int], str] | None = None,
) -> AcidState:
    """``AcidState`` of one partition (or unpartitioned table) directory; by default every
    write id is committed, and so is every ``_v<T>`` directory unless ``txn_state`` (the
    catalog's ``visibility_lookup()``) says otherwise."""
    tfs = TableFS(path)
    valid = valid or ValidWriteIdList(posixpath.basename(path.rstrip("/")), LONG_MAX)
    return acid_state(tfs, path, valid, txn_state=txn_state)
