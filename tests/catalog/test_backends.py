"""The catalog interface: ``Catalog`` is abstract, ``SqlCatalog`` and ``HiveMetastoreCatalog``
implement all of it, and ``load_catalog`` / ``Catalog.from_settings`` pick the backend by URL."""

from __future__ import annotations

import inspect
import socket

import pytest

from acidflow.catalog import Catalog, HiveMetastoreCatalog, SqlCatalog, load_catalog
from acidflow.catalog.base import url_scheme
from acidflow.catalog.hms.client import MetastoreUnreachableError
from acidflow.config import load_settings
from tests.catalog.conftest import plain_table


def test_catalog_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        Catalog()  # type: ignore[abstract]
    assert len(Catalog.__abstractmethods__) > 40


@pytest.mark.parametrize("cls", [SqlCatalog, HiveMetastoreCatalog])
def test_backends_implement_every_abstract_method(cls):
    assert not inspect.isabstract(cls)
    assert cls.__abstractmethods__ == frozenset()
    for name in Catalog.__abstractmethods__:
        impl = getattr(cls, name)
        assert impl is not getattr(Catalog, name), name
        # same parameters as the interface (names, kinds, defaults)
        assert (
            inspect.signature(impl).parameters.keys()
            == inspect.signature(getattr(Catalog, name)).parameters.keys()
        ), name


def test_load_catalog_picks_sql_for_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with load_catalog(url, warehouse=str(tmp_path / "wh"), txn_timeout_s=42) as cat:
        assert isinstance(cat, SqlCatalog) and isinstance(cat, Catalog)
        assert cat.is_sqlite and cat.txn_timeout_s == 42
        assert cat.warehouse == str(tmp_path / "wh")
        assert cat.create_table(plain_table()).location == f"{tmp_path / 'wh'}/default.db/events"


def test_load_catalog_without_migrate_leaves_database_empty(tmp_path):
    with load_catalog(
        f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path), migrate=False
    ) as cat:
        assert cat.current_revision() is None


@pytest.mark.parametrize("scheme", ["thrift", "THRIFT"])
def test_load_catalog_routes_thrift_to_the_metastore(scheme, tmp_path):
    """thrift:// is the Hive metastore backend: its constructor connects, so a metastore
    nobody answers for is refused with the URL before anything is written."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    dead = sock.getsockname()[1]
    sock.close()
    with pytest.raises(MetastoreUnreachableError, match=f"thrift://127.0.0.1:{dead}"):
        load_catalog(f"{scheme}://127.0.0.1:{dead}", warehouse=str(tmp_path / "wh"))
    assert not (tmp_path / "wh").exists()


def test_load_catalog_and_from_settings_use_settings(warehouse):
    with load_catalog() as cat:
        assert isinstance(cat, SqlCatalog)
        assert cat.warehouse == load_settings().warehouse
        assert cat.url.database == str(warehouse / "_acidflow_catalog.db")
    with Catalog.from_settings(migrate=False) as cat:
        assert isinstance(cat, SqlCatalog)
        assert cat.txn_timeout_s == load_settings().txn_timeout_s


def test_url_scheme():
    assert url_scheme("postgresql+psycopg2://u@h/db") == "postgresql"
    assert url_scheme("sqlite:///x.db") == "sqlite"
    assert url_scheme("thrift://h:9083") == "thrift"
    assert url_scheme("nonsense") == ""
