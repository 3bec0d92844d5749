"""``acidflow delete --where`` and ``acidflow update --set --where`` run as a user runs them,
on a real catalog and real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "acidflow.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def test_update_and_delete_from_the_command_line(spark, warehouse):
    catalog = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    catalog.create_table(
        TableDef(
            name="shop.items",
            columns=[Column("sku", "int"), Column("label", "string"), Column("qty", "int")],
            partition_columns=[Column("shop", "string")],
            primary_key=["sku", "shop"],
            num_buckets=2,
            bucket_columns=["sku"],
        )
    )
    with Transaction(catalog) as txn:
        txn.insert(
            "shop.items",
            spark.createDataFrame(
                [(i, f"item{i}", i, "a" if i % 2 else "b") for i in range(10)],
                "sku int, label string, qty int, shop string",
            ),
        )

    out = run(
        "update",
        "shop.items",
        "--set",
        "label=upper(label)",
        "--set",
        "qty=qty*10",
        "--where",
        "shop = 'a' AND sku > 4",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert (res["rows_updated"], res["write_id"]) == (3, 2)
    out = run("delete", "shop.items", "--where", "qty < 3")
    assert out.returncode == 0, out.stderr
    assert "3 row(s) deleted in write id 3" in out.stdout

    rows = {
        r["sku"]: (r["label"], r["qty"])
        for r in reads.read_table(None, catalog, "shop.items").to_pylist()
    }
    assert rows == {
        3: ("item3", 3),
        4: ("item4", 4),
        5: ("ITEM5", 50),
        6: ("item6", 6),
        7: ("ITEM7", 70),
        8: ("item8", 8),
        9: ("ITEM9", 90),
    }

    bad = run("update", "shop.items", "--set", "shop='c'", "--where", "true")
    assert bad.returncode == 1
    assert "DmlError" in bad.stderr and "partition columns is not supported" in bad.stderr
    assert len(catalog.commit_records("shop.items")) == 3
    catalog.close()
