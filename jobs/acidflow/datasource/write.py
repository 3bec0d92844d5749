"""The write side of the ``acid`` data source: one INSERT INTO / INSERT OVERWRITE in one
transaction, its event files written by the Spark tasks (:class:`AcidWriter`); see the
package doc for the layout."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from acidflow.catalog import Catalog, TableDef
from acidflow.catalog.records import TxnState
from acidflow.config import Settings
from acidflow.datasource.common import (
    AGENT,
    Heartbeat,
    checked_options,
    int_option,
    open_catalog,
    table_name,
)
from acidflow.engine import conform
from acidflow.engine.statements import external
from acidflow.engine.transaction import Transaction, TxnHandle
from acidflow.engine.writer import FileRow, WriteSpec, layout_inserts_local, write_local
from acidflow.format import keys as acid_keys
from acidflow.format import partitions as parts
from acidflow.format.bucketing import check_statement_id
from acidflow.format.layout import format_bucket_file
from acidflow.format.orc import columnar
from acidflow.format.orc import files as acid_files
from acidflow.storage.fs import TableFS, join


@dataclasses.dataclass
class _Written(WriterCommitMessage):
    """A write task's result: its Spark partition id, statement id and file rows."""

    partition_id: int
    statement_id: int
    files: list[FileRow]


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
    ) -> None:
        self.settings, self.table, self.spec, self.names = settings, table, spec, names
        self.overwrite, self.handle, self.txn_id = overwrite, handle, handle.txn_id
        self.bucketed = table.num_buckets > 0

    @classmethod
    def open(
        cls, settings: Settings, options: Mapping[str, str], schema: T.StructType, overwrite: bool
    ) -> "AcidWriter":
        """Check the schema, open the transaction, lock, allocate W and the statement.

        Raises:
            SchemaMismatchError: missing, extra or uncastable columns (nothing is opened).
            NoSuchTableError; LockTimeoutError (the transaction is aborted).
        """
        opts = checked_options(options)
        name = table_name(opts)
        write_opts: dict[str, Any] = {}
        if "compression" in opts:
            write_opts["compression"] = opts["compression"]
        if "striperows" in opts:
            write_opts["stripe_rows"] = int_option(opts, "striperows", name)
        catalog = open_catalog(settings)
        names = conform.check_schema(schema, catalog.get_table(name))
        txn = Transaction(catalog, agent_info=AGENT, heartbeat_s=0)
        txn.begin()
        try:
            table, spec = external.begin_insert(txn, name, overwrite=overwrite, **write_opts)
        except BaseException as exc:
            txn.abort(f"{type(exc).__name__}: {exc}")
            raise
        assert isinstance(table, TableDef) and txn.txn_id is not None
        txn_id = txn.txn_id
        # the planning worker heartbeats while it lives (the input may take long before the
        # write tasks start); running write tasks heartbeat too
        Heartbeat(settings, lambda c: _beat_txn(c, txn_id)).start()
        return cls(settings, table, spec, names, overwrite, txn.handle)

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

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _Written:
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
            return _Written(pid, spec.statement_id, [])
        rows = (
            pa.Table.from_batches(batches)
            .select(self.names)
            .rename_columns([c.name for c in [*self.table.columns, *self.table.partition_columns]])
        )
        laid = layout_inserts_local(conform.aligned_arrow(rows, self.table), self.table)
        beat = Heartbeat(self.settings, lambda c: _beat_txn(c, self.txn_id)).start()
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
        for values in (
            {tuple(r.values()) for r in laid.select(pcols).to_pylist()} if pcols else {()}
        ):
            d = spec.directory(parts.make_partition_path(list(zip(pcols, values))))
            tfs.delete(d if self.bucketed else join(d, format_bucket_file(pid)))

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Driver side, every task succeeded: end the statement(s) with the tasks' file rows
        and commit (aborting instead when that fails, e.g. ``WriteConflictError``)."""
        catalog = open_catalog(self.settings)
        txn = Transaction.resume(catalog, self.handle, agent_info=AGENT)
        try:
            done = [m for m in messages if isinstance(m, _Written)]
            external.end_insert(txn, self.table, self._written(done), overwrite=self.overwrite)
            txn.commit()
        except BaseException as exc:
            if txn.state == TxnState.OPEN:
                txn.abort(f"{type(exc).__name__}: {exc}")
            raise

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Driver side, a task failed: abort the transaction if it is still open."""
        catalog = open_catalog(self.settings)
        if catalog.get_transaction(self.txn_id).state == TxnState.OPEN:
            Transaction.resume(catalog, self.handle).abort("a Spark write task failed")

    def _written(self, done: list[_Written]) -> list[tuple[WriteSpec, list[FileRow]]]:
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


def _beat_txn(catalog: Catalog, txn_id: int) -> bool:
    """Heartbeat an open transaction; False (stop) once it is no longer open."""
    if catalog.get_transaction(txn_id).state != TxnState.OPEN:
        return False
    catalog.heartbeat(txn_id)
    return True
