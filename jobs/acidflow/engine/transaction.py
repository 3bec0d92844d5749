"""A catalog transaction and the write statements that hang off it: insert, delete by key,
upsert (split-update), insert overwrite and the split-update primitive of CDC merges.

Every statement follows Hive 3's ``OrcRecordUpdater`` in split-update mode
(docs/hive-acid-format.md §5):

* insert -> insert events ``(0, W, bucket(N, S), rowId, W, row)`` in
  ``<partition>/delta_W_W_S/bucket_N``;
* delete -> delete events ``(2, <old ROW__ID>, W, NULL)`` in ``delete_delta_W_W_S/bucket_N``
  where N is the bucket (or writer) id decoded from the deleted row's bucket property, sorted by
  the deleted ROW__ID;
* upsert (update) -> the delete event of the old version plus a new insert event (new ROW__ID)
  in the same write id and statement id;
* insert overwrite -> ``base_W`` (an insert-overwrite base: no ``_metadata_acid``) in every
  partition the data touches, or at the table root.

W is the table's write id in the transaction (Hive ``allocateTableWriteIds``), S the statement
id (0, 1, ... per statement on the same table in one transaction, at most 4095), N the Hive
bucket number of the row for bucketed tables (``acidflow.format.bucketing_hash``, the table's
``bucketing_version``) or the Spark task's partition id for unbucketed ones. Files become
visible only when the transaction commits: until then W is an open write id, an exception in
every reader's ``ValidWriteIdList``; a crashed writer's W is later aborted by the housekeeper
and stays invisible.

Each statement runs the same prologue (table, lock, statement id, write id) and epilogue
(``_orc_acid_version`` in every new directory, the transaction's components, the statistics of
the commit record): :meth:`Transaction.begin_statement` / :meth:`Transaction.end_statement` (the
``StatementContext`` port of ``acidflow.engine.ports``, which ``engine/statements`` type against).
"""

from __future__ import annotations

import getpass
import logging
import socket
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Sequence, TypeAlias

import pyarrow as pa

from acidflow.engine import conform, lookup, ordering
from acidflow.engine.conform import DuplicateKeyError, SchemaMismatchError
from acidflow.engine.ports import TableDesc, TxnCatalog
from acidflow.engine.statements import dml, external
from acidflow.engine.statements import insert as insert_stmt
from acidflow.engine.statements.merge import MergeBuilder
from acidflow.engine.writer import (
    FileRow,
    WriteResult,
    WriteSpec,
    finish_dirs,
    write_delete_events,
    write_insert_events,
)
from acidflow.format import acidv1 as acidv1_rules
from acidflow.format import keys
from acidflow.format import partitions as parts
from acidflow.format.bucketing import check_statement_id
from acidflow.format.filerecords import file_records
from acidflow.states import LockType, TxnState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: What :attr:`Transaction.state` holds: ``"new"`` until :meth:`Transaction.begin`, then a
#: :class:`~acidflow.states.TxnState` (open, then committed or aborted). Compares equal to the
#: bare words.
TransactionState: TypeAlias = Literal["new"] | TxnState


class Transaction:
    """A catalog transaction as a context manager: commits on normal exit, aborts on error;
    the write statements are its methods (``txn.insert("db.t", df)``).

    Keeps one write id per table (allocated on first use, Hive ``allocateTableWriteIds``),
    hands out statement ids per table, collects write statistics for the commit record, and
    heartbeats from a daemon thread every ``heartbeat_s`` seconds (default a third of the
    catalog's ``txn_timeout_s``, as Hive clients heartbeat well inside ``hive.txn.timeout``).

    Args:
        catalog: the transaction catalog (``acidflow.catalog.Catalog``).
        spark: the session delete/upsert read current rows with; default the session of the
            DataFrame passed in, else ``SparkSession.getActiveSession()``.
        user, agent_info: recorded with the transaction (default the OS user and "acidflow").
        heartbeat_s: heartbeat period in seconds; 0 disables the thread.
    Attributes:
        state: a :data:`TransactionState`: ``"new"``, then ``TxnState.OPEN``, then
            ``TxnState.COMMITTED`` or ``TxnState.ABORTED`` (equal to the bare words).
    Raises:
        acidflow.catalog.errors.WriteConflictError: from commit, when a concurrent transaction
            (one that committed after this one opened) updated or deleted in the same
            partition, or -- keyed tables -- wrote one of the same primary keys (the
            transaction is aborted; nothing of it is visible).
    """

    def __init__(
        self,
        catalog: TxnCatalog,
        *,
        spark: "SparkSession | None" = None,
        user: str | None = None,
        agent_info: str = "acidflow",
        heartbeat_s: float | None = None,
    ):
        self.catalog = catalog
        self._spark = spark
        self.user = user or getpass.getuser()
        self.agent_info = agent_info
        self.heartbeat_s = (catalog.txn_timeout_s / 3.0) if heartbeat_s is None else heartbeat_s
        self.txn_id: int | None = None
        self._write_ids: dict[str, int] = {}
        self._statements: dict[str, int] = {}
        self.stats: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.state: TransactionState = "new"

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "Transaction":
        self.begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc_type is None:
            self.commit()
        else:
            self.abort(f"{exc_type.__name__}: {exc}")
        return False

    def begin(self) -> int:
        """Open the transaction in the catalog (Hive ``openTxns``); returns the txn id."""
        txn_id = self.catalog.open_transaction(
            user=self.user, host=socket.gethostname(), agent_info=self.agent_info
        )
        self.txn_id = txn_id
        self.state = TxnState.OPEN
        if self.heartbeat_s > 0:
            self._thread = threading.Thread(
                target=self._beat, daemon=True, name=f"txn-{txn_id}-heartbeat"
            )
            self._thread.start()
        return txn_id

    def _open_id(self) -> int:
        if self.txn_id is None:
            raise RuntimeError("transaction not begun: use `with Transaction(...)` or begin()")
        return self.txn_id

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.catalog.heartbeat(self._open_id())
            except Exception as exc:  # noqa: BLE001 - reported, commit will fail loudly
                log.warning("heartbeat of txn %s failed: %s", self.txn_id, exc)
                return

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def write_id(self, table_name: str) -> int:
        """The table's write id in this transaction (allocated once)."""
        if table_name not in self._write_ids:
            self._write_ids[table_name] = self.catalog.allocate_write_id(
                self._open_id(), table_name
            )
        return self._write_ids[table_name]

    def next_statement_id(self, table_name: str) -> int:
        """0 for the first statement on a table in this transaction, then 1, 2, ...

        Raises:
            ValueError: a 4097th statement (the statement id has 12 bits in ``BucketCodec`` V1).
        """
        sid = check_statement_id(
            self._statements.get(table_name, -1) + 1,
            hint="more than 4096 statements on one table in one transaction",
        )
        self._statements[table_name] = sid
        return sid

    def record(self, table_name: str, operation: str, result: WriteResult) -> None:
        """Add a write's statistics to the commit record of ``table_name`` and record its
        files (``result.file_list``: partition, size, event count) in the catalog
        (``Catalog.record_data_files``): readers, fsck and the compactor compare them with
        the listing (:mod:`acidflow.format.filecheck`)."""
        if result.file_list:
            self.catalog.record_data_files(
                self._open_id(), table_name, file_records(result.write_id, result.file_list)
            )
        st = self.stats.setdefault(
            table_name,
            {
                "operations": [],
                "rows_inserted": 0,
                "rows_updated": 0,
                "rows_deleted": 0,
                "files": 0,
                "bytes": 0,
                "partitions": {},
            },
        )
        st["operations"].append(operation)
        for k in ("rows_inserted", "rows_updated", "rows_deleted", "files", "bytes"):
            st[k] += getattr(result, k)
        if result.rows_skipped_late:
            st["rows_skipped_late"] = st.get("rows_skipped_late", 0) + result.rows_skipped_late
        for p, pst in result.partitions.items():
            agg = st["partitions"].setdefault(p, {"files": 0, "bytes": 0, "rows": 0})
            for k in agg:
                agg[k] += pst[k]

    def commit(self) -> int:
        """Commit: all writes of the transaction become visible at once (Hive ``commitTxn``).
        Returns the commit id."""
        self._stop_heartbeat()
        try:
            commit_id = self.catalog.commit_transaction(self._open_id(), self.stats)
        except Exception:
            self.state = TxnState.ABORTED
            raise
        self.state = TxnState.COMMITTED
        return commit_id

    def abort(self, reason: str = "") -> None:
        """Abort: nothing written in the transaction ever becomes visible."""
        self._stop_heartbeat()
        if self.state == TxnState.OPEN:
            self.catalog.abort_transaction(self._open_id(), reason)
        self.state = TxnState.ABORTED

    # ------------------------------------------------------------------ statement frame
    # (the StatementContext port of acidflow.engine.ports: what engine/statements call)

    def session(self, *frames: Any) -> "SparkSession":
        """The Spark session statements run in: the ``spark=`` given, else the session of the
        first DataFrame among ``frames`` that has one, else the active session.

        Raises:
            RuntimeError: no session anywhere.
        """
        if self._spark is not None:
            return self._spark
        for f in frames:
            session = getattr(f, "sparkSession", None)
            if session is not None:
                return session
        # deferred: pyspark is imported only when a statement needs a session
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is None:
            raise RuntimeError("no active SparkSession: pass Transaction(catalog, spark=...)")
        return active

    def lock_table(self, table: TableDesc, lock_type: LockType) -> None:
        """Take the statement lock on ``table`` (Hive ``lock``: :attr:`LockType.SHARED_WRITE`
        for DML, :attr:`LockType.EXCLUSIVE` for an overwrite) and check that its schema is
        still the one the statement planned with.

        Raises:
            SchemaMismatchError: the table's columns changed while the lock was awaited, or
                the catalog reports a schema problem for this writer.
        """
        self.catalog.acquire_lock(self._open_id(), table.name, None, lock_type)
        # a schema change (``acidflow table alter``, exclusive lock) may have
        # committed while this statement waited; its files would be laid out for the old
        # columns, so the statement stops before writing anything
        now = self.catalog.get_table(table.name)
        if [(c.name, c.hive_type) for c in now.columns] != [
            (c.name, c.hive_type) for c in table.columns
        ]:
            raise SchemaMismatchError(
                f"table {table.name}: its schema changed while this statement waited for its "
                f"lock ({', '.join(f'{c.name} {c.hive_type}' for c in table.columns)} -> "
                f"{', '.join(f'{c.name} {c.hive_type}' for c in now.columns)}); nothing was "
                "written, run the statement again"
            )
        problem = self.catalog.writer_schema_problem(table.name, self._open_id())
        if problem is not None:
            raise SchemaMismatchError(f"table {table.name}: {problem}; nothing was written")

    def begin_statement(self, table: TableDesc, *kinds: str, **options: Any) -> list[WriteSpec]:
        """Take the next statement id of ``table`` (and its write id): one spec per event
        kind (``"insert"``, ``"delete"``, ``"base"``) written by the statement.

        Raises:
            acidflow.format.acidv1.AcidV1WriteError: the table still holds ACID v1 directories
                (marked at adoption; ``acidflow table upgrade`` first).
        """
        acidv1_rules.check_writable(table.name, table.properties)
        sid = self.next_statement_id(table.name)
        return [
            WriteSpec.for_table(table, kind, self.write_id(table.name), sid, **options)
            for kind in kinds
        ]

    def end_statement(
        self,
        table: TableDesc,
        operation: str,
        written: Sequence[tuple[WriteSpec, list[FileRow]]],
        components: Sequence[tuple[str, str]],
        counts: dict[str, int],
        extra_partitions: Sequence[str] = (),
    ) -> WriteResult:
        """The one statement epilogue: ``_orc_acid_version`` in every directory the statement
        created (and in the statement directory of ``extra_partitions``), the write's
        statistics, the transaction's components (``(partition, operation)``, Hive
        ``TXN_COMPONENTS``), for a keyed table the hashes of the primary keys it wrote
        (``Catalog.add_write_keys``, the key-level write set) and the commit record."""
        for spec, files in written:
            finish_dirs(spec, files, extra_partitions)
        first = written[0][0]
        result = WriteResult(first.write_id, first.statement_id)
        result.add_files([f for _, files in written for f in files])
        for k, v in counts.items():
            setattr(result, k, v)
        for partition, op in components:
            self.catalog.add_component(self._open_id(), table.name, partition or None, op)
        scopes = keys.write_scopes(
            table, [f for spec, files in written if spec.kind != "delete" for f in files]
        )
        if scopes:  # keyed table: the key-level write set checked at commit
            self.catalog.add_write_keys(self._open_id(), table.name, scopes)
        self.record(table.name, operation, result)
        return result

    def split_update(
        self,
        table: TableDesc,
        aligned: "DataFrame | pa.Table",
        matched: "DataFrame | pa.Table",
        operation: str,
        counts: dict[str, int] | None = None,
        **options: Any,
    ) -> WriteResult:
        """One split-update statement: delete events for the ROW__IDs in ``matched``
        (partition columns, ``owid``, ``bprop``, ``rowid``) and insert events for the rows of
        ``aligned``, both in ``W``/statement ``S``. Spark DataFrames are written by Spark
        tasks, Arrow tables in this process.

        ``counts`` gives ``rows_inserted``/``rows_updated``/``rows_deleted`` (and
        ``rows_skipped_late``) explicitly; those it leaves out default to: every delete event
        is an update and the remaining inserts are new rows."""
        del_spec, ins_spec = self.begin_statement(table, "delete", "insert", **options)
        del_files = write_delete_events(matched, table, del_spec)
        ins_files = write_insert_events(aligned, table, ins_spec)
        deleted = sum(f["rows"] for f in del_files)
        inserted = sum(f["rows"] for f in ins_files)
        counts = {"rows_updated": deleted, "rows_inserted": inserted - deleted, **(counts or {})}
        del_parts = {f["partition"] for f in del_files}
        components = [(p, "update" if ins_files else "delete") for p in sorted(del_parts)]
        components += [
            (p, "insert") for p in sorted({f["partition"] for f in ins_files} - del_parts)
        ]
        return self.end_statement(
            table, operation, [(del_spec, del_files), (ins_spec, ins_files)], components, counts
        )

    # ------------------------------------------------------------------ write statements

    def insert(
        self,
        table_name: str,
        df: "DataFrame | pa.Table",
        *,
        on_existing: str = "error",
        **options: Any,
    ) -> WriteResult:
        """Append the rows of ``df`` to a table (Hive INSERT INTO on a full-ACID table). Into a
        table with a primary key an insert never creates a second live row of a key
        (:mod:`acidflow.engine.statements.insert`, the rules of :mod:`acidflow.format.keys`):
        NULL keys and keys repeated in the batch are refused, keys already stored are handled
        as ``on_existing`` says.

        Args:
            table_name: ``db.table``.
            df: every table column and partition column (any order, names matched
                case-insensitively, types equal or widenable): a Spark DataFrame (written by
                Spark tasks), or a pyarrow Table (cast like :meth:`upsert`'s), looked up and
                written in this process -- no Spark needed.
            on_existing: keyed tables, a key already in the transaction's snapshot:
                ``"error"`` (default) refuses the batch, ``"upsert"`` replaces the stored row
                (:meth:`upsert`), ``"ignore"`` inserts only the rows of new keys (Hive ``MERGE
                ... WHEN NOT MATCHED THEN INSERT``). Unkeyed tables: only ``"error"``.
            **options: ``compression`` (zlib|snappy), ``stripe_rows``.
        Returns:
            :class:`WriteResult` (rows_inserted, files, bytes, partitions; ``"upsert"``: also
            rows_updated).
        Raises:
            SchemaMismatchError: before anything is written.
            acidflow.engine.statements.insert.NullKeyError: a NULL in a key column.
            acidflow.engine.statements.insert.ExistingKeysError: a key repeated in the batch,
                or (``"error"``) already stored; names the table, the keys and the write ids
                holding them. Nothing is written.
            ValueError: an unknown ``on_existing``, or other than ``"error"`` for a table
                without a primary key.
            acidflow.catalog.errors.LockTimeoutError: the table is exclusively locked.
        """
        if on_existing == "upsert":
            insert_stmt.check_on_existing(self.catalog.get_table(table_name), on_existing)
            return self.upsert(table_name, df, **options)
        return insert_stmt.insert(self, table_name, df, on_existing=on_existing, **options)

    def delete(
        self,
        table_name: str,
        keys_df: "DataFrame | None" = None,
        *,
        where: "dml.Expr | bool | None" = None,
        **options: Any,
    ) -> WriteResult:
        """Delete rows: by primary key -- the rows whose key is in ``keys_df`` (Hive DELETE
        ... WHERE key IN ...) -- or by predicate -- ``where=`` (Hive ``DELETE FROM t WHERE
        ...``, :func:`acidflow.engine.statements.dml.delete_where`; keyed or not).

        Args:
            keys_df: DataFrame holding at least the primary key columns (extra columns
                ignored).
            where: a Spark Column or Spark SQL string over the table's columns (``True``
                deletes every row); not together with ``keys_df``.
        Returns:
            :class:`WriteResult` with ``rows_deleted`` = rows found and deleted (keys that
            match no row are not errors and are not counted).
        Raises:
            SchemaMismatchError: key columns missing or of incompatible types.
            ValueError: the table has no primary key (by key); both or neither of
                ``keys_df`` and ``where``.
        """
        if (keys_df is None) == (where is None):
            raise ValueError(
                f"delete from {table_name}: give either keys_df (delete by key) "
                "or where= (delete by predicate)"
            )
        if keys_df is None:
            return dml.delete_where(self, table_name, where, **options)
        table = self.catalog.get_table(table_name)
        keys = conform.key_columns_present(keys_df, table)
        self.lock_table(table, LockType.SHARED_WRITE)
        (spec,) = self.begin_statement(table, "delete", **options)
        matched = lookup.matching_rows(
            self.session(keys_df), self.catalog, self, table, keys
        ).cache()
        try:
            files = write_delete_events(matched, table, spec)
        finally:
            matched.unpersist()
        return self.end_statement(
            table,
            "delete",
            [(spec, files)],
            [(p, "delete") for p in sorted({f["partition"] for f in files})],
            {"rows_deleted": sum(f["rows"] for f in files)},
        )

    def upsert(
        self,
        table_name: str,
        df: "DataFrame | pa.Table",
        *,
        ordering_field: "str | None | ordering.TableDefault" = ordering.TABLE_DEFAULT,
        **options: Any,
    ) -> WriteResult:
        """Insert new keys and replace existing ones (split-update): for a key already in
        the table a delete event for its current ROW__ID plus an insert event for the new
        version, both in ``W``/statement ``S``; for a new key an insert event only. The
        existing rows are looked up in the transaction's snapshot (taken when it opened);
        a key another transaction wrote after that makes the commit fail with
        ``WriteConflictError`` (key-level write set) instead of duplicating it.

        With an ordering field (Hudi's precombine field with ``DefaultHoodieRecordPayload``;
        the rule is :mod:`acidflow.engine.ordering`, shared with CDC): several rows of one key
        in the batch keep the one with the greatest ordering value (the last in input order
        among equal ones -- for a Spark DataFrame ``monotonically_increasing_id()`` order);
        a batch row whose value is not greater than the stored row's (equal included, NULL
        lowest) is dropped, the stored row stays, and it is counted as ``rows_skipped_late``
        (WriteResult and commit record).

        Args:
            df: full rows (every column): a Spark DataFrame (read and written by Spark
                tasks), or a pyarrow Table with the table's columns (cast to its types like
                :func:`acidflow.engine.conform.aligned_arrow`), looked up and written in this
                process -- no Spark needed. Without an ordering field at most one row per
                primary key.
            ordering_field: a column of the table; default the table's declared
                ``ordering_column`` (none declared = no ordering); ``None`` turns ordering
                off even when the table declares a column.
        Returns:
            :class:`WriteResult` with ``rows_inserted`` (new keys), ``rows_updated`` and
            ``rows_skipped_late``.
        Raises:
            SchemaMismatchError: before anything is written.
            DuplicateKeyError: without an ordering field, two rows share a key.
            acidflow.engine.statements.insert.NullKeyError: a NULL in a key column (the
                NULL-key rule of :mod:`acidflow.format.keys`).
            acidflow.engine.ordering.OrderingFieldError: the ordering field is no column of the
                table, or of a type without an order (complex, binary, boolean).
            ValueError: the table has no primary key.
        """
        table = self.catalog.get_table(table_name)
        key = list(table.primary_key)
        if not key:
            raise ValueError(f"table {table.name} has no primary key; upsert needs one")
        field = ordering.resolve_field(table, ordering_field)
        if isinstance(df, pa.Table):
            return self._upsert_arrow(table, df, field, **options)
        # deferred: pyspark is imported only by the statements that run Spark SQL
        from pyspark.sql import functions as F

        aligned = conform.aligned(df, table)
        insert_stmt.refuse_null_keys_spark(table, aligned, "upsert into")
        if field is not None:
            seq = "_acid_input_seq"
            aligned = ordering.latest_per_key(
                aligned.withColumn(seq, F.monotonically_increasing_id()), key, field, seq
            ).drop(seq)
        aligned = aligned.cache()
        try:
            if field is None:
                dups = aligned.groupBy(*key).count().where(F.col("count") > 1).limit(5).collect()
                if dups:
                    raise DuplicateKeyError(
                        f"upsert into {table.name}: duplicate keys in the batch, e.g. "
                        + ", ".join(str({k: r[k] for k in key}) for r in dups)
                    )
            self.lock_table(table, LockType.SHARED_WRITE)
            matched = lookup.matching_rows(
                self.session(df),
                self.catalog,
                self,
                table,
                aligned.select(*key),
                extra=[field] if field else (),
            ).cache()
            try:
                if field is None:
                    return self.split_update(table, aligned, matched, "upsert", **options)
                fresh, current, late = ordering.drop_late(aligned, matched, key, field)
                return self.split_update(
                    table, fresh, current, "upsert", {"rows_skipped_late": late}, **options
                )
            finally:
                matched.unpersist()
        finally:
            aligned.unpersist()

    def _upsert_arrow(
        self, table: TableDesc, rows: pa.Table, field: str | None, **options: Any
    ) -> WriteResult:
        """:meth:`upsert` of a pyarrow Table in this process: key lookup in the buckets (and
        partitions) the keys hash to at the transaction's snapshot, then one split-update."""
        key = list(table.primary_key)
        aligned = conform.aligned_arrow(rows, table)
        insert_stmt.refuse_null_keys_arrow(table, aligned, "upsert into")
        if field is not None:
            aligned, _ = ordering.latest_per_key_arrow(aligned, key, field)
        else:
            dups = keys.repeated_keys(key, aligned)
            if dups.num_rows:
                raise DuplicateKeyError(
                    f"upsert into {table.name}: duplicate keys in the batch, e.g. "
                    + ", ".join(str({k: r[k] for k in key}) for r in dups.slice(0, 5).to_pylist())
                )
        self.lock_table(table, LockType.SHARED_WRITE)
        found = lookup.existing_rows_arrow(
            self.catalog, table, self, aligned.select(key), extra=[field] if field else ()
        )
        late = 0
        if field is not None:
            aligned, found, late = ordering.drop_late_arrow(aligned, found, key, field)
        deletes = lookup.row_id_columns(table, found)
        return self.split_update(
            table, aligned, deletes, "upsert", {"rows_skipped_late": late}, **options
        )

    def update(
        self,
        table_name: str,
        where: "dml.Expr | None" = None,
        *,
        set: "dict[str, Any]",
        **options: Any,
    ) -> WriteResult:  # noqa: A002
        """Predicate UPDATE (Hive ``UPDATE t SET col = value ... WHERE ...``): every matching
        row becomes a delete event of its ROW__ID plus an insert event of the new version
        (split-update), :func:`acidflow.engine.statements.dml.update`.

        Args:
            where: Spark Column or Spark SQL string over the table's columns (None = all rows).
            set: ``{column: value}``, values as Columns, SQL strings or Python literals.
        Returns:
            :class:`WriteResult` with ``rows_updated``.
        Raises:
            acidflow.engine.statements.dml.DmlError: a partition, bucketing or primary key column in
                ``set``, an unknown column or bad SQL -- before anything is written.
        """
        return dml.update(self, table_name, where, set, **options)

    def merge(
        self, table_name: str, source: "DataFrame", on: "dml.Expr | Sequence[str]", **options: Any
    ) -> "MergeBuilder":
        """A MERGE INTO ``table_name`` USING ``source`` builder in Delta's shape (aliases
        ``t`` and ``s``): add ``when_matched_update`` / ``when_matched_delete`` /
        ``when_not_matched_insert`` clauses, then ``execute()`` -> :class:`WriteResult`.
        See :mod:`acidflow.engine.statements.merge`."""
        return MergeBuilder(self, table_name, source, on, **options)

    def insert_overwrite(
        self,
        table_name: str,
        df: "DataFrame | pa.Table",
        partitions: list[dict[str, Any]] | None = None,
        *,
        check_keys: bool = True,
        **options: Any,
    ) -> WriteResult:
        """Replace the contents of the table, or of partitions, with ``df`` (Hive INSERT
        OVERWRITE): writes ``base_W`` into each target directory; older bases and deltas
        become obsolete for readers whose snapshot includes W.

        Args:
            df: full rows: a Spark DataFrame (written by Spark tasks), or a pyarrow Table
                with the table's columns (cast like :meth:`apply_row_changes`), written in
                this process.
            partitions: for a partitioned table, the partitions to overwrite as
                ``[{"ds": "2024-01-01"}, ...]``; they are emptied even when ``df`` has no rows
                for them. Default: the partitions present in ``df`` (Hive's dynamic-partition
                overwrite).
            check_keys: a keyed table's key rules (``statements.insert.check_overwrite``);
                False writes ``df`` as it is (a restore writing back rows of an earlier
                snapshot of the same table).
        Returns:
            :class:`WriteResult`.
        Raises:
            SchemaMismatchError: before anything is written; also when ``df`` holds rows
                outside the given ``partitions``.
            NullKeyError, ExistingKeysError: a table with a primary key: a NULL key, a key
                on more than one row of ``df``, or a key stored in a partition not replaced
                (``statements.insert.check_overwrite``); before anything is written.
            acidflow.catalog.errors.LockTimeoutError: another transaction holds a lock on the
                table.
        """
        table = self.catalog.get_table(table_name)
        pnames = [c.name for c in table.partition_columns]
        explicit = [
            parts.make_partition_path([(p, spec_[p]) for p in pnames])
            for spec_ in (partitions or [])
        ]
        aligned: "DataFrame | pa.Table"
        if isinstance(df, pa.Table):
            aligned = conform.aligned_arrow(df, table)
            rows = aligned.select(pnames).to_pylist() if explicit and pnames else []
        else:
            aligned = conform.aligned(df, table)
            rows = aligned.select(*pnames).distinct().collect() if explicit and pnames else []
        if explicit and pnames:
            present = {parts.make_partition_path([(p, r[p]) for p in pnames]) for r in rows}
            outside = present - set(explicit)
            if outside:
                raise SchemaMismatchError(
                    f"insert overwrite {table.name}: rows for partitions not being "
                    "overwritten: " + ", ".join(sorted(outside))
                )
        if table.primary_key and check_keys:
            insert_stmt.check_overwrite(self, table, aligned, set(explicit) if explicit else None)
        self.lock_table(table, LockType.EXCLUSIVE)
        (spec,) = self.begin_statement(table, "base", **options)
        files = write_insert_events(aligned, table, spec)
        return external.end_insert_statement(
            self, table, [(spec, files)], overwrite=True, partitions=explicit
        )

    def reserve_statement_ids(self, table_name: str, last: int) -> None:
        """Count every statement id up to ``last`` on ``table_name`` as handed out (writers
        elsewhere numbered their statements above the one :meth:`begin_statement` gave).

        Raises:
            ValueError: ``last`` above 4095 (``BucketCodec`` V1's 12 bits).
        """
        check_statement_id(last, hint="more than 4096 statements on one table in one transaction")
        self._statements[table_name] = max(self._statements.get(table_name, -1), last)

    # ------------------------------------------------------------- across processes

    @property
    def handle(self) -> "TxnHandle":
        """This open transaction as a value another process can :meth:`resume`."""
        return TxnHandle(self._open_id(), dict(self._write_ids), dict(self._statements))

    @classmethod
    def resume(
        cls, catalog: TxnCatalog, handle: "TxnHandle", *, agent_info: str = "acidflow"
    ) -> "Transaction":
        """A handle on an open transaction that another process began (a Spark data source
        writer is planned in one Python worker, written by executors and committed from
        another worker: the transaction travels as a :class:`TxnHandle`). The resumed
        transaction does not heartbeat (``heartbeat_s`` 0); :meth:`commit` / :meth:`abort`
        end it as usual."""
        txn = cls(catalog, agent_info=agent_info, heartbeat_s=0)
        txn.txn_id, txn.state = handle.txn_id, TxnState.OPEN
        txn._write_ids, txn._statements = dict(handle.write_ids), dict(handle.statements)
        return txn


@dataclass(frozen=True)
class TxnHandle:
    """An open transaction as it travels between processes (picklable).

    Attributes:
        txn_id: the catalog's transaction id.
        write_ids: ``{table: write id}`` allocated so far.
        statements: ``{table: last statement id handed out}``.
    """

    txn_id: int
    write_ids: dict[str, int] = field(default_factory=dict)
    statements: dict[str, int] = field(default_factory=dict)
