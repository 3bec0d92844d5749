"""The one context object every ``acidflow`` command receives.

A command takes ``ctx: typer.Context`` as its first parameter and calls :func:`cli_context` to get
the :class:`CliContext` of the invocation: the catalog (opened once, on first use, from
``ACIDFLOW_CATALOG_URL`` / ``ACIDFLOW_WAREHOUSE`` through :meth:`Catalog.from_settings`, and
closed when the command ends, whatever its exit) and the output conventions of
:mod:`acidflow.cli.console`. Commands are plain module-level functions; each command module's
``register`` only attaches them to the app, so a test can mount one command on its own app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

import typer

from acidflow.catalog import Catalog


@dataclass
class CliContext:
    """What an ``acidflow`` command needs beyond its own options.

    Attributes:
        catalog_factory: opens the configured catalog; default :meth:`Catalog.from_settings`
            (``ACIDFLOW_CATALOG_URL``, ``ACIDFLOW_WAREHOUSE``, ``ACIDFLOW_TXN_TIMEOUT_S``).
    """

    catalog_factory: Callable[[], Catalog] = field(default=Catalog.from_settings)
    _catalog: Optional[Catalog] = field(default=None, init=False, repr=False)

    def catalog(self) -> Catalog:
        """The invocation's catalog, opened on first use (later calls return the same one).

        Raises:
            acidflow.catalog.errors.CatalogError: the catalog cannot be opened or migrated
                (wrong URL, a database that is not an acidflow catalog, a newer revision).
        """
        if self._catalog is None:
            self._catalog = self.catalog_factory()
        return self._catalog

    def close(self) -> None:
        """Close the catalog if it was opened (its pool and heartbeat threads)."""
        if self._catalog is not None:
            cat, self._catalog = self._catalog, None
            cat.close()


def cli_context(ctx: typer.Context) -> CliContext:
    """The :class:`CliContext` of this invocation: the one a parent command set in ``ctx.obj``,
    or a new default one, set on the root context and closed when the root context closes."""
    found = ctx.find_object(CliContext)
    if found is not None:
        return found
    made = CliContext()
    root = ctx.find_root()
    root.obj = made
    root.call_on_close(made.close)
    return made
