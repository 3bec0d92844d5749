"""ACID invariants of a table's current files, beyond what ``acidflow.compactor.fsck`` checks
(both report :class:`acidflow.quality.findings.Finding`).

``fsck`` already reports missing metadata (``_orc_acid_version``, ``hive.acid.key.index``,
``hive.acid.stats``, ``hive.acid.version``, key index entries vs stripes), overlapping delta
ranges, orphan/aborted/open/obsolete directories, duplicate visible ROW__IDs and duplicate
primary keys. This module adds the
per-event rules Hive's readers rely on, for every file of the current snapshot's base and deltas:

* ``unsorted_events`` -- events of a file must be strictly ascending by
  (originalTransaction, bucket, rowId): ``OrcRawRecordMerger`` and the vectorized delete-event
  registry merge files assuming that order (and a repeated key is a duplicate event);
* ``wrong_bucket_file`` -- the bucket id encoded in an event's bucket property (BucketCodec)
  must be the ``N`` of the ``bucket_N`` file holding it. Hive reads the delete events of
  ``delete_delta_*/bucket_N`` only for the rows of bucket ``N``, so a delete event in another
  file never deletes its row in Hive. Checked for every delete event and, in bucketed tables,
  for every insert event (unbucketed tables name files by writer id; compaction may merge them);
* ``key_index_mismatch`` -- ``hive.acid.key.index`` must hold the last key of each stripe
  (``OrcRecordUpdater.KeyIndexBuilder``; readers use it to bound a split's keys).

All three are errors. The checks on arrays are pure (:func:`check_sorted`,
:func:`check_bucket_file`, :func:`check_key_index`); :func:`check_table` reads the files with
pyarrow in this process, key columns only, one stripe at a time.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow.orc as paorc

from acidflow.format.bucketing import decode_bucket_id
from acidflow.format.layout import bucket_files
from acidflow.format.orc import files as acid_files
from acidflow.format.orc.files import OPERATION_DELETE
from acidflow.quality.findings import ERROR, Finding
from acidflow.storage import tablepaths
from acidflow.storage.fs import TableFS, join
from acidflow.storage.state import acid_state
from acidflow.storage.tablepaths import partition_dir

MAX_DETAIL_VALUES = 5


def check_sorted(
    partition: str, path: str, owid: np.ndarray, bucket: np.ndarray, rowid: np.ndarray
) -> list[Finding]:
    """Events strictly ascending by (originalTransaction, bucket, rowId)? (pure)

    Args:
        partition, path: where (for the finding); owid, bucket, rowid: the key columns of the
            file's events in file order (equal lengths).
    Returns:
        ``[]`` or one ``unsorted_events`` finding naming the first offending event and the
        number of out-of-order positions.
    """
    n = len(owid)
    if n < 2:
        return []
    o, b, r = (np.asarray(x, dtype=np.int64) for x in (owid, bucket, rowid))
    gt = (o[1:] > o[:-1]) | (
        (o[1:] == o[:-1]) & ((b[1:] > b[:-1]) | ((b[1:] == b[:-1]) & (r[1:] > r[:-1])))
    )
    bad = np.flatnonzero(~gt)
    if not len(bad):
        return []
    i = int(bad[0]) + 1
    return [
        Finding(
            partition,
            "unsorted_events",
            ERROR,
            path,
            f"event {i} key {(int(o[i]), int(b[i]), int(r[i]))} is not above event "
            f"{i - 1} key {(int(o[i - 1]), int(b[i - 1]), int(r[i - 1]))} "
            f"({len(bad)} out-of-order position(s)); events must be strictly ascending "
            "by (originalTransaction, bucket, rowId)",
        )
    ]


def check_bucket_file(
    partition: str,
    path: str,
    file_bucket: int,
    bucket: np.ndarray,
    operation: np.ndarray,
    *,
    check_inserts: bool,
) -> list[Finding]:
    """Does every event's bucket property decode to the file's bucket id? (pure)

    Args:
        file_bucket: the ``N`` of ``bucket_N``; bucket: bucket properties; operation: event
            operations (2 = delete); check_inserts: also check insert events.
    Returns:
        ``[]`` or one ``wrong_bucket_file`` finding (counts per decoded bucket id).
    """
    props = np.asarray(bucket, dtype=np.int64)
    ops = np.asarray(operation)
    if not check_inserts:
        props = props[ops == OPERATION_DELETE]
        ops = ops[ops == OPERATION_DELETE]
    wrong: dict[int, list[int]] = {}
    for prop in np.unique(props):
        try:
            bid = decode_bucket_id(int(prop))
        except ValueError:
            bid = -1
        if bid != file_bucket:
            sel = props == prop
            wrong[int(prop)] = [
                bid,
                int(np.sum(sel & (ops == OPERATION_DELETE))),
                int(np.sum(sel & (ops != OPERATION_DELETE))),
            ]
    if not wrong:
        return []
    parts = [
        f"bucket property {p} (bucket {bid}): {d} delete and {i} insert event(s)"
        for p, (bid, d, i) in sorted(wrong.items())[:MAX_DETAIL_VALUES]
    ]
    return [
        Finding(
            partition,
            "wrong_bucket_file",
            ERROR,
            path,
            f"events of another bucket in bucket file {file_bucket}: "
            + "; ".join(parts)
            + " (Hive reads a bucket's delete events from its own bucket file only)",
        )
    ]


def check_key_index(
    partition: str,
    path: str,
    key_index: Sequence[tuple[int, int, int]],
    stripe_last_keys: Sequence[tuple[int, int, int]],
) -> list[Finding]:
    """``hive.acid.key.index`` == the last key of every stripe? (pure)"""
    if list(map(tuple, key_index)) == list(map(tuple, stripe_last_keys)):
        return []
    if len(key_index) != len(stripe_last_keys):
        detail = f"{len(key_index)} key index entries for {len(stripe_last_keys)} stripes"
    else:
        i = next(
            i for i, (a, b) in enumerate(zip(key_index, stripe_last_keys)) if tuple(a) != tuple(b)
        )
        detail = (
            f"stripe {i}: key index says {tuple(key_index[i])}, last event is "
            f"{tuple(stripe_last_keys[i])}"
        )
    return [Finding(partition, "key_index_mismatch", ERROR, path, detail)]


def check_file(
    tfs: TableFS, partition: str, path: str, rel: str, file_bucket: int, *, check_inserts: bool
) -> list[Finding]:
    """Read one event file's key columns stripe by stripe (pyarrow) and run the pure checks.

    Files that are not ACID event files are skipped (fsck and the reader report those).
    """
    info = acid_files.file_info(tfs, path)
    if not info.is_acid:
        return []
    names = info.schema.names[:4]
    ops, owids, buckets, rowids, last_keys = [], [], [], [], []
    with tfs.open(path, "rb") as fh:
        orc = paorc.ORCFile(fh)
        for s in range(orc.nstripes):
            batch = orc.read_stripe(s, columns=names)
            if batch.num_rows == 0:
                continue
            cols = [batch.column(i).to_numpy(zero_copy_only=False) for i in range(4)]
            ops.append(cols[0])
            owids.append(cols[1])
            buckets.append(cols[2])
            rowids.append(cols[3])
            last_keys.append((int(cols[1][-1]), int(cols[2][-1]), int(cols[3][-1])))
    if not ops:
        return []
    op, o, b, r = (np.concatenate(x) for x in (ops, owids, buckets, rowids))
    out = check_sorted(partition, rel, o, b, r)
    out += check_bucket_file(partition, rel, file_bucket, b, op, check_inserts=check_inserts)
    raw = info.metadata.get(acid_files.KEY_INDEX_KEY)
    if raw is not None:  # a missing key index is fsck's missing_metadata
        out += check_key_index(partition, rel, acid_files.parse_key_index(raw), last_keys)
    return out


def check_table(catalog: Any, name: str) -> list[Finding]:
    """Run the per-event checks on every data file of the current snapshot's base and deltas
    of every partition of a catalog table (this process, pyarrow).

    Returns:
        :class:`acidflow.quality.findings.Finding` list (``partition`` '' for unpartitioned tables,
        ``path`` relative to the partition).
    Raises:
        NoSuchTableError.
    """
    table = catalog.get_table(name)
    tfs = TableFS(table.location)
    valid = catalog.valid_write_ids(table.name)
    grouped = tablepaths.split_partitions(
        tfs.list_recursive(table.location), len(table.partition_columns)
    )
    out: list[Finding] = []
    for part in sorted(grouped):
        entries = grouped[part]
        pdir = partition_dir(table, part or None)
        state = acid_state(tfs, pdir, valid, entries=entries, txn_state=catalog.visibility_lookup())
        for d in state.current_dirs:
            for rel, file_bucket in bucket_files(entries, d):
                out += check_file(
                    tfs,
                    part,
                    join(pdir, rel),
                    rel,
                    file_bucket,
                    check_inserts=table.num_buckets > 0,
                )
    return out
