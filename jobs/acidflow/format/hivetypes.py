"""Hive type strings: the one parser and its typed form (Hive 3 ``TypeInfoUtils`` grammar).

Accepts what Hive's DDL accepts (``int``, ``DECIMAL(10, 2)``, ``array<struct<a:int>>``, synonyms
``integer`` / ``numeric`` / ``dec`` / ``double precision``) and returns a small typed tree, the
counterpart of Hive's ``TypeInfo`` classes (``PrimitiveTypeInfo``, ``DecimalTypeInfo``,
``CharTypeInfo``, ``VarcharTypeInfo``, ``ListTypeInfo``, ``MapTypeInfo``, ``StructTypeInfo``,
``UnionTypeInfo``). Every node's :attr:`HiveType.type_name` is Hive's canonical lower-case
string, as ``TypeInfoUtils.getTypeInfoFromTypeString(...).getTypeName()`` renders it.

Everything else that reads a Hive type string goes through :func:`parse_hive_type`: the
catalog (column normalisation), ``acidflow.format.types`` (ORC / Arrow / Spark mappings) and
``acidflow.format.bucketing_hash`` (the bucket hash of each column type).

Pure Python, no project imports.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import ClassVar, Union

from acidflow.errors import AcidflowError

__all__ = [
    "HiveTypeError",
    "HiveType",
    "PrimitiveType",
    "DecimalType",
    "CharType",
    "VarcharType",
    "ArrayType",
    "MapType",
    "StructType",
    "UnionType",
    "parse_hive_type",
    "normalize_hive_type",
    "PRIMITIVE_TYPE_NAMES",
    "MAX_DECIMAL_PRECISION",
    "DEFAULT_DECIMAL_PRECISION",
    "DEFAULT_DECIMAL_SCALE",
    "MAX_CHAR_LENGTH",
    "MAX_VARCHAR_LENGTH",
]

#: every primitive name Hive's grammar knows (``serdeConstants`` ``*_TYPE_NAME``)
PRIMITIVE_TYPE_NAMES = frozenset(
    {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "float",
        "double",
        "boolean",
        "string",
        "binary",
        "timestamp",
        "date",
        "decimal",
        "varchar",
        "char",
        "interval_year_month",
        "interval_day_time",
        "timestamp with local time zone",
        "void",
    }
)
_TYPE_SYNONYMS = {
    "integer": "int",
    "double precision": "double",
    "dec": "decimal",
    "numeric": "decimal",
}
MAX_DECIMAL_PRECISION = 38  #: ``HiveDecimal.MAX_PRECISION``
DEFAULT_DECIMAL_PRECISION = 10  #: ``HiveDecimal.USER_DEFAULT_PRECISION`` (``decimal`` alone)
DEFAULT_DECIMAL_SCALE = 0  #: ``HiveDecimal.USER_DEFAULT_SCALE``
MAX_CHAR_LENGTH = 255  #: ``HiveChar.MAX_CHAR_LENGTH``
MAX_VARCHAR_LENGTH = 65535  #: ``HiveVarchar.MAX_VARCHAR_LENGTH``

_WORD = re.compile(r"[a-z_][a-z0-9_]*( [a-z_][a-z0-9_]*)*")
_IDENT = re.compile(r"[a-z0-9_]+")
_NUMBER = re.compile(r"\d+")


class HiveTypeError(AcidflowError, ValueError):
    """A Hive type string that cannot be parsed, or a type with no counterpart where one is
    needed (ORC / Arrow / Spark mapping, bucket hash)."""


@dataclass(frozen=True)
class PrimitiveType:
    """A parameterless primitive (``int``, ``string``, ``timestamp``, ``void`` ...).

    Attributes:
        name: the canonical lower-case name (synonyms resolved: ``integer`` -> ``int``).
    """

    name: str
    category: ClassVar[str] = "primitive"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string."""
        return self.name


@dataclass(frozen=True)
class DecimalType:
    """``decimal(precision,scale)``; 1 <= precision <= 38, 0 <= scale <= precision."""

    precision: int
    scale: int
    name: ClassVar[str] = "decimal"
    category: ClassVar[str] = "primitive"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string, e.g. ``decimal(10,2)``."""
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True)
class CharType:
    """``char(length)``, 1 <= length <= 255 (values are blank-padded to ``length``)."""

    length: int
    name: ClassVar[str] = "char"
    category: ClassVar[str] = "primitive"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string, e.g. ``char(3)``."""
        return f"char({self.length})"


@dataclass(frozen=True)
class VarcharType:
    """``varchar(length)``, 1 <= length <= 65535."""

    length: int
    name: ClassVar[str] = "varchar"
    category: ClassVar[str] = "primitive"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string, e.g. ``varchar(20)``."""
        return f"varchar({self.length})"


@dataclass(frozen=True)
class ArrayType:
    """``array<element>`` (Hive ``ListTypeInfo``)."""

    element: "HiveType"
    name: ClassVar[str] = "array"
    category: ClassVar[str] = "list"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string."""
        return f"array<{self.element.type_name}>"


@dataclass(frozen=True)
class MapType:
    """``map<key,value>``; the key is a primitive type."""

    key: "HiveType"
    value: "HiveType"
    name: ClassVar[str] = "map"
    category: ClassVar[str] = "map"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string."""
        return f"map<{self.key.type_name},{self.value.type_name}>"


@dataclass(frozen=True)
class StructType:
    """``struct<name:type,...>``; field names lower-case, in declaration order."""

    fields: tuple[tuple[str, "HiveType"], ...]
    name: ClassVar[str] = "struct"
    category: ClassVar[str] = "struct"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string."""
        return "struct<" + ",".join(f"{n}:{t.type_name}" for n, t in self.fields) + ">"


@dataclass(frozen=True)
class UnionType:
    """``uniontype<t0,t1,...>`` (Hive ``UnionTypeInfo``)."""

    members: tuple["HiveType", ...]
    name: ClassVar[str] = "uniontype"
    category: ClassVar[str] = "union"

    @property
    def type_name(self) -> str:
        """Hive's canonical type string."""
        return "uniontype<" + ",".join(m.type_name for m in self.members) + ">"


#: a parsed Hive type
HiveType = Union[
    PrimitiveType, DecimalType, CharType, VarcharType, ArrayType, MapType, StructType, UnionType
]


class _TypeParser:
    """Recursive-descent parser over the lower-cased, blank-collapsed type string."""

    def __init__(self, text: str):
        self.text = text
        self.s = re.sub(r"\s+", " ", text.strip().lower())
        self.i = 0

    def fail(self, why: str) -> HiveTypeError:
        return HiveTypeError(f"invalid Hive type {self.text!r}: {why}")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def expect(self, ch: str) -> None:
        self.ws()
        if self.i >= len(self.s) or self.s[self.i] != ch:
            raise self.fail(f"expected {ch!r} at position {self.i}")
        self.i += 1

    def peek(self) -> str:
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def word(self) -> str:
        """A type name; multi-word names (``double precision``) are taken when known."""
        self.ws()
        m_ = _WORD.match(self.s, self.i)
        if not m_:
            raise self.fail(f"expected a name at position {self.i}")
        words = m_.group(0).split(" ")
        for n in range(len(words), 0, -1):
            phrase = " ".join(words[:n])
            if n == 1 or phrase in PRIMITIVE_TYPE_NAMES or phrase in _TYPE_SYNONYMS:
                self.i += len(phrase)
                return phrase
        raise AssertionError  # pragma: no cover

    def ident(self) -> str:
        self.ws()
        m_ = _IDENT.match(self.s, self.i)
        if not m_:
            raise self.fail(f"expected a field name at position {self.i}")
        self.i = m_.end()
        return m_.group(0)

    def int_arg(self) -> int:
        self.ws()
        m_ = _NUMBER.match(self.s, self.i)
        if not m_:
            raise self.fail(f"expected a number at position {self.i}")
        self.i = m_.end()
        return int(m_.group(0))

    def parse(self) -> HiveType:
        out = self.type_()
        self.ws()
        if self.i != len(self.s):
            raise self.fail(f"unexpected text at position {self.i}")
        return out

    def type_(self) -> HiveType:
        name = self.word()
        name = _TYPE_SYNONYMS.get(name, name)
        if name == "array":
            self.expect("<")
            inner = self.type_()
            self.expect(">")
            return ArrayType(inner)
        if name == "map":
            self.expect("<")
            key = self.type_()
            if key.category != "primitive":
                raise self.fail("map keys must be primitive")
            self.expect(",")
            value = self.type_()
            self.expect(">")
            return MapType(key, value)
        if name == "struct":
            self.expect("<")
            fields = []
            while True:
                fname = self.ident()
                self.expect(":")
                fields.append((fname, self.type_()))
                if self.peek() == ",":
                    self.i += 1
                    continue
                break
            self.expect(">")
            return StructType(tuple(fields))
        if name == "uniontype":
            self.expect("<")
            members = [self.type_()]
            while self.peek() == ",":
                self.i += 1
                members.append(self.type_())
            self.expect(">")
            return UnionType(tuple(members))
        if name not in PRIMITIVE_TYPE_NAMES:
            raise self.fail(f"unknown type {name!r}")
        if name == "decimal":
            precision, scale = DEFAULT_DECIMAL_PRECISION, DEFAULT_DECIMAL_SCALE
            if self.peek() == "(":
                self.i += 1
                precision = self.int_arg()
                if self.peek() == ",":
                    self.i += 1
                    scale = self.int_arg()
                self.expect(")")
            if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
                raise self.fail("decimal precision must be 1..38 and 0 <= scale <= precision")
            return DecimalType(precision, scale)
        if name in ("varchar", "char"):
            self.expect("(")
            length = self.int_arg()
            self.expect(")")
            limit = MAX_VARCHAR_LENGTH if name == "varchar" else MAX_CHAR_LENGTH
            if not 1 <= length <= limit:
                raise self.fail(f"{name} length must be 1..{limit}")
            return VarcharType(length) if name == "varchar" else CharType(length)
        return PrimitiveType(name)


@functools.lru_cache(maxsize=4096)
def _parse_cached(hive_type: str) -> HiveType:
    return _TypeParser(hive_type).parse()


def parse_hive_type(hive_type: str) -> HiveType:
    """Parse a Hive type string into its typed form (cached per string).

    ``parse_hive_type("DECIMAL(10, 2)") == DecimalType(10, 2)``;
    ``parse_hive_type("array<struct<A:int>>") ==
    ArrayType(StructType((("a", PrimitiveType("int")),)))``.

    Raises:
        HiveTypeError (a ``ValueError``): not a string, unknown type name, malformed
            parameters or nesting, a decimal / char / varchar parameter out of Hive's range,
            a complex map key.
    """
    if not isinstance(hive_type, str):
        raise HiveTypeError(f"Hive type must be a string, got {hive_type!r}")
    return _parse_cached(hive_type)


def normalize_hive_type(hive_type: str) -> str:
    """Canonical lower-case Hive type string (``"DECIMAL(10, 2)"`` -> ``"decimal(10,2)"``,
    ``"integer"`` -> ``"int"``, ``"decimal"`` -> ``"decimal(10,0)"``): the
    :attr:`~DecimalType.type_name` of :func:`parse_hive_type`.

    Raises:
        HiveTypeError (a ``ValueError``): as :func:`parse_hive_type`.
    """
    return parse_hive_type(hive_type).type_name
