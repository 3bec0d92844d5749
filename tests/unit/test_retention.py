"""The retention rule (acidflow.storage.retention), pure: the oldest retained write id from the
commit records and the two properties, the property checks, and the break points that stand
for every retained high watermark."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from acidflow.catalog import Column, TableDef
from acidflow.format.layout import (
    DirEntry,
    NotEnoughHistoryError,
    ValidWriteIdList,
    format_base,
    format_delta,
    get_acid_state,
)
from acidflow.storage import retention as rt

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def commits(*hours_ago: float | None) -> list[tuple[int, datetime | None]]:
    return [
        (i + 1, None if h is None else NOW - timedelta(hours=h)) for i, h in enumerate(hours_ago)
    ]


def test_commits_bound_keeps_the_snapshot_before_the_last_n_commits():
    old = commits(*([100.0] * 12))  # 12 commits, all older than any hours bound
    assert rt.oldest_retained_write_id(old, rt.RetentionPolicy(10, 0), NOW) == 2
    assert rt.oldest_retained_write_id(old, rt.RetentionPolicy(0, 0), NOW) == 12
    assert rt.oldest_retained_write_id(old, rt.RetentionPolicy(11, 0), NOW) == 1
    assert rt.oldest_retained_write_id(old, rt.RetentionPolicy(12, 0), NOW) == 0  # all + empty
    assert rt.oldest_retained_write_id([], rt.RetentionPolicy(0, 0), NOW) == 0


def test_hours_bound_keeps_the_snapshot_current_at_now_minus_hours_and_either_bound_wins():
    hist = commits(50, 30, 25, 20, 2, 1)  # write ids 1..6
    # 24 h ago the table was at write id 3 (committed 25 h ago): 3..6 retained
    assert rt.oldest_retained_write_id(hist, rt.RetentionPolicy(0, 24), NOW) == 3
    assert rt.oldest_retained_write_id(hist, rt.RetentionPolicy(0, 0), NOW) == 6
    assert rt.oldest_retained_write_id(hist, rt.RetentionPolicy(0, 100), NOW) == 0
    # either bound retains: the smaller one wins
    assert rt.oldest_retained_write_id(hist, rt.RetentionPolicy(4, 24), NOW) == 2
    assert rt.oldest_retained_write_id(hist, rt.RetentionPolicy(1, 24), NOW) == 3
    # unknown commit times (adopted history) count as old
    assert rt.oldest_retained_write_id(commits(None, None, 1), rt.RetentionPolicy(0, 24), NOW) == 2


def test_policy_from_properties_environment_and_defaults():
    assert rt.retention_policy("db.t", {}, env={}) == rt.RetentionPolicy(10, 24.0)
    assert rt.retention_policy(
        "db.t",
        {},
        env={"ACIDFLOW_HISTORY_RETAIN_COMMITS": "0", "ACIDFLOW_HISTORY_RETAIN_HOURS": "1.5"},
    ) == rt.RetentionPolicy(0, 1.5)
    props = {rt.RETAIN_COMMITS: "3", rt.RETAIN_HOURS: "0"}
    assert rt.retention_policy(
        "db.t", props, env={"ACIDFLOW_HISTORY_RETAIN_COMMITS": "9"}
    ) == rt.RetentionPolicy(3, 0.0)
    assert rt.RetentionPolicy(10, 24.0).describe() == "10 commits / 24 h"
    with pytest.raises(ValueError, match="ACIDFLOW_HISTORY_RETAIN_HOURS='x'"):
        rt.retention_policy("db.t", {}, env={"ACIDFLOW_HISTORY_RETAIN_HOURS": "x"})


@pytest.mark.parametrize(
    "key,value",
    [
        (rt.RETAIN_COMMITS, "-1"),
        (rt.RETAIN_COMMITS, "2.5"),
        (rt.RETAIN_COMMITS, "ten"),
        (rt.RETAIN_HOURS, "-3"),
        (rt.RETAIN_HOURS, "nan"),
        (rt.RETAIN_HOURS, "inf"),
        (rt.RETAIN_HOURS, ""),
    ],
)
def test_bad_property_values_are_refused_naming_table_property_and_value(key, value):
    td = TableDef(name="db.t", columns=[Column("a", "int")], properties={key: value})
    with pytest.raises(ValueError) as err:
        td.validate()
    assert "db.t" in str(err.value) and key in str(err.value) and repr(value) in str(err.value)


def _random_layout(rng: random.Random) -> tuple[list[DirEntry], ValidWriteIdList]:
    hwm = rng.randint(4, 14)
    aborted = sorted(rng.sample(range(1, hwm + 1), rng.randint(0, 2)))
    opened = sorted(
        rng.sample([w for w in range(1, hwm + 1) if w not in aborted], rng.randint(0, 1))
    )
    names: set[str] = set()
    for w in range(1, hwm + 1):
        names.add(format_delta(w, w, 0))
        if rng.random() < 0.4:
            names.add(format_delta(w, w, 0, delete=True))
    for _ in range(rng.randint(0, 3)):  # minor compactions
        lo = rng.randint(1, hwm)
        hi = rng.randint(lo, hwm)
        names.add(format_delta(lo, hi))
        names.add(format_delta(lo, hi, delete=True))
    for _ in range(rng.randint(0, 2)):  # major compactions
        names.add(format_base(rng.randint(1, hwm)))
    entries = [DirEntry(n, True) for n in names] + [
        DirEntry(n + "/bucket_00000", False) for n in names
    ]
    return entries, ValidWriteIdList("db.t", hwm, opened, aborted)


def test_break_points_give_the_same_union_as_every_write_id():
    rng = random.Random(12)
    compacted = lambda name: True  # noqa: E731 - every base here is a compacted one
    for _ in range(400):
        entries, valid = _random_layout(rng)
        oldest = rng.randint(0, valid.high_watermark)

        def needed(ws):
            out = set()
            for w in ws:
                try:
                    st = get_acid_state(entries, rt.snapshot_at(valid, w), compacted)
                except NotEnoughHistoryError:
                    continue
                out |= set(st.current_dirs)
            return out

        every = needed(range(oldest, valid.high_watermark + 1))
        assert needed(rt.snapshot_points(entries, valid, oldest)) == every


def test_snapshot_at_keeps_only_exceptions_at_or_below_it():
    v = ValidWriteIdList("db.t", 9, [4, 8], [2, 7])
    s = rt.snapshot_at(v, 5)
    assert (s.high_watermark, s.open_write_ids, s.aborted_write_ids) == (5, (4,), (2,))


def test_history_loss_counts_only_deltas_no_wider_delta_covers_and_originals():
    remaining = ["delta_0000001_0000006", "delete_delta_0000001_0000006", "base_0000009"]
    assert (
        rt.history_loss(
            ["delta_0000002_0000002_0000", "delete_delta_0000003_0000003_0000", "base_0000004"],
            remaining,
        )
        is None
    )
    assert (
        rt.history_loss(["delta_0000007_0000007_0000", "delta_0000002_0000002_0000"], remaining)
        == 7
    )
    assert rt.history_loss(["delete_delta_0000007_0000008"], remaining) == 7
    assert rt.history_loss(["000000_0", "delta_0000007_0000007_0000"], remaining) == 0
    assert rt.history_loss([], remaining) is None
