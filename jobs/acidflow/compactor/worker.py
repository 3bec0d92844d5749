"""The worker: takes a queue entry and runs its compaction (Hive ``Worker.run`` ->
``CompactorMR``), as a Spark job.

Steps for one entry:

1. claim it (``initiated`` -> ``working``; a transaction of its own is opened for it);
2. heartbeat entry and transaction from a daemon thread every
   ``acidflow.compactor.heartbeat.seconds``; a worker that dies stops heartbeating and
   :meth:`Catalog.reclaim_dead_compactions` puts the entry back in the queue after
   ``worker_timeout_s``;
3. take the table's ValidWriteIdList and turn it into the compactor's
   (``ValidCompactorWriteIdList``: high watermark = lowest open write id - 1, aborted ids as
   exceptions) and record that high watermark on the entry;
4. rewrite, verify and publish with :func:`acidflow.maintenance.compaction.compact_partition`
   (after minor compactions of slices when the partition has more deltas than
   ``hive.compactor.max.num.delta``, :mod:`acidflow.maintenance.slices`):
   its inputs are checked against the catalog's file records first (a missing or truncated
   input fails the entry, naming the file; nothing is written), the output's rows against
   what the inputs' records imply, and the output's files are recorded before publishing;
5. commit the compaction's transaction and set ``ready for cleaning`` -- or ``failed`` with the
   error (the table is left as it was: nothing is published before verification passed).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from acidflow.catalog import Catalog, CompactionStateError
from acidflow.catalog.records import CompactionState
from acidflow.compactor.config import CompactorConfig
from acidflow.maintenance import compaction, slices
from acidflow.storage.retention import retention_policy

if TYPE_CHECKING:  # annotations only: the worker runs without Spark when spark is None
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def default_worker_id() -> str:
    """``<host>-<pid>-<thread id>`` (Hive's worker id is ``<host>-<thread>``)."""
    return f"{socket.gethostname()}-{os.getpid()}-{threading.get_ident() % 100000}"


class _Heartbeat:
    """Daemon thread calling ``catalog.heartbeat_compaction(cq_id)`` every ``period_s``; if
    the entry stops being ``working`` (reclaimed), ``lost`` is set."""

    def __init__(self, catalog: Catalog, cq_id: int, period_s: float) -> None:
        self.catalog, self.cq_id, self.period_s = catalog, cq_id, period_s
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"cq-{cq_id}-heartbeat")

    def start(self) -> "_Heartbeat":
        if self.period_s > 0:
            self._thread.start()
        return self

    def beat(self) -> None:
        """Heartbeat now; raises CompactionStateError when the entry was taken away."""
        try:
            self.catalog.heartbeat_compaction(self.cq_id)
        except CompactionStateError:
            self.lost.set()
            raise

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self.beat()
            except CompactionStateError:
                return
            except Exception as exc:  # noqa: BLE001 - logged; the next beat retries
                log.warning("heartbeat of compaction %s failed: %s", self.cq_id, exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


@dataclass
class WorkerOutcome:
    """What a worker did with one entry.

    Attributes:
        cq_id: the entry; state: its state afterwards (``ready for cleaning`` or ``failed``).
        report: the compaction report (``CompactionResult.to_dict()``) or ``{"error": ...}``.
    """

    cq_id: int
    state: str
    report: dict

    def to_dict(self) -> dict:
        """JSON-able dict."""
        return {"id": self.cq_id, "state": self.state, "report": self.report}


def run_worker(
    spark: SparkSession | None,
    catalog: Catalog,
    *,
    cq_id: int | None = None,
    worker_id: str | None = None,
    config: CompactorConfig | None = None,
    tamper: Callable[[str], Any] | None = None,
) -> WorkerOutcome | None:
    """Claim one entry (``cq_id`` or the oldest claimable) and compact it.

    Args:
        spark: SparkSession (None runs the tasks in this process).
        catalog: ``acidflow.catalog.Catalog``.
        cq_id: run exactly this entry (it must be ``initiated``).
        worker_id: default :func:`default_worker_id`.
        config: settings (default ``CompactorConfig.from_env()``); request properties of the
            entry override it.
        tamper: test hook passed to ``compact_partition`` (corrupt output before verification).
    Returns:
        :class:`WorkerOutcome`, or ``None`` when nothing was claimable.
    Raises:
        Nothing for compaction errors (they mark the entry failed); catalog errors propagate.
    """
    cfg = config or CompactorConfig.from_env()
    wid = worker_id or default_worker_id()
    catalog.reclaim_dead_compactions(cfg.worker_timeout_s)
    entry = catalog.claim_compaction(wid, cq_id)
    if entry is None:
        return None
    hb = _Heartbeat(catalog, entry.id, cfg.with_properties(entry.properties).heartbeat_s).start()
    try:
        table = catalog.get_table(entry.table)
        # table properties (compactorthreshold.*, acidflow.target.file.bytes), then the request's
        cfg = cfg.with_properties(table.properties, table=True).with_properties(entry.properties)
        # only what every open transaction can see (their reads use the snapshot of their open)
        valid = catalog.compactor_valid_write_ids(table.name)
        cvalid = valid.for_compactor()
        # the schema version of the covered write ids (a compaction below a schema
        # change that has not committed, or that an open transaction cannot see yet, keeps
        # that version's layout; above a widening it writes the new type)
        table.columns = catalog.schema_for(table, cvalid)
        catalog.update_compaction(
            entry.id,
            highest_write_id=cvalid.high_watermark,
            details={"worker_id": wid, "valid_write_ids": str(cvalid)},
        )
        policy = retention_policy(table.name, table.properties)  # history
        txn_id = entry.txn_id
        if txn_id is None:  # pragma: no cover - claim_compaction opens it
            raise compaction.CompactionError(f"compaction {entry.id} has no transaction")
        # more deltas than hive.compactor.max.num.delta: minor slices first (Hive CompactorMR)
        result = slices.compact_partition_sliced(
            spark,
            table,
            entry.partition or "",
            entry.type,
            valid,
            cq_id=entry.id,
            max_num_delta=cfg.max_num_delta,
            target_stripe_bytes=cfg.target_stripe_bytes,
            heartbeat=hb.beat,
            tamper=tamper,
            target_file_bytes=cfg.target_file_bytes,
            verify=cfg.verify,
            # a savepoint reads below a new base like a retained snapshot does
            record_history=policy.commits > 0
            or policy.hours > 0
            or bool(catalog.list_savepoints(table.name)),
            visibility_txn_id=entry.txn_id,
            txn_state=catalog.visibility_lookup(),
            # inputs checked against their records; the output recorded under the
            # compaction's transaction (it counts once that commits)
            file_records=catalog.data_file_records(table.name, entry.partition or ""),
            record_files=lambda recs: catalog.record_data_files(txn_id, table.name, recs),
        )  # object stores: output named _v<txn_id>
        hb.stop()
        report = result.to_dict()
        catalog.mark_compaction_ready_for_cleaning(entry.id, cvalid.high_watermark, report)
        return WorkerOutcome(entry.id, CompactionState.READY_FOR_CLEANING, report)
    except CompactionStateError as exc:
        hb.stop()
        # the entry was reclaimed by someone else: leave it alone
        return WorkerOutcome(entry.id, catalog.get_compaction(entry.id).state, {"error": str(exc)})
    except Exception as exc:  # noqa: BLE001 - the entry records the failure
        hb.stop()
        error = f"{type(exc).__name__}: {exc}"
        report = {"error": error, "traceback": traceback.format_exc(limit=8)}
        if isinstance(exc, compaction.VerificationError):
            report["before"] = exc.before.to_dict()
            report["after"] = exc.after.to_dict()
        try:
            catalog.mark_compaction_failed(entry.id, error, report)
        except CompactionStateError:
            pass
        return WorkerOutcome(entry.id, CompactionState.FAILED, report)


def run_queue(
    spark: SparkSession | None,
    catalog: Catalog,
    *,
    worker_id: str | None = None,
    config: CompactorConfig | None = None,
    limit: int | None = None,
) -> list[WorkerOutcome]:
    """Run claimable entries one after the other until the queue has none left (or ``limit``
    entries ran)."""
    out: list[WorkerOutcome] = []
    while limit is None or len(out) < limit:
        res = run_worker(spark, catalog, worker_id=worker_id, config=config)
        if res is None:
            break
        out.append(res)
    return out
