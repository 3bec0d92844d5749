"""ACID v1 (Hive 0.14-2.x, before split-update): how a v1 file is recognised and which event of
a row a reader returns. Pure rules, no I/O.

The v1 layout (Hive 2.3 ``AcidUtils``, ``OrcRecordUpdater``):

* directories ``base_N``, ``delta_X_Y`` (``delta_X_Y_S`` with a statement id from Hive 2.x);
  no ``delete_delta_*``; the ids are global transaction ids (v1 has no per-table write ids);
* no ``_orc_acid_version`` file inside base/delta directories (Hive 2.x writes one holding the
  int 0 at the partition root) and no ``hive.acid.version`` footer key; Hive 3 writes version 2
  in both places (``AcidUtils.OrcAcidVersion``);
* every event of a bucket sits in the delta's ``bucket_N`` files: operation 0 = insert, 1 =
  update *in place* (the full new row under the row's original ROW__ID), 2 = delete (no row);
  the ``bucket`` field is the plain bucket id (no ``BucketCodec``).

The read rule (Hive 2.3 ``OrcRawRecordMerger`` with ``collapseEvents``, as ``OrcInputFormat``
runs it): the events of all files of a bucket (base, deltas, original files with synthetic
ROW__IDs) are merged in ``ReaderKey`` order -- ``(originalTransaction, bucket, rowId)``
ascending, then ``currentTransaction`` descending, then statement id descending; an event whose
``currentTransaction`` is not valid in the ValidTxnList is skipped (it does not hide older
events); of each ROW__ID the first remaining event wins: an insert or update gives the row, a
delete gives nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from acidflow.errors import AcidflowError
from acidflow.format.orc.files import ACID_VERSION, ACID_VERSION_KEY, OPERATION_DELETE

#: What the user is told about a partition holding v1 files next to v2 ones.
UPGRADE_HINT = (
    "a partition must be rewritten out of the v1 layout before a Hive 3 writer adds to it: "
    "`acidflow table upgrade` does that for a table whose partitions are all v1 (a major "
    "compaction into a v2 base); for this partition restore the v1 state (remove the v2 "
    "directories written since) and run it, or run a major compaction with the Hive 2 that "
    "wrote the v1 files"
)

#: table property marking an adopted table whose partitions hold ACID v1 directories: "1" until
#: ``acidflow table upgrade`` rewrote them (then "2"); writers refuse a table marked "1"
ACID_VERSION_PROPERTY = "acidflow.acid.version"


class AcidV1WriteError(AcidflowError, ValueError):
    """A write into a table marked as holding ACID v1 directories (:data:`ACID_VERSION_PROPERTY`):
    its Hive 3 events would sit beside v1 ones, which no reader merges (names the table and the
    command that makes it writable)."""


def check_writable(table_name: str, properties: Mapping[str, str]) -> None:
    """Refuse writing into a table still marked as ACID v1 (:data:`ACID_VERSION_PROPERTY`).

    Raises:
        AcidV1WriteError: the table is marked "1".
    """
    if properties.get(ACID_VERSION_PROPERTY) == "1":
        raise AcidV1WriteError(
            f"table {table_name}: its partitions hold ACID v1 (Hive 0.14-2.x) directories and "
            "acidflow writes Hive 3 (v2) events, which no reader merges with v1 ones; run "
            f"`acidflow table upgrade {table_name}` first; nothing was written"
        )


def is_v2(dir_version: int, footer: dict[str, bytes]) -> bool:
    """Whether a file inside a base/delta directory is ACID v2 (Hive 3).

    Args:
        dir_version: the directory's ``_orc_acid_version`` (0 when absent;
            ``acidflow.format.orc.files.read_acid_version``).
        footer: the file's ORC user metadata.
    Returns:
        True when either says version >= 2 (Hive 3 ``AcidUtils.OrcAcidVersion``; Trino
        ``OrcPageSourceFactory`` takes either); False means a v1 (Hive 0.14-2.x) event file.
    """
    if dir_version >= ACID_VERSION:
        return True
    raw = footer.get(ACID_VERSION_KEY, b"")
    try:
        return int(raw.decode() or "0") >= ACID_VERSION
    except ValueError:
        return False


def merge_order(
    original_txn: np.ndarray,
    bucket: np.ndarray,
    row_id: np.ndarray,
    current_txn: np.ndarray,
    statement_id: np.ndarray,
) -> np.ndarray:
    """Positions of events in Hive 2.3's ``OrcRawRecordMerger.ReaderKey`` order.

    Args:
        original_txn, bucket, row_id: the ROW__ID of each event (int arrays, same length).
        current_txn: each event's currentTransaction.
        statement_id: each event's statement id (from its ``delta_X_Y_S`` directory; -1 when
            the name has none).
    Returns:
        int64 positions sorting the events by ROW__ID ascending, then currentTransaction
        descending, then statement id descending; ties keep input order (stable).
    """
    # np.lexsort sorts by the last key first and is stable
    return np.lexsort((-statement_id, -current_txn, row_id, bucket, original_txn)).astype(np.int64)


def winning_events(
    operation: np.ndarray,
    original_txn: np.ndarray,
    bucket: np.ndarray,
    row_id: np.ndarray,
    current_txn: np.ndarray,
    statement_id: np.ndarray,
    valid: np.ndarray,
) -> np.ndarray:
    """Which events give the rows a v1 read returns (module doc: Hive 2.3 ``OrcRawRecordMerger``
    collapsing events, ``OrcInputFormat``'s reader dropping deletes).

    Args:
        operation: 0 insert, 1 update, 2 delete, per event.
        original_txn, bucket, row_id, current_txn, statement_id: as :func:`merge_order`.
        valid: bool per event, its currentTransaction is valid in the snapshot.
    Returns:
        int64 positions of the winning insert/update events, in ROW__ID order (one per visible
        row).
    """
    order = merge_order(original_txn, bucket, row_id, current_txn, statement_id)
    order = order[valid[order]]
    if order.size == 0:
        return order
    ot, b, r = original_txn[order], bucket[order], row_id[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = (ot[1:] != ot[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1])
    winners = order[first]
    return winners[operation[winners] != OPERATION_DELETE]
