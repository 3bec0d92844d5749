"""A :class:`~acidflow.read.snapshot.ReadPlan` executed inside Spark's engine (JVM ORC scans).

:func:`acidflow.read.snapshot.read_spark` runs a plan in Python workers (``mapInArrow`` and
pyarrow's ORC reader, one Spark partition per task). :func:`read_engine` runs the same plan as
Spark scans, with the merge-on-read rules of :func:`acidflow.read.snapshot.read_task` written as
Spark column expressions (Hive ``VectorizedOrcAcidRowBatchReader``, Trino ``OrcDeletedRows``):

* insert-side event files are read with ``spark.read.schema(<event struct>).orc(paths)``, one scan
  per (delete scope, file schema); a table column maps to the file's ``row`` field at the same
  position (:func:`acidflow.read.snapshot.source_positions`, ORC's positional evolution of ACID
  files) and is read as the table's type by ORC's own conversion (Hive's
  ``ConvertTreeReaderFactory``, the rule :func:`acidflow.format.schemaevolution.read_as` follows),
  but float -> double, which Spark's ORC reader widens as a plain cast: it goes through the
  float's text in Spark (``cast(cast(f as string) as double)``, Hive's
  ``DoubleFromFloatTreeReader``; Java's ``Float.toString`` on JDK < 19 is not always the shortest
  text pyarrow uses, so a rare float may differ in its last double digits);
* events are kept when their ``currentTransaction`` is valid for the plan's ValidWriteIdList and
  their operation is not a delete (:func:`acidflow.read.snapshot.valid_mask`);
* the delete events of the task's delete deltas (valid ``currentTransaction``, operation delete,
  as :func:`acidflow.read.snapshot.load_delete_keys`) remove rows by a left-anti join (broadcast
  up to 10M delete events) on ``(scope, originalTransaction, bucket, rowId)``; a scope is a
  partition (:func:`_scopes`: a ROW__ID names one row of its partition);
* partition columns are literals per scope (the partition path parsed as ``acidflow.read.rows.partition_arrays``
  does: Hive's unescaping, ``__HIVE_DEFAULT_PARTITION__`` -> NULL).

Two traps of Spark's ORC reader on ACID event files are avoided by construction:

1. ORC's Java reader treats a file with the six event fields as ACID and breaks unless the read
   schema keeps all six (docs/env-notes "Spark read trap"): the scan's filter references all six
   (``isnull(c) OR isnotnull(c)`` for the ones the rules do not read, and the cheapest ``row``
   field), so Spark's column pruning keeps them.
2. ORC resolves pushed-down predicates (search arguments) of an ACID file inside its ``row``
   struct (Hive's convention): a pushed ``operation != 2`` would test a data column named
   ``operation``. The event filter is one ``coalesce(..., false)`` expression (not translatable to
   a data source filter, and not null-intolerant, so Spark infers no ``IsNotNull`` from it) and
   the join key is a non-nullable hash (with the exact key struct compared in the join
   condition), so nothing of the rules is pushed; a table with a column named like an event
   field is read by ``read_spark`` instead (a user filter on ``ROW__ID`` would be pushed as a
   filter on that event field).

What falls back to :func:`acidflow.read.snapshot.read_spark` (:func:`fallback_reason`, a pure
function of the plan and its files' footers): original (pre-ACID) files (only those tasks' files:
the rest still runs here, the two parts are unioned), key filters (``keys=``), a table column
named like an event field, columns or partition columns of types outside
:data:`ENGINE_TYPES`, a type change other than integer / decimal widening or float -> double,
and files whose ``row`` names collide case-insensitively.

Chosen by :func:`reader_setting` (environment ``ACIDFLOW_SPARK_READER``: ``engine``, or ``arrow``,
the default until the engine executor is the faster one).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from typing import Callable

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from acidflow import sparktypes
from acidflow.errors import AcidflowError
from acidflow.format import hivetypes
from acidflow.format import partitions as parts
from acidflow.format import types as htypes
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.orc import files as acid_files
from acidflow.read import acidv1
from acidflow.read.snapshot import (
    INPUT_FILE_NAME,
    ROW_ID,
    DataFile,
    ReadPlan,
    check_acid_version,
    read_spark,
    source_positions,
    split_plan,
)
from acidflow.sparkmode import require_classic
from acidflow.storage.fs import TableFS

#: environment variable choosing the Spark executor of a snapshot read
READER_ENV = "ACIDFLOW_SPARK_READER"
#: :data:`READER_ENV` values
ENGINE, ARROW, JVM = "engine", "arrow", "jvm"
#: Hive types (of table and partition columns) the engine executor reads; others fall back
ENGINE_TYPES = frozenset(
    {"boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string", "date"}
)
#: Hive types with parameters the engine executor reads (by type name)
ENGINE_PARAMETRIC = frozenset({"decimal", "varchar", "char"})
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_META = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction"]
_BROADCAST_DELETES = 10_000_000  # delete events (hive.acid.stats) up to which the join broadcasts


class ReaderSettingError(AcidflowError, ValueError):
    """``ACIDFLOW_SPARK_READER`` holds something other than ``jvm``, ``engine`` or ``arrow``."""


def reader_setting() -> str:
    """The Spark executor of snapshot reads: ``ACIDFLOW_SPARK_READER``:

    * ``jvm``: acidflow's Spark DataSource V2 reader in Java (``jvm/acid-reader``, ORC's Java
      reader, :func:`acidflow.read.jvm.read_jvm`); plans it cannot read go to ``arrow``;
    * ``engine``: Spark's ORC scans and a broadcast anti-join, :func:`read_engine`;
    * ``arrow``: ``mapInArrow`` + pyarrow, :func:`acidflow.read.snapshot.read_spark`.

    Default: ``jvm`` (measured the fastest on a 1M-row table after 10 deltas of 1 % churn,
    bench/NOTES.md "Spark-native reads"); a session without the reader on its class path (the
    jar not built: ``make jvm-reader``) reads with ``arrow``
    (:func:`acidflow.read.jvm.unavailable_reason`).

    Returns:
        :data:`JVM`, :data:`ENGINE` or :data:`ARROW`.
    Raises:
        ReaderSettingError: any other value.
    """
    value = os.environ.get(READER_ENV, JVM).strip().lower() or JVM
    if value not in (JVM, ENGINE, ARROW):
        raise ReaderSettingError(
            f"{READER_ENV}={value!r}: expected {JVM!r}, {ENGINE!r} or {ARROW!r}"
        )
    return value


def _engine_type(hive_type: str, names: frozenset[str] = ENGINE_TYPES | ENGINE_PARAMETRIC) -> bool:
    return hivetypes.parse_hive_type(hive_type).name in names


def conversion_ok(file_type: str, table_type: str) -> bool:
    """The engine reads a file column as the table's type with what ``read_as`` gives: the
    same Arrow type (no conversion), integer widening, decimal widening, float -> double,
    char/varchar -> string."""
    if htypes.arrow_type(file_type) == htypes.arrow_type(table_type):
        return True  # no conversion in read_task (varchar/char read as strings)
    f, t = hivetypes.parse_hive_type(file_type), hivetypes.parse_hive_type(table_type)
    if f.name in _INTEGRAL and t.name in _INTEGRAL:
        return _INTEGRAL.index(f.name) <= _INTEGRAL.index(t.name)
    if isinstance(f, hivetypes.DecimalType) and isinstance(t, hivetypes.DecimalType):
        return t.scale >= f.scale and t.precision - t.scale >= f.precision - f.scale
    if (f.name, t.name) == ("float", "double"):
        return True
    return f.name in ("string", "varchar", "char") and t.name == "string"


def fallback_reason(
    plan: ReadPlan,
    infos: dict[str, acid_files.FileInfo],
    *,
    keys: pa.Table | None = None,
) -> str | None:
    """Why a plan's event files cannot be read by :func:`read_engine` with exactly
    :func:`acidflow.read.snapshot.read_spark`'s result; None = they can. Original files are not
    judged here (:func:`read_engine` always sends them to ``read_spark``).

    Args:
        plan: the plan.
        infos: footer facts of the plan's event files (data and delete), by path.
        keys: the key filter of the read (not run in the engine).
    Returns:
        A short reason, or None.
    """
    if keys is not None:
        return "key filter"
    acid_names = {n.lower() for n in acid_files.KEY_FIELDS} | {"operation", "currenttransaction"}
    acid_names |= {"row"}
    for name, _ in plan.columns + plan.partition_columns:
        if name.lower() in acid_names:
            return f"column {name!r} is named like an ACID event field"
    return column_fallback_reason(plan, infos)


def column_fallback_reason(
    plan: ReadPlan,
    infos: dict[str, acid_files.FileInfo],
    *,
    types: frozenset[str] = ENGINE_TYPES | ENGINE_PARAMETRIC,
    conversion: Callable[[str, str], bool] = conversion_ok,
) -> str | None:
    """The column rules of :func:`fallback_reason`, shared with the JVM reader
    (:func:`acidflow.read.jvm.jvm_fallback_reason`): every table and partition column has a
    type named in ``types``, every file is an ACID event file whose ``row`` names are unique
    (case-insensitively) and each file column read maps (by position,
    :func:`acidflow.read.snapshot.source_positions`) from a type in ``types`` that
    ``conversion(file_type, table_type)`` accepts.

    Args:
        plan: the plan; infos: footer facts of its event files, by path.
        types: Hive type names (``decimal``, not ``decimal(10,2)``) the reader reads.
        conversion: which (file type, table type) pairs the reader converts as ``read_task``.
    Returns:
        A short reason, or None.
    """
    for name, hive_type in plan.columns + plan.partition_columns:
        if not _engine_type(hive_type, types):
            return f"column {name!r} has type {hive_type}"
    names = [n for n, _ in plan.columns]
    table_types = [t for _, t in plan.columns]
    for path, info in infos.items():
        if not info.is_acid:
            return f"{path} is not an ACID event file"
        row = info.row_schema
        if not row.names or len({n.lower() for n in row.names}) != len(row.names):
            return f"{path}: row field names empty or not unique"
        for i, src in enumerate(source_positions(info, names, names)):
            if src is None:
                continue
            try:
                file_type = htypes.hive_type_from_arrow(row.field(src).type)
            except (ValueError, KeyError, hivetypes.HiveTypeError):
                return f"{path}: column {row.names[src]!r} of an unmapped type"
            if not _engine_type(file_type, types) or not conversion(file_type, table_types[i]):
                return f"{path}: {row.names[src]} {file_type} read as {table_types[i]}"
    return None


def file_infos(tfs: TableFS, paths: list[str]) -> dict[str, acid_files.FileInfo]:
    """Footer facts of files (:func:`acidflow.format.orc.files.file_info`), by path, read by 8
    threads."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(paths, pool.map(lambda p: acid_files.file_info(tfs, p), paths)))


def valid_column(write_id: Column, valid: ValidWriteIdList) -> Column:
    """:func:`acidflow.read.snapshot.valid_mask` as a Spark column: the write id is at most the
    high watermark and not an open or aborted exception (Hive
    ``ValidReaderWriteIdList.isWriteIdValid``); NULL for a NULL write id."""
    cond = write_id <= F.lit(valid.high_watermark).cast("bigint")
    exceptions = sorted(set(valid.open_write_ids) | set(valid.aborted_write_ids))
    if exceptions:
        cond = cond & ~write_id.isin([F.lit(e).cast("bigint") for e in exceptions])
    return cond


def _kept(c: Column) -> Column:
    """Always true (never NULL) and referencing ``c``: keeps ``c`` in the scan's read schema."""
    return F.isnull(c) | F.isnotnull(c)


def _cheapest_field(row: pa.Schema) -> str:
    """The ``row`` field every scan reads (fixed width first), so that ``row`` stays in the
    read schema when a query selects no data column (a count). Spark's schema pruning keeps
    this reference next to the selected fields: a read of ``row.name`` reads ``row.id`` too."""
    for f in row:
        if pa.types.is_integer(f.type) or pa.types.is_boolean(f.type):
            return f.name
    return row.names[0]


def _event_schema(info: acid_files.FileInfo, row_types: dict[int, T.DataType]) -> T.StructType:
    """The Spark read schema of an event file: the five metadata fields and the ``row`` struct
    with the file's names, each field typed as the table reads it (``row_types`` by position)
    or as the file stores it."""
    row = info.row_schema
    fields = [
        T.StructField(
            f.name,
            row_types.get(i) or sparktypes.spark_type(htypes.hive_type_from_arrow(f.type)),
        )
        for i, f in enumerate(row)
    ]
    return T.StructType(
        [
            T.StructField("operation", T.IntegerType()),
            T.StructField("originalTransaction", T.LongType()),
            T.StructField("bucket", T.IntegerType()),
            T.StructField("rowId", T.LongType()),
            T.StructField("currentTransaction", T.LongType()),
            T.StructField(info.schema.names[5], T.StructType(fields)),
        ]
    )


@dataclass
class _Scope:
    """Insert files and the delete files that apply to them (one partition)."""

    partition: str
    data: list[DataFile]
    deletes: list[str]


def _scopes(plan: ReadPlan) -> list[_Scope]:
    """One scope per partition: its tasks' insert files and the union of their delete files.

    A ROW__ID (originalTransaction, bucket property, rowId) names one row of a partition (Hive
    writes a delete event into the bucket file of the row it deletes, and the bucket property
    carries the bucket id and statement id), so joining a partition's delete events with all
    of its rows on the whole ROW__ID deletes exactly what the per-bucket pairing of the tasks
    (Hive ``VectorizedOrcAcidRowBatchReader``, one bucket's delete deltas per split) deletes:
    one scan per partition and file schema instead of one per bucket."""
    by_partition: dict[str, _Scope] = {}
    for t in plan.tasks:
        scope = by_partition.setdefault(t.partition, _Scope(t.partition, [], []))
        scope.data.extend(t.data_files)
        scope.deletes.extend(p for p in t.delete_files if p not in scope.deletes)
    for scope in by_partition.values():
        scope.deletes.sort()
    return list(by_partition.values())


def _partition_literals(plan: ReadPlan, ppath: str) -> list[Column]:
    """Partition columns of one partition as literals, valued as ``acidflow.read.rows.partition_arrays`` values
    them (the path's string cast to the column's Arrow type)."""
    values = dict(parts.parse_partition_path(ppath)) if ppath else {}
    out = []
    for name, hive_type in plan.partition_columns:
        value = pa.array([values.get(name)], pa.string()).cast(htypes.arrow_type(hive_type))
        dtype = sparktypes.spark_type(hive_type)
        out.append(F.lit(value[0].as_py()).cast(dtype).alias(name))
    return out


def _spark_paths(spark: SparkSession, paths: list[str]) -> dict[str, str]:
    """``input_file_name()``'s string for each path (the qualified Hadoop path's URI).

    Raises:
        acidflow.sparkmode.ConnectUnsupportedError: ``spark`` is a Spark Connect session (the
            qualified paths come from the driver's Hadoop classes)."""
    require_classic(
        spark,
        f"{INPUT_FILE_NAME} with the engine reader ({READER_ENV}={ENGINE})",
        f"unset {READER_ENV} (the {ARROW} reader gives {INPUT_FILE_NAME} over Spark Connect)",
    )
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a classic (JVM) session: read_engine runs Spark's own scans
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    out = {}
    for p in paths:
        hp = jvm.org.apache.hadoop.fs.Path(p)
        out[hp.getFileSystem(conf).makeQualified(hp).toUri().toString()] = p
    return out


def _group_by_schema(paths: list[str], infos: dict[str, acid_files.FileInfo]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for p in paths:
        groups.setdefault(str(infos[p].schema.remove_metadata()), []).append(p)
    return list(groups.values())


def read_engine(
    spark: SparkSession,
    plan: ReadPlan,
    *,
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
    keys: pa.Table | None = None,
    tfs_url: str | None = None,
) -> DataFrame:
    """Run a plan as Spark ORC scans (module doc); the same rows, columns, names, order and
    types as :func:`acidflow.read.snapshot.read_spark` (``ROW__ID``, ``INPUT__FILE__NAME`` when
    asked; ``project`` prunes the ``row`` struct's fields read).

    Args:
        spark: SparkSession.
        plan: from :func:`acidflow.read.snapshot.plan_read`.
        row_id, file_name, project, keys: as in :func:`acidflow.read.snapshot.read_spark`.
        tfs_url: the table's file system for footers and ``read_spark`` (default the plan's
            table directory).
    Returns:
        A DataFrame (original files' tasks and plans :func:`fallback_reason` refuses are read
        by ``read_spark``, unioned).
    Raises:
        acidflow.format.orc.files.AcidFileError: an unreadable file, or an event file of a
            base/delta directory without ACID version 2 (as ``read_task``).
    """
    url = tfs_url or plan.table_dir
    originals, events = split_plan(plan, lambda f: f.kind == "original")
    arrow_part = (
        read_spark(spark, url, originals, row_id=row_id, file_name=file_name, project=project)
        if originals.tasks
        else None
    )
    if not events.tasks:
        if arrow_part is not None:
            return arrow_part
        return read_spark(spark, url, plan, row_id=row_id, file_name=file_name, project=project)
    tfs = TableFS(url)
    v1_dirs: dict[str, bool | None] = {}
    if any(acidv1.task_is_v1(tfs, t, v1_dirs) for t in events.tasks):  # Hive 2.3's merge
        return read_spark(
            spark, url, plan, row_id=row_id, file_name=file_name, project=project, keys=keys
        )
    data_paths = sorted({f.path for t in events.tasks for f in t.data_files})
    delete_paths = sorted({p for t in events.tasks for p in t.delete_files})
    infos = file_infos(tfs, sorted(set(data_paths) | set(delete_paths)))
    versions: dict[str, int] = {}
    for p in data_paths:
        check_acid_version(tfs, infos[p], versions)
    if fallback_reason(events, infos, keys=keys) is not None:
        return read_spark(
            spark, url, plan, row_id=row_id, file_name=file_name, project=project, keys=keys
        )
    df = _engine_events(spark, events, infos, row_id=row_id, file_name=file_name, project=project)
    return df if arrow_part is None else df.union(arrow_part)


def _engine_events(
    spark: SparkSession,
    plan: ReadPlan,
    infos: dict[str, acid_files.FileInfo],
    *,
    row_id: bool,
    file_name: bool,
    project: list[str] | None,
) -> DataFrame:
    names = [n for n, _ in plan.columns]
    wanted = [(n, t) for n, t in plan.columns if project is None or n in project]
    valid = plan.valid_write_ids
    file_names = _spark_paths(spark, [p for p in infos]) if file_name else {}
    event_parts: list[DataFrame] = []
    delete_parts: list[DataFrame] = []
    total_deletes = 0
    for s, scope in enumerate(_scopes(plan)):
        pcols = _partition_literals(plan, scope.partition)
        for group in _group_by_schema([f.path for f in scope.data], infos):
            info = infos[group[0]]
            positions = source_positions(info, names, [n for n, _ in wanted])
            file_types = {
                src: htypes.hive_type_from_arrow(info.row_schema.field(src).type)
                for src in positions
                if src is not None
            }
            # ORC converts to the table's type (Hive's ConvertTreeReaderFactory), but for
            # float -> double, which Hive converts through the float's decimal text
            # (DoubleFromFloatTreeReader, read_as) and Spark's ORC reader does not
            through_text = {
                src
                for src, (_, t) in zip(positions, wanted)
                if src is not None and (file_types[src], t) == ("float", "double")
            }
            row_types = {
                src: sparktypes.spark_type(t)
                for src, (_, t) in zip(positions, wanted)
                if src is not None and src not in through_text
            }
            raw = spark.read.schema(_event_schema(info, row_types)).orc(group)
            row = F.col(info.schema.names[5])
            cond = (
                valid_column(F.col("currentTransaction"), valid)
                & (F.col("operation") != F.lit(acid_files.OPERATION_DELETE))
                & _kept(F.col("originalTransaction"))
                & _kept(F.col("bucket"))
                & _kept(F.col("rowId"))
                & _kept(row.getField(_cheapest_field(info.row_schema)))
            )
            cols = [F.lit(s).alias("__scope")] + [F.col(m) for m in _META[1:4]]
            for src, (n, t) in zip(positions, wanted):
                field = info.row_schema.names[src] if src is not None else None
                if field is None:
                    cols.append(F.lit(None).cast(sparktypes.spark_type(t)).alias(n))
                elif src in through_text:
                    cols.append(row.getField(field).cast("string").cast("double").alias(n))
                else:
                    cols.append(row.getField(field).alias(n))
            cols += pcols
            if file_name:
                cols.append(
                    F.element_at(
                        F.create_map(*[F.lit(x) for kv in file_names.items() for x in kv]),
                        F.input_file_name(),
                    ).alias(INPUT_FILE_NAME)
                )
            event_parts.append(raw.filter(F.coalesce(cond, F.lit(False))).select(*cols))
        for group in _group_by_schema(scope.deletes, infos):
            counts = [_delete_count(infos[p]) for p in group]
            group = [p for p, c in zip(group, counts) if c != 0]
            if not group:
                continue
            total_deletes += sum(c if c is not None else _BROADCAST_DELETES for c in counts)
            info = infos[group[0]]
            raw = spark.read.schema(_event_schema(info, {})).orc(group)
            row = F.col(info.schema.names[5])
            cond = (
                valid_column(F.col("currentTransaction"), valid)
                & (F.col("operation") == F.lit(acid_files.OPERATION_DELETE))
                & F.isnotnull(F.col("originalTransaction"))
                & F.isnotnull(F.col("bucket"))
                & F.isnotnull(F.col("rowId"))
                & _kept(row.getField(_cheapest_field(info.row_schema)))
            )
            delete_parts.append(
                raw.filter(F.coalesce(cond, F.lit(False))).select(*_join_keys(F.lit(s), "__d"))
            )
    events = reduce(DataFrame.union, event_parts)
    if delete_parts:
        deletes = reduce(DataFrame.union, delete_parts)
        if total_deletes <= _BROADCAST_DELETES:
            deletes = F.broadcast(deletes)
        events = events.select("*", *_join_keys(F.col("__scope"), "__e"))
        match = (F.col("__e_h") == F.col("__d_h")) & F.coalesce(
            F.col("__e_k") == F.col("__d_k"), F.lit(False)
        )
        events = events.join(deletes, match, "left_anti")
    out = [F.col(f"`{n}`") for n, _ in wanted] + [
        F.col(f"`{n}`") for n, _ in plan.partition_columns
    ]
    if row_id:
        out.append(
            F.struct(
                F.col("originalTransaction").alias("writeid"),
                F.col("bucket").alias("bucketid"),
                F.col("rowId").alias("rowid"),
            ).alias(ROW_ID)
        )
    if file_name:
        out.append(F.col(INPUT_FILE_NAME))
    return events.select(*out)


def _join_keys(scope: Column, prefix: str) -> list[Column]:
    """The delete join's keys of an event: ``<prefix>_h``, a 64-bit hash of (scope,
    originalTransaction, bucket, rowId) -- one long, so Spark builds its fast long-keyed hash
    relation -- and ``<prefix>_k``, the exact struct, compared in the join condition (inside a
    ``coalesce``, so it stays a condition and not a second, generic join key)."""
    parts_ = [scope.alias("s")] + [F.col(m) for m in _META[1:4]]
    return [F.xxhash64(*parts_).alias(f"{prefix}_h"), F.struct(*parts_).alias(f"{prefix}_k")]


def _delete_count(info: acid_files.FileInfo) -> int | None:
    """Delete events a delete file holds by its ``hive.acid.stats`` (None = not recorded);
    a file with 0 is skipped, as Hive's reader and ``load_delete_keys`` skip it."""
    stats = info.metadata.get(acid_files.ACID_STATS_KEY)
    return None if stats is None else acid_files.parse_acid_stats(stats)[2]
