"""The ACID v1 merge rule (Hive 2.3 ``OrcRawRecordMerger``): newest valid event per ROW__ID."""

from __future__ import annotations

import numpy as np

from acidflow.format.acidv1 import is_v2, winning_events


def _win(events: list[tuple[int, int, int, int, int, int]], valid: list[bool]) -> list[int]:
    op, ot, b, r, ct, st = (np.array(c) for c in zip(*events))
    return winning_events(op, ot, b, r, ct, st, np.array(valid)).tolist()


def test_newest_valid_event_per_row_id_wins():
    events = [
        (0, 1, 0, 0, 1, -1),  # 0: insert row (1,0,0)
        (1, 1, 0, 0, 3, -1),  # 1: update it in txn 3
        (1, 1, 0, 0, 5, -1),  # 2: update in txn 5 (invalid: must not hide txn 3's)
        (0, 1, 0, 1, 1, -1),  # 3: insert row (1,0,1)
        (2, 1, 0, 1, 4, -1),  # 4: delete it in txn 4
        (0, 2, 1, 0, 2, -1),  # 5: insert row (2,1,0)
        (1, 2, 1, 0, 6, 0),  # 6: update, statement 0
        (1, 2, 1, 0, 6, 1),  # 7: update, statement 1 of the same txn: wins
    ]
    valid = [True, True, False, True, True, True, True, True]
    assert _win(events, valid) == [1, 7]


def test_version_marks():
    assert is_v2(2, {})
    assert is_v2(0, {"hive.acid.version": b"2"})
    assert not is_v2(0, {})
    assert not is_v2(0, {"hive.acid.version": b"x"})
