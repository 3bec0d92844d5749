"""Hive ``ValidTxnList`` strings the metastore catalog builds itself, and the widening of a
Hive snapshot to acidflow's ``ValidWriteIdList`` contract (pure functions over thrift answers).

A ``ValidTxnList`` string is ``<hwm>:<minOpenTxn>:<open ids>:<aborted ids>``
(``ValidReadTxnList.writeToString``); ``get_valid_write_ids`` turns it into a table's write-id
snapshot (Hive ``TxnHandler.getValidWriteIds``).
"""

from __future__ import annotations

from collections.abc import Iterable

from pymetastore.hive_metastore.ttypes import GetOpenTxnsResponse

from acidflow.catalog.hms.client import NO_OPEN_TXN
from acidflow.format.layout import ValidWriteIdList


def split_open_txns(resp: GetOpenTxnsResponse) -> tuple[list[int], list[int]]:
    """``(open ids, aborted ids)`` of a ``get_open_txns`` answer (``abortedBits``: a Java
    BitSet over ``open_txns``, bit set = aborted)."""
    bits = int.from_bytes(resp.abortedBits or b"", "little")
    opened = [t for i, t in enumerate(resp.open_txns) if not bits >> i & 1]
    aborted = [t for i, t in enumerate(resp.open_txns) if bits >> i & 1]
    return opened, aborted


def txn_list_string(hwm: int, opened: Iterable[int], aborted: Iterable[int]) -> str:
    """Hive's string of a ValidTxnList (ids sorted, ``minOpenTxn`` = lowest open id or
    ``Long.MAX_VALUE``)."""
    o, a = sorted(set(opened)), sorted(set(aborted))
    return f"{hwm}:{o[0] if o else NO_OPEN_TXN}:{','.join(map(str, o))}:{','.join(map(str, a))}"


def rebuilt_txn_list(resp: GetOpenTxnsResponse, txn_id: int, late: Iterable[int]) -> str:
    """The snapshot ``txn_id`` took at open, rebuilt later (another process opened it): high
    watermark ``txn_id`` (no transaction above it can be visible to it), the metastore's open
    and aborted ids below it, and ``late`` - transactions below it known to have committed
    after it opened (the side catalog's, by commit id) - as open."""
    opened, aborted = split_open_txns(resp)
    return txn_list_string(
        txn_id, [t for t in opened if t < txn_id] + list(late), [t for t in aborted if t < txn_id]
    )


def compactor_txn_list(resp: GetOpenTxnsResponse, late_of: dict[int, list[int]]) -> str | None:
    """The ValidTxnList of the oldest open transaction as it opened, without its own writes
    (high watermark ``minOpenTxn - 1``, aborted ids below it, ``late_of[minOpenTxn]`` as
    open), or ``None`` when nothing is open."""
    opened, aborted = split_open_txns(resp)
    if not opened:
        return None
    oldest = min(opened)
    return txn_list_string(oldest - 1, late_of.get(oldest, []), [t for t in aborted if t < oldest])


def widen(snapshot: ValidWriteIdList, current: ValidWriteIdList) -> ValidWriteIdList:
    """``snapshot`` with the high watermark of ``current`` and the write ids between the two
    as exceptions, every write id ``current`` knows as aborted marked aborted (a transaction
    open at the snapshot that aborted since stays invisible either way). Hive ends a
    snapshot's list at the write ids it can see; acidflow's contract puts the high watermark
    at the table's highest allocated write id - the same files are read."""
    dead = set(current.aborted_write_ids)
    hwm = max(snapshot.high_watermark, current.high_watermark)
    later = set(range(snapshot.high_watermark + 1, hwm + 1))
    invalid = set(snapshot.open_write_ids) | set(snapshot.aborted_write_ids) | later
    opened = sorted(w for w in invalid if w not in dead and w not in snapshot.aborted_write_ids)
    aborted = sorted(invalid - set(opened))
    return ValidWriteIdList(
        snapshot.table_name, hwm, opened, aborted, opened[0] if opened else None
    )
