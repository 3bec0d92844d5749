"""Hive full-ACID directory layout: names, write-id snapshots and snapshot selection.

Pure Python: no I/O, no Spark; names come from ``acidflow.format.names`` and write-id
snapshots from ``acidflow.format.writeids`` (both re-exported here).  Everything here
works on *names* and on a recursive listing supplied by the caller (see :class:`DirEntry`),
so the same code serves the reader, the writer, the compactor and the cleaner.

What this module follows (see ``docs/hive-acid-format.md`` §2, §6, §8, §9):

* directory and file names -- Hive ``AcidUtils`` (``deltaSubdir``, ``deleteDeltaSubdir``,
  ``baseDir``, ``addVisibilitySuffix``, ``createBucketFile``, ``ParsedBaseLight.parseBase``,
  ``ParsedDeltaLight.parse``, ``BUCKET_PATTERN``, ``ORIGINAL_PATTERN[_COPY]``,
  ``hiddenFileFilter``) and ``AcidConstants`` (``%07d`` / ``%04d`` / ``%05d`` digits);
* write-id snapshots -- Hive storage-api ``ValidReaderWriteIdList`` and
  ``ValidCompactorWriteIdList``, metastore ``TxnUtils.createValidCompactWriteIdList``;
* snapshot selection -- ``AcidUtils.getAcidState`` with ``getChildState``,
  ``processBaseDir``, ``processDeltaDir``, ``isDirUsable``, ``isValidBase``,
  ``findBestWorkingDeltas`` (Hive 3.1 rules plus the Hive 4 additions for ``_v`` dirs and
  aborted directories), cross-checked with Trino ``AcidTables.getAcidState``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from acidflow.errors import AcidflowError
from acidflow.format.names import (
    ACID_FORMAT_VERSION,
    ACID_VERSION_FILE,
    BASE_PREFIX,
    BUCKET_PREFIX,
    COPY_KEYWORD,
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    DELTA_SIDE_FILE_SUFFIX,
    METADATA_ACID_FILE,
    VISIBILITY_PREFIX,
    ParsedBase,
    ParsedDelta,
    format_base,
    format_bucket_file,
    format_delta,
    format_original_file,
    is_hidden,
    is_hidden_path,
    parse_base,
    parse_bucket_file,
    parse_delta,
    parse_original_bucket_id,
    parse_original_file,
)
from acidflow.format.writeids import (
    LONG_MAX_VALUE,
    LONG_MIN_VALUE,
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidWriteIdList,
)
from acidflow.states import TxnState

__all__ = [
    "ACID_VERSION_FILE",
    "METADATA_ACID_FILE",
    "ACID_FORMAT_VERSION",
    "BASE_PREFIX",
    "DELTA_PREFIX",
    "DELETE_DELTA_PREFIX",
    "BUCKET_PREFIX",
    "VISIBILITY_PREFIX",
    "DELTA_SIDE_FILE_SUFFIX",
    "COPY_KEYWORD",
    "LONG_MIN_VALUE",
    "LONG_MAX_VALUE",
    "format_base",
    "format_delta",
    "format_bucket_file",
    "format_original_file",
    "ParsedBase",
    "ParsedDelta",
    "parse_base",
    "parse_delta",
    "parse_bucket_file",
    "parse_original_bucket_id",
    "parse_original_file",
    "is_hidden",
    "is_hidden_path",
    "RangeResponse",
    "ValidWriteIdList",
    "ValidCompactorWriteIdList",
    "DirEntry",
    "AcidState",
    "NotEnoughHistoryError",
    "get_acid_state",
    "bucket_files",
]

# --------------------------------------------------------------------------------------
# Snapshot selection
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DirEntry:
    """One entry of a recursive listing of a partition (or unpartitioned table) directory.

    Attributes:
        path: path RELATIVE to the partition dir, ``/``-separated, no leading ``/``, e.g.
            ``"delta_0000001_0000001_0000"``, ``"delta_0000001_0000001_0000/bucket_00000"``,
            ``"000000_0"``, ``"HIVE_UNION_SUBDIR_1/000000_0"``.
        is_dir: True for directories.  Directory entries are optional: a directory is also
            inferred from any deeper path below it (object stores list files only).
        size: file length in bytes (used by ``ignore_empty_files``).
    """

    path: str
    is_dir: bool
    size: int = 0


@dataclass
class AcidState:
    """Result of :func:`get_acid_state` (Hive ``AcidUtils.Directory`` / ``AcidDirectory``).

    Attributes:
        base: the chosen base, or None.
        deltas: the current deltas in §6 order (insert and delete deltas mixed, ordered by
            :class:`ParsedDelta` ordering).
        original_files: relative paths of original (non-ACID layout) files, sorted by path;
            empty when a base was chosen.
        obsolete: relative names of directories/files superseded by the chosen base or by
            wider deltas (what the Cleaner may delete once older readers are gone), sorted.
        aborted: relative names of directories written by aborted write ids or by aborted
            visibility transactions (cleanable too), sorted.
    """

    base: ParsedBase | None
    deltas: list[ParsedDelta] = field(default_factory=list)
    original_files: list[str] = field(default_factory=list)
    obsolete: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)

    @property
    def insert_deltas(self) -> list[ParsedDelta]:
        """Current ``delta_`` dirs, in order."""
        return [d for d in self.deltas if not d.is_delete]

    @property
    def delete_deltas(self) -> list[ParsedDelta]:
        """Current ``delete_delta_`` dirs, in order."""
        return [d for d in self.deltas if d.is_delete]

    @property
    def base_dir(self) -> str | None:
        """Name of the chosen base dir, or None."""
        return None if self.base is None else self.base.name

    @property
    def current_dirs(self) -> list[str]:
        """Names of every directory a reader must open: the base (if any) then the deltas."""
        return ([self.base.name] if self.base is not None else []) + [d.name for d in self.deltas]


class NotEnoughHistoryError(AcidflowError):
    """No base is usable for this snapshot and the oldest base was made by compaction.

    The message follows Hive's ``ErrorMsg.ACID_NOT_ENOUGH_HISTORY``:
    ``Not enough history available for (<HWM>,<first exception or x>).  Oldest available
    base: <base dir>``.

    A catalog read (``acidflow.read.table``) adds the table's oldest readable write id
    (:meth:`with_oldest_readable`): ``...; the oldest write id still readable is N``.

    Attributes:
        high_watermark: the snapshot's HWM.
        min_open: the smallest exception as a string, ``"x"`` when there is none.
        oldest_base: relative name of the oldest base directory.
        oldest_readable_write_id: the oldest ``as_of_write_id`` still readable in the whole
            table, None when not known (the pure layer sees one partition).
    """

    def __init__(
        self,
        high_watermark: int,
        min_open: str,
        oldest_base: str,
        oldest_readable_write_id: int | None = None,
    ) -> None:
        self.high_watermark = high_watermark
        self.min_open = min_open
        self.oldest_base = oldest_base
        self.oldest_readable_write_id = oldest_readable_write_id
        message = (
            f"Not enough history available for ({high_watermark},{min_open}).  "
            f"Oldest available base: {oldest_base}"
        )
        if oldest_readable_write_id is not None:
            message += f"; the oldest write id still readable is {oldest_readable_write_id}"
        super().__init__(message)

    def with_oldest_readable(self, write_id: int) -> "NotEnoughHistoryError":
        """The same error naming the oldest write id still readable."""
        return NotEnoughHistoryError(self.high_watermark, self.min_open, self.oldest_base, write_id)


_TXN_STATES = (TxnState.COMMITTED.value, TxnState.OPEN.value, TxnState.ABORTED.value)


def _split_path(path: str) -> list[str]:
    if path.startswith("/"):
        raise ValueError(f"DirEntry path must be relative to the partition dir: {path!r}")
    parts = path.rstrip("/").split("/")
    if not parts or any(p == "" for p in parts):
        raise ValueError(f"malformed DirEntry path: {path!r}")
    return parts


def get_acid_state(
    entries: Iterable[DirEntry],
    valid_write_ids: ValidWriteIdList,
    is_compacted_base: Callable[[str], bool] = lambda base_name: False,
    txn_state: Callable[[int], str] | None = None,
    *,
    ignore_empty_files: bool = False,
    history_floor: int | None = None,
) -> AcidState:
    """Pick the base, deltas and original files a snapshot must read (docs/hive-acid-format.md §6).

    Follows Hive ``AcidUtils.getAcidState`` (``getChildState``, ``processBaseDir``,
    ``processDeltaDir``, ``isDirUsable``, ``isValidBase``, ``findBestWorkingDeltas``):

    1. Children of the partition dir, hidden names skipped: a file is an original file;
       a ``base_*`` dir a base candidate; a ``delta_*``/``delete_delta_*`` dir a delta
       candidate; any other dir an "original directory" searched recursively.
    2. A base/delta with ``_v<T>`` (T > 0) is used only when ``txn_state(T)`` is
       ``"committed"``; ``"aborted"`` puts it in ``aborted``, ``"open"`` ignores it.
       With ``txn_state=None`` every ``_v`` dir counts as committed (Trino's behaviour).
    3. Bases, processed in (write id, visibility, name) order: the oldest one is
       remembered; a non-compacted base whose write id is aborted goes to ``aborted``; a
       base is usable when its id is ``Long.MIN_VALUE``, or it is compacted (``_v`` suffix
       or ``is_compacted_base(name)``) and ``is_valid_base(W)``, or it is not compacted
       (INSERT OVERWRITE) and ``is_write_id_valid(W)``.  The usable base with the highest
       id wins; a compacted base beats a non-compacted one with the same id; bases at or
       below the current best are obsolete.
    4. Deltas whose whole range is aborted go to ``aborted``; those with
       ``is_write_id_range_valid != NONE`` are candidates.
    5. With a base, original files and original dirs are obsolete; without one the
       originals (recursively, hidden components skipped) are returned sorted by path.
    6./7. Candidates sorted per :class:`ParsedDelta`, then walked: a delta reaching past
       the covered id is taken if ``is_write_id_range_valid(current+1, max) != NONE``;
       more statements of the last taken write id and the delta/delete_delta twin of the
       last taken range are taken too; everything else is obsolete (deltas beyond the
       snapshot are just skipped).
    8. Bases exist, none usable, and the oldest one is compacted -> error (an INSERT
       OVERWRITE base carries full history and is just skipped) -- unless ``history_floor``
       says the deltas below the bases are all still there for this snapshot (acidflow's
       retained history: ``high watermark < history_floor``, see
       :func:`acidflow.storage.state.history_floor`); the snapshot then reads the original files
       and deltas as if there were no base.

    The Hive 4 shortcut "a base with W <= minOpenWriteId is always usable" is not applied:
    it is not in Hive 3.1 nor in Trino, and HIVE-29601 (2026) removed it as a data-loss
    bug.

    Args:
        entries: recursive listing of the partition dir (see :class:`DirEntry`).
        valid_write_ids: the reader's (or compactor's) snapshot.
        is_compacted_base: tells whether ``<base>/_metadata_acid`` marks the base as
            compacted (the I/O layer reads the file).  Not consulted for ``_v`` bases.
        txn_state: visibility-transaction state lookup for ``_v`` dirs (see step 2).
        ignore_empty_files: drop zero-length original files (Hive's ``ignoreEmptyFiles``;
            Trino always drops them).
        history_floor: snapshots with a high watermark below it may read without a base
            (step 8); None = Hive's rule.

    Returns:
        AcidState with ``obsolete`` and ``aborted`` sorted by name.

    Raises:
        NotEnoughHistoryError: step 8.
        ValueError: an absolute or malformed entry path, a ``base_``/``delta_`` directory
            whose name does not parse (Hive fails with ``NumberFormatException`` there), or
            an unknown ``txn_state`` answer.
    """
    split_paths: list[tuple[list[str], DirEntry]] = []
    for entry in entries:
        if entry.path in ("", "."):
            continue  # the partition dir itself
        split_paths.append((_split_path(entry.path), entry))
    # A path is a directory when flagged so or when anything is listed below it.
    dir_paths = {"/".join(parts[:i]) for parts, _ in split_paths for i in range(1, len(parts))}
    dir_paths.update("/".join(parts) for parts, entry in split_paths if entry.is_dir)
    files = {
        "/".join(parts): entry for parts, entry in split_paths if "/".join(parts) not in dir_paths
    }
    top_names = sorted({parts[0] for parts, _ in split_paths})

    obsolete: list[str] = []
    aborted: list[str] = []
    top_original_files: list[str] = []
    original_dirs: list[str] = []
    bases: list[ParsedBase] = []
    candidate_deltas: list[ParsedDelta] = []

    def usable(name: str, visibility_txn_id: int) -> bool:
        # Hive 4 isDirUsable: _v0 / no suffix is always visible.
        if visibility_txn_id <= 0 or txn_state is None:
            return True
        state = txn_state(visibility_txn_id)
        if state not in _TXN_STATES:
            raise ValueError(
                f"txn_state({visibility_txn_id}) returned {state!r}, expected one of {_TXN_STATES}"
            )
        if state == TxnState.ABORTED:
            aborted.append(name)
        return state == TxnState.COMMITTED

    for name in top_names:
        if is_hidden(name):
            continue
        if name not in dir_paths:
            if not ignore_empty_files or files[name].size != 0:
                top_original_files.append(name)
        elif name.startswith(BASE_PREFIX):
            base = parse_base(name)
            if base is None:
                raise ValueError(f"cannot parse base directory name {name!r}")
            if usable(name, base.visibility_txn_id):
                bases.append(base)
        elif name.startswith(DELTA_PREFIX) or name.startswith(DELETE_DELTA_PREFIX):
            delta = parse_delta(name)
            if delta is None:
                raise ValueError(f"cannot parse delta directory name {name!r}")
            if not usable(name, delta.visibility_txn_id):
                continue
            lo, hi = delta.min_write_id, delta.max_write_id
            if valid_write_ids.is_write_id_range_aborted(lo, hi) is RangeResponse.ALL:
                aborted.append(name)
            elif valid_write_ids.is_write_id_range_valid(lo, hi) is not RangeResponse.NONE:
                candidate_deltas.append(delta)
        else:
            original_dirs.append(name)

    # Step 3: bases.
    compacted_memo: dict[str, bool] = {}

    def compacted(b: ParsedBase) -> bool:
        # Hive isCompactedBase: a _v suffix, else the _metadata_acid marker.
        if b.name not in compacted_memo:
            compacted_memo[b.name] = b.visibility_txn_id > 0 or bool(is_compacted_base(b.name))
        return compacted_memo[b.name]

    def valid_base(b: ParsedBase, is_compacted: bool) -> bool:
        if b.write_id == LONG_MIN_VALUE:
            return True
        if is_compacted:
            return valid_write_ids.is_valid_base(b.write_id)
        return valid_write_ids.is_write_id_valid(b.write_id)

    oldest: ParsedBase | None = None
    best: ParsedBase | None = None
    for b in sorted(bases, key=lambda x: (x.write_id, x.visibility_txn_id, x.name)):
        if oldest is None or b.write_id < oldest.write_id:
            oldest = b
        is_compacted = compacted(b)
        if not is_compacted and valid_write_ids.is_write_id_aborted(b.write_id):
            aborted.append(b.name)  # aborted INSERT OVERWRITE (Hive 4 processBaseDir)
            continue
        if (
            best is None
            or best.write_id < b.write_id
            or (best.write_id == b.write_id and is_compacted)
        ):
            if valid_base(b, is_compacted):
                if best is not None:
                    obsolete.append(best.name)
                best = b
        else:
            obsolete.append(b.name)

    # Step 5: originals.
    original_files: list[str] = []
    if best is not None:
        obsolete.extend(top_original_files)
        obsolete.extend(original_dirs)
    else:
        dirs = set(original_dirs)
        nested = [
            rel
            for rel, entry in files.items()
            if "/" in rel
            and rel.split("/", 1)[0] in dirs
            and not is_hidden_path(rel)
            and not (ignore_empty_files and entry.size == 0)
        ]
        # Hive sorts by full path (Path/URI compareTo), i.e. plain string order here.
        original_files = sorted(top_original_files + nested)

    # Steps 6-7: walk the sorted candidates.
    deltas: list[ParsedDelta] = []
    current = best.write_id if best is not None else 0
    last_stmt = -1
    prev: ParsedDelta | None = None
    for d in sorted(candidate_deltas):
        if d.max_write_id > current:
            if (
                valid_write_ids.is_write_id_range_valid(current + 1, d.max_write_id)
                is not RangeResponse.NONE
            ):
                deltas.append(d)
                current = d.max_write_id
                last_stmt = d.statement_id
                prev = d
        elif d.max_write_id == current and last_stmt >= 0:
            deltas.append(d)  # another statement of the same write id
            prev = d
        elif (
            prev is not None
            and d.min_write_id == prev.min_write_id
            and d.max_write_id == prev.max_write_id
            and d.statement_id == prev.statement_id
        ):
            deltas.append(d)  # delta_x_y / delete_delta_x_y twin
            prev = d
        else:
            obsolete.append(d.name)

    # Step 8.
    full_history = history_floor is not None and valid_write_ids.high_watermark < history_floor
    if oldest is not None and best is None and compacted(oldest) and not full_history:
        exceptions = valid_write_ids.invalid_write_ids
        raise NotEnoughHistoryError(
            valid_write_ids.high_watermark, str(exceptions[0]) if exceptions else "x", oldest.name
        )

    return AcidState(
        base=best,
        deltas=deltas,
        original_files=original_files,
        obsolete=sorted(set(obsolete)),
        aborted=sorted(set(aborted)),
    )


def bucket_files(entries: Iterable[DirEntry], dir_name: str) -> list[tuple[str, int]]:
    """The ACID data files directly inside one base/delta/delete_delta directory.

    Returns ``(relative path, bucket_id)`` pairs such as
    ``("delta_0000001_0000001_0000/bucket_00000", 0)``, sorted by bucket id, then attempt
    id (no attempt first), then path.  Hidden files (``_orc_acid_version``,
    ``_metadata_acid``), ``_flush_length`` side files, nested paths and names that are not
    ``bucket_N[_A]`` are left out (Hive ``bucketFileFilter`` + ``hiddenFileFilter``).

    Args:
        entries: the recursive listing (see :class:`DirEntry`).
        dir_name: relative name of the directory, e.g. ``"base_0000005"``.
    """
    prefix = dir_name.rstrip("/") + "/"
    found: dict[str, tuple[int, int, str]] = {}
    for entry in entries:
        if entry.is_dir or not entry.path.startswith(prefix):
            continue
        rest = entry.path[len(prefix) :]
        if not rest or "/" in rest or is_hidden(rest):
            continue
        parsed = parse_bucket_file(rest)
        if parsed is None:
            continue
        bucket, attempt = parsed
        found[entry.path] = (bucket, -1 if attempt is None else attempt, entry.path)
    return [(key[2], key[0]) for key in sorted(found.values())]
