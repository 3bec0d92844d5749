"""Savepoints (Hudi's savepoint, Iceberg's tag) on real files and a real catalog: a savepoint's
state stays readable and restorable after more commits, a major compaction and cleans under a
retention that keeps nothing else; deleting it lets the next clean remove what only it kept;
the CLI creates, lists and deletes them."""

from __future__ import annotations

import collections
import decimal
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acidflow.catalog import Column, TableDef
from acidflow.cli.app import app
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.format.bucketing import encode_bucket_property
from acidflow.tableops import restore, savepoint
from acidflow.tableops.timeline import timeline
from tests.support import acidtables as at

B0 = encode_bucket_property(0, 0)
COLS = [Column("id", "int"), Column("name", "string"), Column("price", "decimal(10,2)")]
CFG = CompactorConfig(heartbeat_s=0, target_file_bytes=0)
#: Hive's behaviour: only the current snapshot is retained, the timeline keeps no extra record
NO_HISTORY = {
    "acidflow.history.retain.commits": "0",
    "acidflow.history.retain.hours": "0",
    "acidflow.timeline.keep.commits": "0",
}


def row(i: int, tag: str = "a") -> tuple:
    return (i, f"{tag}{i}", decimal.Decimal(i) / 4)


def listing(catalog, name: str) -> list[str]:
    loc = Path(catalog.get_table(name).location)
    return sorted(p.name for p in loc.iterdir() if not p.name.startswith((".", "_")))


def data(rows: list[tuple]) -> collections.Counter:
    return collections.Counter(r[:-1] for r in rows)  # without ROW__ID


def test_savepoint_outlives_retention_compaction_and_clean_then_restore_and_delete(catalog):
    name = "db.sp"
    catalog.create_table(TableDef(name=name, columns=COLS, properties=dict(NO_HISTORY)))
    at.write(catalog, name, {0: [row(i) for i in range(4)]})  # w1
    at.write(catalog, name, {0: [row(i) for i in range(4, 6)]})  # w2
    sp = savepoint.create_savepoint(catalog, name, name="before-fix")
    assert sp.write_id == 2  # the latest committed write id
    pinned = at.rows(catalog, name)
    at.write(catalog, name, {0: [row(1, "u")]}, [(1, B0, 1)])  # w3 update
    at.write(catalog, name, deletes=[(2, B0, 0), (1, B0, 3)])  # w4 delete
    now = at.rows(catalog, name)
    assert data(now) != data(pinned)

    # outside retention (only the current state, write id 4, is retained): refused
    with pytest.raises(savepoint.SavepointError) as exc:
        savepoint.create_savepoint(catalog, name, write_id=3)
    assert str(exc.value).startswith("savepoint of db.sp at write id 3: outside history")
    assert "write ids 4..4 retained" in str(exc.value)

    info = initiator.request_compaction(catalog, name, None, "major")
    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report
    rep = cleaner.run_cleaner(catalog)
    rep = cleaner.run_cleaner(catalog)  # a second pass changes nothing
    # what only the savepoint reads stays; the rest of the old layout goes
    assert rep.retained[info.id] == ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    assert listing(catalog, name) == [
        "base_0000004",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    assert catalog.get_compaction(info.id).state == "ready for cleaning"
    # the purges kept the records and transactions time travel to the savepoint needs
    assert [r.write_id for r in catalog.commit_records(name)] == [2, 3, 4]
    assert at.rows(catalog, name, as_of_write_id=2) == pinned
    assert at.rows(catalog, name) == now
    marks = {e.write_id: e.savepoints for e in timeline(catalog, name) if e.kind == "commit"}
    assert marks == {2: ["before-fix"], 3: [], 4: []}

    # restore to it past retention
    res = restore.restore(catalog, name, savepoint.savepoint_write_id(catalog, name, "before-fix"))
    assert res.to_write_id == 2 and res.write_id == 5
    assert data(at.rows(catalog, name)) == data(pinned)
    with pytest.raises(restore.RestoreError, match="outside history retention .* savepoint pins"):
        restore.restore(catalog, name, 3)

    # deleted: the next clean removes what only it kept
    savepoint.delete_savepoint(catalog, name, "before-fix")
    rep = cleaner.run_cleaner(catalog)
    # (the entry's list: what the first passes removed, then what the savepoint had kept)
    assert (
        rep.cleaned[info.id][-2:]
        == [
            "delta_0000001_0000001_0000",
            "delta_0000002_0000002_0000",
        ]
        and catalog.get_compaction(info.id).state == "succeeded"
    )
    assert "delta_0000001_0000001_0000" not in listing(catalog, name)
    assert data(at.rows(catalog, name)) == data(pinned)


def test_savepoint_cli_create_list_delete_and_commits(catalog):
    name = "db.cli"
    props = {"acidflow.history.retain.commits": "10"}
    catalog.create_table(TableDef(name=name, columns=COLS, properties=props))
    at.write(catalog, name, {0: [row(1)]})  # w1
    at.write(catalog, name, {0: [row(2)]})  # w2
    runner = CliRunner()

    res = runner.invoke(app, ["savepoint", "create", name, "--write-id", "1", "--json"])
    assert res.exit_code == 0, res.output
    made = json.loads(res.output)
    assert (made["table"], made["write_id"]) == (name, 1) and made["name"].startswith("sp-w1-")
    res = runner.invoke(app, ["savepoint", "create", name, "--name", "nightly"])
    assert res.exit_code == 0 and "created savepoint nightly of db.cli at write id 2" in res.output

    res = runner.invoke(app, ["savepoint", "list", name, "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [(r["name"], r["write_id"]) for r in rows] == [(made["name"], 1), ("nightly", 2)]
    assert rows[1]["valid_write_ids"].startswith("db.cli:2:")
    res = runner.invoke(app, ["savepoint", "list", name])
    assert res.exit_code == 0 and "nightly" in res.output

    res = runner.invoke(app, ["commits", name, "--json"])
    assert res.exit_code == 0, res.output
    by_wid = {e["write_id"]: e["savepoints"] for e in map(json.loads, res.output.splitlines())}
    assert by_wid == {1: [made["name"]], 2: ["nightly"]}

    res = runner.invoke(app, ["savepoint", "create", name, "--name", "nightly"])
    assert res.exit_code != 0 and "SavepointExistsError" in repr(res.exception)
    res = runner.invoke(app, ["savepoint", "delete", name, "nightly", "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["name"] == "nightly"
    res = runner.invoke(app, ["savepoint", "delete", name, "nightly"])
    assert res.exit_code != 0 and "no savepoint 'nightly'" in str(res.exception)
    assert [s.name for s in catalog.list_savepoints(name)] == [made["name"]]

    res = runner.invoke(app, ["restore", name, "--to-savepoint", made["name"], "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["to_write_id"] == 1
    assert [r[0] for r in at.rows(catalog, name)] == [1]
