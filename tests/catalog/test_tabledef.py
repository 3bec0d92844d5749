"""TableDef / Column / Hive type normalisation: pure, no database."""

from __future__ import annotations

import pytest
import yaml

from acidflow.catalog import Column, TableDef, normalize_hive_type, normalize_table_name
from tests.catalog.conftest import sales_table


@pytest.mark.parametrize(
    "given, expected",
    [
        ("INT", "int"),
        ("integer", "int"),
        ("String", "string"),
        ("VARCHAR(20)", "varchar(20)"),
        ("decimal( 10 , 2 )", "decimal(10,2)"),
        ("decimal", "decimal(10,0)"),
        ("decimal(12)", "decimal(12,0)"),
        ("numeric(5,1)", "decimal(5,1)"),
        ("double precision", "double"),
        ("timestamp", "timestamp"),
        ("date", "date"),
        ("array<STRING>", "array<string>"),
        ("map<string, array<int>>", "map<string,array<int>>"),
        ("struct<A:int, b : varchar(3)>", "struct<a:int,b:varchar(3)>"),
        ("uniontype<int,string>", "uniontype<int,string>"),
        ("char(1)", "char(1)"),
    ],
)
def test_hive_type_normalisation(given, expected):
    assert normalize_hive_type(given) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "foo",
        "varchar",
        "varchar(0)",
        "decimal(40,2)",
        "decimal(5,6)",
        "array<int",
        "array<int>>",
        "map<array<int>,int>",
        "struct<>",
        "int(3)x",
    ],
)
def test_bad_hive_types(bad):
    with pytest.raises(ValueError):
        normalize_hive_type(bad)


def test_table_name_normalisation():
    assert normalize_table_name("Sales") == "default.sales"
    assert normalize_table_name(" DB.T ") == "db.t"
    for bad in ("a.b.c", "", ".t", "db.", "db.t-1"):
        with pytest.raises(ValueError):
            normalize_table_name(bad)


def test_defaults_and_normalisation():
    t = TableDef(
        "Orders",
        [Column("ID", "BIGINT"), Column("Amt", "Decimal(10, 2)")],
        primary_key=["ID"],
        num_buckets=8,
    )
    assert t.name == "default.orders"
    assert (t.db_name, t.table_name) == ("default", "orders")
    assert t.column_names() == ["id", "amt"]
    assert t.hive_types() == ["bigint", "decimal(10,2)"]
    assert t.bucket_columns == ["id"]  # defaults to the primary key
    assert t.properties == {
        "transactional": "true",
        "transactional_properties": "default",
        "bucketing_version": "2",
    }
    t.validate()


def test_partition_columns_are_not_data_columns():
    t = sales_table()
    assert "ds" not in t.column_names()
    assert t.partition_column_names() == ["ds"]
    assert t.is_partitioned


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"primary_key": ["nope"]}, "unknown primary key"),
        ({"ordering_column": "nope"}, "unknown ordering column"),
        ({"bucket_columns": ["nope"], "num_buckets": 2}, "unknown bucket column"),
        ({"bucket_columns": ["id"]}, "num_buckets is 0"),
        ({"num_buckets": 2}, "needs bucket_columns"),
        ({"num_buckets": 5000, "primary_key": ["id"]}, "num_buckets"),
        ({"bucketing_version": 3}, "bucketing_version"),
        ({"properties": {"transactional": "false"}}, "transactional"),
        ({"properties": {"transactional_properties": "insert_only"}}, "transactional_properties"),
        ({"properties": {"bucketing_version": "1"}}, "disagrees"),
        ({"partition_columns": [Column("id", "int")]}, "duplicate column"),
        ({"partition_columns": [Column("p", "array<int>")]}, "primitive"),
        ({"columns": [Column("id", "int"), Column("x", "bogus")]}, "invalid Hive type"),
        ({"columns": []}, "at least one data column"),
        ({"columns": [Column("bad name", "int")]}, "invalid column name"),
    ],
)
def test_validate_rejects(kwargs, message):
    base = {"name": "db.t", "columns": [Column("id", "int"), Column("v", "string")]}
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        TableDef(**base).validate()


def test_primary_key_may_include_partition_columns():
    TableDef(
        "db.t",
        [Column("id", "int")],
        partition_columns=[Column("ds", "string")],
        primary_key=["ds", "id"],
    ).validate()


def test_yaml_round_trip():
    t = sales_table(properties={"no_auto_compaction": "true"})
    text = yaml.safe_dump(t.to_dict(), sort_keys=False)
    back = TableDef.from_dict(yaml.safe_load(text))
    assert back == t
    assert back.to_dict()["columns"][2] == {"name": "amount", "type": "decimal(10,2)"}


def test_from_dict_variants():
    t = TableDef.from_dict(
        {
            "name": "x",
            "columns": {"id": "INT", "name": "string"},
            "partition_columns": [{"name": "ds", "hive_type": "date"}],
            "properties": {"bucketing_version": 1},
        }
    )
    assert t.name == "default.x"
    assert t.columns == [Column("id", "int"), Column("name", "string")]
    assert t.partition_columns == [Column("ds", "date")]
    assert t.bucketing_version == 1 and t.properties["bucketing_version"] == "1"
    t.validate()
    with pytest.raises(ValueError, match="unknown table definition keys"):
        TableDef.from_dict({"name": "x", "columns": {"id": "int"}, "colums": []})
    with pytest.raises(ValueError, match="needs 'name' and 'columns'"):
        TableDef.from_dict({"name": "x"})


def test_default_bucket_columns_leave_out_partition_columns():
    t = TableDef(
        name="t",
        columns=[Column("id", "int")],
        partition_columns=[Column("ds", "string")],
        primary_key=["id", "ds"],
        num_buckets=4,
    )
    assert t.bucket_columns == ["id"]
    t.validate()
