"""A table's history as the catalog and the files know it: the retained range of write ids
(the rule is :mod:`acidflow.storage.retention`; here it gets the table's properties and commit
records) and the oldest write id whose snapshot can still be read.

Used by the cleaner (what to keep), the readers (``NotEnoughHistoryError`` names the oldest
readable write id), restore/rollback (refused outside retention) and ``acidflow describe``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from acidflow.catalog.tabledef import as_utc
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.timetravel import (
    WriteIdHistory,
    commit_order,
    commit_snapshots,
    commits_through_time,
    commits_through_write_id,
)
from acidflow.storage import retention as rt
from acidflow.storage.fs import TableFS
from acidflow.storage.tablepaths import partition_dir, partition_paths

if TYPE_CHECKING:
    from acidflow.catalog.base import Catalog
    from acidflow.catalog.tabledef import TableDef

__all__ = [
    "RetainedRange",
    "committed_history",
    "retained_range",
    "oldest_readable_write_id",
    "write_id_at",
    "commit_position",
]


@dataclass(frozen=True)
class RetainedRange:
    """The snapshots of a table that retention keeps readable.

    Attributes:
        table: ``db.table``.
        policy: the table's :class:`acidflow.storage.retention.RetentionPolicy`.
        oldest: the write id whose commit is the oldest retained state (``as_of_write_id``
            of it and of every write id committed after it is retained; 0 = the whole
            history, the empty table before the first commit included).
        newest: the newest committed write id (0 when nothing is committed).
        committed: the committed write ids in commit order.
        interleaved: the retained states that the cut of the current snapshot at their high
            watermark does not give (a write id below the high watermark committed later:
            :mod:`acidflow.format.timetravel`); the cleaner keeps what they read too.
    """

    table: str
    policy: rt.RetentionPolicy
    oldest: int
    newest: int
    committed: tuple[int, ...]
    interleaved: tuple[ValidWriteIdList, ...] = field(default=())

    def contains(self, write_id: int) -> bool:
        """Whether ``as_of_write_id=write_id`` is retained: its state (the one right after
        its commit, :mod:`acidflow.format.timetravel`) is at or after the oldest retained
        one in commit order."""
        if write_id < 0 or write_id > max(self.newest, self.oldest):
            return False
        return _position(self.committed, write_id) >= _position(self.committed, self.oldest)

    def describe(self) -> str:
        """``"write ids 3..12 retained (10 commits / 24 h)"``."""
        return f"write ids {self.oldest}..{self.newest} retained ({self.policy.describe()})"


def _position(order: tuple[int, ...], write_id: int) -> int:
    """How many commits of ``order`` (write ids in commit order) the state as of
    ``write_id`` includes."""
    hist = [WriteIdHistory(w, "committed", i) for i, w in enumerate(order)]
    return commits_through_write_id(hist, write_id, max(order, default=0))


def committed_history(catalog: Catalog, table_name: str) -> list[tuple[int, datetime | None]]:
    """Committed write ids of a table in commit order, with their commit time (aware UTC;
    None when unknown, e.g. a write made by Hive through a metastore).

    Raises:
        NoSuchTableError.
    """
    return [
        (h.write_id, None if h.committed_at is None else as_utc(h.committed_at))
        for h in commit_order(catalog.write_id_history(table_name))
    ]


def write_id_at(catalog: Catalog, table_name: str, when: datetime) -> int:
    """The write id whose commit is the last at or before ``when`` (naive = UTC): its
    ``as_of_write_id`` is the state ``as_of_timestamp=when``; 0 (the empty table) when no
    commit is that old.

    Raises:
        NoSuchTableError.
    """
    order = commit_order(catalog.write_id_history(table_name))
    n = commits_through_time(order, as_utc(when))
    return order[n - 1].write_id if n else 0


def commit_position(catalog: Catalog, table_name: str, write_id: int) -> int:
    """How many of the table's commits the state ``as_of_write_id=write_id`` includes (its
    place in commit order; 0 = the empty table).

    Raises:
        NoSuchTableError.
    """
    hist = catalog.write_id_history(table_name)
    top = max((h.write_id for h in hist), default=0)
    return commits_through_write_id(commit_order(hist), write_id, top)


def retained_range(
    catalog: Catalog, table_name: str, *, now: datetime | None = None, table: TableDef | None = None
) -> RetainedRange:
    """The retained range of a table at ``now`` (default the current time).

    Raises:
        NoSuchTableError; ValueError: a bad retention property.
    """
    td = table if table is not None else catalog.get_table(table_name)
    policy = rt.retention_policy(td.name, td.properties)
    hist = catalog.write_id_history(td.name)
    order = commit_order(hist)
    history = [
        (h.write_id, None if h.committed_at is None else as_utc(h.committed_at)) for h in order
    ]
    when = as_utc(now) if now is not None else datetime.now().astimezone()
    oldest = rt.oldest_retained_write_id(history, policy, as_utc(when))
    ids = tuple(w for w, _ in history)
    interleaved: list[ValidWriteIdList] = []
    if any(a.write_id > b.write_id for a, b in zip(order, order[1:])):
        current = catalog.valid_write_ids(td.name)
        first = _position(ids, oldest)
        for i, (_h, snap) in enumerate(commit_snapshots(td.name, hist)):
            if i + 1 >= first and snap != rt.snapshot_at(current, snap.high_watermark):
                interleaved.append(snap)
    return RetainedRange(td.name, policy, oldest, max(ids, default=0), ids, tuple(interleaved))


def oldest_readable_write_id(catalog: Catalog, table_name: str) -> int | None:
    """The oldest ``as_of_write_id`` (0 or a committed write id) from which on every state
    (in commit order) can still be read in every partition (the readable range ends at the
    current one), or None when not even the current snapshot can be read.

    Raises:
        NoSuchTableError.
    """
    td = catalog.get_table(table_name)
    tfs = TableFS(td.location)
    hist = catalog.write_id_history(td.name)
    if not tfs.exists(td.location):
        return 0
    listings = [
        (partition_dir(td, p or None), tfs.list_recursive(partition_dir(td, p or None)))
        for p in partition_paths(td)
    ]
    states = [(0, ValidWriteIdList(td.name, 0))] + [
        (h.write_id, snap) for h, snap in commit_snapshots(td.name, hist)
    ]
    oldest: int | None = None
    txn_state = catalog.visibility_lookup()
    for w, snap in reversed(states):
        if not all(
            rt.readable_at(tfs, pdir, snap, entries=entries, txn_state=txn_state)
            for pdir, entries in listings
        ):
            break
        oldest = w
    return oldest
