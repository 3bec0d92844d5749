"""The CDC upsert job: apply change files to full-ACID tables, one batch per file.

Data flows one way: this job reads changes (``acidflow.sources``), plans them
(``acidflow.cdc.changes``), calls the quality gate (``acidflow.quality``) and the quarantine
(``acidflow.quarantine``), writes (``acidflow.acid``) and commits (``acidflow.catalog``); none of
those call back into ``acidflow.cdc``.

For each change file, in name order (``apply_path``) -- one batch:

1. parse (``acidflow.sources.formats``); batch id = the file's LSN range for wal2json
   (``wal2json:<first>-<last>``), else ``<format>:sha256:<digest of the file's content>``;
2. skip it when the catalog says a committed transaction applied it (idempotent reruns);
3. open one transaction, claim the batch id in it (``Catalog.register_batch``);
4. per source table: resolve the target (tables config, existing ``<db>.<table>``, or
   ``--auto-create``), handle new columns (schema drift policy ``add`` appends them, ``fail``
   stops the batch), look up the stored versions of the touched keys inside their buckets,
   fold (``acidflow.cdc.changes``: late events dropped, latest event per key, policies), gate the
   rows to insert with the table's expectation suite (``acidflow.quality.gx.gate_staged``; a
   failure aborts the batch) and write one split-update statement
   (``changes.apply_row_changes``);
5. write bad records to quarantine; refuse the batch if they exceed the threshold;
6. commit: every table of the batch becomes visible at once, with the statistics (inserted,
   updated, deleted, ignored as late, deletes of missing keys, quarantined) in its commit
   record. Any error aborts the transaction: nothing of the batch is visible, and the next run
   applies it again. A lost write-set race at commit (``WriteConflictError``: a concurrent
   writer committed one of the batch's keys, or an update/delete in its partitions, first) is
   retried here: steps 3-6 run again in a new transaction, whose snapshot includes the winner
   (at most :data:`MAX_COMMIT_ATTEMPTS` transactions, a log line each). A concurrent run of the
   same batch that commits it first (between step 2 and the claim, or between attempts) makes
   this run report the batch as ``skipped``, as in step 2.

Catalog changes and the batch's transaction: auto-creating a table and appending new columns
(schema drift ``add``) are catalog changes made during the attempt, before the batch's commit;
they are idempotent (``if_not_exists``, only missing columns are added) and harmless when the
batch then aborts (an empty table, NULL columns), so a retry or rerun simply finds them done.
A primary key the stream newly names for a keyless auto-created table (:func:`acidflow.cdc.drift.learn_primary_key`)
is different -- it changes how every later batch treats the table -- so it is applied only once
the batch has committed (the commit record carries it as ``schema_change``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from acidflow.catalog import (
    BatchAlreadyAppliedError,
    TableDef,
    WriteConflictError,
    normalize_table_name,
)
from acidflow.catalog.records import TxnState
from acidflow.cdc import changes as chg
from acidflow.cdc import columnar, stored
from acidflow.cdc.drift import (  # the errors are part of this job's interface too
    PrimaryKeyError,
    SchemaDriftError,
    add_new_columns,
    learn_primary_key,
    take_learned_keys,
)
from acidflow.cdc.files import batch_id_for, change_files, read_lines
from acidflow.cdc.tables import table_from_stream, with_position_column
from acidflow.cdc.write import delete_rows, write_arrow
from acidflow.engine.transaction import Transaction
from acidflow.format.keys import key_json  # the catalog's tombstone key (one rule)
from acidflow.format.partitions import parse_partition_path
from acidflow.quality.gx import gate_staged
from acidflow.quarantine import DEFAULT_THRESHOLD, check_threshold, write_quarantine
from acidflow.sources import fastparse, formats
from acidflow.sources.columns import ColumnStream, TableChanges
from acidflow.sources.records import (
    Change,
    IncompleteTransactionError,
    ParsedStream,
)
from acidflow.sparkmode import arrow_frame
from acidflow.storage.fs import TableFS
from acidflow.storage.tablepaths import split_partitions
from acidflow.tables_config import load_tables_config

__all__ = [
    "BatchReport",
    "CdcOptions",
    "PrimaryKeyError",
    "SchemaDriftError",
    "apply_file",
    "apply_path",
    "apply_stream",
    "build_options",
]

log = logging.getLogger(__name__)

SCHEMA_DRIFT = ("add", "fail")

#: Transactions a batch may take: a batch that loses a write-set race at commit
#: (``WriteConflictError``: another transaction committed an overlapping key or partition write
#: after the batch's transaction opened) is re-planned against the new snapshot and applied again,
#: at most this many times in all (``ACIDFLOW_CDC_COMMIT_ATTEMPTS``).
#: Values below 1 count as 1 (one transaction, no retry).
MAX_COMMIT_ATTEMPTS = max(1, int(os.environ.get("ACIDFLOW_CDC_COMMIT_ATTEMPTS", "3")))


@dataclass
class CdcOptions:
    """How change batches are applied.

    Attributes:
        fmt: ``wal2json``, ``debezium`` or ``goldengate``.
        target_db: database for tables named after their source (``schema.table`` ->
            ``<target_db>.table``) when no tables config maps them.
        tables: ``{source table: TableDef}`` from YAML
            (:func:`acidflow.tables_config.load_tables_config`).
        auto_create: register unknown tables from the stream's column types and primary key.
        num_buckets: buckets of auto-created keyed tables.
        schema_drift: ``add`` (new source columns appended to the table, Hive's ADD COLUMNS)
            or ``fail``.
        policies: :class:`acidflow.cdc.changes.Policies`.
        quarantine_threshold: largest tolerated fraction of bad records per batch (0.01).
        include_tables: only apply these source tables (others are left out of the batch and
            reported); None = all.
        quality_gate: run each table's expectation suite (``<suite_dir>/<table>.json``, if any)
            on the insert rows of its merge plan before writing (``acidflow.quality.gx``); a failure
            aborts the batch. suite_dir: None = ``acidflow.quality.gx`` default.
        columnar: plan keyed tables' batches with Arrow columns where the rules allow
            (``acidflow.cdc.columnar``: complete images, no key changes; the same plan as the
            row path); False = always the row path (``ACIDFLOW_CDC_COLUMNAR=0`` likewise).
    """

    fmt: str = "wal2json"
    target_db: str = "default"
    tables: dict[str, TableDef] = field(default_factory=dict)
    auto_create: bool = False
    num_buckets: int = 4
    schema_drift: str = "add"
    policies: chg.Policies = field(default_factory=chg.Policies)
    quarantine_threshold: float = DEFAULT_THRESHOLD
    include_tables: list[str] | None = None
    quality_gate: bool = True
    suite_dir: str | None = None
    columnar: bool = True

    def __post_init__(self) -> None:
        if self.fmt not in formats.FORMATS:
            raise ValueError(f"unknown format {self.fmt!r}; expected {formats.FORMATS}")
        if self.schema_drift not in SCHEMA_DRIFT:
            raise ValueError(f"schema_drift must be one of {SCHEMA_DRIFT}")


@dataclass
class BatchReport:
    """Outcome of one batch.

    Attributes:
        batch_id, file: the batch and its change file.
        status: ``applied``, ``skipped`` (already applied) or ``empty`` (no row changes).
        txn_id: the transaction that applied it (this run's or the earlier one's).
        tables: ``{table: {write_id, rows_inserted, rows_updated, rows_deleted, ignored_late,
            deletes_of_missing, updates_of_missing, inserts_of_existing, quarantined, events}}``.
        quarantined: bad records of the batch; quarantine_file: where they are.
        seconds: wall time.
        waiting: ``{source table: changes}`` of tables not created yet whose changes in this
            batch were only TRUNCATEs (no-ops: nothing to truncate; the table is created by
            the first change that carries its columns).
        attempts: transactions it took (more than 1 after lost write-set races).
    """

    batch_id: str
    file: str
    status: str
    txn_id: int | None = None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    quarantined: int = 0
    quarantine_file: str | None = None
    seconds: float = 0.0
    waiting: dict[str, int] = field(default_factory=dict)
    attempts: int = 1


def apply_path(spark: Any, catalog: Any, input_path: str, options: CdcOptions) -> list[BatchReport]:
    """Apply every change file under ``input_path`` in name order, one batch each.

    Returns:
        one :class:`BatchReport` per file.
    Raises:
        the first batch's error (earlier batches stay committed; later ones are not tried:
        change order matters, so a poison file stops the run at that file until it is replaced
        or set aside with ``acidflow cdc quarantine-file``).
    """
    return [apply_file(spark, catalog, f, options) for f in change_files(input_path)]


def apply_file(spark: Any, catalog: Any, path: str, options: CdcOptions) -> BatchReport:
    """Apply one change file as one batch (see module docstring).

    Raises:
        UnreadableFileError: the file is not text (binary, truncated ``.gz``, not UTF-8).
        IncompleteTransactionError: the file ends inside a source transaction.
            Both name the file (and offset / line, transaction id and LSN) and the command that
            sets the file aside (``acidflow cdc quarantine-file``); nothing was applied.
        QuarantineThresholdError: too many bad records (nothing applied).
        SchemaDriftError: new columns under policy ``fail`` (nothing applied).
        acidflow.catalog.BatchInProgressError: another run is applying this batch (a run
            that commits it first instead makes this one return ``skipped``).
        PrimaryKeyError: a keyless table cannot take the key its source now names.
        acidflow.catalog.WriteConflictError: lost the write-set race
            :data:`MAX_COMMIT_ATTEMPTS` times (each attempt is logged and re-planned against
            the snapshot of a new transaction; nothing of a lost attempt is visible).
        Any write error: the transaction is aborted.
    """
    t0 = time.monotonic()
    lines, content = read_lines(path)
    try:
        stream = parse_file(options, lines, Path(path).name)
    except IncompleteTransactionError as e:  # name the file by its full path
        raise IncompleteTransactionError(path, e.txid, e.position, e.line, e.detail) from None
    batch_id = batch_id_for(options.fmt, stream, content)
    # the batch record's source is the landing directory (the stream the file belongs to; the
    # file is in its details): the cleaner keeps each source's newest record past retention
    landing = str(Path(path).parent)
    return apply_stream(spark, catalog, stream, batch_id, path, options, source=landing, t0=t0)


def parse_file(options: CdcOptions, lines: list[str], file_name: str) -> ParsedStream:
    """The change file's lines parsed: into columns
    (:func:`acidflow.sources.fastparse.parse_columns`) when the columnar fast path is on
    (``CdcOptions.columnar``) and the file is one it takes, else by
    :func:`acidflow.sources.formats.parse_lines`; the batch comes out the same either way.

    Raises:
        IncompleteTransactionError: see :func:`acidflow.sources.formats.parse_lines`.
    """
    if columnar.enabled(options.columnar):
        fast = fastparse.parse_columns(options.fmt, lines, file_name)
        if fast is not None:
            return fast
    return formats.parse_lines(options.fmt, lines, file_name)


def apply_stream(
    spark: Any,
    catalog: Any,
    stream: ParsedStream,
    batch_id: str,
    label: str,
    options: CdcOptions,
    *,
    kind: str = "cdc",
    source: str | None = None,
    details: dict[str, Any] | None = None,
    t0: float | None = None,
) -> BatchReport:
    """Apply one parsed change stream as one batch: steps 2-6 of the module docstring (skip
    when applied, claim, plan, gate, write, quarantine, commit, write-conflict retries). The one
    home of those steps for every source: change files (:func:`apply_file`) and Kafka offset
    ranges (``acidflow.cdc.kafka``).

    Args:
        stream: the batch's changes and bad records.
        batch_id: the id claimed in the batch ledger (``Catalog.register_batch``).
        label: what the batch is read from (a file path, a Kafka source), in logs, the report's
            ``file`` and the commit records' ``source_file``.
        kind, source: the batch record's kind and source (default ``cdc`` and ``label``).
        details: more JSON for the batch record's details, committed with the data (Kafka:
            the offsets).
        t0: ``time.monotonic()`` when the batch started (default now).
    Returns:
        the :class:`BatchReport`.
    Raises:
        see :func:`apply_file` (all but the parse errors).
    """
    t0 = time.monotonic() if t0 is None else t0
    path = label
    done = catalog.get_batch(batch_id)
    if done is not None and done.state == TxnState.COMMITTED:
        log.info("batch %s (%s) already applied by txn %s: skipped", batch_id, path, done.txn_id)
        return _skipped(catalog, batch_id, path, done.txn_id, done.details, t0)
    by_table: dict[str, Sequence[Change]]
    if isinstance(stream, ColumnStream):  # the columns, no Change objects
        by_table = dict(stream.by_table())
    else:
        grouped: dict[str, list[Change]] = {}
        for ch in stream.changes:
            grouped.setdefault(ch.table, []).append(ch)
        by_table = dict(grouped)
    if options.include_tables is not None:
        wanted = {t.lower() for t in options.include_tables}
        by_table = {
            t: c for t, c in by_table.items() if t in wanted or t.split(".", 1)[-1] in wanted
        }
    ledger = _Ledger(kind, source or path, dict(details or {}))
    attempts = max(1, MAX_COMMIT_ATTEMPTS)  # a monkeypatched or odd value: at least one
    attempt = 1
    while True:
        try:
            report = _apply_batch(spark, catalog, path, options, stream, batch_id, by_table, ledger)
        except BatchAlreadyAppliedError as exc:
            # a concurrent run of this batch committed it after get_batch (or between our
            # attempts): the claim (register_batch, the attempt's first step) refused it and
            # our transaction aborted with nothing written -- the batch is applied, once
            log.info(
                "batch %s (%s) applied meanwhile by txn %s of another run: skipped",
                batch_id,
                path,
                exc.txn_id,
            )
            won = catalog.get_batch(batch_id)
            report = _skipped(
                catalog, batch_id, path, exc.txn_id, won.details if won is not None else {}, t0
            )
            report.attempts = attempt
            return report
        except WriteConflictError as exc:
            if attempt >= attempts:
                log.error(
                    "batch %s (%s): write conflict at commit, attempt %d of %d, giving up: %s",
                    batch_id,
                    path,
                    attempt,
                    attempts,
                    exc,
                )
                raise
            log.warning(
                "batch %s (%s): write conflict at commit, attempt %d of %d: %s; "
                "re-planning against the new snapshot",
                batch_id,
                path,
                attempt,
                attempts,
                exc,
            )
            attempt += 1
            continue
        take_learned_keys(catalog, report.tables, path)
        report.attempts = attempt
        report.seconds = time.monotonic() - t0
        return report


def _skipped(
    catalog: Any, batch_id: str, path: str, txn_id: int | None, details: dict[str, Any], t0: float
) -> BatchReport:
    """The report of a batch a committed transaction already applied (``details``: its batch
    ledger record). A primary key that batch took but did not get to set (a crash between its
    commit and :func:`acidflow.cdc.drift.take_learned_keys`) is set now, from the ledger."""
    tables = details.get("tables", {}) or {}
    take_learned_keys(catalog, tables, path)
    return BatchReport(
        batch_id,
        path,
        "skipped",
        txn_id,
        tables=tables,
        quarantined=details.get("quarantined", 0),
        seconds=time.monotonic() - t0,
    )


def _apply_batch(
    spark: Any,
    catalog: Any,
    path: str,
    options: CdcOptions,
    stream: ParsedStream,
    batch_id: str,
    by_table: dict[str, Sequence[Change]],
    ledger: _Ledger,
) -> BatchReport:
    """One attempt at a batch: one transaction that plans (at its snapshot), gates, writes,
    quarantines and commits (module docstring, steps 3-6).

    Raises:
        acidflow.catalog.WriteConflictError: lost a write-set race at commit (aborted).
    """
    total = stream.change_count() + len(stream.bad)
    bad = list(stream.bad)
    report = BatchReport(batch_id, path, "applied")
    with Transaction(catalog, agent_info=f"acidflow cdc {options.fmt}") as txn:
        catalog.register_batch(
            txn.txn_id,
            batch_id,
            ledger.kind,
            source=ledger.source,
            details={"format": options.fmt, "file": path, **ledger.details},
        )
        report.txn_id = txn.txn_id
        schema_changes: dict[str, dict[str, Any]] = {}
        for source_name in sorted(by_table):
            table_changes = by_table[source_name]
            resolved = _resolve_table(catalog, stream, source_name, options)
            if isinstance(resolved, _Waiting):
                report.waiting[source_name] = len(table_changes)
                log.info("%s: %s", path, resolved.reason)
                continue
            if isinstance(resolved, str):
                bad += [chg.bad_record(c, resolved) for c in table_changes]
                continue
            table = add_new_columns(
                catalog, resolved, table_changes, stream, options.schema_drift, path
            )
            table, change = learn_primary_key(
                spark, catalog, txn, table, stream, source_name, options.schema_drift, path
            )
            if change:
                schema_changes[table.name] = change
            stats = _apply_table(spark, catalog, txn, table, table_changes, options, bad)
            if change:
                stats["schema_change"] = change
            report.tables[table.name] = stats
        for name, change in schema_changes.items():  # the key change goes into the timeline
            txn.write_id(name)
            txn.stats.setdefault(name, {"operations": []})["schema_change"] = change
        report.quarantined = len(bad)
        report.quarantine_file = write_quarantine(catalog.warehouse, "cdc", batch_id, bad)
        check_threshold(
            batch_id, bad, total, options.quarantine_threshold, report.quarantine_file, source=path
        )
        for name, stats in report.tables.items():
            if name not in txn.stats:  # nothing written to it: no write id, no commit record
                continue
            txn.stats[name].update(
                {k: v for k, v in stats.items() if k != "write_id"},
                batch_id=batch_id,
                source_file=path,
            )
        if not report.tables:
            report.status = "empty"
        catalog.register_batch(
            txn.txn_id,
            batch_id,
            ledger.kind,
            source=ledger.source,
            details={
                **ledger.details,
                "format": options.fmt,
                "file": path,
                "tables": report.tables,
                "quarantined": report.quarantined,
                "quarantine_file": report.quarantine_file,
                "first_position": stream.first_position,
                "last_position": stream.last_position,
            },
        )
    return report


@dataclass
class _Ledger:
    """How a batch is recorded in the batch ledger: kind, source and extra details."""

    kind: str
    source: str
    details: dict[str, Any]


@dataclass
class _Waiting:
    """A source table that is not created yet and whose changes in this batch carry no
    columns (only TRUNCATEs): nothing to do until a change with columns arrives."""

    reason: str


def _resolve_table(
    catalog: Any, stream: ParsedStream, source_name: str, options: CdcOptions
) -> TableDef | str | _Waiting:
    """The target table of a source table: from the tables config, the catalog
    (``<target_db>.<table>``) or auto-created from the stream.

    Returns:
        the :class:`TableDef`; or a quarantine reason (str) for the table's changes -- an
        unknown table without ``--auto-create``, a source name or column that is not a valid
        Hive identifier; or :class:`_Waiting` when the table does not exist and the batch only
        truncates it (a table that does not exist has nothing to truncate; it is created by the
        first change that carries its columns, in this batch or a later one).
    """
    tdef = options.tables.get(source_name)
    if tdef is not None:
        if not catalog.table_exists(tdef.name):
            catalog.create_table(with_position_column(tdef), if_not_exists=True)
        return catalog.get_table(tdef.name)
    name = f"{options.target_db}.{source_name.split('.', 1)[-1]}"
    try:
        name = normalize_table_name(name)
    except ValueError:
        return (
            f"source table {source_name} maps to {name!r}, which is not a valid Hive table "
            "name (db.table of [a-z0-9_]): map it to a valid name in a tables config"
        )
    if catalog.table_exists(name):
        return catalog.get_table(name)
    if not options.auto_create:
        return f"unknown table {source_name}: define it in a tables config or pass --auto-create"
    source = stream.tables[source_name]
    if not source.columns:
        if all(c.op == "T" for c in stream.changes if c.table == source_name):
            return _Waiting(
                f"TRUNCATE of {source_name} ignored: {name} does not exist yet "
                "(nothing to truncate); it is created by the first change that "
                "carries its columns"
            )
        return (
            f"cannot auto-create {name} for {source_name}: the stream carries no column "
            "names/types for it"
        )
    try:
        tdef = table_from_stream(source, options.target_db, options.num_buckets)
        tdef.name = name
        catalog.create_table(tdef, if_not_exists=True)
    except ValueError as e:  # invalid column names / types: TableDef.validate
        return f"cannot auto-create {name} for source table {source_name}: {e}"
    return catalog.get_table(name)


def _apply_table(
    spark: Any,
    catalog: Any,
    txn: Transaction,
    table: TableDef,
    table_changes: Sequence[Change],
    options: CdcOptions,
    bad: list,
) -> dict[str, Any]:
    columns = stored.all_columns(table)
    key = list(table.primary_key)
    # a table parsed into columns (never a TRUNCATE in it) is planned from them; when the
    # fast path declines, the row path reads the reference parser's changes
    from_columns = (
        isinstance(table_changes, TableChanges) and bool(key) and columnar.enabled(options.columnar)
    )
    fast = (
        _plan_columnar(spark, catalog, txn, table, table_changes, options) if from_columns else None
    )
    changes_: list[Change] = []
    truncated = False
    if fast is None:
        changes_, truncated = chg.after_last_truncate(list(table_changes))
    inserts: pa.Table | None = None
    deletes: pa.Table | None = None
    if key:
        if fast is None and not (truncated or from_columns) and columnar.enabled(options.columnar):
            fast = _plan_columnar(spark, catalog, txn, table, changes_, options)
        if fast is not None:
            plan, inserts, deletes = fast.plan, fast.inserts, fast.deletes
        else:
            plan = _plan_rows(spark, catalog, txn, table, changes_, options, truncated)
        catalog.add_tombstones(
            txn.txn_id, table.name, [(key_json(k), pos) for k, pos in plan.tombstones]
        )
    else:
        candidates = (
            (lambda before, taken: None)
            if truncated
            else stored.keyless_candidates(spark, catalog, txn, table, changes_, columns)
        )
        plan = chg.fold_keyless(changes_, columns, candidates)
    bad += plan.bad
    stats = dict(plan.stats, truncated=int(truncated))
    if inserts is None:
        inserts = stored.arrow_rows(plan.inserts, columns)
    if options.quality_gate and inserts.num_rows:  # raising aborts the batch's transaction
        gate_staged(spark, catalog, table.name, inserts, suite_dir=options.suite_dir)
    if truncated:
        # TRUNCATE then the batch's later changes = INSERT OVERWRITE with the resulting rows
        # (Hive writes base_W for both); every partition is emptied
        result = txn.insert_overwrite(
            table.name,
            arrow_frame(spark, inserts),
            partitions=_all_partitions(catalog, table) if table.partition_columns else None,
        )
        stats["write_id"], stats["files"] = result.write_id, result.files
    else:
        if deletes is None:
            deletes = delete_rows(table, plan)
        if inserts.num_rows or deletes.num_rows:
            result = write_arrow(spark, txn, table, inserts, deletes, plan.stats)
            stats["write_id"] = result.write_id
            stats["files"] = result.files
    return stats


def _plan_rows(
    spark: Any,
    catalog: Any,
    txn: Transaction,
    table: TableDef,
    changes_: list[Change],
    options: CdcOptions,
    truncated: bool,
) -> chg.MergePlan:
    """The row path of a keyed table (``acidflow.cdc.changes``: every case)."""
    columns = stored.all_columns(table)
    names = [c for c, _ in columns]
    plan = chg.MergePlan()
    events = chg.normalize_events(changes_, dict(columns), list(table.primary_key), plan)
    keys = sorted({e.key for e in events}, key=repr)
    versions = (
        {}
        if truncated
        else stored.lookup_stored(
            spark,
            catalog,
            txn,
            table,
            keys,
            full_keys=chg.keys_needing_stored_rows(events, names),
            min_position=min((e.position for e in events), default=None),
        )
    )
    tombs = (
        {}
        if truncated
        else stored.tombstones(catalog, table, [k for k in keys if k not in versions])
    )
    return chg.fold_events(events, versions, names, options.policies, plan, tombs)


def _plan_columnar(
    spark: Any,
    catalog: Any,
    txn: Transaction,
    table: TableDef,
    changes_: Sequence[Change],
    options: CdcOptions,
) -> columnar.ColumnarPlan | None:
    """The columnar fast path (``acidflow.cdc.columnar``), or None when the batch is not one
    it takes (then :func:`_plan_rows`). Changes parsed into columns
    (:class:`acidflow.sources.columns.TableChanges`) go to ``column_frame``, others to
    ``event_frame``."""
    columns = stored.all_columns(table)
    key = list(table.primary_key)
    frame = (
        columnar.column_frame(changes_.columns, columns, key)
        if isinstance(changes_, TableChanges)
        else columnar.event_frame(list(changes_), columns, key)
    )
    if frame is None or not frame.ops:
        return None
    groups = columnar.key_groups(frame)
    found = stored.lookup_found(
        spark, catalog, txn, table, groups.keys, stored.slim_project(table), min(frame.positions)
    )
    pcols = [(c.name, c.hive_type) for c in table.partition_columns]
    return columnar.fold_frame(
        frame,
        groups,
        found,
        lambda keys: stored.tombstones(catalog, table, keys),
        key,
        pcols,
        options.policies,
    )


def _all_partitions(catalog: Any, table: TableDef) -> list[dict[str, Any]]:
    """Every partition of the table that exists on storage (to empty them on TRUNCATE)."""
    tfs = TableFS(table.location)
    if not tfs.exists(table.location):
        return []
    depth = len(table.partition_columns)
    found = split_partitions(tfs.list_recursive(table.location), depth)
    return [dict(parse_partition_path(p)) for p in found if p]


def build_options(
    fmt: str,
    *,
    tables_config: str | None,
    auto_create: bool,
    target_db: str,
    num_buckets: int,
    schema_drift: str,
    update_missing: str,
    insert_existing: str,
    delete_missing: str,
    quarantine_threshold: float,
    tables: list[str] | None = None,
) -> CdcOptions:
    """:class:`acidflow.cdc.apply.CdcOptions` from command-line values (shared by the CLI and the
    spark-submit entry). ``tables_config``: a tables YAML file or directory
    (:func:`acidflow.tables_config.load_tables_config`); ``None`` or empty means no tables
    config (``{}``: source tables map to ``<target_db>.<table>``), nothing is read by default."""
    cfg = {}
    if tables_config:
        cfg = load_tables_config(tables_config)
    return CdcOptions(
        fmt=fmt,
        target_db=target_db,
        tables=cfg,
        auto_create=auto_create,
        num_buckets=num_buckets,
        schema_drift=schema_drift,
        policies=chg.Policies(update_missing, insert_existing, delete_missing),
        quarantine_threshold=quarantine_threshold,
        include_tables=tables or None,
    )
