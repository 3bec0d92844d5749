"""Merge rules of a CDC batch (pure): late events, latest event per key, policies, key
changes, keyless tables."""

import pytest

from acidflow.cdc.changes import POSITION_COLUMN, Policies, StoredRow, fold, fold_keyless
from acidflow.sources.records import Change

COLS = [("id", "bigint"), ("name", "string"), ("age", "int"), (POSITION_COLUMN, "string")]
KEY = ["id"]


def ch(op, pos, after=None, before=None, missing=(), seq=0):
    return Change("s.t", op, pos, after, before, frozenset(missing), f"f:{seq}", seq)


def stored(id_, name, age, pos, rowid):
    return StoredRow(
        {"id": id_, "name": name, "age": age, POSITION_COLUMN: pos}, (1, 536870912, rowid), pos
    )


def by_id(rows):
    return {r["id"]: r for r in rows}


def test_latest_event_per_key_wins_and_partial_updates_keep_columns():
    changes = [
        ch("I", "03", {"id": 1, "name": "a", "age": 1}, seq=0),
        ch("U", "05", {"id": 1, "age": 2}, seq=1),  # name absent: keep "a"
        ch("U", "04", {"id": 1, "name": "b", "age": 9}, seq=2),  # older than 05
        ch("U", "06", {"id": 2, "name": None, "age": 7}, missing={"name"}, seq=3),
    ]
    plan = fold(changes, {(2,): stored(2, "old", 5, "01", 0)}, COLS, KEY)
    rows = by_id(plan.inserts)
    # events of key 1 applied in position order: I(03), U(04), U(05)
    assert rows[1] == {"id": 1, "name": "b", "age": 2, POSITION_COLUMN: "05"}
    assert rows[2] == {"id": 2, "name": "old", "age": 7, POSITION_COLUMN: "06"}
    assert plan.deletes == [
        ({"id": 2, "name": "old", "age": 5, POSITION_COLUMN: "01"}, (1, 536870912, 0))
    ]
    st = plan.stats
    assert (st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (1, 1, 0)
    assert st["events"] == 4 and st["ignored_late"] == 0


def test_late_events_never_overwrite_newer_rows():
    s = {(1,): stored(1, "new", 9, "10", 3)}
    plan = fold(
        [
            ch("U", "09", {"id": 1, "name": "stale", "age": 1}),
            ch("D", "10", before={"id": 1}, seq=1),  # equal position: replay, ignored
            ch("I", "05", {"id": 1, "name": "older", "age": 0}, seq=2),
        ],
        s,
        COLS,
        KEY,
    )
    assert plan.inserts == [] and plan.deletes == []
    assert plan.stats["ignored_late"] == 3


def test_deletes_inserts_and_missing_keys_with_default_policies():
    s = {(1,): stored(1, "a", 1, "01", 0), (2,): stored(2, "b", 2, "01", 1)}
    plan = fold(
        [
            ch("D", "02", before={"id": 1}),
            ch("D", "02", before={"id": 3}, seq=1),  # delete of missing key
            ch("I", "02", {"id": 2, "name": "B", "age": 3}, seq=2),  # insert of existing
            ch("U", "02", {"id": 4, "name": "d", "age": 4}, seq=3),  # update of missing
            ch("I", "02", {"id": 5, "name": "e", "age": 5}, seq=4),
            ch("D", "03", before={"id": 5}, seq=5),
        ],
        s,
        COLS,
        KEY,
    )  # insert+delete: nothing
    st = plan.stats
    assert (st["rows_deleted"], st["rows_updated"], st["rows_inserted"]) == (1, 1, 1)
    assert (st["deletes_of_missing"], st["inserts_of_existing"], st["updates_of_missing"]) == (
        1,
        1,
        1,
    )
    assert sorted(by_id(plan.inserts)) == [2, 4]
    assert sorted(rid[2] for _, rid in plan.deletes) == [0, 1]


def test_quarantine_policies():
    s = {(2,): stored(2, "b", 2, "01", 1)}
    changes = [
        ch("D", "02", before={"id": 3}),
        ch("I", "02", {"id": 2, "name": "x", "age": 1}, seq=1),
        ch("U", "02", {"id": 4, "name": "d", "age": 4}, seq=2),
    ]
    plan = fold(changes, s, COLS, KEY, Policies("quarantine", "quarantine", "quarantine"))
    assert plan.inserts == [] and plan.deletes == []
    assert sorted(b.reason for b in plan.bad) == [
        "delete of a key that is not stored",
        "insert of a key that is already stored",
        "update of a key that is not stored",
    ]
    assert plan.stats["quarantined"] == 3
    with pytest.raises(ValueError, match="update_missing"):
        Policies(update_missing="ignore")


def test_bad_values_and_keys_are_quarantined_with_reason():
    plan = fold(
        [
            ch("I", "1", {"id": "x", "name": "a", "age": 1}),
            ch("I", "1", {"name": "a"}, seq=1),
            ch("I", "1", {"id": None, "name": "a"}, seq=2),
            ch("I", "1", {"id": 7, "age": "old"}, seq=3),
        ],
        {},
        COLS,
        KEY,
    )
    reasons = [b.reason for b in plan.bad]
    assert reasons[0].startswith("column id: ")
    assert reasons[1] == "primary key column(s) ['id'] missing in the after image"
    assert reasons[2] == "NULL in primary key column(s) ['id']"  # ingest's reason
    assert reasons[3].startswith("column age: ")
    assert plan.inserts == [] and '"op": "I"' in plan.bad[0].raw


def test_key_change_is_delete_plus_insert():
    s = {(1,): stored(1, "a", 1, "01", 0)}
    plan = fold([ch("U", "02", {"id": 9, "name": "a", "age": 1}, before={"id": 1})], s, COLS, KEY)
    assert [r["id"] for r in plan.inserts] == [9]
    assert plan.deletes[0][1] == (1, 536870912, 0)
    assert plan.stats["rows_deleted"] == 1 and plan.stats["rows_inserted"] == 1


def test_keyless_inserts_and_full_row_updates():
    cols = [("a", "int"), ("b", "string"), (POSITION_COLUMN, "string")]
    stored_rows = [({"a": 1, "b": "x"}, (1, 1, 0)), ({"a": 1, "b": "x"}, (1, 1, 1))]

    def match(before, taken):
        for row, rid in stored_rows:
            if rid not in taken and row == before:
                return row, rid
        return None

    plan = fold_keyless(
        [
            Change("s.h", "I", "1", {"a": 5, "b": "n"}, None, seq=0),
            Change("s.h", "D", "2", None, {"a": 1, "b": "x"}, seq=1),
            Change("s.h", "D", "3", None, {"a": 1, "b": "x"}, seq=2),  # the duplicate row
            Change("s.h", "D", "4", None, {"a": 1, "b": "x"}, seq=3),  # none left: missing
            Change("s.h", "U", "5", {"a": 5, "b": "m"}, {"a": 5, "b": "n"}, seq=4),  # pending row
            Change("s.h", "U", "6", {"a": 2, "b": "y"}, {"a": 2}, seq=5),  # no full old row
        ],
        cols,
        match,
    )
    assert [r["b"] for r in plan.inserts] == ["m"]
    assert [rid for _, rid in plan.deletes] == [(1, 1, 0), (1, 1, 1)]
    st = plan.stats
    assert (st["rows_inserted"], st["rows_deleted"], st["deletes_of_missing"]) == (1, 2, 1)
    assert "REPLICA IDENTITY FULL" in plan.bad[0].reason


def test_tombstones_stop_late_events_resurrecting_deleted_keys():
    plan = fold(
        [
            ch("U", "04", {"id": 1, "name": "late", "age": 1}),
            ch("I", "05", {"id": 1, "name": "late2", "age": 1}, seq=1),
            ch("I", "07", {"id": 2, "name": "new", "age": 2}, seq=2),
            ch("D", "08", before={"id": 3}, seq=3),
        ],
        {},
        COLS,
        KEY,
        tombstones={(1,): "05", (2,): "06"},
    )
    assert [r["id"] for r in plan.inserts] == [2]
    assert plan.stats["ignored_late"] == 2
    assert plan.tombstones == [((3,), "08")]  # delete of a missing key still leaves one
