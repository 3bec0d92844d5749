"""The file-writing half of a write statement: laying rows out by (partition, bucket) and
writing ACID event files into ``delta_W_W_S`` / ``delete_delta_W_W_S`` / ``base_W``.

Executor side: :func:`bucket_ids_udf_body` (an Arrow UDF: Hive's bucket number of each row,
``acidflow.format.bucketing_hash``) and :func:`write_task` (one event file per
(partition, bucket) group, written from Arrow columns, ``ROW__ID`` = ``(W, bucket property,
rowId)``;
docs/hive-acid-format.md §5). Driver side: :func:`write_inserts` / :func:`write_deletes` shape a
Spark DataFrame for the tasks and collect the file rows; :func:`write_local` runs the same task
body in this process on an Arrow table; :func:`finish_dirs` writes ``_orc_acid_version`` into
each directory a statement created.

The writer (bucket) id of an unbucketed table is the Spark partition id, 0..4095
(``BucketCodec`` V1's 12 bits, :func:`acidflow.format.bucketing.check_bucket_id`).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format import keys as acid_keys
from acidflow.format import partitions as parts
from acidflow.format.bucketing import (
    MAX_BUCKET_ID,
    check_bucket_id,
    decode_bucket_id,
    encode_bucket_property,
)
from acidflow.format.bucketing_hash import bucket_numbers, murmur3_32
from acidflow.format.layout import format_base, format_bucket_file, format_delta
from acidflow.format.orc import columnar
from acidflow.format.orc import files as acid_files
from acidflow.format.table import TableDesc
from acidflow.storage.fs import TableFS, join, new_claim

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: the column holding a row's Hive bucket number (bucketed tables) on its way to the writers
BUCKET_COL = "_acid_bucket"
#: writer ids an unbucketed insert may use (Spark partitions beyond are coalesced)
WRITER_IDS = MAX_BUCKET_ID + 1

#: one dict per event file written: partition path, bucket, path, rows, bytes, stripes, and
#: ``key_hashes`` (keyed tables' insert/base files: the packed hashes of the primary keys written,
#: :mod:`acidflow.format.keys`; None when unkeyed or above ``MAX_KEYS_PER_SCOPE``)
FileRow = dict[str, Any]


@dataclass
class WriteResult:
    """Statistics of one write statement.

    Attributes:
        write_id, statement_id: where the events went.
        rows_inserted: insert events of new keys (and every row of an insert).
        rows_updated: rows replaced by an upsert (one delete + one insert event each).
        rows_deleted: rows deleted by key.
        rows_skipped_late: batch rows of an upsert with an ordering field that were not written
            because the stored version of their key is as new or newer
            (:mod:`acidflow.engine.ordering`).
        files, bytes: event files written and their total size in bytes.
        partitions: ``{partition path or '': {"files", "bytes", "rows"}}``.
        file_list: the files, as dicts (path, rows, bytes, stripes, inserts, deletes).
    """

    write_id: int
    statement_id: int
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_skipped_late: int = 0
    files: int = 0
    bytes: int = 0
    partitions: dict[str, dict] = field(default_factory=dict)
    file_list: list[dict] = field(default_factory=list)

    def add_files(self, rows: list[FileRow]) -> None:
        """Count written files (rows of :func:`write_task`'s result) into the statistics."""
        for r in rows:
            self.files += 1
            self.bytes += r["bytes"]
            p = self.partitions.setdefault(r["partition"], {"files": 0, "bytes": 0, "rows": 0})
            p["files"] += 1
            p["bytes"] += r["bytes"]
            p["rows"] += r["rows"]
            self.file_list.append(r)


@dataclass
class WriteSpec:
    """What a writer task needs (pickled to executors).

    Attributes:
        tfs_url, table_dir: the table root. columns: ``[(name, hive_type)]`` of the ``row``
        struct. partition_columns: partition column names. write_id, statement_id: W and S.
        kind: ``"insert"`` | ``"delete"`` | ``"base"``. bucketed: CLUSTERED BY table.
        compression: ``zlib`` | ``snappy`` | ...
        stripe_rows: events per ORC stripe, exactly (rounded up to a multiple of the 1,024-row
            write batch, Hive's ``VectorizedRowBatch`` size): the file is written through
            pyorc, which cuts a stripe at that count. None (default): pyarrow's columnar
            writer, several times faster, with stripes of about
            :data:`acidflow.format.orc.files.DEFAULT_STRIPE_ROWS` events (it cuts a stripe
            after a batch only once the stripe's compressed streams hold bytes, so very
            compressible data gets longer stripes; :mod:`acidflow.format.orc.columnar`).
        claim: the statement's directory claim (:func:`acidflow.storage.fs.new_claim`, made once
        on the driver): every directory the statement writes is created exclusively with it
        (:meth:`acidflow.storage.fs.TableFS.claim_dir`), so the statement never writes into a
        directory another writer (or another catalog handing out the same write id) made.
        key_columns: primary key column names (insert/base of a keyed table): the task hashes
            each written key (:func:`acidflow.format.keys.key_hash64`) for the key-level write
            set, and its files carry ORC bloom filters on those that are data columns
            (:meth:`bloom_filter_columns`); empty = no hashes, no bloom filters.
    """

    tfs_url: str
    table_dir: str
    columns: list[tuple[str, str]]
    partition_columns: list[str]
    write_id: int
    statement_id: int
    kind: str  # "insert" | "delete" | "base"
    bucketed: bool
    compression: str = "zlib"
    stripe_rows: int | None = None
    claim: str = ""
    key_columns: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.claim:
            self.claim = new_claim(
                write_id=self.write_id, statement_id=self.statement_id, kind=self.kind
            )

    @classmethod
    def for_table(
        cls, table: TableDesc, kind: str, write_id: int, statement_id: int, **options: Any
    ) -> "WriteSpec":
        """The spec of one statement on ``table``; ``options``: ``compression``,
        ``stripe_rows``."""
        return cls(
            tfs_url=table.location,
            table_dir=table.location,
            columns=[(c.name, c.hive_type) for c in table.columns],
            partition_columns=[c.name for c in table.partition_columns],
            write_id=write_id,
            statement_id=statement_id,
            kind=kind,
            bucketed=table.num_buckets > 0,
            key_columns=list(table.primary_key) if kind != "delete" else [],
            **options,
        )

    def bloom_filter_columns(self) -> list[str]:
        """The key columns that are fields of ``row`` (partition columns are not in the file):
        the ORC bloom filter columns of the statement's insert/base files (Hive
        ``orc.bloom.filter.columns``). Empty for deletes: delete events carry no row."""
        if self.kind == "delete":
            return []
        return acid_files.key_bloom_filter_columns(self.columns, self.key_columns)

    def dir_name(self) -> str:
        """``base_W`` or ``delta_W_W_S`` / ``delete_delta_W_W_S``."""
        if self.kind == "base":
            return format_base(self.write_id)
        return format_delta(
            self.write_id, self.write_id, self.statement_id, delete=self.kind == "delete"
        )

    def directory(self, partition: str) -> str:
        """The statement's directory in ``partition`` (``""`` = the table root)."""
        return (
            join(self.table_dir, partition, self.dir_name())
            if partition
            else join(self.table_dir, self.dir_name())
        )


_RESULT_SCHEMA = pa.schema(
    [
        ("partition", pa.string()),
        ("bucket", pa.int32()),
        ("path", pa.string()),
        ("rows", pa.int64()),
        ("bytes", pa.int64()),
        ("stripes", pa.int32()),
        ("key_hashes", pa.binary()),
    ]
)

BucketArgs = tuple[list[str], list[str], int, int]


def bucket_args(table: TableDesc) -> BucketArgs:
    """(bucket column names, their Hive types, number of buckets, bucketing version): plain
    values, so the Spark body does not unpickle the catalog's TableDef on executors."""
    types_by_name = {c.name: c.hive_type for c in [*table.columns, *table.partition_columns]}
    names = list(table.bucket_columns)
    return names, [types_by_name[k] for k in names], table.num_buckets, table.bucketing_version


def bucket_ids_udf_body(args: BucketArgs) -> Callable[..., pa.Array]:
    """Executor-side body of the bucket-number Arrow UDF (``args`` from :func:`bucket_args`):
    a function from the bucket columns (one Arrow array each, in ``bucket_columns`` order) to
    their rows' ``int32`` Hive bucket numbers. Its type hints tell PySpark it is a scalar
    Arrow UDF."""
    _, types, n, version = args

    def bucket_ids(*columns: pa.Array) -> pa.Array:
        return pa.array(bucket_numbers(list(columns), types, n, version), pa.int32())

    return bucket_ids


def bucket_ids_arrow(table: TableDesc, tbl: pa.Table | pa.RecordBatch) -> list[int]:
    """Hive bucket number of each row of an Arrow table or batch holding the bucket columns
    (the writers' ``_acid_bucket``; ``bucketing_version`` 1 or 2)."""
    names, types, n, version = bucket_args(table)
    return bucket_numbers([tbl.column(k) for k in names], types, n, version)


def _task_writer_id() -> int:
    """The Spark partition id of the running task, 0 outside Spark."""
    # deferred: the task body also runs in this process on Arrow tables (write_local)
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx else 0


class _FileGroup:
    """The event file of one (partition, bucket) group of a write task, open while the
    group's rows arrive: its writer (columnar, or pyorc for what pyarrow cannot write), the
    next rowId, and the key columns of the rows written (hashed at close when the file holds
    at most ``keys.MAX_KEYS_PER_SCOPE`` rows)."""

    def __init__(
        self, spec: WriteSpec, tfs: TableFS, partition: str, bucket: int, schema: pa.Schema
    ):
        self.spec, self.partition, self.bucket, self.schema = spec, partition, bucket, schema
        path = join(spec.directory(partition), format_bucket_file(bucket))
        # an explicit stripe_rows is honoured exactly, which only the pyorc writer does
        exact_stripes = spec.stripe_rows is not None
        stripe_rows = spec.stripe_rows or acid_files.DEFAULT_STRIPE_ROWS
        self.columnar = (
            acid_files.columnar_writable(spec.columns, spec.compression) and not exact_stripes
        )
        bloom = spec.bloom_filter_columns()
        self.writer: columnar.ColumnarEventWriter | acid_files.EventFileWriter = (
            columnar.ColumnarEventWriter(
                tfs,
                path,
                spec.columns,
                compression=spec.compression,
                stripe_rows=stripe_rows,
                bloom_filter_columns=bloom,
            )
            if self.columnar
            else acid_files.EventFileWriter(
                tfs,
                path,
                spec.columns,
                compression=spec.compression,
                stripe_rows=stripe_rows,
                bloom_filter_columns=bloom,
            )
        )
        self.bprop = encode_bucket_property(bucket, spec.statement_id)
        self.row_id = 0
        self.key_parts: list[tuple[int, list[Any]]] | None = []

    def write(self, rows: pa.RecordBatch, key_parts: list[Any] | None) -> None:
        """Write one run of the group's input rows (the task's input columns after the
        partition and bucket columns); ``key_parts``: their primary key columns (arrays, or
        the partition's values), None when the table has no key."""
        n = rows.num_rows
        if self.spec.kind == "delete":
            owid, bprop, rid = rows.columns
            events = columnar.delete_events(self.schema, owid, bprop, rid, self.spec.write_id)
        else:
            events = columnar.insert_events(
                self.schema,
                rows.columns,
                self.spec.write_id,
                self.bprop,
                self.row_id,
                cast=self.columnar,
            )
            self.row_id += n
        if isinstance(self.writer, columnar.ColumnarEventWriter):
            self.writer.write(events)
        else:
            self.writer.write_batch(events)
        if key_parts is None or self.key_parts is None:
            self.key_parts = None
        elif self.row_id > acid_keys.MAX_KEYS_PER_SCOPE:
            self.key_parts = None  # recorded as written whole (keys.write_scopes)
        else:
            self.key_parts.append((n, key_parts))

    def close(self) -> FileRow | None:
        """Finish the file; its result row (None when it got no events)."""
        done = self.writer.close()
        if done is None:
            return None
        packed = None
        if self.key_parts is not None and self.spec.kind != "delete":
            hashes = [acid_keys.key_hashes_of_columns(parts, n) for n, parts in self.key_parts]
            packed = acid_keys.pack_hashes(
                np.concatenate(hashes) if hashes else np.zeros(0, acid_keys.HASH_DTYPE)
            )
        return {
            "partition": self.partition,
            "bucket": self.bucket,
            "path": done.path,
            "rows": done.rows,
            "bytes": done.bytes,
            "stripes": done.stripes,
            "key_hashes": packed,
        }


def _runs(keys: list[pa.Array], n: int) -> list[tuple[int, int]]:
    """``(start, end)`` of the runs of consecutive rows equal in every array of ``keys``
    (NULL equal to NULL); one run when ``keys`` is empty."""
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for a in keys:
        x, y = a.slice(1), a.slice(0, n - 1)
        same = pc.or_kleene(pc.equal(x, y), pc.and_(x.is_null(), y.is_null()))
        change[1:] |= ~same.fill_null(False).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(change).tolist()
    return list(zip(starts, starts[1:] + [n]))


def write_task(batches: Iterable[pa.RecordBatch], spec: WriteSpec) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: write the (sorted) rows of one Spark partition into event files.

    Input columns: partition columns, ``_acid_bucket`` (bucketed/delete), then either the table
    columns (insert/base) or ``owid, bprop, rowid`` (delete). Each run of rows of one
    (partition, bucket) goes to that group's file as Arrow columns
    (:class:`acidflow.format.orc.columnar.ColumnarEventWriter`; pyorc for varchar, char, nested
    columns or snappy): insert events ``(0, W, bucket property, rowId 0.., W, row)``, delete
    events ``(2, owid, bprop, rowid, W, NULL)`` (input sorted by the deleted ROW__ID). Keyed
    insert/base files carry the hashes of their keys when they hold at most
    ``keys.MAX_KEYS_PER_SCOPE`` rows. Yields one result row per file (``_RESULT_SCHEMA``).

    Raises:
        ValueError: an unbucketed insert from a Spark partition id above 4095.
        acidflow.format.orc.files.AcidFileError: delete events out of ROW__ID order (the file being
            written is removed); rows of a (partition, bucket) group after the group's file
            was closed.
    """
    tfs = tfs_for(spec)
    writer_id = _task_writer_id()
    if not spec.bucketed and spec.kind != "delete":
        check_bucket_id(
            writer_id, hint=f"Spark partition {writer_id} is the writer id; repartition the input"
        )
    npc = len(spec.partition_columns)
    has_bucket = spec.bucketed or spec.kind == "delete"
    first_payload = npc + (1 if has_bucket else 0)
    key_pos = _key_positions(spec)
    schema = acid_files.event_arrow_schema(spec.columns)
    results: list[FileRow] = []
    group: _FileGroup | None = None
    claimed: set[str] = set()
    closed: set[tuple[str, int]] = set()
    try:
        for b in batches:
            n = b.num_rows
            if n == 0:
                continue
            for start, end in _runs(b.columns[:first_payload], n):
                run = b.slice(start, end - start)
                pvals = [run.column(j)[0].as_py() for j in range(npc)]
                ppath = (
                    parts.make_partition_path(list(zip(spec.partition_columns, pvals)))
                    if npc
                    else ""
                )
                bucket = run.column(npc)[0].as_py() if has_bucket else writer_id
                if group is None or (group.partition, group.bucket) != (ppath, bucket):
                    if (ppath, bucket) in closed:
                        raise acid_files.AcidFileError(
                            f"{spec.directory(ppath)}: rows of bucket {bucket} arrived after "
                            "the bucket's file was closed (the task's input is not grouped by "
                            "partition and bucket)"
                        )
                    if group is not None:
                        closed.add((group.partition, group.bucket))
                        done = group.close()
                        group = None
                        if done is not None:
                            results.append(done)
                    if ppath not in claimed:
                        tfs.claim_dir(
                            spec.directory(ppath),
                            spec.claim,
                            what=f"write id {spec.write_id} statement {spec.statement_id}",
                        )
                        claimed.add(ppath)
                    group = _FileGroup(spec, tfs, ppath, bucket, schema)
                payload = pa.RecordBatch.from_arrays(
                    run.columns[first_payload:], names=run.schema.names[first_payload:]
                )
                key_parts = (
                    [pvals[j] if part else payload.column(j) for part, j in key_pos]
                    if key_pos
                    else None
                )
                group.write(payload, key_parts)
        if group is not None:
            done = group.close()
            group = None
            if done is not None:
                results.append(done)
    except BaseException:
        if group is not None:
            group.writer.abort()
        raise
    if results:
        yield pa.RecordBatch.from_pylist(results, schema=_RESULT_SCHEMA)


def _key_positions(spec: WriteSpec) -> list[tuple[bool, int]]:
    """Where each primary key column sits in a write task's input: ``(True, i)`` = partition
    column i, ``(False, j)`` = data column j of the ``row`` struct (names matched
    case-insensitively). Empty for deletes and unkeyed tables."""
    if spec.kind == "delete" or not spec.key_columns:
        return []
    pcols = [p.lower() for p in spec.partition_columns]
    dcols = [c.lower() for c, _ in spec.columns]
    out = []
    for k in spec.key_columns:
        kl = k.lower()
        out.append((True, pcols.index(kl)) if kl in pcols else (False, dcols.index(kl)))
    return out


def tfs_for(spec: WriteSpec) -> TableFS:
    """The filesystem of the spec's table."""
    return TableFS(spec.tfs_url)


# ----------------------------------------------------------------------------- driver side


def with_buckets(df: "DataFrame", table: TableDesc) -> "DataFrame":
    """Append ``_acid_bucket`` (Hive bucket number) computed from the table's bucket columns.

    A scalar Arrow UDF (``pyspark.sql.functions.arrow_udf``) over the bucket columns only:
    the other columns never leave the JVM for this step (a ``mapInArrow`` over whole rows
    cost a second Arrow round trip of every column on a bucketed load)."""
    # deferred: pyspark stays out of the Arrow-only write path (write_local)
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    args = bucket_args(table)
    # pyspark 4.3's stubs type only the Iterator forms of arrow_udf, not the scalar one
    udf = F.arrow_udf(bucket_ids_udf_body(args), T.IntegerType())  # type: ignore[call-overload]
    return df.withColumn(BUCKET_COL, udf(*[F.col(c) for c in args[0]]))


def run_writer(df: "DataFrame", spec: WriteSpec) -> list[FileRow]:
    """Run the writer tasks and collect their file results (driver)."""
    # deferred: pyspark stays out of the Arrow-only write path (write_local)
    from pyspark.sql import types as T

    out_schema = T.StructType(
        [
            T.StructField("partition", T.StringType()),
            T.StructField("bucket", T.IntegerType()),
            T.StructField("path", T.StringType()),
            T.StructField("rows", T.LongType()),
            T.StructField("bytes", T.LongType()),
            T.StructField("stripes", T.IntegerType()),
            T.StructField("key_hashes", T.BinaryType()),
        ]
    )
    rows = df.mapInArrow(lambda it: write_task(it, spec), out_schema).collect()
    return [r.asDict() for r in rows]


def finish_dirs(
    spec: WriteSpec, file_rows: list[FileRow], extra_partitions: Sequence[str] = ()
) -> None:
    """Write ``_orc_acid_version`` into every directory the statement created (and into the
    statement's directory of each of ``extra_partitions``, created empty - and exclusively,
    with the statement's claim - when needed).

    Raises:
        acidflow.storage.fs.DirectoryClaimedError: a directory exists and is another writer's.
    """
    tfs = tfs_for(spec)
    done = set()
    for p in [r["partition"] for r in file_rows] + list(extra_partitions):
        if p in done:
            continue
        done.add(p)
        d = spec.directory(p)
        tfs.claim_dir(d, spec.claim, what=f"write id {spec.write_id} statement {spec.statement_id}")
        acid_files.write_acid_version_file(tfs, d)


@functools.lru_cache(maxsize=64)
def spark_partition_keys(n: int) -> tuple[int, ...]:
    """For each Spark partition p in 0..n-1, an int ``x`` that Spark's hash partitioning sends
    to p: ``pmod(hash(x), n) == p``, ``hash`` being Spark's ``Murmur3Hash`` with seed 42 (of an
    ``IntegerType`` value: Murmur3 x86_32 of its four little-endian bytes), which is what
    ``HashPartitioning.partitionIdExpression`` computes for ``df.repartition(n, expr)``.

    Repartitioning by ``keys[bucket]`` puts each Hive bucket in the Spark partition of its own
    number, alone: a bucketed write's task then holds one bucket and needs no sort.

    Args:
        n: the number of partitions, >= 1.
    Returns:
        ``n`` ints, the one for partition p at index p (the smallest such non-negative int).
    """
    keys: dict[int, int] = {}
    x = 0
    while len(keys) < n:
        p = murmur3_32(struct.pack("<i", x), 42) % n
        keys.setdefault(p, x)
        x += 1
    return tuple(keys[p] for p in range(n))


def write_inserts(df: "DataFrame", table: TableDesc, spec: WriteSpec) -> list[FileRow]:
    """Lay out aligned rows by (partition, bucket) and write insert (or base) events.

    An unpartitioned bucketed table's rows are hash-repartitioned so that Spark partition b
    holds exactly bucket b (:func:`spark_partition_keys`, no sort: one file per task); with
    partition columns the rows are repartitioned by (partition, bucket) and sorted within
    partitions, each task writing its groups one after the other."""
    # deferred: pyspark stays out of the Arrow-only write path (write_local)
    from pyspark.sql import functions as F

    pcols = [c.name for c in table.partition_columns]
    data_cols = [c.name for c in table.columns]
    if table.num_buckets > 0:
        df = with_buckets(df, table)
        if pcols:
            df = df.repartition(*pcols, BUCKET_COL).sortWithinPartitions(*pcols, BUCKET_COL)
        else:
            keys = F.array(*[F.lit(k) for k in spark_partition_keys(table.num_buckets)])
            df = df.repartition(table.num_buckets, F.element_at(keys, F.col(BUCKET_COL) + F.lit(1)))
        df = df.select(*pcols, BUCKET_COL, *data_cols)
    else:
        # at most WRITER_IDS writers; coalesce never adds partitions (no RDD: Spark Connect)
        df = df.coalesce(WRITER_IDS)
        if pcols:
            df = df.sortWithinPartitions(*pcols)
        df = df.select(*pcols, *data_cols)
    return run_writer(df, spec)


def write_deletes(table: TableDesc, spec: WriteSpec, matched: "DataFrame") -> list[FileRow]:
    """Write delete events for matched rows (partition columns, ``owid``, ``bprop``,
    ``rowid``) into ``delete_delta_W_W_S/bucket_N``, N decoded from each row's bucket
    property, sorted by the deleted ROW__ID."""
    # deferred: pyspark stays out of the Arrow-only write path (write_local)
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    pnames = [c.name for c in table.partition_columns]
    decode = F.udf(lambda prop: decode_bucket_id(prop), T.IntegerType())
    df = matched.select(*pnames, decode("bprop").alias(BUCKET_COL), "owid", "bprop", "rowid")
    df = df.repartition(*pnames, BUCKET_COL).sortWithinPartitions(
        *pnames, BUCKET_COL, "owid", "bprop", "rowid"
    )
    return run_writer(df, spec)


def write_local(tbl: pa.Table, spec: WriteSpec) -> list[FileRow]:
    """Run the writer task body in this process on a laid-out Arrow table (one writer: for an
    unbucketed table every row goes to ``bucket_00000``)."""
    return [r for b in write_task(iter(tbl.to_batches()), spec) for r in b.to_pylist()]


def layout_inserts_local(tbl: pa.Table, table: TableDesc) -> pa.Table:
    """Arrow version of :func:`write_inserts`' layout: partition columns, ``_acid_bucket``
    (bucketed tables), data columns; sorted by partition and bucket (stable)."""
    pcols = [c.name for c in table.partition_columns]
    data_cols = [c.name for c in table.columns]
    if table.num_buckets > 0:
        tbl = tbl.append_column(BUCKET_COL, pa.array(bucket_ids_arrow(table, tbl), pa.int32()))
        order = pcols + [BUCKET_COL]
        return tbl.sort_by([(c, "ascending") for c in order]).select(
            pcols + [BUCKET_COL] + data_cols
        )
    if pcols:
        tbl = tbl.sort_by([(c, "ascending") for c in pcols])
    return tbl.select(pcols + data_cols)


def layout_deletes_local(tbl: pa.Table, table: TableDesc) -> pa.Table:
    """Arrow version of :func:`write_deletes`' layout, sorted by partition, bucket and the
    deleted ROW__ID."""
    pcols = [c.name for c in table.partition_columns]
    buckets = pa.array([decode_bucket_id(p) for p in tbl.column("bprop").to_pylist()], pa.int32())
    tbl = tbl.select(pcols + ["owid", "bprop", "rowid"]).append_column(BUCKET_COL, buckets)
    order = pcols + [BUCKET_COL, "owid", "bprop", "rowid"]
    return tbl.sort_by([(c, "ascending") for c in order]).select(
        pcols + [BUCKET_COL, "owid", "bprop", "rowid"]
    )


def write_insert_events(
    rows: "DataFrame | pa.Table", table: TableDesc, spec: WriteSpec
) -> list[FileRow]:
    """Insert (or base) events for aligned rows: Spark tasks for a DataFrame, this process
    for an Arrow table."""
    if isinstance(rows, pa.Table):
        return write_local(layout_inserts_local(rows, table), spec) if rows.num_rows else []
    return write_inserts(rows, table, spec)


def write_delete_events(
    matched: "DataFrame | pa.Table", table: TableDesc, spec: WriteSpec
) -> list[FileRow]:
    """Delete events for matched ROW__IDs: Spark tasks for a DataFrame, this process for an
    Arrow table."""
    if isinstance(matched, pa.Table):
        return write_local(layout_deletes_local(matched, table), spec) if matched.num_rows else []
    return write_deletes(table, spec, matched)
