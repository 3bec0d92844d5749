"""``acidflow catalog init [--force]``: create or migrate the transaction catalog explicitly.

``acidflow.cli.app`` calls :func:`register` with its top-level app. Every other command
migrates the catalog on start-up too, but refuses a database that has tables and is not an
acidflow catalog (``ACIDFLOW_CATALOG_URL`` pointed at the wrong database); ``init --force``
is the deliberate way to add acidflow's tables to such a database. Prints the catalog id,
its URL (password masked) and the warehouse, and whether this catalog owns the warehouse.
"""

from __future__ import annotations

import typer

from acidflow.catalog import load_catalog
from acidflow.catalog.warehouse import read_marker
from acidflow.cli.console import console, emit_json
from acidflow.config import load_settings


def init_cmd(
    force: bool = typer.Option(
        False,
        "--force",
        help="also migrate a database that holds other tables and is not an acidflow catalog",
    ),
    as_json: bool = typer.Option(False, "--json", help="print a JSON line"),
) -> None:
    """Create or migrate the catalog at ACIDFLOW_CATALOG_URL and print its id."""
    settings = load_settings()
    cat = load_catalog(
        settings.catalog_url,
        warehouse=settings.warehouse,
        migrate=False,
        txn_timeout_s=settings.txn_timeout_s,
    )
    catalog_id = cat.initialize(force=force)
    owner = read_marker(cat.warehouse)
    info = {
        "catalog_id": catalog_id,
        "catalog_url": cat.display_url(),
        "revision": cat.current_revision(),
        "warehouse": cat.warehouse,
        "warehouse_owner": owner.get("catalog_id") if owner else None,
    }
    if as_json:
        emit_json(info)
        return
    console.print(
        f"catalog {info['catalog_id']} at {info['catalog_url']} (revision {info['revision']})"
    )
    if owner is None:
        console.print(f"warehouse {info['warehouse']}: no owner yet (the first write claims it)")
    elif owner.get("catalog_id") == catalog_id:
        console.print(f"warehouse {info['warehouse']}: owned by this catalog")
    else:
        console.print(
            f"[yellow]warehouse {info['warehouse']} is owned by another catalog "
            f"{owner.get('catalog_id')} ({owner.get('catalog_url')}): writes "
            "from this catalog will be refused[/]"
        )


def register(app: typer.Typer) -> None:
    """Add the ``catalog`` command group (``catalog init``) to ``app``."""
    catalog_app = typer.Typer(
        help="The transaction catalog: create / migrate it.", no_args_is_help=True
    )
    app.add_typer(catalog_app, name="catalog")
    catalog_app.command("init")(init_cmd)
