"""Fixtures for the catalog suite: every behavioural test runs against SQLite (a temp file),
PostgreSQL (a fresh database per test on the session's private cluster) and the Hive 3.1.3
metastore (``hms``: the session's metastore, emptied before each test, with a SQLite side
catalog copied from the template). Tests of SQL-only behaviour use ``sql_only``. The
``hms-kerberos`` backend (the Kerberos-secured metastore, SASL/GSSAPI with a keytab login) is
not in :data:`BACKENDS`: ``test_kerberos_backend.py`` runs a representative part of the suite on
it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from acidflow.catalog import Catalog, Column, HiveMetastoreCatalog, SqlCatalog, TableDef

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    pytest.param("hms", id="hms", marks=pytest.mark.slow),
]


#: The metastore backends.
HMS = ("hms", "hms-kerberos")


def sql_only(reason: str) -> pytest.MarkDecorator:
    """Mark a test of SQL-backend specifics: its ``hms`` parameter is skipped with ``reason``."""
    return pytest.mark.sql_only(reason=reason)


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "sql_only(reason): SQL catalog backends only")


def pytest_collection_modifyitems(items) -> None:
    """Deselect-as-skip the ``hms`` parameter of ``sql_only`` tests (reason shown)."""
    for item in items:
        mark = item.get_closest_marker("sql_only")
        callspec = getattr(item, "callspec", None)
        if mark is not None and callspec is not None and callspec.params.get("backend") in HMS:
            item.add_marker(pytest.mark.skip(reason=f"SQL backends only: {mark.kwargs['reason']}"))


@pytest.fixture(scope="session")
def pg_catalog_db(postgres_url) -> str:
    """URL of one database migrated to head for the whole session; the ``catalog_url``
    fixture empties it before each test (much faster than a new database per test)."""
    from tests.support.postgres import create_database

    url = create_database(postgres_url, "catalog_tests")
    SqlCatalog(url, warehouse="/nonexistent").close()
    return url


def reset_catalog_db(url: str) -> None:
    """Empty every catalog table and restart the txn / lock id sequences (PostgreSQL)."""
    import sqlalchemy as sa

    from acidflow.catalog.sql import schema as models

    names = [
        t.name
        for t in reversed(models.Base.metadata.sorted_tables)
        if t.name not in ("next_txn_id", "next_lock_id")
    ]
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:  # DELETE beats TRUNCATE on tiny tables
            conn.exec_driver_sql("; ".join(f"DELETE FROM {n}" for n in names))
            conn.exec_driver_sql("UPDATE next_txn_id SET ntxn_next = 1")
            conn.exec_driver_sql("UPDATE next_lock_id SET nl_next = 1")
    finally:
        engine.dispose()


def fresh_pg_database(request) -> tuple[str, str, str]:
    """Create a new, empty, uniquely named database; returns (server url, name, db url)."""
    from tests.support.postgres import create_database

    base = request.getfixturevalue("postgres_url")
    name = f"t_{uuid.uuid4().hex[:16]}"
    return base, name, create_database(base, name)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """``"sqlite"`` or ``"postgresql"``."""
    return request.param


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    """A SQLite catalog file migrated to head once per session; tests get copies."""
    path = tmp_path_factory.mktemp("sqlite-template") / "catalog.db"
    SqlCatalog(f"sqlite:///{path}", warehouse="/nonexistent").close()  # checkpoints the WAL
    return path


@pytest.fixture
def catalog_url(backend, request, tmp_path):
    """URL of an empty catalog at head: a copy of the migrated SQLite template file, or the
    session's PostgreSQL catalog database, emptied. For ``hms`` the side catalog's URL (a
    template copy); the metastore is emptied too."""
    if backend == "hms":
        from tests.support.hms import reset_metastore

        reset_metastore(request.getfixturevalue("hive_metastore").url)
    if backend == "hms-kerberos":
        from tests.support.hms import reset_metastore

        secured = request.getfixturevalue("kerberos_metastore")
        reset_metastore(secured.url, secured.security())
    if backend in ("sqlite", *HMS):
        path = tmp_path / "catalog.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("pg_catalog_db")
    reset_catalog_db(url)
    yield url


@pytest.fixture
def empty_url(backend, request, tmp_path):
    """URL of a fresh, never migrated database."""
    if backend in ("sqlite", *HMS):
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    from tests.support.postgres import drop_database

    base, name, url = fresh_pg_database(request)
    yield url
    drop_database(base, name)


@pytest.fixture
def make_catalog(catalog_url, backend, request, tmp_path):
    """Factory of Catalog objects on the test's database (closed at teardown):
    ``SqlCatalog``, or ``HiveMetastoreCatalog`` on the session's metastore with the test's
    side catalog."""
    made: list[Catalog] = []
    hms_url = request.getfixturevalue("hive_metastore").url if backend == "hms" else None
    if backend == "hms-kerberos":
        secured = request.getfixturevalue("kerberos_metastore")
        hms_url = secured.url
        kwargs_security = {"security": secured.security(tmp_path / "krb5cc")}
    else:
        kwargs_security = {}

    def make(**kwargs) -> Catalog:
        kwargs.setdefault("warehouse", str(tmp_path / "warehouse"))
        if hms_url is not None:
            kwargs = {**kwargs_security, **kwargs}
            cat: Catalog = HiveMetastoreCatalog(hms_url, side_url=catalog_url, **kwargs)
        else:
            cat = SqlCatalog(catalog_url, **kwargs)
        made.append(cat)
        return cat

    yield make
    for cat in made:
        cat.close()


@pytest.fixture
def catalog(make_catalog) -> Catalog:
    """A migrated catalog with the default 300 s transaction timeout."""
    return make_catalog()


def sales_table(name: str = "sales.orders", **kwargs) -> TableDef:
    """A partitioned, bucketed table definition used across the suite."""
    kwargs.setdefault("partition_columns", [Column("ds", "string")])
    return TableDef(
        name=name,
        columns=[
            Column("id", "bigint"),
            Column("customer", "varchar(20)"),
            Column("amount", "decimal(10,2)"),
            Column("updated_at", "timestamp"),
        ],
        primary_key=["id"],
        ordering_column="updated_at",
        num_buckets=4,
        **kwargs,
    )


def plain_table(name: str = "default.events") -> TableDef:
    """An unpartitioned, unbucketed table."""
    return TableDef(name=name, columns=[Column("id", "int"), Column("payload", "string")])


@pytest.fixture
def tables(catalog) -> tuple[str, str]:
    """Creates ``sales.orders`` (partitioned by ds) and ``default.events``; returns names."""
    catalog.create_table(sales_table())
    catalog.create_table(plain_table())
    return "sales.orders", "default.events"
