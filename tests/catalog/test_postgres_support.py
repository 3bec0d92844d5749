"""The private PostgreSQL helper (tests/support/postgres.py) and the postgres_url fixture."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from tests.support import postgres

pytestmark = pytest.mark.postgres


def test_session_cluster(postgres_url):
    assert re.fullmatch(r"postgresql\+psycopg2://postgres@127\.0\.0\.1:\d+/acidflow", postgres_url)
    engine = sa.create_engine(postgres_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW wal_level").scalar() == "logical"
            assert conn.exec_driver_sql("SHOW server_version").scalar().startswith("15")
            assert conn.exec_driver_sql("SHOW listen_addresses").scalar() == "127.0.0.1"
    finally:
        engine.dispose()


def test_create_and_drop_database(postgres_url):
    url = postgres.create_database(postgres_url, "helper_check")
    assert url.endswith("/helper_check")
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_database()").scalar() == "helper_check"
    finally:
        engine.dispose()
    postgres.drop_database(postgres_url, "helper_check")
    postgres.drop_database(postgres_url, "helper_check")  # IF EXISTS


def test_conf_value_quoting():
    assert postgres._conf_value("logical") == "'logical'"
    assert postgres._conf_value(4) == "4"
    assert postgres._conf_value(True) == "on"
    assert postgres._conf_value("a'b") == "'a''b'"


def test_unavailable_reason_names_missing_binaries(monkeypatch, tmp_path):
    monkeypatch.setenv("ACIDFLOW_PG_BINDIR", str(tmp_path))
    reason = postgres.unavailable_reason()
    assert reason and "initdb" in reason
    with pytest.raises(pytest.skip.Exception, match="not found"):
        postgres.require_postgres()
