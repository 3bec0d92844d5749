"""A table's history as the catalog and the files know it: the retained range of write ids
(the rule is :mod:`acidflow.storage.retention`; here it gets the table's properties and commit
records) and the oldest write id whose snapshot can still be read.

Used by the cleaner (what to keep), the readers (``NotEnoughHistoryError`` names the oldest
readable write id), restore/rollback (refused outside retention) and ``acidflow describe``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from acidflow.catalog.records import TxnState
from acidflow.catalog.tabledef import as_utc
from acidflow.storage import retention as rt
from acidflow.storage.fs import TableFS
from acidflow.storage.tablepaths import partition_dir, partition_paths

if TYPE_CHECKING:
    from acidflow.catalog.base import Catalog
    from acidflow.catalog.tabledef import TableDef

__all__ = ["RetainedRange", "committed_history", "retained_range", "oldest_readable_write_id"]


@dataclass(frozen=True)
class RetainedRange:
    """The snapshots of a table that retention keeps readable.

    Attributes:
        table: ``db.table``.
        policy: the table's :class:`acidflow.storage.retention.RetentionPolicy`.
        oldest: oldest retained ``as_of_write_id`` (0 = the whole history, the empty table
            before write id 1 included).
        newest: the newest committed write id (0 when nothing is committed).
        committed: the committed write ids, ascending.
    """

    table: str
    policy: rt.RetentionPolicy
    oldest: int
    newest: int
    committed: tuple[int, ...]

    def contains(self, write_id: int) -> bool:
        """Whether ``as_of_write_id=write_id`` is retained."""
        return self.oldest <= write_id <= max(self.newest, self.oldest)

    def describe(self) -> str:
        """``"write ids 3..12 retained (10 commits / 24 h)"``."""
        return f"write ids {self.oldest}..{self.newest} retained ({self.policy.describe()})"


def committed_history(catalog: Catalog, table_name: str) -> list[tuple[int, datetime | None]]:
    """Committed write ids of a table, ascending, with their commit time (aware UTC; None for
    a write id with no commit record, e.g. adopted history or a write made by Hive).

    Raises:
        NoSuchTableError.
    """
    times = {r.write_id: as_utc(r.committed_at) for r in catalog.commit_records(table_name)}
    return [
        (w, times.get(w))
        for w, _txn, state in catalog.write_id_states(table_name)
        if state == TxnState.COMMITTED
    ]


def retained_range(
    catalog: Catalog, table_name: str, *, now: datetime | None = None, table: TableDef | None = None
) -> RetainedRange:
    """The retained range of a table at ``now`` (default the current time).

    Raises:
        NoSuchTableError; ValueError: a bad retention property.
    """
    td = table if table is not None else catalog.get_table(table_name)
    policy = rt.retention_policy(td.name, td.properties)
    history = committed_history(catalog, td.name)
    when = as_utc(now) if now is not None else datetime.now().astimezone()
    oldest = rt.oldest_retained_write_id(history, policy, as_utc(when))
    ids = tuple(w for w, _ in history)
    return RetainedRange(td.name, policy, oldest, ids[-1] if ids else 0, ids)


def oldest_readable_write_id(catalog: Catalog, table_name: str) -> int | None:
    """The oldest ``as_of_write_id`` (0 or a committed write id) from which on every snapshot
    can still be read in every partition (the readable range ends at the current one), or None
    when not even the current snapshot can be read.

    Raises:
        NoSuchTableError.
    """
    td = catalog.get_table(table_name)
    valid = catalog.valid_write_ids(td.name)
    tfs = TableFS(td.location)
    committed = [
        w for w, _txn, state in catalog.write_id_states(td.name) if state == TxnState.COMMITTED
    ]
    if not tfs.exists(td.location):
        return 0
    listings = [
        (partition_dir(td, p or None), tfs.list_recursive(partition_dir(td, p or None)))
        for p in partition_paths(td)
    ]
    oldest: int | None = None
    txn_state = catalog.visibility_lookup()
    for w in reversed([0] + committed):
        if not all(
            rt.readable_at(tfs, pdir, valid, w, entries=entries, txn_state=txn_state)
            for pdir, entries in listings
        ):
            break
        oldest = w
    return oldest
