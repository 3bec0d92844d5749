"""The table role of the Hive Metastore catalog: tables live in the metastore (Hive's
storage descriptor for transactional ORC, :mod:`.tables`), with a mirror row on the side
catalog (its write ids keep coming from the metastore).

:class:`MetastoreTables` is the part of :class:`acidflow.catalog.hms.catalog.HiveMetastoreCatalog`
that creates, reads, alters, drops and adopts tables (Hive ``create_table`` / ``get_table_req``
/ ``alter_table_with_environment_context`` / ``drop_table``); the contract is
:class:`acidflow.catalog.api.TableCatalog`. docs/hms-catalog.md has the whole design.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    ClientCapabilities,
    ClientCapability,
    Database,
    EnvironmentContext,
    GetTableRequest,
    InvalidOperationException,
    NoSuchObjectException,
)

from acidflow.catalog.base import Catalog
from acidflow.catalog.errors import (
    CatalogError,
    NoSuchTableError,
    TableExistsError,
    TxnAbortedError,
    TxnNotOpenError,
)
from acidflow.catalog.hms.client import (
    MetastoreConnection,
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
    replay_write_ids,
)
from acidflow.catalog.records import (
    TxnState,
)
from acidflow.catalog.schemahistory import SchemaVersion
from acidflow.catalog.sql import SqlCatalog
from acidflow.catalog.sql.schemahistory import check_columns
from acidflow.catalog.tabledef import (
    Column,
    TableDef,
    split_table_name,
)
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.schemaevolution import SchemaChangeError
from acidflow.storage.adoption import check_adoptable

#: The longest write-id history :meth:`HiveMetastoreCatalog.adopt_table` replays into a new
#: metastore table (one metastore transaction per write id, opened in batches of
#: ``metastore.txn.max.open.batch`` = 1000, Hive's default).
ADOPT_REPLAY_LIMIT = 10_000


class MetastoreTables(Catalog):
    """The table role on a Hive metastore (a part of ``HiveMetastoreCatalog``, which sets the
    attributes below)."""

    url: str
    conn: MetastoreConnection
    hooks: MetastoreTxnHooks
    side: SqlCatalog
    _owner: str
    _known_parts: set[tuple[str, str, str]]
    _lock: threading.Lock

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
        """Hive: the metastore's ``create_table`` decides races; a side row older than the
        metastore's table (Hive dropped and re-made it) is replaced."""
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
        """Hive: the metastore's table (full-ACID ORC only), mirrored on the side."""
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
        """Hive: the metastore's full-ACID ORC tables; others are left out."""
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
        """Hive: the side first, then the metastore's ``drop_table`` with ``deleteData=false`` (Hive's
        ``AcidEventListener`` removes its transactional rows)."""
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
        """Hive: the metastore first (``alter_table_with_environment_context`` with ``CASCADE``),
        then the side; a side failure puts the metastore's columns back."""
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
        # the metastore applies its own positional type rule (refusing what
        # hive.metastore.disallow.incompatible.col.type.changes forbids); a rewrite passes
        # through an empty column list first: Hive checks types only over the positions both
        # lists have, and the rewritten files no longer need the old positions
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
        """Hive: a table the metastore has keeps its write ids; a new one gets the history replayed
        (:func:`~acidflow.catalog.hms.txns.replay_write_ids`)."""
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
