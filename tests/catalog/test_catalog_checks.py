"""The catalog database is checked - a foreign database is refused (unless
``acidflow catalog init --force``), and read-only, locked, corrupt and unopenable databases each
give one clear line naming the URL with its password masked. Real SQLite files and the test
session's PostgreSQL server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
import sqlalchemy as sa

from acidflow.catalog import SqlCatalog, head_revision, load_catalog
from acidflow.catalog.errors import CatalogDatabaseError, CatalogError, ForeignDatabaseError
from acidflow.catalog.sql import db as dbmod
from tests.catalog.conftest import plain_table


def _foreign_sqlite(path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    con.execute("INSERT INTO invoices VALUES (1, 9.5)")
    con.commit()
    con.close()


def _sqlite_tables(path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()


def test_foreign_sqlite_database_is_refused(tmp_path):
    """Pointing the catalog URL at another application's SQLite file is refused with the URL named,
    and nothing is added to that file."""
    path = tmp_path / "billing.db"
    _foreign_sqlite(path)
    with pytest.raises(ForeignDatabaseError) as exc:
        SqlCatalog(f"sqlite:///{path}", warehouse=str(tmp_path / "wh"))
    assert f"sqlite:///{path}" in str(exc.value) and "invoices" in str(exc.value)
    assert "acidflow catalog init --force" in str(exc.value)
    assert _sqlite_tables(path) == {"invoices"}


def test_catalog_init_force_migrates_a_foreign_database(tmp_path):
    """``acidflow catalog init --force`` deliberately adds the catalog to a foreign database and
    prints the catalog id; without --force it fails with the URL."""
    path = tmp_path / "billing.db"
    _foreign_sqlite(path)
    env = {
        **os.environ,
        "ACIDFLOW_CATALOG_URL": f"sqlite:///{path}",
        "ACIDFLOW_WAREHOUSE": str(tmp_path / "wh"),
        "COLUMNS": "400",
    }
    run = [sys.executable, "-m", "acidflow.cli", "catalog", "init", "--json"]
    refused = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1
    assert "not an acidflow catalog" in refused.stderr + refused.stdout
    assert str(path) in refused.stderr + refused.stdout
    done = subprocess.run(run + ["--force"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["revision"] == head_revision()
    assert "invoices" in _sqlite_tables(path) and "txns" in _sqlite_tables(path)
    with SqlCatalog(f"sqlite:///{path}", warehouse=str(tmp_path / "wh")) as cat:
        assert cat.catalog_id() == info["catalog_id"]  # stable
        cat.create_table(plain_table())


def test_catalog_init_prints_the_id_of_a_new_catalog(tmp_path):
    env = {
        **os.environ,
        "ACIDFLOW_CATALOG_URL": f"sqlite:///{tmp_path / 'c.db'}",
        "ACIDFLOW_WAREHOUSE": str(tmp_path / "wh"),
        "COLUMNS": "400",
    }
    done = subprocess.run(
        [sys.executable, "-m", "acidflow.cli", "catalog", "init"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with SqlCatalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh")) as cat:
        assert cat.catalog_id() in done.stdout.replace("\n", "")


def test_unknown_revision_is_refused(tmp_path):
    """An ``acidflow_alembic_version`` naming a revision acidflow does not know is not taken for a
    catalog."""
    path = tmp_path / "odd.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE acidflow_alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
    con.execute("INSERT INTO acidflow_alembic_version VALUES ('9999')")
    con.commit()
    con.close()
    with pytest.raises(ForeignDatabaseError, match="9999"):
        SqlCatalog(f"sqlite:///{path}", warehouse=str(tmp_path / "wh"))


def test_corrupt_sqlite_file(tmp_path):
    """Random bytes instead of a database: one line naming the URL."""
    path = tmp_path / "catalog.db"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(CatalogDatabaseError) as exc:
        SqlCatalog(f"sqlite:///{path}", warehouse=str(tmp_path / "wh"))
    assert exc.value.problem == "corrupt"
    assert f"sqlite:///{path}" in str(exc.value) and "\n" not in str(exc.value)


def test_read_only_sqlite_database(tmp_path, sqlite_template):
    """A read-only catalog (SQLite URI ``mode=ro`` - chmod does not stop root, which the tests may
    run as) reads, and a write fails with one line naming the URL and saying it is read-only."""
    path = tmp_path / "catalog.db"
    path.write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    with SqlCatalog(url, warehouse=str(tmp_path / "wh")) as cat:
        assert cat.current_revision() == head_revision()
        assert cat.list_tables() == []
        with pytest.raises(CatalogDatabaseError) as exc:
            cat.open_transaction()
    assert exc.value.problem == "read-only"
    assert str(path) in str(exc.value) and "read-only" in str(exc.value)


def test_locked_sqlite_database(tmp_path, sqlite_template, monkeypatch):
    """A catalog held locked by another process beyond the busy timeout (shortened here) gives one
    line naming the URL and the lock."""
    monkeypatch.setattr(dbmod, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    path = tmp_path / "catalog.db"
    path.write_bytes(sqlite_template.read_bytes())
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with SqlCatalog(f"sqlite:///{path}", warehouse=str(tmp_path / "wh"), migrate=False) as cat:
            with pytest.raises(CatalogDatabaseError) as exc:
                cat.open_transaction()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert exc.value.problem == "locked"
    assert f"sqlite:///{path}" in str(exc.value) and "locked" in str(exc.value)


def test_catalog_directory_cannot_be_created(tmp_path):
    """The catalog file's directory cannot exist (a file is in the way): a clear line naming the
    URL, not a raw OSError."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    url = f"sqlite:///{blocker / 'sub' / 'catalog.db'}"
    with pytest.raises(CatalogDatabaseError) as exc:
        SqlCatalog(url, warehouse=str(tmp_path / "wh"))
    assert exc.value.problem == "cannot-open" and url in str(exc.value)


def test_password_is_masked_in_connection_errors(tmp_path):
    """An unreachable PostgreSQL catalog names the URL with the password masked."""
    url = "postgresql+psycopg2://acid:s3cr3t-pw@127.0.0.1:1/catalog"
    with pytest.raises(CatalogError) as exc:
        load_catalog(url, warehouse=str(tmp_path / "wh"))
    assert "s3cr3t-pw" not in str(exc.value)
    assert "postgresql+psycopg2://acid:***@127.0.0.1:1/catalog" in str(exc.value)


@pytest.mark.postgres
def test_foreign_postgres_database_is_refused(request, tmp_path):
    """On PostgreSQL, a database with another application's tables is refused (URL named),
    ``initialize(force=True)`` migrates it."""
    from tests.catalog.conftest import fresh_pg_database
    from tests.support.postgres import drop_database

    base, name, url = fresh_pg_database(request)
    try:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE invoices (id int primary key)")
        engine.dispose()
        with pytest.raises(ForeignDatabaseError) as exc:
            SqlCatalog(url, warehouse=str(tmp_path / "wh"))
        assert name in str(exc.value) and "invoices" in str(exc.value)
        with SqlCatalog(url, warehouse=str(tmp_path / "wh"), migrate=False) as cat:
            assert cat.current_revision() is None
            cid = cat.initialize(force=True)
            assert cat.current_revision() == head_revision() and cid == cat.catalog_id()
    finally:
        drop_database(base, name)
