"""Table metadata: create / get / list / drop / properties / add columns (both backends)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from acidflow.catalog import (
    Catalog,
    CatalogError,
    Column,
    NoSuchTableError,
    SqlCatalog,
    TableDef,
    TableExistsError,
)
from tests.catalog.conftest import plain_table, sales_table, sql_only


def test_create_and_get(catalog, tmp_path):
    created = catalog.create_table(sales_table())
    assert created.table_id is not None
    assert isinstance(created.created_at, datetime) and created.created_at.tzinfo == timezone.utc
    assert created.location == f"{tmp_path / 'warehouse'}/sales.db/orders"
    got = catalog.get_table("sales.orders")
    assert got == created
    assert got.column_names() == ["id", "customer", "amount", "updated_at"]
    assert got.hive_types() == ["bigint", "varchar(20)", "decimal(10,2)", "timestamp"]
    assert got.partition_columns == [Column("ds", "string")]
    assert got.primary_key == ["id"] and got.bucket_columns == ["id"]
    assert got.num_buckets == 4 and got.bucketing_version == 2
    assert got.ordering_column == "updated_at"
    assert got.properties["transactional"] == "true"
    assert got.properties["transactional_properties"] == "default"
    assert got.properties["bucketing_version"] == "2"


def test_name_normalisation(catalog):
    catalog.create_table(TableDef("Events", [Column("ID", "Int")]))
    for name in ("events", "EVENTS", "default.events", "Default.Events"):
        assert catalog.get_table(name).name == "default.events"
    assert catalog.table_exists("events") and not catalog.table_exists("other")


@sql_only(
    "the metastore creates the table directory and has no s3 file system here "
    "(test_explicit_local_location_kept covers a location outside the warehouse)"
)
def test_explicit_location_kept(catalog):
    """An explicit location outside the warehouse is kept when the table is external
    (such a location requires ``external``)."""
    t = plain_table()
    t.location = "s3://bucket/somewhere/events"
    t.external = True
    created = catalog.create_table(t)
    assert created.location == "s3://bucket/somewhere/events"
    assert created.external and created.properties["acidflow.external"] == "true"


def test_explicit_local_location_kept(catalog, tmp_path):
    """An external table's local location outside the warehouse is kept as given."""
    t = plain_table()
    t.location = str(tmp_path / "elsewhere" / "events")
    t.external = True
    created = catalog.create_table(t)
    assert created.location == str(tmp_path / "elsewhere" / "events")
    assert created.external and catalog.get_table("default.events").location == created.location


def test_duplicate_and_if_not_exists(catalog):
    first = catalog.create_table(plain_table())
    with pytest.raises(TableExistsError, match="default.events"):
        catalog.create_table(plain_table())
    other = TableDef("default.events", [Column("x", "string")])
    assert catalog.create_table(other, if_not_exists=True) == first


def test_invalid_definition_rejected(catalog):
    with pytest.raises(ValueError, match="unknown primary key"):
        catalog.create_table(TableDef("t", [Column("a", "int")], primary_key=["b"]))
    assert catalog.list_tables() == []


def test_list_tables_sorted(catalog):
    for name in ("zeta.t", "alpha.b", "alpha.a"):
        catalog.create_table(plain_table(name))
    assert [t.name for t in catalog.list_tables()] == ["alpha.a", "alpha.b", "zeta.t"]
    assert [t.name for t in catalog.list_tables("alpha")] == ["alpha.a", "alpha.b"]


def test_missing_table(catalog):
    with pytest.raises(NoSuchTableError, match="default.nope"):
        catalog.get_table("nope")
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("nope")
    catalog.drop_table("nope", if_exists=True)
    with pytest.raises(NoSuchTableError):
        catalog.valid_write_ids("nope")


def test_drop_removes_everything_and_recreate_restarts_write_ids(catalog, tables):
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, "default.events") == 1
    catalog.add_component(txn, "default.events", None, "insert")
    catalog.commit_transaction(txn)
    catalog.drop_table("default.events")
    with pytest.raises(NoSuchTableError):
        catalog.get_table("default.events")
    assert [t.name for t in catalog.list_tables()] == ["sales.orders"]
    catalog.create_table(plain_table())
    assert catalog.commit_records("default.events") == []
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, "default.events") == 1


def test_drop_refused_while_an_open_txn_writes_it(catalog, tables):
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, "default.events")
    with pytest.raises(CatalogError, match=rf"open transactions \[{txn}\]"):
        catalog.drop_table("default.events")
    catalog.abort_transaction(txn)
    catalog.drop_table("default.events")


def test_set_table_properties(catalog, tables):
    t = catalog.set_table_properties("sales.orders", {"no_auto_compaction": "true", "comment": 42})
    assert t.properties["no_auto_compaction"] == "true"
    assert t.properties["comment"] == "42"
    t = catalog.set_table_properties("sales.orders", {"comment": "replaced"})
    assert t.properties["comment"] == "replaced"
    assert catalog.get_table("sales.orders").properties["no_auto_compaction"] == "true"
    # unchanged fixed values are accepted, changes are not
    catalog.set_table_properties("sales.orders", {"transactional": "true"})
    for bad in (
        {"transactional": "false"},
        {"transactional_properties": "insert_only"},
        {"bucketing_version": "1"},
    ):
        with pytest.raises(ValueError):
            catalog.set_table_properties("sales.orders", bad)
    with pytest.raises(NoSuchTableError):
        catalog.set_table_properties("nope", {"a": "b"})


def test_add_columns_appends(catalog, tables):
    t = catalog.add_columns("sales.orders", [Column("Note", "STRING"), Column("qty", "int")])
    assert t.column_names() == ["id", "customer", "amount", "updated_at", "note", "qty"]
    assert t.hive_types()[-2:] == ["string", "int"]
    assert catalog.get_table("sales.orders") == t
    with pytest.raises(ValueError, match="already exists"):
        catalog.add_columns("sales.orders", [Column("id", "int")])
    with pytest.raises(ValueError, match="already exists"):
        catalog.add_columns("sales.orders", [Column("ds", "string")])  # partition column
    with pytest.raises(ValueError):
        catalog.add_columns("sales.orders", [Column("x", "nonsense")])
    assert catalog.get_table("sales.orders").column_names()[-1] == "qty"


def test_set_primary_key_replaces_the_key(catalog, tables):
    """The catalog can give a table the primary key its source added later (SQLite and PostgreSQL
    backends); bucketing is unchanged."""
    before = catalog.get_table("sales.orders")
    t = catalog.set_primary_key("sales.orders", ["ID", "customer"])
    assert t.primary_key == ["id", "customer"] and catalog.get_table("sales.orders") == t
    assert (t.bucket_columns, t.num_buckets) == (before.bucket_columns, before.num_buckets)
    assert catalog.set_primary_key("sales.orders", ["id"]).primary_key == ["id"]
    with pytest.raises(ValueError, match="sales.orders: unknown primary key column"):
        catalog.set_primary_key("sales.orders", ["nope"])
    with pytest.raises(ValueError, match="repeated"):
        catalog.set_primary_key("sales.orders", ["id", "id"])
    with pytest.raises(NoSuchTableError):
        catalog.set_primary_key("sales.nope", ["id"])
    assert catalog.get_table("sales.orders").primary_key == ["id"]


def test_from_settings_uses_warehouse_sqlite(warehouse):
    cat = Catalog.from_settings()
    try:
        assert cat.is_sqlite
        assert cat.url.database == str(warehouse / "_acidflow_catalog.db")
        assert cat.create_table(plain_table()).location == f"{warehouse}/default.db/events"
        assert (warehouse / "_acidflow_catalog.db").exists()
    finally:
        cat.close()


def test_sqlite_pragmas(tmp_path):
    cat = SqlCatalog(f"sqlite:///{tmp_path / 'sub' / 'dir' / 'c.db'}", warehouse=str(tmp_path))
    try:
        with cat.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    finally:
        cat.close()
