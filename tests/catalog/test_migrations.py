"""Alembic migrations: fresh database at head, models == migrations, downgrade/upgrade."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from acidflow.catalog import SqlCatalog, alembic_config, head_revision
from acidflow.catalog.sql import schema as models
from tests.catalog.conftest import plain_table, sql_only

CATALOG_TABLES = set(models.Base.metadata.tables)


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


@sql_only("Alembic migrations of the SQL catalog (the side catalog runs the same)")
def test_fresh_database_is_migrated_to_head(empty_url, tmp_path):
    assert head_revision() == "0011"
    with SqlCatalog(empty_url, warehouse=str(tmp_path), migrate=False) as cat:
        assert cat.current_revision() is None
    with SqlCatalog(empty_url, warehouse=str(tmp_path)) as cat:
        assert cat.current_revision() == head_revision()
        assert _tables(empty_url) == CATALOG_TABLES | {models.VERSION_TABLE}
        txn = cat.open_transaction()
        assert txn == 1  # sequences seeded
        cat.create_table(plain_table())
        assert cat.acquire_lock(txn, "events", None, "shared_read") == 1


@sql_only("Alembic migrations of the SQL catalog (the side catalog runs the same)")
def test_models_match_migrations(empty_url, tmp_path):
    """The declarative models and the migration scripts describe the same schema."""
    with SqlCatalog(empty_url, warehouse=str(tmp_path)) as cat:
        with cat.engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn, opts={"compare_type": True, "version_table": models.VERSION_TABLE}
            )
            diffs = compare_metadata(ctx, models.Base.metadata)
    assert diffs == []


@sql_only("Alembic migrations of the SQL catalog (the side catalog runs the same)")
def test_downgrade_upgrade_round_trip(empty_url, tmp_path):
    with SqlCatalog(empty_url, warehouse=str(tmp_path)) as cat:
        cat.create_table(plain_table())
        cat.downgrade("base")
        assert cat.current_revision() is None
        assert _tables(empty_url) & CATALOG_TABLES == set()
        cat.upgrade()
        assert cat.current_revision() == head_revision()
        assert cat.list_tables() == []
        cat.create_table(plain_table())
        assert cat.open_transaction() == 1


def test_alembic_config_is_built_in_code():
    cfg = alembic_config(url="sqlite:///x%20y.db")
    assert cfg.config_file_name is None
    assert cfg.get_main_option("script_location").endswith("jobs/acidflow/catalog/sql/migrations")
    assert cfg.get_main_option("sqlalchemy.url") == "sqlite:///x%20y.db"


def test_offline_sql_generation(capsys):
    """``alembic upgrade --sql`` works from the in-code config (for DBAs)."""
    from alembic import command

    command.upgrade(alembic_config(url="postgresql+psycopg2://u@h/db"), "head", sql=True)
    sql = capsys.readouterr().out
    assert "CREATE TABLE txns" in sql and "acidflow_alembic_version" in sql
