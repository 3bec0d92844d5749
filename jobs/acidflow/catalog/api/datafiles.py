"""Data file records: the event files each committed write made, with sizes and event counts,
and the repairs that acknowledged a file lost (acidflow's; Hive keeps no such record).

One role of the transaction catalog: :class:`acidflow.catalog.Catalog` is the facade over all
of them, and each backend implements them (``acidflow.catalog.sql``, ``acidflow.catalog.hms``:
its side catalog). The contract and its docstrings live here, once; shapes and errors as in
:mod:`acidflow.catalog.base`. The rule that compares records with a listing is
:func:`acidflow.format.filecheck.check_files`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable

from acidflow.format.filerecords import FileRecord


class DataFileRegistry(abc.ABC):
    """Data file records of committed writes and acknowledged losses."""

    @abc.abstractmethod
    def record_data_files(self, txn_id: int, table_name: str, files: Iterable[FileRecord]) -> None:
        """Record event files the transaction wrote into a table (a statement's files, a
        compaction's output before it is published). The records count once the transaction
        commits (an aborted transaction's records are never read). A record of the same
        (partition, path) is replaced.

        Args:
            files: :class:`~acidflow.format.filerecords.FileRecord` s (``txn_id``, ``lost``
                and ``note`` of the values are ignored).
        Raises:
            NoSuchTableError, NoSuchTransactionError.
        """

    @abc.abstractmethod
    def data_file_records(self, table_name: str, partition: str | None = None) -> list[FileRecord]:
        """The records of a table's files written by committed transactions, acknowledged
        losses marked (``lost``, ``note``).

        Args:
            partition: only this relative partition path ('' = unpartitioned table); None =
                all.
        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def mark_data_files_lost(
        self, table_name: str, files: Iterable[tuple[str, str]], note: str
    ) -> int:
        """Acknowledge recorded files as lost: readers skip them instead of failing. Data is
        never invented: the rows the record counts are gone (a lost delete-delta file brings
        its deleted rows back). Records only; no file is touched.

        Args:
            files: ``(partition path, "<dir>/<file>")`` pairs.
            note: why and by whom (kept with the record).
        Returns:
            The records marked (files without a record are skipped).
        Raises:
            NoSuchTableError.
        """

    @abc.abstractmethod
    def forget_data_files(self, table_name: str, directories: Iterable[tuple[str, str]]) -> int:
        """Drop the records of every file under directories that are gone from storage (the
        cleaner calls it for the obsolete and aborted directories it removed), so the records
        stay bounded by what the table holds. Records of other directories stay.

        Args:
            directories: ``(partition path, directory name)`` pairs (``""`` unpartitioned),
                e.g. ``("ds=1", "delta_0000003_0000003_0000")``.
        Returns:
            The number of records dropped.
        Raises:
            NoSuchTableError.
        """
