"""The transaction catalog interface: what the rest of acidflow may ask of a catalog.

:class:`Catalog` names the Hive metastore's transactional half as acidflow uses it - tables,
transactions (open / heartbeat / commit / abort), write ids and snapshots
(``ValidWriteIdList``), the write set, commit records, locks, the batch ledger, the compaction
queue and its history, and reader registrations - with no connections or sessions in it, so a
backend may be a SQL database (:class:`acidflow.catalog.sql.SqlCatalog`) or the Hive
Metastore over thrift (:class:`acidflow.catalog.hms.HiveMetastoreCatalog`: ``open_txns``, ``commit_txn``,
``allocate_table_write_ids``, ``get_valid_write_ids``, ``lock`` / ``check_lock`` / ``unlock``,
``compact2`` / ``show_compact``). Every method is atomic on its own; code that holds a
catalog annotates against :class:`Catalog`.

:func:`load_catalog` picks the backend from the URL: ``thrift://host:port`` is the Hive
Metastore backend; anything else is a SQLAlchemy URL. Backends register themselves with
:func:`register_backend`, by factory or by ``"module:attribute"`` path (imported on first use).

Shapes: table names are ``"db.table"`` (a bare ``"t"`` is ``"default.t"``), partitions are spec
strings ``"k=v/k2=v2"`` with every partition column in table order (``None`` = whole table /
unpartitioned), times are aware UTC ``datetime`` objects. Errors are the
:mod:`acidflow.catalog.errors` classes.
"""
from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from acidflow.catalog.errors import CatalogError, NoSuchTransactionError
from acidflow.catalog.records import (
    BatchInfo,
    CommitRecord,
    CompactionInfo,
    LockInfo,
    ReaderInfo,
    TxnInfo,
)
from acidflow.catalog.schemahistory import (
    SchemaVersion,
    pick_version,
    renames_of,
    rewrites,
)
from acidflow.catalog.tabledef import Column, TableDef
from acidflow.catalog.warehouse import check_owner
from acidflow.config import Settings, load_settings
from acidflow.format.layout import ValidWriteIdList
from acidflow.storage.fs import TableFS
from acidflow.storage.state import register_txn_state

if TYPE_CHECKING:
    import numpy as np

#: Makes a catalog: ``factory(url, *, warehouse=..., migrate=..., **kwargs) -> Catalog``.
CatalogFactory = Callable[..., "Catalog"]

#: URL schemes reserved for backends that do not exist yet, with what they will be.
PLANNED_BACKENDS: dict[str, str] = {}

_BACKENDS: dict[str, CatalogFactory | str] = {}
_DEFAULT_KEY = "*"


def register_backend(scheme: str | None, factory: CatalogFactory | str) -> None:
    """Make :func:`load_catalog` build catalogs for URLs of ``scheme`` (the part before
    ``://`` and before any ``+driver``, e.g. ``"thrift"``) with ``factory``; ``scheme=None``
    registers the default backend, used for every other URL. ``factory`` may be a
    ``"package.module:attribute"`` path: the module is imported when a URL first needs it, so
    a backend's dependencies (an optional extra) cost nothing until then."""
    _BACKENDS[_DEFAULT_KEY if scheme is None else scheme.lower()] = factory


def _resolve_backend(key: str) -> CatalogFactory | None:
    """The factory registered under ``key``, importing it first if it was registered by path."""
    factory = _BACKENDS.get(key)
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        _BACKENDS[key] = factory
    return factory


def url_scheme(url: str) -> str:
    """``"postgresql+psycopg2://h/db"`` -> ``"postgresql"``; ``"thrift://h:9083"`` ->
    ``"thrift"``; ``""`` when the URL has no ``://``."""
    head, sep, _ = url.partition("://")
    return head.split("+", 1)[0].strip().lower() if sep else ""


def load_catalog(url: str | None = None, *, warehouse: str | None = None, migrate: bool = True,
                 **kwargs: Any) -> Catalog:
    """Open the catalog at ``url`` with the backend its scheme names.

    Args:
        url: catalog URL; ``None`` = :func:`acidflow.config.load_settings`'s ``catalog_url``
            (then its ``warehouse`` and ``txn_timeout_s`` are the defaults too).
        warehouse: table root for default table locations; ``None`` = the settings'.
        migrate: bring the catalog's schema up to date now (SQL: Alembic ``upgrade head``).
        kwargs: backend options (``txn_timeout_s``, Hive ``hive.txn.timeout`` in seconds).
    Returns:
        A :class:`Catalog`: :class:`~acidflow.catalog.hms.HiveMetastoreCatalog` for
        ``thrift://host:port`` (its side catalog: ``side_url=`` or ``?side=<url>``), else
        :class:`~acidflow.catalog.sql.SqlCatalog`.
    Raises:
        CatalogError: no backend registered for the URL.
        acidflow._extras.MissingExtraError: the backend's extra is not installed
            (``thrift://`` needs ``acidflow[hms]``).
        acidflow.catalog.hms.client.MetastoreUnreachableError: the metastore does not answer
            (names the URL).
    """
    if url is None:
        settings = load_settings(warehouse=warehouse)
        url = settings.catalog_url
        warehouse = settings.warehouse
        kwargs.setdefault("txn_timeout_s", settings.txn_timeout_s)
    scheme = url_scheme(url)
    factory = _resolve_backend(scheme)
    if factory is None and scheme in PLANNED_BACKENDS:
        raise CatalogError(f"catalog URL {url!r}: {PLANNED_BACKENDS[scheme]} is not available "
                           "yet; use a SQLAlchemy URL (sqlite:///... or postgresql+psycopg2://...)")
    factory = factory or _resolve_backend(_DEFAULT_KEY)
    if factory is None:  # pragma: no cover - acidflow.catalog registers the SQL backend
        raise CatalogError(f"no catalog backend for URL {url!r}")
    return factory(url, warehouse=warehouse, migrate=migrate, **kwargs)


class Catalog(abc.ABC):
    """A transaction catalog: acidflow's stand-in for the Hive metastore's table and TXN
    tables (Hive ``TxnHandler`` / ``TxnStore``, ``AcidHouseKeeperService``,
    ``CompactionTxnHandler``).

    Files written under its write ids follow Hive's ACID visibility rules: a reader takes a
    ``ValidWriteIdList`` per table (:meth:`valid_write_ids`), a writer opens a transaction,
    allocates one write id per table it writes, registers the partitions it touches
    (:meth:`add_component`), takes locks, heartbeats, then commits atomically across its tables
    (with Hive's write-set conflict check) or aborts.

    Attributes:
        warehouse: table root for default table locations (``<warehouse>/<db>.db/<table>``).
        txn_timeout_s: seconds without heartbeat after which a transaction is aborted by
            :meth:`abort_timed_out_transactions` (Hive ``hive.txn.timeout``); heartbeat well
            within it.
    """

    warehouse: str
    txn_timeout_s: int

    # -- construction and lifetime -------------------------------------------------------
    @classmethod
    def from_settings(cls, settings: Settings | None = None, *, migrate: bool = True) -> Catalog:
        """The catalog of :class:`acidflow.config.Settings` (``load_settings()`` when ``None``):
        its ``catalog_url``, ``warehouse`` and ``txn_timeout_s``, through :func:`load_catalog`.

        Raises:
            CatalogError: see :func:`load_catalog`.
        """
        if settings is None:
            settings = load_settings()
        return load_catalog(settings.catalog_url, warehouse=settings.warehouse,
                            txn_timeout_s=settings.txn_timeout_s, migrate=migrate)

    def close(self) -> None:
        """Release connections (the catalog stays usable; they are reopened on demand).
        The default does nothing."""

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @abc.abstractmethod
    def catalog_id(self) -> str:
        """This catalog's stable id (a UUID made once, when the catalog is created; SQL: the
        ``catalog_identity`` row). The warehouse marker names the id of the catalog that owns
        the warehouse.

        Raises:
            CatalogError: the store cannot be read (names the URL).
        """

    @abc.abstractmethod
    def display_url(self) -> str:
        """The catalog's URL with any password masked (for messages and the warehouse
        marker)."""

    @abc.abstractmethod
    def initialize(self, force: bool = False) -> str:
        """Create or migrate the catalog's store explicitly (``acidflow catalog init``).

        Args:
            force: also when the store holds other tables and is not an acidflow catalog.
        Returns:
            The catalog id.
        Raises:
            acidflow.catalog.errors.ForeignDatabaseError: a foreign store, without ``force``.
            acidflow.catalog.errors.CatalogDatabaseError: the store cannot be used.
        """

    def register_visibility(self) -> None:
        """On an object-store warehouse (``s3://``...): register :meth:`visibility_state` as
        the ``_v<T>`` lookup of every directory under :attr:`warehouse`
        (:func:`acidflow.storage.state.register_txn_state`), so readers, the initiator and the
        cleaner of this process ignore the output of a compaction until its transaction
        commits (the compactor writes it there under its final ``_v<T>`` name, no rename).
        Backends call it once constructed; local warehouses register nothing (their
        compactor publishes by rename and writes no ``_v`` suffix)."""
        if not TableFS(self.warehouse).renames_atomically:
            register_txn_state(self.warehouse, self.visibility_state)

    def visibility_state(self, txn_id: int) -> str:
        """State of the visibility transaction ``T`` of a ``base_N_v<T>`` / ``delta_x_y_v<T>``
        directory: ``"open"``, ``"committed"`` or ``"aborted"`` (:meth:`get_transaction`); a
        transaction this catalog never had (a directory written by another system, e.g. a
        Hive 4 table adopted here) counts as ``"committed"``, as Trino reads it."""
        try:
            return self.get_transaction(txn_id).state
        except NoSuchTransactionError:
            return "committed"

    def check_warehouse_owner(self) -> None:
        """Before a write into :attr:`warehouse` (table create, a statement's write id, a
        compaction): make sure this catalog owns it - write the owner marker
        ``<warehouse>/_acidflow_warehouse.json`` if there is none, refuse if it names another
        catalog (:func:`acidflow.catalog.warehouse.check_owner`; cached per process). Reads do
        not call it.

        Raises:
            acidflow.catalog.errors.WarehouseOwnedError: another catalog owns the warehouse
                (names both catalogs and the warehouse).
        """
        check_owner(self.warehouse, self.catalog_id(), self.display_url())

    @abc.abstractmethod
    def current_revision(self) -> str | None:
        """The version of the catalog's schema in its store (SQL: the Alembic revision; HMS:
        the metastore schema version), ``None`` when the store has no acidflow schema yet
        (a readiness probe for UIs)."""

    # ====================================================================================
    # Tables (Hive metastore ``create_table`` / ``get_table`` / ``drop_table`` / ``alter_table``)
    # ====================================================================================
    @abc.abstractmethod
    def create_table(self, table: TableDef | dict[str, Any], if_not_exists: bool = False
                     ) -> TableDef:
        """Register a table (Hive ``CREATE TABLE ... STORED AS ORC TBLPROPERTIES
        ('transactional'='true')``) and its write id sequence (starting at 1).

        Args:
            table: the definition; validated, name normalised, location defaulted.
            if_not_exists: return the existing definition instead of raising.
        Returns:
            The stored definition (with ``table_id``, ``created_at``, ``location``).
        Raises:
            ValueError: invalid definition (:meth:`TableDef.validate`).
            TableExistsError: the name is taken and ``if_not_exists`` is false.
        """

    @abc.abstractmethod
    def adopt_table(self, table: TableDef | dict[str, Any], history: ValidWriteIdList
                    ) -> TableDef:
        """Register an existing Hive full-ACID table directory with the write-id history Hive
        gave it (``acidflow table adopt``), so acidflow becomes its writer.

        * write ids 1..``history.high_watermark`` are recorded as allocated: the history's
          aborted ones as aborted, its *open* ones as aborted too - after adoption acidflow is
          the table's only writer through this catalog, and a Hive transaction that was open at
          adoption can never commit into it (its files stay invisible and go to the cleaner);
          every other one is committed;
        * the next :meth:`allocate_write_id` gives ``hwm + 1`` (a write id Hive allocated is
          never reused);
        * :meth:`valid_write_ids` returns exactly ``history`` with open turned aborted (same
          high watermark, ``min_open_write_id`` None), so readers see what Hive's readers saw;
          ``as_of_write_id`` <= hwm (time travel) works as far as the files allow;
        * commit records of adopted write ids have operations ``["adopted"]``; the partitions
          with deltas become compaction candidates, so the compactor treats Hive's deltas
          (and original files, write id 0) as its own.

        ``history.table_name`` may differ from ``table.name`` (a table adopted under another
        name); the stored history is the table's.

        Args:
            table: the definition (columns, partition columns, buckets, location - which must
                be given for an existing directory; outside the warehouse it needs
                ``external``); validated as by :meth:`create_table`.
            history: Hive's ``ValidWriteIdList`` of the table (``get_valid_write_ids``, or built
                from ``--hwm/--open/--aborted``).
        Returns:
            The stored definition.
        Raises:
            ValueError: invalid definition (:meth:`TableDef.validate`).
            TableExistsError: the name is taken.
            acidflow.storage.adoption.AdoptionError (a ``ValueError``): the location is missing or
                not a directory; a base/delta directory naming a write id above the high
                watermark (Hive never wrote it under this history; names the directory); data
                at an unexpected depth; open/aborted ids outside 1..hwm.
            TableLocationError: location outside the warehouse without ``external``.
            CatalogError: the history disagrees with what the store knows of the table
                (metastore backend: a table the metastore has keeps Hive's write ids).
        """

    @abc.abstractmethod
    def get_table(self, name: str) -> TableDef:
        """The definition of ``name`` (``"db.t"`` or ``"t"`` = ``"default.t"``).

        Raises:
            NoSuchTableError: unknown table.
        """

    @abc.abstractmethod
    def table_exists(self, name: str) -> bool:
        """True when ``name`` is registered."""

    @abc.abstractmethod
    def list_tables(self, db_name: str | None = None) -> list[TableDef]:
        """All tables (optionally of one database), sorted by name."""

    @abc.abstractmethod
    def drop_table(self, name: str, if_exists: bool = False) -> None:
        """Remove a table and all its transactional metadata (write ids, components, write
        set, commit records), like Hive's ``DROP TABLE`` cleanup (``TxnHandler.cleanupRecords``).
        Data files are not touched.

        Raises:
            NoSuchTableError: unknown table (unless ``if_exists``).
            CatalogError: an open transaction holds a write id or a lock on the table.
        """

    @abc.abstractmethod
    def set_table_properties(self, name: str, props: dict[str, str]) -> TableDef:
        """Add or replace table properties (Hive ``ALTER TABLE ... SET TBLPROPERTIES``);
        values are stored as strings.

        Returns:
            The updated definition.
        Raises:
            NoSuchTableError: unknown table.
            ValueError: changing ``transactional``, ``transactional_properties`` or
                ``bucketing_version`` (Hive forbids the first two; the third would misplace
                rows in buckets).
        """

    @abc.abstractmethod
    def add_columns(self, name: str, columns: Sequence[Column | dict[str, Any]]) -> TableDef:
        """Append data columns at the end (Hive ``ALTER TABLE ... ADD COLUMNS``; ORC schema
        evolution reads older files with the new columns as NULL).

        Returns:
            The updated definition.
        Raises:
            NoSuchTableError: unknown table.
            ValueError: a name already used (data or partition column), bad name or type.
        """

    @abc.abstractmethod
    def set_primary_key(self, name: str, columns: Sequence[str]) -> TableDef:
        """Set (or replace) the table's primary key, the upsert key of CDC and ``upsert``
        (the role of Hive's ``ALTER TABLE ... ADD CONSTRAINT ... PRIMARY KEY ... DISABLE
        NOVALIDATE``: the catalog does not check the stored rows; callers that need unique keys
        check them first). Bucketing is unchanged: the rows stay in the buckets they are in.

        Args:
            columns: key column names (lower case), data or partition columns, no repeats.
        Returns:
            The updated definition.
        Raises:
            NoSuchTableError: unknown table.
            ValueError: unknown or repeated column names (naming the table).
        """

    # --- issue 12: schema evolution ----------------------------------------------------
    @abc.abstractmethod
    def alter_schema(self, txn_id: int, name: str, columns: Sequence[Column | dict[str, Any]],
                     *, change: Mapping[str, Any]) -> TableDef:
        """Replace the table's data columns (names, types, comments, order) as part of the open
        transaction ``txn_id``, which must hold a write id W on the table (Hive ``alter_table``
        of ``sd.cols``; on the metastore backend with ``CASCADE`` to the partitions).

        Records a schema version valid from W (version 0, the schema before, is recorded on the
        first change): readers take the newest version their ValidWriteIdList sees
        (:meth:`schema_for`), so the change is visible exactly when the transaction commits.
        ``change["renames"]`` (``{old: new}``) renames primary key, bucketing and ordering
        columns too. The caller checks acidflow's rules
        (:mod:`acidflow.format.schemaevolution`, ``acidflow.tableops.schema``); the catalog
        checks names and, unless ``change["rewrite"]``, the metastore's positional type rule
        (``hive.metastore.disallow.incompatible.col.type.changes``).

        Args:
            columns: the complete new data-column list in file order.
            change: JSON-able description stored with the version (``{"op": ...}``).
        Returns:
            The updated definition.
        Raises:
            acidflow.format.schemaevolution.SchemaChangeError: bad or repeated names, or a type
                change the metastore refuses (names table and columns).
            CatalogError: the transaction has no write id on the table.
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def schema_history(self, name: str) -> list[SchemaVersion]:
        """The table's recorded schema versions ascending by write id (empty when its schema
        never changed through :meth:`alter_schema`).

        Raises:
            NoSuchTableError: unknown table.
        """

    def schema_for(self, table: TableDef | str, valid: ValidWriteIdList) -> list[Column]:
        """The data columns a reader with snapshot ``valid`` uses: those of the newest schema
        version whose write id ``valid`` sees; the table's current columns when that is the
        newest version (or there is no history; columns added since with :meth:`add_columns`
        are included).

        Raises:
            NoSuchTableError: unknown table.
        """
        table = table if isinstance(table, TableDef) else self.get_table(table)
        history = self.schema_history(table.name)
        chosen = pick_version(history, valid)
        if chosen is None or chosen.write_id == history[-1].write_id:
            return list(table.columns)
        return list(chosen.columns)

    def schema_at(self, name: str, write_id: int) -> list[Column]:
        """The data columns of the table as of ``write_id`` (the snapshot of
        ``valid_write_ids(name, as_of_write_id=write_id)``; see :meth:`schema_for`).

        Raises:
            NoSuchTableError; ValueError: negative write id.
        """
        return self.schema_for(name, self.valid_write_ids(name, as_of_write_id=write_id))

    def aborted_schema_change(self, name: str) -> SchemaVersion | None:
        """The table's newest schema version when its transaction was aborted: a schema change
        that had replaced the table's columns (:meth:`alter_schema`) and then never committed
        (its writer crashed and the housekeeper aborted it). Readers never see such a version
        (:meth:`schema_for`), but the table's current columns are still its columns, so writers
        must not write until :meth:`revert_aborted_schema_change` puts the columns back.
        ``None`` when the newest version is committed (or open, or there is no history).

        Raises:
            NoSuchTableError: unknown table.
        """
        history = self.schema_history(name)
        if not history or history[-1].txn_id is None:
            return None
        newest = history[-1]
        assert newest.txn_id is not None
        return newest if self.get_transaction(newest.txn_id).state == "aborted" else None

    def writer_schema_problem(self, name: str, txn_id: int) -> str | None:
        """Why transaction ``txn_id`` must not write files into ``name`` now, or ``None``.
        Writers lay their files out for the table's current columns, so they stop when

        * the newest schema version was aborted after it replaced the columns
          (:meth:`aborted_schema_change`: a crashed ``table alter``), or
        * a version that moved data positions (drop/reorder with rewrite,
          :func:`acidflow.catalog.schemahistory.rewrites`) committed after the transaction's
          snapshot: what the transaction reads at its snapshot (the key lookup of an upsert)
          is laid out for the old columns.

        Raises:
            NoSuchTableError: unknown table.
        """
        history = self.schema_history(name)
        if not history:
            return None
        aborted = self.aborted_schema_change(name)
        if aborted is not None:
            return (f"its last schema change (write id {aborted.write_id}, transaction "
                    f"{aborted.txn_id}) was aborted after it had replaced the columns; the "
                    "cleaner (`acidflow clean`) or the next `acidflow table alter` puts the "
                    "committed columns back")
        if not any(rewrites(v) for v in history if v.txn_id is not None):
            return None
        valid = self.valid_write_ids(name, txn_id=txn_id)
        for v in reversed(history):
            if v.txn_id is None or v.txn_id == txn_id or not rewrites(v):
                continue
            if not valid.is_write_id_valid(v.write_id) and \
                    self.get_transaction(v.txn_id).state == "committed":
                return (f"a schema change that rewrote its data (write id {v.write_id}) "
                        f"committed after transaction {txn_id} opened; its snapshot's files "
                        "are laid out for the old columns: run the statement in a new "
                        "transaction")
        return None

    def revert_aborted_schema_change(self, name: str, *, lock_timeout_s: float = 60.0
                                     ) -> SchemaVersion | None:
        """Put back the columns of the newest committed schema version when the newest version
        is an aborted one (:meth:`aborted_schema_change`), in a transaction of its own that
        allocates a write id and records the version ``{"op": "revert", "of_write_id": W}``
        with the operation ``schema`` in its commit record. The cleaner runs it for every table
        (``acidflow.compactor.cleaner``), and so does ``acidflow table alter`` before a change.

        Returns:
            The aborted version that was reverted, ``None`` when there was nothing to do.
        Raises:
            NoSuchTableError; LockTimeoutError: a writer held the table longer than
            ``lock_timeout_s`` (nothing changed; a later run reverts).
        """
        aborted = self.aborted_schema_change(name)
        if aborted is None:
            return None
        history = self.schema_history(name)
        before = next(v for v in reversed(history) if v.write_id < aborted.write_id and (
            v.txn_id is None or self.get_transaction(v.txn_id).state == "committed"))
        renames = {new: old for old, new in renames_of(aborted).items()}
        change = {"op": "revert", "of_write_id": aborted.write_id, "rewrite": True,
                  "renames": renames}
        txn_id = self.open_transaction(agent_info="acidflow schema revert")
        try:
            self.allocate_write_id(txn_id, name)
            self.acquire_lock(txn_id, name, None, "exclusive", timeout_s=lock_timeout_s)
            if self.aborted_schema_change(name) is None:  # another process reverted it
                self.abort_transaction(txn_id, "nothing to revert")
                return None
            self.alter_schema(txn_id, name, before.columns, change=change)
            self.commit_transaction(txn_id, {self.get_table(name).name: {
                "operations": ["schema"], "schema_change": change, "rows_inserted": 0,
                "rows_updated": 0, "rows_deleted": 0, "files": 0, "bytes": 0,
                "partitions": {}}})
        except BaseException as exc:
            if self.get_transaction(txn_id).state == "open":
                self.abort_transaction(txn_id, f"{type(exc).__name__}: {exc}")
            raise
        return aborted

    # ====================================================================================
    # Transactions (Hive ``open_txns`` / ``heartbeat`` / ``allocate_table_write_ids`` /
    # ``add_dynamic_partitions`` / ``commit_txn`` / ``abort_txn`` / ``show_txns``)
    # ====================================================================================
    @abc.abstractmethod
    def open_transaction(self, user: str | None = None, host: str | None = None,
                         agent_info: str | None = None) -> int:
        """Open a transaction (Hive ``TxnHandler.openTxns``).

        Args:
            user, host: recorded for display; default the OS user and host name.
            agent_info: free text (job, task, pid); default ``"acidflow pid <pid>"``.
        Returns:
            The new transaction id from the global increasing sequence (Hive ``NEXT_TXN_ID``).
        """

    @abc.abstractmethod
    def heartbeat(self, txn_id: int) -> None:
        """Record that the transaction's owner is alive; also refreshes its locks (Hive
        ``TxnHandler.heartbeat``). Call well within ``txn_timeout_s``.

        Raises:
            NoSuchTransactionError: unknown id.
            TxnAbortedError: aborted (e.g. timed out by the housekeeper).
            TxnNotOpenError: already committed.
        """

    @abc.abstractmethod
    def allocate_write_id(self, txn_id: int, table_name: str) -> int:
        """The transaction's write id for a table (Hive ``allocateTableWriteIds``): the table's
        next write id on first call, the same id again on later calls for the same pair.

        Write ids of one table increase in allocation order (Hive ``NEXT_WRITE_ID``; the pair
        goes to ``TXN_TO_WRITE_ID``). Concurrent allocations for one table are serialised.

        Raises:
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def add_component(self, txn_id: int, table_name: str, partition: str | None,
                      operation: str) -> None:
        """Register that the transaction writes a partition (Hive ``TXN_COMPONENTS``, as
        ``addDynamicPartitions`` / lock components do). Repeats are ignored.

        Args:
            partition: ``"ds=2024-01-01/region=eu"`` (all partition columns, in order) or
                ``None`` for an unpartitioned table or a whole-table operation.
            operation: ``"insert"``, ``"update"``, ``"delete"`` or ``"insert_overwrite"``;
                the last three take part in the commit-time write-conflict check.
        Raises:
            ValueError: unknown operation, partition spec not matching the table.
            CatalogError: no write id allocated yet for this (transaction, table).
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def add_write_keys(self, txn_id: int, table_name: str,
                       scopes: Mapping[tuple[str | None, int], np.ndarray | None]) -> None:
        """Record the primary keys the open transaction wrote into a keyed table: the
        key-level write set (acidflow's; Hive keeps only the partition-level ``WRITE_SET``).
        ``Transaction`` calls it from every statement that writes insert events (insert,
        upsert, CDC merge, insert overwrite), with the hashes its write tasks computed.

        At commit, if a transaction that committed after this one opened (commit id > txn id)
        recorded one of the same key hashes in an overlapping scope, this transaction is
        aborted with :class:`WriteConflictError` (first committer wins): two overlapping
        transactions can never both insert a key, so no duplicate primary key is committed.
        Unkeyed tables record nothing (Hive: inserts never conflict).

        Args:
            scopes: ``{(partition spec or None = every partition, bucket or -1 = every
                bucket): hashes}``; hashes are ``acidflow.format.keys.key_hash64`` values as a
                ``uint64`` numpy array, or ``None`` = the whole scope (more than
                ``acidflow.format.keys.MAX_KEYS_PER_SCOPE`` keys; any key write there overlaps).
        Raises:
            ValueError: a partition spec not matching the table.
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def purge_write_sets(self) -> dict[str, int]:
        """Housekeeper (Hive ``AcidHouseKeeperService``, ``WRITE_SET`` cleanup): delete
        partition- and key-level write-set entries no open transaction can conflict with any
        more (commit id below the oldest open transaction) and the key entries of aborted
        transactions. The cleaner runs it.

        Returns:
            ``{"write_set": rows deleted, "write_set_keys": rows deleted}``.
        """

    @abc.abstractmethod
    def commit_transaction(self, txn_id: int,
                           stats: dict[str, dict[str, Any]] | None = None) -> int:
        """Commit atomically across every table the transaction wrote (Hive
        ``TxnHandler.commitTxn``).

        Atomically: take a commit id from the global sequence; run the
        write-set check; record the update/delete/insert_overwrite footprint in ``write_set``;
        move the components to ``completed_txn_components``; write one commit record per table
        that has a write id (write id, txn id, operations, time, ``stats[table]``); mark the
        transaction committed; release its locks.

        Write-set check (HIVE-13395, first committer wins): if this transaction updated,
        deleted or overwrote a (table, partition) that another transaction also updated /
        deleted / overwrote and that other transaction committed after this one opened (its
        commit id > this txn id), this transaction is aborted instead. A whole-table (``None``)
        component overlaps every partition of its table. Inserts into unkeyed tables never
        conflict; for keyed tables the key-level check of :meth:`add_write_keys` runs too.

        Committing an already committed transaction returns its commit id again (Hive's
        idempotent ``commitTxn``).

        Args:
            stats: ``{"db.table": {...}}`` JSON-serialisable statistics per written table.
        Returns:
            The commit id (larger than every txn id opened before the commit).
        Raises:
            WriteConflictError: the check failed; the transaction is now aborted.
            TxnAbortedError: the transaction was already aborted (e.g. timed out).
            NoSuchTransactionError: unknown id.
            ValueError: stats for a table the transaction has no write id for, or stats that
                are not JSON-serialisable.
        """

    @abc.abstractmethod
    def abort_transaction(self, txn_id: int, reason: str = "") -> None:
        """Abort (Hive ``TxnHandler.abortTxn``): the transaction's write ids become aborted
        (invisible to readers, see :meth:`valid_write_ids`), its locks are released, its
        components are kept for the cleaner. Aborting an aborted transaction does nothing.

        Raises:
            NoSuchTransactionError: unknown id.
            TxnNotOpenError: already committed.
        """

    @abc.abstractmethod
    def get_transaction(self, txn_id: int) -> TxnInfo:
        """State and details of one transaction.

        Raises:
            NoSuchTransactionError: unknown id.
        """

    @abc.abstractmethod
    def list_transactions(self, states: Iterable[str] | None = None) -> list[TxnInfo]:
        """Transactions in id order, optionally only those in ``states`` (``"open"``,
        ``"committed"``, ``"aborted"``) (Hive ``SHOW TRANSACTIONS``).

        Raises:
            ValueError: unknown state.
        """

    @abc.abstractmethod
    def abort_timed_out_transactions(self, now: datetime | None = None) -> list[int]:
        """The housekeeper (Hive ``AcidHouseKeeperService`` -> ``TxnHandler.performTimeOuts``):
        abort every open transaction whose last heartbeat is older than ``txn_timeout_s`` and
        drop its locks; abort reason ``"timed out"``. Transactions busy committing at that
        moment may be skipped (they are aborted by a later run).

        Args:
            now: the reference time (UTC; naive = UTC); default the current time.
        Returns:
            Ids of the transactions aborted, ascending.
        """

    # ====================================================================================
    # Write ids and snapshots (Hive ``get_valid_write_ids``). One table per call: acidflow has
    # no ValidTxnWriteIdList (one snapshot across tables) yet; a reader takes one list per table.
    # ====================================================================================
    @abc.abstractmethod
    def valid_write_ids(self, table_name: str, txn_id: int | None = None,
                        as_of_write_id: int | None = None) -> ValidWriteIdList:
        """The reader's snapshot of a table (Hive ``getValidWriteIds`` ->
        ``ValidReaderWriteIdList``, see docs/hive-acid-format.md §6).

        * high watermark = the highest write id allocated for the table, or
          ``as_of_write_id`` if smaller (time travel);
        * exceptions = write ids <= high watermark whose transaction is open (``open_write_ids``)
          or aborted (``aborted_write_ids``), ascending;
        * with ``txn_id``: the snapshot taken when that transaction opened (Hive's
          ``ValidTxnList`` at ``openTxns``) plus its own writes -- a write id whose transaction
          committed after ``txn_id`` opened (commit id > ``txn_id``) is an open exception, so
          all reads of one transaction agree;
        * the write id of ``txn_id`` (the caller's own transaction) is valid, not an exception,
          so a transaction reads its own writes;
        * ``min_open_write_id`` = lowest open exception, ``None`` when there is none.

        Returns:
            ``acidflow.format.layout.ValidWriteIdList``.
        Raises:
            NoSuchTableError, NoSuchTransactionError (``txn_id`` unknown),
            ValueError (negative ``as_of_write_id``).
        """

    @abc.abstractmethod
    def compactor_valid_write_ids(self, table_name: str) -> ValidWriteIdList:
        """The snapshot a compaction may cover (Hive 3 ``MIN_HISTORY_LEVEL`` rule): the one
        the oldest open transaction took when it opened, without its own writes, so no open
        transaction -- whose reads use the snapshot of its open -- is left without a usable
        base. Equals :meth:`valid_write_ids` when nothing is open; the compactor applies
        ``for_compactor()`` to it.

        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def write_id_states(self, table_name: str) -> list[tuple[int, int, str]]:
        """Every allocated write id of a table as ``(write_id, txn_id, state)`` in write id
        order; state is the owning transaction's (``"open"``, ``"committed"``, ``"aborted"``).

        Raises:
            NoSuchTableError: unknown table.
        """

    @abc.abstractmethod
    def commit_records(self, table_name: str) -> list[CommitRecord]:
        """Commit records of a table in write id order (one per committed transaction that
        allocated a write id for it).

        Raises:
            NoSuchTableError: unknown table.
        """

    # ====================================================================================
    # Locks (Hive ``lock`` / ``check_lock`` / ``unlock`` / ``show_locks``)
    # ====================================================================================
    @abc.abstractmethod
    def acquire_lock(self, txn_id: int, table_name: str, partition: str | None,
                     lock_type: str, timeout_s: float = 60.0) -> int:
        """Lock a table or one partition for the transaction, waiting if needed (Hive
        ``TxnHandler.lock``/``checkLock`` as used by ``DbLockManager``).

        Compatibility (Hive's lock matrix since HIVE-13395): ``exclusive`` conflicts with
        every lock; ``shared_read`` and ``shared_write`` are compatible with each other and
        with themselves (concurrent writers are caught by the commit-time write set). A
        table-level lock (``partition=None``) overlaps every partition lock of the table.
        Locks of the same transaction never conflict. Requests are served in lock id order:
        a request also waits behind an earlier *waiting* conflicting request (no starvation
        of exclusive requests). While waiting it polls with short sleeps and heartbeats the
        transaction. The lock is released by commit, abort or :meth:`release_locks`.

        Args:
            partition: full partition spec or ``None`` (whole table).
            lock_type: ``"shared_read"``, ``"shared_write"`` or ``"exclusive"``.
            timeout_s: seconds to wait before giving up.
        Returns:
            The lock id (state ``"acquired"``); an identical lock the transaction already
            holds is returned instead of a new one.
        Raises:
            LockTimeoutError: not granted within ``timeout_s``; the request was removed.
            ValueError: unknown lock type, bad partition spec.
            NoSuchTableError, NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
        """

    @abc.abstractmethod
    def release_locks(self, txn_id: int) -> None:
        """Release every lock (acquired or waiting) of the transaction without ending it.

        Raises:
            NoSuchTransactionError: unknown id.
        """

    @abc.abstractmethod
    def list_locks(self, table_name: str | None = None) -> list[LockInfo]:
        """Current lock requests in lock id order, optionally of one table (Hive
        ``SHOW LOCKS``)."""

    # ====================================================================================
    # Batches and CDC tombstones (acidflow's idempotence ledger; no Hive counterpart)
    # ====================================================================================
    @abc.abstractmethod
    def register_batch(self, txn_id: int, batch_id: str, kind: str, *,
                       source: str | None = None, details: dict[str, Any] | None = None
                       ) -> BatchInfo:
        """Claim ``batch_id`` for the open transaction ``txn_id``. The claim becomes an
        "applied" record atomically with the transaction's commit; if the transaction aborts,
        the next attempt re-claims the batch and applies it again.

        Timed-out transactions are aborted first (the housekeeper's rule), so a crashed run
        does not block its batch for longer than the transaction timeout.

        Raises:
            BatchAlreadyAppliedError: a committed transaction applied this batch.
            BatchInProgressError: another open transaction holds it.
            NoSuchTransactionError, TxnAbortedError, TxnNotOpenError: ``txn_id`` is not open.
            ValueError: empty or over-long batch id.
        """

    @abc.abstractmethod
    def get_batch(self, batch_id: str) -> BatchInfo | None:
        """The record of ``batch_id`` with its transaction's state, or ``None``."""

    @abc.abstractmethod
    def list_batches(self, kind: str | None = None) -> list[BatchInfo]:
        """Batch records in registration order, optionally of one ``kind``."""

    @abc.abstractmethod
    def add_tombstones(self, txn_id: int, table_name: str,
                       entries: list[tuple[str, str]]) -> None:
        """Record CDC deletes of the open transaction: ``[(key as canonical JSON, ordering
        value of the delete)]``. They count once the transaction commits.

        Raises:
            NoSuchTransactionError, TxnAbortedError, TxnNotOpenError: ``txn_id`` is not open.
        """

    @abc.abstractmethod
    def tombstones(self, table_name: str, key_jsons: list[str]) -> dict[str, str]:
        """Largest committed delete position per key among ``key_jsons`` (keys never deleted
        by CDC are absent)."""

    # ====================================================================================
    # Compaction queue and history (Hive ``compact2`` / ``show_compact`` and the compactor's
    # ``CompactionTxnHandler`` calls)
    # ====================================================================================
    @abc.abstractmethod
    def enqueue_compaction(self, table_name: str, partition: str | None, compaction_type: str,
                           *, requester: str = "initiator", state: str = "initiated",
                           error: str | None = None,
                           properties: dict[str, Any] | None = None) -> CompactionInfo:
        """Queue a compaction request (Hive ``TxnHandler.compact``), or record a finished
        decision (``state="did not initiate"`` / ``"refused"`` with ``error``).

        A request for a (table, partition) that already has an ``initiated`` or ``working``
        entry is not queued twice: that entry is returned instead (Hive answers
        ``accepted=false`` with the existing id).

        Args:
            table_name: ``db.table``; partition: full spec or ``None``.
            compaction_type: ``"major"`` or ``"minor"``.
            requester: ``"initiator"`` or a user name (manual ALTER TABLE COMPACT).
            state: ``"initiated"`` (default), ``"did not initiate"`` or ``"refused"``.
            properties: request overrides (JSON-able).
        Returns:
            The new (or existing) :class:`CompactionInfo`.
        Raises:
            ValueError: unknown type/state, bad partition spec; NoSuchTableError.
        """

    @abc.abstractmethod
    def get_compaction(self, cq_id: int) -> CompactionInfo:
        """One queue entry.

        Raises:
            CatalogError: unknown id.
        """

    @abc.abstractmethod
    def list_compactions(self, table_name: str | None = None, states: Iterable[str] | None = None,
                         partition: str | None = None, *, any_partition: bool = True
                         ) -> list[CompactionInfo]:
        """Queue and history in id order (Hive ``SHOW COMPACTIONS``).

        Args:
            table_name: only this table; states: only these states.
            partition, any_partition: with ``any_partition=False`` only entries of exactly
                ``partition`` (``None`` = the whole-table entries).
        Raises:
            ValueError: unknown state.
        """

    @abc.abstractmethod
    def claim_compaction(self, worker_id: str, cq_id: int | None = None) -> CompactionInfo | None:
        """A worker takes an ``initiated`` entry (Hive ``CompactionTxnHandler.findNextToCompact``
        + the worker opening its transaction): the entry becomes ``working`` with this worker
        id, start time and heartbeat, and a new transaction (the compaction's own, agent info
        ``compactor <worker>``) is opened for it atomically with the claim.

        Entries whose (table, partition) already has a ``working`` entry are skipped.

        Args:
            worker_id: e.g. ``"host-1234-0"``.
            cq_id: claim exactly this entry; default the oldest claimable one.
        Returns:
            The claimed entry, or ``None`` when nothing is claimable (or ``cq_id`` is not
            ``initiated``).
        """

    @abc.abstractmethod
    def heartbeat_compaction(self, cq_id: int) -> None:
        """The worker is alive: refresh the entry's heartbeat and its transaction's.

        Raises:
            CompactionStateError: the entry is no longer ``working`` (reclaimed after a
                timeout, or failed): the worker must stop.
        """

    @abc.abstractmethod
    def update_compaction(self, cq_id: int, *, highest_write_id: int | None = None,
                          details: dict[str, Any] | None = None) -> None:
        """Record the compactor's high watermark and/or merge ``details`` into the report of
        an active entry.

        Raises:
            CompactionStateError: the entry is finished.
        """

    @abc.abstractmethod
    def mark_compaction_ready_for_cleaning(self, cq_id: int, highest_write_id: int,
                                           details: dict[str, Any] | None = None) -> int:
        """The worker published its result (Hive ``markCompacted`` + commit of the compactor
        transaction): commit the compaction's transaction (taking a commit id from the global
        sequence) and set the entry ``ready for cleaning`` with the highest write id covered.

        Returns:
            The commit id: readers whose snapshot is at or below it may still use the old
            directories, so the cleaner waits for them.
        Raises:
            CompactionStateError: the entry is not ``working`` (e.g. it was reclaimed).
        """

    @abc.abstractmethod
    def mark_compaction_succeeded(self, cq_id: int, details: dict[str, Any] | None = None) -> None:
        """The cleaner removed everything the compaction made obsolete (Hive ``markCleaned``):
        ``ready for cleaning`` -> ``succeeded`` with the end time.

        Raises:
            CompactionStateError: the entry is not ``ready for cleaning``.
        """

    @abc.abstractmethod
    def mark_compaction_failed(self, cq_id: int, error: str,
                               details: dict[str, Any] | None = None) -> None:
        """The compaction failed (Hive ``markFailed``): the entry becomes ``failed`` with the
        error and end time, its transaction (if still open) is aborted. Already finished
        entries are left alone (idempotent for ``failed``).

        Raises:
            CompactionStateError: the entry already ``succeeded``.
        """

    @abc.abstractmethod
    def reclaim_dead_compactions(self, timeout_s: float | None = None,
                                 now: datetime | None = None) -> list[int]:
        """Put ``working`` entries whose worker stopped heartbeating back into the queue (Hive
        ``revokeTimedoutWorkers``): state ``initiated``, worker and start cleared, the dead
        worker's transaction aborted. A later worker re-runs them (the worker's temp directory
        is per entry, so the rerun finishes or discards what the dead one left).

        Args:
            timeout_s: heartbeat age that counts as dead; default ``txn_timeout_s``.
            now: reference time (UTC), default now.
        Returns:
            The reclaimed entry ids.
        """

    @abc.abstractmethod
    def compaction_history(self, table_name: str, partition: str | None) -> list[CompactionInfo]:
        """Finished entries of one (table, partition), newest first (Hive
        ``COMPLETED_COMPACTIONS`` as ``checkFailedCompactions`` reads it)."""

    @abc.abstractmethod
    def purge_compaction_history(self, retention: dict[str, int] | None = None) -> list[int]:
        """Apply history retention (Hive ``purgeCompactionHistory``): per (table, partition)
        keep the newest ``succeeded`` (3), ``failed`` (3, ``refused`` counted with them) and
        ``did not initiate`` (2) entries; delete older finished entries.

        Args:
            retention: overrides of :data:`DEFAULT_RETENTION` (state -> count).
        Returns:
            Ids deleted, ascending.
        """

    @abc.abstractmethod
    def compaction_candidates(self) -> list[tuple[str, str | None, int]]:
        """(table, partition, highest write id written) of every partition written by a
        committed transaction after the last compaction that covered it (Hive
        ``findPotentialCompactions`` over ``COMPLETED_TXN_COMPONENTS``), plus partitions with
        aborted writes not yet covered. Sorted by table, partition."""

    @abc.abstractmethod
    def aborted_write_ids(self, table_name: str, partition: str | None = None, *,
                          any_partition: bool = False) -> list[int]:
        """Write ids of aborted transactions that wrote (registered a component in) the
        partition (Hive: aborted ``TXN_COMPONENTS``), ascending; with ``any_partition`` every
        aborted write id of the table, written or not."""

    @abc.abstractmethod
    def forget_aborted_components(self, table_name: str, up_to_write_id: int) -> int:
        """After the cleaner removed a table's aborted directories: delete the
        ``txn_components`` rows of aborted transactions with write id <= ``up_to_write_id``
        (Hive ``markCleaned`` removes cleaned aborted ``TXN_COMPONENTS``). The write ids stay
        aborted in every ValidWriteIdList. Returns the rows deleted."""

    # ====================================================================================
    # Reader registrations (what the cleaner waits for)
    # ====================================================================================
    @abc.abstractmethod
    def register_reader(self, table_name: str,
                        valid_write_ids: ValidWriteIdList | None = None, *,
                        agent_info: str | None = None) -> ReaderInfo:
        """Register a snapshot reader of a table so the cleaner waits for it.

        The registration records the current value of the transaction sequence
        (``snapshot_seq``): a compaction committed with a commit id at or above it is newer
        than this reader's snapshot. Take the ValidWriteIdList *after* registering (or pass
        it here to have it recorded).

        Args:
            valid_write_ids: the reader's ``ValidWriteIdList`` (recorded for display).
            agent_info: free text; default ``"reader pid <pid>"``.
        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def set_reader_snapshot(self, reader_id: int, valid_write_ids: ValidWriteIdList) -> None:
        """Record the ValidWriteIdList a registered reader uses (display only)."""

    @abc.abstractmethod
    def heartbeat_reader(self, reader_id: int) -> bool:
        """Refresh a reader's heartbeat. Returns False when the registration is gone (it
        expired and was purged: the reader's files may have been cleaned)."""

    @abc.abstractmethod
    def unregister_reader(self, reader_id: int) -> None:
        """Remove a reader registration (missing is fine)."""

    @abc.abstractmethod
    def list_readers(self, table_name: str | None = None) -> list[ReaderInfo]:
        """Registered readers in id order, optionally of one table (expired ones included)."""

    @abc.abstractmethod
    def purge_expired_readers(self, timeout_s: float | None = None,
                              now: datetime | None = None) -> list[int]:
        """Delete registrations whose heartbeat is older than ``timeout_s`` (default
        ``txn_timeout_s``, Hive ``hive.txn.timeout``); returns their ids."""

    @abc.abstractmethod
    def blocking_readers(self, table_name: str, commit_id: int, *,
                         timeout_s: float | None = None, now: datetime | None = None
                         ) -> dict[str, list[int]]:
        """Who may still read directories that a compaction committed at ``commit_id`` made
        obsolete: live readers of the table registered at or before it (``snapshot_seq <=
        commit_id``, heartbeat younger than ``timeout_s``) and open transactions that started
        before it (``txn_id < commit_id``; a writer reads the table too). Hive H4's cleaner uses
        the same "min open txn" rule.

        Returns:
            ``{"readers": [reader ids], "txns": [txn ids]}`` (empty lists = safe to clean).
        """
