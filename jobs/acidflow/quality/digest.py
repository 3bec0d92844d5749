"""The order-independent digest of a row set: every row (already canonical, see
``acidflow.sources.postgres.equality``) is encoded canonically (:func:`encode_row`) and hashed
to 64 bits with BLAKE2b (:func:`row_hash`); a :class:`Digest` is the row count plus the sum of
the row hashes modulo 2**64, so row order does not matter and duplicate rows count."""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import struct
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["MASK64", "Digest", "encode_row", "row_hash"]

MASK64 = (1 << 64) - 1


def _enc(v: Any) -> bytes:
    if v is None:
        return b"\x00"
    if isinstance(v, bool):
        return b"b1" if v else b"b0"
    if isinstance(v, int):
        return b"i" + str(v).encode()
    if isinstance(v, decimal.Decimal):
        return b"n" + format(v, "f").encode()
    if isinstance(v, float):
        return b"f" + repr(v).encode()
    if isinstance(v, str):
        return b"s" + v.encode("utf-8")
    if isinstance(v, bytes):
        return b"x" + v
    if isinstance(v, _dt.date):
        return b"d" + v.isoformat().encode()
    if isinstance(v, tuple):
        return b"a" + encode_row(v)
    raise TypeError(f"cannot encode {type(v).__name__}")


def encode_row(values: Iterable[Any]) -> bytes:
    """Canonical bytes of a row of canonical values: per value a 4-byte big-endian length and a
    type-tagged payload (NULL is ``\\x00``, the empty string ``s``), so no two different rows
    share an encoding."""
    parts = []
    for v in values:
        e = _enc(v)
        parts.append(struct.pack(">I", len(e)))
        parts.append(e)
    return b"".join(parts)


def row_hash(values: Iterable[Any]) -> int:
    """64-bit hash (BLAKE2b, 8-byte digest, little-endian) of :func:`encode_row`."""
    return int.from_bytes(hashlib.blake2b(encode_row(values), digest_size=8).digest(), "little")


@dataclass
class Digest:
    """Order-independent digest: ``rows`` and ``checksum`` = sum of row hashes mod 2**64."""

    rows: int = 0
    checksum: int = 0

    def add(self, h: int) -> None:
        """Count one row with 64-bit hash ``h``."""
        self.rows += 1
        self.checksum = (self.checksum + h) & MASK64

    def merge(self, other: "Digest") -> "Digest":
        """The digest of both row sets together."""
        return Digest(self.rows + other.rows, (self.checksum + other.checksum) & MASK64)
