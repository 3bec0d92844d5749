"""Savepoints: a named state of a table that stays readable and restorable past history
retention (Hudi's savepoint, ``hoodie`` ``savepoint create``; Iceberg's tag with
``max-ref-age-ms`` unset).

A savepoint pins the state ``read_table(as_of_write_id=W)`` of a table: the catalog records its
name, W and that state's ValidWriteIdList (``Catalog.add_savepoint``). While it exists:

* the cleaner keeps every directory that snapshot reads, the way it keeps what a retained
  snapshot reads (:func:`savepoint_snapshots` are added to the retained snapshots of
  :func:`acidflow.storage.retention.retained_names`); a compaction entry whose obsolete
  directories a savepoint still reads stays ``ready for cleaning`` with them listed as
  ``retained`` until the savepoint is deleted;
* a major compaction writes ``_acidflow_history`` with the partition's first base, as under a
  history retention, so the snapshot below the base stays readable from the deltas kept;
* the purge of commit records keeps the record of W's commit and every later one, and with
  them the transactions time travel orders the commits by (``Catalog.purge_commit_records``);
* ``acidflow restore --to-savepoint NAME`` (:func:`acidflow.tableops.restore.restore`) and
  time travel to W work however old W is.

Deleting the savepoint lets the next cleaner pass remove what only it kept.

A savepoint is made only for a state that can be read now: W is 0 (the empty table) or a
committed write id within history retention (``acidflow.read.history.retained_range``) or
already pinned by another savepoint, and its files are all there (Hudi likewise refuses a
savepoint of a commit its cleaner already cleaned).
"""

from __future__ import annotations

import getpass
import socket
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from acidflow.catalog.errors import NoSuchSavepointError
from acidflow.catalog.records import SavepointInfo, TxnState
from acidflow.errors import AcidflowError
from acidflow.format.layout import NotEnoughHistoryError, ValidWriteIdList
from acidflow.read import history
from acidflow.read import table as reads

if TYPE_CHECKING:
    from acidflow.catalog.base import Catalog

__all__ = [
    "SavepointError",
    "create_savepoint",
    "list_savepoints",
    "delete_savepoint",
    "savepoint_write_id",
    "savepointed_write_ids",
    "savepoint_snapshots",
]


class SavepointError(AcidflowError, ValueError):
    """A savepoint refused (message names the table, the write id and why).

    Attributes:
        table: ``db.table``; write_id: the write id asked for.
    """

    def __init__(self, table: str, write_id: int, reason: str):
        self.table, self.write_id = table, write_id
        super().__init__(f"savepoint of {table} at write id {write_id}: {reason}")


def _default_name(write_id: int) -> str:
    """``sp-w<W>-<UTC yyyymmddThhmmss>``."""
    return f"sp-w{write_id}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}"


def create_savepoint(
    catalog: Catalog,
    table_name: str,
    *,
    write_id: int | None = None,
    name: str | None = None,
    created_by: str | None = None,
) -> SavepointInfo:
    """Pin the state ``as_of_write_id=write_id`` of a table under ``name`` (module doc).

    Args:
        catalog: the table's catalog; table_name: ``db.table``.
        write_id: W (default: the latest committed write id in commit order, i.e. the table's
            current committed state; 0 when nothing is committed).
        name: the savepoint's name (default ``sp-w<W>-<UTC time>``).
        created_by: recorded with it (default ``user@host``).
    Returns:
        The :class:`SavepointInfo`.
    Raises:
        SavepointError: W never allocated, aborted, still open, or outside history retention
            (the message names the retained range), or its files are no longer all there.
        acidflow.catalog.SavepointExistsError: ``name`` is taken on the table.
        NoSuchTableError.
    """
    table = catalog.get_table(table_name)
    committed = [w for w, _at in history.committed_history(catalog, table.name)]
    w = (committed[-1] if committed else 0) if write_id is None else write_id
    states = {wid: state for wid, _txn, state in catalog.write_id_states(table.name)}
    if w < 0 or (w != 0 and w not in states):
        known = f"1..{max(states)}" if states else "none yet"
        raise SavepointError(table.name, w, f"no such write id (write ids allocated: {known})")
    if states.get(w, TxnState.COMMITTED) != TxnState.COMMITTED:
        raise SavepointError(
            table.name, w, f"write id {w} is {states[w]}, only a committed one has a state"
        )
    kept = history.retained_range(catalog, table.name, table=table)
    if not kept.contains(w) and w not in savepointed_write_ids(catalog, table.name):
        raise SavepointError(
            table.name,
            w,
            f"outside history retention ({kept.describe()}): its state may already be "
            f"cleaned; the oldest write id a savepoint can pin is {kept.oldest}",
        )
    valid = catalog.valid_write_ids(table.name, as_of_write_id=w)
    try:  # every file of the state is there (and matches its record)
        reads.plan_table(catalog, table.name, valid=valid)
    except NotEnoughHistoryError as exc:
        raise SavepointError(table.name, w, f"its files were cleaned: {exc}") from exc
    by = created_by if created_by is not None else f"{getpass.getuser()}@{socket.gethostname()}"
    return catalog.add_savepoint(table.name, name or _default_name(w), w, valid, created_by=by)


def list_savepoints(catalog: Catalog, table_name: str) -> list[SavepointInfo]:
    """The savepoints of a table in write-id order.

    Raises:
        NoSuchTableError.
    """
    return catalog.list_savepoints(catalog.get_table(table_name).name)


def delete_savepoint(catalog: Catalog, table_name: str, name: str) -> SavepointInfo:
    """Delete a savepoint: the next cleaner pass removes the directories only it kept, the next
    purge the commit records only it kept. Returns what it was.

    Raises:
        acidflow.catalog.NoSuchSavepointError; NoSuchTableError.
    """
    return catalog.drop_savepoint(catalog.get_table(table_name).name, name)


def savepoint_write_id(catalog: Catalog, table_name: str, name: str) -> int:
    """The write id a savepoint of the table pins.

    Raises:
        acidflow.catalog.NoSuchSavepointError; NoSuchTableError.
    """
    table = catalog.get_table(table_name).name
    for sp in catalog.list_savepoints(table):
        if sp.name == name:
            return sp.write_id
    raise NoSuchSavepointError(table, name)


def savepointed_write_ids(catalog: Catalog, table_name: str) -> set[int]:
    """The write ids the table's savepoints pin (restore and time travel reach them past
    retention).

    Raises:
        NoSuchTableError.
    """
    return {sp.write_id for sp in catalog.list_savepoints(table_name)}


def savepoint_snapshots(catalog: Catalog, table_name: str) -> list[ValidWriteIdList]:
    """The snapshots the table's savepoints pin: the cleaner keeps what each reads.

    Raises:
        NoSuchTableError.
    """
    return [
        ValidWriteIdList.from_string(sp.valid_write_ids)
        for sp in catalog.list_savepoints(table_name)
    ]
