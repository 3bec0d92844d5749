"""Hive partition directory names: ``key=value/key2=value2`` with Hive's escaping.

Follows Hive ``org.apache.hadoop.hive.common.FileUtils.escapePathName`` / ``unescapePathName``
and ``makePartName``: special characters become ``%XX`` (upper-case hex), a NULL or empty value
becomes ``__HIVE_DEFAULT_PARTITION__`` (``hive.exec.default.partition.name``). Pure Python.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = set("\"#%'*/:=?\\\x7f{[]^")


def escape(value: str) -> str:
    """Escape one partition key or value like Hive's ``FileUtils.escapePathName``."""
    return "".join(f"%{ord(c):02X}" if (c in _ESCAPED or ord(c) < 0x20) else c for c in value)


def unescape(value: str) -> str:
    """Undo :func:`escape` (``FileUtils.unescapePathName``); malformed ``%`` stays literal."""
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c == "%" and i + 3 <= len(value):
            try:
                out.append(chr(int(value[i + 1 : i + 3], 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(c)
        i += 1
    return "".join(out)


def value_to_string(value: Any) -> str:
    """Hive's text form of a partition value (NULL/empty -> the default partition name)."""
    if value is None or value == "":
        return DEFAULT_PARTITION_NAME
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (_dt.date, decimal.Decimal, int, float)):
        return str(value)
    return str(value)


def make_partition_path(items: list[tuple[str, Any]]) -> str:
    """``[("ds", "2024-01-01"), ("region", "eu")]`` -> ``"ds=2024-01-01/region=eu"``."""
    return "/".join(f"{escape(k)}={escape(value_to_string(v))}" for k, v in items)


def parse_partition_path(path: str) -> list[tuple[str, str | None]]:
    """``"ds=2024-01-01/region=eu"`` -> ``[("ds", "2024-01-01"), ("region", "eu")]``; the
    default partition name becomes ``None``.

    Raises:
        ValueError: a component without ``=``.
    """
    out = []
    for part in path.strip("/").split("/"):
        if "=" not in part:
            raise ValueError(f"not a Hive partition directory name: {part!r} in {path!r}")
        k, v = part.split("=", 1)
        v = unescape(v)
        out.append((unescape(k), None if v == DEFAULT_PARTITION_NAME else v))
    return out


def is_partition_dir_name(name: str) -> bool:
    """True for a single ``key=value`` component (key not hidden)."""
    return "=" in name and not name.startswith(("_", "."))
