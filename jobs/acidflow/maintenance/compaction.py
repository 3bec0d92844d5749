"""Minor and major compaction of one partition: plan, rewrite, verify, publish
(docs/hive-acid-format.md §9).

What a compaction writes (Hive 3.1 ``CompactorMR``, names from ``AcidUtils``):

* **minor** -- every current delta of the partition (insert and delete deltas) becomes
  ``delta_<min>_<max>`` (insert events) and ``delete_delta_<min>_<max>`` (delete events), no
  statement suffix. Events are copied unchanged (ROW__ID, ``currentTransaction``); delete events
  are kept, they still apply to the base. ``_orc_acid_version`` in each directory.
* **major** -- base (or original files) + current deltas become ``base_<W>`` holding only the
  live rows as insert events, ROW__ID preserved, ``currentTransaction = originalTransaction``;
  original files get their synthetic ROW__IDs written for good. ``_orc_acid_version`` and
  ``_metadata_acid`` (``dataFormat: compacted``) are written, and after verification the
  hidden sidecar key index ``_acidflow_key_index.parquet`` (``acidflow.read.keyindex``).

Both read with the compactor's ``ValidCompactorWriteIdList`` (high watermark below the lowest
open write id, aborted ids as exceptions), so an open write id is never covered and data of
aborted write ids is dropped. W / min / max are the write-id range of the directories read (Hive
``CompactorMR`` takes them from the parsed deltas).

Publishing. Two schemes, chosen by the storage (``TableFS.renames_atomically``):

* **local disk, HDFS (rename)** -- directory names carry no ``_v<txn>`` visibility suffix: Hive
  3.1 and Hive 2.3 cannot parse it (docs/hive-acid-format.md §12). Visibility comes from the
  publish order instead: output is written into a hidden directory ``.compact_tmp_<queue id>``
  inside the partition (``get_acid_state`` skips names starting with ``.``), verified there,
  and only then renamed into place. A minor compaction that produced both an insert and a
  delete delta is published with two renames, as Hive 3.1's
  ``CompactorOutputCommitter.commitJob`` does; a ``_verified`` marker in the temp directory
  lets a rerun finish an interrupted publish instead of redoing it.
* **object stores (S3: no rename)** -- Hive 4's scheme (HIVE-20823, compaction in a
  transaction): the output is written directly under its final name carrying the
  compaction's transaction id T, ``base_<W>_v<T>`` / ``delta_<min>_<max>_v<T>`` /
  ``delete_delta_<min>_<max>_v<T>``, and verified there. ``get_acid_state`` uses a ``_v<T>``
  directory only when T is committed (``Catalog.visibility_lookup``: the catalog of an
  object-store warehouse answers; every caller passes it), so the directories stay invisible to
  readers, the initiator and the cleaner while they are written and verified, and become
  visible all at once through the catalog's commit of T (the worker's
  ``mark_compaction_ready_for_cleaning``). A worker that dies or fails leaves them under an
  aborted T, which the cleaner removes. This scheme is not used on local disk: Hive 2.3 / 3.1
  readers cannot parse ``_v`` names, and a Trino or Hive reader without acidflow's catalog
  would take a ``_v`` directory for committed while it is written; there the rename is as
  safe and keeps the names every reader parses.

Verification: the visible rows at the compactor's snapshot, in the old layout and in the new
one; the count and two order-independent 64-bit sums of per-row hashes of ``(ROW__ID, row)``
(:func:`checksum_batches`) must be equal, else :class:`VerificationError` and nothing is
published. A major compaction's workers checksum the snapshot rows they read (the old side) and
the events they hand to the ORC writer (the new side), and every written file is checked
against its footer (``verify.written_checksum``); ``acidflow.compactor.verify=readback`` reads
the new base back instead. A minor compaction reads the old layout's snapshot separately,
since its workers copy raw events, and reads the new layout back.

Output files are written from Arrow tables (``columnar.write_event_table``: pyarrow's ORC writer
plus Hive's footer metadata, pyorc for varchar/char/nested columns), with stripes sized by
``acidflow.compactor.target.stripe.bytes``.

Executor work is pure Arrow/pyorc (:func:`run_task`, :func:`checksum_task`), run in Spark with
``mapInArrow`` (one Spark task per bucket) or in-process when no SparkSession is given. Spark's
own ORC reader never touches event files (env-notes "Spark read trap").
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Iterator, Sequence

import pyarrow as pa

from acidflow.errors import AcidflowError
from acidflow.format import packing
from acidflow.format.filecheck import check_files, raise_for
from acidflow.format.filerecords import FileRecord
from acidflow.format.filerecords import file_records as file_records_of
from acidflow.format.layout import (
    AcidState,
    DirEntry,
    ValidWriteIdList,
    bucket_files,
    format_base,
    format_delta,
    get_acid_state,
)
from acidflow.format.orc import files as acid_files
from acidflow.format.table import TableDesc
from acidflow.maintenance.rewrite import (
    DEFAULT_TARGET_STRIPE_BYTES,
    MAJOR,
    MINOR,
    CompactTask,
    run_task,
)
from acidflow.maintenance.verify import (
    VERIFY_MODES,
    VERIFY_WRITER,
    Checksum,
    checksum_task,
    written_checksum,
)
from acidflow.read import acidv1, keyindex, snapshot
from acidflow.sparkmode import task_frame
from acidflow.storage.fs import DirectoryClaimedError, TableFS, join
from acidflow.storage.state import (
    compacted_base_check,
    mark_full_history,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TMP_PREFIX = ".compact_tmp_"
VERIFIED_MARKER = "_verified"


class CompactionError(AcidflowError, RuntimeError):
    """A compaction cannot run or its output is unusable (message says why)."""


class InputRecordError(CompactionError):
    """An input file holds another number of events than the catalog recorded, or the output
    of a compaction holds fewer rows than its inputs' records imply; nothing was published."""


class VerificationError(CompactionError):
    """Rows before and after the rewrite differ, or a written file is not what its writer
    wrote; nothing was published.

    Attributes:
        before, after: :class:`Checksum` of the old and new layout.
        problems: the written files that differ from their writers' report (file: reason).
    """

    def __init__(self, before: "Checksum", after: "Checksum", problems: Sequence[str] = ()):
        self.before, self.after, self.problems = before, after, list(problems)
        why = "; ".join(self.problems) if self.problems else f"before {before}, after {after}"
        super().__init__(f"verification failed: {why}")


# ============================================================================ planning (pure)


@dataclass
class CompactionPlan:
    """What one compaction of one partition reads and writes.

    Attributes:
        kind: ``"major"`` or ``"minor"``.
        partition: relative partition path (``""`` when unpartitioned).
        valid: the compactor's ValidWriteIdList (Hive string form).
        base: base directory read (major), else None.
        deltas: current delta directories read, in §6 order.
        original_files: original files read (major without base).
        min_write_id, max_write_id: range of the output (W = ``max_write_id`` for a base).
        outputs: final directory names to publish, e.g. ``["base_0000007"]`` or
            ``["delete_delta_0000002_0000007", "delta_0000002_0000007"]``.
        skip_reason: why there is nothing to do (then ``outputs`` is empty).
        state: the AcidState at the compactor's snapshot.
    """

    kind: str
    partition: str
    valid: str
    base: str | None = None
    deltas: list[str] = field(default_factory=list)
    original_files: list[str] = field(default_factory=list)
    min_write_id: int = 0
    max_write_id: int = 0
    outputs: list[str] = field(default_factory=list)
    skip_reason: str | None = None
    state: AcidState | None = None

    @property
    def nothing_to_do(self) -> bool:
        """True when there is no output to write."""
        return self.skip_reason is not None


def plan_compaction(
    entries: Iterable[DirEntry],
    valid: ValidWriteIdList,
    kind: str,
    partition: str = "",
    *,
    is_compacted_base: Callable[[str], bool] = lambda name: False,
    visibility_txn_id: int | None = None,
    txn_state: Callable[[int], str] | None = None,
    only_deltas: Collection[str] | None = None,
    upgrade_v1: bool = False,
) -> CompactionPlan:
    """Decide inputs and output names of a compaction from a partition listing (pure).

    Args:
        entries: recursive listing of the partition directory.
        valid: the compactor's list (use ``ValidWriteIdList.for_compactor()``; a reader list
            is converted here).
        kind: ``"major"`` or ``"minor"``.
        is_compacted_base: ``_metadata_acid`` lookup (see ``get_acid_state``).
        visibility_txn_id: the compaction's transaction id T, named in the outputs as
            ``_v<T>`` (object stores, module doc); None = no suffix.
        txn_state: ``_v<T>`` directory lookup (see ``get_acid_state``).
        only_deltas: minor only: compact just these current deltas (one slice of Hive's
            ``hive.compactor.max.num.delta`` rule, :mod:`acidflow.maintenance.slices`).
        upgrade_v1: major only: the partition holds ACID v1 (Hive 0.14-2.x) directories
            (``acidflow.read.acidv1.partition_is_v1``): a lone base is rewritten too, and the
            new base is ``base_<high watermark>`` (a write id above the v1 base's, so that its
            name never clashes with it: ``acidflow table upgrade`` commits one first).
    Returns:
        A :class:`CompactionPlan`; ``skip_reason`` set when there is nothing to do: minor with
        fewer than two distinct delta ranges, major with no delta and no original file.
    Raises:
        ValueError: unknown kind, ``only_deltas`` with a major kind; CompactionError: an output name already exists as a
        directory that the snapshot does not read.
    """
    if kind not in (MAJOR, MINOR):
        raise ValueError(f"compaction kind must be major or minor, got {kind!r}")
    cvalid = valid.for_compactor()
    entries = list(entries)
    state = get_acid_state(entries, cvalid, is_compacted_base, txn_state)
    vis = visibility_txn_id
    plan = CompactionPlan(kind, partition, cvalid.to_string(), state=state)
    deltas = state.deltas
    if only_deltas is not None:
        if kind != MINOR:
            raise ValueError("only_deltas selects the deltas of a minor compaction")
        deltas = [d for d in deltas if d.name in only_deltas]
    existing = {e.path.split("/", 1)[0] for e in entries}
    if kind == MINOR:
        ranges = {(d.min_write_id, d.max_write_id, d.statement_id) for d in deltas}
        if len(ranges) < 2:
            plan.skip_reason = (
                f"minor compaction needs at least 2 delta ranges, found {len(ranges)}"
            )
            return plan
        plan.deltas = [d.name for d in deltas]
        plan.min_write_id = min(d.min_write_id for d in deltas)
        plan.max_write_id = max(d.max_write_id for d in deltas)
        outs = []
        if any(d.is_delete for d in deltas):
            outs.append(
                format_delta(
                    plan.min_write_id, plan.max_write_id, delete=True, visibility_txn_id=vis
                )
            )
        if any(not d.is_delete for d in deltas):
            outs.append(format_delta(plan.min_write_id, plan.max_write_id, visibility_txn_id=vis))
        plan.outputs = outs
    else:
        if not deltas and not state.original_files and not upgrade_v1:
            plan.skip_reason = "major compaction: no deltas and no original files"
            return plan
        plan.base = state.base_dir
        plan.deltas = [d.name for d in deltas]
        plan.original_files = list(state.original_files)
        ids = [d.max_write_id for d in deltas]
        if state.base is not None:
            ids.append(state.base.write_id)
        plan.max_write_id = max(ids) if ids else 0
        if upgrade_v1:
            plan.max_write_id = max(plan.max_write_id, cvalid.high_watermark)
        plan.min_write_id = 0
        plan.outputs = [format_base(plan.max_write_id, vis)]
    clash = [o for o in plan.outputs if o in existing]
    if clash:
        raise CompactionError(
            f"output directory {clash} already exists in partition "
            f"{partition or '<table root>'} and is not the current one"
        )
    return plan


# ============================================================================ executor side


# ============================================================================ driver side


def tmp_dir_name(cq_id: int | str) -> str:
    """Hidden temp directory of a queue entry: ``.compact_tmp_<id>`` (ignored by readers)."""
    return f"{TMP_PREFIX}{cq_id}"


def _data_files_for(
    tfs: TableFS, pdir: str, entries: list[DirEntry], plan: CompactionPlan
) -> tuple[list[snapshot.DataFile], list[tuple[str, int]]]:
    """Insert-side files and (delete file, bucket) pairs the plan reads."""
    data: list[snapshot.DataFile] = []
    deletes: list[tuple[str, int]] = []
    if plan.base is not None:
        for rel, b in bucket_files(entries, plan.base):
            data.append(snapshot.DataFile(join(pdir, rel), "base", b))
    elif plan.kind == MAJOR:
        data.extend(snapshot.original_files(tfs, pdir, plan.original_files))
    if plan.state is None:
        raise CompactionError("a compaction plan without its AcidState (use plan_compaction)")
    by_name = {d.name: d for d in plan.state.deltas}
    for name in plan.deltas:
        d = by_name[name]
        for rel, b in bucket_files(entries, name):
            if d.is_delete:
                deletes.append((join(pdir, rel), b))
            else:
                data.append(snapshot.DataFile(join(pdir, rel), "delta", b))
    return data, deletes


def _group(
    data: list[snapshot.DataFile], deletes: list[tuple[str, int]], bucketed: bool, partition: str
) -> dict[int, snapshot.ReadTask]:
    tasks: dict[int, snapshot.ReadTask] = {}
    for f in data:
        tasks.setdefault(f.bucket_id, snapshot.ReadTask(partition, f.bucket_id)).data_files.append(
            f
        )
    for t in tasks.values():
        t.delete_files = [p for p, b in deletes if not bucketed or b == t.bucket_id]
    return tasks


def check_inputs(
    tfs: TableFS,
    table_name: str,
    pdir: str,
    entries: list[DirEntry],
    plan: CompactionPlan,
    valid: ValidWriteIdList,
    records: Sequence[FileRecord],
    data_paths: list[str],
    deletes: list[tuple[str, int]],
) -> tuple[set[str], int | None]:
    """Check a compaction's inputs against the catalog's records before anything is written
    (:func:`acidflow.format.filecheck.check_files` over the plan's base and deltas), then the
    event count of each recorded input in its ORC footer.

    Returns:
        ``(paths to leave out, expected rows)``: the files acknowledged lost, and the least
        number of rows the output must hold (insert-side events minus delete events of the
        recorded inputs) -- None when an input has no record (unknown).
    Raises:
        acidflow.format.filecheck.MissingDataFileError / DataFileMismatchError: an input is
            missing or has another size than recorded.
        InputRecordError: an input's footer counts other events than its record.
    """
    if plan.state is None:
        raise CompactionError("a compaction plan without its AcidState (use plan_compaction)")
    inputs = ([plan.base] if plan.base else []) + plan.deltas
    check = check_files(plan.partition, entries, plan.state, records, valid, dirs=inputs)
    raise_for(table_name, check.failures)
    skip = {join(pdir, r.path) for r in check.lost}
    by_path = {join(pdir, r.path): r for r in records if r.partition == plan.partition}
    expected: int | None = 0 if not plan.original_files else None
    delete_paths = {p for p, _ in deletes}
    for path in data_paths + sorted(delete_paths):
        if path in skip:
            continue
        rec = by_path.get(path)
        if rec is None or rec.lost:
            expected = None
            continue
        events = acid_files.file_info(tfs, path).rows
        if events != rec.rows:
            raise InputRecordError(
                f"table {table_name}: {path} (write id {rec.write_id}) holds {events} events, "
                f"its record counts {rec.rows}; the compaction would lose or invent rows"
            )
        if expected is not None:
            expected += -rec.rows if path in delete_paths else rec.rows
    return skip, (max(expected, 0) if expected is not None else None)


def stripe_rows_for(tfs: TableFS, files: list[str], target_bytes: int) -> int:
    """Events per stripe so that stripes approach ``target_bytes``, estimated from the input
    files' bytes per row; at least one 1024-row write batch, at most 4M rows."""
    rows = size = 0
    for p in files:
        info = acid_files.file_info(tfs, p)
        rows += info.rows
        size += tfs.size(p)
    if rows == 0 or size == 0:
        return acid_files.DEFAULT_STRIPE_ROWS
    per_row = max(1.0, size / rows)
    return int(min(4 * 1024 * 1024, max(acid_files.WRITE_BATCH_ROWS, target_bytes / per_row)))


@dataclass
class CompactionResult:
    """Outcome of :func:`compact_partition`.

    Attributes:
        plan: the plan; published: output dirs now in place (empty when skipped).
        files: files written (``run_task`` rows, final paths).
        before, after: checksums (None when skipped).
        slices: the minor compactions of slices run first (:mod:`acidflow.maintenance.slices`).
    """

    plan: CompactionPlan
    published: list[str] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    before: Checksum | None = None
    after: Checksum | None = None
    slices: list["CompactionResult"] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-able report."""
        p = self.plan
        return {
            "kind": p.kind,
            "partition": p.partition,
            "valid_write_ids": p.valid,
            "inputs": ([p.base] if p.base else []) + p.deltas + p.original_files,
            "outputs": p.outputs,
            "published": self.published,
            "skip_reason": p.skip_reason,
            "files": len(self.files),
            "bytes": sum(f["bytes"] for f in self.files),
            "rows_written": sum(f["rows"] for f in self.files),
            "before": self.before.to_dict() if self.before else None,
            "after": self.after.to_dict() if self.after else None,
            **({"slices": [s.to_dict() for s in self.slices]} if self.slices else {}),
        }


def _map(
    spark: "SparkSession | None",
    payloads: list[str],
    fn: Callable[[str], list[dict]],
    schema_ddl: str,
) -> list[dict]:
    """Run ``fn(payload) -> list[dict]`` over payloads: in Spark (one task each) or locally."""
    if spark is None or not payloads:
        return [row for p in payloads for row in fn(p)]
    arrow_schema = _ddl_to_arrow(schema_ddl)

    def body(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for text in b.column(0).to_pylist():
                rows = fn(text)
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)

    df = task_frame(spark, payloads, "payload").mapInArrow(body, schema_ddl)
    return [r.asDict() for r in df.collect()]


_DDL_TYPES = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32()}


def _ddl_to_arrow(ddl: str) -> pa.Schema:
    fields = []
    for part in ddl.split(","):
        name, typ = part.strip().split()
        fields.append(pa.field(name, _DDL_TYPES[typ]))
    return pa.schema(fields)


def _write_outputs(spark: "SparkSession | None", tasks: list[CompactTask]) -> list[dict]:
    return _map(
        spark,
        [t.to_json() for t in tasks],
        lambda text: run_task(CompactTask.from_json(text)),
        "kind string, bucket int, path string, rows bigint, bytes bigint, stripes int, "
        "key_index string, s1 string, s2 string",
    )


def _checksum(
    spark: "SparkSession | None",
    tfs_url: str,
    reads: list[snapshot.ReadTask],
    columns: list[tuple[str, str]],
    valid: ValidWriteIdList,
) -> Checksum:
    vtext = valid.to_string()

    def fn(text: str) -> list[dict]:
        c = checksum_task(
            tfs_url, snapshot.ReadTask.from_json(text), columns, ValidWriteIdList.from_string(vtext)
        )
        return [{"rows": c.rows, "s1": str(c.sum1), "s2": str(c.sum2)}]

    total = Checksum()
    for r in _map(spark, [t.to_json() for t in reads], fn, "rows bigint, s1 string, s2 string"):
        total = total + Checksum(r["rows"], int(r["s1"]), int(r["s2"]))
    return total


def finish_publish(tfs: TableFS, pdir: str, tmp: str) -> list[str]:
    """Complete an interrupted publish: if ``tmp`` holds a ``_verified`` marker, rename the
    output dirs still inside it into ``pdir`` (delete deltas first) and remove ``tmp``;
    without the marker the temp dir is unverified and is just removed. Each rename is
    exclusive (:meth:`TableFS.rename_exclusive`): an output name that exists already is never
    replaced.

    Raises:
        CompactionError: an output's name exists in ``pdir`` (names it).

    Returns:
        Names renamed into place now (``[]`` when nothing was pending).
    """
    if not tfs.exists(tmp):
        return []
    if not tfs.exists(join(tmp, VERIFIED_MARKER)):
        tfs.delete(tmp)
        return []
    marker = json.loads(tfs.read_bytes(join(tmp, VERIFIED_MARKER)) or b"{}")
    done = []
    for name in marker.get("outputs", []):
        src = join(tmp, name)
        if tfs.exists(src):
            try:
                tfs.rename_exclusive(src, join(pdir, name))
            except DirectoryClaimedError as exc:
                raise CompactionError(f"cannot publish {src}: {exc}") from exc
            done.append(name)
    tfs.delete(tmp)
    return done


def compact_partition(
    spark: "SparkSession | None",
    table: TableDesc,
    partition: str,
    kind: str,
    valid: ValidWriteIdList,
    *,
    cq_id: int | str,
    target_stripe_bytes: int = DEFAULT_TARGET_STRIPE_BYTES,
    compression: str = "zlib",
    heartbeat: Callable[[], Any] | None = None,
    tamper: Callable[[str], Any] | None = None,
    target_file_bytes: int | None = None,
    record_history: bool = False,
    visibility_txn_id: int | None = None,
    txn_state: Callable[[int], str] | None = None,
    file_records: Sequence[FileRecord] | None = None,
    record_files: Callable[[list[FileRecord]], Any] | None = None,
    only_deltas: Collection[str] | None = None,
    verify: str = VERIFY_WRITER,
) -> CompactionResult:
    """Compact one partition: plan, write into ``.compact_tmp_<cq_id>``, verify, publish by
    rename -- or, on an object store, write under the final ``_v<T>`` names and verify there;
    the catalog's commit of T publishes (module doc).

    ``record_history`` (the table retains history, ``acidflow.storage.retention``): a major
    compaction publishing the partition's first base writes ``_acidflow_history`` first
    (:func:`acidflow.storage.state.mark_full_history`), so snapshots below the base stay
    readable from the deltas the cleaner keeps.

    Args:
        spark: SparkSession, or None to run every task in this process.
        table: ``acidflow.catalog.TableDef``.
        partition: relative partition path, ``""`` for an unpartitioned table.
        kind: ``"major"`` / ``"minor"``.
        valid: the table's current ValidWriteIdList (converted with ``for_compactor()``).
        cq_id: the queue id (names the temp dir; a rerun of the same id first finishes or
            discards what an earlier attempt left there).
        target_stripe_bytes: ``acidflow.compactor.target.stripe.bytes``.
        heartbeat: callable invoked between phases (the worker's heartbeat).
        tamper: test hook called with the temp dir after writing, before verification.
        target_file_bytes: ``acidflow.target.file.bytes``: a major compaction of an unbucketed
            table packs the rows into files of about this size (:mod:`acidflow.format.packing`);
            ``None`` keeps one file per writer id (Hive 3.1's output). Bucketed tables always
            get one file per bucket.
        visibility_txn_id: the compaction's own transaction id T (the worker's queue entry
            ``txn_id``); required on object stores, unused where directories rename.
        txn_state: the catalog's ``_v<T>`` lookup (``Catalog.visibility_lookup``): on an
            object store, which earlier ``_v`` output is committed.
        file_records: the catalog's records of the partition's files
            (``Catalog.data_file_records``): every input is checked against them before
            anything is written (:func:`check_inputs`), and the rows the output holds against
            what they imply; files acknowledged lost are left out. None = no check.
        record_files: called with the output's records (final paths) after verification,
            before publishing (the worker: ``Catalog.record_data_files`` under the
            compaction's transaction).
        only_deltas: minor only: the deltas of one slice (:func:`plan_compaction`).
        verify: ``acidflow.compactor.verify``: ``writer`` (a major compaction's new side from
            the writers' digests and the files' footers) or ``readback`` (the new base read
            again); a minor compaction always reads its output back.
    Returns:
        :class:`CompactionResult` (``plan.skip_reason`` set when nothing was done).
    Raises:
        acidflow.format.filecheck.DataFileError: an input file is missing or has another
            size than recorded (nothing written).
        InputRecordError: an input's event count differs from its record, or the output
            holds fewer rows than the inputs' records imply (nothing published).
        VerificationError: rows differ, or a written file is not what its writer reported
            (output removed, nothing published).
        CompactionError: also an object store without ``visibility_txn_id``.
        ValueError: an unknown ``verify``.
        acidflow.format.orc.files.AcidFileError.
    """
    if verify not in VERIFY_MODES:
        raise ValueError(f"acidflow.compactor.verify must be one of {VERIFY_MODES}: {verify!r}")
    beat = heartbeat or (lambda: None)
    tfs = TableFS(table.location)
    pdir = join(table.location, partition) if partition else table.location
    tmp = join(pdir, tmp_dir_name(cq_id))
    direct = not tfs.renames_atomically  # object store: final _v<T> names, no rename
    if direct and visibility_txn_id is None:
        raise CompactionError(
            f"{pdir}: compaction on {tfs.protocol}:// publishes through its "
            "transaction (_v<T> directories) and needs visibility_txn_id"
        )
    recovered = [] if direct else finish_publish(tfs, pdir, tmp)
    entries = [e for e in tfs.list_recursive(pdir)]
    cvalid = valid.for_compactor()
    plan = plan_compaction(
        entries,
        cvalid,
        kind,
        partition,
        is_compacted_base=compacted_base_check(tfs, pdir),
        visibility_txn_id=visibility_txn_id if direct else None,
        txn_state=txn_state if direct else None,
        only_deltas=only_deltas,
        upgrade_v1=kind == MAJOR
        and acidv1.partition_is_v1(
            tfs, pdir, entries, cvalid, txn_state=txn_state if direct else None
        ),
    )
    result = CompactionResult(plan, published=recovered)
    if plan.nothing_to_do:
        return result
    out_root = pdir if direct else tmp
    columns = [(c.name, c.hive_type) for c in table.columns]
    bucketed = table.num_buckets > 0
    data, deletes = _data_files_for(tfs, pdir, entries, plan)
    expected_rows: int | None = None
    if file_records is not None:
        skip, expected_rows = check_inputs(
            tfs,
            table.name,
            pdir,
            entries,
            plan,
            cvalid,
            file_records,
            [d.path for d in data],
            deletes,
        )
        data = [d for d in data if d.path not in skip]
        deletes = [(p, b) for p, b in deletes if p not in skip]
    reads = _group(data, deletes, bucketed, "")
    # rows per stripe matter only to the pyorc writer (the columnar one sizes by bytes); the
    # estimate reads every input file's footer, so it is skipped when it is not needed
    stripe_rows = (
        acid_files.DEFAULT_STRIPE_ROWS
        if acid_files.columnar_writable(columns, compression)
        else stripe_rows_for(
            tfs, [d.path for d in data] + [p for p, _ in deletes], target_stripe_bytes
        )
    )
    out_dirs: dict[str, str] = {}
    for name in plan.outputs:
        key = (
            "base"
            if name.startswith("base_")
            else ("delete" if name.startswith("delete_") else "insert")
        )
        out_dirs[key] = join(out_root, name)
    bloom = acid_files.key_bloom_filter_columns(columns, table.primary_key)
    writer_verify = kind == MAJOR and verify == VERIFY_WRITER  # workers digest what they write

    def task(b: int, rt: snapshot.ReadTask, minor_deletes: list[str], **more: Any) -> CompactTask:
        return CompactTask(
            kind,
            b,
            asdict(rt),
            minor_deletes,
            out_dirs,
            table.location,
            [list(c) for c in columns],
            cvalid.to_string(),
            stripe_rows,
            compression,
            target_stripe_bytes,
            bloom_columns=bloom,
            digest_written=writer_verify,
            **more,
        )

    tasks: list[CompactTask] = []
    if kind == MAJOR and not bucketed and target_file_bytes:
        sizes = {b: sum(tfs.size(f.path) for f in rt.data_files) for b, rt in reads.items()}
        for group, file_ids in packing.plan_bins(sizes, target_file_bytes):
            more_reads = [asdict(reads[b]) for b in group[1:]]
            tasks.append(
                task(group[0], reads[group[0]], [], more_reads=more_reads, file_ids=file_ids)
            )
    elif kind == MAJOR:
        tasks = [task(b, reads[b], []) for b in sorted(reads)]
    else:
        for b in sorted(set(reads) | {b for _, b in deletes}):
            rt = snapshot.ReadTask("", b, [f for f in data if f.bucket_id == b], [])
            tasks.append(task(b, rt, [p for p, pb in deletes if pb == b]))
    if direct and kind == MAJOR and record_history:
        mark_full_history(tfs, pdir)  # before the (still invisible) base_N_v<T> appears
    tfs.makedirs(out_root)
    written = _write_outputs(spark, tasks)
    files = [f for f in written if f["kind"] != "read"]
    for d in out_dirs.values():
        tfs.makedirs(d)
        acid_files.write_acid_version_file(tfs, d)
    if "base" in out_dirs:
        acid_files.write_compacted_marker(tfs, out_dirs["base"])
    beat()
    if tamper is not None:
        tamper(out_root)

    # verification: the same snapshot in the old and in the new layout; a major compaction's
    # workers checksummed the rows they read (the old layout) and, by default, the events they
    # wrote; a minor one reads the old layout again here (its workers copy raw events)
    if kind == MAJOR:
        before = Checksum()
        for f in written:
            if f["kind"] == "read":
                before = before + Checksum(f["rows"], int(f["s1"]), int(f["s2"]))
    else:
        before = _checksum(spark, table.location, list(reads.values()), columns, cvalid)
    beat()
    after_entries = tfs.list_recursive(out_root)
    new_data: list[snapshot.DataFile] = []
    new_deletes: list[tuple[str, int]] = []
    problems: list[str] = []
    if kind == MAJOR:
        for rel, b in bucket_files(after_entries, plan.outputs[0]):
            new_data.append(snapshot.DataFile(join(out_root, rel), "base", b))
    else:
        new_data = [f for f in data if f.kind != "delta"]
        for name in plan.outputs:
            for rel, b in bucket_files(after_entries, name):
                if name.startswith("delete_"):
                    new_deletes.append((join(out_root, rel), b))
                else:
                    new_data.append(snapshot.DataFile(join(out_root, rel), "delta", b))
    if writer_verify:  # the writers' digests, each file checked against its footer
        after, problems = written_checksum(tfs, files, [d.path for d in new_data])
    else:  # the new layout read back
        new_reads = list(_group(new_data, new_deletes, bucketed, "").values())
        after = _checksum(spark, table.location, new_reads, columns, cvalid)
    result.before, result.after = before, after
    if before != after or problems:
        for d in [tmp] if not direct else list(out_dirs.values()):
            tfs.delete(d)
        raise VerificationError(before, after, problems)
    if expected_rows is not None and after.rows < expected_rows:
        for d in [tmp] if not direct else list(out_dirs.values()):
            tfs.delete(d)
        raise InputRecordError(
            f"table {table.name} partition {partition or '<table root>'}: the compacted output "
            f"holds {after.rows} rows, the inputs' records imply at least {expected_rows} "
            "(inserted minus deleted events); nothing published"
        )
    if "base" in out_dirs and keyindex.wanted(table.properties):  # derived: never fails it
        keyindex.try_write_base_index(tfs, out_dirs["base"], columns, list(table.primary_key))
    beat()
    if record_files is not None:
        record_files(
            file_records_of(
                plan.max_write_id,
                [
                    {**f, "path": f["path"].replace(tmp + "/", pdir.rstrip("/") + "/")}
                    for f in files
                ],
                partition,
            )
        )
    if direct:  # published by the catalog's commit of the compaction's transaction
        result.published = list(plan.outputs)
        result.files = files
        return result

    # publish: marker first (a rerun finishes the renames), then the renames
    if kind == MAJOR and record_history:  # the first base records full history
        mark_full_history(tfs, pdir)
    tfs.write_bytes(join(tmp, VERIFIED_MARKER), json.dumps({"outputs": plan.outputs}).encode())
    result.published = recovered + finish_publish(tfs, pdir, tmp)
    for f in files:
        f["path"] = f["path"].replace(tmp + "/", pdir.rstrip("/") + "/")
    result.files = files
    return result


def relpath(path: str, root: str) -> str:
    """``path`` relative to ``root`` ('/'-separated)."""
    return posixpath.relpath(path, root)
