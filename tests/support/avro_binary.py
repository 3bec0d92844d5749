"""A small, pure-Python reader of Avro's binary encoding (one datum, given its writer schema),
enough for Debezium's change events written by a schema-registry converter: records, named-type
references (Debezium's ``before`` and ``after`` share one ``Value`` record), unions, the
primitives, enums, fixed, arrays and maps. Logical types come back as their underlying values
(Debezium's own semantic types are plain ints/longs/strings with a ``connect.name``).

No dependency (``fastavro`` or ``avro`` from PyPI would do the same, faster): what a test needs
to check that a value decodes, and the shape a decoder in acidflow would have."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

__all__ = ["decode"]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"Avro datum truncated at byte {self.pos} (wanted {n} more)")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def long(self) -> int:
        """A zig-zag varint (Avro's int and long)."""
        shift = 0
        acc = 0
        while True:
            b = self.take(1)[0]
            acc |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        return (acc >> 1) ^ -(acc & 1)


def _fullname(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _read(r: _Reader, schema: Any, names: dict[str, Any], ns: str | None) -> Any:
    if isinstance(schema, list):  # a union: the branch's index, then the branch
        return _read(r, schema[r.long()], names, ns)
    if isinstance(schema, str):
        prim = _PRIMITIVES.get(schema)
        if prim is not None:
            return prim(r)
        named = names.get(_fullname(schema, ns)) or names.get(schema)
        if named is None:
            raise ValueError(f"unknown Avro type {schema!r}")
        return _read(r, named, names, ns)
    kind = schema["type"]
    if kind in _PRIMITIVES:  # {"type": "long", "connect.name": ...} and logical types
        return _PRIMITIVES[kind](r)
    if kind in ("record", "error", "enum", "fixed"):
        name = schema["name"]
        if "." in name:
            ns = name.rsplit(".", 1)[0]
        else:
            ns = schema.get("namespace", ns)
        names.setdefault(_fullname(name, ns), schema)
    if kind in ("record", "error"):
        return {f["name"]: _read(r, f["type"], names, ns) for f in schema["fields"]}
    if kind == "enum":
        return schema["symbols"][r.long()]
    if kind == "fixed":
        return r.take(schema["size"])
    if kind in ("array", "map"):
        items: list[Any] = []
        entries: dict[str, Any] = {}
        while True:
            count = r.long()
            if count == 0:
                break
            if count < 0:  # a block with its byte size: the size is not needed here
                count = -count
                r.long()
            for _ in range(count):
                if kind == "array":
                    items.append(_read(r, schema["items"], names, ns))
                else:
                    key = r.take(r.long()).decode()
                    entries[key] = _read(r, schema["values"], names, ns)
        return items if kind == "array" else entries
    raise ValueError(f"unsupported Avro schema {schema!r}")


_PRIMITIVES: dict[str, Any] = {
    "null": lambda r: None,
    "boolean": lambda r: r.take(1) != b"\x00",
    "int": lambda r: r.long(),
    "long": lambda r: r.long(),
    "float": lambda r: struct.unpack("<f", r.take(4))[0],
    "double": lambda r: struct.unpack("<d", r.take(8))[0],
    "bytes": lambda r: r.take(r.long()),
    "string": lambda r: r.take(r.long()).decode(),
}


def _collect(schema: Any, names: dict[str, Any], ns: str | None) -> None:
    """Every named type (record, enum, fixed) in ``schema`` by full name: a reference may come
    before the definition in the data (a union's null branch skips it)."""
    if isinstance(schema, list):
        for branch in schema:
            _collect(branch, names, ns)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind in ("record", "error", "enum", "fixed"):
        name = schema["name"]
        ns = name.rsplit(".", 1)[0] if "." in name else schema.get("namespace", ns)
        names.setdefault(_fullname(name, ns), schema)
        for f in schema.get("fields", ()):
            _collect(f["type"], names, ns)
    elif kind == "array":
        _collect(schema["items"], names, ns)
    elif kind == "map":
        _collect(schema["values"], names, ns)


def decode(schema: Any, data: bytes, named: Sequence[Any] = ()) -> Any:
    """The datum that ``data`` encodes under the (parsed JSON) writer ``schema``; ``named``:
    schemas of the named types that ``schema`` refers to without defining them (a registry's
    schema references).

    Raises:
        ValueError: truncated data, bytes left over, or a schema construct not handled here.
    """
    r = _Reader(data)
    names: dict[str, Any] = {}
    for other in named:
        _collect(other, names, None)
    _collect(schema, names, None)
    out = _read(r, schema, names, None)
    if r.pos != len(data):
        raise ValueError(f"{len(data) - r.pos} bytes left after the Avro datum")
    return out
