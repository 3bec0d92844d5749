"""Poison landing files: which files of an ingest batch cannot be read at all, and why.

Before Spark reads a landing directory, every file is checked in this process, in one
streaming pass (memory bounded by :data:`CHUNK`):

* ``.gz`` files are decompressed to their end: a truncated stream (a copy in progress, a pull
  cut short) or a corrupt one is unreadable;
* CSV and JSON lines must be UTF-8 text (the encoding Spark's readers assume) without NUL
  bytes: a binary file, or text in another encoding, is unreadable -- Spark would otherwise
  turn it into garbage rows, or fail, without naming the file;
* Parquet files must carry the ``PAR1`` magic at both ends, a readable footer, and row groups
  that decode (read batch by batch with pyarrow).

An unreadable file is not an error of the batch: the ingest job quarantines it as a whole
(``acidflow.quarantine``, one record with the file, the line / byte offset and the reason) and
loads the other files. Rows that do not parse inside a readable file stay the row-level
quarantine of Spark's PERMISSIVE mode.
"""

from __future__ import annotations

import codecs
import gzip
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import pyarrow.parquet as pq

#: bytes read per step
CHUNK = 1 << 20
#: bytes of the offending spot shown in the quarantine record
EXCERPT = 64
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class UnreadableFile:
    """A landing file that cannot be read.

    Attributes:
        path: the file.
        reason: what is wrong, in words (names the byte offset / line where known).
        line: 1-based line of the problem in the (decompressed) text, when known.
        offset: byte offset of the problem in the (decompressed) content, when known.
        excerpt: up to :data:`EXCERPT` bytes at the offset, escaped (``repr`` of the bytes).
    """

    path: str
    reason: str
    line: int | None = None
    offset: int | None = None
    excerpt: str = ""

    @property
    def source(self) -> str:
        """``<file>:<line>`` (or ``<file>`` when no line is known), as bad records name
        their source."""
        return f"{self.path}:{self.line}" if self.line is not None else self.path


def _chunks(fh: BinaryIO | gzip.GzipFile) -> Iterator[bytes]:
    while True:
        chunk = fh.read(CHUNK)
        if not chunk:
            return
        yield chunk


def _check_text(path: str, chunks: Iterator[bytes], compressed: bool) -> UnreadableFile | None:
    """UTF-8 without NUL bytes, streamed; errors of the gzip layer are reported too."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line = 0, 1
    where = "decompressed " if compressed else ""
    try:
        for chunk in chunks:
            nul = chunk.find(b"\x00")
            upto = chunk if nul < 0 else chunk[:nul]
            try:
                decoder.decode(upto)
            except UnicodeDecodeError as exc:
                # exc.object = bytes buffered from the previous chunk + this chunk
                carried = len(exc.object) - len(upto)
                pos = offset + exc.start - carried
                ln = line + exc.object[: exc.start].count(b"\n")
                bad = exc.object[exc.start : exc.start + EXCERPT]
                return UnreadableFile(
                    path,
                    f"not UTF-8 text: byte 0x{bad[0]:02x} at "
                    f"{where}byte offset {pos} (line {ln}) does not "
                    "decode",
                    ln,
                    pos,
                    repr(bad),
                )
            if nul >= 0:
                pos = offset + nul
                ln = line + chunk[:nul].count(b"\n")
                return UnreadableFile(
                    path,
                    f"binary content: NUL byte at {where}byte offset {pos} (line {ln})",
                    ln,
                    pos,
                    repr(chunk[nul : nul + EXCERPT]),
                )
            offset += len(chunk)
            line += chunk.count(b"\n")
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return UnreadableFile(
            path,
            f"not UTF-8 text: the file ends inside a multi-byte "
            f"character ({where}byte offset {offset})",
            line,
            offset,
        )
    except EOFError:
        return UnreadableFile(
            path,
            "truncated gzip stream: the compressed data ends before "
            f"the end-of-stream marker, after {offset} decompressed "
            f"bytes (line {line}); a copy in progress or a cut-short "
            "transfer?",
            line,
            offset,
        )
    except (OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        return UnreadableFile(
            path,
            f"corrupt gzip stream after {offset} decompressed bytes (line {line}): {exc}",
            line,
            offset,
        )
    return None


def _check_parquet(path: str) -> UnreadableFile | None:
    with open(path, "rb") as fh:
        head = fh.read(len(PARQUET_MAGIC))
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - len(PARQUET_MAGIC)))
        tail = fh.read(len(PARQUET_MAGIC))
    if head != PARQUET_MAGIC:
        return UnreadableFile(
            path,
            f"not a Parquet file: it starts with {head!r}, not {PARQUET_MAGIC!r}",
            None,
            0,
            repr(head),
        )
    if size < 2 * len(PARQUET_MAGIC) + 4 or tail != PARQUET_MAGIC:
        return UnreadableFile(
            path,
            f"truncated Parquet file: {size} bytes and no footer "
            f"(the last bytes are {tail!r}, not {PARQUET_MAGIC!r})",
            None,
            max(0, size - len(PARQUET_MAGIC)),
            repr(tail),
        )
    rows = 0
    try:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=65536):
            rows += batch.num_rows
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types; all mean unreadable
        return UnreadableFile(
            path, f"unreadable Parquet (after {rows} rows): {type(exc).__name__}: {exc}"
        )
    return None


def check_landing_file(path: str, fmt: str) -> UnreadableFile | None:
    """Can ``path`` be read as a landing file of format ``fmt``? (one streaming pass)

    Args:
        path: a local file; ``.gz`` names are decompressed (CSV and JSON lines).
        fmt: ``csv``, ``jsonl`` or ``parquet``.
    Returns:
        None when readable, else :class:`UnreadableFile` (see the module docstring).
    Raises:
        ValueError: unknown ``fmt``; OSError: the file cannot be opened at all.
    """
    if fmt == "parquet":
        return _check_parquet(path)
    if fmt not in ("csv", "jsonl"):
        raise ValueError(f"format must be csv, jsonl or parquet, got {fmt!r}")
    if path.endswith(".gz"):
        try:
            with gzip.open(path, "rb") as gz:
                return _check_text(path, _chunks(gz), compressed=True)
        except (OSError, EOFError, zlib.error) as exc:  # pragma: no cover - caught inside
            return UnreadableFile(path, f"corrupt gzip stream: {exc}")
    with open(path, "rb") as fh:
        return _check_text(path, _chunks(fh), compressed=False)
