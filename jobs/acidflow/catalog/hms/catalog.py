"""``HiveMetastoreCatalog``: the :class:`~acidflow.catalog.base.Catalog` interface on a real Hive
3.1 metastore over thrift, with a small SQL side catalog for what Hive has no place for.

What lives where (docs/hms-catalog.md has the whole design):

* the metastore (the source of truth for Hive, Trino and Spark-with-metastore): databases,
  tables with Hive's storage descriptor for transactional ORC (:mod:`.tables`), partitions
  (``add_partitions`` when a write first touches one), transactions (``open_txns``,
  ``heartbeat``, ``commit_txn``, ``abort_txn``), write ids (``allocate_table_write_ids``),
  snapshots (``get_open_txns`` + ``get_valid_write_ids``), and each write's components
  (``add_dynamic_partitions`` for partitions, a ``SHARED_WRITE`` / ``SHARED_READ`` lock for
  whole-table writes, with ``DataOperationType`` INSERT/UPDATE/DELETE) so that Hive's own
  commit-time write-set check covers acidflow's writes against Hive's;
* the side catalog (a :class:`~acidflow.catalog.sql.SqlCatalog`, SQLite file
  ``<warehouse>/_acidflow_hms_side.db`` by default): mirror rows of the tables, transactions
  and write ids keyed by the metastore's ids (its ``TxnHooks`` take every id from the
  metastore), the key-level write set, commit records, the batch ledger and CDC tombstones, the
  compaction queue with its verification records, reader registrations, and acidflow's locks.

Commit: one side-database transaction runs the side's checks and records, then calls the
metastore's ``commit_txn`` as its last step (the visibility point) and commits only if that
succeeded. A process that dies between the two leaves the side transaction open; it is
reconciled from the metastore's transaction state when next read (:meth:`reconcile`).
"""

from __future__ import annotations

import getpass
import os
import threading
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

from pymetastore.hive_metastore.ttypes import (
    AddDynamicPartitions,
    AddPartitionsRequest,
    DataOperationType,
    GetValidWriteIdsRequest,
    HeartbeatRequest,
    LockComponent,
    LockLevel,
    LockRequest,
    LockType,
    NoSuchTxnException,
    Partition,
    TxnAbortedException,
)

from acidflow.catalog.base import Catalog
from acidflow.catalog.errors import (
    CatalogError,
    TxnAbortedError,
    TxnNotOpenError,
)
from acidflow.catalog.forward import forward
from acidflow.catalog.hms.client import (
    MetastoreConnection,
    aborted_write_ids,
    to_valid_write_ids,
    valid_txn_list,
)
from acidflow.catalog.hms.hivequeue import HiveQueueDatabase
from acidflow.catalog.hms.queuelink import MetastoreQueueLink, metastore_db_param
from acidflow.catalog.hms.snapshots import (
    compactor_txn_list,
    rebuilt_txn_list,
    split_open_txns,
    widen,
)
from acidflow.catalog.hms.tablerole import MetastoreTables
from acidflow.catalog.hms.tables import (
    location_uri,
)
from acidflow.catalog.hms.txns import (
    MetastoreTxnHooks,
    hive_abort_error,
)
from acidflow.catalog.records import (
    OPERATIONS,
    BatchInfo,
    CommitRecord,
    CompactionInfo,
    CompactionState,
    MetastoreCompactionRequest,
    ReaderInfo,
    SavepointInfo,
    TxnInfo,
    TxnState,
)
from acidflow.catalog.sql import SqlCatalog
from acidflow.catalog.tabledef import (
    TableDef,
    as_utc,
    parse_partition_spec,
)
from acidflow.catalog.warehouse import warehouse_root
from acidflow.config import MetastoreSecurity, load_metastore_db, load_settings
from acidflow.format.filerecords import FileRecord
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.timetravel import WriteIdHistory, snapshot_as_of

#: Default side catalog file under the warehouse.
SIDE_DB_NAME = "_acidflow_hms_side.db"

#: acidflow's component operations -> Hive's ``DataOperationType`` (an insert overwrite
#: rewrites the partition: Hive's write set treats it as an update).
HIVE_OPERATION = {
    "insert": DataOperationType.INSERT,
    "update": DataOperationType.UPDATE,
    "delete": DataOperationType.DELETE,
    "insert_overwrite": DataOperationType.UPDATE,
}


def side_url_of(url: str, warehouse: str, side_url: str | None) -> str:
    """The side catalog's SQLAlchemy URL: ``side_url``, else the ``side`` query parameter of
    the thrift URL (``thrift://h:9083?side=postgresql%2Bpsycopg2%3A%2F%2F...``), else the SQLite
    file ``<warehouse>/_acidflow_hms_side.db``."""
    if side_url:
        return side_url
    query = parse_qs(urlparse(url).query)
    if query.get("side"):
        return query["side"][0]
    return f"sqlite:///{Path(warehouse) / SIDE_DB_NAME}"


class HiveMetastoreCatalog(MetastoreTables):
    """The catalog on a Hive 3.1 metastore (``thrift://host:port``) plus a SQL side catalog.

    Args:
        url: ``thrift://host:port`` (optionally ``?side=<SQLAlchemy URL>`` and
            ``&metastore_db=<SQLAlchemy URL>``).
        warehouse: table root (default the settings'); new databases get the metastore
            location ``<warehouse>/<db>.db``.
        txn_timeout_s: the side's housekeeper timeout (keep it at or below the metastore's
            ``metastore.txn.timeout``; Hive's own housekeeper aborts at that one).
        migrate: migrate the side catalog's schema.
        side_url: the side catalog's SQLAlchemy URL (overrides the query parameter).
        timeout_ms: thrift socket timeout per call.
        security: SASL/Kerberos settings of the thrift connection (Hive
            ``hive.metastore.sasl.enabled`` ...); default the ``ACIDFLOW_HMS_*`` environment
            (:func:`acidflow.config.load_metastore_security`).
        metastore_db: the metastore's backing database (SQLAlchemy URL; overrides the query
            parameter, default ``ACIDFLOW_HMS_METASTORE_DB``): acidflow then claims and moves
            entries of Hive's ``COMPACTION_QUEUE`` as Hive 3.1's own worker does
            (docs/hms-catalog.md, "Compaction"); without it Hive's requests are reported as
            waiting.

    Raises:
        MetastoreUnreachableError: the metastore does not answer (names the URL) - raised by
            the constructor, before anything is written.
        MetastoreAuthError: Kerberos authentication failed (names the URL, the principals and
            the reason), also from the constructor.
        CatalogError: not a ``thrift://host:port`` URL.
    """

    def __init__(
        self,
        url: str,
        *,
        warehouse: str | None = None,
        txn_timeout_s: int = 300,
        migrate: bool = True,
        side_url: str | None = None,
        timeout_ms: int = 60_000,
        security: MetastoreSecurity | None = None,
        metastore_db: str | None = None,
    ) -> None:
        if warehouse is None:
            warehouse = load_settings().warehouse
        self.warehouse = warehouse_root(str(warehouse))
        self.txn_timeout_s = int(txn_timeout_s)
        parsed = urlparse(url)
        self.url = f"thrift://{parsed.hostname}:{parsed.port}" if parsed.port else url
        self.conn = MetastoreConnection(self.url, timeout_ms, security)  # connects: fails fast
        self.hooks = MetastoreTxnHooks(self.conn)
        self.side = SqlCatalog(
            side_url_of(url, self.warehouse, side_url),
            warehouse=self.warehouse,
            txn_timeout_s=self.txn_timeout_s,
            migrate=migrate,
            txn_hooks=self.hooks,
        )
        self._side_url = side_url_of(url, self.warehouse, side_url)
        self._owner = getpass.getuser()
        self._known_parts: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self._metastore_db = metastore_db_param(url, metastore_db)
        hive_db = self._metastore_db or load_metastore_db()
        self.queue = MetastoreQueueLink(
            self.conn, self.side, HiveQueueDatabase(hive_db) if hive_db else None, self._refusal
        )

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Hive: closes the thrift socket and the side catalog's pool."""
        self.conn.close()
        self.side.close()
        self.queue.close()

    def __repr__(self) -> str:
        return f"HiveMetastoreCatalog({self.url!r}, side={self.side.display_url()!r})"

    catalog_id = forward("side", SqlCatalog)

    def job_url(self) -> str:
        """The URL that makes the same catalog in another process (``ACIDFLOW_CATALOG_URL`` of
        a spark-submit job or a DAG run): the thrift URL, with ``?side=`` when the side
        catalog is not the default file of the warehouse (its password kept)."""
        params = (
            []
            if self._side_url == side_url_of(self.url, self.warehouse, None)
            else [f"side={quote(self._side_url, safe='')}"]
        )
        if self._metastore_db:
            params.append(f"metastore_db={quote(self._metastore_db, safe='')}")
        return f"{self.url}?{'&'.join(params)}" if params else self.url

    def describe(self) -> list[str]:
        """What Hive sees, one line per table of every database: the table, its partition
        count and its write-id high watermark with the open / aborted write ids
        (``get_valid_write_ids`` at the current snapshot)."""
        lines = [f"Hive metastore {self.url} sees:"]
        txns = self._txn_list(None)
        for db in sorted(self.conn.call("get_all_databases")):
            for tbl in sorted(self.conn.call("get_all_tables", db)):
                (ids,) = self.conn.call(
                    "get_valid_write_ids",
                    GetValidWriteIdsRequest(fullTableNames=[f"{db}.{tbl}"], validTxnList=txns),
                ).tblValidWriteIds
                v = to_valid_write_ids(ids)
                parts = len(self.conn.call("get_partition_names", db, tbl, -1))
                lines.append(
                    f"  {db}.{tbl}: write-id high watermark {v.high_watermark}, "
                    f"open {list(v.open_write_ids)}, aborted "
                    f"{list(v.aborted_write_ids)}, {parts} partitions"
                )
        return lines

    def display_url(self) -> str:
        return self.url

    def initialize(self, force: bool = False) -> str:
        self.side.initialize(force)
        return self.catalog_id()

    def current_revision(self) -> str | None:
        return self.side.current_revision()

    @property
    def engine(self) -> Any:
        """The side catalog's SQLAlchemy engine (tests and maintenance tools read acidflow's
        records there)."""
        return self.side.engine

    # -- transactions ------------------------------------------------------------------------
    def open_transaction(
        self, user: str | None = None, host: str | None = None, agent_info: str | None = None
    ) -> int:
        """Hive: the metastore's ``open_txns`` with a side mirror; the snapshot (``ValidTxnList``)
        taken at open is kept in this object."""
        return self.side.open_transaction(user, host, agent_info)

    def heartbeat(self, txn_id: int) -> None:
        """Hive: the side's heartbeat, then the metastore's; an abort there is mirrored on the side."""
        self.side.heartbeat(txn_id)
        try:
            self.conn.call("heartbeat", HeartbeatRequest(txnid=txn_id))
        except (TxnAbortedException, NoSuchTxnException) as exc:
            err = hive_abort_error(txn_id, str(getattr(exc, "message", exc)))
            self.side.abort_transaction(txn_id, err.reason)
            raise err from None

    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        """Hive: the metastore's ``allocate_table_write_ids``, mirrored on the side."""
        self.check_warehouse_owner()
        self.get_table(table_name)
        try:
            return self.side.allocate_write_id(txn_id, table_name)
        except TxnAbortedError as err:
            self._abort_quietly(txn_id, err.reason)
            raise

    def _abort_quietly(self, txn_id: int, reason: str) -> None:
        try:
            self.side.abort_transaction(txn_id, reason)
        except (TxnNotOpenError, CatalogError):
            pass

    def _ensure_partition(self, table: TableDef, spec: str) -> None:
        key = (table.db_name, table.table_name, spec)
        with self._lock:
            if key in self._known_parts:
                return
        hms = self._hms_table(table.db_name, table.table_name)
        sd = hms.sd
        sd.location = location_uri(str(Path(table.location) / spec))
        part = Partition(
            values=[v for _, v in parse_partition_spec(spec)],
            dbName=table.db_name,
            tableName=table.table_name,
            sd=sd,
            parameters={},
        )
        self.conn.call(
            "add_partitions_req",
            AddPartitionsRequest(
                dbName=table.db_name,
                tblName=table.table_name,
                parts=[part],
                ifNotExists=True,
                needResult=False,
            ),
        )
        with self._lock:
            self._known_parts.add(key)

    def add_component(
        self, txn_id: int, table_name: str, partition: str | None, operation: str
    ) -> None:
        """Hive: also in the metastore's ``TXN_COMPONENTS`` (for Hive's write-set check and cleaner)."""
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; expected one of {OPERATIONS}")
        table = self.get_table(table_name)
        self.side.add_component(txn_id, table_name, partition, operation)
        spec = (
            None
            if partition is None
            else "/".join(f"{k}={v}" for k, v in parse_partition_spec(partition))
        )
        write_id = self.side.get_transaction(txn_id).write_ids[table.name]
        # as Hive's DbTxnManager: a partition is created if new (add_partitions) and registered
        # with add_dynamic_partitions; a whole-table write takes a SHARED_WRITE (update, delete,
        # overwrite) or SHARED_READ (insert) table lock with the operation type
        try:
            if spec is not None:
                self._ensure_partition(table, spec)
                self.conn.call(
                    "add_dynamic_partitions",
                    AddDynamicPartitions(
                        txnid=txn_id,
                        writeid=write_id,
                        dbname=table.db_name,
                        tablename=table.table_name,
                        partitionnames=[spec],
                        operationType=HIVE_OPERATION[operation],
                    ),
                )
            else:
                kind = LockType.SHARED_READ if operation == "insert" else LockType.SHARED_WRITE
                self.conn.call(
                    "lock",
                    LockRequest(
                        component=[
                            LockComponent(
                                type=kind,
                                level=LockLevel.TABLE,
                                dbname=table.db_name,
                                tablename=table.table_name,
                                operationType=HIVE_OPERATION[operation],
                                isTransactional=True,
                                isDynamicPartitionWrite=False,
                            )
                        ],
                        txnid=txn_id,
                        user=self._owner,
                        hostname=self.hooks.host,
                        agentInfo=f"acidflow pid {os.getpid()}",
                    ),
                )
        except (TxnAbortedException, NoSuchTxnException) as exc:
            err = hive_abort_error(txn_id, str(getattr(exc, "message", exc)))
            self._abort_quietly(txn_id, err.reason)
            raise err from None

    add_write_keys = forward("side", SqlCatalog)
    purge_write_sets = forward("side", SqlCatalog)
    purge_commit_records = forward("side", SqlCatalog)
    purge_transactions = forward("side", SqlCatalog)

    def commit_transaction(
        self, txn_id: int, stats: dict[str, dict[str, Any]] | None = None
    ) -> int:
        """Hive: one side-database transaction whose last step is the metastore's ``commit_txn``
        (the visibility point)."""
        try:
            return self.side.commit_transaction(txn_id, stats)
        except TxnAbortedError as err:
            self._abort_quietly(txn_id, err.reason)  # side rolled back: mirror Hive's abort
            raise

    abort_transaction = forward("side", SqlCatalog)

    def reconcile(self, txn_ids: Iterable[int] | None = None) -> list[int]:
        """Bring side transactions that are open up to the metastore's state: aborted there
        (housekeeper timeout, ``abort_txn`` by another client) -> aborted on the side; gone
        from the metastore's open list (it committed while the side record was lost with a
        crashed process) -> committed on the side (its checks run again). Returns the ids
        changed."""
        wanted = set(txn_ids) if txn_ids is not None else None
        opened = [
            t.txn_id
            for t in self.side.list_transactions([TxnState.OPEN])
            if wanted is None or t.txn_id in wanted
        ]
        if not opened:
            return []
        resp = self.conn.call("get_open_txns")
        hive_open, hive_aborted = map(set, split_open_txns(resp))
        changed = []
        for txn in opened:
            if txn in hive_open:
                continue
            if txn in hive_aborted or txn > resp.txn_high_water_mark:
                self._abort_quietly(txn, "aborted by the Hive metastore (timed out)")
                changed.append(txn)
            else:  # committed in the metastore
                try:
                    self.side.commit_transaction(txn)
                except CatalogError:
                    pass
                changed.append(txn)
        return changed

    def get_transaction(self, txn_id: int) -> TxnInfo:
        info = self.side.get_transaction(txn_id)
        if info.state == TxnState.OPEN and self.reconcile([txn_id]):
            info = self.side.get_transaction(txn_id)
        return info

    def list_transactions(self, states: Iterable[str] | None = None) -> list[TxnInfo]:
        self.reconcile()
        return self.side.list_transactions(states)

    def abort_timed_out_transactions(self, now: datetime | None = None) -> list[int]:
        """Hive: plus the open side transactions the metastore aborted (:meth:`reconcile`,
        which also commits on the side those the metastore committed; those are not listed)."""
        ids = set(self.side.abort_timed_out_transactions(now))
        for txn in self.reconcile():
            if self.side.get_transaction(txn).state == TxnState.ABORTED:
                ids.add(txn)
        return sorted(ids)

    # -- write ids and snapshots ------------------------------------------------------------
    def _late(self, txn_id: int) -> list[int]:
        """Side transactions below ``txn_id`` that committed after it opened."""
        return [
            t.txn_id
            for t in self.side.list_transactions([TxnState.COMMITTED])
            if t.commit_id is not None and t.commit_id > txn_id and t.txn_id < txn_id
        ]

    def _txn_list(self, txn_id: int | None, current_txn: int | None = None) -> str:
        """The ValidTxnList to read with: the one ``txn_id`` took at open (kept by this
        object, else :func:`rebuilt_txn_list`), or, for ``txn_id=None``, the current one
        (without ``current_txn``, whose writes are then valid)."""
        if txn_id is None:
            return valid_txn_list(self.conn.call("get_open_txns"), current_txn)
        found = self.hooks.snapshots.get(txn_id)
        if found is not None:
            return found
        return rebuilt_txn_list(self.conn.call("get_open_txns"), txn_id, self._late(txn_id))

    def _hive_write_ids(self, name: str, txns: str) -> ValidWriteIdList:
        (ids,) = self.conn.call(
            "get_valid_write_ids", GetValidWriteIdsRequest(fullTableNames=[name], validTxnList=txns)
        ).tblValidWriteIds
        return to_valid_write_ids(ids)

    def valid_write_ids(
        self,
        table_name: str,
        txn_id: int | None = None,
        as_of_write_id: int | None = None,
        *,
        as_of_timestamp: datetime | None = None,
    ) -> ValidWriteIdList:
        """Hive: ``get_valid_write_ids`` over the snapshot's ``ValidTxnList``, widened (``widen``);
        time travel over :meth:`write_id_history`."""
        if as_of_write_id is not None and as_of_write_id < 0:
            raise ValueError(f"as_of_write_id must be >= 0, got {as_of_write_id}")
        table = self.get_table(table_name)
        if as_of_write_id is not None or as_of_timestamp is not None:
            if as_of_write_id is not None and as_of_timestamp is not None:
                raise ValueError("give as_of_write_id or as_of_timestamp, not both")
            current = self._hive_write_ids(table.name, self._txn_list(None))
            return snapshot_as_of(
                table.name,
                self._history(table.name, current),
                write_id=as_of_write_id,
                timestamp=None if as_of_timestamp is None else as_utc(as_of_timestamp),
                highest_allocated=current.high_watermark,
            )
        if txn_id is not None:
            self.side.get_transaction(txn_id)  # NoSuchTransactionError
        found = self._hive_write_ids(table.name, self._txn_list(txn_id))
        if txn_id is not None:
            found = widen(found, self._hive_write_ids(table.name, self._txn_list(None, txn_id)))
        return found

    def _history(self, name: str, current: ValidWriteIdList) -> list[WriteIdHistory]:
        """Write ids 1..high watermark of the metastore's current snapshot with their states
        there; commit ids and times of acidflow's own commits from the side catalog."""
        ours = {
            h.write_id: h for h in self.side.write_id_history(name) if h.state == TxnState.COMMITTED
        }
        out = []
        for w in range(1, current.high_watermark + 1):
            if current.is_write_id_aborted(w):
                out.append(WriteIdHistory(w, TxnState.ABORTED))
            elif current.is_write_id_open(w):
                out.append(WriteIdHistory(w, TxnState.OPEN))
            else:
                mine = ours.get(w)
                out.append(
                    WriteIdHistory(w, TxnState.COMMITTED)
                    if mine is None
                    else WriteIdHistory(w, TxnState.COMMITTED, mine.commit_seq, mine.committed_at)
                )
        return out

    def write_id_history(self, table_name: str) -> list[WriteIdHistory]:
        table = self.get_table(table_name)
        return self._history(table.name, self._hive_write_ids(table.name, self._txn_list(None)))

    def compactor_valid_write_ids(self, table_name: str) -> ValidWriteIdList:
        """Hive: over the metastore's open transactions (acidflow's and Hive's)."""
        table = self.get_table(table_name)
        resp = self.conn.call("get_open_txns")
        opened, _ = split_open_txns(resp)
        late_of = {min(opened): self._late(min(opened))} if opened else {}
        txns = compactor_txn_list(resp, late_of)
        if txns is None:
            return self.valid_write_ids(table.name)
        return self._hive_write_ids(table.name, txns)

    def write_id_states(self, table_name: str) -> list[tuple[int, int, str]]:
        self.get_table(table_name)
        return self.side.write_id_states(table_name)

    def commit_records(self, table_name: str) -> list[CommitRecord]:
        self.get_table(table_name)
        return self.side.commit_records(table_name)

    # -- locks (acidflow's lock table on the side) ------------------------------------------
    acquire_lock = forward("side", SqlCatalog)
    release_locks = forward("side", SqlCatalog)
    list_locks = forward("side", SqlCatalog)

    # -- batches and tombstones (side) -------------------------------------------------------
    def register_batch(
        self,
        txn_id: int,
        batch_id: str,
        kind: str,
        *,
        source: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> BatchInfo:
        self.reconcile()
        return self.side.register_batch(txn_id, batch_id, kind, source=source, details=details)

    get_batch = forward("side", SqlCatalog)
    list_batches = forward("side", SqlCatalog)
    newest_batch = forward("side", SqlCatalog)
    add_tombstones = forward("side", SqlCatalog)
    tombstones = forward("side", SqlCatalog)
    purge_tombstones = forward("side", SqlCatalog)
    purge_batches = forward("side", SqlCatalog)

    # -- compaction queue (side; its transactions are the metastore's) -----------------------
    def enqueue_compaction(
        self,
        table_name: str,
        partition: str | None,
        compaction_type: str,
        *,
        requester: str = "initiator",
        state: str = CompactionState.INITIATED,
        error: str | None = None,
        properties: dict[str, Any] | None = None,
    ) -> CompactionInfo:
        """Hive: with ``metastore_db`` also queued in the metastore (``compact2``, linked)."""
        self.get_table(table_name)
        info = self.side.enqueue_compaction(
            table_name,
            partition,
            compaction_type,
            requester=requester,
            state=state,
            error=error,
            properties=properties,
        )
        return self.queue.enqueued(info)

    def metastore_compaction_requests(
        self, *, adopt: bool = True
    ) -> list[MetastoreCompactionRequest]:
        return self.queue.requests(adopt)

    def _refusal(self, table_name: str) -> str | None:
        try:
            self.get_table(table_name)
        except CatalogError as exc:
            return str(exc)
        return None

    get_compaction = forward("side", SqlCatalog)
    list_compactions = forward("side", SqlCatalog)

    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        """Hive: adopts Hive's requests first; a linked entry is claimed in the metastore too,
        one another worker took there is failed on the side (queuelink.MetastoreQueueLink)."""
        self.check_warehouse_owner()
        self.queue.adopt_before_claim()
        while True:
            entry = self.side.claim_compaction(worker_id, cq_id)
            if entry is None or self.queue.claimed(entry, worker_id):
                return entry
            if cq_id is not None:
                return None

    def heartbeat_compaction(self, cq_id: int) -> None:
        self.side.heartbeat_compaction(cq_id)
        txn = self.side.get_compaction(cq_id).txn_id
        if txn is not None:
            try:
                self.conn.call("heartbeat", HeartbeatRequest(txnid=txn))
            except (TxnAbortedException, NoSuchTxnException):
                pass  # the side entry decides; a reclaimed worker is told so by the side

    def update_compaction(
        self,
        cq_id: int,
        *,
        highest_write_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.side.update_compaction(cq_id, highest_write_id=highest_write_id, details=details)
        if highest_write_id is not None:
            self.queue.highest_write_id(cq_id, highest_write_id)

    def mark_compaction_ready_for_cleaning(
        self, cq_id: int, highest_write_id: int, details: dict[str, Any] | None = None
    ) -> int:
        commit_id = self.side.mark_compaction_ready_for_cleaning(cq_id, highest_write_id, details)
        self.queue.ready_for_cleaning(cq_id, highest_write_id)
        return commit_id

    def mark_compaction_succeeded(self, cq_id: int, details: dict[str, Any] | None = None) -> None:
        self.side.mark_compaction_succeeded(cq_id, details)
        self.queue.finished(cq_id, CompactionState.SUCCEEDED)

    def mark_compaction_failed(
        self, cq_id: int, error: str, details: dict[str, Any] | None = None
    ) -> None:
        self.side.mark_compaction_failed(cq_id, error, details)
        self.queue.finished(cq_id, CompactionState.FAILED, error)

    def reclaim_dead_compactions(
        self, timeout_s: float | None = None, now: datetime | None = None
    ) -> list[int]:
        ids = self.side.reclaim_dead_compactions(timeout_s, now)
        self.queue.reclaimed(ids)
        return ids

    compaction_history = forward("side", SqlCatalog)
    purge_compaction_history = forward("side", SqlCatalog)
    purge_completed_components = forward("side", SqlCatalog)

    def compaction_candidates(self) -> list[tuple[str, str | None, int]]:
        """Hive: plus every partition (or the table) of a table whose metastore high watermark is
        above acidflow's highest write id and that no compaction covered up to it."""
        found = {(n, p): w for n, p, w in self.side.compaction_candidates()}
        txns = self._txn_list(None)
        for table in self.side.list_tables():
            (ids,) = self.conn.call(
                "get_valid_write_ids",
                GetValidWriteIdsRequest(fullTableNames=[table.name], validTxnList=txns),
            ).tblValidWriteIds
            hwm = ids.writeIdHighWaterMark
            ours = max((w for w, _t, _s in self.side.write_id_states(table.name)), default=0)
            if hwm <= ours:
                continue
            parts: list[str | None] = [None]
            if table.partition_columns:
                parts = list(
                    self.conn.call("get_partition_names", table.db_name, table.table_name, -1)
                )
            for part in parts:
                covered = max(
                    (
                        c.highest_write_id or 0
                        for c in self.side.compaction_history(table.name, part)
                        if c.state
                        in (CompactionState.READY_FOR_CLEANING, CompactionState.SUCCEEDED)
                    ),
                    default=0,
                )
                if hwm > covered:
                    found[(table.name, part)] = max(found.get((table.name, part), 0), hwm)
        return sorted(((n, p, w) for (n, p), w in found.items()), key=lambda x: (x[0], x[1] or ""))

    def aborted_write_ids(
        self, table_name: str, partition: str | None = None, *, any_partition: bool = False
    ) -> list[int]:
        """Hive: with ``any_partition`` also every write id the metastore lists as aborted."""
        found = set(self.side.aborted_write_ids(table_name, partition, any_partition=any_partition))
        if any_partition:
            table = self.get_table(table_name)
            (ids,) = self.conn.call(
                "get_valid_write_ids",
                GetValidWriteIdsRequest(
                    fullTableNames=[table.name], validTxnList=self._txn_list(None)
                ),
            ).tblValidWriteIds
            found.update(aborted_write_ids(list(ids.invalidWriteIds or []), ids.abortedBits))
        return sorted(found)

    forget_aborted_components = forward("side", SqlCatalog)

    # -- readers (side; the cleaner also waits for the metastore's open transactions) --------
    def register_reader(
        self,
        table_name: str,
        valid_write_ids: ValidWriteIdList | None = None,
        *,
        agent_info: str | None = None,
    ) -> ReaderInfo:
        self.get_table(table_name)
        return self.side.register_reader(table_name, valid_write_ids, agent_info=agent_info)

    set_reader_snapshot = forward("side", SqlCatalog)
    heartbeat_reader = forward("side", SqlCatalog)
    unregister_reader = forward("side", SqlCatalog)
    list_readers = forward("side", SqlCatalog)
    purge_expired_readers = forward("side", SqlCatalog)

    def blocking_readers(
        self,
        table_name: str,
        commit_id: int,
        *,
        timeout_s: float | None = None,
        now: datetime | None = None,
    ) -> dict[str, list[int]]:
        """Hive: the open transactions are the metastore's (Hive's own readers and writers too)."""
        found = self.side.blocking_readers(table_name, commit_id, timeout_s=timeout_s, now=now)
        hive = {t for t in split_open_txns(self.conn.call("get_open_txns"))[0] if t < commit_id}
        return {"readers": found["readers"], "txns": sorted(set(found["txns"]) | hive)}

    # -- data file records (side; its transactions mirror the metastore's) -------------------
    record_data_files = forward("side", SqlCatalog)
    mark_data_files_lost = forward("side", SqlCatalog)
    forget_data_files = forward("side", SqlCatalog)

    def data_file_records(self, table_name: str, partition: str | None = None) -> list[FileRecord]:
        self.get_table(table_name)
        return self.side.data_file_records(table_name, partition)

    # -- savepoints (side, as the commit records they keep) ----------------------------------
    def add_savepoint(
        self,
        table_name: str,
        name: str,
        write_id: int,
        valid_write_ids: ValidWriteIdList,
        *,
        created_by: str | None = None,
    ) -> SavepointInfo:
        self.get_table(table_name)
        return self.side.add_savepoint(
            table_name, name, write_id, valid_write_ids, created_by=created_by
        )

    def list_savepoints(self, table_name: str | None = None) -> list[SavepointInfo]:
        if table_name is not None:
            self.get_table(table_name)
        return self.side.list_savepoints(table_name)

    def drop_savepoint(self, table_name: str, name: str) -> SavepointInfo:
        self.get_table(table_name)
        return self.side.drop_savepoint(table_name, name)


def make_hms_catalog(
    url: str, *, warehouse: str | None = None, migrate: bool = True, **kwargs: Any
) -> Catalog:
    """The :func:`acidflow.catalog.base.register_backend` factory for ``thrift://`` URLs."""
    return HiveMetastoreCatalog(url, warehouse=warehouse, migrate=migrate, **kwargs)


__all__ = ["HiveMetastoreCatalog", "make_hms_catalog", "side_url_of"]
