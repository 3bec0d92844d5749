"""Hive write-id snapshots: ``ValidWriteIdList`` (what a reader may see of one table) and the
compactor's ``ValidCompactorWriteIdList``.

Follows Hive storage-api ``ValidReaderWriteIdList`` / ``ValidCompactorWriteIdList`` (string
form ``<table>:<high watermark>:<min open write id>:<open ids>:<aborted ids>``, the high
watermark, open and aborted write ids as exceptions, ``isWriteIdValid``,
``isWriteIdRangeValid``, ``isValidBase``) and metastore ``TxnUtils.createValidCompactWriteIdList``
(see ``docs/hive-acid-format.md`` §6). Pure Python, no imports from the rest of
acidflow; ``acidflow.format.layout`` re-exports these names.
"""

from __future__ import annotations

import bisect
import enum
import re
from typing import Iterable

__all__ = [
    "LONG_MIN_VALUE",
    "LONG_MAX_VALUE",
    "parse_java_long",
    "RangeResponse",
    "ValidWriteIdList",
    "ValidCompactorWriteIdList",
]

#: Java ``Long.MIN_VALUE``: write id of the special base made when a non-ACID table is converted.
LONG_MIN_VALUE = -(2**63)
#: Java ``Long.MAX_VALUE``: the "no open write id" value in Hive's string form.
LONG_MAX_VALUE = 2**63 - 1

_DIGITS = re.compile(r"[0-9]+")
_SIGNED_DIGITS = re.compile(r"[+-]?[0-9]+")


def parse_java_long(text: str, *, signed: bool = False) -> int | None:
    """Strict ``Long.parseLong``: ASCII digits only (optionally one sign), within 64 bits.

    Python's ``int()`` alone would also accept ``"1_0"`` or surrounding blanks, which Java
    rejects; returns None instead of raising.
    """
    pattern = _SIGNED_DIGITS if signed else _DIGITS
    if not pattern.fullmatch(text):
        return None
    value = int(text)
    if value < LONG_MIN_VALUE or value > LONG_MAX_VALUE:
        return None
    return value


class RangeResponse(enum.Enum):
    """Answer of the range queries (Hive ``ValidWriteIdList.RangeResponse``)."""

    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"


def _id_tuple(ids: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted({int(i) for i in ids}))


class ValidWriteIdList:
    """A reader's view of one table's write ids (Hive ``ValidReaderWriteIdList``).

    A write id is valid (committed and visible) when it is <= ``high_watermark`` and is
    not an exception.  Exceptions are the open and the aborted write ids below the
    high-water mark, as handed out by the metastore.

    Args:
        table_name: ``<db>.<table>`` (None is written as ``null`` like Hive does).
        high_watermark: highest write id allocated when the snapshot was taken.
        open_write_ids: write ids of transactions still open.
        aborted_write_ids: write ids of aborted transactions.
        min_open_write_id: smallest open write id; defaults to ``min(open_write_ids)``, or
            None (= Java ``Long.MAX_VALUE``, "nothing open") when there are none.  An
            explicit value is kept as given (Hive's string form can carry it).

    Attributes (read-only): ``table_name``, ``high_watermark``, ``open_write_ids`` (sorted
    tuple), ``aborted_write_ids`` (sorted tuple), ``min_open_write_id`` (int or None),
    ``invalid_write_ids`` (sorted tuple of all exceptions, Hive ``getInvalidWriteIds``).

    Raises:
        ValueError: an id listed both as open and as aborted.
    """

    def __init__(
        self,
        table_name: str | None,
        high_watermark: int,
        open_write_ids: Iterable[int] = (),
        aborted_write_ids: Iterable[int] = (),
        min_open_write_id: int | None = None,
    ) -> None:
        open_ids = _id_tuple(open_write_ids)
        aborted_ids = _id_tuple(aborted_write_ids)
        both = set(open_ids) & set(aborted_ids)
        if both:
            raise ValueError(f"write ids both open and aborted: {sorted(both)}")
        if min_open_write_id is None and open_ids:
            min_open_write_id = open_ids[0]
        if min_open_write_id is not None and min_open_write_id == LONG_MAX_VALUE:
            min_open_write_id = None
        self._table_name = table_name
        self._hwm = int(high_watermark)
        self._open = open_ids
        self._aborted = aborted_ids
        self._aborted_set = frozenset(aborted_ids)
        self._exceptions = tuple(sorted(open_ids + aborted_ids))
        self._exception_set = frozenset(self._exceptions)
        self._min_open = None if min_open_write_id is None else int(min_open_write_id)

    # -- attributes ---------------------------------------------------------------
    @property
    def table_name(self) -> str | None:
        """``<db>.<table>`` or None."""
        return self._table_name

    @property
    def high_watermark(self) -> int:
        """The high-water mark (HWM): ids above it are not valid."""
        return self._hwm

    @property
    def open_write_ids(self) -> tuple[int, ...]:
        """Sorted open write ids."""
        return self._open

    @property
    def aborted_write_ids(self) -> tuple[int, ...]:
        """Sorted aborted write ids."""
        return self._aborted

    @property
    def min_open_write_id(self) -> int | None:
        """Smallest open write id, None when nothing is open (Hive ``getMinOpenWriteId``)."""
        return self._min_open

    @property
    def invalid_write_ids(self) -> tuple[int, ...]:
        """All exceptions (open + aborted), sorted (Hive ``getInvalidWriteIds``)."""
        return self._exceptions

    # -- single ids -----------------------------------------------------------------
    def is_write_id_valid(self, write_id: int) -> bool:
        """True when ``write_id <= HWM`` and it is not an exception (Hive ``isWriteIdValid``)."""
        return write_id <= self._hwm and write_id not in self._exception_set

    def is_write_id_open(self, write_id: int) -> bool:
        """True when ``write_id`` is listed as an open exception (not aborted)."""
        return write_id in self._exception_set and write_id not in self._aborted_set

    def is_write_id_aborted(self, write_id: int) -> bool:
        """True when ``write_id`` is listed as aborted (Hive ``isWriteIdAborted``)."""
        return write_id in self._aborted_set

    def is_valid_base(self, write_id: int) -> bool:
        """Whether a *compacted* ``base_<write_id>`` can serve this snapshot.

        True when ``write_id < min_open_write_id`` (no open id inside the base) and
        ``write_id <= HWM`` (Hive ``ValidReaderWriteIdList.isValidBase``).
        """
        min_open = LONG_MAX_VALUE if self._min_open is None else self._min_open
        return write_id < min_open and write_id <= self._hwm

    # -- ranges -----------------------------------------------------------------------
    def _count_exceptions(self, lo: int, hi: int) -> int:
        return bisect.bisect_right(self._exceptions, hi) - bisect.bisect_left(self._exceptions, lo)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """How many ids of ``[min, max]`` are valid: ALL, SOME or NONE.

        Hive ``ValidReaderWriteIdList.isWriteIdRangeValid``: NONE when ``min > HWM``; ALL
        when the smallest exception is above ``max``; otherwise count the ids above HWM plus
        the exceptions inside the range -- 0 gives ALL, the whole range gives NONE, anything
        else SOME.

        Raises:
            ValueError: ``min_write_id > max_write_id``.
        """
        if min_write_id > max_write_id:
            raise ValueError(f"empty range [{min_write_id}, {max_write_id}]")
        if min_write_id > self._hwm:
            return RangeResponse.NONE
        if self._exceptions and self._exceptions[0] > max_write_id:
            return RangeResponse.ALL
        count = max(0, max_write_id - self._hwm) + self._count_exceptions(
            min_write_id, max_write_id
        )
        if count == 0:
            return RangeResponse.ALL
        if count == max_write_id - min_write_id + 1:
            return RangeResponse.NONE
        return RangeResponse.SOME

    def is_write_id_range_aborted(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """How many ids of ``[min, max]`` are aborted: ALL, SOME or NONE.

        Hive ``ValidReaderWriteIdList.isWriteIdRangeAborted``: NONE when ``min > HWM``,
        otherwise count the aborted ids in the range (0 -> NONE, all -> ALL, else SOME).

        Raises:
            ValueError: ``min_write_id > max_write_id``.
        """
        if min_write_id > max_write_id:
            raise ValueError(f"empty range [{min_write_id}, {max_write_id}]")
        if self._hwm < min_write_id:
            return RangeResponse.NONE
        count = bisect.bisect_right(self._aborted, max_write_id) - bisect.bisect_left(
            self._aborted, min_write_id
        )
        if count == 0:
            return RangeResponse.NONE
        if count == max_write_id - min_write_id + 1:
            return RangeResponse.ALL
        return RangeResponse.SOME

    # -- string form ----------------------------------------------------------------
    def to_string(self) -> str:
        """Hive's string form ``<table>:<HWM>:<minOpen>:<open,…>:<aborted,…>``.

        ``minOpen`` is ``9223372036854775807`` when nothing is open, a missing table name is
        written ``null``, empty lists leave their field empty (``db.t:5:9223372036854775807::``).
        Follows Hive ``ValidReaderWriteIdList.writeToString`` (the value of the conf key
        ``hive.txn.valid.writeids``).
        """
        table = "null" if self._table_name is None else self._table_name
        min_open = LONG_MAX_VALUE if self._min_open is None else self._min_open
        open_s = ",".join(str(i) for i in self._open)
        aborted_s = ",".join(str(i) for i in self._aborted)
        return f"{table}:{self._hwm}:{min_open}:{open_s}:{aborted_s}"

    def __str__(self) -> str:
        return self.to_string()

    @classmethod
    def from_string(cls, s: str | None) -> ValidWriteIdList:
        """Parse Hive's string form (inverse of :meth:`to_string`).

        Accepts what Java's ``String.split(":")`` accepts, i.e. trailing empty fields may be
        missing (``db.t:5:9223372036854775807`` and ``db.t:100:4:4`` are valid).  ``null``
        (any case) as table name gives None.  None or ``""`` gives Hive's "everything is
        valid" list: no table, HWM ``Long.MAX_VALUE``, no exceptions.
        Follows Hive ``ValidReaderWriteIdList.readFromString``.

        Raises:
            ValueError: fewer than 3 or more than 5 fields, or a non-numeric id.
        """
        if not s:
            return cls(None, LONG_MAX_VALUE)
        fields = s.split(":")
        if len(fields) < 3 or len(fields) > 5:
            raise ValueError(f"not a ValidWriteIdList string: {s!r}")
        table: str | None = None if fields[0].lower() == "null" else fields[0]

        def num(text: str) -> int:
            value = parse_java_long(text, signed=True)
            if value is None:
                raise ValueError(f"bad number {text!r} in ValidWriteIdList string {s!r}")
            return value

        hwm = num(fields[1])
        min_open = num(fields[2])
        open_ids = [num(x) for x in fields[3].split(",")] if len(fields) > 3 and fields[3] else []
        aborted = [num(x) for x in fields[4].split(",")] if len(fields) > 4 and fields[4] else []
        return cls(table, hwm, open_ids, aborted, None if min_open == LONG_MAX_VALUE else min_open)

    # -- constructors / conversions -------------------------------------------------
    @classmethod
    def all_valid(cls, table_name: str | None, high_watermark: int) -> ValidWriteIdList:
        """A snapshot where every id up to ``high_watermark`` is committed (no exceptions)."""
        return cls(table_name, high_watermark)

    def update_high_watermark(self, value: int) -> ValidWriteIdList:
        """Copy with another HWM, same exceptions (Hive ``updateHighWatermark``, used by the Cleaner)."""
        return ValidWriteIdList(self._table_name, value, self._open, self._aborted, self._min_open)

    def for_compactor(self) -> ValidCompactorWriteIdList:
        """The list a compactor must use for this table state.

        Follows Hive ``TxnUtils.createValidCompactWriteIdList``: the HWM drops to
        ``min open write id - 1`` when something is open, only aborted ids stay as
        exceptions (those above the new HWM are cut off by the
        ``ValidCompactorWriteIdList`` constructor), and the min open id is carried only
        when there was at least one aborted id (Java constructor detail; it only shows in
        :meth:`to_string`).
        """
        min_open: int | None
        if self._open:
            min_open = self._open[0]
            hwm = self._open[0] - 1
        else:
            min_open = None
            hwm = self._hwm
        return ValidCompactorWriteIdList(
            self._table_name, hwm, (), self._aborted, min_open if self._aborted else None
        )

    # -- value semantics -------------------------------------------------------------
    def _key(self) -> tuple:
        return (type(self), self._table_name, self._hwm, self._open, self._aborted, self._min_open)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ValidWriteIdList):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_string()!r})"


class ValidCompactorWriteIdList(ValidWriteIdList):
    """The compactor's view of a table's write ids (Hive ``ValidCompactorWriteIdList``).

    Build it with :meth:`ValidWriteIdList.for_compactor`.  Differences from the reader list:

    * ``high_watermark`` is the highest id the compaction may include (min open - 1);
      exceptions above it are dropped at construction;
    * :meth:`is_write_id_range_valid` ignores exceptions: ALL when ``max <= HWM`` else NONE,
      so a streaming ``delta_11_20`` is never compacted while an id inside it is unresolved;
    * :meth:`is_write_id_aborted` is true for every exception (they are all aborted).

    Same constructor arguments as :class:`ValidWriteIdList`; ``from_string`` returns this
    class when called on it (Hive ``ValidCompactorWriteIdList.fromValue``).
    """

    def __init__(
        self,
        table_name: str | None,
        high_watermark: int,
        open_write_ids: Iterable[int] = (),
        aborted_write_ids: Iterable[int] = (),
        min_open_write_id: int | None = None,
    ) -> None:
        hwm = int(high_watermark)
        open_ids = [i for i in _id_tuple(open_write_ids) if i <= hwm]
        aborted = [i for i in _id_tuple(aborted_write_ids) if i <= hwm]
        super().__init__(table_name, hwm, open_ids, aborted, min_open_write_id)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """ALL when ``max_write_id <= HWM``, otherwise NONE (Hive override).

        Raises:
            ValueError: ``min_write_id > max_write_id``.
        """
        if min_write_id > max_write_id:
            raise ValueError(f"empty range [{min_write_id}, {max_write_id}]")
        return RangeResponse.ALL if self.high_watermark >= max_write_id else RangeResponse.NONE

    def is_write_id_aborted(self, write_id: int) -> bool:
        """True for any exception (Hive override: the compactor list holds only aborted ids)."""
        return write_id in self._exception_set

    def update_high_watermark(self, value: int) -> ValidCompactorWriteIdList:
        """Copy with another HWM (exceptions above it are dropped)."""
        return ValidCompactorWriteIdList(
            self.table_name,
            value,
            self.open_write_ids,
            self.aborted_write_ids,
            self.min_open_write_id,
        )

    def for_compactor(self) -> ValidCompactorWriteIdList:
        """Already a compactor list: returns itself."""
        return self
