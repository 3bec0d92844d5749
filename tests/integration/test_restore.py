"""Restore and rollback (acidflow.tableops.restore, `acidflow restore` / `acidflow rollback`) on
real files and a real catalog: the table equals its snapshot at the target write id, in one new
commit recorded as restore / rollback, by delete+insert events or a new base per partition;
older snapshots stay readable; refusals happen before anything is written. Keyed bucketed,
keyed partitioned unbucketed, unkeyed, and unkeyed partitioned bucketed tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acidflow.compactor import cleaner
from acidflow.format.layout import NotEnoughHistoryError
from acidflow.storage.retention import RETAIN_COMMITS, RETAIN_HOURS
from acidflow.tableops.restore import RestoreError, restore, rollback
from acidflow.tableops.schema import alter_table
from tests.support import acidtables as at
from tests.support import history_tables as ht

ALL = {RETAIN_COMMITS: "100", RETAIN_HOURS: "0"}


def leaves(catalog, name: str = "db.h") -> set[str]:
    root = Path(catalog.get_table(name).location)
    return {p.name for p in root.rglob("*") if p.is_dir()}


@pytest.mark.parametrize("shape", list(ht.SHAPES))
def test_restore_to_every_earlier_write_id_equals_its_snapshot(catalog, shape):
    ht.make_table(catalog, shape, **ALL)
    assert ht.history(catalog, "db.h") == [1, 2, 3, 4, 5, 6]
    snaps = {w: ht.with_ids(catalog, "db.h", as_of_write_id=w) for w in range(0, 7)}
    records = len(catalog.commit_records("db.h"))
    restores: list[int] = []
    for w in (5, 3, 0, 1, 4, 2):
        r = restore(catalog, "db.h", w)
        assert not r.noop and r.write_id == records + 1, r
        records += 1
        now = ht.with_ids(catalog, "db.h")
        assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=w)
        # rows still there keep their ROW__ID; rows brought back are new versions of the restore
        # (events); a new base rewrites every row of its partition as a new version; rows
        # equal in value to W's keep the version an earlier restore gave them
        restores.append(r.write_id)
        new = now - (now & snaps[w])
        assert all(k[-1][0] in restores for k in new.elements())
        mine = sum(1 for k in now.elements() if k[-1][0] == r.write_id)
        if set(r.methods.values()) == {"events"}:
            assert mine == r.rows_inserted
        else:
            assert mine >= r.rows_inserted
        rec = catalog.commit_records("db.h")[-1]
        assert rec.write_id == r.write_id
        assert rec.stats["operations"] == ["restore"] and rec.stats["restored_to_write_id"] == w
        assert rec.stats["rows_inserted"] == r.rows_inserted
        assert rec.stats["rows_deleted"] == r.rows_deleted
        assert set(rec.stats["restore_method"].values()) <= {"events", "base"}
        # time travel to the write ids before the restores is unchanged
        for old in range(0, 7):
            assert ht.with_ids(catalog, "db.h", as_of_write_id=old) == snaps[old], old
    # and back to the latest state before the restores
    restore(catalog, "db.h", 6)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=6)


@pytest.mark.parametrize("shape", ["keyed_bucketed", "unkeyed_partitioned_bucketed"])
def test_rollback_undoes_the_last_commit_and_a_rollback_of_it_redoes_it(catalog, shape):
    ht.make_table(catalog, shape, **ALL)
    ht.history(catalog, "db.h")
    at6 = ht.values(catalog, "db.h")
    r = rollback(catalog, "db.h")
    assert (r.operation, r.to_write_id, r.write_id) == ("rollback", 5, 7)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=5)
    assert catalog.commit_records("db.h")[-1].stats["operations"] == ["rollback"]
    r2 = rollback(catalog, "db.h")
    assert (r2.to_write_id, r2.write_id) == (6, 8)
    assert ht.values(catalog, "db.h") == at6
    # a commit that changed nothing is skipped: the rollback undoes the one before it
    ht.drop(catalog, "db.h", [12345])  # write id 9: deletes nothing
    r3 = rollback(catalog, "db.h")
    assert r3.to_write_id == 7
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=5)


@pytest.mark.parametrize("shape", ["keyed_bucketed", "keyed_partitioned_unbucketed"])
def test_a_new_base_or_events_per_partition(catalog, shape):
    ht.make_table(catalog, shape, **ALL)
    ht.history(catalog, "db.h")
    at6 = ht.with_ids(catalog, "db.h", as_of_write_id=6)
    r = restore(catalog, "db.h", 2, base_fraction=0.0)  # every changed partition: a base
    assert set(r.methods.values()) == {"base"}
    assert "base_0000007" in leaves(catalog)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=2)
    assert ht.with_ids(catalog, "db.h", as_of_write_id=6) == at6  # time travel unchanged
    r = restore(catalog, "db.h", 6, base_fraction=1e9)  # events everywhere
    assert set(r.methods.values()) == {"events"}
    assert "delete_delta_0000008_0000008_0000" in leaves(catalog)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=6)
    # default: more than half the rows of a partition change -> base; a few -> events
    r = restore(catalog, "db.h", 0)  # empty the table: bases
    assert set(r.methods.values()) == {"base"} and ht.values(catalog, "db.h") == {}
    r = restore(catalog, "db.h", 8)
    ht.put(catalog, "db.h", [2], "z")
    r = restore(catalog, "db.h", 10)
    assert set(r.methods.values()) == {"events"} and (r.rows_deleted, r.rows_inserted) == (1, 1)


@pytest.mark.parametrize("shape", list(ht.SHAPES))
def test_restore_after_major_compaction_and_clean_within_retention(catalog, shape):
    ht.make_table(catalog, shape, **ALL)
    ht.history(catalog, "db.h")
    snaps = {w: ht.with_ids(catalog, "db.h", as_of_write_id=w) for w in range(0, 7)}
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog)
    r = restore(catalog, "db.h", 3)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=3)
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=r.write_id)
    for w in range(0, 7):
        assert ht.with_ids(catalog, "db.h", as_of_write_id=w) == snaps[w], w


def test_refusals_before_anything_is_written(catalog):
    ht.make_table(catalog, "keyed_bucketed", **{RETAIN_COMMITS: "2", RETAIN_HOURS: "0"})
    ht.history(catalog, "db.h")
    at.write(catalog, "db.h", {0: [(99, "x")]}, end="abort")  # write id 7 aborted
    txn, _w8 = at.write(catalog, "db.h", {0: [(98, "y")]}, end="open")  # write id 8 open
    before_dirs, before_records = leaves(catalog), len(catalog.commit_records("db.h"))

    def refused(w: int, pattern: str) -> None:
        with pytest.raises(RestoreError, match=pattern):
            restore(catalog, "db.h", w)
        assert leaves(catalog) == before_dirs
        assert len(catalog.commit_records("db.h")) == before_records

    refused(99, r"restore db\.h to write id 99: no such write id \(write ids allocated: 1\.\.8\)")
    refused(-1, "no such write id")
    refused(7, "write id 7 was aborted")
    refused(8, r"write id 8 is not committed yet")
    refused(
        3,
        r"write id 3 is outside history retention \(write ids 4\.\.6 retained "
        r"\(2 commits / 0 h\)\); the oldest write id that can be restored is 4",
    )
    catalog.abort_transaction(txn)

    # nothing to do: no commit
    r = restore(catalog, "db.h", 6)
    assert r.noop and r.write_id is None and "nothing to do" in r.summary()
    assert len(catalog.commit_records("db.h")) == before_records

    # within retention again, but the files are cleaned: Hive's error naming what is left
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "0"})
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog)
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "100"})
    with pytest.raises(NotEnoughHistoryError, match="oldest write id still readable is 6"):
        restore(catalog, "db.h", 4)
    assert len(catalog.commit_records("db.h")) == before_records


def test_rollback_with_nothing_to_roll_back_is_refused(catalog):
    ht.make_table(catalog, "unkeyed_unpartitioned")
    with pytest.raises(RestoreError, match="rollback db.h: no committed write changed its data"):
        rollback(catalog, "db.h")


def test_cli_restore_and_rollback(catalog, warehouse, monkeypatch):
    from acidflow.cli.app import app

    ht.make_table(catalog, "keyed_partitioned_unbucketed", **ALL)
    ht.history(catalog, "db.h")
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("ACIDFLOW_CATALOG_URL", f"sqlite:///{warehouse / '_acidflow_catalog.db'}")
    runner = CliRunner()
    res = runner.invoke(app, ["restore", "db.h", "--to-write-id", "2"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert res.output.startswith("restored db.h to write id 2 as write id 7 (txn ")
    assert "rows deleted" in res.output and "rows inserted" in res.output
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=2)
    res = runner.invoke(app, ["rollback", "db.h", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["operation"], out["to_write_id"], out["write_id"]) == ("rollback", 6, 8)
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=6)
    res = runner.invoke(app, ["restore", "db.h", "--to-write-id", "8"])
    assert res.exit_code == 0 and "nothing to do" in res.output, res.output
    res = runner.invoke(app, ["restore", "db.h", "--to-write-id", "42"])
    assert res.exit_code != 0 and "no such write id" in str(res.exception)


def test_no_silent_reads_below_a_restore_base_once_history_is_cleaned(catalog):
    # a restore by a new (INSERT OVERWRITE) base, then the compacted history below it goes:
    # a read below both bases must fail, not read the remaining deltas as the whole history
    ht.make_table(catalog, "keyed_partitioned_unbucketed", **ALL)
    ht.history(catalog, "db.h")
    at3 = ht.values(catalog, "db.h", as_of_write_id=3)
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog)
    restore(catalog, "db.h", 2, base_fraction=0.0)  # base_7 per partition
    assert ht.values(catalog, "db.h", as_of_write_id=3) == at3  # below the new base, kept
    catalog.set_table_properties("db.h", {RETAIN_COMMITS: "0"})
    ht.compact(catalog, "db.h", "major")
    cleaner.run_cleaner(catalog)
    assert "base_0000007" in leaves(catalog)
    with pytest.raises(NotEnoughHistoryError, match="oldest write id still readable is 7"):
        ht.values(catalog, "db.h", as_of_write_id=3)


def test_restore_across_a_schema_change_is_refused_until_the_columns_are_back(catalog):
    """A restore keeps today's columns: to a write id before a rename it is refused naming
    both column lists, nothing is written; once the rename is undone it restores."""
    ht.make_table(catalog, "keyed_bucketed", **ALL)
    w1 = ht.put(catalog, "db.h", [1, 2], "a")
    alter_table(catalog, "db.h", rename_column=("v", "val"))
    ht.put(catalog, "db.h", [3], "b")
    before = leaves(catalog)
    with pytest.raises(
        RestoreError,
        match=r"columns changed after write id 1 \(id int, v "
        r"string -> id int, val string\)",
    ):
        restore(catalog, "db.h", w1)
    assert leaves(catalog) == before
    alter_table(catalog, "db.h", rename_column=("val", "v"))
    res = restore(catalog, "db.h", w1)
    assert res.rows_deleted == 1 and res.rows_inserted == 0
    assert ht.values(catalog, "db.h") == ht.values(catalog, "db.h", as_of_write_id=w1)
    assert sorted(v[0] for v in ht.values(catalog, "db.h").elements()) == [1, 2]
