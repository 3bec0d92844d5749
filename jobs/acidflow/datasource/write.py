"""The write side of the ``acid`` data source: one INSERT INTO / INSERT OVERWRITE in one
transaction, its event files written by the Spark tasks (:class:`AcidWriter`); see the
package doc for the layout.

Keyed tables follow ``Transaction.insert``'s key rules (:mod:`acidflow.engine.statements.insert`,
:mod:`acidflow.format.keys`): each task refuses NULL keys and keys repeated among its rows and
looks its keys up in the latest committed snapshot (the statement's own write id is open, so
the files other tasks of the write are writing are not seen); ``commit()`` refuses keys that
two tasks both wrote (their key hashes, then the key values). Option ``onExisting``
(``error`` default, ``upsert``, ``ignore``) says what an append does with a stored key: refuse
the write, replace the stored row (the tasks return its ROW__ID, ``commit()`` writes the delete
events, ``acidflow.engine.statements.external.end_upsert``) or drop the row. An overwrite checks
NULL and repeated keys only.

Idempotent writes (Delta Lake's ``txnAppId`` / ``txnVersion`` write options): a write that
carries both claims the batch ``datasource:<table>:<txnAppId>:<txnVersion>`` (kind
``datasource``) in the catalog's batch ledger, in its transaction. A write whose version is at
most the highest committed version of that application on that table (the same version: a
retry of a task of an Airflow DAG, a restarted streaming query) writes and commits nothing and
logs that it was already applied; so does a write that loses the claim to a committed
transaction. The streaming sink (:mod:`acidflow.datasource.stream`) claims the same records
at commit (:meth:`AcidWriter.finish`) with the query id and the micro-batch id.

One home for both: :class:`WritePlan` checks a write, :meth:`AcidWriter.begin` opens its
transaction, :meth:`AcidWriter.write` is the task, :meth:`AcidWriter.finish` the commit and
:meth:`AcidWriter.discard` the abort (the transaction aborted, then the tasks' statement
directories removed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections import defaultdict
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from acidflow.catalog import BatchAlreadyAppliedError, Catalog, TableDef
from acidflow.catalog.records import TxnState
from acidflow.config import Settings
from acidflow.datasource.common import (
    AGENT,
    AcidDataSourceError,
    Heartbeat,
    beat_txn,
    checked_options,
    int_option,
    open_catalog,
    table_name,
)
from acidflow.datasource.create import table_for_write
from acidflow.engine import conform
from acidflow.engine.statements import external
from acidflow.engine.statements import insert as insert_stmt
from acidflow.engine.transaction import Transaction, TxnHandle
from acidflow.engine.writer import FileRow, WriteSpec, layout_inserts_local, write_local
from acidflow.format import keys as acid_keys
from acidflow.format import partitions as parts
from acidflow.format.bucketing import check_statement_id
from acidflow.format.layout import format_bucket_file
from acidflow.format.orc import columnar
from acidflow.format.orc import files as acid_files
from acidflow.storage.fs import TableFS, join

log = logging.getLogger(__name__)

#: the batch ledger kind of idempotent data source writes
BATCH_KIND = "datasource"
#: how a refused append is worded
STATEMENT = "insert into"
HINT = (
    "An append never creates a second row of a key: write with option onExisting=upsert to "
    "replace the stored rows, or onExisting=ignore to append only the new keys."
)


@dataclasses.dataclass
class Written(WriterCommitMessage):
    """A write task's result: its Spark partition id, statement id and file rows."""

    partition_id: int
    statement_id: int
    files: list[FileRow]
    key_hashes: bytes | None = None
    deletes: pa.Table | None = None


@dataclasses.dataclass(frozen=True)
class WritePlan:
    """A write checked on the planning side, before any transaction: the catalog settings,
    the table, the input's column names in the table's order, INSERT OVERWRITE or not, the
    ``onExisting`` rule and the writer options (``compression``, ``stripe_rows``)."""

    settings: Settings
    table: TableDef
    names: list[str]
    overwrite: bool
    on_existing: str
    write_opts: dict[str, Any]

    @classmethod
    def checked(
        cls,
        settings: Settings,
        catalog: Catalog,
        opts: dict[str, str],
        schema: T.StructType,
        overwrite: bool,
    ) -> "WritePlan":
        """Check ``schema`` against the table and the write options (``opts``: checked,
        lower-case keys); a table the catalog does not have is created from ``schema`` and
        the table-definition options first (:func:`acidflow.datasource.create.table_for_write`).

        Raises:
            SchemaMismatchError; AcidDataSourceError; TableOptionConflictError (see
            :meth:`AcidWriter.open`).
        """
        name = table_name(opts)
        write_opts: dict[str, Any] = {}
        if "compression" in opts:
            write_opts["compression"] = opts["compression"]
        if "striperows" in opts:
            write_opts["stripe_rows"] = int_option(opts, "striperows", name)
        tdef = table_for_write(catalog, name, schema, opts)
        names = conform.check_schema(schema, tdef)
        return cls(
            settings, tdef, names, overwrite, _on_existing(opts, tdef, overwrite), write_opts
        )


class AcidWriter(DataSourceArrowWriter):
    """One INSERT INTO / INSERT OVERWRITE of an acidflow table in one transaction (package
    doc). Built by :meth:`open` on the driver; pickled to the tasks and the commit."""

    def __init__(
        self,
        settings: Settings,
        table: TableDef,
        spec: WriteSpec,
        names: list[str],
        overwrite: bool,
        handle: TxnHandle,
        on_existing: str = "error",
        write_opts: dict[str, Any] | None = None,
    ) -> None:
        self.settings, self.table, self.spec, self.names = settings, table, spec, names
        self.overwrite, self.handle, self.txn_id = overwrite, handle, handle.txn_id
        self.bucketed = table.num_buckets > 0
        self.on_existing, self.write_opts = on_existing, dict(write_opts or {})

    @classmethod
    def open(
        cls, settings: Settings, options: Mapping[str, str], schema: T.StructType, overwrite: bool
    ) -> "AcidWriter | AppliedWriter":
        """Check the schema and options, open the transaction, claim the idempotent batch
        (``txnAppId`` / ``txnVersion``), lock, allocate W and the statement; heartbeat the
        transaction from this (planning) worker while it lives.

        Returns:
            the writer; an :class:`AppliedWriter` (writes nothing) when the batch is already
            applied (module doc).
        Raises:
            SchemaMismatchError: missing, extra or uncastable columns (nothing is opened).
            AcidDataSourceError: a bad ``onExisting`` (unknown; other than ``error`` for an
                overwrite or a table without a primary key), only one of ``txnAppId`` /
                ``txnVersion``, a version that is no integer >= 0, table-definition options
                a missing table cannot be created with (:mod:`acidflow.datasource.create`).
            TableOptionConflictError: a table-definition option that differs from the
                existing table's.
            LockTimeoutError; BatchInProgressError: another open write holds the same
                batch (the transaction is aborted).
        """
        opts = checked_options(options)
        with open_catalog(settings, planning=True) as catalog:
            plan = WritePlan.checked(settings, catalog, opts, schema, overwrite)
            batch = _idempotent_batch(opts, plan.table.name)
            if batch is not None:
                last = applied_version(catalog, plan.table.name, batch["app_id"])
                if last is not None and batch["version"] <= last:
                    return AppliedWriter.skipping(plan.table.name, batch, last)
            writer = cls.begin(catalog, plan, agent_info=AGENT, batch=batch)
        if isinstance(writer, AcidWriter):
            # the planning worker heartbeats while it lives (the input may take long before
            # the write tasks start); running write tasks heartbeat too
            txn_id = writer.txn_id
            Heartbeat(settings, lambda c: beat_txn(c, txn_id)).start()
        return writer

    @classmethod
    def begin(
        cls,
        catalog: Catalog,
        plan: "WritePlan",
        *,
        agent_info: str,
        batch: dict[str, Any] | None = None,
    ) -> "AcidWriter | AppliedWriter":
        """Open the write's transaction (no heartbeat thread: the caller's rule), claim
        ``batch`` in it when given (:func:`claim_batch`), take the lock, allocate W and the
        statement (``external.begin_insert``).

        Returns:
            the writer; an :class:`AppliedWriter` when a committed transaction applied
            ``batch`` (the transaction is aborted).
        Raises:
            NoSuchTableError; LockTimeoutError; BatchInProgressError (the transaction is
            aborted).
        """
        txn = Transaction(catalog, agent_info=agent_info, heartbeat_s=0)
        txn_id = txn.begin()
        try:
            if batch is not None:
                claim_batch(catalog, txn_id, batch)
            table, spec = external.begin_insert(
                txn, plan.table.name, overwrite=plan.overwrite, **plan.write_opts
            )
        except BatchAlreadyAppliedError:
            txn.abort("batch already applied")
            assert batch is not None
            return AppliedWriter.skipping(plan.table.name, batch, batch["version"])
        except BaseException as exc:
            txn.abort(f"{type(exc).__name__}: {exc}")
            raise
        assert isinstance(table, TableDef)
        return cls(
            plan.settings,
            table,
            spec,
            plan.names,
            plan.overwrite,
            txn.handle,
            plan.on_existing,
            plan.write_opts,
        )

    def _task_spec(self, partition_id: int) -> WriteSpec:
        """The spec a task writes with: the statement's, or (bucketed tables) a statement id
        of the task's own, ``delta_W_W_<S+p>`` (staging for an overwrite)."""
        if not self.bucketed:
            return self.spec
        sid = check_statement_id(
            self.spec.statement_id + partition_id,
            hint="a bucketed table written by more than 4096 Spark "
            "partitions: coalesce the DataFrame",
        )
        return dataclasses.replace(self.spec, statement_id=sid, kind="insert")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        """Spark task side: buffer the task's rows, align them to the table (names, types:
        ``conform.aligned_arrow``), sort by (partition, bucket) and write event files; a
        failure removes the files this task finished.

        Raises:
            SchemaMismatchError: a value that does not cast to the table's type.
        """
        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        spec = self._task_spec(pid)
        batches = list(iterator)
        if not batches or not sum(b.num_rows for b in batches):
            return Written(pid, spec.statement_id, [])
        rows = (
            pa.Table.from_batches(batches)
            .select(self.names)
            .rename_columns([c.name for c in [*self.table.columns, *self.table.partition_columns]])
        )
        aligned = conform.aligned_arrow(rows, self.table)
        hashes, deletes = None, None
        if self.table.primary_key:
            with open_catalog(self.settings) as catalog:
                aligned, deletes = insert_stmt.check_batch_arrow(
                    catalog,
                    None,  # the latest committed snapshot: W, still open, hides the other tasks
                    self.table,
                    aligned,
                    self.on_existing,
                    statement=STATEMENT,
                    hint=HINT,
                    stored=not self.overwrite,
                )
            key = list(self.table.primary_key)
            hashes = acid_keys.pack_hashes(
                acid_keys.key_hashes_of_columns(
                    [aligned.column(k).combine_chunks() for k in key], aligned.num_rows
                )
            )
        if not aligned.num_rows:
            return Written(pid, spec.statement_id, [], hashes, deletes)
        laid = layout_inserts_local(aligned, self.table)
        beat = Heartbeat(self.settings, lambda c: beat_txn(c, self.txn_id)).start()
        try:
            files = write_local(laid, spec)
        except BaseException:
            self._remove_task_files(spec, laid, pid)
            raise
        finally:
            beat.stop()
        return Written(pid, spec.statement_id, files, hashes, deletes)

    def _remove_task_files(self, spec: WriteSpec, laid: pa.Table, pid: int) -> None:
        """A failed task's finished files (a retry writes them again): its statement
        directories (bucketed tables), or its ``bucket_<p>`` file in each partition."""
        tfs = TableFS(spec.tfs_url)
        pcols = list(spec.partition_columns)
        for values in (
            {tuple(r.values()) for r in laid.select(pcols).to_pylist()} if pcols else {()}
        ):
            d = spec.directory(parts.make_partition_path(list(zip(pcols, values))))
            tfs.delete(d if self.bucketed else join(d, format_bucket_file(pid)))

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Driver side, every task succeeded: :meth:`finish` (the batch was claimed at
        :meth:`open`)."""
        self.finish(messages)

    def finish(
        self, messages: Sequence[WriterCommitMessage | None], batch: dict[str, Any] | None = None
    ) -> bool:
        """End the statement(s) with the tasks' file rows and commit, claiming ``batch`` in
        the same transaction when given (:func:`claim_batch`; a streaming micro-batch). A
        failure aborts the transaction and removes the task files (:meth:`discard`).

        Returns:
            True when committed; False when a committed transaction already applied
            ``batch`` (nothing committed, this write discarded).
        Raises:
            ExistingKeysError: keys written by two tasks; WriteConflictError;
            BatchInProgressError: another open transaction holds ``batch``.
        """
        done = [m for m in messages if isinstance(m, Written)]
        try:
            with open_catalog(self.settings) as catalog:
                txn = Transaction.resume(catalog, self.handle, agent_info=AGENT)
                if batch is not None:
                    claim_batch(catalog, self.txn_id, batch)
                if self.table.primary_key:
                    self._refuse_keys_of_two_tasks(done)
                deletes = [m.deletes for m in done if m.deletes is not None and m.deletes.num_rows]
                written = self._written(done)
                if deletes:
                    external.end_upsert(
                        txn, self.table, written, pa.concat_tables(deletes), **self.write_opts
                    )
                else:
                    external.end_insert(txn, self.table, written, overwrite=self.overwrite)
                txn.commit()
        except BatchAlreadyAppliedError:
            self.discard(messages, "batch already applied")
            return False
        except BaseException as exc:
            try:
                self.discard(messages, f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001 - the commit's error is the one to raise
                log.exception("acid data source, table %s: discarding failed", self.table.name)
            raise
        return True

    def _refuse_keys_of_two_tasks(self, done: list[Written]) -> None:
        """Keys written by two tasks (each task refused its own repeats): equal key hashes,
        confirmed on the key values of the files written (a hash collision is no repeat).

        Raises:
            ExistingKeysError: naming the repeated keys.
        """
        arrays = [acid_keys.unpack_hashes(m.key_hashes) for m in done if m.key_hashes]
        if not arrays:
            return
        values, counts = np.unique(np.concatenate(arrays), return_counts=True)
        if not (counts > 1).any():
            return
        key = list(self.table.primary_key)
        data_cols = {c.name for c in self.table.columns}
        tfs = TableFS(self.spec.tfs_url)
        seen: dict[tuple[Any, ...], int] = defaultdict(int)
        for m in done:
            for f in m.files:
                events = acid_files.read_events(tfs, f["path"])
                pvals = dict(parts.parse_partition_path(f["partition"])) if f["partition"] else {}
                cols = [
                    events.column(k).to_pylist() if k in data_cols else [pvals.get(k)] * len(events)
                    for k in key
                ]
                for k in zip(*cols):
                    seen[k] += 1
        repeated = sorted(k for k, n in seen.items() if n > 1)
        if repeated:
            raise insert_stmt.ExistingKeysError(
                self.table.name,
                key,
                0,
                len(repeated),
                [dict(zip(key, k)) for k in repeated[: insert_stmt.MAX_NAMED_KEYS]],
                statement=STATEMENT,
                hint=HINT,
            )

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Driver side, a task failed: :meth:`discard`."""
        self.discard(messages, "a Spark write task failed")

    def discard(self, messages: Sequence[WriterCommitMessage | None], reason: str) -> None:
        """Abort the transaction if it is still open; once it is aborted, remove the
        statement directories the tasks' files are in (a failed task removed its own; the
        cleaner removes what a task still running writes later). A transaction found
        committed keeps its files."""
        with open_catalog(self.settings) as catalog:
            if catalog.get_transaction(self.txn_id).state == TxnState.OPEN:
                Transaction.resume(catalog, self.handle, agent_info=AGENT).abort(reason)
            if catalog.get_transaction(self.txn_id).state != TxnState.ABORTED:
                return
        tfs = TableFS(self.spec.tfs_url)
        for directory in sorted(self._statement_dirs(messages)):
            tfs.delete(directory)

    def _statement_dirs(self, messages: Sequence[WriterCommitMessage | None]) -> set[str]:
        """The statement directories holding the files of the tasks' messages."""
        out: set[str] = set()
        for m in messages:
            if not isinstance(m, Written) or not m.files:
                continue
            spec = (
                dataclasses.replace(self.spec, statement_id=m.statement_id, kind="insert")
                if self.bucketed
                else self.spec
            )
            out.update(spec.directory(f["partition"]) for f in m.files)
        return out

    def _written(self, done: list[Written]) -> list[tuple[WriteSpec, list[FileRow]]]:
        """(spec, file rows) per statement for ``external.end_insert``."""
        if not self.bucketed:
            return [(self.spec, [f for m in done for f in m.files])]
        staged = [
            (m.statement_id, f) for m in sorted(done, key=lambda m: m.statement_id) for f in m.files
        ]
        if self.overwrite:
            return [(self.spec, self._promote(staged))]
        return [
            (dataclasses.replace(self.spec, statement_id=m.statement_id), m.files)
            for m in sorted(done, key=lambda m: m.statement_id)
            if m.files
        ] or [(self.spec, [])]

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
            written = columnar.write_event_table(
                tfs,
                target,
                self.spec.columns,
                events,
                compression=self.spec.compression,
                stripe_rows=self.spec.stripe_rows or acid_files.DEFAULT_STRIPE_ROWS,
                bloom_filter_columns=self.spec.bloom_filter_columns(),
            )
            assert written is not None  # staged files hold rows
            blobs = [f.get("key_hashes") for f in files]
            hashes = (
                None
                if any(b is None for b in blobs)
                else acid_keys.pack_hashes(
                    np.concatenate([acid_keys.unpack_hashes(bytes(b)) for b in blobs if b])
                )
            )
            out.append(
                {
                    "partition": part,
                    "bucket": bucket,
                    "path": target,
                    "rows": written.rows,
                    "bytes": written.bytes,
                    "stripes": written.stripes,
                    "key_hashes": hashes,
                }
            )
        for sid, f in staged:
            tfs.delete(
                dataclasses.replace(self.spec, statement_id=sid, kind="insert").directory(
                    f["partition"]
                )
            )
        return out


class AppliedWriter(DataSourceArrowWriter):
    """The writer of an idempotent write whose batch is already applied (module doc): the
    tasks write nothing, ``commit()`` commits nothing and logs it."""

    def __init__(self, message: str) -> None:
        self.message = message

    @classmethod
    def skipping(cls, table: str, batch: dict[str, Any], last: int) -> "AppliedWriter":
        """Log (in the planning worker) and return the writer that skips the write."""
        message = (
            f"acid data source, table {table}: txnAppId={batch['app_id']} "
            f"txnVersion={batch['version']} is already applied (last applied version {last}); "
            "nothing written"
        )
        log.warning("%s", message)
        return cls(message)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        """Spark task side: nothing to write."""
        ctx = TaskContext.get()
        return Written(ctx.partitionId() if ctx is not None else 0, 0, [])

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Nothing to commit; logs that the batch was already applied."""
        log.warning("%s", self.message)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Nothing to abort."""


def _on_existing(opts: dict[str, str], table: TableDef, overwrite: bool) -> str:
    """The ``onExisting`` option, checked.

    Raises:
        AcidDataSourceError: see :meth:`AcidWriter.open`.
    """
    value = opts.get("onexisting", "error").strip().lower()
    if value not in insert_stmt.ON_EXISTING:
        raise AcidDataSourceError(
            f"acid data source, table {table.name}: option onExisting={opts['onexisting']!r} "
            f"is not one of {', '.join(insert_stmt.ON_EXISTING)}"
        )
    if value != "error" and (overwrite or not table.primary_key):
        raise AcidDataSourceError(
            f"acid data source, table {table.name}: option onExisting={value} applies to "
            "appends into a table with a primary key"
            + ("" if table.primary_key else " (the table has none)")
        )
    return value


def _idempotent_batch(opts: dict[str, str], table: str) -> dict[str, Any] | None:
    """The :func:`batch_record` of a write with ``txnAppId`` and ``txnVersion``, else None.

    Raises:
        AcidDataSourceError: only one of the two options, or a version below 0.
    """
    app, version = opts.get("txnappid"), int_option(opts, "txnversion", table)
    if app is None and version is None:
        return None
    if app is None or version is None or not app.strip() or version < 0:
        raise AcidDataSourceError(
            f"acid data source, table {table}: an idempotent write takes both txnAppId (a "
            "non-empty string) and txnVersion (an integer >= 0), as Delta Lake's writer does"
        )
    return batch_record(table, app, version)


def batch_record(table: str, app_id: str, version: int) -> dict[str, Any]:
    """``{"batch_id", "table", "app_id", "version"}``: the batch ledger record of version
    ``version`` of application ``app_id`` writing ``table``; the id is
    ``datasource:<table>:<app_id>:<version>``, hashed when longer than the ledger's 128
    characters."""
    bid = f"{BATCH_KIND}:{table}:{app_id}:{version}"
    if len(bid) > 128:
        bid = f"{BATCH_KIND}:" + hashlib.sha256(bid.encode()).hexdigest()
    return {"batch_id": bid, "table": table, "app_id": app_id, "version": version}


def claim_batch(catalog: Catalog, txn_id: int, batch: dict[str, Any]) -> None:
    """Claim ``batch`` (:func:`batch_record`) for the open transaction ``txn_id`` in the
    batch ledger (kind ``datasource``; source: the table and the application, so the newest
    record of each application is its own).

    Raises:
        BatchAlreadyAppliedError: a committed transaction applied it.
        BatchInProgressError: another open transaction holds it.
    """
    catalog.register_batch(
        txn_id,
        batch["batch_id"],
        BATCH_KIND,
        source=ledger_source(batch["table"], batch["app_id"]),
        details={k: v for k, v in batch.items() if k != "batch_id"},
    )


def ledger_source(table: str, app_id: str) -> str:
    """The batch ledger source of application ``app_id`` writing ``table``."""
    return f"acid data source write of {table} by {app_id}"


def applied_version(catalog: Catalog, table: str, app_id: str) -> int | None:
    """The highest ``txnVersion`` of application ``app_id`` committed into ``table`` by an
    idempotent data source write, or None: the version of the application's newest committed
    batch record (``Catalog.newest_batch``; versions only grow, a lower one is never
    committed after a higher one). Records from before the per-application source (whose
    source named the table only) are found by a scan of the kind, once nothing newer exists."""
    newest = catalog.newest_batch(BATCH_KIND, ledger_source(table, app_id))
    if newest is not None:
        return int(newest.details["version"])
    versions = [
        int(b.details["version"])
        for b in catalog.list_batches(BATCH_KIND)
        if b.state == TxnState.COMMITTED
        and b.details.get("table") == table
        and b.details.get("app_id") == app_id
    ]
    return max(versions, default=None)
