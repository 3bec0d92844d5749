"""The `acidflow` command on a real catalog and real files, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine.transaction import Transaction

pytestmark = pytest.mark.spark


def cli(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "acidflow.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_cli_on_catalog_tables(spark, warehouse):
    catalog = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    catalog.create_table(
        TableDef(
            name="shop.items",
            columns=[Column("sku", "int"), Column("label", "string")],
            primary_key=["sku"],
            num_buckets=2,
        )
    )
    with Transaction(catalog) as txn:
        txn.insert(
            "shop.items", spark.createDataFrame([(1, "one"), (2, "two")], "sku int, label string")
        )
    with Transaction(catalog) as txn:
        txn.upsert("shop.items", spark.createDataFrame([(2, "TWO")], "sku int, label string"))

    assert "shop.items" in cli("tables")
    desc = cli("describe", "shop.items")
    assert "sku" in desc and "primary key" in desc and "shop.items:2:" in desc

    rows = [json.loads(line) for line in cli("cat", "shop.items", "--row-id").splitlines()]
    assert sorted((r["sku"], r["label"]) for r in rows) == [(1, "one"), (2, "TWO")]
    assert {r["ROW__ID"]["writeid"] for r in rows} == {1, 2}
    old = [json.loads(line) for line in cli("cat", "shop.items", "--as-of", "1").splitlines()]
    assert sorted((r["sku"], r["label"]) for r in old) == [(1, "one"), (2, "two")]
    assert cli("cat", "shop.items", "--format", "csv").splitlines()[0] == "sku,label"

    location = catalog.get_table("shop.items").location
    state = json.loads(cli("state", location, "--json"))
    assert state["deltas"] == [
        "delta_0000001_0000001_0000",
        "delete_delta_0000002_0000002_0000",
        "delta_0000002_0000002_0000",
    ]
    some_file = sorted(Path(location, "delete_delta_0000002_0000002_0000").glob("bucket_*"))[0]
    events = [json.loads(line) for line in cli("dump", str(some_file)).splitlines()]
    assert [
        (e["operation"], e["originalTransaction"], e["currentTransaction"], e["row"])
        for e in events
    ] == [(2, 1, 2, None)]

    # an open transaction holding a lock shows up in SHOW TRANSACTIONS / SHOW LOCKS
    txn = catalog.open_transaction(user="alice", agent_info="cli-test")
    catalog.acquire_lock(txn, "shop.items", None, "exclusive")
    assert str(txn) in cli("show", "transactions") and "alice" in cli("show", "transactions")
    locks = cli("show", "locks")
    assert "shop.items" in locks and "exclusive" in locks
    # --json: JSON lines, one object per item (one for describe), nothing else on stdout
    (lock,) = [json.loads(line) for line in cli("show", "locks", "--json").splitlines()]
    assert (lock["table"], lock["lock_type"], lock["txn_id"]) == ("shop.items", "exclusive", txn)
    open_txns = [json.loads(line) for line in cli("show", "transactions", "--json").splitlines()]
    assert [(t["txn_id"], t["user"], t["state"]) for t in open_txns] == [(txn, "alice", "open")]
    catalog.abort_transaction(txn, "test over")
    assert "exclusive" not in cli("show", "locks")
    assert cli("show", "locks", "--json") == ""

    (listed,) = [json.loads(line) for line in cli("tables", "--json").splitlines()]
    assert (listed["name"], listed["high_watermark"], listed["primary_key"]) == (
        "shop.items",
        2,
        ["sku"],
    )
    described = json.loads(cli("describe", "shop.items", "--json"))
    assert described["valid_write_ids"].startswith("shop.items:2:")
    assert described["history"]["newest_write_id"] == 2
    assert [c["name"] for c in described["columns"]] == ["sku", "label"]
    commits = [json.loads(line) for line in cli("commits", "shop.items", "--json").splitlines()]
    assert [c["write_id"] for c in commits] == [2, 1]


def test_cli_cat_prints_float_specials_as_json(warehouse):
    """``cat`` prints valid JSON lines for NaN and infinities (as Spark's JSON writer does)."""
    import pyarrow as pa

    catalog = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    catalog.create_table(
        TableDef(
            name="shop.floats",
            columns=[Column("k", "int"), Column("x", "double")],
            primary_key=["k"],
            num_buckets=1,
        )
    )
    with Transaction(catalog) as txn:
        txn.upsert(
            "shop.floats",
            pa.table(
                {
                    "k": pa.array([1, 2, 3, 4], pa.int32()),
                    "x": [float("nan"), float("inf"), float("-inf"), -0.0],
                }
            ),
        )
    out = cli("cat", "shop.floats")
    rows = sorted((json.loads(line) for line in out.splitlines()), key=lambda r: r["k"])
    assert [r["x"] for r in rows] == ["NaN", "Infinity", "-Infinity", -0.0]


def test_cli_cat_where_filters_exactly_and_prunes_partitions(spark, warehouse):
    """``cat --where``: the rows of the full read that pass every filter; a bad filter is a
    usage error naming the column."""
    import pyarrow as pa

    catalog = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    catalog.create_table(
        TableDef(
            name="shop.sales",
            columns=[Column("k", "int"), Column("who", "string"), Column("amt", "decimal(6,2)")],
            partition_columns=[Column("day", "date")],
            primary_key=["k"],
            num_buckets=2,
        )
    )
    rows = {
        "k": pa.array(range(1, 9), pa.int32()),
        "who": ["a", "b", "it's", None, "a", "b", "a", "c"],
        "amt": pa.array([f"{i}.25" for i in range(1, 9)]).cast(pa.decimal128(6, 2)),
        "day": pa.array(["2024-01-01"] * 4 + ["2024-01-02"] * 4).cast(pa.date32()),
    }
    with Transaction(catalog) as txn:
        txn.upsert("shop.sales", pa.table(rows))
    with Transaction(catalog) as txn:
        txn.delete("shop.sales", spark.createDataFrame([(5,)], "k int"))

    def keys(*where: str) -> list[int]:
        out = cli("cat", "shop.sales", *[a for w in where for a in ("--where", w)])
        return sorted(json.loads(line)["k"] for line in out.splitlines())

    assert keys() == [1, 2, 3, 4, 6, 7, 8]
    assert keys("who = 'a'") == [1, 7]
    assert keys("who = 'it''s'") == [3]
    assert keys("day = 2024-01-02", "amt >= 7.25") == [7, 8]
    assert keys("who in ('b', 'c')", "day <> '2024-01-01'") == [6, 8]
    assert keys("who is null") == [4]
    table_dir = catalog.get_table("shop.sales").location
    assert cli("cat", table_dir, "--where", "k < 3").count("\n") == 2  # a bare directory too
    proc = subprocess.run(
        [sys.executable, "-m", "acidflow.cli", "cat", "shop.sales", "--where", "amt = lots"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "amt (decimal(6,2))" in proc.stderr


def test_cli_reports_errors_in_one_line(warehouse):
    proc = subprocess.run(
        [sys.executable, "-m", "acidflow.cli", "cat", "no.such_table"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "NoSuchTableError" in proc.stderr and "no.such_table" in proc.stderr
