"""Time-travel snapshots: the ``ValidWriteIdList`` a table had right after one of its commits.

Write ids are allocated when a transaction first writes a table, commits happen later and in
any order, so the state right after the commit of write id ``W`` is not "every write id up to
``W``". Hive's ``ValidWriteIdList`` of a point in time (``getValidWriteIds`` over the
``ValidTxnList`` taken then) lists the write ids still open at that point as exceptions, and a
snapshot taken right after the commit of ``W`` includes every write id committed before it,
even ones above ``W``. The rule here gives exactly that state:

* **valid** = the write ids committed at or before ``W``'s commit, in the catalog's commit
  order (commit ids; txn ids and commit ids come from one sequence);
* **high watermark** = the largest of them (it may be above ``W``);
* **exceptions** = every lower write id not committed by then: aborted when its transaction
  aborted (its files are never read), else open (``min_open_write_id`` the lowest of those).

``as_of_write_id=W`` for a ``W`` that never committed (aborted, still open, never allocated)
means the state after the commit of the largest committed write id below ``W`` (the empty
table, high watermark 0, when there is none): with no interleaving, the same rows the plain
high-watermark cut ``W`` shows. ``as_of_timestamp=T`` is the state after the last commit at or
before ``T``. A write id whose commit order is unknown (a write Hive made through a metastore,
without an acidflow commit record) counts as committed just before the first known commit of a
higher write id; an unknown commit time counts as older than any known one.

Pure: the catalogs (``acidflow.catalog.sql``, ``acidflow.catalog.hms``) pass the history they
store, the retention rules (``acidflow.read.history``) the same.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Iterator, Sequence

from acidflow.format.writeids import ValidWriteIdList
from acidflow.states import TxnState

__all__ = [
    "WriteIdHistory",
    "commit_order",
    "commits_through_write_id",
    "commits_through_time",
    "snapshot_after_commits",
    "snapshot_as_of",
    "commit_snapshots",
]


@dataclass(frozen=True)
class WriteIdHistory:
    """One allocated write id of a table.

    Attributes:
        write_id: the table's write id.
        state: its transaction's :class:`acidflow.states.TxnState` word.
        commit_seq: the commit id (one sequence with txn ids; orders the commits), None while
            not committed or when unknown.
        committed_at: commit time (aware, or naive UTC), None when unknown.
    """

    write_id: int
    state: str
    commit_seq: int | None = None
    committed_at: datetime | None = None


def commit_order(history: Iterable[WriteIdHistory]) -> list[WriteIdHistory]:
    """The committed write ids in commit order (module doc: unknown order = just before the
    first known commit of a higher write id)."""
    committed = [h for h in history if h.state == TxnState.COMMITTED]
    known = sorted((h for h in committed if h.commit_seq is not None), key=_seq)
    unknown = sorted((h for h in committed if h.commit_seq is None), key=lambda h: h.write_id)
    if not unknown:
        return known
    out: list[WriteIdHistory] = []
    u = 0
    for h in known:
        while u < len(unknown) and unknown[u].write_id < h.write_id:
            out.append(unknown[u])
            u += 1
        out.append(h)
    out.extend(unknown[u:])
    return out


def _seq(h: WriteIdHistory) -> tuple[int, int]:
    return (h.commit_seq if h.commit_seq is not None else -1, h.write_id)


def commits_through_write_id(
    order: Sequence[WriteIdHistory], write_id: int, highest_allocated: int
) -> int:
    """How many commits of ``order`` (:func:`commit_order`) the state ``as_of_write_id``
    includes: up to and with ``write_id``'s commit; for a write id that never committed, up to
    the commit of the largest committed write id below it (0: the empty table); every commit
    for a write id above ``highest_allocated`` (not allocated yet: the current state)."""
    if write_id > highest_allocated:
        return len(order)
    best: int | None = None
    pos = 0
    for i, h in enumerate(order):
        if h.write_id == write_id:
            return i + 1
        if h.write_id < write_id and (best is None or h.write_id > best):
            best, pos = h.write_id, i + 1
    return pos


def commits_through_time(order: Sequence[WriteIdHistory], at: datetime) -> int:
    """How many commits of ``order`` the state ``as_of_timestamp=at`` includes: up to the last
    commit (in commit order) at or before ``at``; unknown times count as older than any known
    one. ``at`` and the commit times must both be aware, or both naive UTC."""
    n = 0
    for i, h in enumerate(order):
        if h.committed_at is None or h.committed_at <= at:
            n = i + 1
    return n


def snapshot_after_commits(
    table_name: str | None,
    history: Iterable[WriteIdHistory],
    order: Sequence[WriteIdHistory],
    count: int,
) -> ValidWriteIdList:
    """The snapshot right after the first ``count`` commits of ``order`` (module doc).

    Args:
        history: every allocated write id of the table (their final states).
        order: :func:`commit_order` of ``history``.
        count: 0 .. ``len(order)``.
    """
    valid = {h.write_id for h in order[:count]}
    hwm = max(valid, default=0)
    opened: list[int] = []
    aborted: list[int] = []
    for h in history:
        if h.write_id < hwm and h.write_id not in valid:
            (aborted if h.state == TxnState.ABORTED else opened).append(h.write_id)
    return ValidWriteIdList(table_name, hwm, opened, aborted)


def snapshot_as_of(
    table_name: str | None,
    history: Sequence[WriteIdHistory],
    *,
    write_id: int | None = None,
    timestamp: datetime | None = None,
    highest_allocated: int | None = None,
) -> ValidWriteIdList:
    """The time-travel snapshot ``as_of_write_id=write_id`` or ``as_of_timestamp=timestamp``
    (exactly one given; module doc).

    Args:
        history: every allocated write id of the table.
        highest_allocated: the table's highest allocated write id (default the largest in
            ``history``).
    Raises:
        ValueError: neither or both given, or a negative write id.
    """
    if (write_id is None) == (timestamp is None):
        raise ValueError("give exactly one of as_of_write_id and as_of_timestamp")
    order = commit_order(history)
    if write_id is not None:
        if write_id < 0:
            raise ValueError(f"as_of_write_id must be >= 0, got {write_id}")
        top = max((h.write_id for h in history), default=0)
        count = commits_through_write_id(
            order, write_id, top if highest_allocated is None else highest_allocated
        )
    else:
        assert timestamp is not None
        count = commits_through_time(order, timestamp)
    return snapshot_after_commits(table_name, history, order, count)


def commit_snapshots(
    table_name: str | None, history: Iterable[WriteIdHistory]
) -> Iterator[tuple[WriteIdHistory, ValidWriteIdList]]:
    """Every commit of the table in commit order with the snapshot right after it (the states
    ``as_of_write_id`` can show besides the empty one), built incrementally."""
    items = list(history)
    order = commit_order(items)
    aborted_ids = {h.write_id for h in items if h.state == TxnState.ABORTED}
    pending = sorted(h.write_id for h in items)  # not committed yet, at each step
    hwm = 0
    for h in order:
        i = bisect.bisect_left(pending, h.write_id)
        if i < len(pending) and pending[i] == h.write_id:
            del pending[i]
        hwm = max(hwm, h.write_id)
        below = pending[: bisect.bisect_left(pending, hwm)]
        yield (
            h,
            ValidWriteIdList(
                table_name,
                hwm,
                [w for w in below if w not in aborted_ids],
                [w for w in below if w in aborted_ids],
            ),
        )
