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

The contract of each method, with the errors it raises, is its docstring on the role
(:mod:`acidflow.catalog.api`) or here, once; a backend's method adds at most a one-line note of
what is backend-specific. Raised by every method and not repeated in each: ``ValueError`` for a
malformed table name; a :class:`~acidflow.catalog.errors.CatalogError` when the store cannot be
used (SQL: :class:`~acidflow.catalog.errors.CatalogDatabaseError`, naming the URL; metastore:
``MetastoreError`` / ``MetastoreUnreachableError``); and, on the metastore backend, wherever a
table is named that the metastore has but acidflow must not write,
``acidflow.catalog.hms.tables.NotAnAcidTableError`` (a ``CatalogError``).
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from acidflow.catalog.api import (
    BatchLedger,
    CompactionQueue,
    DataFileRegistry,
    ReaderRegistry,
    SavepointRegistry,
)
from acidflow.catalog.errors import CatalogError, NoSuchTransactionError
from acidflow.catalog.records import TxnState
from acidflow.catalog.schemapolicy import SchemaPolicies
from acidflow.catalog.warehouse import check_owner
from acidflow.config import Settings, load_settings
from acidflow.storage.fs import TableFS

if TYPE_CHECKING:
    pass

#: Makes a catalog: ``factory(url, *, warehouse=..., migrate=..., **kwargs) -> Catalog``.
CatalogFactory = Callable[..., "Catalog"]

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


def is_embedded(url: str) -> bool:
    """True for an embedded catalog: a SQLite database (the default, a file in the warehouse,
    :mod:`acidflow.config`), which the process that opens it creates and migrates on first
    use (serialised between processes, :meth:`acidflow.catalog.sql.db.Database.upgrade`).
    A server catalog (PostgreSQL, a Hive metastore) is set up once by ``acidflow catalog
    init``; code that must not change a shared server's schema behind its owner's back
    (the Spark data source) opens it without migrating."""
    return url_scheme(url) == "sqlite"


def load_catalog(
    url: str | None = None, *, warehouse: str | None = None, migrate: bool = True, **kwargs: Any
) -> Catalog:
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
    factory = factory or _resolve_backend(_DEFAULT_KEY)
    if factory is None:  # pragma: no cover - acidflow.catalog registers the SQL backend
        raise CatalogError(f"no catalog backend for URL {url!r}")
    return factory(url, warehouse=warehouse, migrate=migrate, **kwargs)


class Catalog(
    SchemaPolicies,
    BatchLedger,
    CompactionQueue,
    ReaderRegistry,
    DataFileRegistry,
    SavepointRegistry,
):
    """A transaction catalog: acidflow's stand-in for the Hive metastore's table and TXN
    tables (Hive ``TxnHandler`` / ``TxnStore``, ``AcidHouseKeeperService``,
    ``CompactionTxnHandler``): the facade over the catalog's roles
    (:mod:`acidflow.catalog.api`: tables, transactions, locks, batches, compactions, readers)
    and the schema policies over them (:mod:`acidflow.catalog.schemapolicy`), plus what a
    catalog is as a whole (its id, store, warehouse and visibility lookup).

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
        return load_catalog(
            settings.catalog_url,
            warehouse=settings.warehouse,
            txn_timeout_s=settings.txn_timeout_s,
            migrate=migrate,
        )

    def close(self) -> None:
        """Release connections (the catalog stays usable; they are reopened on demand).
        The default does nothing."""

    def __enter__(self) -> Catalog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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

    def visibility_lookup(self) -> Callable[[int], str] | None:
        """The ``_v<T>`` lookup a reader, the initiator, the cleaner and the compactor pass to
        :func:`acidflow.storage.state.acid_state` for this catalog's tables: on an object-store
        warehouse (``s3://``...) :meth:`visibility_state`, so that the output of a compaction
        stays invisible until its transaction commits (the compactor writes it there under its
        final ``_v<T>`` name, no rename; Hive 4 checks T against the reader's
        ``ValidTxnList``); ``None`` on local warehouses (their compactor publishes by rename
        and writes no ``_v`` suffix)."""
        if TableFS(self.warehouse).renames_atomically:
            return None
        return self.visibility_state

    def visibility_state(self, txn_id: int) -> str:
        """State of the visibility transaction ``T`` of a ``base_N_v<T>`` / ``delta_x_y_v<T>``
        directory: ``"open"``, ``"committed"`` or ``"aborted"`` (:meth:`get_transaction`); a
        transaction this catalog never had (a directory written by another system, e.g. a
        Hive 4 table adopted here) counts as ``"committed"``, as Trino reads it."""
        try:
            return self.get_transaction(txn_id).state
        except NoSuchTransactionError:
            return TxnState.COMMITTED

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
        """The version of the catalog's schema in its store (SQL: the Alembic revision;
        metastore backend: its side catalog's Alembic revision - the metastore's own schema is
        Hive's), ``None`` when the store has no acidflow schema yet (a readiness probe for
        UIs)."""
