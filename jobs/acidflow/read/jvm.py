"""A :class:`~acidflow.read.snapshot.ReadPlan` executed by acidflow's JVM reader.

``jvm/acid-reader`` is a small Spark DataSource V2 in Java (class :data:`SOURCE`, built by
``make jvm-reader`` into ``.cache/jvm/acidflow-acid-reader.jar``,
:func:`acidflow.read.readerjar.acid_reader_jar`, put on the session's class path by
:func:`acidflow.spark.session_conf`). It takes the plan as data -- the JSON of
:func:`plan_json`: the output schema, the ValidWriteIdList (high watermark and sorted open /
aborted write ids), and per read task (a bucket, or a split of one:
:func:`acidflow.read.splits.split_tasks`) its partition values, data files with stripe ranges and
the positional mapping of table columns onto each file's ``row`` fields
(:func:`acidflow.read.snapshot.source_positions`), delete files and key ranges -- and reads each
task with ORC's Java reader (``OrcFile.createReader`` + ``Reader.rows`` with the file's own event
schema, so ORC's ACID handling never sees a partial one: docs/env-notes "Spark read trap"). The
rules are :func:`acidflow.read.snapshot.read_task`'s (Hive ``VectorizedOrcAcidRowBatchReader``,
Trino ``OrcDeletedRows``): an event is kept when its ``currentTransaction`` is valid, its
operation is not a delete and no valid delete event of the task (in its key ranges) has its
``(originalTransaction, bucket, rowId)``. Rows reach Spark as columnar batches whose vectors
wrap ORC's through a selection index (no copy); Spark prunes the columns read.

Plans it cannot read exactly as ``read_task`` (:func:`jvm_fallback_reason`) and sessions without
the reader (:func:`unavailable_reason`) are read by :func:`acidflow.read.snapshot.read_spark`
(``ACIDFLOW_SPARK_READER=arrow``), with the reason logged once.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import logging
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import DataFrame, SparkSession

from acidflow import sparktypes
from acidflow.format.orc import files as acid_files
from acidflow.format.orc import orcindex, orcpredicate
from acidflow.read import acidv1, predicates, splits
from acidflow.read.engine import column_fallback_reason, conversion_ok, file_infos
from acidflow.read.readerjar import acid_reader_jar
from acidflow.read.rows import partition_arrays
from acidflow.read.selection import spark_condition
from acidflow.read.snapshot import (
    DataFile,
    ReadPlan,
    ReadTask,
    check_acid_version,
    read_spark,
    source_positions,
)
from acidflow.sparkmode import is_connect
from acidflow.storage.fs import TableFS

#: the DataSource V2 class of ``jvm/acid-reader``
SOURCE = "io.acidflow.spark.acid.AcidSnapshotSource"
#: Hive type names (table and partition columns, file columns) the JVM reader reads. Not: char
#: (ORC's Java reader right-trims CHAR values, pyarrow keeps the padding), timestamps, nested
#: types.
JVM_TYPES = frozenset(
    {
        "boolean",
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "float",
        "double",
        "decimal",
        "string",
        "varchar",
        "date",
        "binary",
    }
)
_EPOCH = datetime.date(1970, 1, 1)
_log = logging.getLogger(__name__)
_logged: set[str] = set()


def jvm_conversion_ok(file_type: str, table_type: str) -> bool:
    """Which (file type, table type) pairs the JVM reader converts exactly as ``read_task``
    (:func:`acidflow.format.schemaevolution.read_as`): the engine executor's pairs
    (:func:`acidflow.read.engine.conversion_ok`: the same type, integer and decimal widening,
    varchar -> string) but float -> double, which Hive converts through the float's text
    (``DoubleFromFloatTreeReader``)."""
    if (file_type, table_type) == ("float", "double"):
        return False
    return conversion_ok(file_type, table_type)


def jvm_fallback_reason(
    plan: ReadPlan,
    infos: dict[str, acid_files.FileInfo],
    *,
    row_id: bool = False,
    file_name: bool = False,
    v1: bool = False,
) -> str | None:
    """Why :func:`read_jvm` cannot read a plan exactly as
    :func:`acidflow.read.snapshot.read_task`; None = it can. A pure function of the plan and
    its files' footers.

    Args:
        plan: the plan (its tasks: before splitting).
        infos: footer facts of the plan's data and delete files, by path
            (:func:`acidflow.read.engine.file_infos`).
        row_id, file_name: ``ROW__ID`` / ``INPUT__FILE__NAME`` asked (not produced by the JVM
            reader).
        v1: a task's files are ACID v1 (Hive 0.14-2.x, :func:`acidflow.read.acidv1.task_is_v1`).
    Returns:
        A short reason, or None.
    """
    if row_id:
        return "ROW__ID asked"
    if file_name:
        return "INPUT__FILE__NAME asked"
    for t in plan.tasks:
        for f in t.data_files:
            if f.kind == "original":
                return f"{f.path} is an original (pre-ACID) file"
    if v1:
        return "ACID v1 files (Hive 0.14-2.x)"
    return column_fallback_reason(plan, infos, types=JVM_TYPES, conversion=jvm_conversion_ok)


def _json_value(v: object) -> object:
    """A partition value as the plan JSON carries it (``SnapshotPlan`` in Java)."""
    if isinstance(v, datetime.date):
        return (v - _EPOCH).days
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    return v


def plan_json(plan: ReadPlan, tasks: list[ReadTask], infos: dict[str, acid_files.FileInfo]) -> str:
    """The plan as the JVM reader reads it (format: ``SnapshotPlan`` in ``jvm/acid-reader``).

    Args:
        plan: the plan (columns, partition columns, ValidWriteIdList).
        tasks: its tasks, split (:func:`acidflow.read.splits.split_tasks`).
        infos: footer facts of every data file, by path.
    Returns:
        JSON text.
    """
    names = [n for n, _ in plan.columns]
    schema = sparktypes.spark_schema(plan.columns + plan.partition_columns)
    valid = plan.valid_write_ids
    positions: dict[str, list[int | None]] = {}
    out_tasks = []
    for t in tasks:
        values = [a[0].as_py() for a in partition_arrays(plan.partition_columns, t.partition, 1)]
        files = []
        for f in t.data_files:
            if f.path not in positions:
                positions[f.path] = source_positions(infos[f.path], names, names)
            files.append({"path": f.path, "stripes": f.stripes, "positions": positions[f.path]})
        out_tasks.append(
            {
                "partition_values": [_json_value(v) for v in values],
                "delete_files": list(t.delete_files),
                "key_ranges": t.key_ranges,
                "data_files": files,
            }
        )
    return json.dumps(
        {
            "table_dir": plan.table_dir,
            "schema": json.loads(schema.json()),
            "data_columns": len(plan.columns),
            "high_watermark": valid.high_watermark,
            "exceptions": sorted(set(valid.open_write_ids) | set(valid.aborted_write_ids)),
            "tasks": out_tasks,
        }
    )


def prune_stripes(
    tfs: TableFS,
    plan: ReadPlan,
    tasks: list[ReadTask],
    infos: dict[str, acid_files.FileInfo],
    where: list[predicates.Predicate],
) -> list[ReadTask]:
    """The tasks with each data file cut to the stripes that may hold a row passing ``where``
    (predicates on data columns): ORC statistics and bloom filters
    (:func:`acidflow.format.orc.orcpredicate.file_stripes_matching`, the test ``read_task``
    makes in the workers), decided here on the driver so the JVM reader never opens the
    skipped stripes. A file becomes one :class:`DataFile` per run of kept stripes (a task's
    delete events apply by ROW__ID whatever its files' stripe ranges); a file with no stripe
    left and a task with no file left are dropped. Files whose tail cannot be read keep every
    stripe (pushdown is never needed for correctness; the Spark filter above is exact).

    Returns:
        New tasks (the given ones are not changed).
    """
    names = [n for n, _ in plan.columns]
    paths = sorted({f.path for t in tasks for f in t.data_files})

    def verdict(path: str) -> orcindex.StripeVerdict:
        conds = predicates.conditions(
            where, plan.columns, source_positions(infos[path], names, names)
        )
        with tfs.open(path, "rb") as fh:
            return orcpredicate.file_stripes_matching(fh, acid=True, conditions=conds)

    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = dict(zip(paths, pool.map(verdict, paths)))
    out = []
    for t in tasks:
        files: list[DataFile] = []
        for f in t.data_files:
            keep = verdicts[f.path].keep
            if not keep:  # not indexed: every stripe
                files.append(f)
                continue
            first, end = f.stripes if f.stripes is not None else (0, len(keep))
            run: int | None = None
            for s in range(first, min(end, len(keep)) + 1):
                if s < min(end, len(keep)) and keep[s]:
                    run = s if run is None else run
                elif run is not None:
                    files.append(dataclasses.replace(f, stripes=[run, s]))
                    run = None
        if files:
            out.append(dataclasses.replace(t, data_files=files))
    return out


def unavailable_reason(spark: SparkSession) -> str | None:
    """Why ``spark`` cannot run the JVM reader (None = it can): the session is a Spark Connect
    one (the reader is not known to be on the server), or :data:`SOURCE` is not on the
    session's class path -- the jar is not built (``make jvm-reader``), or the session was
    built without :func:`acidflow.spark.session_conf` / spark-submit's ``--jars`` (the
    Airflow operator passes it). Asked of the session's JVM once (a job shipped as the jobs
    zip cannot see the jar's path, but its spark-submit has the jar)."""
    if is_connect(spark):
        return "a Spark Connect session"
    known = getattr(spark, "_acidflow_jvm_reader", None)
    if known is None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None  # a classic session
        known = bool(jvm.org.apache.spark.util.Utils.classIsLoadable(SOURCE))
        spark._acidflow_jvm_reader = known  # type: ignore[attr-defined]
    if known:
        return None
    hint = "" if acid_reader_jar() is not None else " (its jar is not built: make jvm-reader)"
    return f"{SOURCE} is not on the session's class path{hint}"


def _log_once(reason: str) -> None:
    if reason not in _logged:
        _logged.add(reason)
        _log.info("ACIDFLOW_SPARK_READER=jvm: read by the arrow executor instead (%s)", reason)


def read_jvm(
    spark: SparkSession,
    plan: ReadPlan,
    *,
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
    where: list[predicates.Predicate] | None = None,
    split_bytes: int | None = None,
) -> DataFrame:
    """Run a plan with the JVM reader (module doc); the rows, columns, names, order and types
    of :func:`acidflow.read.snapshot.read_spark` with the same arguments.

    Args:
        spark: SparkSession.
        plan: from :func:`acidflow.read.snapshot.plan_read`.
        row_id, file_name, project, where, split_bytes: as in
            :func:`acidflow.read.snapshot.read_spark`; ``where`` is applied as a Spark filter
            (exactly the rows it keeps).
    Returns:
        A DataFrame; read by ``read_spark`` when :func:`unavailable_reason` or
        :func:`jvm_fallback_reason` gives a reason (logged once per reason).
    Raises:
        acidflow.format.orc.files.AcidFileError: an event file of a base/delta directory
            without ACID version 2 (as ``read_task``).
    """
    tfs = TableFS(plan.table_dir)
    reason = unavailable_reason(spark) if plan.tasks else "no read tasks"
    infos: dict[str, acid_files.FileInfo] = {}
    if reason is None:
        v1_dirs: dict[str, bool | None] = {}
        v1 = any(acidv1.task_is_v1(tfs, t, v1_dirs) for t in plan.tasks)
        paths = {f.path for t in plan.tasks for f in t.data_files if f.kind != "original"}
        paths |= {p for t in plan.tasks for p in t.delete_files}
        infos = file_infos(tfs, sorted(paths)) if not v1 else {}
        reason = jvm_fallback_reason(plan, infos, row_id=row_id, file_name=file_name, v1=v1)
    if reason is not None:
        if reason != "no read tasks":
            _log_once(reason)
        return read_spark(
            spark,
            plan.table_dir,
            plan,
            row_id=row_id,
            file_name=file_name,
            project=project,
            where=where,
            split_bytes=split_bytes,
        )
    versions: dict[str, int] = {}
    for t in plan.tasks:
        for f in t.data_files:
            check_acid_version(tfs, infos[f.path], versions)
    tasks = splits.split_tasks(tfs, plan.tasks, split_bytes)
    data_where = [p for p in where or () if p.column in {n for n, _ in plan.columns}]
    if data_where:
        tasks = prune_stripes(tfs, plan, tasks, infos, data_where)
    df = spark.read.format(SOURCE).option("plan", plan_json(plan, tasks, infos)).load()
    if where:
        df = df.filter(spark_condition(where))
    cols = [n for n, _ in plan.columns if project is None or n in project]
    cols += [n for n, _ in plan.partition_columns]
    return df.select(*[f"`{c}`" for c in cols])
