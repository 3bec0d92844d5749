"""fsck and validate find duplicate primary keys on real ORC files, a real SQLite catalog and the
real CLI; keys deleted by a later delete delta and keys of unkeyed tables are not duplicates."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.cli import app
from acidflow.compactor.fsck import fsck_table
from acidflow.validation import validate
from tests.support import acidtables as at

runner = CliRunner()


def _catalog(warehouse: Path) -> SqlCatalog:
    return SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))


def test_fsck_and_validate_name_duplicate_keys(warehouse):
    """Two committed transactions that inserted the same new keys leave two live rows per key (fsck
    and validate used to miss them); fsck reports ``duplicate_key`` (error, exit 1) naming the keys
    and the write ids, and validate fails on it."""
    catalog = _catalog(warehouse)
    catalog.create_table(
        TableDef(
            name="shop.users",
            columns=[Column("id", "int"), Column("name", "string")],
            primary_key=["id"],
        )
    )
    at.write(catalog, "shop.users", {0: [(1, "a"), (2, "b"), (3, "c")]})  # write id 1
    assert runner.invoke(app, ["fsck", "shop.users", "--json"]).exit_code == 0
    _, w2 = at.write(catalog, "shop.users", {0: [(2, "b2"), (3, "c2")], 1: [(3, "c3")]})
    # a later transaction deletes one row of key 2 (ROW__ID (1, bucket 0, row 1)): key 2 is
    # then unique again in the snapshot -- only visible rows count
    _, w3 = at.write(catalog, "shop.users", deletes=[(1, 536870912, 1)])
    findings = fsck_table(catalog, "shop.users")
    [dup] = [f for f in findings if f.kind == "duplicate_key"]
    assert dup.severity == "error" and dup.partition == ""
    assert dup.detail.startswith(
        "1 primary key value(s) of (id) have more than one visible row (2 surplus row(s))"
    ), dup.detail
    assert f"(id=3): 3 rows, write ids 1, {w2}, {w2}" in dup.detail
    assert "id=2" not in dup.detail

    res = runner.invoke(app, ["fsck", "shop.users", "--json"], env={"COLUMNS": "250"})
    assert res.exit_code == 1, res.output
    out = [json.loads(line) for line in res.output.splitlines()]
    assert [f["kind"] for f in out if f["severity"] == "error"] == ["duplicate_key"]

    rep = validate(None, catalog, "shop.users", suite_dir=str(warehouse / "no-suites"))
    assert not rep.success
    assert [f.kind for f in rep.errors] == ["duplicate_key"]
    assert any(line.startswith("duplicate_key") for line in rep.summary()["invariant_errors"])


def test_duplicate_keys_across_partitions_and_unkeyed_tables(warehouse):
    """A key is unique across the whole table (not per partition) when the partition column is not
    part of it; composite keys with a partition column count per partition; unkeyed tables have no
    key rule (Hive's insert semantics)."""
    catalog = _catalog(warehouse)
    catalog.create_table(
        TableDef(
            name="s.ev",
            columns=[Column("id", "bigint"), Column("v", "string")],
            partition_columns=[Column("ds", "string")],
            primary_key=["id"],
        )
    )
    catalog.create_table(
        TableDef(
            name="s.evp",
            columns=[Column("id", "bigint"), Column("v", "string")],
            partition_columns=[Column("ds", "string")],
            primary_key=["id", "ds"],
        )
    )
    catalog.create_table(TableDef(name="s.log", columns=[Column("id", "bigint")]))
    for name in ("s.ev", "s.evp"):
        at.write(catalog, name, {0: [(7, "x"), (8, "y")]}, partition="ds=2024-01-01")
        at.write(catalog, name, {0: [(7, "z")]}, partition="ds=2024-01-02")
    at.write(catalog, "s.log", {0: [(1,), (1,)]})
    [dup] = [f for f in fsck_table(catalog, "s.ev") if f.kind == "duplicate_key"]
    assert "(id=7): 2 rows, write ids 1, 2" in dup.detail
    assert [f for f in fsck_table(catalog, "s.evp") if f.severity == "error"] == []
    assert [f for f in fsck_table(catalog, "s.log") if f.severity == "error"] == []
