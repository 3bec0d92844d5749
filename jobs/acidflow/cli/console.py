"""Output of every ``acidflow`` command.

Two Rich consoles: ``console`` (stdout, the terminal's width, or 160 columns when piped so
tables stay readable in logs and CI) and ``err`` (stderr, for errors and notes).

``--json`` means the same thing on every command that has it: JSON lines on stdout, one compact
object per result (a command with one result prints one line, a listing one line per item),
nothing else on stdout (notes and warnings go to stderr). :func:`emit_json` writes one such line.
Values JSON lacks are written as Spark's JSON writer writes them: timestamps and dates in ISO
8601 (``2024-01-01 10:00:00``), decimals as strings (no float rounding), binary as base64, and
float NaN / ±infinity as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (bare ``NaN``
is not JSON).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True)


def json_default(v: object) -> Any:
    """``json.dumps(default=)``: datetimes/dates/times in ISO form, Decimal as a string,
    bytes as base64, anything else with a ``to_dict()`` as that dict, else ``str(v)``."""
    if isinstance(v, _dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    to_dict = getattr(v, "to_dict", None)
    if callable(to_dict):
        return json_safe(to_dict())
    return str(v)


def json_safe(v: Any) -> Any:
    """``v`` with float NaN / ±infinity (at any depth of dicts, lists and tuples) replaced by
    ``"NaN"`` / ``"Infinity"`` / ``"-Infinity"``, so ``json.dumps(allow_nan=False)`` accepts it."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def json_line(doc: Any) -> str:
    """One compact JSON text of ``doc`` (no newline), with the conventions of this module."""
    return json.dumps(json_safe(doc), default=json_default, ensure_ascii=False, allow_nan=False)


def emit_json(doc: Any) -> None:
    """Write ``doc`` as one JSON line on stdout (the ``--json`` convention)."""
    sys.stdout.write(json_line(doc) + "\n")


def emit_json_lines(docs: Iterable[Any]) -> None:
    """Write each of ``docs`` as one JSON line on stdout (a listing under ``--json``)."""
    out = sys.stdout
    for d in docs:
        out.write(json_line(d) + "\n")


def time_cell(v: object) -> str:
    """A time or number cell of a Rich table (SHOW COMPACTIONS style): ``-`` for None,
    ``YYYY-MM-DD HH:MM:SS`` for a datetime, else ``str(v)``."""
    if v is None:
        return "-"
    strftime = getattr(v, "strftime", None)
    return strftime("%Y-%m-%d %H:%M:%S") if strftime else str(v)
