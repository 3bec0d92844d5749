"""``acidflow commits`` and ``acidflow cat --incremental`` on a real catalog, real ORC files
written by Spark, and the real compactor: each commit and compaction appears with its
operation, counts and partitions; the incremental pull returns exactly the changed rows."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from acidflow.catalog import Column, TableDef
from acidflow.cli.app import app
from acidflow.compactor import cleaner, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads
from acidflow.tableops.timeline import operation_word, timeline

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CFG = CompactorConfig(heartbeat_s=0.5)
SCHEMA = "id int, name string, ds string"


def cli(*args: str, ok: bool = True) -> str:
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    if ok:
        assert res.exit_code == 0, (res.output, res.exception)
    else:
        assert res.exit_code != 0, res.output
    return res.output


def compact(catalog, name: str, partition: str | None, kind: str) -> None:
    info = catalog.enqueue_compaction(name, partition, kind, requester="test")
    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out
    cleaner.run_cleaner(catalog)


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_commits_and_incremental(spark, catalog, partitioned):
    name = "shop.items"
    part_cols = [Column("ds", "string")] if partitioned else []
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("name", "string")]
            + ([] if partitioned else [Column("ds", "string")]),
            partition_columns=part_cols,
            primary_key=["id"],
            num_buckets=0 if partitioned else 2,
        )
    )
    p1 = "ds=a" if partitioned else ""
    df = spark.createDataFrame
    with Transaction(catalog) as txn:  # w1
        txn.insert(name, df([(i, f"n{i}", "a" if i < 6 else "b") for i in range(10)], SCHEMA))
    with Transaction(catalog) as txn:  # w2
        txn.upsert(name, df([(1, "u1", "a"), (7, "u7", "b"), (20, "n20", "a")], SCHEMA))
    with Transaction(catalog) as txn:  # w3
        txn.delete(
            name,
            df([(2, "", "a"), (8, "", "b")], SCHEMA).select("id", "ds")
            if partitioned
            else df([(2,), (8,)], "id int"),
        )

    # cat --incremental 1:3 : exactly the rows changed by w2 and w3
    rows = [json.loads(line) for line in cli("cat", name, "--incremental", "1:3").splitlines()]
    got = sorted((r["op"], r["write_id"], r["id"], r["name"]) for r in rows)
    assert got == sorted(
        [
            ("D", None, 1, "n1"),
            ("D", None, 7, "n7"),
            ("D", None, 2, "n2"),
            ("D", None, 8, "n8"),
            ("I", 2, 1, "u1"),
            ("I", 2, 7, "u7"),
            ("I", 2, 20, "n20"),
        ]
    )
    only_w3 = [
        json.loads(line)
        for line in cli("cat", name, "--incremental", "2:3", "--row-id").splitlines()
    ]
    assert sorted((r["op"], r["id"]) for r in only_w3) == [("D", 2), ("D", 8)]
    assert all(r["ROW__ID"]["writeid"] == 1 for r in only_w3)
    to_hwm = [json.loads(line) for line in cli("cat", name, "--incremental", "2").splitlines()]
    assert len(to_hwm) == 2
    assert "2 rows" in cli("cat", name, "--incremental", "2:3", "--format", "table")
    assert (
        cli("cat", name, "--incremental", "0:1", "--format", "csv")
        .splitlines()[0]
        .startswith("op,write_id,id,name")
    )
    # bad ranges are refused, naming the problem
    assert "integers" in cli("cat", name, "--incremental", "x:2", ok=False)
    assert "after TO" in cli("cat", name, "--incremental", "3:1", ok=False)
    assert "beyond the high watermark 3" in cli("cat", name, "--incremental", "1:9", ok=False)

    with Transaction(catalog) as txn:  # w4
        txn.insert(name, df([(30, "n30", "a"), (31, "n31", "b")], SCHEMA))
    compact(catalog, name, p1 or None, "minor")
    with Transaction(catalog) as txn:  # w5
        txn.insert_overwrite(
            name,
            df([(40, "n40", "b")], SCHEMA),
            **({"partitions": [{"ds": "b"}]} if partitioned else {}),
        )
    with Transaction(catalog) as txn:  # w6
        txn.insert(name, df([(50, "n50", "a")], SCHEMA))
    compact(catalog, name, p1 or None, "major")

    doc = [json.loads(line) for line in cli("commits", name, "--json").splitlines()]
    commits = [e for e in doc if e["kind"] == "commit"]
    comps = [e for e in doc if e["kind"] == "compaction"]
    assert [e["write_id"] for e in commits] == [6, 5, 4, 3, 2, 1]  # newest first
    assert [e["operation"] for e in commits] == [
        "insert",
        "overwrite",
        "insert",
        "delete",
        "upsert",
        "insert",
    ]
    by_w = {e["write_id"]: e for e in commits}
    assert (by_w[1]["rows_inserted"], by_w[1]["rows_updated"], by_w[1]["rows_deleted"]) == (
        10,
        0,
        0,
    )
    assert (by_w[2]["rows_inserted"], by_w[2]["rows_updated"]) == (1, 2)
    assert by_w[3]["rows_deleted"] == 2 and by_w[5]["rows_inserted"] == 1
    for e in commits:
        assert e["files"] == sum(p["files"] for p in e["partitions"].values()) > 0
        assert e["bytes"] == sum(p["bytes"] for p in e["partitions"].values()) > 0
        assert e["txn_id"] and e["commit_id"] and e["time"]
    if partitioned:
        assert set(by_w[1]["partitions"]) == {"ds=a", "ds=b"}
        assert by_w[1]["partitions"]["ds=a"]["rows"] == 6
        assert set(by_w[5]["partitions"]) == {"ds=b"} and set(by_w[6]["partitions"]) == {"ds=a"}
    else:
        assert set(by_w[1]["partitions"]) == {""}
    # compactions at their place in time: the major after w6, the minor between w4 and w5
    assert [e["operation"] for e in doc[:1]] == ["compaction"]
    assert [c["compaction"]["type"] for c in comps] == ["major", "minor"]
    major, minor = comps
    assert doc.index(by_w[5]) < doc.index(minor) < doc.index(by_w[4])
    assert (minor["compaction"]["min_write_id"], minor["compaction"]["max_write_id"]) == (1, 4)
    assert (major["compaction"]["min_write_id"], major["compaction"]["max_write_id"]) == (None, 6)
    for c in comps:
        assert c["compaction"]["state"] == "succeeded"
        assert c["compaction"]["visibility_txn_id"] == c["txn_id"] > 0
        assert c["compaction"]["partition"] == (p1 or None)
        assert c["files"] > 0 and c["rows_inserted"] > 0
    assert len(cli("commits", name, "--json", "--limit", "2").splitlines()) == 2
    text = cli("commits", name)
    assert "overwrite" in text and "compaction (major, succeeded)" in text and "<=6" in text


def test_commit_batch_ids_and_operation_words(spark, catalog):
    name = "shop.ledger"
    catalog.create_table(
        TableDef(
            name=name, columns=[Column("id", "int"), Column("v", "string")], primary_key=["id"]
        )
    )
    txn = Transaction(catalog)
    with txn:
        catalog.register_batch(txn.txn_id, "batch-0001", "cdc", source="test")
        txn.insert(name, spark.createDataFrame([(1, "a")], "id int, v string"))
        txn.upsert(name, spark.createDataFrame([(1, "b"), (2, "c")], "id int, v string"))
    (e,) = timeline(catalog, name)
    assert (e.batch_id, e.batch_kind, e.operation) == ("batch-0001", "cdc", "upsert")
    assert e.operations == ["insert", "upsert"]
    assert operation_word(["cdc_merge"]) == "upsert"
    assert operation_word(["insert", "delete"]) == "merge"
    assert operation_word(["delete", "restore"]) == "restore"
    assert operation_word(["insert_overwrite", "insert"]) == "overwrite"
    assert operation_word([]) == "commit"
    # a compaction not committed yet comes after the last commit before its time
    catalog.enqueue_compaction(name, None, "major", requester="test")
    newest, commit = timeline(catalog, name)
    assert (newest.kind, newest.compaction["state"], newest.commit_id) == (
        "compaction",
        "initiated",
        None,
    )
    assert commit.write_id == 1
    assert "NoSuchTableError" in repr(CliRunner().invoke(app, ["commits", "no.such"]).exception)


def test_incremental_deletes_are_matched_by_partition_and_row_id(spark, catalog):
    """A ROW__ID is unique within a partition only: rows written by one writer into two
    partitions share ``(write id, bucket, rowid)``. Deleting the row of one partition must
    show as a ``D`` although the other partition still holds the same ROW__ID -- in Spark
    and in pyarrow (``cat --incremental``)."""
    name = "db.parts"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("name", "string")],
            partition_columns=[Column("ds", "string")],
            primary_key=["id"],
        )
    )
    rows = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["one", "two"], "ds": ["a", "b"]})
    with Transaction(catalog, heartbeat_s=0) as txn:
        txn.upsert(name, rows)  # write id 1, one writer
    ids = reads.read_table(None, catalog, name, row_id=True).column("ROW__ID").to_pylist()
    assert ids[0] == ids[1]  # the same ROW__ID twice
    with Transaction(catalog, spark=spark, heartbeat_s=0) as txn:
        txn.delete(name, spark.createDataFrame([(1,)], "id int"))  # write id 2
    got_spark = sorted(
        (r["op"], r["id"], r["ds"])
        for r in reads.read_incremental(spark, catalog, name, 1).collect()
    )
    got_arrow = sorted(
        (r["op"], r["id"], r["ds"])
        for r in reads.read_incremental(None, catalog, name, 1).to_pylist()
    )
    assert got_spark == got_arrow == [("D", 1, "a")]
    assert "D" in cli("cat", name, "--incremental", "1:2", "--format", "jsonl")
