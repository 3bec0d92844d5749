"""Hive full-ACID names: base, delta and delete delta directories, bucket and original files.

Pure Python: formats and parses the names Hive gives the parts of an ACID table
(``docs/hive-acid-format.md`` §2) -- Hive ``AcidUtils`` (``deltaSubdir``, ``deleteDeltaSubdir``,
``baseDir``, ``addVisibilitySuffix``, ``createBucketFile``, ``ParsedBaseLight.parseBase``,
``ParsedDeltaLight.parse``, ``BUCKET_PATTERN``, ``ORIGINAL_PATTERN[_COPY]``,
``hiddenFileFilter``) and ``AcidConstants`` (``%07d`` / ``%04d`` / ``%05d`` digits).
:mod:`acidflow.format.layout` re-exports every name here with the snapshot rules that use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acidflow.format.writeids import LONG_MIN_VALUE, parse_java_long

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
