"""The read side of the ``acid`` data source: planning on the driver (:func:`plan_scan`) and
the reader whose tasks only read files (:class:`AcidReader`); see the package doc."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Iterator, Mapping

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from acidflow import sparktypes
from acidflow.config import Settings
from acidflow.datasource.common import (
    AGENT,
    AcidDataSourceError,
    Heartbeat,
    bool_option,
    checked_options,
    int_option,
    open_catalog,
    table_name,
    timestamp_option,
)
from acidflow.datasource.pushdown import pushed_predicates
from acidflow.format.layout import ValidWriteIdList
from acidflow.read import history, predicates, snapshot, splits
from acidflow.read import table as reads
from acidflow.read.selection import UnknownColumnError, output_columns
from acidflow.storage.fs import TableFS


def _spark_type(hive_type: str | None) -> T.DataType:
    """Spark type of a Hive type; None = ``ROW__ID``'s struct."""
    if hive_type is None:
        return T.StructType(
            [
                T.StructField(n, T.LongType() if n != "bucketid" else T.IntegerType())
                for n in ("writeid", "bucketid", "rowid")
            ]
        )
    return sparktypes.spark_type(hive_type)


@dataclasses.dataclass
class Changes:
    """The start side of an incremental read: its columns, snapshot and the mapping of its
    rows onto the end schema (None when unchanged)."""

    start: int
    columns: list[tuple[str, str]]
    valid: ValidWriteIdList
    mapping: list[tuple[str, str | None, str]] | None


@dataclasses.dataclass
class Scan:
    """A planned read: what every read task needs (small: the tasks travel one per Spark
    partition, see :meth:`AcidReader.partitions`)."""

    settings: Settings
    table: str
    table_dir: str
    columns: list[tuple[str, str]]
    partition_columns: list[tuple[str, str]]
    valid: ValidWriteIdList
    row_id: bool
    file_name: bool
    reader_ids: list[int]
    changes: Changes | None = None
    output: list[str] | None = None
    where: list[predicates.Predicate] = dataclasses.field(default_factory=list)

    def selection(self) -> tuple[list[str] | None, list[str] | None]:
        """``(data columns decoded, output columns in order)`` of the ``columns`` option
        (None, None without it)."""
        if self.output is None:
            return None, None
        plan = snapshot.ReadPlan(
            self.table_dir, self.columns, self.partition_columns, self.valid, [], {}
        )
        project, _, _, order = output_columns(plan, self.output, self.row_id, self.file_name)
        return project, order

    def spark_schema(self) -> T.StructType:
        """Spark schema of the rows: ``[op, write_id,]`` columns, partition columns,
        ``[ROW__ID struct<writeid:bigint,bucketid:int,rowid:bigint>]``,
        ``[INPUT__FILE__NAME]`` (Hive types mapped by ``acidflow.format.types``)."""
        fields: list[tuple[str, str | None]] = [*self.columns, *self.partition_columns]
        if self.row_id:
            fields.append((snapshot.ROW_ID, None))
        if self.file_name:
            fields.append((snapshot.INPUT_FILE_NAME, "string"))
        if self.changes is not None:
            fields = [("op", "string"), ("write_id", "bigint"), *fields]
        order = self.selection()[1]
        if order is not None:
            types = dict(fields)
            fields = [(n, types[n]) for n in order]
        return T.StructType([T.StructField(n, _spark_type(t)) for n, t in fields])


def plan_scan(settings: Settings, options: Mapping[str, str]) -> tuple[Scan, list[Any]]:
    """Plan a read of the ``acid`` source (driver side): the scan and one partition value per
    read split (``("read", task json)``: a (partition, bucket) task, cut into stripe ranges
    when its files exceed option ``splitBytes`` or ``ACIDFLOW_READ_SPLIT_BYTES``,
    :func:`acidflow.read.splits.split_tasks`), or ``("changes", start task json | None, end task
    json | None)`` per (partition, bucket) of an incremental read).

    Raises:
        AcidDataSourceError: bad options. acidflow.catalog.NoSuchTableError: unknown table.
        ValueError: ``fromWriteId`` after ``toWriteId``. NotEnoughHistoryError: as
        :func:`acidflow.read.table.plan_table`.
    """
    opts = checked_options(options)
    name = table_name(opts)
    as_of, start = int_option(opts, "asofwriteid", name), int_option(opts, "fromwriteid", name)
    end = int_option(opts, "towriteid", name)
    as_of_t = timestamp_option(opts, "asoftimestamp", name)
    start_t = timestamp_option(opts, "fromtimestamp", name)
    end_t = timestamp_option(opts, "totimestamp", name)
    read_optimized = bool_option(opts, "readoptimized", name)
    split_bytes = splits.split_target(int_option(opts, "splitbytes", name))
    for a, b, an, bn in (
        (as_of, as_of_t, "asOfWriteId", "asOfTimestamp"),
        (start, start_t, "fromWriteId", "fromTimestamp"),
        (end, end_t, "toWriteId", "toTimestamp"),
    ):
        if a is not None and b is not None:
            raise AcidDataSourceError(
                f"acid data source, table {name}: {an} and {bn} do not go together"
            )
    has_start = start is not None or start_t is not None
    if not has_start and (end is not None or end_t is not None):
        raise AcidDataSourceError(
            f"acid data source, table {name}: toWriteId needs fromWriteId (toTimestamp: "
            "fromWriteId or fromTimestamp)"
        )
    if has_start and (as_of is not None or as_of_t is not None or read_optimized):
        raise AcidDataSourceError(
            f"acid data source, table {name}: fromWriteId / fromTimestamp (incremental) "
            "does not go with asOfWriteId, asOfTimestamp or readOptimized"
        )
    catalog = open_catalog(settings, planning=True)
    table = catalog.get_table(name)
    # a time is the state after the last commit at or before it: that commit's write id
    if as_of_t is not None:
        as_of = history.write_id_at(catalog, table.name, as_of_t)
    if start_t is not None:
        start = history.write_id_at(catalog, table.name, start_t)
    if end_t is not None:
        end = history.write_id_at(catalog, table.name, end_t)
    ids: list[int] = []

    def plan(as_of_write_id: int | None) -> snapshot.ReadPlan:
        reader = catalog.register_reader(table.name, agent_info=AGENT)
        ids.append(reader.reader_id)
        p = reads.plan_table(
            catalog, table.name, as_of_write_id=as_of_write_id, read_optimized=read_optimized
        )
        catalog.set_reader_snapshot(reader.reader_id, p.valid_write_ids)
        return p

    try:
        if start is None:
            now = plan(as_of)
            cut = splits.split_tasks(TableFS(now.table_dir), now.tasks, split_bytes)
            values: list[Any] = [("read", t.to_json()) for t in cut]
            changes = None
        else:
            end = reads.incremental_end(catalog, table.name, start, end)
            before, now = plan(start), plan(end)
            changes = Changes(
                start,
                before.columns,
                before.valid_write_ids,
                reads.end_schema_mapping(catalog, table.name, start, end),
            )
            pairs: dict[tuple[str, int], list[str | None]] = defaultdict(lambda: [None, None])
            for side, p in enumerate((before, now)):
                for t in p.tasks:
                    pairs[(t.partition, t.bucket_id)][side] = t.to_json()
            values = [("changes", *pairs[k]) for k in sorted(pairs)]
    except BaseException:
        for rid in ids:
            catalog.unregister_reader(rid)
        raise
    output = (
        [c.strip() for c in opts["columns"].split(",") if c.strip()] if "columns" in opts else None
    )
    if output is not None and start is not None:
        raise AcidDataSourceError(
            f"acid data source, table {name}: columns does not go with an incremental read"
        )
    scan = Scan(
        settings,
        table.name,
        now.table_dir,
        now.columns,
        now.partition_columns,
        now.valid_write_ids,
        bool_option(opts, "rowid", name) or start is not None,
        bool_option(opts, "filename", name),
        ids,
        changes,
        output,
    )
    if output is not None:
        try:
            scan.selection()
        except UnknownColumnError as exc:
            for rid in ids:
                catalog.unregister_reader(rid)
            raise AcidDataSourceError(f"acid data source, table {name}: {exc}") from None
    return scan, values


class AcidReader(DataSourceReader):
    """Reads one planned scan: a Spark partition per read task, pyarrow RecordBatches out."""

    def __init__(self, scan: Scan, values: list[Any], schema: T.StructType) -> None:
        self.scan = scan
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self._values = values

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader into every task's command: the partition values (one per
        # task) travel on their own, so they stay out of it
        return {**self.__dict__, "_values": []}

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:  # noqa: N802 - PySpark's name
        """Predicate pushdown (``spark.sql.python.filterPushdown.enabled``, which
        :func:`acidflow.datasource.register` sets): the filters of the supported form
        (:mod:`acidflow.datasource.pushdown`) become the scan's row filter
        (``read_task(where=)``: partition pruning -- read tasks of other partitions are
        dropped --, stripe skipping, then exact on the rows). Returns the filters Spark must
        still evaluate: those not pushed, and those on columns whose type Spark compares
        otherwise (float, double, char, varchar, binary); ``df.explain("formatted")`` lists
        the consumed ones as ``PushedFilters`` of the ``BatchScan acid`` node. Incremental
        reads push nothing."""
        if self.scan.changes is not None:
            return list(filters)
        pushed, rest = pushed_predicates(filters, self.scan.columns, self.scan.partition_columns)
        if pushed:
            self.scan = dataclasses.replace(self.scan, where=pushed)
            pcols = self.scan.partition_columns
            self._values = [
                v
                for v in self._values
                if predicates.partition_matches(
                    pushed, pcols, snapshot.ReadTask.from_json(v[1]).partition
                )
            ]
        return rest

    def partitions(self) -> list[InputPartition]:
        """One Spark partition per read split (several per bucket when its files exceed the
        split target; incremental: one per (partition, bucket))."""
        return [InputPartition(v) for v in self._values]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The visible rows of one task (Spark task side: files only, no catalog unless the
        task runs long enough to heartbeat the reader registration).

        Raises:
            acidflow.format.orc.files.AcidFileError: an unreadable file (names it).
        """
        if partition.value is None:  # Spark's single empty partition of an empty plan
            return
        scan = self.scan
        beat = Heartbeat(
            scan.settings, lambda c: all([c.heartbeat_reader(r) for r in scan.reader_ids])
        ).start()
        try:
            for batch in self._batches(TableFS(scan.table_dir), partition.value):
                if batch.num_rows:
                    yield (
                        batch
                        if batch.schema.equals(self.arrow_schema)
                        else batch.cast(self.arrow_schema)
                    )
        finally:
            beat.stop()

    def _batches(self, tfs: TableFS, value: Any) -> Iterator[pa.RecordBatch]:
        s = self.scan
        if value[0] == "read":
            project, order = s.selection()
            for b in snapshot.read_task(
                tfs,
                snapshot.ReadTask.from_json(value[1]),
                s.columns,
                s.partition_columns,
                s.valid,
                row_id=s.row_id,
                file_name=s.file_name,
                project=project,
                where=s.where or None,
            ):
                yield b if order is None else b.select(order)
            return
        assert s.changes is not None
        ch = s.changes

        def side(
            text: str | None, columns: list[tuple[str, str]], valid: ValidWriteIdList
        ) -> pa.Table:
            schema = snapshot.ReadPlan(
                "", columns, s.partition_columns, valid, [], {}
            ).output_schema(row_id=True)
            batches = (
                []
                if text is None
                else list(
                    snapshot.read_task(
                        tfs,
                        snapshot.ReadTask.from_json(text),
                        columns,
                        s.partition_columns,
                        valid,
                        row_id=True,
                    )
                )
            )
            return pa.Table.from_batches(batches, schema=schema)

        pnames = [n for n, _ in s.partition_columns]
        before = side(value[1], ch.columns, ch.valid)
        if ch.mapping is not None:
            before = reads.arrow_in_mapping(before, ch.mapping, pnames + [snapshot.ROW_ID])
        after = side(value[2], s.columns, s.valid)
        yield from reads.changes_between(before, after, ch.start, pnames).to_batches()
