"""Writes into full-ACID tables from Spark: insert, delete by key, upsert (split-update) and
insert overwrite, each inside a catalog transaction.

Every operation follows Hive 3's ``OrcRecordUpdater`` in split-update mode (spec §5):

* insert -> insert events ``(0, W, bucket(N, S), rowId, W, row)`` in
  ``<partition>/delta_W_W_S/bucket_N``;
* delete -> delete events ``(2, <old ROW__ID>, W, NULL)`` in ``delete_delta_W_W_S/bucket_N``
  where N is the bucket (or writer) id decoded from the deleted row's bucket property, sorted by
  the deleted ROW__ID;
* upsert (update) -> the delete event of the old version plus a new insert event (new ROW__ID)
  in the same write id and statement id;
* insert overwrite -> ``base_W`` (an insert-overwrite base: no ``_metadata_acid``) in every
  partition the data touches, or at the table root.

W is the table's write id in the transaction, S the statement id (0, 1, ... per operation on the
same table in one transaction), N the Hive bucket number of the row for bucketed tables
(``acidflow.acid.bucketing``, the table's ``bucketing_version``) or the Spark task's partition id for
unbucketed ones. Files become visible only when the transaction commits: until then W is an open
write id, an exception in every reader's ``ValidWriteIdList``; a crashed writer's W is later
aborted by the housekeeper and stays invisible.

Key lookups for delete and upsert read only the buckets the keys hash to and, when the partition
columns are part of the key, only the partitions the keys name.
"""
from __future__ import annotations

import getpass
import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from acidflow.acid import files as acid_files
from acidflow.acid import partitions as parts
from acidflow.acid import snapshot
from acidflow.acid import types as htypes
from acidflow.acid.bucketing import bucket_numbers, decode_bucket_id, encode_bucket_property
from acidflow.acid.fs import TableFS, join
from acidflow.acid.layout import format_base, format_bucket_file, format_delta

log = logging.getLogger(__name__)

BUCKET_COL = "_acid_bucket"
MAX_WRITERS = 4096  # 12-bit writer id in BucketCodec V1


class SchemaMismatchError(ValueError):
    """The DataFrame does not match the table's schema (raised before any file is written)."""


class DuplicateKeyError(ValueError):
    """An upsert batch holds two rows with the same primary key."""


# ----------------------------------------------------------------------------- transactions


class Transaction:
    """A catalog transaction as a context manager: commits on normal exit, aborts on error.

    Keeps one write id per table (allocated on first use, Hive ``allocateTableWriteIds``),
    hands out statement ids per table, collects write statistics for the commit record, and
    heartbeats from a daemon thread every ``heartbeat_s`` seconds (default a third of the
    catalog's ``txn_timeout_s``, as Hive clients heartbeat well inside ``hive.txn.timeout``).

    Args:
        catalog: a ``acidflow.catalog.Catalog``.
        user, agent_info: recorded with the transaction (default the OS user and "acidflow").
        heartbeat_s: heartbeat period in seconds; 0 disables the thread.
    Raises:
        acidflow.catalog.errors.WriteConflictError: from commit, when a concurrent transaction
            updated or deleted in the same partition first (the transaction is aborted).
    """

    def __init__(self, catalog, *, user: str | None = None, agent_info: str = "acidflow",
                 heartbeat_s: float | None = None):
        self.catalog = catalog
        self.user = user or getpass.getuser()
        self.agent_info = agent_info
        self.heartbeat_s = (catalog.txn_timeout_s / 3.0) if heartbeat_s is None else heartbeat_s
        self.txn_id: int | None = None
        self._write_ids: dict[str, int] = {}
        self._statements: dict[str, int] = {}
        self.stats: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.state = "new"

    def __enter__(self) -> "Transaction":
        self.begin()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.commit()
        else:
            self.abort(f"{exc_type.__name__}: {exc}")
        return False

    def begin(self) -> int:
        """Open the transaction in the catalog; returns the txn id."""
        self.txn_id = self.catalog.open_transaction(
            user=self.user, host=socket.gethostname(), agent_info=self.agent_info)
        self.state = "open"
        if self.heartbeat_s > 0:
            self._thread = threading.Thread(target=self._beat, daemon=True,
                                            name=f"txn-{self.txn_id}-heartbeat")
            self._thread.start()
        return self.txn_id

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.catalog.heartbeat(self.txn_id)
            except Exception as exc:  # noqa: BLE001 - reported, commit will fail loudly
                log.warning("heartbeat of txn %s failed: %s", self.txn_id, exc)
                return

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def write_id(self, table_name: str) -> int:
        """The table's write id in this transaction (allocated once)."""
        if table_name not in self._write_ids:
            self._write_ids[table_name] = self.catalog.allocate_write_id(self.txn_id, table_name)
        return self._write_ids[table_name]

    def next_statement_id(self, table_name: str) -> int:
        """0 for the first operation on a table in this transaction, then 1, 2, ..."""
        sid = self._statements.get(table_name, -1) + 1
        if sid > 4095:
            raise ValueError("more than 4096 statements on one table in one transaction")
        self._statements[table_name] = sid
        return sid

    def record(self, table_name: str, operation: str, result: "WriteResult") -> None:
        """Add a write's statistics to the commit record of ``table_name``."""
        st = self.stats.setdefault(table_name, {
            "operations": [], "rows_inserted": 0, "rows_updated": 0, "rows_deleted": 0,
            "files": 0, "bytes": 0, "partitions": {}})
        st["operations"].append(operation)
        for k in ("rows_inserted", "rows_updated", "rows_deleted", "files", "bytes"):
            st[k] += getattr(result, k)
        for p, pst in result.partitions.items():
            agg = st["partitions"].setdefault(p, {"files": 0, "bytes": 0, "rows": 0})
            for k in agg:
                agg[k] += pst[k]

    def commit(self) -> int:
        """Commit: all writes of the transaction become visible at once. Returns the commit id."""
        self._stop_heartbeat()
        try:
            commit_id = self.catalog.commit_transaction(self.txn_id, self.stats)
        except Exception:
            self.state = "aborted"
            raise
        self.state = "committed"
        return commit_id

    def abort(self, reason: str = "") -> None:
        """Abort: nothing written in the transaction ever becomes visible."""
        self._stop_heartbeat()
        if self.state == "open":
            self.catalog.abort_transaction(self.txn_id, reason)
        self.state = "aborted"


@dataclass
class WriteResult:
    """Statistics of one write operation.

    Attributes:
        write_id, statement_id: where the events went.
        rows_inserted: insert events of new keys (and every row of an insert).
        rows_updated: rows replaced by an upsert (one delete + one insert event each).
        rows_deleted: rows deleted by key.
        files, bytes: event files written and their total size in bytes.
        partitions: ``{partition path or '': {"files", "bytes", "rows"}}``.
        file_list: the files, as dicts (path, rows, bytes, stripes, inserts, deletes).
    """

    write_id: int
    statement_id: int
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    files: int = 0
    bytes: int = 0
    partitions: dict[str, dict] = field(default_factory=dict)
    file_list: list[dict] = field(default_factory=list)

    def add_files(self, rows: list[dict]) -> None:
        for r in rows:
            self.files += 1
            self.bytes += r["bytes"]
            p = self.partitions.setdefault(r["partition"], {"files": 0, "bytes": 0, "rows": 0})
            p["files"] += 1
            p["bytes"] += r["bytes"]
            p["rows"] += r["rows"]
            self.file_list.append(r)


# ----------------------------------------------------------------------------- schema checks

_WIDENING = {
    "tinyint": {"smallint", "int", "bigint", "float", "double"},
    "smallint": {"int", "bigint", "float", "double"},
    "int": {"bigint", "float", "double"},
    "bigint": {"float", "double"},
    "float": {"double"},
    "date": {"timestamp"},
}


def _compatible(src: str, dst: str) -> bool:
    """May a column of Hive type ``src`` be written into one of type ``dst``? Equal types,
    numeric widening (Hive's implicit conversions), any string-like into string/varchar/char,
    decimals into decimals that keep the integer digits, integers into wide-enough decimals."""
    src, dst = htypes.normalize(src), htypes.normalize(dst)
    if src == dst:
        return True
    ps, pd = htypes.parse(src), htypes.parse(dst)
    if dst in _WIDENING.get(src, set()):
        return True
    if ps[0] in ("varchar", "char") or src == "string":
        return pd[0] in ("varchar", "char") or dst == "string"
    if pd[0] == "decimal":
        digits = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}
        if src in digits:
            return pd[1] - pd[2] >= digits[src]
        if ps[0] == "decimal":
            return pd[1] - pd[2] >= ps[1] - ps[2] and pd[2] >= ps[2]
    if ps[0] == "decimal" and dst in ("double", "float"):
        return True
    return False


def check_schema(df_schema, table, *, require_all: bool = True) -> list[str]:
    """Check a DataFrame schema against a table (columns + partition columns).

    Args:
        df_schema: Spark ``StructType``.
        table: ``acidflow.catalog.TableDef``.
        require_all: every table column must be present (inserts); otherwise only the present
            ones are checked (key batches for deletes).
    Returns:
        The DataFrame's column names in table order (columns, then partition columns).
    Raises:
        SchemaMismatchError: missing, extra or incompatible columns (all problems listed).
    """
    have = {f.name.lower(): f for f in df_schema.fields}
    wanted = [(c.name, c.hive_type) for c in table.columns + table.partition_columns]
    problems, order = [], []
    for name, hive_type in wanted:
        f = have.pop(name.lower(), None)
        if f is None:
            if require_all:
                problems.append(f"missing column {name} {hive_type}")
            continue
        try:
            src = htypes.hive_type_from_spark(f.dataType)
        except htypes.HiveTypeError as exc:
            problems.append(f"column {name}: {exc}")
            continue
        if not _compatible(src, hive_type):
            problems.append(f"column {name}: {src} cannot be written as {hive_type}")
        order.append(f.name)
    if have:
        problems.append("columns not in the table: " + ", ".join(sorted(have)))
    if problems:
        raise SchemaMismatchError(f"schema mismatch for table {table.name}: " + "; ".join(problems))
    return order


def _aligned(df, table, require_all: bool = True):
    """The DataFrame with the table's columns in table order, cast to the table's types."""
    from pyspark.sql import functions as F

    names = check_schema(df.schema, table, require_all=require_all)
    by_lower = {n.lower(): n for n in names}
    cols = []
    for c in table.columns + table.partition_columns:
        src = by_lower.get(c.name.lower())
        if src is not None:
            cols.append(F.col(f"`{src}`").cast(htypes.spark_type(c.hive_type)).alias(c.name))
    return df.select(*cols)


# ----------------------------------------------------------------------------- executor side


@dataclass
class _WriteSpec:
    """What a writer task needs (pickled to executors)."""

    tfs_url: str
    table_dir: str
    columns: list[tuple[str, str]]
    partition_columns: list[str]
    write_id: int
    statement_id: int
    kind: str  # "insert" | "delete" | "base"
    bucketed: bool
    compression: str = "zlib"
    stripe_rows: int = acid_files.DEFAULT_STRIPE_ROWS

    def dir_name(self) -> str:
        if self.kind == "base":
            return format_base(self.write_id)
        return format_delta(self.write_id, self.write_id, self.statement_id,
                            delete=self.kind == "delete")


_RESULT_SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("path", pa.string()),
    ("rows", pa.int64()), ("bytes", pa.int64()), ("stripes", pa.int32()),
])


def _bucket_args(table) -> tuple[list[str], list[str], int, int]:
    """(bucket column names, their Hive types, number of buckets, bucketing version): plain
    values, so the Spark body does not unpickle the catalog's TableDef on executors."""
    types_by_name = {c.name: c.hive_type for c in table.columns + table.partition_columns}
    names = list(table.bucket_columns)
    return names, [types_by_name[k] for k in names], table.num_buckets, table.bucketing_version


def _bucket_ids_task(batches, args: tuple[list[str], list[str], int, int]):
    """mapInArrow body: append the Hive bucket number of each row as ``_acid_bucket``
    (``args`` from :func:`_bucket_args`)."""
    names, types, n, version = args
    for b in batches:
        ids = bucket_numbers([b.column(k) for k in names], types, n, version)
        yield pa.RecordBatch.from_arrays(list(b.columns) + [pa.array(ids, pa.int32())],
                                         names=list(b.schema.names) + [BUCKET_COL])


def _write_task(batches, spec: _WriteSpec):
    """mapInArrow body: write the (sorted) rows of one Spark partition into event files.

    Input columns: partition columns, ``_acid_bucket`` (bucketed/delete), then either the table
    columns (insert/base) or ``owid, bprop, rowid`` (delete). Yields one result row per file.
    """
    from pyspark import TaskContext

    tfs = TableFS(spec.tfs_url)
    writer_id = TaskContext.get().partitionId() if TaskContext.get() else 0
    if not spec.bucketed and spec.kind != "delete" and writer_id >= MAX_WRITERS:
        raise ValueError(f"Spark partition {writer_id} exceeds the {MAX_WRITERS} writer ids of "
                         "BucketCodec V1; repartition the input")
    npc = len(spec.partition_columns)
    results: list[dict] = []
    current: tuple | None = None
    writer: acid_files.EventFileWriter | None = None
    row_id = 0
    bprop = 0

    def finish():
        if writer is None:
            return
        done = writer.close()
        if done is not None:
            results.append({"partition": current[0], "bucket": current[1], "path": done.path,
                            "rows": done.rows, "bytes": done.bytes, "stripes": done.stripes})

    try:
        for b in batches:
            n = b.num_rows
            if n == 0:
                continue
            cols = [c.to_pylist() for c in b.columns]
            pvals = cols[:npc]
            rest = cols[npc:]
            has_bucket = spec.bucketed or spec.kind == "delete"
            buckets = rest[0] if has_bucket else [writer_id] * n
            payload = rest[1:] if has_bucket else rest
            if spec.kind == "delete":
                owids, bprops, rids = payload
                rows = None
            else:
                rows = list(zip(*payload)) if payload else [()] * n
            for i in range(n):
                ppath = parts.make_partition_path(
                    [(spec.partition_columns[j], pvals[j][i]) for j in range(npc)]) if npc else ""
                group = (ppath, buckets[i])
                if group != current:
                    finish()
                    current = group
                    directory = join(spec.table_dir, ppath, spec.dir_name()) if ppath else \
                        join(spec.table_dir, spec.dir_name())
                    path = join(directory, format_bucket_file(group[1]))
                    writer = acid_files.EventFileWriter(tfs, path, spec.columns,
                                                        compression=spec.compression,
                                                        stripe_rows=spec.stripe_rows)
                    row_id = 0
                    bprop = encode_bucket_property(group[1], spec.statement_id)
                if spec.kind == "delete":
                    writer.write([(acid_files.OPERATION_DELETE, owids[i], bprops[i], rids[i],
                                   spec.write_id, None)])
                else:
                    writer.write([(acid_files.OPERATION_INSERT, spec.write_id, bprop, row_id,
                                   spec.write_id, rows[i])])
                    row_id += 1
        finish()
        writer = None
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if results:
        yield pa.RecordBatch.from_pylist(results, schema=_RESULT_SCHEMA)


# ----------------------------------------------------------------------------- driver side


def _tfs_and_dir(table) -> tuple[TableFS, str]:
    return TableFS(table.location), table.location


def _with_buckets(df, table):
    """Append ``_acid_bucket`` (Hive bucket number) computed from the table's bucket columns."""
    from pyspark.sql import types as T

    schema = T.StructType(df.schema.fields + [T.StructField(BUCKET_COL, T.IntegerType())])
    args = _bucket_args(table)
    return df.mapInArrow(lambda it: _bucket_ids_task(it, args), schema)


def _run_writer(df, spec: _WriteSpec) -> list[dict]:
    """Run the writer tasks and collect their file results (driver)."""
    from pyspark.sql import types as T

    out_schema = T.StructType([
        T.StructField("partition", T.StringType()), T.StructField("bucket", T.IntegerType()),
        T.StructField("path", T.StringType()), T.StructField("rows", T.LongType()),
        T.StructField("bytes", T.LongType()), T.StructField("stripes", T.IntegerType())])
    rows = df.mapInArrow(lambda it: _write_task(it, spec), out_schema).collect()
    return [r.asDict() for r in rows]


def _finish_dirs(tfs: TableFS, spec: _WriteSpec, file_rows: list[dict],
                 extra_partitions: list[str] = ()) -> None:
    """Write ``_orc_acid_version`` into every directory the operation created."""
    done = set()
    for p in [r["partition"] for r in file_rows] + list(extra_partitions):
        if p in done:
            continue
        done.add(p)
        d = join(spec.table_dir, p, spec.dir_name()) if p else join(spec.table_dir, spec.dir_name())
        tfs.makedirs(d)
        acid_files.write_acid_version_file(tfs, d)


def _spec(table, txn: Transaction, kind: str, statement_id: int, **options) -> _WriteSpec:
    return _WriteSpec(
        tfs_url=table.location, table_dir=table.location,
        columns=[(c.name, c.hive_type) for c in table.columns],
        partition_columns=[c.name for c in table.partition_columns],
        write_id=txn.write_id(table.name), statement_id=statement_id, kind=kind,
        bucketed=table.num_buckets > 0, **options)


def _write_inserts(df, table, spec: _WriteSpec) -> list[dict]:
    """Lay out aligned rows by (partition, bucket) and write insert (or base) events."""
    pcols = [c.name for c in table.partition_columns]
    data_cols = [c.name for c in table.columns]
    if table.num_buckets > 0:
        df = _with_buckets(df, table)
        df = df.repartition(*pcols, BUCKET_COL).sortWithinPartitions(*pcols, BUCKET_COL)
        df = df.select(*pcols, BUCKET_COL, *data_cols)
    else:
        if df.rdd.getNumPartitions() > MAX_WRITERS:
            df = df.coalesce(MAX_WRITERS)
        if pcols:
            df = df.sortWithinPartitions(*pcols)
        df = df.select(*pcols, *data_cols)
    return _run_writer(df, spec)


def insert(spark, catalog, txn: Transaction, table_name: str, df, **options) -> WriteResult:
    """Append the rows of ``df`` to a table (Hive INSERT INTO on a full-ACID table).

    Args:
        spark: SparkSession.
        catalog: ``acidflow.catalog.Catalog``.
        txn: an open :class:`Transaction`.
        table_name: ``db.table``.
        df: DataFrame with every table column and partition column (any order, names matched
            case-insensitively, types equal or widenable).
        **options: ``compression`` (zlib|snappy), ``stripe_rows``.
    Returns:
        :class:`WriteResult` (rows_inserted, files, bytes, partitions).
    Raises:
        SchemaMismatchError: before anything is written.
        acidflow.catalog.errors.LockTimeoutError: the table is exclusively locked.
    """
    table = catalog.get_table(table_name)
    aligned = _aligned(df, table)
    catalog.acquire_lock(txn.txn_id, table.name, None, "shared_write")
    spec = _spec(table, txn, "insert", txn.next_statement_id(table.name), **options)
    tfs, _ = _tfs_and_dir(table)
    files = _write_inserts(aligned, table, spec)
    _finish_dirs(tfs, spec, files)
    result = WriteResult(spec.write_id, spec.statement_id)
    result.add_files(files)
    result.rows_inserted = sum(f["rows"] for f in files)
    for p in sorted({f["partition"] for f in files}):
        catalog.add_component(txn.txn_id, table.name, p or None, "insert")
    txn.record(table.name, "insert", result)
    return result


def _scope_columns(table) -> tuple[list[str] | None, bool]:
    """What a key batch can be narrowed by: the partition columns when all of them are key
    columns (else None), and whether the bucket columns are all key columns."""
    key_cols = {k.lower() for k in table.primary_key}
    pnames = [c.name for c in table.partition_columns]
    by_partition = pnames if pnames and all(p.lower() in key_cols for p in pnames) else None
    by_bucket = table.num_buckets > 0 and {b.lower() for b in table.bucket_columns} <= key_cols
    return by_partition, by_bucket


def _key_scope(spark, table, keys_df) -> tuple[list[str] | None, list[int] | None]:
    """Partitions and buckets the keys of a Spark DataFrame can touch (None = all)."""
    pnames, by_bucket = _scope_columns(table)
    partitions = buckets = None
    if pnames:
        rows = keys_df.select(*pnames).distinct().collect()
        partitions = [parts.make_partition_path([(p, r[p]) for p in pnames]) for r in rows]
    if by_bucket:
        rows = _with_buckets(keys_df, table).select(BUCKET_COL).distinct().collect()
        buckets = [r[0] for r in rows]
    return partitions, buckets


def key_scope_arrow(table, keys: pa.Table) -> tuple[list[str] | None, list[int] | None]:
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


def bucket_ids_arrow(table, tbl: pa.Table | pa.RecordBatch) -> list[int]:
    """Hive bucket number of each row of an Arrow table or batch holding the bucket columns
    (the writers' ``_acid_bucket``; ``bucketing_version`` 1 or 2)."""
    names, types, n, version = _bucket_args(table)
    return bucket_numbers([tbl.column(k) for k in names], types, n, version)


#: A merge's key lookup reads in the driver (threads) when the files it plans to read hold at
#: most this many bytes, else as a Spark job (``ACIDFLOW_LOCAL_LOOKUP_BYTES``).
LOCAL_LOOKUP_BYTES = int(os.environ.get("ACIDFLOW_LOCAL_LOOKUP_BYTES", str(8 << 30)))


@dataclass
class CurrentPlan:
    """The snapshot a writer sees, planned once: the transaction's own ``ValidWriteIdList``
    (its earlier statements included), restricted to partitions/buckets.

    Attributes:
        tfs, table_dir: where the table lives; plan: ``acidflow.acid.snapshot`` read plan.
    """

    tfs: TableFS
    table_dir: str
    plan: object


def plan_current(catalog, table, txn: Transaction | None, *, partitions=None,
                 buckets=None) -> CurrentPlan:
    """Plan the read of the snapshot a writer sees (one catalog query, one listing)."""
    valid = catalog.valid_write_ids(table.name, txn_id=txn.txn_id if txn else None)
    tfs, tdir = _tfs_and_dir(table)
    return CurrentPlan(tfs, tdir, snapshot.plan_read(
        tfs, tdir, [(c.name, c.hive_type) for c in table.columns],
        [(c.name, c.hive_type) for c in table.partition_columns], valid,
        bucketed=table.num_buckets > 0, partitions=partitions, buckets=buckets))


def stored_column_max(current: CurrentPlan, column: str) -> tuple[bool, str | None]:
    """:func:`acidflow.acid.snapshot.string_column_max` of a string column over the files of a
    planned snapshot (ORC footers only)."""
    return snapshot.string_column_max(current.tfs, current.plan, column)


def lookup_rows(spark, current: CurrentPlan, keys: pa.Table, *,
                project: list[str] | None = None) -> pa.Table:
    """The visible rows (with ROW__ID) of a planned snapshot whose key is among ``keys``, as an
    Arrow table in the driver: the key filter and the column projection run inside the ORC
    readers. Read in this process with one thread per core when the planned files are at most
    :data:`LOCAL_LOOKUP_BYTES`, else as a Spark job."""
    tfs, plan = current.tfs, current.plan
    if spark is None or snapshot.planned_bytes(tfs, plan) <= LOCAL_LOOKUP_BYTES:
        return snapshot.read_arrow_parallel(tfs, plan, threads=os.cpu_count() or 2, row_id=True,
                                            project=project, keys=keys)
    return snapshot.read_spark(spark, current.table_dir, plan, row_id=True, project=project,
                               keys=keys).toArrow()


def current_rows(spark, catalog, table, txn: Transaction | None, *, partitions=None, buckets=None,
                 row_id: bool = True, project: list[str] | None = None,
                 keys: pa.Table | None = None):
    """The table's visible rows for a writer: snapshot at the transaction's own
    ``ValidWriteIdList`` (its earlier statements included), restricted to partitions/buckets;
    ``project`` (data columns to read) and ``keys`` (rows whose key is among these) are pushed
    into the readers (``acidflow.acid.snapshot.read_task``)."""
    cur = plan_current(catalog, table, txn, partitions=partitions, buckets=buckets)
    return snapshot.read_spark(spark, cur.table_dir, cur.plan, row_id=row_id, project=project,
                               keys=keys)


def _matches(spark, catalog, txn, table, keys_df):
    """Existing rows (key columns, partition columns, ROW__ID) whose key is in ``keys_df``."""
    from pyspark.sql import functions as F

    key = list(table.primary_key)
    if not key:
        raise ValueError(f"table {table.name} has no primary key; delete/upsert need one")
    partitions, buckets = _key_scope(spark, table, keys_df)
    existing = current_rows(spark, catalog, table, txn, partitions=partitions, buckets=buckets)
    pnames = [c.name for c in table.partition_columns]
    cols = list(dict.fromkeys(key + pnames))
    existing = existing.select(*cols, F.col(snapshot.ROW_ID + ".writeid").alias("owid"),
                               F.col(snapshot.ROW_ID + ".bucketid").alias("bprop"),
                               F.col(snapshot.ROW_ID + ".rowid").alias("rowid"))
    return existing.join(keys_df.select(*key).distinct(), on=key, how="left_semi")


def _write_deletes(spark, table, spec: _WriteSpec, matched) -> list[dict]:
    """Write delete events for matched rows into ``delete_delta_W_W_S/bucket_N``, N decoded
    from each row's bucket property, sorted by the deleted ROW__ID."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    pnames = [c.name for c in table.partition_columns]
    decode = F.udf(lambda prop: decode_bucket_id(prop), T.IntegerType())
    df = matched.select(*pnames, decode("bprop").alias(BUCKET_COL), "owid", "bprop", "rowid")
    df = df.repartition(*pnames, BUCKET_COL).sortWithinPartitions(
        *pnames, BUCKET_COL, "owid", "bprop", "rowid")
    return _run_writer(df, spec)


def delete(spark, catalog, txn: Transaction, table_name: str, keys_df, **options) -> WriteResult:
    """Delete the rows whose primary key is in ``keys_df`` (Hive DELETE ... WHERE key IN ...).

    Args:
        keys_df: DataFrame holding at least the primary key columns (extra columns ignored).
    Returns:
        :class:`WriteResult` with ``rows_deleted`` = rows found and deleted (keys that match no
        row are not errors and are not counted).
    Raises:
        SchemaMismatchError: key columns missing or of incompatible types.
        ValueError: the table has no primary key.
    """
    table = catalog.get_table(table_name)
    key = list(table.primary_key)
    if not key:
        raise ValueError(f"table {table.name} has no primary key; delete by key needs one")
    missing = [k for k in key if k.lower() not in {f.name.lower() for f in keys_df.schema.fields}]
    if missing:
        raise SchemaMismatchError(f"delete from {table.name}: key columns missing: {missing}")
    keys_df = _aligned(keys_df.select(*[k for k in keys_df.columns if k.lower() in
                                        {c.lower() for c in key + [p.name for p in table.partition_columns]}]),
                       table, require_all=False)
    catalog.acquire_lock(txn.txn_id, table.name, None, "shared_write")
    spec = _spec(table, txn, "delete", txn.next_statement_id(table.name), **options)
    matched = _matches(spark, catalog, txn, table, keys_df).cache()
    try:
        files = _write_deletes(spark, table, spec, matched)
    finally:
        matched.unpersist()
    tfs, _ = _tfs_and_dir(table)
    _finish_dirs(tfs, spec, files)
    result = WriteResult(spec.write_id, spec.statement_id)
    result.add_files(files)
    result.rows_deleted = sum(f["rows"] for f in files)
    for p in sorted({f["partition"] for f in files}):
        catalog.add_component(txn.txn_id, table.name, p or None, "delete")
    txn.record(table.name, "delete", result)
    return result


def upsert(spark, catalog, txn: Transaction, table_name: str, df, **options) -> WriteResult:
    """Insert new keys and replace existing ones (split-update): for a key already in the table
    a delete event for its current ROW__ID plus an insert event for the new version, both in
    ``W``/statement ``S``; for a new key an insert event only.

    Args:
        df: full rows (every column), at most one row per primary key.
    Returns:
        :class:`WriteResult` with ``rows_inserted`` (new keys) and ``rows_updated``.
    Raises:
        SchemaMismatchError: before anything is written.
        DuplicateKeyError: two rows share a key (precombine first, e.g. ``acidflow.cdc``).
        ValueError: the table has no primary key.
    """
    from pyspark.sql import functions as F

    table = catalog.get_table(table_name)
    key = list(table.primary_key)
    if not key:
        raise ValueError(f"table {table.name} has no primary key; upsert needs one")
    aligned = _aligned(df, table).cache()
    try:
        dups = aligned.groupBy(*key).count().where(F.col("count") > 1).limit(5).collect()
        if dups:
            raise DuplicateKeyError(
                f"upsert into {table.name}: duplicate keys in the batch, e.g. "
                + ", ".join(str({k: r[k] for k in key}) for r in dups))
        catalog.acquire_lock(txn.txn_id, table.name, None, "shared_write")
        matched = _matches(spark, catalog, txn, table, aligned.select(*key)).cache()
        try:
            result = _split_update(table, catalog, txn, aligned, matched, "upsert", **options)
        finally:
            matched.unpersist()
    finally:
        aligned.unpersist()
    return result


def _write_local(tbl: pa.Table, spec: _WriteSpec) -> list[dict]:
    """Run the writer task body in this process on a laid-out Arrow table (one writer: for an
    unbucketed table every row goes to ``bucket_00000``)."""
    return [r for b in _write_task(iter(tbl.to_batches()), spec) for r in b.to_pylist()]


def _layout_inserts_local(tbl: pa.Table, table) -> pa.Table:
    """Arrow version of :func:`_write_inserts`' layout: partition columns, ``_acid_bucket``
    (bucketed tables), data columns; sorted by partition and bucket (stable)."""
    pcols = [c.name for c in table.partition_columns]
    data_cols = [c.name for c in table.columns]
    if table.num_buckets > 0:
        tbl = tbl.append_column(BUCKET_COL, pa.array(bucket_ids_arrow(table, tbl), pa.int32()))
        order = pcols + [BUCKET_COL]
        return tbl.sort_by([(c, "ascending") for c in order]).select(pcols + [BUCKET_COL] +
                                                                      data_cols)
    if pcols:
        tbl = tbl.sort_by([(c, "ascending") for c in pcols])
    return tbl.select(pcols + data_cols)


def _layout_deletes_local(tbl: pa.Table, table) -> pa.Table:
    """Arrow version of :func:`_write_deletes`' layout, sorted by partition, bucket and the
    deleted ROW__ID."""
    pcols = [c.name for c in table.partition_columns]
    buckets = pa.array([decode_bucket_id(p) for p in tbl.column("bprop").to_pylist()], pa.int32())
    tbl = tbl.select(pcols + ["owid", "bprop", "rowid"]).append_column(BUCKET_COL, buckets)
    order = pcols + [BUCKET_COL, "owid", "bprop", "rowid"]
    return tbl.sort_by([(c, "ascending") for c in order]).select(
        pcols + [BUCKET_COL, "owid", "bprop", "rowid"])


def _split_update(table, catalog, txn: Transaction, aligned, matched, operation: str,
                  counts: dict[str, int] | None = None, **options) -> WriteResult:
    """Write one split-update statement: delete events for the ROW__IDs in ``matched``
    (partition columns, ``owid``, ``bprop``, ``rowid``) and insert events for the rows of
    ``aligned``, both in ``W``/statement ``S``; register components and statistics.
    ``aligned``/``matched`` are Spark DataFrames (written by Spark tasks) or Arrow tables
    (written in this process).

    ``counts`` gives ``rows_inserted``/``rows_updated``/``rows_deleted`` explicitly; by default
    every delete event is an update and the remaining inserts are new rows (upsert)."""
    sid = txn.next_statement_id(table.name)
    del_spec = _spec(table, txn, "delete", sid, **options)
    ins_spec = _spec(table, txn, "insert", sid, **options)
    if isinstance(matched, pa.Table):
        del_files = _write_local(_layout_deletes_local(matched, table), del_spec) \
            if matched.num_rows else []
    else:
        del_files = _write_deletes(None, table, del_spec, matched)
    if isinstance(aligned, pa.Table):
        ins_files = _write_local(_layout_inserts_local(aligned, table), ins_spec) \
            if aligned.num_rows else []
    else:
        ins_files = _write_inserts(aligned, table, ins_spec)
    tfs, _ = _tfs_and_dir(table)
    _finish_dirs(tfs, del_spec, del_files)
    _finish_dirs(tfs, ins_spec, ins_files)
    result = WriteResult(ins_spec.write_id, sid)
    result.add_files(del_files + ins_files)
    deleted = sum(f["rows"] for f in del_files)
    inserted = sum(f["rows"] for f in ins_files)
    if counts is None:
        counts = {"rows_updated": deleted, "rows_inserted": inserted - deleted}
    for k, v in counts.items():
        setattr(result, k, v)
    for p in sorted({f["partition"] for f in del_files}):
        catalog.add_component(txn.txn_id, table.name, p or None,
                              "update" if ins_files else "delete")
    for p in sorted({f["partition"] for f in ins_files} - {f["partition"] for f in del_files}):
        catalog.add_component(txn.txn_id, table.name, p or None, "insert")
    txn.record(table.name, operation, result)
    return result


def apply_row_changes(spark, catalog, txn: Transaction, table_name: str, inserts_df, deletes_df,
                      *, counts: dict[str, int], operation: str = "merge",
                      **options) -> WriteResult:
    """The split-update primitive behind CDC merges: in one statement, delete the row versions
    named by ``deletes_df`` and insert the rows of ``inserts_df``.

    Args:
        inserts_df: full rows (every column; aligned and cast like :func:`insert`). A Spark
            DataFrame is written by Spark tasks; a pyarrow Table (columns and types exactly
            the table's, as ``acidflow.acid.types.arrow_schema`` gives) is written in this
            process -- much cheaper for a change batch already in the driver.
        deletes_df: one row per row version to delete: the table's partition columns plus
            ``owid`` (originalTransaction), ``bprop`` (bucket property) and ``rowid`` (the
            ROW__ID read at the transaction's snapshot, e.g. from :func:`current_rows`);
            Spark DataFrame or pyarrow Table, as ``inserts_df``.
        counts: ``{"rows_inserted", "rows_updated", "rows_deleted"}`` for the commit record
            (the caller knows which delete+insert pairs are updates).
        operation: name recorded in the commit record's operation list.
    Returns:
        :class:`WriteResult`.
    Raises:
        SchemaMismatchError: ``inserts_df`` does not fit the table (nothing written).
    """
    table = catalog.get_table(table_name)
    if isinstance(inserts_df, pa.Table):
        schema = htypes.arrow_schema([(c.name, c.hive_type)
                                      for c in table.columns + table.partition_columns])
        try:
            aligned = inserts_df.select(schema.names).cast(schema)
        except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatchError(f"{table.name}: insert rows do not fit the table: {e}") \
                from e
    else:
        aligned = _aligned(inserts_df, table)
    catalog.acquire_lock(txn.txn_id, table.name, None, "shared_write")
    return _split_update(table, catalog, txn, aligned, deletes_df, operation, counts, **options)


def insert_overwrite(spark, catalog, txn: Transaction, table_name: str, df,
                     partitions: list[dict[str, Any]] | None = None, **options) -> WriteResult:
    """Replace the contents of the table, or of partitions, with ``df`` (Hive INSERT OVERWRITE):
    writes ``base_W`` into each target directory; older bases and deltas become obsolete for
    readers whose snapshot includes W.

    Args:
        df: full rows.
        partitions: for a partitioned table, the partitions to overwrite as
            ``[{"ds": "2024-01-01"}, ...]``; they are emptied even when ``df`` has no rows for
            them. Default: the partitions present in ``df`` (Hive's dynamic-partition overwrite).
    Returns:
        :class:`WriteResult`.
    Raises:
        SchemaMismatchError: before anything is written; also when ``df`` holds rows outside
            the given ``partitions``.
        acidflow.catalog.errors.LockTimeoutError: another transaction holds a lock on the table.
    """
    table = catalog.get_table(table_name)
    aligned = _aligned(df, table)
    pnames = [c.name for c in table.partition_columns]
    explicit = [parts.make_partition_path([(p, spec_[p]) for p in pnames])
                for spec_ in (partitions or [])]
    if explicit and pnames:
        present = {parts.make_partition_path([(p, r[p]) for p in pnames])
                   for r in aligned.select(*pnames).distinct().collect()}
        outside = present - set(explicit)
        if outside:
            raise SchemaMismatchError(
                f"insert overwrite {table.name}: rows for partitions not being overwritten: "
                + ", ".join(sorted(outside)))
    catalog.acquire_lock(txn.txn_id, table.name, None, "exclusive")
    spec = _spec(table, txn, "base", txn.next_statement_id(table.name), **options)
    tfs, _ = _tfs_and_dir(table)
    files = _write_inserts(aligned, table, spec)
    extra = explicit if pnames else [""]
    _finish_dirs(tfs, spec, files, extra)
    result = WriteResult(spec.write_id, spec.statement_id)
    result.add_files(files)
    result.rows_inserted = sum(f["rows"] for f in files)
    for p in sorted({f["partition"] for f in files} | set(explicit)) or [""]:
        catalog.add_component(txn.txn_id, table.name, p or None, "insert_overwrite")
    txn.record(table.name, "insert_overwrite", result)
    return result
