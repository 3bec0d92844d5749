"""The metastore as the authority of the side catalog's ids: :class:`MetastoreTxnHooks` implements
:class:`acidflow.catalog.sql.shared.TxnHooks` over thrift - transaction ids from ``open_txns``,
commit ids from a one-call transaction of the metastore's sequence, write ids from
``allocate_table_write_ids``, the commit's visibility point ``commit_txn``, aborts
``abort_txn`` - and keeps each transaction's snapshot (Hive's ``ValidTxnList`` at open, as
Hive's driver records it in ``hive.txn.valid.txns``).

Hive's answers become acidflow's errors: ``TxnAbortedException`` at ``commit_txn`` is a
:class:`~acidflow.catalog.errors.WriteConflictError` when Hive's write-set check found a
conflict (``TxnHandler.commitTxn``: "Aborting [txnid:N,M] due to a write conflict on
db/table/partition committed by [txnid:A,B] op/op"), else a
:class:`~acidflow.catalog.errors.TxnAbortedError` (the housekeeper aborted it after
``metastore.txn.timeout`` without heartbeat).
"""

from __future__ import annotations

import getpass
import re
import socket
import threading

from pymetastore.hive_metastore.ttypes import (
    AbortTxnRequest,
    AbortTxnsRequest,
    AllocateTableWriteIdsRequest,
    CommitTxnRequest,
    DataOperationType,
    LockComponent,
    LockLevel,
    LockRequest,
    LockType,
    NoSuchTxnException,
    OpenTxnRequest,
    TxnAbortedException,
)

from acidflow.catalog.errors import (
    CatalogError,
    NoSuchTransactionError,
    TxnAbortedError,
    WriteConflictError,
)
from acidflow.catalog.hms.client import MetastoreConnection, valid_txn_list
from acidflow.catalog.tabledef import TableDef
from acidflow.format.layout import ValidWriteIdList

#: Hive 3.1's write-conflict message of ``TxnHandler.commitTxn``.
_CONFLICT_RE = re.compile(
    r"write conflict on (?P<db>[^/\s]+)/(?P<tbl>[^/\s]+)(?:/(?P<part>\S+))? committed by "
    r"\[txnid:(?P<other>\d+),(?P<commit>\d+)\](?: (?P<ops>\S+))?"
)


def hive_abort_error(txn_id: int, message: str) -> TxnAbortedError:
    """The acidflow error of a metastore ``TxnAbortedException`` message: a
    :class:`WriteConflictError` for Hive's write-set conflict, else :class:`TxnAbortedError`
    with Hive's message as the reason."""
    hit = _CONFLICT_RE.search(message or "")
    if hit is None:
        return TxnAbortedError(txn_id, f"aborted by the Hive metastore: {message}")
    ops = (hit.group("ops") or "/").split("/")
    part = hit.group("part")
    return WriteConflictError(
        txn_id,
        int(hit.group("other")),
        int(hit.group("commit")),
        f"{hit.group('db')}.{hit.group('tbl')}",
        None if part in (None, "null", "NULL") else part,
        ops[-1] if len(ops) > 1 else "",
        ops[0],
    )


class MetastoreTxnHooks:
    """:class:`acidflow.catalog.sql.shared.TxnHooks` over a metastore connection.

    Attributes:
        conn: the :class:`MetastoreConnection`.
        snapshots: ``{txn id: ValidTxnList string}`` of the transactions this process opened
            (their snapshot at open; ``valid_write_ids(txn_id=...)`` reads with it).
    """

    def __init__(self, conn: MetastoreConnection) -> None:
        self.conn = conn
        self.user = getpass.getuser()
        self.host = socket.gethostname()
        self.snapshots: dict[int, str] = {}
        self._lock = threading.Lock()

    def open_txn(self, agent_info: str) -> int:
        """``open_txns`` (one transaction) and its snapshot: ``get_open_txns`` right after,
        without the new id (Hive ``TxnUtils.createValidReadTxnList``)."""
        (txn_id,) = self.conn.call(
            "open_txns",
            OpenTxnRequest(num_txns=1, user=self.user, hostname=self.host, agentInfo=agent_info),
        ).txn_ids
        txns = valid_txn_list(self.conn.call("get_open_txns"), txn_id)
        with self._lock:
            self.snapshots[txn_id] = txns
        return int(txn_id)

    def commit_id(self) -> int:
        """The id of a transaction opened and committed at once: from the metastore's
        ``NEXT_TXN_ID``, so it is larger than every transaction opened before and smaller
        than every one opened after (the side catalog serialises its opens with its commits).
        The empty transaction leaves nothing behind in the metastore's ``TXNS``."""
        (txn_id,) = self.conn.call(
            "open_txns",
            OpenTxnRequest(
                num_txns=1, user=self.user, hostname=self.host, agentInfo="acidflow commit id"
            ),
        ).txn_ids
        self.conn.call("commit_txn", CommitTxnRequest(txnid=txn_id))
        return int(txn_id)

    def committing(self, txn_id: int, commit_id: int) -> None:
        """``commit_txn``: the visibility point; Hive's write-set check runs here.

        Raises:
            WriteConflictError: Hive found a write conflict (the transaction is aborted there).
            TxnAbortedError: the metastore had aborted it (timeout).
            NoSuchTransactionError: the metastore does not know the id.
        """
        try:
            self.conn.call("commit_txn", CommitTxnRequest(txnid=txn_id))
        except TxnAbortedException as exc:
            raise hive_abort_error(txn_id, str(exc.message)) from None
        except NoSuchTxnException:
            raise NoSuchTransactionError(txn_id) from None
        with self._lock:
            self.snapshots.pop(txn_id, None)

    def aborting(self, txn_ids: list[int], reason: str) -> None:
        """``abort_txn`` of each id; ones the metastore already aborted (or forgot) are fine."""
        for txn_id in txn_ids:
            try:
                self.conn.call("abort_txn", AbortTxnRequest(txnid=txn_id))
            except (NoSuchTxnException, TxnAbortedException):
                pass
            with self._lock:
                self.snapshots.pop(txn_id, None)

    def write_id(self, txn_id: int, db: str, tbl: str) -> int:
        """``allocate_table_write_ids`` for one transaction (Hive returns the same write id
        again for a transaction that already has one for the table).

        Raises:
            TxnAbortedError: the metastore aborted the transaction.
            NoSuchTransactionError: the metastore does not know it.
        """
        try:
            (alloc,) = self.conn.call(
                "allocate_table_write_ids",
                AllocateTableWriteIdsRequest(dbName=db, tableName=tbl, txnIds=[txn_id]),
            ).txnToWriteIds
        except TxnAbortedException as exc:
            raise hive_abort_error(txn_id, str(exc.message)) from None
        except NoSuchTxnException:
            raise NoSuchTransactionError(txn_id) from None
        return int(alloc.writeId)


#: Transactions opened per ``open_txns`` call when a history is replayed (Hive's default
#: ``metastore.txn.max.open.batch``).
OPEN_TXN_BATCH = 1000


def replay_write_ids(
    conn: MetastoreConnection, table: TableDef, history: ValidWriteIdList, user: str, host: str
) -> None:
    """Give a new metastore table the write-id history ``history`` (``adopt_table``): one
    transaction per write id 1..hwm (``open_txns`` in batches of :data:`OPEN_TXN_BATCH`, one
    ``allocate_table_write_ids`` per batch, which maps them in txn order), the history's open and
    aborted ids aborted after a table lock component (so Hive's ``TXN_COMPONENTS`` keeps the
    aborted transaction: one without components is deleted by Hive's initiator and its write
    id would then read as committed), the others committed. (Hive's ``repl_tbl_writeid_state``
    does not serve: it seeds ``NEXT_WRITE_ID`` but maps only the aborted write ids, and Hive
    3.1's ``getValidWriteIds`` takes its high watermark from the highest *mapped* write id, so
    Hive would not see the committed ones above the last aborted one.)

    Raises:
        CatalogError: the metastore did not hand out exactly 1..hwm (the table had write ids).
    """
    hwm = history.high_watermark
    txns: list[int] = []
    by_write_id: dict[int, int] = {}
    while len(txns) < hwm:  # Hive caps one open_txns at metastore.txn.max.open.batch (1000)
        batch = list(
            conn.call(
                "open_txns",
                OpenTxnRequest(
                    num_txns=min(OPEN_TXN_BATCH, hwm - len(txns)),
                    user=user,
                    hostname=host,
                    agentInfo=f"acidflow adopt {table.name}",
                ),
            ).txn_ids
        )
        txns.extend(batch)
        alloc = conn.call(
            "allocate_table_write_ids",
            AllocateTableWriteIdsRequest(
                dbName=table.db_name, tableName=table.table_name, txnIds=batch
            ),
        ).txnToWriteIds
        by_write_id.update({a.writeId: a.txnId for a in alloc})
    if sorted(by_write_id) != list(range(1, hwm + 1)):
        conn.call("abort_txns", AbortTxnsRequest(txn_ids=txns))
        raise CatalogError(
            f"adopt {table.name}: the metastore at {conn.url} allocated "
            f"write ids {sorted(by_write_id)[:5]}..., not 1..{hwm}"
        )
    dead = set(history.open_write_ids) | set(history.aborted_write_ids)
    for write_id in range(1, hwm + 1):
        txn = by_write_id[write_id]
        if write_id in dead:
            conn.call(
                "lock",
                LockRequest(
                    component=[
                        LockComponent(
                            type=LockType.SHARED_READ,
                            level=LockLevel.TABLE,
                            dbname=table.db_name,
                            tablename=table.table_name,
                            operationType=DataOperationType.INSERT,
                            isTransactional=True,
                        )
                    ],
                    txnid=txn,
                    user=user,
                    hostname=host,
                ),
            )
            conn.call("abort_txns", AbortTxnsRequest(txn_ids=[txn]))
        else:
            conn.call("commit_txn", CommitTxnRequest(txnid=txn))
