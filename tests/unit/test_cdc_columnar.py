"""``acidflow.cdc.columnar``'s coercion and batch selection, value for value against the row
path's ``acidflow.cdc.changes.coerce`` / ``normalize_events`` (no Spark)."""

from datetime import date, datetime
from decimal import Decimal

import pytest

from acidflow.cdc import changes as chg
from acidflow.cdc import columnar
from acidflow.sources.records import Change

CASES = {
    "timestamp": [
        "2024-01-02 03:04:05",
        "2024-01-02T03:04:05.5",
        "2024-01-02 03:04:05.123456",
        "2024-01-02:03:04:05",
        "2024-01-02 03:04:05+02:00",
        "2024-01-02 03:04:05-05",
        "2024-02-29 00:00:00",
        " 2024-01-02 03:04:05 ",
        "2024-01-02 03:04:05.1234567",
        "2024-01-02",
        datetime(2024, 1, 2, 3),
        date(2024, 1, 2),
        None,
    ],
    "date": [
        "2024-02-29",
        "1970-01-01",
        "2024-01-02 23:59:59",
        "2024-01-02T01:00:00+05:00",
        " 2024-01-02",
        date(2024, 3, 1),
        datetime(2024, 3, 1, 5),
        None,
    ],
    "decimal(6,2)": [
        Decimal("1.005"),
        Decimal("1.015"),
        Decimal("-0.005"),
        12,
        "3.14159",
        Decimal("9999.994"),
        1.25,
        None,
    ],
    "bigint": [0, -(1 << 63), (1 << 63) - 1, 3.0, Decimal("4"), "17", None],
    "int": [2147483647, -2147483648, "12", None],
    "smallint": [32767, -32768, None],
    "string": ["a", "", "ü", 12, Decimal("1.50"), True, {"a": [1, 2]}, [1], None],
    "varchar(3)": ["abc", "ab", 12, None],
    "char(4)": ["ab  ", "abcd", None],
    "boolean": [True, False, "t", "no", 1, 0, None],
    "double": [1, 2.5, Decimal("0.1"), "3e2", None],
}
BAD = {
    "timestamp": [
        "2024-02-30 00:00:00",
        "2024-01-02 24:00:00",
        "0000-01-01 00:00:00",
        "2024-01-02 03:04:60",
        "yesterday",
        5,
    ],
    "date": ["2023-02-29", "0000-01-01", "2024-13-01", "x"],
    "decimal(6,2)": ["99999.5", "abc", True],
    "bigint": [1 << 63, -(1 << 63) - 1, True, 1.5, "x"],
    "int": [2147483648, -2147483649],
    "smallint": [32768],
    "varchar(3)": ["abcd"],
    "boolean": ["maybe"],
}


@pytest.mark.parametrize("hive_type", sorted(CASES))
def test_coerce_column_equals_coerce(hive_type):
    values = CASES[hive_type]
    expected = []
    for v in values:
        try:
            expected.append(chg.coerce(v, hive_type))
        except chg.CoercionError:
            continue
    good = [v for v in values if _ok(v, hive_type)]
    assert columnar.coerce_column(good, hive_type).to_pylist() == expected
    # one value per array, so the fast and the value-by-value conversion both run
    for v in good:
        assert columnar.coerce_column([v], hive_type).to_pylist() == [chg.coerce(v, hive_type)]


def _ok(v, hive_type):
    try:
        chg.coerce(v, hive_type)
        return True
    except chg.CoercionError:
        return False


@pytest.mark.parametrize("hive_type", sorted(BAD))
def test_coerce_column_refuses_what_coerce_refuses(hive_type):
    for v in BAD[hive_type]:
        with pytest.raises(chg.CoercionError):
            chg.coerce(v, hive_type)
        with pytest.raises(chg.CoercionError):
            columnar.coerce_column(
                ["2024-01-02 00:00:00" if hive_type == "timestamp" else None, v], hive_type
            )


def test_the_fast_path_takes_only_whole_row_batches():
    cols = [("id", "bigint"), ("v", "string"), (chg.POSITION_COLUMN, "string")]

    def ch(op, after=None, before=None, missing=frozenset(), seq=0):
        return Change("s.t", op, f"p{seq:03d}", after, before, missing, f"f:{seq}", seq)

    ok = [
        ch("I", {"id": 1}, seq=0),
        ch("U", {"id": 1, "v": "a"}, {"id": 1}, seq=1),
        ch("D", None, {"id": 1, "v": "a"}, seq=2),
    ]
    frame = columnar.event_frame(ok, cols, ["id"])
    assert frame is not None and frame.keys.column("id").to_pylist() == [1, 1, 1]
    assert frame.rows.column("v").to_pylist() == [None, "a"]  # the insert lacks v: NULL
    for bad in (
        [ch("U", {"id": 1}, {"id": 1})],  # partial image
        [ch("U", {"id": 2, "v": "a"}, {"id": 1})],  # key change
        [ch("U", {"id": 1, "v": "a"}, None, frozenset({"v"}))],  # _isMissing
        [ch("I", {"id": None, "v": "a"})],  # NULL key
        [ch("D", None, {"v": "a"})],  # delete without key
        [ch("I", {"id": "x", "v": "a"})],  # bad value
        [ch("I", {"id": 1}, {"id": True})],  # bad before value
        [ch("T")],
    ):  # truncate
        assert columnar.event_frame(ok + bad, cols, ["id"]) is None, bad
    assert columnar.event_frame(ok, [("f", "double"), *cols], ["f"]) is None  # float key
