"""Time travel shows only states that existed: ``as_of_write_id=W`` is the committed state
right after W's commit, ``as_of_timestamp=T`` the one after the last commit at or before T
(acidflow.format.timetravel), on real files, when commits interleave with write id order."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.read import history
from acidflow.read import table as reads

NAME = "db.tt"


def make(catalog) -> None:
    catalog.create_table(
        TableDef(
            name=NAME,
            columns=[Column("id", "int"), Column("v", "string")],
            primary_key=["id"],
        )
    )


def rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int32()), "v": pa.array([f"{tag}{i}" for i in ids], pa.string())}
    )


def writer(catalog, ids: list[int], tag: str) -> Transaction:
    """A transaction that wrote ``ids`` (its write id allocated) and is still open."""
    txn = Transaction(catalog, heartbeat_s=0)
    txn.begin()
    txn.upsert(NAME, rows(ids, tag))
    return txn


def ids_as_of(catalog, **kw) -> list[int]:
    return sorted(reads.read_table(None, catalog, NAME, **kw).column("id").to_pylist())


def committed_at(catalog, txn: Transaction):
    return catalog.get_transaction(txn.txn_id).committed_at


def test_interleaved_commits_show_only_states_that_existed(catalog):
    make(catalog)
    a = writer(catalog, [1], "a")  # write id 1, open
    b = writer(catalog, [2], "b")  # write id 2
    b.commit()
    time.sleep(0.02)
    c = writer(catalog, [3], "c")  # write id 3, stays open
    d = writer(catalog, [4], "d")  # write id 4
    d.commit()
    time.sleep(0.02)
    a.commit()  # write id 1 commits last
    assert [a._write_ids[NAME], b._write_ids[NAME], c._write_ids[NAME], d._write_ids[NAME]] == [
        1,
        2,
        3,
        4,
    ]

    # right after B's commit: A still open
    assert ids_as_of(catalog, as_of_write_id=2) == [2]
    # right after D's commit: A and C still open
    assert ids_as_of(catalog, as_of_write_id=4) == [2, 4]
    v = catalog.valid_write_ids(NAME, as_of_write_id=4)
    assert (v.high_watermark, v.open_write_ids, v.aborted_write_ids) == (4, (1, 3), ())
    # right after A's commit: B and D had committed before it (write ids above 1); C open
    assert ids_as_of(catalog, as_of_write_id=1) == [1, 2, 4]
    v = catalog.valid_write_ids(NAME, as_of_write_id=1)
    assert (v.high_watermark, v.open_write_ids, v.min_open_write_id) == (4, (3,), 3)
    assert ids_as_of(catalog, as_of_write_id=0) == []
    assert ids_as_of(catalog) == [1, 2, 4]

    # by time: between B's and D's commits, before everything, after A
    tb, td, ta = committed_at(catalog, b), committed_at(catalog, d), committed_at(catalog, a)
    assert tb < td < ta
    assert ids_as_of(catalog, as_of_timestamp=tb) == [2]
    assert ids_as_of(catalog, as_of_timestamp=tb + (td - tb) / 2) == [2]
    assert ids_as_of(catalog, as_of_timestamp=td) == [2, 4]
    assert ids_as_of(catalog, as_of_timestamp=tb - timedelta(seconds=1)) == []
    assert ids_as_of(catalog, as_of_timestamp=ta) == [1, 2, 4]
    # a naive time is UTC
    naive = (tb + (td - tb) / 2).replace(tzinfo=None)
    assert ids_as_of(catalog, as_of_timestamp=naive) == [2]
    assert history.write_id_at(catalog, NAME, ta) == 1
    # the command line: cat --as-of-timestamp (UTC)
    from typer.testing import CliRunner

    from acidflow.cli.app import app

    res = CliRunner().invoke(
        app, ["cat", NAME, "--as-of-timestamp", naive.strftime("%Y-%m-%dT%H:%M:%S.%f")]
    )
    assert res.exit_code == 0, res.output
    assert [json.loads(line)["id"] for line in res.output.splitlines()] == [2]

    # incremental reads go by the states: from B's state to A's, A and D came in
    changes = reads.read_incremental(None, catalog, NAME, 2, 1)
    assert sorted(zip(changes.column("op").to_pylist(), changes.column("id").to_pylist())) == [
        ("I", 1),
        ("I", 4),
    ]
    changes = reads.read_incremental(None, catalog, NAME, start_timestamp=td, end_timestamp=ta)
    assert changes.column("id").to_pylist() == [1]
    with pytest.raises(ValueError, match="commit order"):
        reads.read_incremental(None, catalog, NAME, 1, 2)
    c.abort("test")


def test_add_column_committed_after_a_higher_write_id(catalog):
    """A schema change holding write id 2 commits after an insert with write id 3: as of 3
    the table has the old columns and the insert's rows; as of 2 both."""
    make(catalog)
    writer(catalog, [1], "a").commit()  # write id 1
    alter = catalog.open_transaction()
    assert catalog.allocate_write_id(alter, NAME) == 2
    b = writer(catalog, [2], "b")  # write id 3, written with the old columns
    b.commit()
    catalog.alter_schema(
        alter,
        NAME,
        [Column("id", "int"), Column("v", "string"), Column("extra", "int")],
        change={"op": "add_columns", "columns": ["extra"]},
    )
    catalog.commit_transaction(alter)

    then = reads.read_table(None, catalog, NAME, as_of_write_id=3)
    assert then.column_names == ["id", "v"]
    assert sorted(then.column("id").to_pylist()) == [1, 2]
    assert [c.name for c in catalog.schema_at(NAME, 3)] == ["id", "v"]
    after = reads.read_table(None, catalog, NAME, as_of_write_id=2)
    assert after.column_names == ["id", "v", "extra"]
    assert sorted(after.column("id").to_pylist()) == [1, 2]
    assert reads.read_table(None, catalog, NAME, as_of_write_id=1).column_names == ["id", "v"]
