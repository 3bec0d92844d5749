"""Savepoints: named states of a table that outlive history retention (Hudi's savepoint,
Iceberg's tag).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``; the metastore catalog
keeps them in its side catalog). The contract and its docstrings live here, once; shapes and
errors as in :mod:`acidflow.catalog.base`. What a savepoint holds back (the cleaner's
directories, the purge of commit records) is described in :mod:`acidflow.tableops.savepoint`.
"""

from __future__ import annotations

import abc

from acidflow.catalog.records import SavepointInfo
from acidflow.format.layout import ValidWriteIdList


class SavepointRegistry(abc.ABC):
    """Savepoints: named states of a table that outlive history retention."""

    @abc.abstractmethod
    def add_savepoint(
        self,
        table_name: str,
        name: str,
        write_id: int,
        valid_write_ids: ValidWriteIdList,
        *,
        created_by: str | None = None,
    ) -> SavepointInfo:
        """Record a savepoint: the state ``as_of_write_id=write_id`` of the table, whose
        ValidWriteIdList (``valid_write_ids``, the time-travel snapshot of that write id) is
        stored with it. No check of the write id is made here
        (:func:`acidflow.tableops.savepoint.create_savepoint` checks it).

        Raises:
            NoSuchTableError; SavepointExistsError: the table has a savepoint of that name.
        """

    @abc.abstractmethod
    def list_savepoints(self, table_name: str | None = None) -> list[SavepointInfo]:
        """Savepoints in (table, write id, name) order, optionally of one table.

        Raises:
            NoSuchTableError: ``table_name`` given and unknown.
        """

    @abc.abstractmethod
    def drop_savepoint(self, table_name: str, name: str) -> SavepointInfo:
        """Delete a savepoint; returns what it was. The next cleaner pass may then remove what
        only it kept, and the next purge the commit records only it kept.

        Raises:
            NoSuchTableError; NoSuchSavepointError.
        """
