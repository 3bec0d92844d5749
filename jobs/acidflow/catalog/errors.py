"""Errors raised by a transaction catalog (any backend of :class:`acidflow.catalog.Catalog`).

Every error derives from :class:`CatalogError` (itself an
:class:`acidflow.errors.AcidflowError`); each one names the transaction, table and partition it
is about, both in its message and as attributes, so callers (CLI, Airflow tasks) can report or
branch on them. They mirror the exceptions of Hive's metastore thrift API
(``NoSuchObjectException``, ``AlreadyExistsException``, ``NoSuchTxnException``,
``TxnAbortedException``, ``TxnOpenException``) plus the lock-wait timeout Hive's
``DbLockManager`` raises as ``LockException``.
"""

from __future__ import annotations

from datetime import datetime

from acidflow.catalog.records import TxnState
from acidflow.errors import AcidflowError


class CatalogError(AcidflowError):
    """Base class of every catalog error (a subclass of :class:`AcidflowError`)."""


class NoSuchTableError(CatalogError):
    """The named table is not in the catalog (Hive ``NoSuchObjectException``).

    Attributes:
        table: normalised ``db.table`` name.
    """

    def __init__(self, table: str):
        self.table = table
        super().__init__(f"table {table} does not exist")


class TableExistsError(CatalogError):
    """``create_table`` of a name that is already taken (Hive ``AlreadyExistsException``).

    Attributes:
        table: normalised ``db.table`` name.
    """

    def __init__(self, table: str):
        self.table = table
        super().__init__(f"table {table} already exists")


class NoSuchTransactionError(CatalogError):
    """The transaction id was never opened here (Hive ``NoSuchTxnException``).

    Attributes:
        txn_id: the unknown id.
    """

    def __init__(self, txn_id: int):
        self.txn_id = txn_id
        super().__init__(f"transaction {txn_id} does not exist")


class TxnAbortedError(CatalogError):
    """The transaction is aborted (by the caller, a write conflict or the housekeeper's
    timeout) and can no longer be used (Hive ``TxnAbortedException``).

    Attributes:
        txn_id: the aborted transaction.
        reason: the recorded abort reason ("timed out", the write conflict, the caller's text).
    """

    def __init__(self, txn_id: int, reason: str | None = None):
        self.txn_id = txn_id
        self.reason = reason or ""
        suffix = f": {self.reason}" if self.reason else ""
        super().__init__(f"transaction {txn_id} is aborted{suffix}")


class TxnNotOpenError(CatalogError):
    """The transaction is already committed, so it cannot be written to, heartbeated,
    locked for or aborted any more.

    Attributes:
        txn_id: the transaction.
        state: its current state (``"committed"``).
    """

    def __init__(self, txn_id: int, state: str = TxnState.COMMITTED):
        self.txn_id = txn_id
        self.state = state
        super().__init__(f"transaction {txn_id} is not open (state {state})")


class WriteConflictError(TxnAbortedError):
    """Commit refused by the write-set check (Hive ``TxnHandler.commitTxn``, HIVE-13395
    "first committer wins"): another transaction that committed after this one opened
    updated/deleted in the same table partition. The transaction has been aborted.

    Subclasses :class:`TxnAbortedError` because the transaction is aborted when this is raised.

    Also raised by the key-level write set of keyed tables: both transactions wrote
    the same primary key (an insert, or the new version of an update), so committing both would
    leave two live rows for it. ``key_hash`` then names the key's 64-bit hash
    (``acidflow.format.keys.key_hash64``; ``None`` when a whole bucket was recorded, see
    ``acidflow.format.keys.MAX_KEYS_PER_SCOPE``) and ``bucket`` the bucket (-1 = any).

    Attributes:
        txn_id: the transaction that was aborted.
        other_txn_id: the transaction that committed first.
        other_commit_id: that transaction's commit id.
        table: ``db.table``.
        partition: partition spec (``"ds=2024-01-01"``) or ``None`` for the whole table.
        operation, other_operation: what each wrote (``"update"``, ``"delete"``,
            ``"insert_overwrite"``; ``"key write"`` for the key-level check).
        key_hash, bucket: see above; ``None`` for partition-level conflicts.
    """

    def __init__(
        self,
        txn_id: int,
        other_txn_id: int,
        other_commit_id: int,
        table: str,
        partition: str | None,
        operation: str = "",
        other_operation: str = "",
        *,
        key_hash: int | None = None,
        bucket: int | None = None,
    ):
        self.other_txn_id = other_txn_id
        self.other_commit_id = other_commit_id
        self.table = table
        self.partition = partition
        self.operation = operation
        self.other_operation = other_operation
        self.key_hash = key_hash
        self.bucket = bucket
        where = (
            f"{table} partition {partition}" if partition is not None else f"{table} (whole table)"
        )
        if bucket is not None and bucket >= 0:
            where += f" bucket {bucket}"
        if operation == "key write":
            what = (
                f"the primary key with hash {key_hash:#018x}"
                if key_hash is not None
                else "keys in the same bucket (recorded whole)"
            )
            reason = (
                f"write conflict on {where}: txn {other_txn_id} (commit id "
                f"{other_commit_id}) committed a write of {what} after txn {txn_id} "
                f"opened; txn {txn_id} wrote it too (duplicate primary key prevented)"
            )
        else:
            reason = (
                f"write conflict on {where}: txn {other_txn_id} (commit id "
                f"{other_commit_id}) committed {other_operation or 'a write'} there after "
                f"txn {txn_id} opened; txn {txn_id} wanted {operation or 'a write'}"
            )
        super().__init__(txn_id, reason)


class LockTimeoutError(CatalogError):
    """A lock could not be acquired within its timeout; the waiting request was removed
    (Hive ``DbLockManager`` ``LockException`` after ``hive.lock.numretries``).

    Attributes:
        txn_id: the requesting transaction.
        table: ``db.table``.
        partition: partition spec or ``None`` (table-level lock).
        lock_type: ``"shared_read"``, ``"shared_write"`` or ``"exclusive"``.
        timeout_s: the timeout in seconds.
        blocker_lock_id / blocker_txn_id: the lock (and its transaction) last seen blocking.
    """

    def __init__(
        self,
        txn_id: int,
        table: str,
        partition: str | None,
        lock_type: str,
        timeout_s: float,
        blocker_lock_id: int | None = None,
        blocker_txn_id: int | None = None,
    ):
        self.txn_id = txn_id
        self.table = table
        self.partition = partition
        self.lock_type = lock_type
        self.timeout_s = timeout_s
        self.blocker_lock_id = blocker_lock_id
        self.blocker_txn_id = blocker_txn_id
        where = (
            f"{table} partition {partition}" if partition is not None else f"{table} (whole table)"
        )
        by = ""
        if blocker_lock_id is not None:
            by = f"; blocked by lock {blocker_lock_id} of txn {blocker_txn_id}"
        super().__init__(
            f"txn {txn_id} timed out after {timeout_s:g} s waiting for a "
            f"{lock_type} lock on {where}{by}"
        )


class BatchAlreadyAppliedError(CatalogError):
    """The batch id was already applied by a committed transaction (an idempotent rerun: the
    caller reports and skips the batch).

    Attributes:
        batch_id: the batch.
        txn_id: the transaction that applied it.
        committed_at: its commit time (UTC) or ``None``.
    """

    def __init__(self, batch_id: str, txn_id: int, committed_at: datetime | None = None):
        self.batch_id = batch_id
        self.txn_id = txn_id
        self.committed_at = committed_at
        super().__init__(
            f"batch {batch_id} was already applied by transaction {txn_id}"
            + (f" at {committed_at:%Y-%m-%d %H:%M:%S}Z" if committed_at else "")
        )


class BatchInProgressError(CatalogError):
    """Another open transaction is applying the same batch right now.

    Attributes:
        batch_id: the batch.
        txn_id: the open transaction that holds it.
    """

    def __init__(self, batch_id: str, txn_id: int):
        self.batch_id = batch_id
        self.txn_id = txn_id
        super().__init__(
            f"batch {batch_id} is being applied by open transaction {txn_id}; "
            "wait for it to commit or time out"
        )


class CompactionStateError(CatalogError):
    """A compaction queue entry is not in the state the operation needs (names the entry and
    its state), e.g. a worker heartbeating an entry that was reclaimed after a timeout (Hive's
    compactor sees the same as a missing ``COMPACTION_QUEUE`` row)."""


class NoSuchSavepointError(CatalogError, KeyError):
    """The table has no savepoint of that name.

    Attributes:
        table: ``db.table``; name: the savepoint asked for.
    """

    def __init__(self, table: str, name: str):
        self.table, self.name = table, name
        super().__init__(f"table {table} has no savepoint {name!r}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class SavepointExistsError(CatalogError, ValueError):
    """A savepoint of that name exists on the table already.

    Attributes:
        table: ``db.table``; name: the savepoint's name; write_id: the one it pins.
    """

    def __init__(self, table: str, name: str, write_id: int):
        self.table, self.name, self.write_id = table, name, write_id
        super().__init__(
            f"table {table} has a savepoint {name!r} already (write id {write_id}); "
            "delete it first or choose another name"
        )


class CatalogDatabaseError(CatalogError):
    """The catalog's database cannot be used: it cannot be opened or created, is read-only,
    locked beyond the busy timeout, corrupt (not a database), or refused a statement. The
    message is one line: what happened, the catalog URL (password masked), what to do.

    Attributes:
        url: the catalog URL, password masked.
        problem: ``"read-only"``, ``"locked"``, ``"corrupt"``, ``"cannot-open"``,
            ``"not-initialised"`` (no catalog tables: ``acidflow catalog init``),
            ``"foreign"`` or ``"error"``.
    """

    def __init__(self, url: str, problem: str, message: str):
        self.url = url
        self.problem = problem
        super().__init__(message)


class ForeignDatabaseError(CatalogDatabaseError):
    """The catalog URL points at a database that has tables but is not an acidflow catalog
    (no ``acidflow_alembic_version`` with one of acidflow's revisions). Nothing was changed;
    ``acidflow catalog init --force`` adds the catalog tables to it deliberately.

    Attributes:
        url: the catalog URL, password masked.
        tables: some of the tables found there.
    """

    def __init__(self, url: str, tables: list[str], detail: str = ""):
        self.tables = tables
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        super().__init__(
            url,
            "foreign",
            f"catalog database {url} is not an acidflow catalog: it holds other tables "
            f"({shown}){detail}; refusing to add acidflow's tables to it. Point "
            "ACIDFLOW_CATALOG_URL at an acidflow catalog or an empty database, or run "
            "`acidflow catalog init --force` to use this one anyway",
        )


class WarehouseOwnedError(CatalogError):
    """The warehouse belongs to another catalog (its ``_acidflow_warehouse.json`` names a
    different catalog id): this catalog would hand out write ids the owner already used and
    overwrite its data, so it refuses to write there. Reads are not checked.

    Attributes:
        warehouse: the warehouse root.
        owner_id, owner_url: the owning catalog's id and (masked) URL from the marker.
        catalog_id, catalog_url: this catalog's id and (masked) URL.
    """

    def __init__(
        self, warehouse: str, owner_id: str, owner_url: str, catalog_id: str, catalog_url: str
    ):
        self.warehouse = warehouse
        self.owner_id = owner_id
        self.owner_url = owner_url
        self.catalog_id = catalog_id
        self.catalog_url = catalog_url
        super().__init__(
            f"warehouse {warehouse} belongs to catalog {owner_id} ({owner_url}), not to this "
            f"catalog {catalog_id} ({catalog_url}); refusing to write there. Check "
            "ACIDFLOW_CATALOG_URL / ACIDFLOW_WAREHOUSE (two catalogs on one warehouse hand "
            "out the same write ids and overwrite each other's data)"
        )


class NewCatalogOnOwnedWarehouseError(WarehouseOwnedError):
    """A catalog database that did not exist (or was empty) was just created for a warehouse
    another catalog owns: most often the owner's catalog file was moved or deleted, and a new,
    empty catalog would hide every table and history of the warehouse. Opening it is refused
    and the new database is removed again (a new SQLite file deleted, a PostgreSQL database
    migrated back to empty), so nothing is left behind."""

    def __init__(
        self, warehouse: str, owner_id: str, owner_url: str, catalog_id: str, catalog_url: str
    ):
        super().__init__(warehouse, owner_id, owner_url, catalog_id, catalog_url)
        self.args = (
            f"{catalog_url} held no acidflow catalog, but warehouse {warehouse} belongs to "
            f"catalog {owner_id} ({owner_url}): refusing to start an empty catalog there (it "
            "would hide the warehouse's tables and history). If the owner's catalog database "
            "was moved or deleted, put it back at its URL, or point ACIDFLOW_CATALOG_URL at it; "
            "nothing was created",
        )


class TableLocationError(CatalogError, ValueError):
    """A table location outside the warehouse: a relative location whose ``..`` escapes it,
    or an absolute path / URL outside it without ``external: true``.

    Attributes:
        table, location, warehouse: what was refused and where.
    """

    def __init__(self, table: str, location: str, warehouse: str, why: str):
        self.table = table
        self.location = location
        self.warehouse = warehouse
        super().__init__(f"table {table}: location {location!r} {why} (warehouse {warehouse})")
