"""``acidflow.tableops.ddl`` (pure): the Hive and Trino CREATE TABLE of a TableDef, quoting and
escaping, Trino's type names; the option parsers of ``acidflow table adopt`` and the directory
checks of adoption. Hive 3.1.3's own parser reads the same statements in
tests/integration/test_table_ops_hive.py."""

from __future__ import annotations

import pytest

from acidflow.catalog import Column, TableDef
from acidflow.format.layout import ValidWriteIdList
from acidflow.storage.adoption import AdoptionError, check_adoptable, scan_table_dirs
from acidflow.tableops import adopt as ops
from acidflow.tableops.ddl import (
    hive_ddl,
    hive_ident,
    hive_string,
    location_uri,
    trino_ddl,
    trino_ident,
    trino_string,
    trino_type,
)

LONG_MAX = 9223372036854775807


def orders() -> TableDef:
    return TableDef(
        name="sales.orders",
        columns=[
            Column("id", "bigint"),
            Column("amount", "decimal(12,2)"),
            Column("tags", "array<string>"),
        ],
        partition_columns=[Column("ds", "date")],
        primary_key=["id"],
        num_buckets=4,
        location="/data/orders",
        properties={
            "comment": "the orders",
            "acidflow.comment.id": "order id",
            "acidflow.external": "true",
        },
    )


def test_hive_ddl_layout():
    assert (
        hive_ddl(orders())
        == """CREATE TABLE `sales`.`orders`(
  `id` bigint COMMENT 'order id',
  `amount` decimal(12,2),
  `tags` array<string>,
  PRIMARY KEY (`id`) DISABLE NOVALIDATE)
COMMENT 'the orders'
PARTITIONED BY (
  `ds` date)
CLUSTERED BY (
  `id`)
INTO 4 BUCKETS
ROW FORMAT SERDE
  'org.apache.hadoop.hive.ql.io.orc.OrcSerde'
STORED AS INPUTFORMAT
  'org.apache.hadoop.hive.ql.io.orc.OrcInputFormat'
OUTPUTFORMAT
  'org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat'
LOCATION
  'file:/data/orders'
TBLPROPERTIES (
  'bucketing_version'='2',
  'transactional'='true',
  'transactional_properties'='default');"""
    )


def test_hive_ddl_minimal_and_without_constraints():
    t = TableDef(
        name="t", columns=[Column("a", "int")], primary_key=["a"], location="s3a://bucket/t"
    )
    text = hive_ddl(t, constraints=False)
    assert text.startswith("CREATE TABLE `default`.`t`(\n  `a` int)\nROW FORMAT SERDE")
    assert "PARTITIONED BY" not in text and "CLUSTERED BY" not in text
    assert "PRIMARY KEY" not in text
    assert "LOCATION\n  's3a://bucket/t'" in text


def test_quoting():
    assert hive_ident("a`b") == "`a``b`"
    assert hive_string("it's; a \\ b\nc\td") == "'it\\'s\\; a \\\\ b\\nc\\td'"
    assert trino_ident('a"b') == '"a""b"'
    assert trino_string("it's") == "'it''s'"
    assert location_uri("/x/y") == "file:/x/y"
    assert location_uri("file:///x") == "file:///x"
    assert location_uri("hdfs://nn/x") == "hdfs://nn/x"


def test_trino_ddl_and_types():
    assert (
        trino_ddl(orders(), catalog="lake")
        == """CREATE TABLE "lake"."sales"."orders" (
   "id" bigint COMMENT 'order id',
   "amount" decimal(12,2),
   "tags" array(varchar),
   "ds" date
)
COMMENT 'the orders'
WITH (
   format = 'ORC',
   transactional = true,
   partitioned_by = ARRAY['ds'],
   bucketed_by = ARRAY['id'],
   bucket_count = 4,
   bucketing_version = 2
);"""
    )
    assert trino_type("int") == "integer"
    assert trino_type("float") == "real"
    assert trino_type("string") == "varchar"
    assert trino_type("varchar(10)") == "varchar(10)"
    assert trino_type("binary") == "varbinary"
    assert trino_type("map<string,array<int>>") == "map(varchar, array(integer))"
    assert trino_type("struct<a:int,b:timestamp>") == 'row("a" integer, "b" timestamp(3))'
    with pytest.raises(ValueError, match="uniontype"):
        trino_type("uniontype<int,string>")


def test_parse_columns_and_ids():
    cols = ops.parse_columns("id bigint, amount DECIMAL(10, 2), m map<string,int>")
    assert [(c.name, c.hive_type) for c in cols] == [
        ("id", "bigint"),
        ("amount", "decimal(10,2)"),
        ("m", "map<string,int>"),
    ]
    with pytest.raises(ops.TableOpsError, match="needs a name and a Hive type"):
        ops.parse_columns("id")
    with pytest.raises(ops.TableOpsError, match="'x nosuchtype'"):
        ops.parse_columns("x nosuchtype")
    assert ops.parse_ids("4,3", "--open") == [3, 4]
    with pytest.raises(ops.TableOpsError, match="--open"):
        ops.parse_ids("a", "--open")


def test_history_from_options():
    h = ops.history_from_options("db.t", hwm=9, open_ids=[4], aborted_ids=[5])
    assert h == ValidWriteIdList("db.t", 9, (4,), (5,))
    s = ops.history_from_options("db.t", hwm=None, valid_write_ids=f"db.t:5:{LONG_MAX}::4")
    assert s == ValidWriteIdList("db.t", 5, (), (4,))
    with pytest.raises(ops.TableOpsError, match="either --hwm"):
        ops.history_from_options("db.t", hwm=None)
    with pytest.raises(ops.TableOpsError, match="either --hwm"):
        ops.history_from_options("db.t", hwm=3, valid_write_ids="db.t:3:1::")
    with pytest.raises(ops.TableOpsError, match="--valid-write-ids"):
        ops.history_from_options("db.t", hwm=None, valid_write_ids="nonsense")
    with pytest.raises(ops.TableOpsError, match=r"\[7\] are not in 1..5"):
        ops.history_from_options("db.t", hwm=5, open_ids=[7])


def test_scan_and_check_adoptable(tmp_path):
    root = tmp_path / "t"
    for d in (
        "ds=1/delta_0000002_0000002_0000",
        "ds=1/delete_delta_0000003_0000003_0000",
        "ds=2/base_0000005",
    ):
        (root / d).mkdir(parents=True)
        (root / d / "bucket_00000").write_bytes(b"x")
    (root / "ds=2" / "000000_0").write_bytes(b"x")
    (root / "_tmp").mkdir()
    dirs = scan_table_dirs("db.t", str(root), ["ds"])
    assert [(d.partition, d.kind, d.max_write_id) for d in dirs.acid_dirs] == [
        ("ds=1", "delete_delta", 3),
        ("ds=1", "delta", 2),
        ("ds=2", "base", 5),
    ]
    assert dirs.partitions == ["ds=1", "ds=2"]
    assert dirs.write_ids() == {2, 3, 5}
    check_adoptable("db.t", str(root), ["ds"], ValidWriteIdList("db.t", 5))
    with pytest.raises(
        AdoptionError,
        match=r"ds=2/base_0000005 .* write id 5, above the high "
        r"watermark 4",
    ):
        check_adoptable("db.t", str(root), ["ds"], ValidWriteIdList("db.t", 4))
    with pytest.raises(AdoptionError, match="does not name the partition column 'day'"):
        scan_table_dirs("db.t", str(root), ["day"])
    with pytest.raises(AdoptionError, match="not at the partition depth"):
        scan_table_dirs("db.t", str(root), [])
    with pytest.raises(AdoptionError, match="not a directory"):
        scan_table_dirs("db.t", str(root / "ds=2" / "000000_0"), [])
    with pytest.raises(AdoptionError, match=r"outside 1..5"):
        check_adoptable("db.t", str(root), ["ds"], ValidWriteIdList("db.t", 5, (6,)))
