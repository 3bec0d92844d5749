"""Hive type strings: the one parser (``serdeConstants`` / ``TypeInfoUtils`` grammar of Hive 3).

Accepts what Hive's DDL accepts (``int``, ``DECIMAL(10, 2)``, ``array<struct<a:int>>``, synonyms
``integer`` / ``numeric`` / ``dec`` / ``double precision``) and renders Hive's canonical lower-case
form, as ``TypeInfoUtils.getTypeInfoFromTypeString(...).getTypeName()`` does.
"""
from __future__ import annotations

import re

_PRIMITIVE_TYPES = {
    "tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "string", "binary",
    "timestamp", "date", "decimal", "varchar", "char", "interval_year_month",
    "interval_day_time", "timestamp with local time zone", "void",
}
_TYPE_SYNONYMS = {"integer": "int", "double precision": "double", "dec": "decimal",
                  "numeric": "decimal"}


class _TypeParser:
    """Tiny recursive parser for Hive type strings; produces Hive's canonical lower-case form."""

    def __init__(self, text: str):
        self.text = text
        self.s = re.sub(r"\s+", " ", text.strip().lower())
        self.i = 0

    def fail(self, why: str) -> ValueError:
        return ValueError(f"invalid Hive type {self.text!r}: {why}")

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
        self.ws()
        m_ = re.compile(r"[a-z_][a-z0-9_]*( [a-z_][a-z0-9_]*)*").match(self.s, self.i)
        if not m_:
            raise self.fail(f"expected a name at position {self.i}")
        # stop multi-word names before ':' handled by caller; take the longest known phrase
        words = m_.group(0).split(" ")
        for n in range(len(words), 0, -1):
            phrase = " ".join(words[:n])
            if n == 1 or phrase in _PRIMITIVE_TYPES or phrase in _TYPE_SYNONYMS:
                self.i += len(phrase)
                return phrase
        raise AssertionError  # pragma: no cover

    def ident(self) -> str:
        self.ws()
        m_ = re.compile(r"[a-z0-9_]+").match(self.s, self.i)
        if not m_:
            raise self.fail(f"expected a field name at position {self.i}")
        self.i = m_.end()
        return m_.group(0)

    def int_arg(self) -> int:
        self.ws()
        m_ = re.compile(r"\d+").match(self.s, self.i)
        if not m_:
            raise self.fail(f"expected a number at position {self.i}")
        self.i = m_.end()
        return int(m_.group(0))

    def parse(self) -> str:
        out = self.type_()
        self.ws()
        if self.i != len(self.s):
            raise self.fail(f"unexpected text at position {self.i}")
        return out

    def type_(self) -> str:
        name = self.word()
        name = _TYPE_SYNONYMS.get(name, name)
        if name == "array":
            self.expect("<")
            inner = self.type_()
            self.expect(">")
            return f"array<{inner}>"
        if name == "map":
            self.expect("<")
            key = self.type_()
            if "<" in key:
                raise self.fail("map keys must be primitive")
            self.expect(",")
            value = self.type_()
            self.expect(">")
            return f"map<{key},{value}>"
        if name == "struct":
            self.expect("<")
            fields = []
            while True:
                fname = self.ident()
                self.expect(":")
                fields.append(f"{fname}:{self.type_()}")
                if self.peek() == ",":
                    self.i += 1
                    continue
                break
            self.expect(">")
            return f"struct<{','.join(fields)}>"
        if name == "uniontype":
            self.expect("<")
            members = [self.type_()]
            while self.peek() == ",":
                self.i += 1
                members.append(self.type_())
            self.expect(">")
            return f"uniontype<{','.join(members)}>"
        if name not in _PRIMITIVE_TYPES:
            raise self.fail(f"unknown type {name!r}")
        if name == "decimal":
            precision, scale = 10, 0
            if self.peek() == "(":
                self.i += 1
                precision = self.int_arg()
                if self.peek() == ",":
                    self.i += 1
                    scale = self.int_arg()
                self.expect(")")
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise self.fail("decimal precision must be 1..38 and 0 <= scale <= precision")
            return f"decimal({precision},{scale})"
        if name in ("varchar", "char"):
            self.expect("(")
            length = self.int_arg()
            self.expect(")")
            limit = 65535 if name == "varchar" else 255
            if not 1 <= length <= limit:
                raise self.fail(f"{name} length must be 1..{limit}")
            return f"{name}({length})"
        return name


def normalize_hive_type(hive_type: str) -> str:
    """Canonical lower-case Hive type string (``"DECIMAL(10, 2)"`` -> ``"decimal(10,2)"``,
    ``"integer"`` -> ``"int"``, ``"decimal"`` -> ``"decimal(10,0)"``).

    Raises:
        ValueError: unknown type name or malformed parameters / nesting.
    """
    if not isinstance(hive_type, str):
        raise ValueError(f"Hive type must be a string, got {hive_type!r}")
    return _TypeParser(hive_type).parse()
