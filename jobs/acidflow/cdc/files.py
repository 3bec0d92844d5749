"""The input side of a CDC batch: the change files of a landing directory in order, their lines
(gzip or plain text, refused whole when not readable), and the batch id that makes a rerun
idempotent (the LSN range for wal2json, else the SHA-256 of the file).
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from pathlib import Path

from acidflow.sources.records import (
    ParsedStream,
    UnreadableFileError,
)
from acidflow.storage.fs import TableFS


def quarantine_hint(path: str) -> str:
    """The documented way past a poison change file: set it aside deliberately."""
    return (
        f"set it aside with 'acidflow cdc quarantine-file {path} --reason TEXT' to go on "
        "with the later files"
    )


def read_lines(path: str) -> tuple[list[str], bytes]:
    """The text lines of a change file (``.gz`` decompressed) and its (decompressed) content.

    Raises:
        UnreadableFileError: a truncated or corrupt ``.gz``, a binary file (NUL bytes, or gzip
            data under a name without ``.gz``) or bytes that are not UTF-8; the message names
            the file, the byte offset (and line) where known, and :func:`quarantine_hint`.
    """
    with TableFS(path).open(path, "rb") as f:
        raw = f.read()
    hint = quarantine_hint(path)
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(raw)
        except EOFError:
            raise UnreadableFileError(
                path,
                f"truncated .gz: the compressed data ends at byte {len(raw)} before the "
                "end-of-stream marker (an interrupted copy?)",
                len(raw),
                hint=hint,
            ) from None
        except (OSError, zlib.error) as e:  # BadGzipFile is an OSError
            raise UnreadableFileError(path, f"corrupt .gz: {e}", hint=hint) from None
    else:
        data = raw
    if data[:2] == b"\x1f\x8b":
        raise UnreadableFileError(
            path, "gzip-compressed data in a file whose name does not end in .gz", 0, 1, hint=hint
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        raise UnreadableFileError(
            path,
            "binary data (a NUL byte), not JSON text",
            nul,
            data.count(b"\n", 0, nul) + 1,
            hint=hint,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnreadableFileError(
            path,
            f"not UTF-8 text ({e.reason}: {data[e.start : e.start + 4]!r})",
            e.start,
            data.count(b"\n", 0, e.start) + 1,
            hint=hint,
        ) from None
    return text.splitlines(), data


def batch_id_for(fmt: str, stream: ParsedStream, content: bytes) -> str:
    """The batch id: LSN range for wal2json streams, else a digest of the content."""
    if fmt == "wal2json" and stream.first_position and stream.last_position:
        return f"wal2json:{stream.first_position}-{stream.last_position}"
    return f"{fmt}:sha256:{hashlib.sha256(content).hexdigest()}"


def change_files(input_path: str) -> list[str]:
    """Change files of a directory in name order (``*.json``, ``*.jsonl``, ``*.ndjson``, each
    optionally ``.gz``; hidden and temporary files skipped), or the single file given.

    Raises:
        FileNotFoundError: nothing there.
    """
    p = Path(input_path)
    if p.is_file():
        return [str(p)]
    if not p.is_dir():
        raise FileNotFoundError(f"no change files at {input_path}")
    exts = (".json", ".jsonl", ".ndjson")
    return sorted(
        str(f)
        for f in p.iterdir()
        if f.is_file()
        and not f.name.startswith((".", "_"))
        and f.name.removesuffix(".gz").endswith(exts)
    )
