"""Hive full-ACID directory layout: names, write-id snapshots and snapshot selection.

Pure Python: no I/O, no Spark; write-id snapshots come from ``acidflow.format.writeids``.  Everything here
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

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from acidflow.errors import AcidflowError
from acidflow.format.writeids import (
    LONG_MAX_VALUE,
    LONG_MIN_VALUE,
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidWriteIdList,
    parse_java_long,
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
# Constants
# --------------------------------------------------------------------------------------

#: Marker file inside every base/delta/delete_delta dir; content is the single ASCII byte
#: ``2`` (Hive ``AcidUtils.OrcAcidVersion.ACID_FORMAT``; Trino ``writeAcidVersionFile``).
ACID_VERSION_FILE = "_orc_acid_version"
#: JSON marker inside a base written by major compaction (Hive ``MetaDataFile.METADATA_FILE``).
METADATA_ACID_FILE = "_metadata_acid"
#: Value written into :data:`ACID_VERSION_FILE` and the ``hive.acid.version`` footer key.
ACID_FORMAT_VERSION = 2

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
BUCKET_PREFIX = "bucket_"
#: Separator of the visibility transaction id (Hive 4 ``AcidConstants.VISIBILITY_PREFIX``).
VISIBILITY_PREFIX = "_v"
#: Streaming-ingest side file suffix (Hive ``AcidUtils.DELTA_SIDE_FILE_SUFFIX``).
DELTA_SIDE_FILE_SUFFIX = "_flush_length"
#: Infix of duplicate original file names (Hive ``Utilities.COPY_KEYWORD``).
COPY_KEYWORD = "_copy_"

_INT_MAX_VALUE = 2**31 - 1

_DIGITS = re.compile(r"[0-9]+")
_BUCKET_PATTERN = re.compile(r"bucket_([0-9]+)(?:_([0-9]+))?")
_ORIGINAL_PATTERN = re.compile(r"([0-9]+)_[0-9]+")
_ORIGINAL_COPY_PATTERN = re.compile(r"([0-9]+)_[0-9]+_copy_([0-9]+)")


def _parse_int(text: str) -> int | None:
    """Strict unsigned ``Integer.parseInt`` (digits only, <= 2**31-1); None when invalid."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if value <= _INT_MAX_VALUE else None


# --------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------


def _visibility_suffix(visibility_txn_id: int | None) -> str:
    if visibility_txn_id is None or visibility_txn_id == 0:
        return ""
    if visibility_txn_id < 0:
        raise ValueError(f"visibility txn id must be >= 0, got {visibility_txn_id}")
    return f"{VISIBILITY_PREFIX}{visibility_txn_id:07d}"


def format_base(write_id: int, visibility_txn_id: int | None = None) -> str:
    """Name of a base directory: ``base_<W %07d>[_v<T %07d>]``.

    ``format_base(5) == "base_0000005"``, ``format_base(5, 12) == "base_0000005_v0000012"``.
    A visibility id of None or 0 adds no suffix (Hive ``AcidUtils.addVisibilitySuffix``:
    ``_v0`` means "always visible").  Larger ids simply get more digits, and
    ``format_base(LONG_MIN_VALUE)`` gives ``"base_-9223372036854775808"`` as Java's
    ``String.format("%07d", Long.MIN_VALUE)`` does.

    Follows Hive ``AcidConstants.baseDir`` + ``AcidUtils.addVisibilitySuffix``.

    Raises:
        ValueError: negative visibility txn id.
    """
    return f"{BASE_PREFIX}{write_id:07d}{_visibility_suffix(visibility_txn_id)}"


def format_delta(
    min_write_id: int,
    max_write_id: int,
    statement_id: int | None = None,
    visibility_txn_id: int | None = None,
    delete: bool = False,
) -> str:
    """Name of an insert or delete delta directory.

    ``delta_<min %07d>_<max %07d>[_<stmt %04d>][_v<T %07d>]``, with the prefix
    ``delete_delta_`` when ``delete`` is true.  ``statement_id`` None or -1 means "no
    statement suffix" (the form written by minor compaction and streaming ingest, Hive
    ``AcidUtils.baseOrDeltaSubdirPath`` with statement id -1).  Examples:
    ``format_delta(1, 1, 0) == "delta_0000001_0000001_0000"``,
    ``format_delta(3, 7, delete=True) == "delete_delta_0000003_0000007"``.

    Follows Hive ``AcidUtils.deltaSubdir`` / ``deleteDeltaSubdir`` / ``addVisibilitySuffix``.

    Raises:
        ValueError: ``min_write_id > max_write_id``, statement id below -1, or a negative
            visibility txn id.
    """
    if min_write_id > max_write_id:
        raise ValueError(f"min write id {min_write_id} > max write id {max_write_id}")
    prefix = DELETE_DELTA_PREFIX if delete else DELTA_PREFIX
    name = f"{prefix}{min_write_id:07d}_{max_write_id:07d}"
    if statement_id is not None and statement_id != -1:
        if statement_id < 0:
            raise ValueError(f"statement id must be >= 0 (or -1/None for none), got {statement_id}")
        name += f"_{statement_id:04d}"
    return name + _visibility_suffix(visibility_txn_id)


def format_bucket_file(bucket_id: int, attempt_id: int | None = None) -> str:
    """Name of an ACID data file: ``bucket_<N %05d>[_<attempt>]``.

    ``format_bucket_file(0) == "bucket_00000"``, ``format_bucket_file(0, 0) == "bucket_00000_0"``
    (Hive 4 direct-insert form; the attempt id is not padded).

    Follows Hive ``AcidUtils.createBucketFile(subdir, bucket, attemptId)``.

    Raises:
        ValueError: negative bucket or attempt id.
    """
    if bucket_id < 0:
        raise ValueError(f"bucket id must be >= 0, got {bucket_id}")
    name = f"{BUCKET_PREFIX}{bucket_id:05d}"
    if attempt_id is not None:
        if attempt_id < 0:
            raise ValueError(f"attempt id must be >= 0, got {attempt_id}")
        name += f"_{attempt_id}"
    return name


def format_original_file(bucket_id: int, copy_number: int = 0) -> str:
    """Name Hive gives a non-ACID ("original") file: ``<bucket %06d>_0[_copy_<n>]``.

    ``format_original_file(2) == "000002_0"``, ``format_original_file(2, 1) == "000002_0_copy_1"``.
    Follows Hive ``AcidUtils.createFilename`` old-style branch (``LEGACY_FILE_BUCKET_DIGITS``)
    and ``Utilities.COPY_KEYWORD``.  Useful for tests and for placing pre-conversion files.

    Raises:
        ValueError: negative bucket id or copy number.
    """
    if bucket_id < 0 or copy_number < 0:
        raise ValueError("bucket id and copy number must be >= 0")
    name = f"{bucket_id:06d}_0"
    return name + (f"{COPY_KEYWORD}{copy_number}" if copy_number else "")


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedBase:
    """A parsed ``base_<W>[_v<T>]`` directory name.

    Attributes:
        name: the directory name as listed (relative to the partition dir).
        write_id: W, the highest write id the base contains.  ``LONG_MIN_VALUE``
            (-2**63, name ``base_-9223372036854775808``) is Hive's special base produced by
            the first compaction after a non-ACID table was converted; it is always usable.
        visibility_txn_id: T from the ``_v`` suffix, 0 when absent (always visible).

    Mirrors Hive ``AcidUtils.ParsedBaseLight`` (Trino ``AcidTables.ParsedBase``).
    """

    name: str
    write_id: int
    visibility_txn_id: int = 0

    @property
    def is_conversion_base(self) -> bool:
        """True for the ``Long.MIN_VALUE`` base of a converted table."""
        return self.write_id == LONG_MIN_VALUE


@dataclass(frozen=True)
class ParsedDelta:
    """A parsed ``delta_…`` / ``delete_delta_…`` directory name.

    Attributes:
        name: the directory name as listed (relative to the partition dir).
        min_write_id, max_write_id: the write-id range the directory covers.
        statement_id: the statement suffix, or -1 when the name has none (minor compaction,
            streaming ingest, pre-1.3 names).
        visibility_txn_id: T from a ``_v<T>`` suffix, 0 when absent (always visible).
        is_delete: True for ``delete_delta_`` directories.

    Ordering (``<``, ``sorted``) is Hive's ``ParsedDeltaLight.compareTo`` (identical in
    Trino ``AcidTables.ParsedDelta``): min write id ascending, then max write id
    **descending** (wider ranges first), then statement id ascending (so -1, the compacted
    form, comes before ``_0000``), then the name.  Equality is field equality.
    """

    name: str
    min_write_id: int
    max_write_id: int
    statement_id: int = -1
    visibility_txn_id: int = 0
    is_delete: bool = False

    @property
    def sort_key(self) -> tuple[int, int, int, str]:
        """``(min, -max, statement, name)``: the §6 step 6 order as a tuple."""
        return (self.min_write_id, -self.max_write_id, self.statement_id, self.name)

    def __lt__(self, other: ParsedDelta) -> bool:
        if not isinstance(other, ParsedDelta):
            return NotImplemented
        return self.sort_key < other.sort_key

    def __le__(self, other: ParsedDelta) -> bool:
        if not isinstance(other, ParsedDelta):
            return NotImplemented
        return self.sort_key <= other.sort_key

    def __gt__(self, other: ParsedDelta) -> bool:
        if not isinstance(other, ParsedDelta):
            return NotImplemented
        return self.sort_key > other.sort_key

    def __ge__(self, other: ParsedDelta) -> bool:
        if not isinstance(other, ParsedDelta):
            return NotImplemented
        return self.sort_key >= other.sort_key

    @property
    def has_statement_id(self) -> bool:
        """True when the name carries a statement suffix (Hive ``hasStatementId``)."""
        return self.statement_id >= 0

    @property
    def may_contain_side_file(self) -> bool:
        """True when ``bucket_N_flush_length`` side files may exist in this dir.

        Only un-compacted insert deltas spanning several write ids (streaming ingest) have
        them: not a delete delta, min != max, no visibility suffix (Hive
        ``ParsedDeltaLight.mayContainSideFile``).
        """
        return (
            not self.is_delete
            and self.min_write_id != self.max_write_id
            and self.visibility_txn_id <= 0
        )


def _split_visibility(name: str) -> tuple[str, int] | None:
    """Cut a ``_v<T>`` suffix at the first ``_v``; returns (rest, T) or None when T is bad."""
    idx = name.find(VISIBILITY_PREFIX)
    if idx < 0:
        return name, 0
    vis = parse_java_long(name[idx + len(VISIBILITY_PREFIX) :])
    if vis is None:
        return None
    return name[:idx], vis


def parse_base(name: str) -> ParsedBase | None:
    """Parse a base directory name; None when ``name`` is not a well-formed base name.

    Accepts padded or unpadded numbers (``base_5``, ``base_0000005``), the Hive 4
    ``_v<T>`` suffix and the negative ``Long.MIN_VALUE`` id (``base_-9223372036854775808``).
    Only a single path component is accepted (no ``/``).

    Follows Hive ``AcidUtils.ParsedBaseLight.parseBase`` (cut at the first ``_v``, then
    ``Long.parseLong``) and Trino ``AcidTables.parseBase``; where Hive would throw
    ``NumberFormatException`` this returns None.
    """
    if "/" in name or not name.startswith(BASE_PREFIX):
        return None
    split = _split_visibility(name[len(BASE_PREFIX) :])
    if split is None:
        return None
    rest, vis = split
    write_id = parse_java_long(rest, signed=True)
    if write_id is None:
        return None
    return ParsedBase(name=name, write_id=write_id, visibility_txn_id=vis)


def parse_delta(name: str) -> ParsedDelta | None:
    """Parse a ``delta_`` or ``delete_delta_`` directory name; None when malformed.

    Forms: ``<prefix><min>_<max>[_<stmt>][_v<T>]`` with padded or unpadded numbers
    (``delta_1_2`` from streaming ingest parses), e.g. ``delta_0000001_0000001_0000``,
    ``delete_delta_0000003_0000007``, ``delta_0000005_0000009_v0000123``.  A missing
    statement gives ``statement_id == -1``.  Only a single path component is accepted.

    Follows Hive ``AcidUtils.ParsedDeltaLight.parse`` (strip ``_v…`` at the first ``_v``,
    split the rest on ``_``) and Trino ``AcidTables.parseDelta``; where Hive would throw
    this returns None.  Unlike ``Long.parseLong`` a sign is not accepted here.
    """
    if "/" in name:
        return None
    if name.startswith(DELETE_DELTA_PREFIX):
        is_delete, rest = True, name[len(DELETE_DELTA_PREFIX) :]
    elif name.startswith(DELTA_PREFIX):
        is_delete, rest = False, name[len(DELTA_PREFIX) :]
    else:
        return None
    split = _split_visibility(rest)
    if split is None:
        return None
    rest, vis = split
    parts = rest.split("_")
    if len(parts) not in (2, 3):
        return None
    lo = parse_java_long(parts[0])
    hi = parse_java_long(parts[1])
    if lo is None or hi is None:
        return None
    stmt = -1
    if len(parts) == 3:
        parsed_stmt = _parse_int(parts[2])
        if parsed_stmt is None:
            return None
        stmt = parsed_stmt
    return ParsedDelta(
        name=name,
        min_write_id=lo,
        max_write_id=hi,
        statement_id=stmt,
        visibility_txn_id=vis,
        is_delete=is_delete,
    )


def parse_bucket_file(name: str) -> tuple[int, int | None] | None:
    """Parse an ACID data file name into ``(bucket_id, attempt_id)``.

    ``bucket_00003 -> (3, None)``, ``bucket_00003_1 -> (3, 1)``, unpadded ``bucket_3`` ->
    ``(3, None)``.  Returns None for anything else, in particular the streaming side file
    ``bucket_00000_flush_length``, hidden files and original-style names (``000000_0``).

    Follows Hive ``AcidUtils.BUCKET_PATTERN`` (``bucket_([0-9]+)(_[0-9]+)?``, whole-name
    match), ``parseBucketId`` / ``parseAttemptId`` and ``bucketFileFilter``.
    """
    if "/" in name or name.endswith(DELTA_SIDE_FILE_SUFFIX):
        return None
    m = _BUCKET_PATTERN.fullmatch(name)
    if not m:
        return None
    bucket = _parse_int(m.group(1))
    if bucket is None:
        return None
    attempt = None
    if m.group(2) is not None:
        attempt = _parse_int(m.group(2))
        if attempt is None:
            return None
    return bucket, attempt


def parse_original_file(name: str) -> tuple[int, int] | None:
    """Parse an original (non-ACID) file name into ``(bucket_id, copy_number)``.

    ``000002_0 -> (2, 0)``, ``000002_0_copy_1 -> (2, 1)``; None for any other name.
    Follows Hive ``AcidUtils.ORIGINAL_PATTERN`` / ``ORIGINAL_PATTERN_COPY`` and
    ``BucketMetaData.parse`` (bucket id = the number before the first ``_``).
    """
    if "/" in name:
        return None
    m = _ORIGINAL_PATTERN.fullmatch(name)
    if m:
        bucket = _parse_int(m.group(1))
        return None if bucket is None else (bucket, 0)
    m = _ORIGINAL_COPY_PATTERN.fullmatch(name)
    if m:
        bucket = _parse_int(m.group(1))
        copy = _parse_int(m.group(2))
        return None if bucket is None or copy is None else (bucket, copy)
    return None


def parse_original_bucket_id(name: str) -> int | None:
    """Bucket id of an original file name: ``000002_0 -> 2``, ``000002_0_copy_1 -> 2``.

    None for names matching neither Hive ``ORIGINAL_PATTERN`` (``[0-9]+_[0-9]+``) nor
    ``ORIGINAL_PATTERN_COPY`` (``[0-9]+_[0-9]+_copy_[0-9]+``) -- e.g. ``bucket_00000`` or
    ``random``.  Follows Hive ``AcidUtils.parseBucketId`` for original names.
    """
    parsed = parse_original_file(name)
    return None if parsed is None else parsed[0]


def is_hidden(name: str) -> bool:
    """True when a file/dir name starts with ``_`` or ``.`` (Hive ``hiddenFileFilter``).

    If a ``/``-separated path is passed, only its last component is checked; use
    :func:`is_hidden_path` to test every component.
    """
    last = name.rsplit("/", 1)[-1]
    return last.startswith("_") or last.startswith(".")


def is_hidden_path(path: str) -> bool:
    """True when any component of a relative ``/``-separated path is hidden.

    This is what a recursive listing filtered level by level with ``hiddenFileFilter``
    drops (Hive ``findOriginals``; compare ``acidTempDirFilter`` and Trino's ``/_``,
    ``/.`` rule).
    """
    return any(part.startswith("_") or part.startswith(".") for part in path.split("/") if part)


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
