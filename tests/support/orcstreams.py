"""Test helper: the streams each stripe of an ORC file holds, read from its stripe footers
(ORC specification: ``Footer.stripes`` = ``StripeInformation{offset = 1, indexLength = 2,
dataLength = 3, footerLength = 4}``; ``StripeFooter.streams`` (field 1) = ``Stream{kind = 1,
column = 2, length = 3}``; stream kind 7 = BLOOM_FILTER, 8 = BLOOM_FILTER_UTF8), so tests can
check which columns carry bloom filters independently of the writers that made them."""

from __future__ import annotations

from pathlib import Path

from acidflow.format.orc import orcfooter

BLOOM_FILTER = 7
BLOOM_FILTER_UTF8 = 8


def _msg(buf: bytes) -> dict[int, list]:
    out: dict[int, list] = {}
    for number, value, _ in orcfooter._fields(buf):
        out.setdefault(number, []).append(value)
    return out


def stripe_streams(path: str | Path) -> list[set[tuple[int, int]]]:
    """Per stripe, the ``(stream kind, column id)`` pairs of its streams."""
    data = Path(path).read_bytes()
    tail = orcfooter.read_tail(data)
    out = []
    for raw in _msg(tail.footer).get(3, []):
        info = {k: v[0] for k, v in _msg(raw).items()}
        start = info[1] + info.get(2, 0) + info[3]
        footer = orcfooter.decompress(data[start : start + info[4]], tail.kind)
        out.append(
            {
                (s.get(1, [0])[0], s.get(2, [0])[0])
                for s in (_msg(x) for x in _msg(footer).get(1, []))
            }
        )
    return out


def bloom_filter_columns(path: str | Path, kind: int = BLOOM_FILTER_UTF8) -> list[set[int]]:
    """Per stripe, the column ids that have a bloom filter stream of ``kind``."""
    return [{c for k, c in s if k == kind} for s in stripe_streams(path)]
