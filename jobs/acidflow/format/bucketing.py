"""Hive's ACID bucket property: :class:`BucketCodec` and its 12-bit limits.

Pure Python, no Spark. :class:`BucketCodec` packs a bucket (writer) id and a statement id into
the 32-bit ``bucket`` field of an ACID event (``RecordIdentifier`` bucket property), following
Hive's ``ql/src/java/org/apache/hadoop/hive/ql/io/BucketCodec.java``
(docs/hive-acid-format.md §4). :data:`MAX_BUCKET_ID` / :data:`MAX_STATEMENT_ID` and
:func:`check_bucket_id` / :func:`check_statement_id` are the one home of the V1 limits (0..4095)
for writers, transactions and the catalog.

Which bucket a row of a ``CLUSTERED BY`` table belongs to (Hive's bucketing hash) is a different
rule: :mod:`acidflow.format.bucketing_hash`.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = [
    "BucketCodec",
    "encode_bucket_property",
    "decode_bucket_id",
    "decode_statement_id",
    "MAX_BUCKET_ID",
    "MAX_STATEMENT_ID",
    "check_bucket_id",
    "check_statement_id",
]

_M32 = 0xFFFFFFFF

# ---------------------------------------------------------------------------------------------
# Bucket property codec (Hive BucketCodec)
# ---------------------------------------------------------------------------------------------

_VERSION_SHIFT = 29  # bits 31..29 hold the codec version
_BUCKET_SHIFT = 16  # V1: bits 27..16 hold the bucket / writer id
_BUCKET_MASK = 0x0FFF0000
_STATEMENT_MASK = 0x00000FFF
MAX_BUCKET_ID = 0xFFF  #: largest bucket / writer id a V1 property can carry (4095)
MAX_STATEMENT_ID = 0xFFF  #: largest statement id a V1 property can carry (4095)
_MAX_V0_BUCKET_ID = (1 << _VERSION_SHIFT) - 1  # a V0 value must keep its top 3 bits at 000


def _check_property(prop: Any) -> int:
    """Validate a bucket property and return it as an unsigned 32-bit int."""
    if isinstance(prop, bool) or not isinstance(prop, int):
        raise TypeError(f"bucket property must be an int, got {type(prop).__name__}")
    if not -(1 << 31) <= prop <= _M32:
        raise ValueError(f"bucket property {prop} does not fit in 32 bits")
    return prop & _M32


def _check_id(name: str, value: Any, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= value <= maximum:
        raise ValueError(f"{name} out of range: {value} (allowed 0..{maximum})")
    return value


class BucketCodec(enum.Enum):
    """Codec of the ACID ``bucket`` column (the ``RecordIdentifier`` bucket property).

    Mirrors Hive's ``org.apache.hadoop.hive.ql.io.BucketCodec`` enum. The top three bits of the
    32-bit property give the codec version:

    * ``V0`` (before Hive 3): the whole value is the bucket id, the statement id is always 0.
    * ``V1`` (Hive 3+, what Hive writes): ``001`` version bits, 1 reserved bit, 12 bits bucket /
      writer id (0..4095) at bits 27..16, 4 reserved bits, 12 bits statement id (0..4095) at
      bits 11..0. Bucket 0 statement 0 is ``536870912``; bucket 2 is ``537001984``;
      bucket 5 statement 3 is ``537198595``.

    Members carry their numeric version as ``.value`` (0 or 1). Properties are accepted as
    signed (Java ``int``) or unsigned 32-bit values; encoded properties are returned as
    non-negative ints (always below ``2**31`` for V0 and V1).
    """

    V0 = 0
    V1 = 1

    @property
    def version(self) -> int:
        """The numeric codec version stored in bits 31..29 (0 or 1)."""
        return self.value

    def encode(self, bucket_id: int, statement_id: int = 0) -> int:
        """Pack a bucket (writer) id and a statement id into a bucket property.

        Follows ``BucketCodec.encode``: V1 gives ``(1 << 29) | (bucket_id << 16) |
        max(0, statement_id)``; V0 returns ``bucket_id`` unchanged.

        Args:
            bucket_id: Hive bucket number (bucketed tables) or writer / task id (unbucketed
                tables). V1: 0..4095; V0: 0..2**29-1.
            statement_id: 0-based statement id within the transaction; negative values mean
                "none" and encode as 0 (as Hive does). V1: at most 4095; V0 cannot store one,
                so it must be <= 0.
        Returns:
            The bucket property as a non-negative int.
        Raises:
            ValueError: an id is out of range.
            TypeError: an id is not an int.
        """
        if isinstance(statement_id, bool) or not isinstance(statement_id, int):
            raise TypeError(f"statement_id must be an int, got {type(statement_id).__name__}")
        statement_id = max(0, statement_id)
        if self is BucketCodec.V0:
            _check_id("bucket_id", bucket_id, _MAX_V0_BUCKET_ID)
            if statement_id:
                raise ValueError(
                    f"statement_id out of range for codec V0: {statement_id} (V0 stores none)"
                )
            return bucket_id
        _check_id("bucket_id", bucket_id, MAX_BUCKET_ID)
        _check_id("statement_id", statement_id, MAX_STATEMENT_ID)
        return (self.value << _VERSION_SHIFT) | (bucket_id << _BUCKET_SHIFT) | statement_id

    def decode_writer_id(self, prop: int) -> int:
        """Bucket id (bucketed tables) or writer id (unbucketed) of a property of this codec.

        Follows ``BucketCodec.decodeWriterId``: V1 reads bits 27..16, V0 returns the value.
        The version bits are not checked (use :meth:`for_property` to pick the codec).

        Raises:
            TypeError / ValueError: ``prop`` is not an int that fits in 32 bits.
        """
        unsigned = _check_property(prop)
        if self is BucketCodec.V0:
            return unsigned - (1 << 32) if unsigned & 0x80000000 else unsigned
        return (unsigned & _BUCKET_MASK) >> _BUCKET_SHIFT

    def decode_statement_id(self, prop: int) -> int:
        """Statement id of a property of this codec (always 0 for V0).

        Follows ``BucketCodec.decodeStatementId``: V1 reads bits 11..0.

        Raises:
            TypeError / ValueError: ``prop`` is not an int that fits in 32 bits.
        """
        unsigned = _check_property(prop)
        if self is BucketCodec.V0:
            return 0
        return unsigned & _STATEMENT_MASK

    @staticmethod
    def determine_version(prop: int) -> "BucketCodec":
        """The codec a bucket property was written with, from its top three bits.

        Follows ``BucketCodec.determineVersion`` / ``getCodec``.

        Raises:
            ValueError: the version bits are neither 0 nor 1 (or ``prop`` does not fit in
                32 bits).
            TypeError: ``prop`` is not an int.
        """
        unsigned = _check_property(prop)
        version = unsigned >> _VERSION_SHIFT
        if version == 0:
            return BucketCodec.V0
        if version == 1:
            return BucketCodec.V1
        raise ValueError(
            f"Illegal 'bucket' format: version {version} in bucket property {prop}"
            " (only codec versions 0 and 1 exist)"
        )

    @staticmethod
    def for_property(prop: int) -> "BucketCodec":
        """Alias of :meth:`determine_version`."""
        return BucketCodec.determine_version(prop)


def check_bucket_id(bucket_id: int, *, hint: str = "") -> int:
    """``bucket_id`` when a V1 bucket property can carry it (0..4095, the 12 bits of
    ``BucketCodec.V1``), the one check of that limit for writers and the catalog.

    Args:
        bucket_id: a Hive bucket number or a writer (task) id.
        hint: what to do about it, appended to the message.
    Raises:
        ValueError: out of range.
    """
    if not 0 <= bucket_id <= MAX_BUCKET_ID:
        raise ValueError(
            f"bucket (writer) id {bucket_id} does not fit BucketCodec V1 "
            f"(0..{MAX_BUCKET_ID})" + (f": {hint}" if hint else "")
        )
    return bucket_id


def check_statement_id(statement_id: int, *, hint: str = "") -> int:
    """``statement_id`` when a V1 bucket property can carry it (0..4095, Hive's limit on
    statements per table and transaction).

    Raises:
        ValueError: out of range.
    """
    if not 0 <= statement_id <= MAX_STATEMENT_ID:
        raise ValueError(
            f"statement id {statement_id} does not fit BucketCodec V1 "
            f"(0..{MAX_STATEMENT_ID})" + (f": {hint}" if hint else "")
        )
    return statement_id


def encode_bucket_property(bucket_id: int, statement_id: int = 0) -> int:
    """V1 bucket property for ``bucket_id`` and ``statement_id`` (what Hive 3 writes).

    Same as ``BucketCodec.V1.encode``; e.g. ``encode_bucket_property(0) == 536870912``.

    Raises:
        ValueError: ``bucket_id`` or ``statement_id`` is above 4095 or ``bucket_id`` < 0.
    """
    return BucketCodec.V1.encode(bucket_id, statement_id)


def decode_bucket_id(prop: int) -> int:
    """Bucket (writer) id of a V0 or V1 bucket property, the codec chosen by its version bits.

    Raises:
        ValueError: unknown codec version or a value that does not fit in 32 bits.
    """
    return BucketCodec.determine_version(prop).decode_writer_id(prop)


def decode_statement_id(prop: int) -> int:
    """Statement id of a V0 (always 0) or V1 bucket property.

    Raises:
        ValueError: unknown codec version or a value that does not fit in 32 bits.
    """
    return BucketCodec.determine_version(prop).decode_statement_id(prop)
