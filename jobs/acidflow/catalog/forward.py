"""Methods a catalog backend takes from one of its parts unchanged, without a hand-written body.

``SqlCatalog`` is wired from one part per idea (``sql/tables.py``, ``sql/txns.py`` ...) and the
Hive Metastore catalog reuses its side catalog for the roles the metastore does not hold
(batches, compactions, readers, locks): a role method whose whole body would be "call the
same-named method of that part with the same arguments" is declared with :func:`forward`.
The contract and its docstring stay on the role (``acidflow.catalog.api``).

Example::

    class SqlCatalog(Catalog):
        get_table = forward("_tables", SqlTables)   # self._tables.get_table(n)
"""

from __future__ import annotations

from typing import Any

__all__ = ["forward"]


class _Forward:
    """A descriptor: ``obj.<name>`` is ``getattr(obj, component).<name>`` (a bound method);
    on the class, ``<of>.<name>`` (the part's own function: its signature, its docstring)."""

    def __init__(self, component: str, of: type) -> None:
        self.component = component
        self.of = of
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        if obj is None:
            return getattr(self.of, self.name)
        return getattr(getattr(obj, self.component), self.name)

    def __repr__(self) -> str:
        return f"forward({self.component!r}).{self.name}"


def forward(component: str, of: type) -> Any:
    """Declare a method that calls the same-named method of ``self.<component>`` (an instance
    of ``of``) with the same arguments. Typed ``Any`` so that the role's abstract signature
    stays the one callers see; ``tests/catalog/test_backends.py`` checks that the part's
    method has the role's parameters."""
    return _Forward(component, of)
