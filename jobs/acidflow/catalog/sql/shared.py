"""Row primitives shared by the SQL catalog's parts: find a table or transaction row, check a
partition spec, take the next value of the global transaction sequence, abort transactions.

Each function takes the open ``sqlalchemy.Connection`` of the caller's unit of work
(:meth:`acidflow.catalog.sql.db.Database.run`) and never commits; they are the pieces every
idea (tables, transactions, locks, batches, compactions, readers) needs, so no part reaches
into another.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, TypeAlias, Unpack

import sqlalchemy as sa

from acidflow.catalog.errors import (
    NoSuchTableError,
    NoSuchTransactionError,
    TxnAbortedError,
    TxnNotOpenError,
)
from acidflow.catalog.records import TxnState
from acidflow.catalog.sql import schema as m
from acidflow.catalog.tabledef import parse_partition_spec

#: A result row (``sqlalchemy.Row``) of one catalog table.
Row: TypeAlias = "sa.Row[Unpack[tuple[Any, ...]]]"

#: ``Connection.info`` key under which :meth:`Database.run` passes the catalog's hooks.
HOOKS_KEY = "acidflow_txn_hooks"


class TxnHooks(Protocol):
    """An outside authority for transaction ids, commit ids and write ids (the Hive metastore
    of :class:`acidflow.catalog.hms.HiveMetastoreCatalog`, whose side catalog is a
    ``SqlCatalog`` with these hooks). Every hook runs inside the catalog's database
    transaction, so a hook that raises rolls the unit of work back; the global sequence row
    (``next_txn_id``) is locked before ``open_txn`` / ``commit_id`` run, which serialises
    opens and commits of one catalog database."""

    def open_txn(self, agent_info: str) -> int:
        """Open a transaction at the authority; its id becomes the catalog's txn id."""

    def commit_id(self) -> int:
        """A commit id from the authority's transaction sequence: larger than every txn id
        opened so far, smaller than every txn id opened after the commit."""

    def committing(self, txn_id: int, commit_id: int) -> None:
        """The last step of a commit (the visibility point at the authority); raising rolls
        the catalog's commit back."""

    def aborting(self, txn_ids: list[int], reason: str) -> None:
        """Transactions the catalog is aborting (abort them at the authority too)."""

    def write_id(self, txn_id: int, db: str, tbl: str) -> int:
        """The write id the authority allocated to ``txn_id`` for ``db.tbl``."""


def hooks(conn: sa.Connection) -> TxnHooks | None:
    """The hooks of the catalog running ``conn``'s unit of work, ``None`` for a plain
    SQL catalog."""
    found: TxnHooks | None = conn.info.get(HOOKS_KEY)
    return found


def table_row(conn: sa.Connection, db: str, tbl: str) -> Row:
    """The ``tbls`` row of ``db.tbl`` (Hive ``TBLS``).

    Raises:
        NoSuchTableError: unknown table.
    """
    row = conn.execute(
        sa.select(m.Tbl.__table__).where(m.Tbl.db_name == db, m.Tbl.tbl_name == tbl)
    ).first()
    if row is None:
        raise NoSuchTableError(f"{db}.{tbl}")
    return row


def check_partition(conn: sa.Connection, db: str, tbl: str, partition: str | None) -> str | None:
    """Validate ``partition`` against the table's partition columns; return its normalised
    spec (keys lower-case, in table order) or ``None`` (whole table).

    Raises:
        NoSuchTableError: unknown table.
        ValueError: a spec for an unpartitioned table, or keys that are not the table's
            partition columns in order.
    """
    row = table_row(conn, db, tbl)
    if partition is None:
        return None
    keys = [
        r.pkey_name
        for r in conn.execute(
            sa.select(m.PartitionKey.pkey_name)
            .where(m.PartitionKey.tbl_id == row.tbl_id)
            .order_by(m.PartitionKey.integer_idx)
        )
    ]
    if not keys:
        raise ValueError(
            f"table {db}.{tbl} is not partitioned; partition must be None, got {partition!r}"
        )
    parts = parse_partition_spec(partition)
    if [k for k, _ in parts] != keys:
        raise ValueError(
            f"partition {partition!r} does not match the partition columns "
            f"{keys} of table {db}.{tbl}"
        )
    return "/".join(f"{k}={v}" for k, v in parts)


def txn_row(conn: sa.Connection, txn_id: int, *, for_update: bool = False) -> Row:
    """The ``txns`` row of a transaction (Hive ``TXNS``), optionally locked ``FOR UPDATE``.

    Raises:
        NoSuchTransactionError: unknown id.
    """
    q = sa.select(m.Txn.__table__).where(m.Txn.txn_id == txn_id)
    if for_update:
        q = q.with_for_update()
    row = conn.execute(q).first()
    if row is None:
        raise NoSuchTransactionError(txn_id)
    return row


def open_txn_row(conn: sa.Connection, txn_id: int) -> Row:
    """Lock the transaction's row and check it is open.

    Raises:
        NoSuchTransactionError, TxnAbortedError, TxnNotOpenError.
    """
    row = txn_row(conn, txn_id, for_update=True)
    if row.txn_state == TxnState.ABORTED:
        raise TxnAbortedError(txn_id, row.txn_abort_reason)
    if row.txn_state != TxnState.OPEN:
        raise TxnNotOpenError(txn_id, row.txn_state)
    return row


def next_txn_id(conn: sa.Connection) -> int:
    """Take the next value of the global sequence (Hive ``NEXT_TXN_ID``; row locked
    ``FOR UPDATE``). Transaction ids and commit ids both come from it."""
    value: int = conn.execute(
        sa.select(m.NextTxnId.ntxn_next).where(m.NextTxnId.id == 1).with_for_update()
    ).scalar_one()
    conn.execute(sa.update(m.NextTxnId).where(m.NextTxnId.id == 1).values(ntxn_next=value + 1))
    return value


def set_txn_seq(conn: sa.Connection, value: int) -> None:
    """Set the global sequence's next value (after the authority of :class:`TxnHooks` gave an
    id, so that the catalog's sequence follows it)."""
    conn.execute(sa.update(m.NextTxnId).where(m.NextTxnId.id == 1).values(ntxn_next=value))


def open_txn_id(conn: sa.Connection, agent_info: str) -> int:
    """The id of a transaction being opened: the next value of the global sequence, or the
    id the hooks' authority gave (the sequence then follows it)."""
    value = next_txn_id(conn)
    h = hooks(conn)
    if h is None:
        return value
    txn_id = h.open_txn(agent_info)
    set_txn_seq(conn, max(value, txn_id) + 1)
    return txn_id


def take_commit_id(conn: sa.Connection) -> int:
    """A commit id: the next value of the global sequence, or the hooks' authority's."""
    value = next_txn_id(conn)
    h = hooks(conn)
    if h is None:
        return value
    commit_id = h.commit_id()
    set_txn_seq(conn, max(value, commit_id) + 1)
    return commit_id


def current_txn_seq(conn: sa.Connection) -> int:
    """The next value of the global sequence, without taking it (a snapshot's position)."""
    value: int = conn.execute(
        sa.select(m.NextTxnId.ntxn_next).where(m.NextTxnId.id == 1)
    ).scalar_one()
    return value


def insert_open_txn(
    conn: sa.Connection,
    txn_id: int,
    now: datetime,
    user: str | None,
    host: str | None,
    agent_info: str,
) -> None:
    """Insert the ``txns`` row of a newly opened transaction (Hive ``openTxns``)."""
    conn.execute(
        sa.insert(m.Txn).values(
            txn_id=txn_id,
            txn_state=TxnState.OPEN,
            txn_started=now,
            txn_last_heartbeat=now,
            txn_heartbeat_count=0,
            txn_user=user,
            txn_host=host,
            txn_agent_info=agent_info,
        )
    )


def commit_txn_row(conn: sa.Connection, txn_id: int, commit_id: int, now: datetime) -> None:
    """Mark a transaction committed with its commit id and release its locks."""
    conn.execute(
        sa.update(m.Txn)
        .where(m.Txn.txn_id == txn_id)
        .values(txn_state=TxnState.COMMITTED, txn_commit_id=commit_id, txn_committed=now)
    )
    conn.execute(sa.delete(m.HiveLock).where(m.HiveLock.txn_id == txn_id))
    h = hooks(conn)
    if h is not None:
        h.committing(txn_id, commit_id)


def abort_txns(conn: sa.Connection, txn_ids: list[int], reason: str, now: datetime) -> None:
    """Mark transactions aborted with ``reason`` and drop their locks (Hive ``abortTxns``);
    their write ids stay allocated (aborted) and their components stay for the cleaner."""
    if not txn_ids:
        return
    conn.execute(
        sa.update(m.Txn)
        .where(m.Txn.txn_id.in_(txn_ids))
        .values(txn_state=TxnState.ABORTED, txn_aborted=now, txn_abort_reason=reason)
    )
    conn.execute(sa.delete(m.HiveLock).where(m.HiveLock.txn_id.in_(txn_ids)))
    h = hooks(conn)
    if h is not None:
        h.aborting(list(txn_ids), reason)


def txn_state(conn: sa.Connection, txn_id: int) -> str | None:
    """The state of a transaction, or ``None`` when the id is unknown."""
    state: str | None = conn.execute(
        sa.select(m.Txn.txn_state).where(m.Txn.txn_id == txn_id)
    ).scalar()
    return state


def same_part(column: Any, part: str | None) -> sa.ColumnElement[bool]:
    """SQL condition "``column`` is partition ``part``" (``None`` = the whole-table NULL)."""
    cond: sa.ColumnElement[bool] = column.is_(None) if part is None else column == part
    return cond
