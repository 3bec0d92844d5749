"""PostgreSQL's notion of equality, for reconciling an acidflow table with its PostgreSQL
source (``acidflow.quality.reconcile`` takes it through the source: ``PostgresSource`` and
``SavedSource`` carry :data:`POSTGRES_EQUALITY`).

Each column gets a comparison kind (from PostgreSQL's ``format_type``, or from the acidflow
table's Hive type when the source's types are unknown), and every value -- PostgreSQL text
output or acidflow's Arrow value -- is normalised to the same canonical value where acidflow's
storage differs from PostgreSQL: integers of any width as integers; ``numeric`` as decimals
without trailing zeros (``1.50`` = ``1.5``); ``real`` rounded to float32; ``character(n)``
right-trimmed; ``timestamp``/``timestamptz`` as microseconds since 1970-01-01 UTC; ``time`` as
microseconds since midnight; ``boolean`` from ``t``/``f``; ``bytea`` from ``\\x..`` hex;
``json``/``jsonb`` re-serialised with sorted keys; ``uuid`` lower-cased; one-dimensional arrays
element by element; anything else as its text.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import re
import struct
from typing import Any, cast

__all__ = [
    "POSTGRES_EQUALITY",
    "PostgresEquality",
    "canonical_value",
    "kind_of_hive_type",
    "kind_of_pg_type",
    "parse_pg_array",
]

EPOCH = _dt.datetime(1970, 1, 1)
EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def kind_of_pg_type(pg_type: str) -> str:
    """Comparison kind of a PostgreSQL type as ``format_type`` (or wal2json) spells it.

    Returns one of ``int``, ``decimal``, ``float4``, ``float8``, ``bool``, ``text``, ``char``,
    ``date``, ``timestamp`` (with or without time zone), ``time``, ``bytea``, ``json``,
    ``uuid``, ``array:<element kind>`` or ``other`` (compared as text).
    """
    t = pg_type.strip().lower()
    if t.endswith("[]"):
        return "array:" + kind_of_pg_type(t[:-2])
    base = re.sub(r"\(.*?\)", "", t).strip()
    if base in (
        "smallint",
        "integer",
        "bigint",
        "int2",
        "int4",
        "int8",
        "int",
        "smallserial",
        "serial",
        "bigserial",
        "oid",
    ):
        return "int"
    if base in ("numeric", "decimal", "money_numeric"):
        return "decimal"
    if base in ("real", "float4"):
        return "float4"
    if base in ("double precision", "float8", "float"):
        return "float8"
    if base in ("boolean", "bool"):
        return "bool"
    if base in ("character", "char", "bpchar"):
        return "char"
    if base in ("text", "character varying", "varchar", "name", "citext"):
        return "text"
    if base == "date":
        return "date"
    if base.startswith("timestamp"):
        return "timestamp"
    if base in ("time", "time without time zone"):
        return "time"
    if base == "bytea":
        return "bytea"
    if base in ("json", "jsonb"):
        return "json"
    if base == "uuid":
        return "uuid"
    return "other"


def kind_of_hive_type(hive_type: str) -> str:
    """Comparison kind of a Hive type (used when the source's types are unknown)."""
    t = re.sub(r"\s+", "", hive_type.lower())
    if t.startswith("array<") and t.endswith(">"):
        return "array:" + kind_of_hive_type(t[6:-1])
    base = t.split("(")[0]
    return {
        "tinyint": "int",
        "smallint": "int",
        "int": "int",
        "integer": "int",
        "bigint": "int",
        "decimal": "decimal",
        "float": "float4",
        "double": "float8",
        "boolean": "bool",
        "string": "text",
        "varchar": "text",
        "char": "char",
        "date": "date",
        "timestamp": "timestamp",
        "binary": "bytea",
    }.get(base, "other")


# ------------------------------------------------------------------------------ values


def _micros(dt: _dt.datetime) -> int:
    if dt.tzinfo is not None:
        return (dt - EPOCH_UTC) // _dt.timedelta(microseconds=1)
    return (dt - EPOCH) // _dt.timedelta(microseconds=1)


def _norm_decimal(d: decimal.Decimal) -> decimal.Decimal | str:
    if not d.is_finite():
        return "NaN" if d.is_nan() else str(d)
    if d.is_zero():
        return decimal.Decimal(0)
    d = d.normalize()
    exponent = cast(int, d.as_tuple().exponent)  # an int: d is finite here
    return d.quantize(1) if exponent > 0 else d


def _float4(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _pg_bool(v: Any) -> bool:
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("t", "true", "1", "yes", "y", "on"):
            return True
        if s in ("f", "false", "0", "no", "n", "off"):
            return False
        raise ValueError(f"not a boolean: {v!r}")
    return bool(v)


def parse_pg_array(text: str) -> tuple | str:
    """A one-dimensional PostgreSQL array literal (``{a,"b c",NULL}``) -> tuple of element
    texts (``None`` for NULL). Multi-dimensional or unusual literals come back unchanged."""
    s = text.strip()
    if s.startswith("[") and "=" in s:  # explicit bounds: [0:1]={...}
        return text
    if not (s.startswith("{") and s.endswith("}")):
        return text
    body = s[1:-1]
    if body == "":
        return ()
    if body.lstrip().startswith("{"):
        return text
    out: list[str | None] = []
    i, n = 0, len(body)
    while i <= n:
        if i < n and body[i] == '"':
            i += 1
            buf = []
            while i < n and body[i] != '"':
                if body[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(body[i])
                i += 1
            i += 1  # closing quote
            out.append("".join(buf))
        else:
            j = body.find(",", i)
            j = n if j < 0 else j
            tok = body[i:j].strip()
            out.append(None if tok.upper() == "NULL" else tok)
            i = j
        if i < n and body[i] != ",":
            return text
        i += 1
    return tuple(out)


def canonical_value(v: Any, kind: str) -> Any:
    """Type-normalise one value (source text or acidflow's native value) for comparison.

    Args:
        v: ``None`` (NULL), a ``str`` (PostgreSQL text output) or a Python value from Arrow
            (``int``, ``Decimal``, ``float``, ``bool``, ``date``, ``datetime``, ``bytes``,
            ``list``, ``dict`` ...).
        kind: from :func:`kind_of_pg_type` / :func:`kind_of_hive_type`.
    Returns:
        ``None``, or ``int`` (int, timestamp micros, time micros), ``Decimal``, ``float``,
        ``bool``, ``date``, ``bytes``, ``str`` or a ``tuple`` (arrays) -- hashable and sortable
        within one kind.
    Raises:
        ValueError: the value cannot be read as that kind.
    """
    if v is None:
        return None
    if kind == "text" or kind == "other":
        return v if isinstance(v, str) else str(v)
    if kind == "char":
        return (v if isinstance(v, str) else str(v)).rstrip(" ")
    if kind == "int":
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        if isinstance(v, decimal.Decimal) and v == v.to_integral_value():
            return int(v)
        return int(str(v).strip())
    if kind == "decimal":
        if isinstance(v, float):
            v = repr(v)
        return _norm_decimal(decimal.Decimal(v.strip() if isinstance(v, str) else v))
    if kind in ("float4", "float8"):
        x = float(v.strip()) if isinstance(v, str) else float(v)
        return _float4(x) if kind == "float4" else x
    if kind == "bool":
        return _pg_bool(v)
    if kind == "date":
        if isinstance(v, _dt.datetime):
            return v.date()
        if isinstance(v, _dt.date):
            return v
        try:
            return _dt.date.fromisoformat(v.strip())
        except ValueError:
            return v.strip()  # infinity, BC dates: compare as text
    if kind == "timestamp":
        if isinstance(v, _dt.datetime):
            return _micros(v)
        if isinstance(v, int):
            return v
        if hasattr(v, "value") and hasattr(v, "to_pydatetime"):  # pandas Timestamp
            return _micros(v.to_pydatetime())
        try:
            return _micros(_dt.datetime.fromisoformat(v.strip()))
        except ValueError:
            return v.strip()  # infinity, BC, year > 9999: compare as text
    if kind == "time":
        if isinstance(v, str):
            try:
                v = _dt.time.fromisoformat(v.strip())
            except ValueError:
                return v.strip()
        if isinstance(v, _dt.time):
            return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        if isinstance(v, _dt.timedelta):
            return v // _dt.timedelta(microseconds=1)
        return int(v)
    if kind == "bytea":
        if isinstance(v, str):
            s = v.strip()
            if s.startswith("\\x"):
                return bytes.fromhex(s[2:])
            return s.encode("utf-8")
        return bytes(v)
    if kind == "json":
        obj = json.loads(v) if isinstance(v, (str, bytes)) else v
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if kind == "uuid":
        return str(v).strip().lower()
    if kind.startswith("array:"):
        elem = kind[6:]
        if isinstance(v, str):
            parsed = parse_pg_array(v)
            if isinstance(parsed, str):
                return parsed
            v = parsed
        if isinstance(v, (list, tuple)):
            return tuple(canonical_value(e, elem) for e in v)
        return str(v)
    raise ValueError(f"unknown comparison kind {kind!r}")


class PostgresEquality:
    """The ``Equality`` a reconciliation takes from a PostgreSQL source
    (``acidflow.quality.reconcile.Equality``): comparison kinds and canonical values as
    PostgreSQL compares them. Static methods, so that the canonical-value function travels to
    Spark tasks by reference."""

    kind_of_source_type = staticmethod(kind_of_pg_type)
    kind_of_hive_type = staticmethod(kind_of_hive_type)
    canonical_value = staticmethod(canonical_value)


#: the one instance sources hand to :func:`acidflow.quality.reconcile.reconcile`
POSTGRES_EQUALITY = PostgresEquality()
