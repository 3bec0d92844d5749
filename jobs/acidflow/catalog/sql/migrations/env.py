"""Alembic environment of the acidflow catalog.

Run programmatically (no alembic.ini): :func:`acidflow.catalog.sql.db.alembic_config` builds the
``Config`` with ``script_location`` = this directory and either puts an open SQLAlchemy
``Connection`` in ``config.attributes["connection"]`` (the normal path: the catalog runs the
upgrade inside its own serialised transaction) or sets ``sqlalchemy.url``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import context

from acidflow.catalog.sql.schema import VERSION_TABLE, Base

config = context.config
target_metadata = Base.metadata


def _configure(**kwargs: Any) -> None:
    context.configure(
        target_metadata=target_metadata,
        version_table=VERSION_TABLE,
        render_as_batch=True,  # SQLite ALTERs in later migrations
        compare_type=True,
        **kwargs,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade --sql``)."""
    _configure(url=config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run against a connection from the caller or a new engine from ``sqlalchemy.url``."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("alembic config has neither a connection nor sqlalchemy.url")
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            _configure(connection=conn)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
