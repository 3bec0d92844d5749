"""What the format's file readers and writers need of a file system, as a protocol.

``acidflow.format`` does no I/O of its own choosing: the ORC codec (``format/orc``) reads and
writes through any object with these methods, like pyiceberg's ``FileIO``.
``acidflow.storage.fs.TableFS`` (local disk and fsspec object stores) is the one acidflow
passes. Paths are '/'-separated strings, local paths or URLs (``s3://bucket/key``).
"""

from __future__ import annotations

import posixpath
from typing import BinaryIO, Protocol

__all__ = ["FileIO", "join"]


class FileIO(Protocol):
    """Byte-level file access (the subset of ``TableFS`` the ORC codec calls)."""

    def open(self, path: str, mode: str = "rb") -> BinaryIO:
        """Open a file in a binary mode (``rb`` or ``wb``)."""
        ...

    def exists(self, path: str) -> bool:
        """True when a file or directory exists at ``path``."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """Whole content of a file. Raises ``FileNotFoundError``."""
        ...

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file with ``data`` (parents created)."""
        ...

    def size(self, path: str) -> int:
        """File size in bytes."""
        ...

    def delete(self, path: str) -> None:
        """Delete a file or a directory tree; missing is fine."""
        ...


def join(*parts: str) -> str:
    """Join path parts with '/' (works for local paths and URLs).

    Examples:
        >>> join("s3://b/t/", "delta_0000001_0000001_0000", "bucket_00000")
        's3://b/t/delta_0000001_0000001_0000/bucket_00000'
    """
    first, *rest = parts
    return posixpath.join(first.rstrip("/") if first != "/" else first, *rest) if rest else first
