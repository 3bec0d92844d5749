"""``acidflow table ddl`` read by Hive 3.1.3's own SQL parser, and ``acidflow table adopt
--metastore`` against a real Hive 3.1.3 metastore.

* The DDL oracle: ``tests/support/java/HiveDdlParse.java`` runs Hive 3.1.3's ``HiveLexer`` /
  ``HiveParser`` and ``BaseSemanticAnalyzer.getColumns`` / ``unescapeSQLString`` /
  ``readProps`` (what ``SemanticAnalyzer`` does for ``CREATE TABLE``) over the statements we
  print; what Hive understood must equal the ``TableDef`` (names, types, comments with quotes,
  semicolons, backslashes and newlines, partition keys, buckets, serde, formats, location,
  properties, primary key).
* The round trip: that parse becomes a thrift ``Table`` in the metastore (its
  ``TransactionalValidationListener`` accepts it as full ACID), ``table_from_metastore`` reads it
  back, and the re-rendered DDL is identical.
* Adopt from the metastore: Hive's write-id history (an aborted, two committed, one open write
  id) arrives as the adopted table's ValidWriteIdList, open turned aborted; the next acidflow
  write id follows Hive's high watermark; tables Hive knows as non-transactional or insert-only
  are refused with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pymetastore.hive_metastore.ttypes import (
    AbortTxnRequest,
    AllocateTableWriteIdsRequest,
    CommitTxnRequest,
    Database,
    FieldSchema,
    OpenTxnRequest,
    SerDeInfo,
    StorageDescriptor,
    Table,
)

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.catalog.hms.client import hms_client
from acidflow.format.layout import ValidWriteIdList
from acidflow.read import table as reads
from acidflow.tableops import adopt as ops
from acidflow.tableops.adopt import TableOpsError
from acidflow.tableops.ddl import hive_ddl, location_uri, shown_properties
from tests.support.hms import require_hive_artifacts, reset_metastore, transactional_orc_table

pytestmark = pytest.mark.slow

ARTIFACTS = require_hive_artifacts()
PARSER = Path(__file__).resolve().parents[1] / "support" / "java" / "HiveDdlParse.java"
LONG_MAX = 9223372036854775807
HOST = socket.gethostname()


def hive_parse(tmp_path: Path, statements: list[str]) -> list[dict]:
    """What Hive 3.1.3's parser and column analysis make of each statement."""
    files = []
    for i, sql in enumerate(statements):
        f = tmp_path / f"ddl_{i}.sql"
        f.write_text(sql, encoding="utf-8")
        files.append(str(f))
    jars = [str(ARTIFACTS.hive_exec_jar)] + sorted(
        str(p) for p in ARTIFACTS.metastore_dir.glob("*.jar")
    )
    java = shutil.which(
        "java",
        path=os.path.join(os.environ.get("JAVA_HOME", ""), "bin")
        + os.pathsep
        + os.environ.get("PATH", ""),
    )
    assert java, "no java"
    res = subprocess.run(
        [
            java,
            "-Xmx256m",
            "--add-opens",
            "java.base/java.net=ALL-UNNAMED",
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "-cp",
            os.pathsep.join(jars),
            str(PARSER),
            *files,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


NASTY = 'it\'s a; "key" \\ with\nnewline and `ticks`'


def rich_table(location: str) -> TableDef:
    return TableDef(
        name="sales.orders",
        columns=[
            Column("id", "bigint"),
            Column("name", "varchar(20)"),
            Column("amount", "decimal(12,2)"),
            Column("tags", "array<string>"),
            Column("attrs", "map<string,int>"),
            Column("addr", "struct<city:string,zip:int>"),
            Column("ts", "timestamp"),
        ],
        partition_columns=[Column("ds", "date"), Column("region", "string")],
        primary_key=["id"],
        num_buckets=4,
        bucket_columns=["id"],
        location=location,
        properties={
            "comment": "orders; it's Hive's",
            "acidflow.comment.id": NASTY,
            "acidflow.comment.region": "sales region",
            "owner.team": "o'neil;\\x",
        },
    )


def expected_parse(t: TableDef) -> dict:
    comments = {
        k[len("acidflow.comment.") :]: v
        for k, v in t.properties.items()
        if k.startswith("acidflow.comment.")
    }
    out = {
        "name": t.name,
        "columns": [[c.name, c.hive_type, comments.get(c.name)] for c in t.columns],
        "serde": "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
        "input_format": "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        "output_format": "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        "location": location_uri(t.location),
        "properties": shown_properties(t),
        "primary_key": list(t.primary_key),
    }
    if "comment" in t.properties:
        out["comment"] = t.properties["comment"]
    if t.partition_columns:
        out["partition_columns"] = [
            [c.name, c.hive_type, comments.get(c.name)] for c in t.partition_columns
        ]
    if t.num_buckets:
        out["bucket_columns"] = list(t.bucket_columns)
        out["num_buckets"] = t.num_buckets
    return out


def test_hive_3_parses_the_ddl_exactly(tmp_path):
    tables = [
        rich_table(str(tmp_path / "orders")),
        TableDef(name="db.plain", columns=[Column("a", "int")], location=str(tmp_path / "plain")),
    ]
    parsed = hive_parse(tmp_path, [hive_ddl(t) for t in tables])
    assert len(parsed) == 2
    for t, got in zip(tables, parsed):
        assert got == expected_parse(t)
    assert parsed[0]["columns"][0][2] == NASTY
    assert parsed[0]["properties"]["transactional"] == "true"
    assert parsed[0]["properties"]["transactional_properties"] == "default"
    assert parsed[0]["properties"]["bucketing_version"] == "2"
    assert parsed[0]["properties"]["owner.team"] == "o'neil;\\x"


def _hive_table(parsed: dict) -> Table:
    """The thrift Table Hive's DDLTask would register for a parsed CREATE TABLE."""
    db, name = parsed["name"].split(".")
    props = dict(parsed["properties"])
    if "comment" in parsed:
        props["comment"] = parsed["comment"]
    sd = StorageDescriptor(
        cols=[FieldSchema(n, t, c) for n, t, c in parsed["columns"]],
        location=parsed["location"],
        inputFormat=parsed["input_format"],
        outputFormat=parsed["output_format"],
        compressed=False,
        numBuckets=parsed.get("num_buckets", -1),
        serdeInfo=SerDeInfo(name=None, serializationLib=parsed["serde"], parameters={}),
        bucketCols=parsed.get("bucket_columns", []),
        sortCols=[],
        parameters={},
    )
    return Table(
        tableName=name,
        dbName=db,
        owner="acidflow",
        sd=sd,
        partitionKeys=[FieldSchema(n, t, c) for n, t, c in parsed.get("partition_columns", [])],
        parameters=props,
        tableType="MANAGED_TABLE",
    )


def _create_db(client, hive_metastore, db: str) -> None:
    client.create_database(
        Database(
            name=db,
            description=None,
            parameters={},
            locationUri=(hive_metastore.warehouse / f"{db}.db").as_uri(),
        )
    )


def test_ddl_round_trip_through_the_metastore(hive_metastore, tmp_path, warehouse):
    reset_metastore(hive_metastore.url)  # the session metastore may hold a "sales" database
    loc = tmp_path / "orders"
    loc.mkdir()
    table = rich_table(str(loc))
    (parsed,) = hive_parse(tmp_path, [hive_ddl(table)])
    with hms_client(hive_metastore.url) as client:
        _create_db(client, hive_metastore, "sales")
        client.create_table(_hive_table(parsed))
        stored = client.get_table("sales", "orders")
        assert stored.parameters["transactional"] == "true"
    found = ops.table_from_metastore(hive_metastore.url, "sales.orders")
    back = found.table
    assert [(c.name, c.hive_type) for c in back.columns] == [
        (c.name, c.hive_type) for c in table.columns
    ]
    assert back.partition_columns == table.partition_columns
    assert (back.num_buckets, back.bucket_columns, back.location) == (4, ["id"], str(loc))
    assert hive_ddl(back, constraints=False) == hive_ddl(table, constraints=False)
    assert found.history == ValidWriteIdList("sales.orders", 0)
    # and it adopts (empty history: the next write id is 1)
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    try:
        ops.adopt(cat, back, found.history)
        assert hive_ddl(cat.get_table("sales.orders"), constraints=False) == hive_ddl(
            table, constraints=False
        )
    finally:
        cat.close()


def _txn(client) -> int:
    (txn,) = client.open_txns(OpenTxnRequest(num_txns=1, user="hive", hostname=HOST)).txn_ids
    return txn


def test_adopt_from_the_metastore_with_hives_history(
    hive_metastore, fixtures_dir, tmp_path, warehouse
):
    loc = tmp_path / "nation"
    shutil.copytree(fixtures_dir / "trino-nation-delete-deltas" / "table", loc)
    with hms_client(hive_metastore.url) as client:
        _create_db(client, hive_metastore, "tpch")
        t = transactional_orc_table("tpch", "nation", loc.as_uri(), buckets=0)
        t.sd.cols = [
            FieldSchema("n_nationkey", "int", "the key"),
            FieldSchema("n_name", "string", None),
            FieldSchema("n_regionkey", "int", None),
            FieldSchema("n_comment", "string", None),
        ]
        t.sd.bucketCols = []
        t.sd.numBuckets = -1
        client.create_table(t)
        txns = []
        for end in ("abort", "commit", "commit", "open"):
            txn = _txn(client)
            (alloc,) = client.allocate_table_write_ids(
                AllocateTableWriteIdsRequest(dbName="tpch", tableName="nation", txnIds=[txn])
            ).txnToWriteIds
            txns.append((txn, alloc.writeId))
            if end == "abort":
                client.abort_txn(AbortTxnRequest(txnid=txn))
            elif end == "commit":
                client.commit_txn(CommitTxnRequest(txnid=txn))
        assert [w for _t, w in txns] == [1, 2, 3, 4]
        try:
            res = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "acidflow.cli",
                    "table",
                    "adopt",
                    "hive.nation",
                    "--metastore",
                    hive_metastore.url,
                    "--metastore-table",
                    "tpch.nation",
                    "--primary-key",
                    "n_nationkey",
                    "--json",
                ],
                capture_output=True,
                text=True,
                env=os.environ.copy(),
            )
        finally:
            client.abort_txn(AbortTxnRequest(txnid=txns[-1][0]))
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    # Hive's reader: hwm 4, 1 aborted, 4 open -> adopted with 4 aborted too
    assert info["valid_write_ids"] == f"hive.nation:4:{LONG_MAX}::1,4"
    assert info["next_write_id"] == 5
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    try:
        table = cat.get_table("hive.nation")
        assert table.location == str(loc) and table.primary_key == ["n_nationkey"]
        assert table.properties["acidflow.comment.n_nationkey"] == "the key"
        assert "COMMENT 'the key'" in hive_ddl(table)
        got = reads.read_table(None, cat, "hive.nation").to_pylist()
        assert len(got) == 24000 and {r["n_nationkey"] for r in got} == set(range(25)) - {5}
        txn = cat.open_transaction()
        assert cat.allocate_write_id(txn, "hive.nation") == 5  # never one Hive allocated
        cat.abort_transaction(txn)
    finally:
        cat.close()


def test_metastore_tables_that_are_not_full_acid_orc_are_refused(hive_metastore, tmp_path):
    with hms_client(hive_metastore.url) as client:
        _create_db(client, hive_metastore, "plain")
        t = transactional_orc_table("plain", "orc_plain", (tmp_path / "a").as_uri())
        t.parameters = {}
        client.create_table(t)
        t = transactional_orc_table("plain", "text_io", (tmp_path / "b").as_uri(), buckets=0)
        t.sd.bucketCols, t.sd.numBuckets = [], -1
        t.parameters = {"transactional": "true", "transactional_properties": "insert_only"}
        t.sd.inputFormat = "org.apache.hadoop.mapred.TextInputFormat"
        t.sd.outputFormat = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
        t.sd.serdeInfo.serializationLib = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
        client.create_table(t)
    with pytest.raises(TableOpsError, match=r"plain.orc_plain .* not transactional"):
        ops.table_from_metastore(hive_metastore.url, "plain.orc_plain")
    with pytest.raises(TableOpsError, match=r"plain.text_io .* insert-only"):
        ops.table_from_metastore(hive_metastore.url, "plain.text_io")
    with pytest.raises(TableOpsError, match=r"plain.missing is not in the metastore"):
        ops.table_from_metastore(hive_metastore.url, "plain.missing")
