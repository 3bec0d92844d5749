"""The ``thrift://`` catalog's compaction queue: acidflow's side queue linked to the Hive
metastore's (docs/hms-catalog.md, "Compaction").

The side catalog's queue stays the source of truth for acidflow (states, verification
records, details); with the metastore's database (``metastore_db``) every side entry that runs
is also an entry of Hive's ``COMPACTION_QUEUE`` (``CompactionInfo.metastore_cq_id``), moved
through Hive's states right after each side step:

=========================  ====================================================
side step                  metastore (:mod:`acidflow.catalog.hms.hivequeue`)
=========================  ====================================================
enqueue (acidflow's own)   ``compact2`` (Hive assigns ``CQ_ID``, state 'i')
adopt (Hive's request)     a side entry linked to the 'i' entry
claim                      'i' -> 'w' (conditional: one claimer wins)
highest write id           ``CQ_HIGHEST_WRITE_ID``
ready for cleaning         'w' -> 'r'
succeeded (cleaner)        -> ``COMPLETED_COMPACTIONS`` 's'
failed                     -> ``COMPLETED_COMPACTIONS`` 'f' (error in meta info)
reclaimed (dead worker)    'w' -> 'i'
=========================  ====================================================

A metastore statement that fails after its side step is logged and the Hive entry keeps its
state (the side entry decides what acidflow does; ``SHOW COMPACTIONS`` lags).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import parse_qs, urlparse

from pymetastore.hive_metastore.ttypes import CompactionRequest, ShowCompactRequest

from acidflow.catalog.errors import CatalogError
from acidflow.catalog.hms.client import MetastoreConnection
from acidflow.catalog.hms.hivequeue import HiveQueueDatabase, MetastoreQueueError
from acidflow.catalog.hms.queuerules import (
    HIVE_STATE,
    HiveQueueEntry,
    from_show_compact,
    hive_job_id,
    hive_type,
    requests_to_adopt,
    waiting_reason,
)
from acidflow.catalog.records import (
    CompactionInfo,
    CompactionState,
    MetastoreCompactionRequest,
)
from acidflow.catalog.sql import SqlCatalog
from acidflow.catalog.tabledef import split_table_name

log = logging.getLogger(__name__)

__all__ = ["NO_METASTORE_DB", "MetastoreQueueLink", "metastore_db_param"]

#: Why a Hive request waits on a catalog without the metastore's database.
NO_METASTORE_DB = (
    "no metastore_db configured on the thrift:// catalog (acidflow claims Hive's entries on "
    "the metastore's database, as Hive 3.1's worker does; set ?metastore_db=<SQLAlchemy URL> "
    "or ACIDFLOW_HMS_METASTORE_DB) and Hive's own compactor should be off"
)


def metastore_db_param(url: str, metastore_db: str | None) -> str | None:
    """The metastore database's SQLAlchemy URL given with the catalog (``metastore_db``, else
    the thrift URL's ``metastore_db`` query parameter), ``None`` when neither is set (the
    catalog then reads ``ACIDFLOW_HMS_METASTORE_DB``, :func:`acidflow.config.load_metastore_db`)."""
    if metastore_db:
        return metastore_db
    found = parse_qs(urlparse(url).query).get("metastore_db")
    return found[0] if found else None


class MetastoreQueueLink:
    """Moves the metastore's compaction queue along with the side's (module doc).

    Args:
        conn: the thrift connection (``compact2``, ``show_compact``).
        side: the side catalog (its queue is acidflow's).
        db: the metastore's database, ``None`` without ``metastore_db`` (then only
            :meth:`requests` reports Hive's entries, as waiting).
        table_refusal: ``name -> None`` when acidflow can compact the table, else the reason
            (the catalog's ``get_table`` refusal).
    """

    def __init__(
        self,
        conn: MetastoreConnection,
        side: SqlCatalog,
        db: HiveQueueDatabase | None,
        table_refusal: Callable[[str], str | None],
    ) -> None:
        self.conn, self.side, self.db = conn, side, db
        self.table_refusal = table_refusal

    def close(self) -> None:
        """Release the metastore database's pool."""
        if self.db is not None:
            self.db.close()

    # -- enqueue and adopt ------------------------------------------------------------------
    def enqueued(self, info: CompactionInfo) -> CompactionInfo:
        """After the side queued ``info``: with ``metastore_db``, queue it in Hive too with
        ``compact2`` (as ``ALTER TABLE ... COMPACT`` does) and link the side entry to the
        ``CQ_ID`` Hive answers - Hive's own if it already had an initiated or working entry
        for the partition (``accepted=false``), which acidflow then runs."""
        if (
            self.db is None
            or info.state != CompactionState.INITIATED
            or info.metastore_cq_id is not None
        ):
            return info
        db, tbl = split_table_name(info.table)
        resp = self.conn.call(
            "compact2",
            CompactionRequest(
                dbname=db,
                tablename=tbl,
                partitionname=info.partition,
                type=hive_type(info.type),
                runas=info.requester,
                properties={str(k): str(v) for k, v in (info.properties or {}).items()},
            ),
        )
        return self.side.link_metastore_compaction(info.id, int(resp.id))

    def _hive_entries(self) -> list[HiveQueueEntry]:
        resp = self.conn.call("show_compact", ShowCompactRequest())
        return [from_show_compact(e) for e in resp.compacts or []]

    def requests(self, adopt: bool = True) -> list[MetastoreCompactionRequest]:
        """Hive's ``initiated`` entries no side entry is linked to: adopted (a linked side
        entry) with ``metastore_db`` and ``adopt``, else reported with why they wait."""
        linked = {  # a failed side entry gives its Hive entry up (claim refused, database down)
            c.metastore_cq_id
            for c in self.side.list_compactions()
            if c.metastore_cq_id and c.state != CompactionState.FAILED
        }
        out = []
        for e in requests_to_adopt(self._hive_entries(), linked):
            who = e.run_as or "hive"
            refusal = self.table_refusal(e.table)
            why = NO_METASTORE_DB if self.db is None else refusal
            if why is None and adopt:
                info = self.side.enqueue_compaction(e.table, e.partition, e.type, requester=who)
                if info.state == CompactionState.INITIATED and info.metastore_cq_id is None:
                    self.side.link_metastore_compaction(info.id, e.metastore_cq_id)
                    reason = f"Hive compaction request CQ_ID {e.metastore_cq_id} queued"
                    out.append(self._request(e, who, info.id, reason))
                    continue
                why = f"acidflow's entry {info.id} for the partition is {info.state} first"
            elif why is None:
                why = "dry run"
            out.append(self._request(e, who, None, waiting_reason(e, why)))
        return out

    def adopt_before_claim(self) -> None:
        """Adopt Hive's waiting requests before a worker claims (with ``metastore_db``); a
        failure to list or adopt them is logged and never stops acidflow's own entries being
        claimed."""
        if self.db is None:
            return
        try:
            self.requests()
        except (CatalogError, MetastoreQueueError) as exc:
            log.warning("Hive's compaction requests not adopted this time: %s", exc)

    @staticmethod
    def _request(
        e: HiveQueueEntry, who: str, queued: int | None, reason: str
    ) -> MetastoreCompactionRequest:
        return MetastoreCompactionRequest(
            e.metastore_cq_id, e.table, e.partition, e.type, who, queued, reason
        )

    # -- state moves ------------------------------------------------------------------------
    def claimed(self, info: CompactionInfo, worker_id: str) -> bool:
        """After the side's claim: take the metastore's entry too (conditional on 'i'). False
        when another worker took it first: the side entry is then failed, naming it."""
        if self.db is None or info.metastore_cq_id is None:
            return True
        try:
            if self.db.claim(info.metastore_cq_id, worker_id, info.id):
                return True
        except MetastoreQueueError as exc:  # nothing half-claimed: the side entry fails too
            self.side.mark_compaction_failed(
                info.id,
                f"compaction {info.id} of {info.table}: the metastore's entry CQ_ID "
                f"{info.metastore_cq_id} could not be claimed: {exc}; the next initiator pass "
                "queues Hive's entry again",
            )
            return False
        self.side.mark_compaction_failed(
            info.id,
            f"compaction {info.id} of {info.table}: the metastore's entry CQ_ID "
            f"{info.metastore_cq_id} was claimed by another worker (Hive's compactor?) or is "
            "gone; acidflow leaves it to that worker",
        )
        return False

    def _quietly(
        self, cq_id: int, what: str, fn: Callable[[HiveQueueDatabase, int], object]
    ) -> None:
        if self.db is None:
            return
        info = self.side.get_compaction(cq_id)
        if info.metastore_cq_id is None:
            return
        try:
            moved = fn(self.db, info.metastore_cq_id)
        except (MetastoreQueueError, CatalogError) as exc:
            log.warning("compaction %s: metastore entry not moved to %s: %s", cq_id, what, exc)
            return
        if moved is False:  # not under this entry's claim any more (or already finished)
            log.warning(
                "compaction %s: metastore entry CQ_ID %s not moved to %s: it is no longer "
                "under acidflow's claim %s",
                cq_id,
                info.metastore_cq_id,
                what,
                hive_job_id(cq_id),
            )

    def highest_write_id(self, cq_id: int, highest_write_id: int) -> None:
        """``CQ_HIGHEST_WRITE_ID`` of the linked entry."""
        self._quietly(
            cq_id,
            "its highest write id",
            lambda db, h: db.set_highest_write_id(h, highest_write_id),
        )

    def ready_for_cleaning(self, cq_id: int, highest_write_id: int) -> None:
        """The linked entry 'w' -> 'r' (Hive ``markCompacted``)."""
        self._quietly(
            cq_id,
            CompactionState.READY_FOR_CLEANING,
            lambda db, h: db.mark_compacted(h, highest_write_id, cq_id),
        )

    def finished(self, cq_id: int, state: str, error: str | None = None) -> None:
        """The linked entry to ``COMPLETED_COMPACTIONS`` as ``state`` (``succeeded`` /
        ``failed``; Hive ``markCleaned`` / ``markFailed``)."""
        self._quietly(cq_id, state, lambda db, h: db.finish(h, HIVE_STATE[state], cq_id, error))

    @staticmethod
    def _revoker(side_id: int) -> Callable[[HiveQueueDatabase, int], object]:
        """``revoke`` of the linked entry under side entry ``side_id``'s claim."""
        return lambda db, h: db.revoke(h, side_id)

    def reclaimed(self, cq_ids: list[int]) -> None:
        """The linked entries of reclaimed side entries back to 'i'."""
        for cq_id in cq_ids:
            self._quietly(cq_id, CompactionState.INITIATED, self._revoker(cq_id))
