"""The catalog's record of one event file a committed write made (a value object, no I/O):
what :mod:`acidflow.format.filecheck` compares with a listing. Kept apart from that rule so the
catalog can name it without importing the ORC codec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from acidflow.format.names import parse_bucket_file

__all__ = ["FileRecord", "by_partition", "file_records"]


@dataclass(frozen=True)
class FileRecord:
    """The catalog's record of one event file a committed transaction wrote.

    Attributes:
        partition: relative partition path (``"ds=2024-01-01"``; ``""`` when unpartitioned).
        path: the file relative to the partition directory, ``"<dir>/<file>"``
            (``"delta_0000003_0000003_0000/bucket_00001"``).
        write_id: the write id that owns it (a compaction's output: the highest write id it
            covers).
        size: length in bytes when written.
        rows: events in the file (insert events, or delete events of a delete delta).
        txn_id: the transaction that wrote it (its commit made the record count).
        lost: acknowledged lost by a repair (:func:`acidflow.compactor.fsck.repair`): readers
            skip the file instead of failing.
        note: the repair's note (what was lost, when, by whom).
    """

    partition: str
    path: str
    write_id: int
    size: int
    rows: int
    txn_id: int = 0
    lost: bool = False
    note: str = ""

    @property
    def dir_name(self) -> str:
        """The base/delta directory of the file."""
        return self.path.split("/", 1)[0]

    @property
    def bucket(self) -> int | None:
        """The bucket (or writer) id of the file name, None for another name."""
        parsed = parse_bucket_file(self.path.rsplit("/", 1)[-1])
        return None if parsed is None else parsed[0]


def file_records(
    write_id: int, rows: Iterable[Mapping[str, Any]], partition: str | None = None
) -> list[FileRecord]:
    """The records of written event files (``Catalog.record_data_files``): each file's
    partition, ``<dir>/<file>`` path (the last two components of its path: an event file sits
    directly in its base/delta directory), size and event count.

    Args:
        write_id: the write id that owns the files (a compaction: the highest it covers).
        rows: file rows with ``path``, ``bytes``, ``rows`` and, unless ``partition`` is given,
            ``partition`` (the writer's ``write_task`` rows, a compaction's ``run_task`` rows).
        partition: the relative partition path of every row (a compaction's), else each row's.
    Returns:
        One :class:`FileRecord` per row (``txn_id`` 0: the catalog sets it).
    """
    return [
        FileRecord(
            partition if partition is not None else (r.get("partition") or ""),
            "/".join(str(r["path"]).rstrip("/").split("/")[-2:]),
            int(write_id),
            int(r["bytes"]),
            int(r["rows"]),
        )
        for r in rows
    ]


def by_partition(records: Iterable[FileRecord]) -> dict[str, list[FileRecord]]:
    """Records grouped by their partition path."""
    out: dict[str, list[FileRecord]] = {}
    for r in records:
        out.setdefault(r.partition, []).append(r)
    return out
