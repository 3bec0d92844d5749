"""The SQL backend of the transaction catalog: :class:`SqlCatalog` on SQLAlchemy (SQLite file by
default, PostgreSQL for shared deployments), one module per idea:

``db`` (engine, retries, Alembic migrations), ``schema`` (the tables), ``shared`` (row primitives
shared by the parts), ``tables``, ``txns``, ``writeids``, ``locks``, ``batches``,
``compactions``, ``readers``, and ``catalog`` (``SqlCatalog`` wiring them together).
"""

from acidflow.catalog.sql.catalog import SqlCatalog
from acidflow.catalog.sql.db import Database, alembic_config, head_revision

__all__ = ["SqlCatalog", "Database", "alembic_config", "head_revision"]
