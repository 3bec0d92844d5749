"""What an ORC file already says about its key columns, per stripe: column statistics (min/max)
and bloom filters -- enough to prove that a stripe holds none of a batch of keys, so a key
lookup skips it (Hudi's range and bloom indexes, built from what Hive writes anyway).

Pure file-format code (bytes in, answers out; no catalog, no table layout). The ORC tail
(ORC specification v1, "File Tail") is ``stripes | metadata | footer | postscript | 1 byte``;
``Metadata.stripeStats[i].colStats[c]`` is the ``ColumnStatistics`` of column ``c`` (preorder
type id: 0 the root struct; in an ACID event file 1..5 the event fields, 6 ``row``, 7.. its
fields) in stripe ``i``. A stripe starts with its index streams (``indexLength`` bytes:
``ROW_INDEX``, ``BLOOM_FILTER`` (kind 7), ``BLOOM_FILTER_UTF8`` (kind 8) in the order its
``StripeFooter.streams`` lists them), then its data streams, then its footer. A bloom filter
stream is a ``BloomFilterIndex`` protobuf: one ``BloomFilter{numHashFunctions = 1, bitset = 2
(repeated fixed64), utf8bitset = 3 (bytes, little-endian longs)}`` per row group
(``rowIndexStride`` rows, 10,000 by default). Protobufs and compressed chunks are parsed with
the helpers of :mod:`acidflow.format.orc.orcfooter`; codecs NONE, ZLIB and SNAPPY are read (any other
codec: the file has no usable index, and is read whole).

Hashing (ORC Java ``org.apache.orc.util.BloomFilter``/``BloomFilterUtf8``/``Murmur3``, ORC C++
``BloomFilterImpl``, Hive's ``orc.bloom.filter.columns``): a 64-bit hash of the value -- Murmur3
64-bit (seed 104729) of the UTF-8 bytes for strings, Thomas Wang's 64-bit integer hash
(``getLongHash``, arithmetic shifts) for integers of every width and dates (days since
1970-01-01) -- is split into ``h1`` (low 32 bits) and ``h2`` (high 32 bits) and bit
``(h1 + i*h2)`` (32-bit wrap, bits flipped when negative, modulo the bitset size) is set for
``i = 1..numHashFunctions``. The legacy ``BLOOM_FILTER`` stream (kind 7) hashed strings in the
JVM's default charset before ORC-101, so it is used for integers and dates only; strings use
``BLOOM_FILTER_UTF8`` only. Decimals and timestamps (hashed from a string form or in a unit
that this module does not reproduce for every writer version), floating point, char and binary
keys are never tested against a bloom filter. Bloom filters are read for a stripe only while
at most :data:`BLOOM_MAX_KEYS` batch keys remain in doubt after its statistics.

Statistics: integer (``IntegerStatistics``), date (``DateStatistics``), string/varchar
(``StringStatistics``: ``minimum``/``maximum``, or ORC-203's ``lowerBound``/``upperBound`` when
the writer truncated long values -- both are valid bounds) and decimal (``DecimalStatistics``,
compared by value) columns. String statistics of writers before HIVE-8732 (writer version 0,
which compared UTF-16 code units) are not used.

Soundness: a stripe is skipped only when it is *proven* free of every batch key; everything
unknown (no metadata section, no statistics for the column, a type this module does not know,
a key column whose file type differs from the key's type family, a NULL key unless the
stripe's ``hasNull`` is false, a codec it cannot decompress) keeps the stripe.
"""

from __future__ import annotations

import bisect
import zlib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, BinaryIO, Sequence

import numpy as np
import pyarrow as pa

from acidflow.format.orc.orcfooter import (
    OrcFooterError,
    _fields,
    _read_varint,
    decompress,
)

# CompressionKind (orc_proto.proto)
_NONE, _ZLIB, _SNAPPY = 0, 1, 2
# Type.Kind
BYTE, SHORT, INT, LONG, STRING, DECIMAL, DATE, VARCHAR, CHAR = 1, 2, 3, 4, 7, 14, 15, 16, 17
_INTEGER_KINDS = (BYTE, SHORT, INT, LONG)
# Stream.Kind
BLOOM_FILTER, BLOOM_FILTER_UTF8 = 7, 8
#: ``OrcFile.WriterVersion.HIVE_8732``: string statistics compare UTF-8 bytes from here on
HIVE_8732 = 1
#: bytes read from the end of a file first (ORC's own readers guess 16 KiB too); a larger
#: footer + metadata costs a second read
_TAIL_GUESS = 16 * 1024
_MASK64 = (1 << 64) - 1

#: bloom filters are read for a stripe only while at most this many batch keys are still in
#: doubt after its statistics: with fpp 0.05 per row group, 16 absent keys all fail a stripe
#: of one row group with probability 0.95**16 = 44%, of two 0.90**16 = 19%, and keys that are
#: present never do -- beyond that two more reads per stripe (its footer and the bloom
#: stream; round trips on object storage) rarely pay (``bench/key_index.py`` counts them)
BLOOM_MAX_KEYS = 16

#: key domains: how a key column's values are compared with a file column's index
INTEGER, TEXT, DEC, DAYS = "integer", "string", "decimal", "date"


class OrcIndexError(OrcFooterError):
    """The index bytes of an ORC file are malformed (message says where)."""


# ---------------------------------------------------------------------------------------- tail


@dataclass
class OrcType:
    """One ``Footer.types`` entry: ``kind`` (``Type.Kind``), ``subtypes`` (type ids),
    ``field_names`` (for structs), ``precision``/``scale`` (decimals)."""

    kind: int
    subtypes: list[int] = field(default_factory=list)
    field_names: list[str] = field(default_factory=list)
    precision: int = 0
    scale: int = 0


@dataclass
class StripeInfo:
    """``Footer.stripes[i]``: byte ``offset`` in the file, ``index_length``, ``data_length``,
    ``footer_length`` (bytes) and ``rows``."""

    offset: int
    index_length: int
    data_length: int
    footer_length: int
    rows: int


@dataclass
class ColumnStats:
    """Statistics of one column in one stripe (``ColumnStatistics``).

    Attributes:
        values: ``numberOfValues`` (non-null values), None when absent.
        has_null: ``hasNull``, None when absent (old writers).
        minimum, maximum: inclusive bounds of the non-null values -- ``int`` (integers, dates in
            days), ``bytes`` (strings, UTF-8; ORC-203 truncated bounds included) or ``Decimal``;
            None when the statistics carry none.
        truncated: the string bounds are ORC-203's ``lowerBound``/``upperBound`` (values
            longer than the writer records, 1024 bytes in ORC Java), not exact min/max.
    """

    values: int | None
    has_null: bool | None
    minimum: Any = None
    maximum: Any = None
    truncated: bool = False


@dataclass
class OrcTailIndex:
    """The parts of an ORC tail the key index needs (:func:`read_tail_index`).

    Attributes:
        codec, block: compression kind and block size; writer_version: ``PostScript``'s.
        stripes: :class:`StripeInfo` per stripe; types: :class:`OrcType` by type id.
        row_index_stride: rows per row group (0 = no row index).
        stripe_stats: per stripe, the raw ``ColumnStatistics`` bytes by column id (empty when
            the file has no metadata section).
        file_size: bytes.
    """

    codec: int
    block: int
    writer_version: int
    stripes: list[StripeInfo]
    types: list[OrcType]
    row_index_stride: int
    stripe_stats: list[list[bytes]]
    file_size: int

    @property
    def readable(self) -> bool:
        """The codec is one this module decompresses."""
        return self.codec in (_NONE, _ZLIB, _SNAPPY)

    def data_column_ids(self, acid: bool) -> list[int]:
        """Type ids of the data columns: the ``row`` struct's fields (ACID event file) or the
        root struct's fields (original file)."""
        root = self.types[0]
        if acid:
            return list(self.types[root.subtypes[5]].subtypes)
        return list(root.subtypes)

    def column_stats(self, stripe: int, column: int) -> ColumnStats | None:
        """Statistics of ``column`` (type id) in ``stripe``; None when the file has none."""
        if stripe >= len(self.stripe_stats) or column >= len(self.stripe_stats[stripe]):
            return None
        return _parse_stats(
            self.stripe_stats[stripe][column], self.types[column], self.writer_version
        )


def _sint(v: int) -> int:
    """Zigzag-decoded ``sint32``/``sint64``."""
    return (v >> 1) ^ -(v & 1)


def _packed(value: Any) -> list[int]:
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _read_varint(value, i)
        out.append(v)
    return out


def _parse_type(buf: bytes) -> OrcType:
    t = OrcType(kind=0)
    for number, value, _ in _fields(buf):
        if number == 1:
            t.kind = value
        elif number == 2:
            t.subtypes += _packed(value)
        elif number == 3:
            t.field_names.append(value.decode("utf-8"))
        elif number == 5:
            t.precision = value
        elif number == 6:
            t.scale = value
    return t


def read_tail_index(fh: BinaryIO, file_size: int, *, path: str = "") -> OrcTailIndex:
    """Read and parse the postscript, footer and metadata section of an ORC file.

    Args:
        fh: the open file (seekable, binary); file_size: its size in bytes; path: for errors.
    Raises:
        OrcIndexError: not an ORC file or a malformed tail (names ``path``).
    """
    try:
        return _read_tail_index(fh, file_size)
    except OrcFooterError as exc:
        raise OrcIndexError(f"{path}: {exc}") from exc


def _read_tail_index(fh: BinaryIO, file_size: int) -> OrcTailIndex:
    take = min(file_size, _TAIL_GUESS)
    fh.seek(file_size - take)
    buf = fh.read(take)
    if len(buf) < 4:
        raise OrcIndexError("file too short for ORC")
    ps_len = buf[-1]
    ps = {n: v for n, v, _ in _fields(buf[-1 - ps_len : -1])}
    if ps.get(8000) != b"ORC":
        raise OrcIndexError("postscript has no 'ORC' magic")
    footer_len, meta_len = int(ps.get(1, 0)), int(ps.get(5, 0))
    codec, block, writer_version = int(ps.get(2, _NONE)), int(ps.get(3, 0)), int(ps.get(6, 0))
    need = footer_len + meta_len + ps_len + 1
    if need > len(buf):
        if need > file_size:
            raise OrcIndexError("footer and metadata lengths exceed the file size")
        fh.seek(file_size - need)
        buf = fh.read(need)
    end = len(buf) - 1 - ps_len
    stripes: list[StripeInfo] = []
    types: list[OrcType] = []
    stats: list[list[bytes]] = []
    if codec not in (_NONE, _ZLIB, _SNAPPY):
        return OrcTailIndex(codec, block, writer_version, stripes, types, 0, stats, file_size)
    footer = decompress(buf[end - footer_len : end], codec)
    stride = 0
    for number, value, _ in _fields(footer):
        if number == 3:
            s = {n: v for n, v, _ in _fields(value)}
            stripes.append(
                StripeInfo(s.get(1, 0), s.get(2, 0), s.get(3, 0), s.get(4, 0), s.get(5, 0))
            )
        elif number == 4:
            types.append(_parse_type(value))
        elif number == 8:
            stride = value
    if meta_len:
        meta = decompress(buf[end - footer_len - meta_len : end - footer_len], codec)
        for number, value, _ in _fields(meta):
            if number == 1:
                stats.append([v for n, v, _ in _fields(value) if n == 1])
    return OrcTailIndex(codec, block, writer_version, stripes, types, stride, stats, file_size)


def _parse_stats(buf: bytes, otype: OrcType, writer_version: int) -> ColumnStats:
    top = list(_fields(buf))
    values = next((v for n, v, _ in top if n == 1), None)
    has_null = next((bool(v) for n, v, _ in top if n == 10), None)
    out = ColumnStats(values, has_null)
    sub = {n: v for n, v, _ in top}
    lo: Any = None
    hi: Any = None
    if otype.kind in _INTEGER_KINDS and 2 in sub:
        s = {n: v for n, v, _ in _fields(sub[2])}
        lo, hi = (_sint(s[1]) if 1 in s else None), (_sint(s[2]) if 2 in s else None)
    elif otype.kind == DATE and 7 in sub:
        s = {n: v for n, v, _ in _fields(sub[7])}
        lo, hi = (_sint(s[1]) if 1 in s else None), (_sint(s[2]) if 2 in s else None)
    elif otype.kind in (STRING, VARCHAR) and 4 in sub and writer_version >= HIVE_8732:
        s = {n: v for n, v, _ in _fields(sub[4])}
        lo, hi = s.get(1, s.get(4)), s.get(2, s.get(5))  # minimum, else ORC-203's lowerBound
        out.truncated = 1 not in s or 2 not in s
    elif otype.kind == DECIMAL and 6 in sub:
        s = {n: v for n, v, _ in _fields(sub[6])}
        try:
            lo = Decimal(s[1].decode()) if 1 in s else None
            hi = Decimal(s[2].decode()) if 2 in s else None
        except (InvalidOperation, UnicodeDecodeError):
            lo = hi = None
    if lo is not None and hi is not None:
        out.minimum, out.maximum = lo, hi
    return out


# ------------------------------------------------------------------------------- bloom filters


@dataclass
class BloomFilter:
    """One row group's ORC bloom filter: ``num_hashes`` functions over ``bits`` (uint64 words;
    bit ``p`` is bit ``p % 64`` of word ``p // 64``, as Java's ``BloomFilter.BitSet``)."""

    num_hashes: int
    bits: np.ndarray

    def test_hashes(self, h64: np.ndarray) -> np.ndarray:
        """Which of the 64-bit value hashes (uint64 array) may be in the filter (bool array)."""
        num_bits = len(self.bits) * 64
        if num_bits == 0 or self.num_hashes <= 0:
            return np.ones(len(h64), dtype=bool)
        h1 = (h64 & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
        h2 = (h64 >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
        hit = np.ones(len(h64), dtype=bool)
        for i in range(1, self.num_hashes + 1):
            combined = (h1 + i * h2).astype(np.int32).astype(np.int64)  # Java int wrap
            combined = np.where(combined < 0, ~combined, combined)
            pos = (combined % num_bits).astype(np.uint64)
            word = self.bits[(pos >> np.uint64(6)).astype(np.int64)]
            hit &= ((word >> (pos & np.uint64(63))) & np.uint64(1)).astype(bool)
        return hit


def _parse_bloom_index(buf: bytes) -> list[BloomFilter]:
    out = []
    for number, value, _ in _fields(buf):
        if number != 1:
            continue
        k = 0
        words: list[int] = []
        utf8 = None
        for n, v, _raw in _fields(value):
            if n == 1:
                k = v
            elif n == 2 and isinstance(v, bytes) and len(v) == 8 and _raw[0] & 7 == 1:
                words.append(int.from_bytes(v, "little"))
            elif n == 2 and isinstance(v, bytes):  # packed repeated fixed64
                words += [int.from_bytes(v[j : j + 8], "little") for j in range(0, len(v), 8)]
            elif n == 3:
                utf8 = v
        bits = (
            np.frombuffer(utf8, dtype="<u8").astype(np.uint64)
            if utf8 is not None
            else np.array(words, dtype=np.uint64)
        )
        out.append(BloomFilter(k, bits))
    return out


def stripe_streams(
    fh: BinaryIO, tail: OrcTailIndex, stripe: int
) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(stream kind, column id): (file offset, length)}`` of a stripe's streams, from its
    footer (streams lie back to back from the stripe's offset, in the footer's order).

    Raises:
        OrcIndexError: malformed stripe footer.
    """
    info = tail.stripes[stripe]
    fh.seek(info.offset + info.index_length + info.data_length)
    footer = decompress(fh.read(info.footer_length), tail.codec)
    at = info.offset
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for number, value, _ in _fields(footer):
        if number != 1:
            continue
        s = {n: v for n, v, _ in _fields(value)}
        length = s.get(3, 0)
        out[(s.get(1, 0), s.get(2, 0))] = (at, length)
        at += length
    return out


def read_bloom_filters(
    fh: BinaryIO,
    tail: OrcTailIndex,
    stripe: int,
    column: int,
    *,
    kinds: Sequence[int] = (BLOOM_FILTER_UTF8, BLOOM_FILTER),
    streams: dict[tuple[int, int], tuple[int, int]] | None = None,
) -> list[BloomFilter] | None:
    """The bloom filters (one per row group) of ``column`` (type id) in ``stripe``, read from
    the stripe's index streams; None when the stripe has none usable.

    Args:
        kinds: the stream kinds to use, in order of preference (strings: only
            ``BLOOM_FILTER_UTF8``: the legacy kind hashed the JVM's default charset before
            ORC-101).
        streams: the stripe's :func:`stripe_streams` when already read.
    Raises:
        OrcIndexError: malformed stripe footer or bloom filter stream.
    """
    info = tail.stripes[stripe]
    found = streams if streams is not None else stripe_streams(fh, tail, stripe)
    where = next((found[(k, column)] for k in kinds if (k, column) in found), None)
    if where is None:
        return None
    if where[0] + where[1] > info.offset + info.index_length:
        raise OrcIndexError(
            f"bloom filter stream of column {column} in stripe {stripe} lies "
            "outside the stripe's index area"
        )
    fh.seek(where[0])
    filters = _parse_bloom_index(decompress(fh.read(where[1]), tail.codec))
    return filters or None


def murmur3_64(data: bytes, seed: int = 104729) -> int:
    """ORC's Murmur3 64-bit hash (``org.apache.orc.util.Murmur3.hash64``) as an unsigned int."""
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h = seed
    n = len(data)
    nblocks = n >> 3
    for i in range(nblocks):
        k = int.from_bytes(data[i * 8 : i * 8 + 8], "little")
        k = (k * c1) & _MASK64
        k = ((k << 31) | (k >> 33)) & _MASK64
        k = (k * c2) & _MASK64
        h ^= k
        h = ((h << 27) | (h >> 37)) & _MASK64
        h = (h * 5 + 0x52DCE729) & _MASK64
    tail = data[nblocks * 8 :]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & _MASK64
        k = ((k << 31) | (k >> 33)) & _MASK64
        k = (k * c2) & _MASK64
        h ^= k
    h ^= n
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK64
    h ^= h >> 33
    return h


def long_hash(values: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash as ORC's ``BloomFilter.getLongHash`` (Java ``long``
    arithmetic: wrapping, arithmetic right shifts), of an int64 array; returns uint64."""
    with np.errstate(over="ignore"):
        k = values.astype(np.int64)
        k = (~k) + (k << 21)
        k = k ^ (k >> 24)
        k = (k + (k << 3)) + (k << 8)
        k = k ^ (k >> 14)
        k = (k + (k << 2)) + (k << 4)
        k = k ^ (k >> 28)
        k = k + (k << 31)
    return k.view(np.uint64)


# ------------------------------------------------------------------------------ key matching


def key_domain(otype: OrcType, key_type: pa.DataType) -> str | None:
    """How keys of Arrow type ``key_type`` compare with a file column of ORC type ``otype``
    (one of :data:`INTEGER`, :data:`TEXT`, :data:`DEC`, :data:`DAYS`), or None: not the same
    family (schema evolution changed the type, or a type this module does not index), so the
    column cannot prune."""
    if otype.kind in _INTEGER_KINDS and pa.types.is_integer(key_type):
        return INTEGER
    if otype.kind in (STRING, VARCHAR) and (
        pa.types.is_string(key_type) or pa.types.is_large_string(key_type)
    ):
        return TEXT
    if otype.kind == DECIMAL and pa.types.is_decimal(key_type):
        return DEC
    if otype.kind == DATE and pa.types.is_date32(key_type):
        return DAYS
    return None


@dataclass
class KeyValues:
    """One key column of a batch, prepared for :func:`stats_mask` and :func:`bloom_mask`.

    Attributes:
        domain: :func:`key_domain`'s answer.
        values: per key: ``int`` (integers, dates in days), ``bytes`` (UTF-8) or ``Decimal``;
            None for a NULL key value.
        hashes: ORC bloom filter hashes (uint64 per key; 0 for NULL keys), None when the domain
            is never tested against bloom filters (decimals). String hashes are computed on
            first use (:meth:`hashes_at`): a large batch often never reaches a bloom filter.
        nulls: bool per key, True for a NULL key.
        order: positions of the non-NULL keys sorted by value; sorted_values: their values in
            that order (a stripe's ``[min, max]`` is one slice of them, found by bisection).
    """

    domain: str
    values: list[Any]
    hashes: np.ndarray | None
    nulls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sorted_values: list[Any] = field(default_factory=list)
    pending: np.ndarray | None = None

    def hashes_at(self, idx: np.ndarray) -> np.ndarray:
        """The bloom filter hashes of the keys at positions ``idx`` (uint64 array).

        Raises:
            ValueError: the domain has no bloom filter hash (decimals).
        """
        if self.hashes is None:
            raise ValueError(f"{self.domain} keys are not tested against bloom filters")
        if self.pending is not None:
            todo = idx[self.pending[idx]]
            for i in todo:
                v = self.values[i]
                self.hashes[i] = 0 if v is None else murmur3_64(v)
            self.pending[todo] = False
        return self.hashes[idx]

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray, domain: str) -> "KeyValues":
        """Prepare an Arrow key column (integer, string, decimal or date32) for ``domain``."""
        if domain == DAYS:
            column = column.cast(pa.int32())
        values = column.to_pylist()
        if domain == TEXT:
            values = [None if v is None else v.encode("utf-8") for v in values]
        nulls = np.array([v is None for v in values], dtype=bool)
        hashes = pending = None
        if domain in (INTEGER, DAYS):
            hashes = long_hash(np.array([0 if v is None else v for v in values], dtype=np.int64))
        elif domain == TEXT:
            hashes = np.zeros(len(values), dtype=np.uint64)
            pending = np.ones(len(values), dtype=bool)
        present = [i for i, v in enumerate(values) if v is not None]
        present.sort(key=values.__getitem__)
        return cls(
            domain,
            values,
            hashes,
            nulls,
            np.array(present, dtype=np.int64),
            [values[i] for i in present],
            pending,
        )


def stats_mask(stats: ColumnStats | None, keys: KeyValues) -> np.ndarray:
    """Which keys may be in a stripe by its column statistics (bool per key): a non-NULL key
    when it lies within the bounds (or the stripe has no usable bounds), a NULL key when the
    stripe may hold NULLs (``hasNull`` not False)."""
    n = len(keys.values)
    if stats is None:
        return np.ones(n, dtype=bool)
    null_may = stats.has_null is not False
    if stats.values == 0 and stats.has_null is not None:
        # no non-null value in the stripe: only a NULL key could match
        return keys.nulls & null_may
    if stats.minimum is None or stats.maximum is None:
        return ~keys.nulls | null_may
    mask = keys.nulls & null_may
    lo = bisect.bisect_left(keys.sorted_values, stats.minimum)
    hi = bisect.bisect_right(keys.sorted_values, stats.maximum)
    mask[keys.order[lo:hi]] = True
    return mask


def consistent_stats(stats: ColumnStats | None, rows: int) -> ColumnStats | None:
    """``stats`` of a key column in a stripe of ``rows`` insert events, or None when they
    cannot be trusted: every insert event carries a row, so a key column's non-NULL values
    must number ``rows`` exactly, or at most ``rows`` when the stripe says it has NULLs.
    Statistics that count fewer values with no NULLs are not a description of the stripe --
    Hive 3.1's streaming ingest (``OrcRecordUpdater`` flushing intermediate footers) writes
    every stripe's column statistics as 0 values, no NULLs, no bounds, for stripes that hold
    rows -- and must not prune it."""
    if stats is None or stats.values is None:
        return None
    if stats.values == rows or (stats.has_null is True and stats.values <= rows):
        return stats
    return None


def bloom_mask(
    filters: list[BloomFilter] | None, keys: KeyValues, which: np.ndarray | None = None
) -> np.ndarray:
    """Which keys (of ``which``, positions; default all) may be in a stripe by its row
    groups' bloom filters: a key may be in the stripe when any row group's filter may hold
    it; NULL keys are always "may" (a bloom filter holds no NULLs; statistics decide them)."""
    idx = np.arange(len(keys.values)) if which is None else which
    if filters is None or keys.hashes is None:
        return np.ones(len(idx), dtype=bool)
    hashes = keys.hashes_at(idx)
    hit = keys.nulls[idx].copy()
    for bf in filters:
        todo = ~hit
        if not todo.any():
            break
        hit[todo] = bf.test_hashes(hashes[todo])
    return hit


@dataclass
class StripeVerdict:
    """:func:`stripes_to_read`'s answer for one file: ``keep[i]`` per stripe, ``rows[i]`` its
    row count, and how it was decided: ``by_stats`` / ``by_bloom`` stripes skipped by each
    test; ``indexed`` False when no key column could be used (the whole file is read)."""

    keep: list[bool]
    rows: list[int] = field(default_factory=list)
    by_stats: int = 0
    by_bloom: int = 0
    indexed: bool = True

    def reads(self, stripe: int) -> bool:
        """Whether ``stripe`` must be read (True for a stripe the verdict does not cover)."""
        return stripe >= len(self.keep) or self.keep[stripe]

    @property
    def skipped(self) -> int:
        """Stripes proven free of the batch's keys."""
        return self.by_stats + self.by_bloom


def stripes_to_read(
    fh: BinaryIO,
    tail: OrcTailIndex,
    columns: Sequence[int | None],
    keys: pa.Table,
    *,
    blooms: bool = True,
) -> StripeVerdict:
    """Which stripes of a file may hold one of ``keys``' rows.

    Composite keys: per stripe, each key column gives the set of batch key tuples whose value
    in that column may be in the stripe (statistics first; bloom filters only for the tuples
    the statistics left); the stripe is kept when some tuple survives on *every* column. A
    tuple present in the stripe passes every column's test (statistics bound every value, a
    bloom filter has no false negatives), so this never skips a stripe holding a batch key;
    it may keep a stripe where each column's value occurs in a different row (an
    over-approximation, as testing the columns independently would also be).

    Args:
        fh: the open file; tail: its :func:`read_tail_index`.
        columns: per key column of ``keys``, the file's type id of that column, None when the
            file does not have it (then every key is "may": a missing column reads as NULL).
        keys: the batch's key tuples (Arrow types of the table's key columns).
        blooms: also read bloom filters (two reads per stripe still in doubt, when at most
            :data:`BLOOM_MAX_KEYS` batch keys are).
    Raises:
        OrcIndexError: malformed statistics or bloom filter bytes.
    """
    n = len(tail.stripes)
    rows = [s.rows for s in tail.stripes]
    prepared: list[tuple[int, KeyValues]] = []
    if tail.readable:
        for name, col in zip(keys.column_names, columns):
            if col is None or col >= len(tail.types):
                continue
            domain = key_domain(tail.types[col], keys.schema.field(name).type)
            if domain is not None:
                prepared.append((col, KeyValues.of(keys.column(name), domain)))
    if not prepared or keys.num_rows == 0:
        return StripeVerdict([True] * n, rows, indexed=bool(prepared))
    verdict = StripeVerdict([True] * n, rows)
    no_blooms: set[int] = set()
    for s in range(n):
        alive = np.ones(keys.num_rows, dtype=bool)
        for col, kv in prepared:
            alive &= stats_mask(consistent_stats(tail.column_stats(s, col), rows[s]), kv)
        if not alive.any():
            verdict.keep[s] = False
            verdict.by_stats += 1
            continue
        if not blooms or int(alive.sum()) > BLOOM_MAX_KEYS:
            continue
        streams = None
        for col, kv in prepared:
            if kv.hashes is None or col in no_blooms:
                continue
            streams = streams if streams is not None else stripe_streams(fh, tail, s)
            filters = read_bloom_filters(
                fh,
                tail,
                s,
                col,
                kinds=(BLOOM_FILTER_UTF8,)
                if kv.domain == TEXT
                else (BLOOM_FILTER_UTF8, BLOOM_FILTER),
                streams=streams,
            )
            if filters is None:
                # writers put bloom filters in every stripe or in none: stop asking this file
                # (only ever keeps more stripes)
                no_blooms.add(col)
                continue
            which = np.flatnonzero(alive)
            alive[which] = bloom_mask(filters, kv, which)
            if not alive.any():
                verdict.keep[s] = False
                verdict.by_bloom += 1
                break
    return verdict


def file_stripes_to_read(
    fh: BinaryIO,
    *,
    acid: bool,
    positions: Sequence[int | None],
    keys: pa.Table,
    blooms: bool = True,
) -> StripeVerdict:
    """:func:`stripes_to_read` for an open data file whose key columns are the data columns at
    ``positions`` (index into the ``row`` struct's fields of an ACID event file, or into the
    root struct's fields of an original file; None = the file lacks the column). A tail this
    module cannot parse keeps every stripe (the index is never needed for correctness)."""
    fh.seek(0, 2)
    size = fh.tell()
    try:
        tail = read_tail_index(fh, size)
        if not tail.readable or not tail.types:
            return StripeVerdict(
                [True] * len(tail.stripes), [s.rows for s in tail.stripes], indexed=False
            )
        data_ids = tail.data_column_ids(acid)
        columns = [data_ids[p] if p is not None and p < len(data_ids) else None for p in positions]
        return stripes_to_read(fh, tail, columns, keys, blooms=blooms)
    except (OrcFooterError, IndexError, ValueError, zlib.error, pa.ArrowException):
        return StripeVerdict([], indexed=False)


@dataclass
class KeyColumnIndex:
    """What one data file carries for one key column (:func:`describe_key_columns`).

    Attributes:
        column: the key column's name; domain: :func:`key_domain` (None: not indexable here --
            type family differs, unknown type, or the file lacks the column).
        stripes: stripes in the file; with_bounds: stripes whose statistics give min/max;
        with_blooms: stripes with a usable bloom filter stream (kind names in ``bloom_kinds``).
    """

    column: str
    domain: str | None
    stripes: int
    with_bounds: int = 0
    with_blooms: int = 0
    bloom_kinds: list[str] = field(default_factory=list)


def describe_key_columns(
    fh: BinaryIO, *, acid: bool, positions: Sequence[int | None], keys: pa.Schema
) -> list[KeyColumnIndex]:
    """Per key column (``keys``: their names and Arrow types; ``positions`` as
    :func:`file_stripes_to_read`), what the file's index can do for a lookup: which stripes
    have min/max statistics and which have bloom filters (every stripe's footer is read).

    Raises:
        OrcIndexError: malformed tail, statistics or bloom filter bytes.
    """
    fh.seek(0, 2)
    tail = read_tail_index(fh, fh.tell())
    n = len(tail.stripes)
    data_ids = tail.data_column_ids(acid) if tail.types else []
    out = []
    for name, pos in zip(keys.names, positions):
        col = data_ids[pos] if pos is not None and pos < len(data_ids) else None
        domain = (
            key_domain(tail.types[col], keys.field(name).type)
            if col is not None and tail.readable
            else None
        )
        d = KeyColumnIndex(name, domain, n)
        if col is not None and domain is not None:
            kinds = (BLOOM_FILTER_UTF8,) if domain == TEXT else (BLOOM_FILTER_UTF8, BLOOM_FILTER)
            seen = set()
            for s in range(n):
                st = consistent_stats(tail.column_stats(s, col), tail.stripes[s].rows)
                d.with_bounds += bool(st is not None and st.minimum is not None)
                if domain == DEC:
                    continue
                for k in kinds:
                    if read_bloom_filters(fh, tail, s, col, kinds=(k,)):
                        seen.add(k)
                        d.with_blooms += 1
                        break
            d.bloom_kinds = [
                {BLOOM_FILTER_UTF8: "BLOOM_FILTER_UTF8", BLOOM_FILTER: "BLOOM_FILTER"}[k]
                for k in sorted(seen)
            ]
        out.append(d)
    return out
