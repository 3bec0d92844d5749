"""The late-event rule (acidflow.engine.ordering) in its scalar and Arrow forms, and that the CDC
fold follows the same rule (ties: the stored version stays)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.cdc import changes as chg
from acidflow.engine import ordering
from acidflow.sources.records import Change


@pytest.mark.parametrize(
    "incoming, stored, late",
    [
        (5, 7, True),
        (7, 7, True),
        (8, 7, False),
        (None, 1, True),
        (None, None, True),
        (1, None, False),
        ("2024-01-02", "2024-01-01", False),
        ("2024-01-01", "2024-01-01", True),
    ],
)
def test_is_late(incoming, stored, late):
    assert ordering.is_late(incoming, stored) is late


@pytest.mark.parametrize(
    "values, winner",
    [
        ([1, 3, 2], 1),
        ([2, 2], 1),
        ([None, 1], 1),
        ([1, None], 0),
        ([None, None], 1),
        ([3], 0),
    ],
)
def test_newest_index(values, winner):
    assert ordering.newest_index(values) == winner


def test_late_mask_arrow_matches_the_scalar_rule():
    incoming = [5, 7, 8, None, None, 1, 4]
    stored = [7, 7, 7, 1, None, None, None]
    found = [True, True, True, True, True, True, False]
    mask = ordering.late_mask_arrow(pa.array(incoming), pa.array(stored), pa.array(found))
    assert mask.to_pylist() == [
        f and ordering.is_late(i, s) for i, s, f in zip(incoming, stored, found)
    ]
    assert mask.null_count == 0


def test_latest_per_key_arrow_keeps_greatest_then_last_in_input_order():
    tbl = pa.table(
        {
            "id": [1, 1, 2, 2, 3, 3, 4],
            "v": ["a", "b", "c", "d", "e", "f", "g"],
            "ts": [2, 1, 5, 5, None, 0, None],
        }
    )
    out, lost = ordering.latest_per_key_arrow(tbl, ["id"], "ts")
    assert lost == 3
    assert out.to_pylist() == [
        {"id": 1, "v": "a", "ts": 2},
        {"id": 2, "v": "d", "ts": 5},
        {"id": 3, "v": "f", "ts": 0},
        {"id": 4, "v": "g", "ts": None},
    ]


def test_drop_late_arrow_keeps_stored_rows_of_late_keys():
    rows = pa.table({"id": [1, 2, 3, 4], "ts": [10, 5, None, 7]})
    found = pa.table({"id": [1, 2, 3], "ts": [9, 5, 1], "x": ["k1", "k2", "k3"]})
    fresh, current, late = ordering.drop_late_arrow(rows, found, ["id"], "ts")
    assert late == 2  # id 2 tie (stored wins), id 3 NULL incoming
    assert fresh.column("id").to_pylist() == [1, 4]
    assert current.column("x").to_pylist() == ["k1"]


def table(**kw):
    return TableDef(
        name="db.t",
        columns=[
            Column("id", "int"),
            Column("ts", "timestamp"),
            Column("flag", "boolean"),
            Column("m", "map<string,int>"),
        ],
        primary_key=["id"],
        **kw,
    )


def test_resolve_field():
    assert ordering.resolve_field(table(), ordering.TABLE_DEFAULT) is None
    assert ordering.resolve_field(table(ordering_column="ts"), ordering.TABLE_DEFAULT) == "ts"
    assert ordering.resolve_field(table(ordering_column="ts"), None) is None
    assert ordering.resolve_field(table(), "TS") == "ts"
    with pytest.raises(ordering.OrderingFieldError, match="'nope' is not a column of the table"):
        ordering.resolve_field(table(), "nope")
    for col in ("flag", "m"):
        with pytest.raises(ordering.OrderingFieldError, match="no order"):
            ordering.resolve_field(table(), col)


def test_cdc_fold_uses_the_same_tie_rule():
    cols = [("id", "int"), ("v", "string"), (chg.POSITION_COLUMN, "string")]
    stored = {
        (1,): chg.StoredRow(
            {"id": 1, "v": "old", chg.POSITION_COLUMN: "0005"}, (1, 536870912, 0), "0005"
        )
    }
    same = Change(
        table="t",
        op="U",
        position="0005",
        seq=0,
        after={"id": 1, "v": "tie"},
        before=None,
        source="f",
    )
    plan = chg.fold([same], stored, cols, ["id"])
    assert plan.stats["ignored_late"] == 1 and not plan.inserts
    newer = Change(
        table="t",
        op="U",
        position="0006",
        seq=0,
        after={"id": 1, "v": "new"},
        before=None,
        source="f",
    )
    plan = chg.fold([newer], stored, cols, ["id"])
    assert plan.inserts[0]["v"] == "new"
