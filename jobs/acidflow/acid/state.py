"""The I/O side of ``AcidUtils.getAcidState``: one call that lists a partition directory and
answers the pure rules of :func:`acidflow.acid.layout.get_acid_state`
(docs/hive-acid-format.md §6).

Readers, writers, the compactor (initiator, worker, cleaner, fsck), quality checks and the UI
all ask "which base, deltas and original files does this snapshot read here, and what is
obsolete or aborted?" through :func:`acid_state`; it supplies the two things the pure rules
leave to I/O once:

* the compacted-base check: ``<base>/_metadata_acid`` says ``compacted``
  (:func:`acidflow.acid.files.is_compacted_base`, Hive ``AcidUtils.MetaDataFile.isCompacted``);
* the visibility-transaction lookup for ``_v<T>`` directories (``txn_state``; none = every
  ``_v`` directory committed, as Trino reads).
"""
from __future__ import annotations

from typing import Callable, Iterable

from acidflow.acid import files as acid_files
from acidflow.acid.fs import TableFS, join
from acidflow.acid.layout import AcidState, DirEntry, ValidWriteIdList, get_acid_state

__all__ = ["compacted_base_check", "acid_state"]


def compacted_base_check(tfs: TableFS, partition_dir: str) -> Callable[[str], bool]:
    """The ``is_compacted_base`` callback of :func:`~acidflow.acid.layout.get_acid_state` for
    one partition directory: reads ``<partition_dir>/<base>/_metadata_acid``.

    The callback raises ``acidflow.acid.files.AcidFileError`` for a marker that is not the JSON
    Hive writes."""
    def is_compacted(base_name: str) -> bool:
        return acid_files.is_compacted_base(tfs, join(partition_dir, base_name))
    return is_compacted


def acid_state(tfs: TableFS, partition_dir: str, valid: ValidWriteIdList, *,
               entries: Iterable[DirEntry] | None = None,
               txn_state: Callable[[int], str] | None = None,
               ignore_empty_files: bool = False) -> AcidState:
    """``AcidState`` of one partition directory (or of an unpartitioned table's root) at the
    snapshot ``valid``.

    Args:
        tfs: the table's filesystem.
        partition_dir: absolute path or URL of the partition directory.
        valid: the reader's ``ValidWriteIdList`` (a compactor passes ``for_compactor()``).
        entries: the directory's recursive listing when the caller already has it (paths
            relative to ``partition_dir``); default: listed here.
        txn_state: visibility-transaction state of a ``_v<T>`` directory (``"committed"``,
            ``"open"``, ``"aborted"``); None = committed.
        ignore_empty_files: drop zero-length original files (Hive ``ignoreEmptyFiles``).
    Returns:
        :class:`acidflow.acid.layout.AcidState`.
    Raises:
        acidflow.acid.layout.NotEnoughHistoryError: no usable base for the snapshot.
        ValueError: a ``base_``/``delta_`` name that does not parse.
        acidflow.acid.files.AcidFileError: an unreadable ``_metadata_acid``.
    """
    listing = tfs.list_recursive(partition_dir) if entries is None else entries
    return get_acid_state(listing, valid, compacted_base_check(tfs, partition_dir),
                          txn_state, ignore_empty_files=ignore_empty_files)
