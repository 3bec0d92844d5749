"""Filesystem access for tables: local paths or fsspec URLs, one small surface.

Everything that touches table directories goes through :class:`TableFS`, so the pure layout
rules (``acidflow.acid.layout``) get a plain recursive listing and the rest of the code never
branches on the storage kind. Paths handed in and out are strings: absolute local paths or
URLs such as ``s3://bucket/wh/db.db/t``.
"""
from __future__ import annotations

import posixpath
from typing import BinaryIO

import fsspec

from acidflow.acid.layout import DirEntry


class TableFS:
    """A filesystem rooted anywhere, built from a path or URL.

    Args:
        url: any path or URL under the filesystem (its protocol picks the implementation).
    """

    def __init__(self, url: str):
        self.fs, _ = fsspec.core.url_to_fs(url)
        self.protocol = url.split("://", 1)[0] if "://" in url else "file"

    def _p(self, path: str) -> str:
        return self.fs._strip_protocol(path)

    def qualify(self, path: str) -> str:
        """The full path or URL of ``path`` (local paths stay plain)."""
        stripped = self._p(path)
        return stripped if self.protocol == "file" else f"{self.protocol}://{stripped}"

    def list_recursive(self, root: str) -> list[DirEntry]:
        """All files and directories under ``root`` as :class:`DirEntry` with paths relative
        to ``root`` ('/'-separated). Missing ``root`` -> empty list."""
        base = self._p(root).rstrip("/")
        if not self.fs.exists(base):
            return []
        out: list[DirEntry] = []
        for path, info in self.fs.find(base, withdirs=True, detail=True).items():
            rel = posixpath.relpath(self._p(path), base)
            if rel in (".", ""):
                continue
            out.append(DirEntry(rel, info["type"] == "directory", int(info.get("size") or 0)))
        out.sort(key=lambda e: e.path)
        return out

    def list_dir(self, path: str) -> list[tuple[str, bool]]:
        """Names directly inside ``path`` with an is-directory flag; missing -> empty."""
        p = self._p(path).rstrip("/")
        if not self.fs.exists(p):
            return []
        return sorted((posixpath.basename(i["name"].rstrip("/")), i["type"] == "directory")
                      for i in self.fs.ls(p, detail=True))

    def open(self, path: str, mode: str = "rb") -> BinaryIO:
        """Open a file (binary modes)."""
        if "w" in mode:
            self.fs.makedirs(posixpath.dirname(self._p(path)), exist_ok=True)
        return self.fs.open(self._p(path), mode)

    def exists(self, path: str) -> bool:
        """True when a file or directory exists at ``path``."""
        return self.fs.exists(self._p(path))

    def isdir(self, path: str) -> bool:
        """True when ``path`` is a directory."""
        return self.fs.isdir(self._p(path))

    def makedirs(self, path: str) -> None:
        """Create ``path`` and its parents; existing is fine."""
        self.fs.makedirs(self._p(path), exist_ok=True)

    def read_bytes(self, path: str) -> bytes:
        """Whole content of a file. Raises ``FileNotFoundError``."""
        with self.fs.open(self._p(path), "rb") as fh:
            return fh.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file with ``data`` (parents created)."""
        with self.open(path, "wb") as fh:
            fh.write(data)

    def size(self, path: str) -> int:
        """File size in bytes."""
        return int(self.fs.size(self._p(path)))

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst`` (a directory rename is atomic on local and HDFS)."""
        self.fs.mv(self._p(src), self._p(dst), recursive=True)

    def delete(self, path: str) -> None:
        """Delete a file or a directory tree; missing is fine."""
        p = self._p(path)
        if self.fs.exists(p):
            self.fs.rm(p, recursive=True)


def join(*parts: str) -> str:
    """Join path parts with '/' (works for local paths and URLs)."""
    first, *rest = parts
    return posixpath.join(first.rstrip("/") if first != "/" else first, *rest) if rest else first
