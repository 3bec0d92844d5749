"""acidflow tables as a Spark data source named ``acid`` (PySpark 4's Python Data Source API,
``pyspark.sql.datasource``)::

    spark.read.format("acid").load("db.accounts")                        # current snapshot
    spark.read.format("acid").option("asOfWriteId", 7).load("db.accounts")   # time travel
    spark.read.format("acid").option("fromWriteId", 5).load("db.accounts")   # changes after 5
    df.write.format("acid").mode("append").save("db.accounts")               # one transaction

Read options: ``asOfWriteId`` (snapshot with that high watermark), ``readOptimized`` (base
only), ``rowId`` (adds ``ROW__ID``), ``fileName`` (adds ``INPUT__FILE__NAME``), ``fromWriteId``
/ ``toWriteId`` (the rows and columns of :func:`acidflow.reads.read_incremental`: ``op``,
``write_id``, the columns, ``ROW__ID``). Write options: ``compression``, ``stripeRows``. Both:
``table`` (instead of the load/save path), ``catalog`` / ``warehouse`` (default: the settings
:func:`register` captured, else the environment, :mod:`acidflow.config`).

Where the API runs what: ``schema()``, ``reader()``/``partitions()``, ``writer()`` and
``commit()``/``abort()`` run in Python workers that the driver's JVM starts (not in the
driver's Python process, whose later ``os.environ`` changes they do not see -- hence the
settings captured by :func:`register`); ``read()``/``write()`` run in Spark tasks.

Reads: ``schema()`` plans once with the catalog (:func:`acidflow.reads.plan_table`: the
snapshot, its schema version, the read tasks) and registers the snapshot as a reader for the
cleaner (expiring after the catalog's heartbeat timeout unless read tasks are running: they
heartbeat it); the DataFrame keeps that snapshot (Spark plans a Python source once per
DataFrame or view). One Spark partition per read task; tasks only read files
(:func:`acidflow.acid.snapshot.read_task`). The API has no column pruning: Spark drops unused
columns after the scan.

Writes (Hive INSERT INTO / INSERT OVERWRITE, the rules of ``Transaction.insert`` /
``insert_overwrite``): ``writer()`` checks the schema (``SchemaMismatchError`` naming the table
and columns, before anything is written), opens one transaction, takes the lock and the write
id W (``Transaction.begin_insert``). Each Spark task p sorts its rows by (partition, bucket) and
writes event files: unbucketed tables into the statement's ``delta_W_W_S`` / ``base_W`` as
``bucket_<p>`` (the writer id, as ``Transaction.insert`` does); bucketed tables, whose bucket N
comes from the row, under a statement id of their own, ``delta_W_W_<S+p>/bucket_N`` (Hive
numbers several statements of one write id; the statement id is in every ROW__ID's bucket
property), so no two tasks write one file. An overwrite of a bucketed table stages so and
``commit()`` moves each bucket's files into ``base_W/bucket_N`` (several tasks' files of one
bucket are concatenated, ROW__IDs kept). ``commit()`` ends the statement
(``Transaction.end_insert``) and commits: nothing is visible before. ``abort()`` (a task
failed) aborts: the files stay invisible and the cleaner removes them.
"""
from __future__ import annotations

import dataclasses
import threading
from collections import defaultdict
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader,
                                    InputPartition, WriterCommitMessage)
from pyspark.sql.pandas.types import to_arrow_schema

from acidflow import reads
from acidflow.acid import conform
from acidflow.acid import files as acid_files
from acidflow.acid import keys as acid_keys
from acidflow.acid import partitions as parts
from acidflow.acid import snapshot
from acidflow.acid import types as htypes
from acidflow.acid.bucketing import check_statement_id
from acidflow.acid.fs import TableFS, join
from acidflow.acid.layout import ValidWriteIdList, format_bucket_file
from acidflow.acid.transaction import Transaction
from acidflow.acid.writer import FileRow, WriteSpec, layout_inserts_local, write_local
from acidflow.catalog import Catalog, TableDef
from acidflow.config import Settings, load_settings

NAME = "acid"
_AGENT = "spark data source (acid)"
_READ_OPTIONS = {"path", "table", "catalog", "warehouse", "asofwriteid", "readoptimized",
                 "rowid", "filename", "fromwriteid", "towriteid"}
_WRITE_OPTIONS = {"path", "table", "catalog", "warehouse", "compression", "striperows"}


class AcidDataSourceError(ValueError):
    """Bad options of the ``acid`` data source (names the option and the table)."""


# ---------------------------------------------------------------------------- options

def _options(options: Mapping[str, str], known: set[str]) -> dict[str, str]:
    """Options with lower-case keys (Spark's are case-insensitive); unknown keys are errors."""
    out = {str(k).lower(): str(v) for k, v in options.items()}
    unknown = sorted(set(out) - known)
    if unknown:
        raise AcidDataSourceError(f"acid data source: unknown option(s) {', '.join(unknown)}; "
                                  f"known: {', '.join(sorted(known))}")
    return out


def _table_name(opts: dict[str, str]) -> str:
    name = opts.get("table") or opts.get("path")
    if not name:
        raise AcidDataSourceError("acid data source: name the table, load('db.table') / "
                                  "save('db.table') or option('table', 'db.table')")
    return name


def _int(opts: dict[str, str], key: str, table: str) -> int | None:
    if key not in opts:
        return None
    try:
        return int(opts[key])
    except ValueError:
        raise AcidDataSourceError(f"acid data source, table {table}: option {key}="
                                  f"{opts[key]!r} is not an integer") from None


def _bool(opts: dict[str, str], key: str, table: str) -> bool:
    value = opts.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise AcidDataSourceError(f"acid data source, table {table}: option {key}="
                                  f"{opts[key]!r} is not true/false")
    return value == "true"


def _settings(base: Settings | None, opts: dict[str, str]) -> Settings:
    """The catalog settings: ``base`` (captured by :func:`register`) or the environment's,
    with the ``catalog`` / ``warehouse`` options over them."""
    settings = base or load_settings(warehouse=opts.get("warehouse"),
                                     catalog_url=opts.get("catalog"))
    if "warehouse" in opts:
        settings = dataclasses.replace(settings, warehouse=opts["warehouse"])
    if "catalog" in opts:
        settings = dataclasses.replace(settings, catalog_url=opts["catalog"])
    return settings


def _catalog(settings: Settings) -> Catalog:
    # the driver created the catalog's schema; workers only use it
    return Catalog.from_settings(settings, migrate=False)


class _Heartbeat:
    """A daemon thread calling ``beat(catalog)`` every ``period_s`` seconds (first after one
    period, so short tasks never connect) until ``beat`` returns False or :meth:`stop`."""

    def __init__(self, settings: Settings, beat: Callable[[Catalog], bool]) -> None:
        self.settings, self.beat = settings, beat
        self.period_s = max(1.0, settings.txn_timeout_s / 3.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="acid-heartbeat")

    def _run(self) -> None:
        catalog: Catalog | None = None
        while not self._stop.wait(self.period_s):
            try:
                catalog = catalog or _catalog(self.settings)
                if not self.beat(catalog):
                    return
            except Exception:  # noqa: BLE001 - the next beat retries; expiry is the fallback
                pass

    def start(self) -> "_Heartbeat":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()


# ---------------------------------------------------------------------------- reads

def _spark_type(hive_type: str | None) -> T.DataType:
    """Spark type of a Hive type; None = ``ROW__ID``'s struct."""
    if hive_type is None:
        return T.StructType([T.StructField(n, T.LongType() if n != "bucketid" else T.IntegerType())
                             for n in ("writeid", "bucketid", "rowid")])
    return htypes.spark_type(hive_type)


@dataclasses.dataclass
class _Changes:
    """The start side of an incremental read: its columns, snapshot and the mapping of its
    rows onto the end schema (None when unchanged)."""

    start: int
    columns: list[tuple[str, str]]
    valid: ValidWriteIdList
    mapping: list[tuple[str, str | None, str]] | None


@dataclasses.dataclass
class _Scan:
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
    changes: _Changes | None = None

    def spark_schema(self) -> T.StructType:
        fields: list[tuple[str, str | None]] = [*self.columns, *self.partition_columns]
        if self.row_id:
            fields.append((snapshot.ROW_ID, None))
        if self.file_name:
            fields.append((snapshot.INPUT_FILE_NAME, "string"))
        if self.changes is not None:
            fields = [("op", "string"), ("write_id", "bigint"), *fields]
        return T.StructType([T.StructField(n, _spark_type(t)) for n, t in fields])


def plan_scan(settings: Settings, options: Mapping[str, str]) -> tuple[_Scan, list[Any]]:
    """Plan a read of the ``acid`` source (driver side): the scan and one partition value per
    read task (``("read", task json)``, or ``("changes", start task json | None, end task
    json | None)`` per (partition, bucket) of an incremental read).

    Raises:
        AcidDataSourceError: bad options. acidflow.catalog.NoSuchTableError: unknown table.
        ValueError: ``fromWriteId`` after ``toWriteId``. NotEnoughHistoryError: as
        :func:`acidflow.reads.plan_table`.
    """
    opts = _options(options, _READ_OPTIONS)
    name = _table_name(opts)
    as_of, start = _int(opts, "asofwriteid", name), _int(opts, "fromwriteid", name)
    end = _int(opts, "towriteid", name)
    read_optimized = _bool(opts, "readoptimized", name)
    if start is None and end is not None:
        raise AcidDataSourceError(f"acid data source, table {name}: toWriteId needs fromWriteId")
    if start is not None and (as_of is not None or read_optimized):
        raise AcidDataSourceError(f"acid data source, table {name}: fromWriteId (incremental) "
                                  "does not go with asOfWriteId or readOptimized")
    catalog = _catalog(settings)
    table = catalog.get_table(name)
    ids: list[int] = []

    def plan(as_of_write_id: int | None) -> snapshot.ReadPlan:
        reader = catalog.register_reader(table.name, agent_info=_AGENT)
        ids.append(reader.reader_id)
        p = reads.plan_table(catalog, table.name, as_of_write_id=as_of_write_id,
                             read_optimized=read_optimized)
        catalog.set_reader_snapshot(reader.reader_id, p.valid_write_ids)
        return p

    try:
        if start is None:
            now = plan(as_of)
            values: list[Any] = [("read", t.to_json()) for t in now.tasks]
            changes = None
        else:
            end = reads.incremental_end(catalog, table.name, start, end)
            before, now = plan(start), plan(end)
            changes = _Changes(start, before.columns, before.valid_write_ids,
                               reads.end_schema_mapping(catalog, table.name, start, end))
            pairs: dict[tuple[str, int], list[str | None]] = defaultdict(lambda: [None, None])
            for side, p in enumerate((before, now)):
                for t in p.tasks:
                    pairs[(t.partition, t.bucket_id)][side] = t.to_json()
            values = [("changes", *pairs[k]) for k in sorted(pairs)]
    except BaseException:
        for rid in ids:
            catalog.unregister_reader(rid)
        raise
    scan = _Scan(settings, table.name, now.table_dir, now.columns, now.partition_columns,
                 now.valid_write_ids, _bool(opts, "rowid", name) or start is not None,
                 _bool(opts, "filename", name), ids, changes)
    return scan, values


class AcidReader(DataSourceReader):
    """Reads one planned scan: a Spark partition per read task, pyarrow RecordBatches out."""

    def __init__(self, scan: _Scan, values: list[Any], schema: T.StructType) -> None:
        self.scan = scan
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self._values = values

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader into every task's command: the partition values (one per
        # task) travel on their own, so they stay out of it
        return {**self.__dict__, "_values": []}

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(v) for v in self._values]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # Spark's single empty partition of an empty plan
            return
        scan = self.scan
        beat = _Heartbeat(scan.settings, lambda c: all([c.heartbeat_reader(r)
                                                        for r in scan.reader_ids])).start()
        try:
            for batch in self._batches(TableFS(scan.table_dir), partition.value):
                if batch.num_rows:
                    yield batch if batch.schema.equals(self.arrow_schema) \
                        else batch.cast(self.arrow_schema)
        finally:
            beat.stop()

    def _batches(self, tfs: TableFS, value: Any) -> Iterator[pa.RecordBatch]:
        s = self.scan
        if value[0] == "read":
            yield from snapshot.read_task(tfs, snapshot.ReadTask.from_json(value[1]), s.columns,
                                          s.partition_columns, s.valid, row_id=s.row_id,
                                          file_name=s.file_name)
            return
        assert s.changes is not None
        ch = s.changes

        def side(text: str | None, columns: list[tuple[str, str]],
                 valid: ValidWriteIdList) -> pa.Table:
            schema = snapshot.ReadPlan("", columns, s.partition_columns, valid, [], {}) \
                .output_schema(row_id=True)
            batches = [] if text is None else list(snapshot.read_task(
                tfs, snapshot.ReadTask.from_json(text), columns, s.partition_columns, valid,
                row_id=True))
            return pa.Table.from_batches(batches, schema=schema)

        pnames = [n for n, _ in s.partition_columns]
        before = side(value[1], ch.columns, ch.valid)
        if ch.mapping is not None:
            before = reads.arrow_in_mapping(before, ch.mapping, pnames + [snapshot.ROW_ID])
        after = side(value[2], s.columns, s.valid)
        yield from reads.changes_between(before, after, ch.start, pnames).to_batches()


# ---------------------------------------------------------------------------- writes

@dataclasses.dataclass
class _Written(WriterCommitMessage):
    """A write task's result: its Spark partition id, statement id and file rows."""

    partition_id: int
    statement_id: int
    files: list[FileRow]


class AcidWriter(DataSourceArrowWriter):
    """One INSERT INTO / INSERT OVERWRITE of an acidflow table in one transaction (module
    doc). Built by :meth:`open` on the driver; pickled to the tasks and the commit."""

    def __init__(self, settings: Settings, table: TableDef, spec: WriteSpec, names: list[str],
                 overwrite: bool, txn_id: int, allocated: tuple[dict[str, int], dict[str, int]]
                 ) -> None:
        self.settings, self.table, self.spec, self.names = settings, table, spec, names
        self.overwrite, self.txn_id, self.allocated = overwrite, txn_id, allocated
        self.bucketed = table.num_buckets > 0

    @classmethod
    def open(cls, settings: Settings, options: Mapping[str, str], schema: T.StructType,
             overwrite: bool) -> "AcidWriter":
        """Check the schema, open the transaction, lock, allocate W and the statement.

        Raises:
            SchemaMismatchError: missing, extra or uncastable columns (nothing is opened).
            NoSuchTableError; LockTimeoutError (the transaction is aborted).
        """
        opts = _options(options, _WRITE_OPTIONS)
        name = _table_name(opts)
        write_opts: dict[str, Any] = {}
        if "compression" in opts:
            write_opts["compression"] = opts["compression"]
        if "striperows" in opts:
            write_opts["stripe_rows"] = _int(opts, "striperows", name)
        catalog = _catalog(settings)
        names = conform.check_schema(schema, catalog.get_table(name))
        txn = Transaction(catalog, agent_info=_AGENT, heartbeat_s=0)
        txn.begin()
        try:
            table, spec = txn.begin_insert(name, overwrite=overwrite, **write_opts)
        except BaseException as exc:
            txn.abort(f"{type(exc).__name__}: {exc}")
            raise
        assert isinstance(table, TableDef) and txn.txn_id is not None
        txn_id = txn.txn_id
        # the planning worker heartbeats while it lives (the input may take long before the
        # write tasks start); running write tasks heartbeat too
        _Heartbeat(settings, lambda c: _beat_txn(c, txn_id)).start()
        return cls(settings, table, spec, names, overwrite, txn_id, txn.allocated)

    def _task_spec(self, partition_id: int) -> WriteSpec:
        """The spec a task writes with: the statement's, or (bucketed tables) a statement id
        of the task's own, ``delta_W_W_<S+p>`` (staging for an overwrite)."""
        if not self.bucketed:
            return self.spec
        sid = check_statement_id(self.spec.statement_id + partition_id,
                                 hint="a bucketed table written by more than 4096 Spark "
                                      "partitions: coalesce the DataFrame")
        return dataclasses.replace(self.spec, statement_id=sid, kind="insert")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _Written:
        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        spec = self._task_spec(pid)
        batches = list(iterator)
        if not batches or not sum(b.num_rows for b in batches):
            return _Written(pid, spec.statement_id, [])
        rows = pa.Table.from_batches(batches).select(self.names).rename_columns(
            [c.name for c in [*self.table.columns, *self.table.partition_columns]])
        laid = layout_inserts_local(conform.aligned_arrow(rows, self.table), self.table)
        beat = _Heartbeat(self.settings, lambda c: _beat_txn(c, self.txn_id)).start()
        try:
            files = write_local(laid, spec)
        except BaseException:
            self._remove_task_files(spec, laid, pid)
            raise
        finally:
            beat.stop()
        return _Written(pid, spec.statement_id, files)

    def _remove_task_files(self, spec: WriteSpec, laid: pa.Table, pid: int) -> None:
        """A failed task's finished files (a retry writes them again): its statement
        directories (bucketed tables), or its ``bucket_<p>`` file in each partition."""
        tfs = TableFS(spec.tfs_url)
        pcols = list(spec.partition_columns)
        for values in {tuple(r.values()) for r in laid.select(pcols).to_pylist()} if pcols \
                else {()}:
            d = spec.directory(parts.make_partition_path(list(zip(pcols, values))))
            tfs.delete(d if self.bucketed else join(d, format_bucket_file(pid)))

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        catalog = _catalog(self.settings)
        txn = Transaction.resume(catalog, self.txn_id, write_ids=self.allocated[0],
                                 statements=self.allocated[1], agent_info=_AGENT)
        try:
            done = [m for m in messages if isinstance(m, _Written)]
            txn.end_insert(self.table, self._written(done), overwrite=self.overwrite)
            txn.commit()
        except BaseException as exc:
            if txn.state == "open":
                txn.abort(f"{type(exc).__name__}: {exc}")
            raise

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        catalog = _catalog(self.settings)
        if catalog.get_transaction(self.txn_id).state == "open":
            Transaction.resume(catalog, self.txn_id, write_ids=self.allocated[0],
                               statements=self.allocated[1]).abort("a Spark write task failed")

    def _written(self, done: list[_Written]) -> list[tuple[WriteSpec, list[FileRow]]]:
        """(spec, file rows) per statement for ``Transaction.end_insert``."""
        if not self.bucketed:
            return [(self.spec, [f for m in done for f in m.files])]
        staged = [(m.statement_id, f) for m in sorted(done, key=lambda m: m.statement_id)
                  for f in m.files]
        if self.overwrite:
            return [(self.spec, self._promote(staged))]
        return [(dataclasses.replace(self.spec, statement_id=m.statement_id), m.files)
                for m in sorted(done, key=lambda m: m.statement_id) if m.files] or \
            [(self.spec, [])]

    def _promote(self, staged: list[tuple[int, FileRow]]) -> list[FileRow]:
        """Overwrite of a bucketed table: move each (partition, bucket)'s staged files into
        ``base_W/bucket_N`` -- one file moved, several concatenated in statement order (their
        ROW__IDs ascend with the statement id) -- and drop the staging directories."""
        tfs = TableFS(self.spec.tfs_url)
        groups: dict[tuple[str, int], list[FileRow]] = defaultdict(list)
        for _, f in staged:  # staged is in statement order
            groups[(f["partition"], int(f["bucket"]))].append(f)
        out: list[FileRow] = []
        for (part, bucket), files in sorted(groups.items()):
            directory = self.spec.directory(part)
            tfs.claim_dir(directory, self.spec.claim, what=f"write id {self.spec.write_id}")
            target = join(directory, format_bucket_file(bucket))
            if len(files) == 1:
                tfs.rename(files[0]["path"], target)
                out.append({**files[0], "path": target})
                continue
            events = pa.concat_tables([acid_files.read_events(tfs, f["path"]) for f in files])
            written = acid_files.write_event_table(
                tfs, target, self.spec.columns, events, compression=self.spec.compression,
                stripe_rows=self.spec.stripe_rows)
            assert written is not None  # staged files hold rows
            blobs = [f.get("key_hashes") for f in files]
            hashes = None if any(b is None for b in blobs) else acid_keys.pack_hashes(
                np.concatenate([acid_keys.unpack_hashes(bytes(b)) for b in blobs if b]))
            out.append({"partition": part, "bucket": bucket, "path": target,
                        "rows": written.rows, "bytes": written.bytes,
                        "stripes": written.stripes, "key_hashes": hashes})
        for sid, f in staged:
            tfs.delete(dataclasses.replace(self.spec, statement_id=sid, kind="insert")
                       .directory(f["partition"]))
        return out


def _beat_txn(catalog: Catalog, txn_id: int) -> bool:
    """Heartbeat an open transaction; False (stop) once it is no longer open."""
    if catalog.get_transaction(txn_id).state != "open":
        return False
    catalog.heartbeat(txn_id)
    return True


# ---------------------------------------------------------------------------- the source

class AcidDataSource(DataSource):
    """The ``acid`` format (module doc). ``settings``: the catalog settings :func:`register`
    captured in the driver (None: the environment of the worker)."""

    settings: ClassVar[Settings | None] = None

    @classmethod
    def name(cls) -> str:
        return NAME

    def _plan(self) -> tuple[_Scan, list[Any]]:
        if getattr(self, "_planned", None) is None:
            self._planned = plan_scan(_settings(self.settings, _options(
                self.options, _READ_OPTIONS)), self.options)
        return self._planned

    def schema(self) -> T.StructType:
        """The snapshot's columns (its schema version), partition columns, then ``ROW__ID``
        / ``INPUT__FILE__NAME`` when asked; ``op``, ``write_id`` first when incremental."""
        return self._plan()[0].spark_schema()

    def reader(self, schema: T.StructType) -> AcidReader:
        """Raises: AcidDataSourceError: a user-given schema that is not the table's."""
        scan, values = self._plan()
        if [(f.name, f.dataType) for f in schema.fields] != \
                [(f.name, f.dataType) for f in scan.spark_schema().fields]:
            raise AcidDataSourceError(
                f"acid data source, table {scan.table}: the schema given "
                f"({schema.simpleString()}) is not the table's "
                f"({scan.spark_schema().simpleString()}); read without .schema()")
        return AcidReader(scan, values, schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> AcidWriter:
        """Raises: see :meth:`AcidWriter.open`."""
        opts = _options(self.options, _WRITE_OPTIONS)
        return AcidWriter.open(_settings(self.settings, opts), self.options, schema, overwrite)


def register(spark: SparkSession, settings: Settings | None = None) -> None:
    """Register the ``acid`` format in ``spark`` (``spark.dataSource.register``), bound to
    ``settings`` (default :func:`acidflow.config.load_settings` now, in the driver): the
    source's workers use that catalog and warehouse unless options say otherwise. Call again
    after changing ``ACIDFLOW_*`` to rebind. ``acidflow.spark.get_spark`` calls it."""
    bound = type("AcidDataSourceBound", (AcidDataSource,),
                 {"settings": settings or load_settings(), "__module__": __name__})
    # a class that is not a module attribute: cloudpickle ships it by value, settings included
    spark.dataSource.register(bound)


def create_temp_view(spark: SparkSession, table: str, view: str | None = None,
                     **options: Any) -> str:
    """``CREATE OR REPLACE TEMPORARY VIEW <view> USING acid OPTIONS (table ..., ...)``: a Spark
    SQL name for an acidflow table (SELECT, INSERT INTO, INSERT OVERWRITE; ``spark.table``).
    The view reads the snapshot taken when it is created: create it again to see later
    commits. ``view`` defaults to the table name without its database.

    Returns:
        The view name.
    """
    name = view or table.split(".")[-1]
    quoted = {k: str(v).replace("\\", "\\\\").replace("'", "\\'")
              for k, v in {"table": table, **options}.items()}
    opts = ", ".join(f"{k} '{v}'" for k, v in quoted.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` USING {NAME} OPTIONS ({opts})")
    return name
