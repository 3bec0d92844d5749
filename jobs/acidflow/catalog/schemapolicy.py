"""The schema policies of a catalog: which columns a snapshot reads, and when a writer must
stop because a schema change is in its way.

Rules over a catalog's recorded schema versions (:meth:`TableCatalog.schema_history`, Hive's
column changes as ``acidflow table alter`` commits them): a reader uses the columns of the
newest version its ``ValidWriteIdList`` sees; a writer stops when the newest version was
aborted after it replaced the columns, or when a version that moved data positions committed
after its snapshot. They are not part of any role's contract: :class:`SchemaPolicies`
implements them once over the table, transaction and lock roles, and the catalog facade
(:class:`acidflow.catalog.base.Catalog`) inherits them.
"""

from __future__ import annotations

from acidflow.catalog.api import LockCatalog, TableCatalog, TransactionCatalog
from acidflow.catalog.records import LockType, TxnState
from acidflow.catalog.schemahistory import (
    SchemaVersion,
    pick_version,
    renames_of,
    rewrites,
)
from acidflow.catalog.tabledef import Column, TableDef
from acidflow.format.layout import ValidWriteIdList

__all__ = ["SchemaPolicies"]


class SchemaPolicies(TableCatalog, TransactionCatalog, LockCatalog):
    """The schema policies, over any backend's tables, transactions and locks."""

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
        return newest if self.get_transaction(newest.txn_id).state == TxnState.ABORTED else None

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
            return (
                f"its last schema change (write id {aborted.write_id}, transaction "
                f"{aborted.txn_id}) was aborted after it had replaced the columns; the "
                "cleaner (`acidflow clean`) or the next `acidflow table alter` puts the "
                "committed columns back"
            )
        if not any(rewrites(v) for v in history if v.txn_id is not None):
            return None
        valid = self.valid_write_ids(name, txn_id=txn_id)
        for v in reversed(history):
            if v.txn_id is None or v.txn_id == txn_id or not rewrites(v):
                continue
            if (
                not valid.is_write_id_valid(v.write_id)
                and self.get_transaction(v.txn_id).state == TxnState.COMMITTED
            ):
                return (
                    f"a schema change that rewrote its data (write id {v.write_id}) "
                    f"committed after transaction {txn_id} opened; its snapshot's files "
                    "are laid out for the old columns: run the statement in a new "
                    "transaction"
                )
        return None

    def revert_aborted_schema_change(
        self, name: str, *, lock_timeout_s: float = 60.0
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
        before = next(
            v
            for v in reversed(history)
            if v.write_id < aborted.write_id
            and (v.txn_id is None or self.get_transaction(v.txn_id).state == TxnState.COMMITTED)
        )
        renames = {new: old for old, new in renames_of(aborted).items()}
        change = {
            "op": "revert",
            "of_write_id": aborted.write_id,
            "rewrite": True,
            "renames": renames,
        }
        txn_id = self.open_transaction(agent_info="acidflow schema revert")
        try:
            self.allocate_write_id(txn_id, name)
            self.acquire_lock(txn_id, name, None, LockType.EXCLUSIVE, timeout_s=lock_timeout_s)
            if self.aborted_schema_change(name) is None:  # another process reverted it
                self.abort_transaction(txn_id, "nothing to revert")
                return None
            self.alter_schema(txn_id, name, before.columns, change=change)
            self.commit_transaction(
                txn_id,
                {
                    self.get_table(name).name: {
                        "operations": ["schema"],
                        "schema_change": change,
                        "rows_inserted": 0,
                        "rows_updated": 0,
                        "rows_deleted": 0,
                        "files": 0,
                        "bytes": 0,
                        "partitions": {},
                    }
                },
            )
        except BaseException as exc:
            if self.get_transaction(txn_id).state == TxnState.OPEN:
                self.abort_transaction(txn_id, f"{type(exc).__name__}: {exc}")
            raise
        return aborted
