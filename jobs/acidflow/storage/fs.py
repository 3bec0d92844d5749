"""Filesystem access for tables: local paths or fsspec URLs, one small surface.

Everything that touches table directories goes through :class:`TableFS`, so the pure layout
rules (``acidflow.format.layout``) get a plain recursive listing and the rest of the code never
branches on the storage kind. Paths handed in and out are strings: absolute local paths or
URLs such as ``s3://bucket/wh/db.db/t``.

Object storage (``s3://``, s3fs): there are no directories and no rename, only objects under
key prefixes. What acidflow relies on there: a single ``PutObject`` is atomic (a reader sees the
old object, none, or the whole new one); ``PutObject`` with ``If-None-Match: *`` creates a key
only if it does not exist (AWS S3 since August 2024; HTTP 412 otherwise), which
:meth:`TableFS.create_exclusive` uses; LIST is strongly consistent with PUT and DELETE (AWS S3
since December 2020). :attr:`TableFS.renames_atomically` is False there, and callers that
would publish by renaming a directory use another scheme (``acidflow.maintenance.compaction``).
Endpoint, credentials and region come from the standard AWS environment botocore reads
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``,
``AWS_PROFILE``...), in the driver and in every Spark task alike.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import posixpath
import time
import uuid
from typing import Any, BinaryIO

import fsspec

from acidflow._extras import require
from acidflow.errors import AcidflowError
from acidflow.format.fileio import (
    join as join,  # re-exported: storage callers join paths here
)
from acidflow.format.layout import DirEntry

#: the hidden file (``_`` prefix: Hive's and our listings skip it) that records which write
#: statement created an ACID directory; see :meth:`TableFS.claim_dir`
CLAIM_FILE = "_acidflow_claim"
#: how long a writer waits for the claim of a directory a sibling task has just made
CLAIM_WAIT_S = 5.0


class DirectoryClaimedError(AcidflowError, FileExistsError):
    """A new ``delta_*`` / ``delete_delta_*`` / ``base_*`` directory already exists and belongs
    to another writer (another transaction, or another catalog that handed out the same
    write id): nothing was written into it, nothing committed was overwritten.

    Attributes:
        directory: the directory (path or URL).
        owner: the claim found there (``None``: the directory has no acidflow claim, e.g.
            written by Hive or an older acidflow).
    """

    def __init__(self, directory: str, owner: str | None, wanted: str = "") -> None:
        self.directory = directory
        self.owner = owner
        who = f"claimed by {owner}" if owner else "not claimed by this write statement"
        super().__init__(
            errno.EEXIST,
            f"{directory} already exists ({who}); another writer or another catalog owns it, "
            f"so {wanted or 'this write'} refuses to write into it (nothing was overwritten). "
            "Two catalogs on one warehouse hand out the same write ids: check "
            "ACIDFLOW_CATALOG_URL",
        )


def _renameat2_noreplace() -> Any:
    """libc ``renameat2`` (Linux >= 3.15, glibc >= 2.28), or ``None`` where it is missing."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
#: fsspec protocols whose directory rename is one atomic step (local disk, HDFS) or that are
#: in-process test stores (``memory://``); everything else (s3, gcs, abfs...) is an object store
RENAMING_PROTOCOLS = frozenset({"file", "local", "memory", "hdfs", "viewfs"})


class TableFS:
    """A filesystem rooted anywhere, built from a path or URL.

    Args:
        url: any path or URL under the filesystem (its protocol picks the implementation).
    """

    def __init__(self, url: str):
        if url.startswith(("s3://", "s3a://")):
            require("s3fs", "s3", "tables on s3://")
        self.fs, _ = fsspec.core.url_to_fs(url)
        self.protocol = url.split("://", 1)[0] if "://" in url else "file"

    @property
    def renames_atomically(self) -> bool:
        """True when a directory can be published by renaming it (local disk, HDFS, the
        in-memory test store); False on object stores (s3...), where a "rename" is a copy and
        a delete per object, visible half done."""
        return self.protocol in RENAMING_PROTOCOLS

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
        # object stores: one LIST (an existence check would add a HEAD and a LIST)
        if self.renames_atomically and not self.fs.exists(base):
            return []
        try:
            found = self.fs.find(base, withdirs=True, detail=True)
        except FileNotFoundError:
            return []
        out: list[DirEntry] = []
        for path, info in found.items():
            rel = posixpath.relpath(self._p(path), base)
            if rel in (".", ""):
                continue
            out.append(DirEntry(rel, info["type"] == "directory", int(info.get("size") or 0)))
        out.sort(key=lambda e: e.path)
        return out

    def list_dir(self, path: str) -> list[tuple[str, bool]]:
        """Names directly inside ``path`` with an is-directory flag; missing -> empty."""
        p = self._p(path).rstrip("/")
        if self.renames_atomically and not self.fs.exists(p):
            return []
        try:
            listed = self.fs.ls(p, detail=True)
        except FileNotFoundError:
            return []
        return sorted(
            (posixpath.basename(i["name"].rstrip("/")), i["type"] == "directory") for i in listed
        )

    def open(self, path: str, mode: str = "rb") -> BinaryIO:
        """Open a file (binary modes)."""
        if "w" in mode:
            self.makedirs(posixpath.dirname(self._p(path)))
        return self.fs.open(self._p(path), mode)

    def exists(self, path: str) -> bool:
        """True when a file or directory exists at ``path``."""
        return self.fs.exists(self._p(path))

    def isdir(self, path: str) -> bool:
        """True when ``path`` is a directory."""
        return self.fs.isdir(self._p(path))

    def makedirs(self, path: str) -> None:
        """Create ``path`` and its parents; existing is fine. Nothing on object stores: a
        prefix exists through its objects (s3fs's makedirs would send a request per call and
        create a missing bucket)."""
        if self.renames_atomically:
            self.fs.makedirs(self._p(path), exist_ok=True)

    def read_bytes(self, path: str) -> bytes:
        """Whole content of a file. Raises ``FileNotFoundError``."""
        with self.fs.open(self._p(path), "rb") as fh:
            return fh.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file with ``data`` (parents created)."""
        with self.open(path, "wb") as fh:
            fh.write(data)

    def put_atomic(self, path: str, data: bytes) -> None:
        """Create or replace the file ``path`` so that readers see either no file (or the old
        one) or all of ``data``, never part of it (parents created).

        Local disk: a hidden temporary file in the same directory, then ``os.replace``.
        Object stores: one ``PutObject`` (atomic by S3's contract; objects up to 5 GiB).
        Other fsspec stores: one ``pipe_file`` call.
        """
        p = self._p(path)
        if self.protocol == "file":
            os.makedirs(posixpath.dirname(p), exist_ok=True)
            tmp = f"{posixpath.dirname(p)}/.{posixpath.basename(p)}.{uuid.uuid4().hex}.tmp"
            try:
                with open(tmp, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, p)
            finally:
                if os.path.lexists(tmp):
                    os.unlink(tmp)
            return
        self.makedirs(posixpath.dirname(p))
        self.fs.pipe_file(p, data)

    def size(self, path: str) -> int:
        """File size in bytes."""
        return int(self.fs.size(self._p(path)))

    def create_exclusive(self, path: str, data: bytes) -> None:
        """Create the file ``path`` holding ``data``; fail if it exists (parents created).

        Local disk: the content is written to a hidden temporary file that is then hard-linked
        to ``path`` (``link`` fails when the name exists), so a reader never sees the file
        half written. fsspec stores: ``open(path, "xb")`` where the filesystem supports
        exclusive creation: ``memory://``, and ``s3://`` where s3fs sends the single
        ``PutObject`` with ``If-None-Match: *`` (the store answers 412 ``PreconditionFailed``
        to all but the first of racing writers; s3fs raises ``FileExistsError``). A store
        without exclusive creation: an existence check then a write - two writers racing
        inside that window can both succeed.

        Raises:
            FileExistsError: ``path`` exists.
        """
        p = self._p(path)
        self.makedirs(posixpath.dirname(p))
        if self.protocol == "file":
            tmp = f"{posixpath.dirname(p)}/.{posixpath.basename(p)}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(data)
            try:
                os.link(tmp, p)
            except FileExistsError:
                raise
            except OSError:  # no hard links on this filesystem: O_EXCL create, then write
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            finally:
                os.unlink(tmp)
            return
        try:
            with self.fs.open(p, "xb") as fh:
                fh.write(data)
            return
        except FileExistsError:
            raise
        except (ValueError, NotImplementedError, TypeError):
            pass  # the filesystem has no exclusive create: check, then write (racy, see above)
        if self.fs.exists(p):
            raise FileExistsError(errno.EEXIST, f"{self.qualify(p)} exists")
        with self.fs.open(p, "wb") as fh:
            fh.write(data)

    def _read_claim(self, claim: str, wait_s: float) -> str | None:
        deadline = time.monotonic() + wait_s
        delay = 0.01
        while True:
            try:
                text = self.read_bytes(claim).decode("utf-8", "replace")
                if text:
                    return text
            except FileNotFoundError:
                pass
            if time.monotonic() >= deadline:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def claim_dir(self, directory: str, claim: str, *, what: str = "") -> bool:
        """Create the new ACID directory ``directory`` exclusively for one write statement.

        ``claim`` is the statement's claim text (a JSON object with a unique ``"claim"``
        field); it is stored in ``<directory>/_acidflow_claim``. The tasks of one statement
        share a directory (one bucket file each), so a directory that already carries the
        same claim is ours; anything else already there is another writer's.

        Local disk: ``os.mkdir`` (fails if present), then the claim file; a task that finds
        the directory made by a sibling waits up to :data:`CLAIM_WAIT_S` seconds for its
        claim. fsspec stores (no real directories): the claim file is created exclusively
        (:meth:`create_exclusive`: on S3 a conditional ``PutObject``, so of two statements
        racing for one directory exactly one gets it) in a directory that must hold nothing
        else yet; a directory that already holds files is this statement's when it holds the
        claim file with the same claim id (read with the same wait for a half-written claim),
        another writer's when the claim differs or files are there without a claim.

        Returns:
            True when this call created the directory, False when it was ours already.
        Raises:
            DirectoryClaimedError: the directory exists and is not this statement's.
        """
        d = self._p(directory).rstrip("/")
        marker = f"{d}/{CLAIM_FILE}"
        want = _claim_id(claim)
        if self.protocol == "file":
            os.makedirs(posixpath.dirname(d), exist_ok=True)
            try:
                os.mkdir(d)
            except FileExistsError:
                owner = self._read_claim(marker, CLAIM_WAIT_S)
                if owner is not None and _claim_id(owner) == want:
                    return False
                raise DirectoryClaimedError(self.qualify(d), owner, what) from None
            self.create_exclusive(marker, claim.encode())
            return True
        present = [name for name, _ in self.list_dir(d)] if self.fs.exists(d) else []
        # A sibling task of this statement may create the claim and write its bucket file at
        # any moment, so a listing that holds anything is judged by the claim it holds:
        # the claim is created before any other file, so other files without it are foreign.
        # The claim is also looked up directly (a listing may lag behind a fresh write).
        if present and (CLAIM_FILE in present or self.fs.exists(marker)):
            owner = self._read_claim(marker, CLAIM_WAIT_S)
            if owner is not None and _claim_id(owner) == want:
                return False
            raise DirectoryClaimedError(self.qualify(d), owner, what)
        if present:
            raise DirectoryClaimedError(self.qualify(d), None, what)
        try:
            self.create_exclusive(marker, claim.encode())
        except FileExistsError:
            owner = self._read_claim(marker, CLAIM_WAIT_S)
            if owner is not None and _claim_id(owner) == want:
                return False
            raise DirectoryClaimedError(self.qualify(d), owner, what) from None
        return True

    def rename_exclusive(self, src: str, dst: str) -> None:
        """Move the directory ``src`` to the new name ``dst``; fail if ``dst`` exists.

        Local disk (Linux): ``renameat2(RENAME_NOREPLACE)``, atomic; where that call is
        missing, an existence check then ``os.rename`` (which itself refuses a non-empty
        ``dst``). Other renaming stores (``memory://``, HDFS): an existence check then a move
        (racy between the two). Object stores have no rename and are refused.

        Raises:
            DirectoryClaimedError: ``dst`` exists.
            NotImplementedError: an object store (:attr:`renames_atomically` is False).
        """
        s, d = self._p(src), self._p(dst)
        if not self.renames_atomically:
            raise NotImplementedError(
                f"{self.qualify(s)}: {self.protocol}:// has no atomic rename; acidflow does "
                "not publish by renaming on object stores"
            )
        if self.protocol == "file":
            fn = _renameat2_noreplace()
            if fn is not None:
                if fn(_AT_FDCWD, os.fsencode(s), _AT_FDCWD, os.fsencode(d), _RENAME_NOREPLACE) == 0:
                    return
                err = ctypes.get_errno()
                if err == errno.EEXIST or err == errno.ENOTEMPTY:
                    raise DirectoryClaimedError(self.qualify(d), None, f"publishing {s}")
                if err not in (errno.ENOSYS, errno.EINVAL):
                    raise OSError(err, os.strerror(err), s)
            if os.path.lexists(d):
                raise DirectoryClaimedError(self.qualify(d), None, f"publishing {s}")
            try:
                os.rename(s, d)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    raise DirectoryClaimedError(self.qualify(d), None, f"publishing {s}") from exc
                raise
            return
        if self.fs.exists(d):
            raise DirectoryClaimedError(self.qualify(d), None, f"publishing {s}")
        self.fs.mv(s, d, recursive=True)

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst`` (a directory rename is atomic on local and HDFS; on an
        object store it is a copy and a delete per object: callers that need atomicity check
        :attr:`renames_atomically`)."""
        self.fs.mv(self._p(src), self._p(dst), recursive=True)

    def delete(self, path: str) -> None:
        """Delete a file or a directory tree; missing is fine."""
        p = self._p(path)
        if self.fs.exists(p):
            self.fs.rm(p, recursive=True)


def _claim_id(text: str) -> str:
    """The unique ``"claim"`` field of a claim text (the whole text if it is not JSON)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return str(value.get("claim", text)) if isinstance(value, dict) else text


def new_claim(**about: object) -> str:
    """A fresh claim text for :meth:`TableFS.claim_dir`: ``{"claim": <uuid4>, **about}``
    (``about``: who writes, e.g. ``write_id``, ``statement_id``, ``kind``)."""
    return json.dumps({"claim": uuid.uuid4().hex, **about}, sort_keys=True, default=str)
