"""Add user metadata to the footer of a finished ORC file (pure bytes in, bytes out).

Why: pyarrow's ORC writer (the ORC C++ library) writes Arrow tables column by column, several
times faster than feeding Python tuples to pyorc, but it cannot set the footer's user metadata,
and Hive's ACID readers need three keys there (``hive.acid.key.index``, ``hive.acid.stats``,
``hive.acid.version``; Hive ``OrcRecordUpdater``). This module appends them to the footer of the
file pyarrow wrote, leaving every stripe and the stripe statistics byte for byte as they were.

The ORC tail (ORC specification, "File Tail"): ``... stripes | metadata | footer | postscript |
1 byte postscript length``. Footer and metadata are compressed with the file's codec in chunks
of at most ``compressionBlockSize`` bytes, each with a 3-byte little-endian header
``length * 2 + isOriginal``; the postscript is never compressed. Footer and postscript are
protocol buffers (``orc_proto.proto``): ``Footer.stripes`` is field 3 (``StripeInformation``,
``numberOfRows`` field 5), ``Footer.metadata`` field 5 (``UserMetadataItem{name = 1,
value = 2}``), ``PostScript.footerLength`` field 1, ``compression`` field 2,
``compressionBlockSize`` field 3.

How: the footer is decompressed (NONE and ZLIB only, the codecs acidflow writes; ZLIB chunks
are raw deflate), the new ``UserMetadataItem`` fields are appended to its bytes (a protocol
buffer parser merges repeated fields in any order, so appending is a valid encoding), the result
is stored as *original* (uncompressed) chunks, which every ORC reader accepts in a compressed
file, and the postscript is re-encoded with the new ``footerLength``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa

from acidflow.errors import AcidflowError

#: ``CompressionKind`` values of ``orc_proto.proto`` this module can rewrite
COMPRESSION_NONE = 0
COMPRESSION_ZLIB = 1
#: readable by :func:`decompress` (the key index reads snappy files too), not rewritable
COMPRESSION_SNAPPY = 2
_DEFAULT_BLOCK = 256 * 1024


class OrcFooterError(AcidflowError, ValueError):
    """The bytes are not an ORC file this module can rewrite (message says why)."""


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise OrcFooterError("truncated varint in an ORC protocol buffer")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise OrcFooterError("varint longer than 64 bits in an ORC protocol buffer")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(buf: bytes) -> Iterator[tuple[int, Any, bytes]]:
    """Yield ``(field number, value, raw bytes of the whole field)`` of a protobuf message;
    value is an int for varints and bytes otherwise."""
    i, n = 0, len(buf)
    while i < n:
        start = i
        key, i = _read_varint(buf, i)
        number, wire = key >> 3, key & 7
        value: Any  # int (varint) or bytes
        if wire == 0:
            value, i = _read_varint(buf, i)
        elif wire == 2:
            length, i = _read_varint(buf, i)
            value = bytes(buf[i : i + length])
            i += length
        elif wire == 1:
            value, i = bytes(buf[i : i + 8]), i + 8
        elif wire == 5:
            value, i = bytes(buf[i : i + 4]), i + 4
        else:
            raise OrcFooterError(f"unsupported protobuf wire type {wire}")
        if i > n:
            raise OrcFooterError("truncated ORC protocol buffer")
        yield number, value, bytes(buf[start:i])


def decompress(data: bytes, kind: int) -> bytes:
    """Decompress an ORC compressed stream: chunks with 3-byte headers (``length * 2 +
    isOriginal``, little-endian), each raw deflate (ZLIB), a raw snappy block (SNAPPY) or
    stored as is (ORC ``OutStream``).

    Args:
        data: the stream's bytes; kind: ``CompressionKind`` (0 NONE, 1 ZLIB, 2 SNAPPY).
    Returns:
        The uncompressed bytes.
    Raises:
        OrcFooterError: a truncated chunk header, or another codec.
    """
    if kind == COMPRESSION_NONE:
        return data
    if kind not in (COMPRESSION_ZLIB, COMPRESSION_SNAPPY):
        raise OrcFooterError(f"ORC compression kind {kind} is not supported here")
    out = bytearray()
    i = 0
    while i < len(data):
        if i + 3 > len(data):
            raise OrcFooterError("truncated compression chunk header in an ORC stream")
        header = data[i] | data[i + 1] << 8 | data[i + 2] << 16
        i += 3
        length, original = header >> 1, header & 1
        chunk = data[i : i + length]
        i += length
        if original:
            out += chunk
        elif kind == COMPRESSION_ZLIB:
            out += zlib.decompress(chunk, -15)
        else:  # snappy: the raw block starts with its uncompressed length (varint)
            size, _ = _read_varint(chunk, 0)
            out += pa.decompress(chunk, decompressed_size=size, codec="snappy").to_pybytes()
    return bytes(out)


def _as_original_chunks(data: bytes, kind: int, block: int) -> bytes:
    if kind == COMPRESSION_NONE:
        return data
    out = bytearray()
    for start in range(0, len(data), block):
        chunk = data[start : start + block]
        header = (len(chunk) << 1) | 1
        out += bytes((header & 0xFF, (header >> 8) & 0xFF, (header >> 16) & 0xFF)) + chunk
    return bytes(out)


@dataclass
class PatchedTail:
    """Result of :func:`add_user_metadata`.

    Attributes:
        keep: bytes of the original file to keep (everything before the footer).
        tail: the new footer + postscript + postscript-length byte, to write after them.
    """

    keep: int
    tail: bytes


@dataclass
class OrcTail:
    """The parsed tail of an ORC file (:func:`read_tail`).

    Attributes:
        ps_fields: the postscript's protobuf fields ``(number, value, raw bytes)``.
        kind, block: the compression kind (0 NONE, 1 ZLIB) and block size (bytes).
        start: offset of the footer in the file.
        footer: the decompressed footer (protobuf bytes).
        stripe_rows: rows of each stripe, in file order (``Footer.stripes[i].numberOfRows``).
        metadata_names: names of the footer's user metadata items.
    """

    ps_fields: list
    kind: int
    block: int
    start: int
    footer: bytes
    stripe_rows: list[int]
    metadata_names: set[str]


def read_tail(data: Any, file_offset: int = 0) -> OrcTail:
    """Parse the postscript and footer of an ORC file.

    Args:
        data: the file's bytes from ``file_offset`` to its end (``bytes``, ``memoryview`` or a
            pyarrow ``Buffer``): the whole file when ``file_offset`` is 0, else a suffix that
            holds at least the footer and postscript (a streaming writer's last bytes).
        file_offset: where ``data`` starts in the file; offsets in the result are file
            offsets.
    Raises:
        OrcFooterError: not an ORC file, a codec other than NONE/ZLIB, a malformed tail, or a
            footer that starts before ``data``.
    """
    view = memoryview(data)
    if file_offset == 0 and (len(view) < 4 or bytes(view[:3]) != b"ORC"):
        raise OrcFooterError("not an ORC file (no 'ORC' magic at the start)")
    if len(view) < 2:
        raise OrcFooterError("no ORC postscript in the bytes given")
    ps_len = view[-1]
    if ps_len == 0 or ps_len + 1 > len(view):
        raise OrcFooterError("bad postscript length byte")
    ps_fields = list(_fields(bytes(view[-1 - ps_len : -1])))
    values = {number: value for number, value, _ in ps_fields}
    if values.get(8000) != b"ORC":
        raise OrcFooterError("postscript has no 'ORC' magic")
    footer_len = values.get(1)
    kind = values.get(2, COMPRESSION_NONE)
    block = values.get(3, _DEFAULT_BLOCK)
    if not isinstance(footer_len, int) or kind not in (COMPRESSION_NONE, COMPRESSION_ZLIB):
        raise OrcFooterError(
            f"cannot rewrite an ORC footer with compression kind {kind} (only NONE=0 and ZLIB=1)"
        )
    rel = len(view) - 1 - ps_len - footer_len
    start = file_offset + rel
    if start < 3:
        raise OrcFooterError("footer length points before the start of the file")
    if rel < 0:
        raise OrcFooterError(
            f"the footer ({footer_len} bytes) starts before the {len(view)} bytes given"
        )
    footer = decompress(bytes(view[rel : rel + footer_len]), kind)
    rows: list[int] = []
    names: set[str] = set()
    for number, value, _ in _fields(footer):
        if number == 3:
            rows.append(int({n: v for n, v, _ in _fields(value)}.get(5, 0)))
        elif number == 5:
            names.add({n: v for n, v, _ in _fields(value)}.get(1, b"").decode())
    return OrcTail(ps_fields, kind, block, start, footer, rows, names)


def add_user_metadata(tail: OrcTail, items: dict[str, bytes]) -> PatchedTail:
    """Append user metadata items to the footer read by :func:`read_tail`.

    Args:
        tail: the file's parsed tail.
        items: ``{name: value}``; names must not already be in the footer.
    Returns:
        :class:`PatchedTail`: write ``data[:keep] + tail`` to get the new file.
    Raises:
        OrcFooterError: a name already present, or a postscript that would exceed 255 bytes.
    """
    clash = tail.metadata_names & set(items)
    if clash:
        raise OrcFooterError(f"user metadata already present: {sorted(clash)}")
    extra = bytearray()
    for name, value in items.items():
        raw_name = name.encode()
        item = b"\x0a" + _varint(len(raw_name)) + raw_name + b"\x12" + _varint(len(value)) + value
        extra += b"\x2a" + _varint(len(item)) + item
    new_footer = _as_original_chunks(tail.footer + bytes(extra), tail.kind, tail.block)
    new_ps = bytearray()
    for number, _, raw in tail.ps_fields:
        new_ps += (b"\x08" + _varint(len(new_footer))) if number == 1 else raw
    if len(new_ps) > 255:
        raise OrcFooterError("postscript would exceed 255 bytes")
    return PatchedTail(tail.start, new_footer + bytes(new_ps) + bytes([len(new_ps)]))
