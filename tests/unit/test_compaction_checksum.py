"""The compaction verification digest (``verify.checksum_batches``): independent of row order
and batch boundaries, sensitive to any changed value, ROW__ID or NULL, in every column type."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from acidflow.maintenance import verify as C
from acidflow.read import snapshot

NAMES = ["i", "s", "ts", "m", "d", "b", "bi", "day"]


def batch(rows: list[tuple]) -> pa.RecordBatch:
    """rows: ``((writeid, bucketid, rowid), i, s, ts, m, d, b, bi, day)``."""
    rid = pa.StructArray.from_arrays(
        [
            pa.array([r[0][k] for r in rows], t)
            for k, t in enumerate((pa.int64(), pa.int32(), pa.int64()))
        ],
        names=["writeid", "bucketid", "rowid"],
    )
    types = [
        pa.int64(),
        pa.string(),
        pa.timestamp("us"),
        pa.decimal128(10, 2),
        pa.float64(),
        pa.bool_(),
        pa.binary(),
        pa.date32(),
    ]
    cols = [pa.array([r[k + 1] for r in rows], t) for k, t in enumerate(types)]
    return pa.RecordBatch.from_arrays([rid] + cols, names=[snapshot.ROW_ID] + NAMES)


ROWS = [
    (
        (1, 536870912, k),
        k,
        f"s{k}",
        dt.datetime(2024, 1, 1, 0, 0, k % 60, k),
        decimal.Decimal(k) / 4,
        k / 3,
        k % 2 == 0,
        bytes([k % 256]) * 3,
        dt.date(2024, 1, 1) + dt.timedelta(days=k),
    )
    for k in range(200)
]


def digest(rows, chunk=50):
    return C.checksum_batches(
        [batch(rows[i : i + chunk]) for i in range(0, len(rows), chunk)], NAMES
    )


def test_order_and_batch_boundaries_do_not_matter():
    base = digest(ROWS)
    assert base.rows == 200
    assert digest(list(reversed(ROWS)), chunk=7) == base
    assert digest(ROWS[100:] + ROWS[:100], chunk=200) == base
    assert C.checksum_batches([], NAMES) == C.Checksum()
    assert C.checksum_batches([batch(ROWS[:0]), batch(ROWS[:3])], NAMES) == digest(ROWS[:3])


@pytest.mark.parametrize("pos", range(0, 9))
def test_any_changed_value_or_row_id_changes_the_digest(pos):
    changed = list(ROWS)
    r = list(changed[17])
    r[pos] = {
        0: (1, 536870912, 999),
        1: 9999,
        2: "other",
        3: dt.datetime(1999, 1, 1),
        4: decimal.Decimal("0.01"),
        5: -1.0,
        6: not r[6],
        7: b"zz",
        8: dt.date(1999, 1, 1),
    }[pos]
    changed[17] = tuple(r)
    assert digest(changed) != digest(ROWS)


@pytest.mark.parametrize("pos", range(1, 9))
def test_null_differs_from_every_value(pos):
    changed = list(ROWS)
    r = list(changed[3])
    r[pos] = None
    changed[3] = tuple(r)
    assert digest(changed) != digest(ROWS)


def test_a_missing_or_duplicated_row_is_caught():
    assert digest(ROWS[:-1]) != digest(ROWS)
    assert digest(ROWS + ROWS[:1]) != digest(ROWS)
    # two rows swapping their values (same multiset of values, other ROW__IDs) differ too
    swapped = list(ROWS)
    swapped[0], swapped[1] = (ROWS[0][0],) + ROWS[1][1:], (ROWS[1][0],) + ROWS[0][1:]
    assert digest(swapped) != digest(ROWS)


def test_batches_with_other_integer_widths_are_unified():
    b = batch(ROWS[:10])
    narrow = pa.RecordBatch.from_arrays(
        [b.column(0), b.column(1).cast(pa.int32())] + list(b.columns[2:]), names=b.schema.names
    )
    assert C.checksum_batches([batch(ROWS[10:20]), narrow], NAMES) == digest(ROWS[:20])
