"""Tables and their schema versions (Hive metastore ``create_table`` / ``get_table`` /
``drop_table`` / ``alter_table``).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``).
The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

from acidflow.catalog.schemahistory import (
    SchemaVersion,
)
from acidflow.catalog.tabledef import Column, TableDef
from acidflow.format.layout import ValidWriteIdList


class TableCatalog(abc.ABC):
    """Tables and their schema versions (Hive metastore ``create_table`` / ``get_table`` /
    ``drop_table`` / ``alter_table``)."""

    @abc.abstractmethod
    def create_table(
        self, table: TableDef | dict[str, Any], if_not_exists: bool = False
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
            TableLocationError: the location leaves the warehouse (``..``), or is outside it
                without ``external`` (a ``ValueError`` too).
            TableExistsError: the name is taken and ``if_not_exists`` is false.
            WarehouseOwnedError: another catalog owns the warehouse
                (:meth:`check_warehouse_owner`).
            acidflow.catalog.hms.tables.NotAnAcidTableError: metastore backend, with
                ``if_not_exists``: the existing table is not full-ACID ORC.
        """

    @abc.abstractmethod
    def adopt_table(self, table: TableDef | dict[str, Any], history: ValidWriteIdList) -> TableDef:
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

        On the metastore backend the write ids stay the metastore's: a table the metastore
        already has keeps them (``history`` must agree with its ``get_valid_write_ids``: same
        high watermark, every open / aborted write id of the history invalid there; only
        acidflow's facts such as the primary key are registered), a new one is created there
        with the history replayed; :meth:`write_id_states` and :meth:`commit_records` then list
        acidflow's own writes only, and :meth:`compaction_candidates` offers the adopted
        partitions through the metastore's high watermark.

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
            WarehouseOwnedError: another catalog owns the warehouse
                (:meth:`check_warehouse_owner`).
            CatalogError: the history disagrees with what the store knows of the table
                (metastore backend: a table the metastore has keeps Hive's write ids; names
                the table and both lists); metastore backend: a history of more than
                ``acidflow.catalog.hms.tablerole.ADOPT_REPLAY_LIMIT`` write ids for a table the
                metastore does not have (each would be replayed as a metastore transaction;
                create the table in Hive first); the metastore's table is not full-ACID ORC
                (``NotAnAcidTableError``).
        """

    @abc.abstractmethod
    def get_table(self, name: str) -> TableDef:
        """The definition of ``name`` (``"db.t"`` or ``"t"`` = ``"default.t"``).

        Raises:
            NoSuchTableError: unknown table.
            acidflow.catalog.hms.tables.NotAnAcidTableError: metastore backend: the metastore's
                table is not transactional, insert-only, not ORC or external (names the table
                and the reason).
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

    # --- schema evolution ----------------------------------------------------
    @abc.abstractmethod
    def alter_schema(
        self,
        txn_id: int,
        name: str,
        columns: Sequence[Column | dict[str, Any]],
        *,
        change: Mapping[str, Any],
    ) -> TableDef:
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
