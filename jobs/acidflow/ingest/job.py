"""Batch ingest: CSV, JSON lines and Parquet files of a landing path for one data interval,
appended to a table or overwriting a partition (Hive INSERT INTO / INSERT OVERWRITE), once.

Idempotence, ``append`` and ``upsert``: the first load of a (table, data interval) has the batch
id ``ingest:<table>:<data interval>``; its ledger record (``Catalog.register_batch`` details)
lists every landing file with its SHA-256, the unreadable ones marked ``unreadable``. A rerun of
the interval applies only the files whose SHA-256 is in no committed batch of the interval -- a
file quarantined as unreadable (a ``.gz`` still being copied) and fixed since, or a file that
arrived late -- as a follow-up batch ``ingest:<table>:<data interval>:+<n>`` (n = 1, 2, ...: the
next number after the committed follow-ups, so two reruns racing for the same interval claim
the same id and one of them is refused, never both applied). A rerun with no new file is
reported and skipped. A file whose path was applied with other content is not applied again
(its rows would be doubled): it is named in the report's note -- rerun with ``overwrite`` to
reload the interval. ``overwrite``: the batch id is
``ingest:<table>:<data interval>:<digest of the files and their checksums>`` (the same files are
skipped; changed files replace the partition again, which is idempotent by construction).

Rows that do not parse with the table's schema (Spark's PERMISSIVE mode ``_corrupt_record``)
or have a NULL primary key go to quarantine (``acidflow.quarantine``) with the file and the raw
record; more than the threshold (1 %) aborts the batch. A file that cannot be read at all (binary,
not UTF-8, a truncated ``.gz``, an unreadable Parquet file: ``acidflow.ingest.landing``) is
quarantined as a whole -- one record naming the file, the line / byte offset and the reason --
and the other files are loaded; it does not count toward the row threshold, but a batch whose
files are all unreadable fails (:class:`LandingFileError`). The good rows pass the table's
expectation suite (``acidflow.quality.gx.gate_staged``) before they are written.

Primary keys: ``append`` into a table with a primary key refuses rows whose key is already in
the table's snapshot or repeats within the batch (``Transaction.insert``'s rule,
:class:`acidflow.engine.statements.insert.ExistingKeysError`, nothing applied) -- an INSERT
must not create a second live row of a key; ``overwrite`` refuses a key repeated within the
batch or stored in a partition it does not replace (``Transaction.insert_overwrite``'s rule);
NULL keys are quarantined (the NULL-key rule of :mod:`acidflow.format.keys`). ``upsert`` (CLI ``--upsert``) writes the
batch as a split-update instead (``Transaction.upsert``: keys in the table are updated, new keys
inserted); it has the batch id of ``append``. Tables without a primary key keep Hive's INSERT
semantics.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import Any

from acidflow.catalog import BatchInfo
from acidflow.catalog.records import TxnState
from acidflow.engine.statements.insert import ExistingKeysError
from acidflow.engine.transaction import Transaction
from acidflow.errors import AcidflowError
from acidflow.format.keys import null_key_reason
from acidflow.ingest.landing import UnreadableFile, check_landing_file
from acidflow.quality.gx import gate_staged
from acidflow.quarantine import DEFAULT_THRESHOLD, check_threshold, write_quarantine
from acidflow.sources.records import BadRecord

FILE_FORMATS = ("csv", "jsonl", "parquet")
MODES = ("append", "overwrite", "upsert")
CORRUPT = "_corrupt_record"
#: how an append refused for existing keys is worded (the rule: acidflow.engine.statements.insert)
APPEND_STATEMENT = "ingest append into"
APPEND_HINT = (
    "An append never creates a second row of a key: ingest with mode upsert "
    "(acidflow ingest --upsert) to update existing keys."
)


class LandingFileError(AcidflowError, ValueError):
    """Every landing file of a batch is unreadable (see ``acidflow.ingest.landing``); nothing
    was applied.

    Attributes:
        files: the :class:`acidflow.ingest.landing.UnreadableFile` of each file.
        quarantine_file: where they were recorded.
    """

    def __init__(
        self, table: str, files: list[UnreadableFile], quarantine_file: str | None
    ) -> None:
        self.files, self.quarantine_file = files, quarantine_file
        super().__init__(
            f"ingest into {table}: no readable landing file; "
            + "; ".join(f"{f.path}: {f.reason}" for f in files)
            + f" (recorded in {quarantine_file})"
        )


@dataclass
class IngestReport:
    """Outcome of one ingest batch.

    Attributes:
        batch_id, table, data_interval, mode: what was loaded where.
        status: ``applied`` or ``skipped`` (already applied).
        files: ``[{"path", "sha256", "bytes"}]`` of the batch (a follow-up batch of a rerun:
            only the files it applies; unreadable ones carry ``"unreadable": reason``).
        rows: rows written (upsert: inserted + updated); rows_updated: rows of keys already
            in the table that an upsert replaced.
        quarantined: bad records (rows, plus one per unreadable file); files_quarantined:
            landing files quarantined as a whole (unreadable); quarantine_file: where the bad
            records are.
        txn_id, write_id: the transaction (this run's or the earlier one's) and write id.
        note: extra information (a follow-up batch of a rerun; files changed since an
            appended interval was loaded, which are not applied again).
        seconds: wall time.
    """

    batch_id: str
    table: str
    data_interval: str
    mode: str
    status: str
    files: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0
    rows_updated: int = 0
    quarantined: int = 0
    files_quarantined: int = 0
    quarantine_file: str | None = None
    txn_id: int | None = None
    write_id: int | None = None
    note: str = ""
    seconds: float = 0.0


def landing_files(path: str, fmt: str) -> list[str]:
    """Files of a landing path: a file, a glob, or a directory (``*.csv``/``*.jsonl``/
    ``*.json``/``*.parquet`` by format, hidden and ``_``-prefixed files skipped), sorted.

    Raises:
        FileNotFoundError: no files.
    """
    exts = {
        "csv": (".csv", ".csv.gz"),
        "jsonl": (".jsonl", ".json", ".jsonl.gz", ".json.gz"),
        "parquet": (".parquet",),
    }[fmt]
    if os.path.isdir(path):
        found = [
            os.path.join(path, f)
            for f in os.listdir(path)
            if not f.startswith((".", "_")) and f.endswith(exts)
        ]
    else:
        found = [f for f in glob.glob(path) if os.path.isfile(f)]
    if not found:
        raise FileNotFoundError(f"no {fmt} files at {path}")
    return sorted(found)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _batch_id(table: str, interval: str, mode: str, files: list[dict[str, Any]]) -> str:
    bid = f"ingest:{table}:{interval}"
    if mode == "overwrite":
        digest = hashlib.sha256(
            "\n".join(f"{os.path.basename(f['path'])} {f['sha256']}" for f in files).encode()
        ).hexdigest()[:16]
        bid += f":{digest}"
    if len(bid) > 128:
        bid = "ingest:" + hashlib.sha256(bid.encode()).hexdigest()
    return bid


def _followup_id(base: str, n: int) -> str:
    """The id of the ``n``-th follow-up batch of an append/upsert interval whose first batch
    is ``base`` (hashed like :func:`_batch_id` when longer than the ledger's 128 characters)."""
    bid = f"{base}:+{n}"
    if len(bid) > 128:
        bid = "ingest:" + hashlib.sha256(bid.encode()).hexdigest()
    return bid


@dataclass
class RerunPlan:
    """What a rerun of an already loaded append/upsert interval applies.

    Attributes:
        batch_id: the follow-up batch id to claim (``<first batch id>:+<n>``).
        new: the landing files (``{"path", "sha256", "bytes"}``) whose SHA-256 is in no
            committed batch of the interval, in file order; empty: nothing to apply.
        changed: paths applied before with other content (left out, see the module docstring).
        applied: the committed batches of the interval, first batch then follow-ups.
    """

    batch_id: str
    new: list[dict[str, Any]]
    changed: list[str]
    applied: list[BatchInfo]


def plan_rerun(catalog: Any, base: str, files: list[dict[str, Any]]) -> RerunPlan:
    """Compare the landing files of an interval whose first batch ``base`` is committed with
    the files its committed batches applied (their ledger details ``files``; entries marked
    ``unreadable`` were quarantined, not applied).

    Follow-up batches are numbered 1, 2, ...; each run claims the number after the last
    committed one, so the committed follow-ups are always 1..k without a gap and the scan
    stops at the first number that is absent, open or aborted (an open one: another run is
    applying it, and claiming the same id is refused with ``BatchInProgressError``).

    Args:
        catalog: the catalog (``get_batch``).
        base: the interval's first batch id (committed).
        files: this run's landing files with their ``sha256``.
    Returns:
        :class:`RerunPlan`.
    """
    first = catalog.get_batch(base)
    applied: list[BatchInfo] = [first] if first is not None else []
    n = 1
    while True:
        b = catalog.get_batch(_followup_id(base, n))
        if b is None or b.state != TxnState.COMMITTED:
            break
        applied.append(b)
        n += 1
    shas: set[str] = set()
    paths: dict[str, str] = {}
    for b in applied:
        for f in b.details.get("files", []):
            if not f.get("unreadable"):
                shas.add(f["sha256"])
                paths[os.path.abspath(f["path"])] = f["sha256"]
    new, changed = [], []
    for f in files:
        if f["sha256"] in shas:
            continue
        if os.path.abspath(f["path"]) in paths:
            changed.append(str(f["path"]))
        else:
            new.append(f)
    return RerunPlan(_followup_id(base, n), new, changed, applied)


def read_landing(spark: Any, table: Any, files: list[str], fmt: str) -> Any:
    """Read landing files with the table's schema (CSV with a header; JSON lines; Parquet
    with its own schema, cast later). Returns a cached DataFrame with ``_source_file`` and,
    for CSV/JSON, ``_corrupt_record``."""
    from pyspark.sql import (
        functions as F,  # deferred: pyspark is heavy; the CLI imports this
    )
    from pyspark.sql import types as T  # deferred: as above

    from acidflow import sparktypes  # deferred: it imports pyspark

    cols = [(c.name, c.hive_type) for c in table.columns + table.partition_columns]
    if fmt == "parquet":
        df = spark.read.parquet(*files)
    else:
        if fmt == "csv":
            cols = _csv_columns(files, cols)
        schema = T.StructType(
            [T.StructField(n, sparktypes.spark_type(t)) for n, t in cols]
            + [T.StructField(CORRUPT, T.StringType())]
        )
        reader = (
            spark.read.schema(schema)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT)
        )
        if fmt == "csv":
            df = reader.option("header", True).csv(files)
        else:
            df = reader.json(files)
    return df.withColumn("_source_file", F.input_file_name()).cache()


def _csv_columns(files: list[str], cols: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The table columns in the order of the CSV header (the same in every file).

    Raises:
        ValueError: a header names a column the table does not have, or headers differ.
    """
    types = {n.lower(): (n, t) for n, t in cols}
    header: list[str] | None = None
    for f in files:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8") as fh:
            first = fh.readline()
        if not first.strip():
            continue  # an empty file has no header and no rows
        names = [h.strip().strip('"').lower() for h in first.rstrip("\r\n").split(",")]
        unknown = [h for h in names if h not in types]
        if unknown:
            raise ValueError(
                f"{f}: CSV header names column(s) {unknown} that the table does "
                f"not have (columns: {[n for n, _ in cols]})"
            )
        if header is not None and names != header:
            raise ValueError(f"{f}: CSV header {names} differs from {files[0]}'s {header}")
        header = names
    if header is None:  # every file is empty
        return cols
    return [types[h] for h in header]


def ingest(
    spark: Any,
    catalog: Any,
    table_name: str,
    path: str,
    fmt: str,
    data_interval: str,
    *,
    mode: str = "append",
    partition: dict[str, Any] | None = None,
    quarantine_threshold: float = DEFAULT_THRESHOLD,
    quality_gate: bool = True,
    suite_dir: str | None = None,
) -> IngestReport:
    """Load the files of ``path`` for one data interval into ``table_name``, once.

    A rerun of an ``append`` / ``upsert`` interval applies only the files no committed batch
    of the interval applied, as a follow-up batch (:func:`plan_rerun`, module docstring); with
    no such file it is reported as ``skipped``.

    Args:
        fmt: ``csv`` (header row), ``jsonl`` or ``parquet``.
        data_interval: the interval's identity, e.g. Airflow's
            ``"2024-01-01T00:00:00+00:00/2024-01-02T00:00:00+00:00"`` or ``"2024-01-01"``.
        mode: ``append`` (INSERT INTO; into a table with a primary key only rows of new keys,
            see the module docstring), ``upsert`` (split-update: existing keys updated, new
            keys inserted; needs a primary key) or ``overwrite`` (INSERT OVERWRITE of
            ``partition``, or of the whole table when unpartitioned).
        partition: partition values, e.g. ``{"ds": "2024-01-01"}``; filled into rows that do not
            carry the partition columns.
        quality_gate: run the table's expectation suite (``<suite_dir>/<table>.json``, if any)
            on the good rows before writing; ``suite_dir`` None = ``acidflow.quality.gx`` default.
    Returns:
        :class:`IngestReport`.
    Raises:
        FileNotFoundError: no files; ValueError: bad format/mode/partition, ``upsert`` into a
        table without a primary key;
        ExistingKeysError: ``append`` of keys already in the table or repeated in the batch;
            ``overwrite`` of keys repeated in the batch or stored in a partition not replaced
        (nothing applied); acidflow.engine.conform.DuplicateKeyError: ``upsert`` of a batch
        that repeats a key (nothing applied);
        LandingFileError: every landing file is unreadable (nothing applied);
        QuarantineThresholdError: too many bad rows (nothing applied);
        acidflow.quality.gx.QualityGateError: the rows failed the suite (nothing applied);
        acidflow.engine.conform.SchemaMismatchError: Parquet columns that do not fit the table.
    """
    from pyspark.sql import (
        functions as F,  # deferred: pyspark is heavy; the CLI imports this
    )

    if fmt not in FILE_FORMATS:
        raise ValueError(f"format must be one of {FILE_FORMATS}, got {fmt!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    t0 = time.monotonic()
    table = catalog.get_table(table_name)
    pnames = table.partition_column_names()
    if partition and set(partition) != set(pnames):
        raise ValueError(
            f"{table.name}: partition must give exactly {pnames}, got {sorted(partition)}"
        )
    if mode == "upsert" and not table.primary_key:
        raise ValueError(
            f"ingest upsert into {table.name}: the table has no primary key; use mode append"
        )
    files: list[dict[str, Any]] = [
        {"path": p, "sha256": _sha256(p), "bytes": os.path.getsize(p)}
        for p in landing_files(path, fmt)
    ]
    batch_id = _batch_id(table.name, data_interval, mode, files)
    report = IngestReport(batch_id, table.name, data_interval, mode, "applied", files)
    done = catalog.get_batch(batch_id)
    if done is not None and done.state == TxnState.COMMITTED:
        rerun = plan_rerun(catalog, batch_id, files) if mode != "overwrite" else None
        notes = []
        if rerun is not None and rerun.changed:
            notes.append(
                f"{len(rerun.changed)} file(s) changed since they were applied to "
                f"this interval and are not applied again: "
                f"{', '.join(rerun.changed)}; rerun with mode overwrite to reload it"
            )
        if rerun is None or not rerun.new:
            report.status, report.txn_id = "skipped", done.txn_id
            report.rows = done.details.get("rows", 0)
            report.write_id = done.details.get("write_id")
            report.note = "; ".join(notes)
            report.seconds = time.monotonic() - t0
            return report
        notes.insert(
            0,
            f"follow-up of {batch_id}: {len(rerun.new)} file(s) not applied by "
            f"its {len(rerun.applied)} committed batch(es)",
        )
        batch_id, files = rerun.batch_id, rerun.new
        report = IngestReport(
            batch_id, table.name, data_interval, mode, "applied", files, note="; ".join(notes)
        )
    unreadable = _unreadable_files(files, fmt)
    poison = [_poison_record(u, table.name) for u in unreadable]
    readable = [str(f["path"]) for f in files if "unreadable" not in f]
    report.files_quarantined = len(unreadable)
    if not readable:
        qfile = write_quarantine(catalog.warehouse, "ingest", batch_id, poison)
        raise LandingFileError(table.name, unreadable, qfile)
    cached = df = read_landing(spark, table, readable, fmt)
    try:
        for p, v in (partition or {}).items():
            if p not in [c.lower() for c in df.columns]:
                df = df.withColumn(p, F.lit(v))
            elif fmt != "parquet":
                df = df.withColumn(p, F.coalesce(F.col(p), F.lit(v)))
        bad_cond = F.lit(False)
        if CORRUPT in df.columns:
            bad_cond = F.col(CORRUPT).isNotNull()
        for k in table.primary_key:
            bad_cond = bad_cond | F.col(k).isNull()
        bad_rows = df.where(bad_cond).collect()
        good = df.where(~bad_cond)
        if partition:
            inside = F.lit(True)
            for p, v in partition.items():
                inside = inside & (F.col(p).cast("string") == F.lit(str(v)))
            wrong = good.where(~inside).limit(1).collect()
            if wrong:
                raise ValueError(
                    f"{table.name}: rows for another partition than {partition} in "
                    f"{wrong[0]['_source_file']}"
                )
        bad = [_bad_row(r, table) for r in bad_rows]
        total = df.count()
        with Transaction(catalog, agent_info=f"acidflow ingest {fmt}") as txn:
            catalog.register_batch(
                txn.txn_id, batch_id, "ingest", source=path, details={"files": files}
            )
            report.txn_id = txn.txn_id
            report.quarantined = len(poison) + len(bad)
            report.quarantine_file = write_quarantine(
                catalog.warehouse, "ingest", batch_id, poison + bad
            )
            # unreadable files are reported, not counted: the threshold is about rows
            check_threshold(batch_id, bad, total, quarantine_threshold, report.quarantine_file)
            data = good.drop("_source_file", *([CORRUPT] if CORRUPT in df.columns else []))
            if quality_gate:  # raising aborts the transaction: nothing of the batch is visible
                gate_staged(spark, catalog, table.name, data, suite_dir=suite_dir)
            if mode == "overwrite":
                result = txn.insert_overwrite(
                    table.name, data, partitions=[partition] if partition else None
                )
            elif mode == "upsert":
                result = txn.upsert(table.name, data)
            else:
                try:
                    result = txn.insert(table.name, data)
                except ExistingKeysError as e:
                    raise e.reworded(APPEND_STATEMENT, APPEND_HINT) from None
            report.rows = result.rows_inserted + result.rows_updated
            report.rows_updated, report.write_id = result.rows_updated, result.write_id
            txn.stats[table.name].update(
                batch_id=batch_id,
                data_interval=data_interval,
                quarantined=report.quarantined,
                source_files=len(files),
                files_quarantined=len(unreadable),
            )
            catalog.register_batch(
                txn.txn_id,
                batch_id,
                "ingest",
                source=path,
                details={
                    "files": files,
                    "rows": report.rows,
                    "write_id": report.write_id,
                    "data_interval": data_interval,
                    "mode": mode,
                    "quarantined": report.quarantined,
                    "files_quarantined": len(unreadable),
                },
            )
    finally:
        cached.unpersist()  # the cached read itself: ``df`` is rebound to derived frames above
    report.seconds = time.monotonic() - t0
    return report


def _unreadable_files(files: list[dict[str, Any]], fmt: str) -> list[UnreadableFile]:
    """Check every landing file (``acidflow.ingest.landing``); marks the entries of
    unreadable ones with ``"unreadable": reason`` and returns them, in file order."""
    out = []
    for f in files:
        u = check_landing_file(f["path"], fmt)
        if u is not None:
            f["unreadable"] = u.reason
            out.append(u)
    return out


def _poison_record(u: UnreadableFile, table: str) -> BadRecord:
    """The quarantine record of a whole unreadable file."""
    raw = f"<whole file quarantined: {os.path.getsize(u.path)} bytes>"
    if u.excerpt:
        raw += f" bytes at offset {u.offset}: {u.excerpt}"
    return BadRecord(u.source, f"unreadable file: {u.reason}", raw, table)


def _bad_row(r: Any, table: Any) -> BadRecord:
    d = r.asDict()
    raw = d.get(CORRUPT)
    if raw is not None:
        reason = (
            "does not parse with the table's schema ("
            + ", ".join(f"{c.name} {c.hive_type}" for c in table.columns)
            + ")"
        )
    else:
        reason = null_key_reason([k for k in table.primary_key if d.get(k) is None])
        raw = str({k: v for k, v in d.items() if k not in ("_source_file", CORRUPT)})
    return BadRecord(str(d.get("_source_file")), reason, raw, table.name)
