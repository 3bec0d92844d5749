"""Schema evolution rules (``acidflow.format.schemaevolution``): the metastore's type-change rule
(Hive 3.1 ``ColumnType.areColTypesCompatible`` on ``getTypeName``) and acidflow's stricter
widening rule. ``tests/catalog/test_schema_history.py`` checks the first against a real Hive
3.1.3 metastore."""

from __future__ import annotations

import pytest

from acidflow.catalog.schemahistory import SchemaVersion, renames_of, rewrites
from acidflow.format.schemaevolution import (
    SchemaChangeError,
    check_type_change,
    metastore_compatible,
    type_change_problem,
)

# (old, new, metastore accepts) -- Hive 3.1.3's ColumnType, read from its class file
METASTORE = [
    ("int", "int", True),
    ("tinyint", "smallint", True),
    ("smallint", "int", True),
    ("int", "bigint", True),
    ("bigint", "decimal(38,0)", True),
    ("decimal(10,2)", "float", True),
    ("float", "double", True),
    ("int", "double", True),
    ("bigint", "int", False),
    ("double", "float", False),
    ("decimal(10,2)", "int", False),
    ("decimal(10,2)", "decimal(5,1)", True),  # same type name: the metastore lets it pass
    ("varchar(10)", "varchar(5)", True),
    ("string", "varchar(3)", True),
    ("char(3)", "string", True),
    ("string", "double", True),
    ("string", "int", False),
    ("int", "string", True),
    ("date", "string", True),
    ("timestamp", "varchar(30)", True),
    ("date", "timestamp", False),
    ("boolean", "string", False),
    ("boolean", "int", False),
    ("binary", "string", False),
    ("string", "binary", False),
    ("array<int>", "array<bigint>", True),
    ("array<int>", "map<int,int>", False),
    ("int", "array<int>", False),
]


@pytest.mark.parametrize("old,new,accepted", METASTORE)
def test_metastore_rule(old, new, accepted):
    assert metastore_compatible(old, new) is accepted


WIDENINGS = [
    ("tinyint", "smallint"),
    ("tinyint", "bigint"),
    ("smallint", "int"),
    ("int", "bigint"),
    ("int", "double"),
    ("smallint", "float"),
    ("float", "double"),
    ("int", "decimal(10,0)"),
    ("smallint", "decimal(7,2)"),
    ("decimal(8,2)", "decimal(12,2)"),
    ("decimal(8,2)", "decimal(10,4)"),
    ("varchar(10)", "varchar(20)"),
    ("varchar(10)", "string"),
    ("char(4)", "string"),
    ("char(4)", "varchar(4)"),
    ("int", "string"),
    ("bigint", "string"),
    ("date", "string"),
    ("int", "int"),
]


@pytest.mark.parametrize("old,new", WIDENINGS)
def test_widenings_are_allowed(old, new):
    assert type_change_problem(old, new) is None
    assert metastore_compatible(old, new)


REFUSED = [
    ("bigint", "int", "narrowing"),
    ("double", "float", "narrowing"),
    ("decimal(10,2)", "decimal(10,1)", "scale"),
    ("decimal(10,2)", "decimal(9,2)", "integer digits"),
    ("int", "decimal(9,0)", "integer digits"),
    ("varchar(10)", "varchar(5)", "truncate"),
    ("string", "varchar(100)", "truncate"),
    ("string", "char(10)", "pad or truncate"),
    ("string", "double", "NULL"),
    ("string", "int", "metastore"),
    ("int", "varchar(20)", "use string"),
    ("double", "string", "text forms"),
    ("timestamp", "string", "text forms"),
    ("decimal(10,2)", "string", "text forms"),
    ("date", "timestamp", "metastore"),
    ("boolean", "int", "metastore"),
    ("bigint", "double", "2^53"),
    ("int", "float", "2^24"),
    ("decimal(8,2)", "double", "rounds"),
    ("array<int>", "array<bigint>", "complex"),
    ("struct<a:int>", "struct<a:int,b:int>", "complex"),
]


@pytest.mark.parametrize("old,new,why", REFUSED)
def test_narrowing_and_incompatible_changes_are_refused(old, new, why):
    problem = type_change_problem(old, new)
    assert problem is not None and why in problem
    with pytest.raises(SchemaChangeError) as exc:
        check_type_change("db.t", "c", old, new)
    text = str(exc.value)
    assert "db.t" in text and "column c" in text and old in text and why in text


def test_bucket_column_type_never_changes():
    assert check_type_change("db.t", "id", "int", "bigint") == "bigint"
    with pytest.raises(SchemaChangeError, match="bucketing"):
        check_type_change("db.t", "id", "int", "bigint", bucket_column=True)
    # an unchanged type is not a change
    assert check_type_change("db.t", "id", "int", "INT", bucket_column=True) == "int"


def test_unparsable_type_is_a_schema_change_error():
    with pytest.raises(SchemaChangeError, match="db.t.*column c"):
        check_type_change("db.t", "c", "int", "bigintt")


def test_float_to_double_reads_as_hive_converts_it():
    """Hive's ORC reader widens a float through its shortest decimal text."""
    import pyarrow as pa

    from acidflow.format.schemaevolution import read_as

    col = pa.array([0.1, 1 / 3, None, 16777216.0, float("inf")], pa.float32())
    assert read_as(col, pa.float64()).to_pylist() == [
        0.1,
        0.33333334,
        None,
        16777216.0,
        float("inf"),
    ]
    assert read_as(pa.array([1, None], pa.int32()), pa.int64()).type == pa.int64()
    assert read_as(pa.array([7], pa.int32()), pa.string()).to_pylist() == ["7"]


def test_renames_compose_over_the_steps_of_one_version():
    one = SchemaVersion("db.t", 3, 7, change={"op": "rename_column", "renames": {"a": "b"}})
    many = SchemaVersion(
        "db.t",
        4,
        8,
        change={
            "op": "multiple",
            "steps": [
                {"op": "rename_column", "renames": {"a": "b"}},
                {"op": "rename_column", "renames": {"b": "c", "x": "y"}},
                {"op": "drop_columns", "rewrite": True},
            ],
        },
    )
    assert renames_of(one) == {"a": "b"} and not rewrites(one)
    assert renames_of(many) == {"a": "c", "x": "y"} and rewrites(many)
    revert = SchemaVersion("db.t", 5, 9, change={"op": "revert", "rewrite": True})
    assert not rewrites(revert)
