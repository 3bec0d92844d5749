"""Methods a catalog backend takes from one of its parts unchanged, without a hand-written body.

``SqlCatalog`` is wired from one part per idea (``sql/tables.py``, ``sql/txns.py`` ...) and the
Hive Metastore catalog reuses its side catalog for the roles the metastore does not hold
(batches, compactions, readers, locks): a role method whose whole body would be "call the
same-named method of that part with the same arguments" is declared with :func:`forward`.
The contract and its docstring stay on the role (``acidflow.catalog.api``): the part's method
has none (or a one-line backend note), and ``inspect.getdoc`` / ``help()`` of the backend's
method find the role's.

Example::

    class SqlCatalog(Catalog):
        get_table = forward("_tables", SqlTables)   # self._tables.get_table(n)
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["forward"]


class _Forward:
    """A descriptor: ``obj.<name>`` is ``getattr(obj, component).<name>`` (a bound method);
    on the class, ``<owner>.<name>`` is a function of the owner that calls ``<of>.<name>``
    (``__wrapped__``: the part's function, whose signature ``inspect.signature`` shows), so
    that ``inspect.getdoc`` walks the owner's classes to the role's docstring when the part's
    function has none."""

    def __init__(self, component: str, of: type) -> None:
        self.component = component
        self.of = of
        self.name = ""
        self.owner: type | None = None
        self._on_class: Any = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner = owner
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        if obj is None:
            return self._class_function()
        return getattr(getattr(obj, self.component), self.name)

    def _class_function(self) -> Any:
        """The owner's function for this name (made once, so ``inspect`` finds it again)."""
        if self._on_class is None:
            part = getattr(self.of, self.name)

            @functools.wraps(part)
            def method(*args: Any, **kwargs: Any) -> Any:
                return part(*args, **kwargs)

            if self.owner is not None:
                method.__module__ = self.owner.__module__
                method.__qualname__ = f"{self.owner.__qualname__}.{self.name}"
            self._on_class = method
        return self._on_class

    def __repr__(self) -> str:
        return f"forward({self.component!r}).{self.name}"


def forward(component: str, of: type) -> Any:
    """Declare a method that calls the same-named method of ``self.<component>`` (an instance
    of ``of``) with the same arguments. Typed ``Any`` so that the role's abstract signature
    stays the one callers see; ``tests/catalog/test_backends.py`` checks that the part's
    method has the role's parameters."""
    return _Forward(component, of)
