"""PostgreSQL log sequence numbers (``pg_lsn``): the one place LSN text is read and written.

An LSN is a 64-bit position in the write-ahead log, written by PostgreSQL as two upper-case hex
numbers of up to 8 digits each, ``<high 32 bits>/<low 32 bits>`` (``16/B374D848``). acidflow keeps
LSNs as Python ints: the slot pull (``acidflow.sources.postgres.pull``) names landing files and
advances the slot with them, and the wal2json parser (``acidflow.sources.wal2json``) orders the
changes of a batch by commit LSN.
"""

from __future__ import annotations

import re

_LSN_RE = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")


def parse_lsn(text: str | int) -> int:
    """``"16/B374D848"`` (PostgreSQL ``pg_lsn`` text, surrounding blanks ignored) -> 64-bit
    integer; an int is returned as it is.

    Raises:
        ValueError: not an LSN (the message names the value).
    """
    if isinstance(text, int):
        return text
    m = _LSN_RE.fullmatch(str(text or "").strip())
    if not m:
        raise ValueError(f"not a PostgreSQL LSN: {text!r}")
    return (int(m.group(1), 16) << 32) | int(m.group(2), 16)


def format_lsn(value: int) -> str:
    """64-bit integer -> ``pg_lsn`` text (``"16/B374D848"``, upper-case hex, no padding)."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"
