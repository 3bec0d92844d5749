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
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

from pymetastore.hive_metastore.ttypes import (
    AddDynamicPartitions,
    AddPartitionsRequest,
    AlreadyExistsException,
    ClientCapabilities,
    ClientCapability,
    Database,
    DataOperationType,
    EnvironmentContext,
    GetTableRequest,
    GetValidWriteIdsRequest,
    HeartbeatRequest,
    InvalidOperationException,
    LockComponent,
    LockLevel,
    LockRequest,
    LockType,
    NoSuchObjectException,
    NoSuchTxnException,
    Partition,
    TxnAbortedException,
)

from acidflow.catalog.base import Catalog
from acidflow.catalog.errors import (
    CatalogError,
    NoSuchTableError,
    TableExistsError,
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
from acidflow.catalog.hms.snapshots import (
    compactor_txn_list,
    rebuilt_txn_list,
    split_open_txns,
    widen,
)
from acidflow.catalog.hms.tables import (
    check_acid_orc,
    from_hms_table,
    location_uri,
    to_hms_table,
    update_hms_table,
)
from acidflow.catalog.hms.txns import (
    MetastoreTxnHooks,
    hive_abort_error,
    replay_write_ids,
)
from acidflow.catalog.records import (
    OPERATIONS,
    BatchInfo,
    CommitRecord,
    CompactionInfo,
    CompactionState,
    ReaderInfo,
    TxnInfo,
    TxnState,
)
from acidflow.catalog.schemahistory import SchemaVersion
from acidflow.catalog.sql import SqlCatalog
from acidflow.catalog.sql.schemahistory import check_columns
from acidflow.catalog.tabledef import (
    Column,
    TableDef,
    parse_partition_spec,
    split_table_name,
)
from acidflow.catalog.warehouse import warehouse_root
from acidflow.config import load_settings
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.schemaevolution import SchemaChangeError
from acidflow.storage.adoption import check_adoptable

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


#: The longest write-id history :meth:`HiveMetastoreCatalog.adopt_table` replays into a new
#: metastore table (one metastore transaction per write id, opened in batches of
#: ``metastore.txn.max.open.batch`` = 1000, Hive's default).
ADOPT_REPLAY_LIMIT = 10_000


class HiveMetastoreCatalog(Catalog):
    """The catalog on a Hive 3.1 metastore (``thrift://host:port``) plus a SQL side catalog.

    Args:
        url: ``thrift://host:port`` (optionally ``?side=<SQLAlchemy URL>``).
        warehouse: table root (default the settings'); new databases get the metastore
            location ``<warehouse>/<db>.db``.
        txn_timeout_s: the side's housekeeper timeout (keep it at or below the metastore's
            ``metastore.txn.timeout``; Hive's own housekeeper aborts at that one).
        migrate: migrate the side catalog's schema.
        side_url: the side catalog's SQLAlchemy URL (overrides the query parameter).
        timeout_ms: thrift socket timeout per call.

    Raises:
        MetastoreUnreachableError: the metastore does not answer (names the URL) - raised by
            the constructor, before anything is written.
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
    ) -> None:
        if warehouse is None:
            warehouse = load_settings().warehouse
        self.warehouse = warehouse_root(str(warehouse))
        self.txn_timeout_s = int(txn_timeout_s)
        parsed = urlparse(url)
        self.url = f"thrift://{parsed.hostname}:{parsed.port}" if parsed.port else url
        self.conn = MetastoreConnection(self.url, timeout_ms)  # connects: fails fast
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
        self.register_visibility()  # after the side catalog's: the metastore's txn ids win

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the thrift socket and the side catalog's pool (both reopen on demand)."""
        self.conn.close()
        self.side.close()

    def __repr__(self) -> str:
        return f"HiveMetastoreCatalog({self.url!r}, side={self.side.display_url()!r})"

    catalog_id = forward("side", SqlCatalog)

    def job_url(self) -> str:
        """The URL that makes the same catalog in another process (``ACIDFLOW_CATALOG_URL`` of
        a spark-submit job or a DAG run): the thrift URL, with ``?side=`` when the side
        catalog is not the default file of the warehouse (its password kept)."""
        if self._side_url == side_url_of(self.url, self.warehouse, None):
            return self.url
        return f"{self.url}?side={quote(self._side_url, safe='')}"

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
        """The side catalog's Alembic revision (the metastore's schema is Hive's)."""
        return self.side.current_revision()

    @property
    def engine(self) -> Any:
        """The side catalog's SQLAlchemy engine (tests and maintenance tools read acidflow's
        records there)."""
        return self.side.engine

    # -- tables ------------------------------------------------------------------------------
    def _hms_table(self, db: str, tbl: str) -> Any:
        """The metastore's ``Table`` or ``None``. Asked with ``get_table_req`` declaring the
        insert-only capability, so that Hive answers with an insert-only table too (plain
        ``get_table`` refuses them) and :func:`check_acid_orc` can name the reason."""
        try:
            return self.conn.call(
                "get_table_req",
                GetTableRequest(
                    dbName=db,
                    tblName=tbl,
                    capabilities=ClientCapabilities(values=[ClientCapability.INSERT_ONLY_TABLES]),
                ),
            ).table
        except NoSuchObjectException:
            return None

    def _ensure_database(self, db: str) -> None:
        try:
            self.conn.call("get_database", db)
            return
        except NoSuchObjectException:
            pass
        try:
            self.conn.call(
                "create_database",
                Database(
                    name=db,
                    description=None,
                    parameters={},
                    locationUri=location_uri(str(Path(self.warehouse) / f"{db}.db")),
                ),
            )
        except AlreadyExistsException:
            pass

    def _mirror(self, hms: Any) -> TableDef:
        """The side catalog's definition of a metastore table, registering it on the side
        first when Hive made it (write ids keep coming from the metastore)."""
        name = f"{hms.dbName}.{hms.tableName}".lower()
        try:
            return self.side.get_table(name)
        except NoSuchTableError:
            pass
        table = from_hms_table(hms, self.warehouse)
        return self.side.create_table(table, if_not_exists=True)

    def create_table(
        self, table: TableDef | dict[str, Any], if_not_exists: bool = False
    ) -> TableDef:
        """Register the table in the metastore (Hive's storage descriptor for transactional
        ORC, see :mod:`acidflow.catalog.hms.tables`), then on the side. The metastore's
        ``create_table`` decides races between processes (``AlreadyExistsException`` for the
        loser); a side row older than the metastore's table (Hive dropped and someone made
        the table again) is replaced.

        Raises:
            ValueError: invalid definition or location; TableExistsError: the metastore has
            the name; NotAnAcidTableError: ``if_not_exists`` and the existing table is not
            ACID ORC.
        """
        table = TableDef.from_dict(table.to_dict() if isinstance(table, TableDef) else table)
        table.validate()
        db, tbl = split_table_name(table.name)
        table.location = self.side.location_of(table)
        self.check_warehouse_owner()
        self._ensure_database(db)
        try:
            self.conn.call("create_table", to_hms_table(table, self._owner))
        except AlreadyExistsException:
            if not if_not_exists:
                raise TableExistsError(table.name) from None
            return self.get_table(table.name)
        hms = self._hms_table(db, tbl)
        try:
            old = self.side.get_table(table.name)
            made = hms.createTime if hms is not None and hms.createTime else 0
            if old.created_at is not None and old.created_at.timestamp() < made - 1:
                self.side.drop_table(table.name)  # a mirror of a table Hive dropped
        except NoSuchTableError:
            pass
        try:
            return self.side.create_table(table, if_not_exists=True)
        except Exception:
            self.conn.call("drop_table", db, tbl, False)
            raise

    def get_table(self, name: str) -> TableDef:
        """The table's definition; the metastore must have it as a full-ACID ORC table.

        Raises:
            NoSuchTableError: unknown to the metastore.
            NotAnAcidTableError: the metastore's table is not transactional / not ORC
                (names the table and the reason).
        """
        db, tbl = split_table_name(name)
        hms = self._hms_table(db, tbl)
        if hms is None:
            raise NoSuchTableError(f"{db}.{tbl}")
        check_acid_orc(hms)
        return self._mirror(hms)

    def table_exists(self, name: str) -> bool:
        db, tbl = split_table_name(name)
        return self._hms_table(db, tbl) is not None

    def list_tables(self, db_name: str | None = None) -> list[TableDef]:
        """The metastore's full-ACID ORC tables (others are left out), sorted by name."""
        dbs = [db_name.lower()] if db_name else list(self.conn.call("get_all_databases"))
        out: list[TableDef] = []
        for db in dbs:
            try:
                names = self.conn.call("get_all_tables", db)
            except NoSuchObjectException:
                continue
            for tbl in names:
                hms = self._hms_table(db, tbl)
                if hms is None:
                    continue
                try:
                    check_acid_orc(hms)
                except CatalogError:
                    continue
                out.append(self._mirror(hms))
        return sorted(out, key=lambda t: t.name)

    def drop_table(self, name: str, if_exists: bool = False) -> None:
        """Drop from the side (refused while an open transaction holds a write id or lock)
        and from the metastore (``deleteData=false``: files are not touched; Hive's
        ``AcidEventListener`` removes the table's transactional rows)."""
        db, tbl = split_table_name(name)
        if self.side.table_exists(name):
            self.side.drop_table(name)
        elif self._hms_table(db, tbl) is None:
            if if_exists:
                return
            raise NoSuchTableError(f"{db}.{tbl}")
        try:
            self.conn.call("drop_table", db, tbl, False)
        except NoSuchObjectException:
            pass
        with self._lock:
            self._known_parts = {p for p in self._known_parts if p[:2] != (db, tbl)}

    def _alter(self, table: TableDef) -> TableDef:
        db, tbl = split_table_name(table.name)
        current = self._hms_table(db, tbl)
        if current is None:
            raise NoSuchTableError(table.name)
        self.conn.call("alter_table", db, tbl, update_hms_table(current, table))
        return table

    def set_table_properties(self, name: str, props: dict[str, str]) -> TableDef:
        self.get_table(name)
        return self._alter(self.side.set_table_properties(name, props))

    def add_columns(self, name: str, columns: Sequence[Column | dict[str, Any]]) -> TableDef:
        self.get_table(name)
        return self._alter(self.side.add_columns(name, columns))

    # --- schema evolution
    def alter_schema(
        self,
        txn_id: int,
        name: str,
        columns: Sequence[Column | dict[str, Any]],
        *,
        change: Mapping[str, Any],
    ) -> TableDef:
        """The metastore first (``alter_table_with_environment_context`` with ``CASCADE``, so
        partitions get the new columns too; the metastore applies its own positional type rule
        and refuses what ``hive.metastore.disallow.incompatible.col.type.changes`` forbids),
        then the side (schema history, acidflow's facts); a side failure puts the metastore's
        columns back. A ``rewrite`` change passes through an empty column list first: Hive
        checks types only over the positions both lists have, and the rewritten files no
        longer need the old positions."""
        current = self.get_table(name)
        new_cols = [c if isinstance(c, Column) else Column.from_dict(c) for c in columns]
        check_columns(current, new_cols, positional_types=False)
        info = self.side.get_transaction(txn_id)
        if info.state == TxnState.ABORTED:
            raise TxnAbortedError(txn_id, info.abort_reason)
        if info.state != TxnState.OPEN:
            raise TxnNotOpenError(txn_id, info.state)
        if current.name not in info.write_ids:
            raise CatalogError(
                f"alter schema of {current.name}: transaction {txn_id} has no "
                "write id on the table (allocate_write_id first)"
            )
        renames = {str(k): str(v) for k, v in (change.get("renames") or {}).items()}
        proposed = TableDef.from_dict(current.to_dict())
        proposed.columns = new_cols
        proposed.primary_key = [renames.get(k, k) for k in current.primary_key]
        proposed.bucket_columns = [renames.get(k, k) for k in current.bucket_columns]
        if current.ordering_column:
            proposed.ordering_column = renames.get(current.ordering_column, current.ordering_column)
        db, tbl = split_table_name(current.name)
        hms = self._hms_table(db, tbl)
        if hms is None:
            raise NoSuchTableError(current.name)
        old_cols, old_bucket_cols = list(hms.sd.cols), list(hms.sd.bucketCols or [])
        old_params = dict(hms.parameters or {})
        cascade = EnvironmentContext(properties={"CASCADE": "true"})

        def alter(
            cols: list[Any], bucket_cols: list[str], params: dict[str, str] | None
        ) -> str | None:
            """One ``alter_table``; the metastore's refusal as text (thrift's exceptions are
            immutable and must not travel through context managers), ``None`` when done."""
            table = self._hms_table(db, tbl)
            table.sd.cols = cols
            table.sd.bucketCols = bucket_cols
            if params is not None:
                table.parameters = params
            try:
                self.conn.call("alter_table_with_environment_context", db, tbl, table, cascade)
            except InvalidOperationException as exc:
                return str(exc.message)
            return None

        def restore() -> None:
            # back to the old columns through an empty list (the way back from a widening is
            # a narrowing the metastore's positional rule would refuse)
            alter([], old_bucket_cols, None)
            why = alter(old_cols, old_bucket_cols, old_params)
            if why is not None:  # pragma: no cover - the metastore took these columns before
                raise CatalogError(
                    f"table {current.name}: the metastore's columns could not be restored: {why}"
                )

        new_hms = update_hms_table(hms, proposed)
        if change.get("rewrite"):
            alter([], old_bucket_cols, None)
        why = alter(
            list(new_hms.sd.cols),
            list(proposed.bucket_columns) if current.num_buckets else [],
            dict(new_hms.parameters),
        )
        if why is not None:
            if change.get("rewrite"):
                restore()
            raise SchemaChangeError(
                f"table {current.name}: the Hive metastore refuses the "
                f"change: {' '.join(why.split())}"
            )
        try:
            return self.side.alter_schema(txn_id, name, new_cols, change=change)
        except BaseException:
            restore()
            raise

    def schema_history(self, name: str) -> list[SchemaVersion]:
        self.get_table(name)
        return self.side.schema_history(name)

    def set_primary_key(self, name: str, columns: Sequence[str]) -> TableDef:
        self.get_table(name)
        return self._alter(self.side.set_primary_key(name, columns))

    def adopt_table(self, table: TableDef | dict[str, Any], history: ValidWriteIdList) -> TableDef:
        """Register an existing Hive ACID table directory with its write-id history.

        A table the metastore already has (transactional ORC) keeps the metastore's write ids:
        ``history`` must agree with its current ``get_valid_write_ids`` (same high watermark,
        every open / aborted write id of the history invalid there) and only the side facts
        (primary key, ordering column) are registered.

        Otherwise the table is created in the metastore and its write-id history replayed:
        one metastore transaction per write id 1..hwm (``open_txns`` with ``num_txns=hwm``,
        one ``allocate_table_write_ids`` for all of them, which maps them in txn order), the
        history's aborted and open write ids aborted - each after a table lock component, so
        Hive's ``TXN_COMPONENTS`` keeps the aborted transaction (an aborted transaction with no
        component is deleted by Hive's initiator and its write id would then read as
        committed) - and the others committed. Hive's ``repl_tbl_writeid_state`` was tried
        first: it seeds ``NEXT_WRITE_ID`` but maps only the aborted write ids, and Hive 3.1's
        ``getValidWriteIds`` then takes its high watermark from the highest *mapped* write id,
        so Hive would not see the committed ones above the last aborted one.

        The replay opens one metastore transaction per write id, so a history above
        :data:`ADOPT_REPLAY_LIMIT` write ids is refused for a table the metastore does not have
        (create it in Hive first; adoption then keeps Hive's write ids). The side catalog
        records the table, not the adopted write ids: ``write_id_states``, ``commit_records``
        start with acidflow's first write; ``compaction_candidates`` offers the adopted
        partitions through the metastore's high watermark.

        Raises:
            TableExistsError: acidflow's side catalog has the table and the metastore does
                not.
            acidflow.storage.adoption.AdoptionError: the directory does not match ``history``
                (as on the SQL backend; checked before the metastore is touched).
            CatalogError: ``history`` disagrees with the metastore (names the table and both
                lists), or is too long to replay; NotAnAcidTableError: the metastore's table is
                not ACID ORC.
        """
        table = TableDef.from_dict(table.to_dict() if isinstance(table, TableDef) else table)
        table.validate()
        db, tbl = split_table_name(table.name)
        existing = self._hms_table(db, tbl)
        if existing is None and self.side.table_exists(table.name):
            raise TableExistsError(table.name)
        if existing is not None:
            check_acid_orc(existing)
            now = self.valid_write_ids(table.name)
            invalid = set(history.open_write_ids) | set(history.aborted_write_ids)
            if now.high_watermark != history.high_watermark or not invalid <= set(
                now.invalid_write_ids
            ):
                raise CatalogError(
                    f"adopt {table.name}: the history {history.to_string()} disagrees with the "
                    f"metastore's {now.to_string()} at {self.url}"
                )
            mirrored = self._mirror(existing)
            if table.primary_key and table.primary_key != mirrored.primary_key:
                mirrored = self.set_primary_key(table.name, table.primary_key)
            return mirrored
        if history.high_watermark > ADOPT_REPLAY_LIMIT:
            raise CatalogError(
                f"adopt {table.name}: replaying {history.high_watermark} write ids would open "
                f"as many transactions in the metastore at {self.url} (limit "
                f"{ADOPT_REPLAY_LIMIT}); create the table in Hive at its location first, then "
                "adopt keeps the metastore's write ids"
            )
        check_adoptable(
            table.name, self.side.location_of(table), table.partition_column_names(), history
        )
        stored = self.create_table(table)
        if history.high_watermark > 0:
            replay_write_ids(self.conn, stored, history, self._owner, self.hooks.host)
        return stored

    # -- transactions ------------------------------------------------------------------------
    def open_transaction(
        self, user: str | None = None, host: str | None = None, agent_info: str | None = None
    ) -> int:
        """Open a metastore transaction (``open_txns``) and its side mirror; the snapshot
        (``ValidTxnList``) is taken at open and kept in this object."""
        return self.side.open_transaction(user, host, agent_info)

    def heartbeat(self, txn_id: int) -> None:
        """Heartbeat on the side and in the metastore (Hive ``heartbeat``).

        Raises:
            TxnAbortedError: either side aborted it (the metastore's housekeeper after
                ``metastore.txn.timeout``; mirrored on the side).
            NoSuchTransactionError, TxnNotOpenError.
        """
        self.side.heartbeat(txn_id)
        try:
            self.conn.call("heartbeat", HeartbeatRequest(txnid=txn_id))
        except (TxnAbortedException, NoSuchTxnException) as exc:
            err = hive_abort_error(txn_id, str(getattr(exc, "message", exc)))
            self.side.abort_transaction(txn_id, err.reason)
            raise err from None

    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        """The metastore's write id (``allocate_table_write_ids``), mirrored on the side."""
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
        """Side component, plus the metastore's: a partition is created there if new
        (``add_partitions``) and registered with ``add_dynamic_partitions``; a whole-table
        write takes a ``SHARED_WRITE`` (update/delete/overwrite) or ``SHARED_READ`` (insert)
        table lock with the operation type, as Hive's ``DbTxnManager`` does - both put the
        component in Hive's ``TXN_COMPONENTS`` for its write-set check and cleaner."""
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

    def commit_transaction(
        self, txn_id: int, stats: dict[str, dict[str, Any]] | None = None
    ) -> int:
        """Side checks and records in one side-database transaction whose last step is the
        metastore's ``commit_txn`` (the visibility point).

        Raises:
            WriteConflictError: acidflow's (partition / key level) or Hive's write-set check
                failed; the transaction is aborted in both.
            TxnAbortedError: the metastore had aborted it (e.g. timed out); mirrored on the
                side, its files stay aborted for the cleaner.
            NoSuchTransactionError, ValueError: as the interface says.
        """
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
        """The side's housekeeper (heartbeats older than ``txn_timeout_s``; aborted in the
        metastore too) plus the transactions the metastore's own housekeeper aborted
        (``metastore.txn.timeout``), mirrored on the side."""
        ids = set(self.side.abort_timed_out_transactions(now))
        ids.update(self.reconcile())
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
        self, table_name: str, txn_id: int | None = None, as_of_write_id: int | None = None
    ) -> ValidWriteIdList:
        """The metastore's ``get_valid_write_ids`` for the transaction's snapshot (the
        ValidTxnList taken at its open; its own write id is valid) or the current one; an
        ``as_of_write_id`` below the high watermark cuts the list there (time travel).

        Hive ends a snapshot's list at the write ids of the transactions it can see (its
        high watermark follows the ValidTxnList's); acidflow's contract puts the high
        watermark at the table's highest allocated write id, so write ids allocated after
        the snapshot are added as exceptions - aborted ones as aborted, the others as open
        (they are invisible to it either way: the same files are read).
        """
        if as_of_write_id is not None and as_of_write_id < 0:
            raise ValueError(f"as_of_write_id must be >= 0, got {as_of_write_id}")
        table = self.get_table(table_name)
        if txn_id is not None:
            self.side.get_transaction(txn_id)  # NoSuchTransactionError
        found = self._hive_write_ids(table.name, self._txn_list(txn_id))
        if txn_id is not None:
            found = widen(found, self._hive_write_ids(table.name, self._txn_list(None, txn_id)))
        if as_of_write_id is None or as_of_write_id >= found.high_watermark:
            return found
        cut = as_of_write_id
        opened = [w for w in found.open_write_ids if w <= cut]
        return ValidWriteIdList(
            found.table_name,
            cut,
            opened,
            [w for w in found.aborted_write_ids if w <= cut],
            opened[0] if opened else None,
        )

    def compactor_valid_write_ids(self, table_name: str) -> ValidWriteIdList:
        """What a compaction may cover: the snapshot of the oldest open transaction of the
        metastore (acidflow's or Hive's) as it opened, without its own writes - a
        ValidTxnList with high watermark ``minOpenTxn - 1``, the aborted ones, and the side's
        transactions that committed after it opened as open. Hive transactions below it
        that committed after it opened are not known (Hive 3.1 keeps no history of that;
        its own compactor has the same limit); equals :meth:`valid_write_ids` when nothing
        is open."""
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
    add_tombstones = forward("side", SqlCatalog)
    tombstones = forward("side", SqlCatalog)

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
        self.get_table(table_name)
        return self.side.enqueue_compaction(
            table_name,
            partition,
            compaction_type,
            requester=requester,
            state=state,
            error=error,
            properties=properties,
        )

    get_compaction = forward("side", SqlCatalog)
    list_compactions = forward("side", SqlCatalog)

    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        self.check_warehouse_owner()
        return self.side.claim_compaction(worker_id, cq_id)

    def heartbeat_compaction(self, cq_id: int) -> None:
        self.side.heartbeat_compaction(cq_id)
        txn = self.side.get_compaction(cq_id).txn_id
        if txn is not None:
            try:
                self.conn.call("heartbeat", HeartbeatRequest(txnid=txn))
            except (TxnAbortedException, NoSuchTxnException):
                pass  # the side entry decides; a reclaimed worker is told so by the side

    update_compaction = forward("side", SqlCatalog)
    mark_compaction_ready_for_cleaning = forward("side", SqlCatalog)
    mark_compaction_succeeded = forward("side", SqlCatalog)
    mark_compaction_failed = forward("side", SqlCatalog)
    reclaim_dead_compactions = forward("side", SqlCatalog)
    compaction_history = forward("side", SqlCatalog)
    purge_compaction_history = forward("side", SqlCatalog)

    def compaction_candidates(self) -> list[tuple[str, str | None, int]]:
        """The side's candidates (acidflow's writes), plus the writes Hive and Trino made:
        for every table, when the metastore's write-id high watermark is above the highest
        write id acidflow allocated, each partition the metastore lists (or the table, when
        unpartitioned) not yet covered by a compaction up to that watermark. The metastore
        does not tell which partitions a foreign write touched, so all are offered; the
        initiator's thresholds (on the directory listing) then decide."""
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
        """The side's aborted components; with ``any_partition`` also every write id the
        metastore lists as aborted for the table (Hive's and adopted ones included)."""
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
        """The side's answer plus every transaction the metastore has open that started
        before ``commit_id`` (Hive's own readers and writers: their snapshot may still need
        the old directories)."""
        found = self.side.blocking_readers(table_name, commit_id, timeout_s=timeout_s, now=now)
        hive = {t for t in split_open_txns(self.conn.call("get_open_txns"))[0] if t < commit_id}
        return {"readers": found["readers"], "txns": sorted(set(found["txns"]) | hive)}


def make_hms_catalog(
    url: str, *, warehouse: str | None = None, migrate: bool = True, **kwargs: Any
) -> Catalog:
    """The :func:`acidflow.catalog.base.register_backend` factory for ``thrift://`` URLs."""
    return HiveMetastoreCatalog(url, warehouse=warehouse, migrate=migrate, **kwargs)


__all__ = ["HiveMetastoreCatalog", "make_hms_catalog", "side_url_of"]
