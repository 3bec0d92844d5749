"""``Catalog.alter_schema`` / ``schema_history`` / ``schema_for`` / ``schema_at`` on every
backend (SQLite, PostgreSQL, a real Hive 3.1.3 metastore): a schema version is seen exactly when
its transaction commits, time travel gets the schema of its time, renames carry key, bucketing
and ordering columns along, and the metastore's positional type rule is applied -- by the SQL
catalog itself and, on ``hms``, by Hive's metastore, which agree (checked pair by pair)."""

from __future__ import annotations

import pytest

from acidflow.catalog import CatalogError, Column
from acidflow.format.schemaevolution import SchemaChangeError, metastore_compatible
from tests.catalog.conftest import plain_table, sales_table


def _types(cols):
    return [(c.name, c.hive_type) for c in cols]


def _change(catalog, name, columns, change):
    txn = catalog.open_transaction()
    wid = catalog.allocate_write_id(txn, name)
    catalog.alter_schema(txn, name, columns, change=change)
    return txn, wid


def test_a_version_is_seen_when_its_transaction_commits(catalog, tables):
    orders, _ = tables
    before = catalog.get_table(orders).columns
    writer = catalog.open_transaction()
    assert catalog.allocate_write_id(writer, orders) == 1
    catalog.commit_transaction(writer)
    new = [
        Column("id", "bigint"),
        Column("client", "varchar(20)", "who ordered"),
        Column("amount", "decimal(12,2)"),
        Column("updated_at", "timestamp"),
    ]
    txn, wid = _change(catalog, orders, new, {"op": "test", "renames": {"customer": "client"}})
    assert wid == 2
    # open: readers keep the old version; the version is recorded
    assert _types(catalog.schema_for(orders, catalog.valid_write_ids(orders))) == _types(before)
    hist = catalog.schema_history(orders)
    assert [v.write_id for v in hist] == [0, 2]
    assert _types(hist[0].columns) == _types(before) and hist[1].txn_id == txn
    assert hist[1].change["op"] == "test"
    catalog.commit_transaction(txn, {orders: {"operations": ["schema"]}})
    now = catalog.schema_for(orders, catalog.valid_write_ids(orders))
    assert _types(now) == _types(new) and now[1].comment == "who ordered"
    assert _types(catalog.schema_at(orders, 1)) == _types(before)
    assert _types(catalog.schema_at(orders, 2)) == _types(new)
    t = catalog.get_table(orders)
    assert t.columns[1].comment == "who ordered" and t.bucket_columns == ["id"]
    rec = catalog.commit_records(orders)[-1]
    assert rec.write_id == 2 and rec.stats["operations"] == ["schema"]


def test_renames_move_key_bucket_and_ordering_columns(catalog, tables):
    orders, _ = tables
    cols = [
        Column("oid", "bigint"),
        Column("customer", "varchar(20)"),
        Column("amount", "decimal(10,2)"),
        Column("changed_at", "timestamp"),
    ]
    txn, _ = _change(
        catalog,
        orders,
        cols,
        {"op": "rename", "renames": {"id": "oid", "updated_at": "changed_at"}},
    )
    catalog.commit_transaction(txn)
    t = catalog.get_table(orders)
    assert t.primary_key == ["oid"] and t.bucket_columns == ["oid"]
    assert t.ordering_column == "changed_at" and t.column_names()[0] == "oid"


def test_an_aborted_change_is_never_seen(catalog, tables):
    _, events = tables
    before = catalog.get_table(events).columns
    txn, _ = _change(
        catalog, events, [Column("id", "bigint"), Column("payload", "string")], {"op": "test"}
    )
    catalog.abort_transaction(txn, "test")
    assert _types(catalog.schema_for(events, catalog.valid_write_ids(events))) == _types(before)


def test_a_crashed_change_is_reverted_and_blocks_writers_until_then(catalog, tables):
    """A schema change whose writer died after ``alter_schema`` (its transaction aborted by
    the housekeeper) left its columns in the catalog: ``aborted_schema_change`` names it,
    ``revert_aborted_schema_change`` puts the committed columns (and renamed key and ordering
    columns) back in a recorded ``revert`` version, and a second call has nothing to do."""
    orders, _ = tables
    before = catalog.get_table(orders)
    cols = [Column("oid", "bigint")] + list(before.columns[1:])
    txn, wid = _change(catalog, orders, cols, {"op": "rename", "renames": {"id": "oid"}})
    assert catalog.aborted_schema_change(orders) is None  # still open
    catalog.abort_transaction(txn, "timed out")  # the housekeeper
    assert catalog.get_table(orders).column_names()[0] == "oid"  # what the crash left
    crashed = catalog.aborted_schema_change(orders)
    assert crashed is not None and crashed.write_id == wid and crashed.txn_id == txn
    assert catalog.revert_aborted_schema_change(orders).write_id == wid
    t = catalog.get_table(orders)
    assert _types(t.columns) == _types(before.columns) and t.primary_key == before.primary_key
    assert t.bucket_columns == before.bucket_columns
    assert catalog.aborted_schema_change(orders) is None
    assert catalog.revert_aborted_schema_change(orders) is None
    last = catalog.schema_history(orders)[-1]
    assert last.change["op"] == "revert" and last.change["of_write_id"] == wid
    assert catalog.commit_records(orders)[-1].stats["operations"] == ["schema"]
    assert _types(catalog.schema_for(orders, catalog.valid_write_ids(orders))) == _types(
        before.columns
    )


def test_two_changes_in_one_transaction_are_one_version(catalog, tables):
    _, events = tables
    txn, wid = _change(
        catalog, events, [Column("id", "bigint"), Column("payload", "string")], {"op": "a"}
    )
    catalog.alter_schema(
        txn, events, [Column("id", "bigint"), Column("body", "string")], change={"op": "b"}
    )
    catalog.commit_transaction(txn)
    hist = catalog.schema_history(events)
    assert [v.write_id for v in hist] == [0, wid]
    assert [s["op"] for s in hist[1].change["steps"]] == ["a", "b"]
    assert catalog.get_table(events).column_names() == ["id", "body"]


def test_alter_schema_needs_a_write_id_and_valid_columns(catalog, tables):
    orders, events = tables
    txn = catalog.open_transaction()
    with pytest.raises(CatalogError, match="no write id"):
        catalog.alter_schema(txn, events, [Column("id", "bigint")], change={"op": "x"})
    catalog.allocate_write_id(txn, events)
    with pytest.raises(SchemaChangeError, match="used twice"):
        catalog.alter_schema(
            txn, events, [Column("id", "int"), Column("id", "string")], change={"op": "x"}
        )
    with pytest.raises(SchemaChangeError, match="at least one"):
        catalog.alter_schema(txn, events, [], change={"op": "x"})
    catalog.allocate_write_id(txn, orders)
    with pytest.raises(SchemaChangeError, match="partition column"):
        catalog.alter_schema(
            txn, orders, [Column("id", "bigint"), Column("ds", "string")], change={"op": "x"}
        )
    catalog.abort_transaction(txn)
    assert catalog.schema_history(events) == [] and catalog.schema_history(orders) == []


def test_the_metastore_rule_refuses_before_anything_is_recorded(catalog, tables):
    """payload string -> int at position 1: the metastore's rule (the SQL catalog's own check,
    Hive's metastore itself on hms)."""
    _, events = tables
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, events)
    with pytest.raises(SchemaChangeError, match="refuses"):
        catalog.alter_schema(
            txn,
            events,
            [Column("id", "int"), Column("payload", "int")],
            change={"op": "change_type"},
        )
    catalog.abort_transaction(txn)
    assert catalog.get_table(events).hive_types() == ["int", "string"]
    assert catalog.schema_history(events) == []


@pytest.mark.parametrize("backend", ["hms"], indirect=True)
def test_hive_metastore_agrees_with_the_rule_and_cascades_to_partitions(catalog):
    """Each (old, new) pair is tried on the real metastore (``alter_table``) and compared with
    ``metastore_compatible``; an accepted change reaches the partitions (CASCADE)."""
    from pymetastore.hive_metastore.ttypes import InvalidOperationException

    pairs = [
        ("int", "bigint"),
        ("bigint", "int"),
        ("float", "double"),
        ("double", "float"),
        ("decimal(10,2)", "decimal(5,1)"),
        ("string", "int"),
        ("string", "double"),
        ("int", "string"),
        ("date", "timestamp"),
        ("boolean", "string"),
        ("varchar(10)", "varchar(3)"),
        ("array<int>", "array<string>"),
        ("array<int>", "map<int,int>"),
        ("timestamp", "string"),
    ]
    for i, (old, new) in enumerate(pairs):
        name = f"default.agree{i}"
        catalog.create_table({"name": name, "columns": [{"name": "c", "type": old}]})
        hms = catalog._hms_table("default", f"agree{i}")
        hms.sd.cols[0].type = new
        try:
            catalog.conn.call("alter_table", "default", f"agree{i}", hms)
            accepted = True
        except InvalidOperationException:
            accepted = False
        assert accepted is metastore_compatible(old, new), (old, new)

    t = catalog.create_table(sales_table("sales.cascade"))
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, t.name)
    catalog.add_component(txn, t.name, "ds=2024-01-01", "insert")
    catalog.commit_transaction(txn)
    cols = [
        Column("id", "bigint"),
        Column("who", "varchar(30)", "renamed"),
        Column("amount", "decimal(12,2)"),
        Column("updated_at", "timestamp"),
    ]
    txn, _ = _change(catalog, t.name, cols, {"op": "t", "renames": {"customer": "who"}})
    catalog.commit_transaction(txn)
    hms = catalog._hms_table("sales", "cascade")
    assert [(c.name, c.type, c.comment) for c in hms.sd.cols][1] == (
        "who",
        "varchar(30)",
        "renamed",
    )
    part = catalog.conn.call("get_partition", "sales", "cascade", ["2024-01-01"])
    assert [c.type for c in part.sd.cols] == ["bigint", "varchar(30)", "decimal(12,2)", "timestamp"]
    assert catalog.get_table(t.name).column_names()[1] == "who"


def test_drop_table_forgets_the_history(catalog):
    t = catalog.create_table(plain_table("default.gone"))
    txn, _ = _change(
        catalog, t.name, [Column("id", "bigint"), Column("payload", "string")], {"op": "t"}
    )
    catalog.commit_transaction(txn)
    catalog.drop_table(t.name)
    catalog.create_table(plain_table("default.gone"))
    assert catalog.schema_history("default.gone") == []


def test_a_rewrite_change_may_move_columns(catalog, tables):
    """A reorder whose positions the metastore's rule would refuse (varchar -> bigint at
    position 0) passes as a ``rewrite`` change (the data is rewritten in the new layout);
    without ``rewrite`` it is refused on every backend."""
    orders, _ = tables
    t = catalog.get_table(orders)
    moved = [t.columns[1], t.columns[0], t.columns[2], t.columns[3]]
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, orders)
    with pytest.raises(SchemaChangeError, match="refuses"):
        catalog.alter_schema(txn, orders, moved, change={"op": "reorder"})
    assert catalog.get_table(orders).column_names()[0] == "id"
    catalog.alter_schema(txn, orders, moved, change={"op": "reorder", "rewrite": True})
    catalog.commit_transaction(txn)
    assert catalog.get_table(orders).column_names() == ["customer", "id", "amount", "updated_at"]
