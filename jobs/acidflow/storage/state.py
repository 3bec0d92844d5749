"""The I/O side of ``AcidUtils.getAcidState``: one call that lists a partition directory and
answers the pure rules of :func:`acidflow.format.layout.get_acid_state`
(docs/hive-acid-format.md §6).

Readers, writers, the compactor (initiator, worker, cleaner, fsck), quality checks and the UI
all ask "which base, deltas and original files does this snapshot read here, and what is
obsolete or aborted?" through :func:`acid_state`; it supplies the two things the pure rules
leave to I/O once:

* the compacted-base check: ``<base>/_metadata_acid`` says ``compacted``
  (:func:`acidflow.format.orc.files.is_compacted_base`, Hive ``AcidUtils.MetaDataFile.isCompacted``);
* the visibility-transaction lookup for ``_v<T>`` directories (``txn_state``), passed in by
  the caller: the catalog's :meth:`~acidflow.catalog.Catalog.visibility_lookup` on an
  object-store warehouse (acidflow's compactor writes ``_v<T>`` output directly there,
  visible only once T commits, as Hive 4 checks T against the reader's ``ValidTxnList``);
  none = every ``_v`` directory committed, as Trino reads;
* acidflow's history floor (``_acidflow_history`` in the partition directory, a hidden file
  Hive and Trino skip): a snapshot below every compacted base is readable from the deltas
  when the cleaner kept them (history retention, ``acidflow.storage.retention``). The file says
  below which high watermark that holds: the major compaction that publishes a partition's
  first base writes it with no limit (nothing was ever removed there), and the cleaner lowers
  it to the lowest write id of any delta or original file it removes for good. No file while
  a compacted base exists = unknown history (Hive's, or an older cleaner's): Hive's rule,
  ``NotEnoughHistoryError``. The file also refuses a base-less read below an INSERT OVERWRITE
  base (which Hive 4's rule reads from the deltas) once deltas underneath are gone.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

from acidflow.format.layout import (
    LONG_MAX_VALUE,
    AcidState,
    DirEntry,
    NotEnoughHistoryError,
    ValidWriteIdList,
    get_acid_state,
    parse_base,
)
from acidflow.storage.fs import TableFS, join

__all__ = [
    "compacted_base_check",
    "acid_state",
    "HISTORY_FILE",
    "history_floor",
    "write_history_floor",
    "mark_full_history",
]

#: hidden file in a partition directory: ``{"full_history_below": N | null}``
HISTORY_FILE = "_acidflow_history"


def compacted_base_check(tfs: TableFS, partition_dir: str) -> Callable[[str], bool]:
    """The ``is_compacted_base`` callback of :func:`~acidflow.format.layout.get_acid_state` for
    one partition directory: reads ``<partition_dir>/<base>/_metadata_acid``.

    The callback raises ``acidflow.format.orc.files.AcidFileError`` for a marker that is not the JSON
    Hive writes."""

    def is_compacted(base_name: str) -> bool:
        # deferred: the ORC codec imports pyarrow and pyorc; a catalog import needs neither
        from acidflow.format.orc import files as acid_files

        return acid_files.is_compacted_base(tfs, join(partition_dir, base_name))

    return is_compacted


def acid_state(
    tfs: TableFS,
    partition_dir: str,
    valid: ValidWriteIdList,
    *,
    entries: Iterable[DirEntry] | None = None,
    txn_state: Callable[[int], str] | None = None,
    ignore_empty_files: bool = False,
) -> AcidState:
    """``AcidState`` of one partition directory (or of an unpartitioned table's root) at the
    snapshot ``valid``.

    Args:
        tfs: the table's filesystem.
        partition_dir: absolute path or URL of the partition directory.
        valid: the reader's ``ValidWriteIdList`` (a compactor passes ``for_compactor()``).
        entries: the directory's recursive listing when the caller already has it (paths
            relative to ``partition_dir``); default: listed here.
        txn_state: visibility-transaction state of a ``_v<T>`` directory (``"committed"``,
            ``"open"``, ``"aborted"``; ``Catalog.visibility_lookup``); None = committed.
        ignore_empty_files: drop zero-length original files (Hive ``ignoreEmptyFiles``).
    Returns:
        :class:`acidflow.format.layout.AcidState`.
    Raises:
        acidflow.format.layout.NotEnoughHistoryError: no usable base for the snapshot.
        ValueError: a ``base_``/``delta_`` name that does not parse.
        acidflow.format.orc.files.AcidFileError: an unreadable ``_metadata_acid``.
    """
    listing = list(tfs.list_recursive(partition_dir) if entries is None else entries)
    check = compacted_base_check(tfs, partition_dir)
    try:
        state = get_acid_state(
            listing, valid, check, txn_state, ignore_empty_files=ignore_empty_files
        )
    except NotEnoughHistoryError:
        floor = history_floor(tfs, partition_dir, listing)
        if floor is None or valid.high_watermark >= floor:
            raise
        return get_acid_state(
            listing,
            valid,
            check,
            txn_state,
            ignore_empty_files=ignore_empty_files,
            history_floor=floor,
        )
    if state.base is None:
        # no usable base although bases exist (an INSERT OVERWRITE base is the oldest): the
        # deltas underneath are read -- refused when the history file says some are gone
        bases = sorted(
            (b for b in (parse_base(e.path.split("/", 1)[0]) for e in listing) if b is not None),
            key=lambda b: b.write_id,
        )
        if bases:
            floor = history_floor(tfs, partition_dir, listing)
            if floor is not None and valid.high_watermark >= floor:
                exc = valid.invalid_write_ids
                raise NotEnoughHistoryError(
                    valid.high_watermark, str(exc[0]) if exc else "x", bases[0].name
                )
    return state


def history_floor(tfs: TableFS, partition_dir: str, entries: Iterable[DirEntry]) -> int | None:
    """Below which high watermark a snapshot may read this partition without a base (module
    doc): the ``_acidflow_history`` value (no limit = ``Long.MAX_VALUE``); without the file,
    no limit when the partition has no base at all, else None (unknown: Hive's rule).

    Raises:
        acidflow.format.orc.files.AcidFileError: a history file that is not acidflow's JSON.
    """
    names = {e.path.split("/", 1)[0] for e in entries}
    if HISTORY_FILE in names:
        path = join(partition_dir, HISTORY_FILE)
        try:
            value = json.loads(tfs.read_bytes(path))["full_history_below"]
        except (ValueError, KeyError, TypeError) as exc:
            # deferred: the ORC codec imports pyarrow and pyorc; a catalog import needs neither
            from acidflow.format.orc import files as acid_files

            raise acid_files.AcidFileError(f"{path}: not an acidflow history file: {exc}") from exc
        return LONG_MAX_VALUE if value is None else int(value)
    if any(parse_base(n) is not None for n in names):
        return None
    return LONG_MAX_VALUE


def write_history_floor(tfs: TableFS, partition_dir: str, floor: int | None) -> None:
    """Write ``_acidflow_history`` (``floor`` None = no limit)."""
    tfs.write_bytes(
        join(partition_dir, HISTORY_FILE), json.dumps({"full_history_below": floor}).encode()
    )


def mark_full_history(tfs: TableFS, partition_dir: str) -> None:
    """Before a major compaction publishes its base: record that the partition's history is
    complete when it has no base yet and no history file (nothing was ever removed there)."""
    entries = tfs.list_recursive(partition_dir)
    names = {e.path.split("/", 1)[0] for e in entries}
    if HISTORY_FILE not in names and not any(parse_base(n) is not None for n in names):
        write_history_floor(tfs, partition_dir, None)
