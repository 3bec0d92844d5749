"""The streaming sink of the ``acid`` data source: ``df.writeStream.format("acid")``, one
INSERT INTO per micro-batch in one transaction, applied exactly once.

Per micro-batch (Spark's micro-batch execution; PySpark's ``DataSourceStreamArrowWriter``
protocol): the planning worker builds the writer (:meth:`AcidStreamWriter.open`: options and
schema checked) and pickles it to the batch's write tasks; pickling opens the micro-batch's
transaction (:meth:`AcidStreamWriter.__getstate__`: lock, write id W, statement -- the batch
writer's :meth:`AcidWriter.begin`), so each micro-batch has a transaction of its own and none
is open between micro-batches. The tasks write the event files exactly as a batch write's
tasks do (:meth:`AcidWriter.write`) and return them with the transaction and Spark's query id
(the task's local property ``sql.streaming.queryId``: ``StreamingQuery.id``, kept in the
checkpoint's ``metadata``, the same after a restart from that checkpoint). PySpark then builds
a second, fresh writer in another worker and calls ``commit(messages, batchId)`` or
``abort(messages, batchId)`` on it: the transaction comes from the messages.

Exactly once: the commit claims the batch ``datasource:<table>:<query id>:<batchId>`` (the
ledger of the batch source's ``txnAppId`` / ``txnVersion``, with txnAppId = the query id and
txnVersion = the batch id) in the micro-batch's transaction, then commits
(:meth:`AcidWriter.finish`). A batch id at most the highest one committed for the query on the
table (Spark re-runs the last batch when it crashed between the catalog's commit and its
checkpoint's ``commits/<batchId>``) commits nothing: the transaction is aborted and the task
files removed (:meth:`AcidWriter.discard`). ``abort`` does the same for a failed micro-batch.

The transactions of one query carry one agent string (the table and a digest of the option
``checkpointLocation``, which the sink therefore requires): a micro-batch whose tasks all
failed or that ran no task returns no transaction in its messages, so ``commit`` / ``abort``
abort the query's open transaction by that string, and a new micro-batch aborts one a crashed
run left behind (:meth:`AcidStreamWriter._abort_leftovers`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from acidflow.catalog import Catalog, TxnNotOpenError
from acidflow.catalog.records import TxnState
from acidflow.config import Settings
from acidflow.datasource.common import (
    AGENT,
    AcidDataSourceError,
    Heartbeat,
    beat_txn,
    checked_options,
    open_catalog,
    table_name,
)
from acidflow.datasource.write import (
    AcidWriter,
    WritePlan,
    Written,
    applied_version,
    batch_record,
)

log = logging.getLogger(__name__)

#: the task local property Spark's stream execution sets to ``StreamingQuery.id``
QUERY_ID_PROPERTY = "sql.streaming.queryId"
#: the one output mode the sink takes
SUPPORTED_MODE = "append"


@dataclasses.dataclass
class StreamWritten(WriterCommitMessage):
    """A micro-batch task's result: the batch writer's task result, the writer (it holds the
    transaction) and the streaming query's id."""

    written: Written
    writer: AcidWriter
    query_id: str


def sink_agent(table: str, checkpoint: str) -> str:
    """The agent string of the transactions of the streaming query writing ``table`` with
    checkpoint location ``checkpoint`` (the option's text): the table and a digest of it."""
    digest = hashlib.sha256(checkpoint.strip().encode()).hexdigest()[:16]
    return f"{AGENT} stream into {table} checkpoint {digest}"


class AcidStreamWriter(DataSourceStreamArrowWriter):
    """The ``acid`` streaming sink (module doc). Built by :meth:`open` in a planning worker
    and in a commit worker for every micro-batch."""

    def __init__(self, plan: WritePlan, agent_info: str) -> None:
        self.plan, self.agent_info = plan, agent_info
        self._writer: AcidWriter | None = None

    @classmethod
    def open(
        cls, settings: Settings, options: Mapping[str, str], schema: T.StructType, overwrite: bool
    ) -> "AcidStreamWriter":
        """Check the output mode, options and schema; opens nothing.

        Args:
            overwrite: Spark's complete output mode (refused).
        Raises:
            AcidDataSourceError: complete output mode (Spark itself refuses update mode for
                Python sinks); no ``checkpointLocation`` option; ``txnAppId`` / ``txnVersion``
                (the query id and batch id take their place); a bad ``onExisting``.
            SchemaMismatchError; TableOptionConflictError (a missing table is created
                first, :mod:`acidflow.datasource.create`).
        """
        opts = checked_options(options)
        name = table_name(opts)
        if overwrite:
            raise AcidDataSourceError(
                f"acid data source, table {name}: a streaming write supports output mode "
                f"{SUPPORTED_MODE} only (complete mode would replace the table every "
                "micro-batch); write with outputMode('append')"
            )
        given = sorted(k for k in ("txnappid", "txnversion") if k in opts)
        if given:
            raise AcidDataSourceError(
                f"acid data source, table {name}: option(s) {', '.join(given)} are for batch "
                "writes; a streaming write is applied once per (query id, batch id) by itself"
            )
        checkpoint = opts.get("checkpointlocation", "").strip()
        if not checkpoint:
            raise AcidDataSourceError(
                f"acid data source, table {name}: a streaming write needs the option "
                "checkpointLocation (it tells the query's transactions apart)"
            )
        with open_catalog(settings, planning=True) as catalog:
            plan = WritePlan.checked(settings, catalog, opts, schema, False)
        return cls(plan, sink_agent(plan.table.name, checkpoint))

    # ------------------------------------------------------------------ planning worker

    def __getstate__(self) -> dict[str, Any]:
        """The planning worker pickles the writer to the micro-batch's tasks: open the
        micro-batch's transaction now, once per writer (PySpark pickles it twice), and
        heartbeat it from this worker until it ends."""
        if self._writer is None:
            with open_catalog(self.plan.settings) as catalog:
                self._abort_leftovers(catalog, "a later micro-batch of the streaming query began")
                writer = AcidWriter.begin(catalog, self.plan, agent_info=self.agent_info)
            assert isinstance(writer, AcidWriter)  # no batch claimed: never AppliedWriter
            txn_id = writer.txn_id
            Heartbeat(self.plan.settings, lambda c: beat_txn(c, txn_id)).start()
            self._writer = writer
        return dict(self.__dict__)

    # ------------------------------------------------------------------ tasks

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamWritten:
        """Spark task side: :meth:`AcidWriter.write` in the micro-batch's transaction.

        Raises:
            AcidDataSourceError: not a task of a streaming query.
            SchemaMismatchError; ExistingKeysError (see :meth:`AcidWriter.write`).
        """
        ctx = TaskContext.get()
        query_id = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
        if self._writer is None or not query_id:
            raise AcidDataSourceError(
                f"acid data source, table {self.plan.table.name}: the stream writer runs in "
                "the tasks of a streaming query's micro-batch only"
            )
        return StreamWritten(self._writer.write(iterator), self._writer, query_id)

    # ------------------------------------------------------------------ commit worker

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """Every task succeeded: claim ``(query id, batchId)`` and commit in the micro-batch's
        transaction; a batch id already applied commits nothing (module doc).

        Raises:
            ExistingKeysError; WriteConflictError; BatchInProgressError (the micro-batch is
            discarded and the query fails).
        """
        done = [m for m in messages if isinstance(m, StreamWritten)]
        with open_catalog(self.plan.settings) as catalog:
            if not done:
                self._abort_leftovers(catalog, f"micro-batch {batchId} ran no write task")
                return
            writer, query_id = done[0].writer, done[0].query_id
            table = writer.table.name
            last = applied_version(catalog, table, query_id)
        written = [m.written for m in done]
        if last is not None and batchId <= last:
            writer.discard(written, f"micro-batch {batchId} already applied")
            log.warning(
                "acid data source, table %s: micro-batch %d of streaming query %s is already "
                "applied (last applied batch %d); nothing committed",
                table,
                batchId,
                query_id,
                last,
            )
            return
        if not writer.finish(written, batch_record(table, query_id, batchId)):
            log.warning(
                "acid data source, table %s: micro-batch %d of streaming query %s was applied "
                "by another transaction; nothing committed",
                table,
                batchId,
                query_id,
            )

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - PySpark's name
        """A task failed (or the query stopped): abort the micro-batch's transaction and
        remove the files of the tasks that finished."""
        done = [m for m in messages if isinstance(m, StreamWritten)]
        reason = f"micro-batch {batchId} of the streaming query failed"
        if done:
            done[0].writer.discard([m.written for m in done], reason)
        with open_catalog(self.plan.settings) as catalog:
            self._abort_leftovers(catalog, reason)

    def _abort_leftovers(self, catalog: Catalog, reason: str) -> None:
        """Abort the open transactions of this query's sink (its agent string): the one a
        micro-batch without messages leaves, or a crashed run's. Their files stay invisible
        and the cleaner removes them."""
        for txn in catalog.list_transactions([TxnState.OPEN]):
            if txn.agent_info == self.agent_info:
                try:
                    catalog.abort_transaction(txn.txn_id, reason)
                except TxnNotOpenError:  # it committed meanwhile: not a leftover
                    pass
