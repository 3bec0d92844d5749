"""Timestamps and dates across Hive's whole range (0001-01-01 .. 9999-12-31) through the ORC
codec: both writers (pyarrow's columnar one, and pyorc for tables with a varchar column)
store them as Hive's ORC writer does (floor seconds, nanoseconds 0..999999999, as the ORC
readers report them), every reader gives them back exactly, and values Hive cannot store are
refused at write naming the column and the value."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyorc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidflow.errors import AcidflowError
from acidflow.format.orc import columnar as C
from acidflow.format.orc import files as F
from acidflow.format.orc import timestamps as T
from acidflow.storage.fs import TableFS

B0 = 536870912
EPOCH = dt.datetime(1970, 1, 1)
COLUMNAR = [("id", "int"), ("ts", "timestamp"), ("day", "date")]
PYORC = COLUMNAR + [("v", "varchar(8)")]
NS_RANGE = (dt.datetime(1677, 9, 22), dt.datetime(2262, 4, 11))
SENTINELS = [
    dt.datetime(9999, 12, 31, 0, 0),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1, 1, 1),
    dt.datetime(1600, 1, 1),
    dt.datetime(1960, 6, 15, 8, 0, 0, 123),
    dt.datetime(1960, 6, 15, 8, 0, 0, 500123),
    dt.datetime(1969, 12, 31, 23, 59, 58, 999999),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999),  # the last storable value before 1970
    dt.datetime(1970, 1, 1),
    dt.datetime(1677, 9, 21, 0, 12, 43, 145224),  # pyarrow's timestamp[ns] limits, and past
    dt.datetime(2262, 4, 11, 23, 47, 16, 854776),
]


def _us(v: dt.datetime) -> int:
    return (v - EPOCH) // dt.timedelta(microseconds=1)


def storable(v: dt.datetime) -> bool:
    return not (T.UNSTORABLE_US[0] <= _us(v) <= T.UNSTORABLE_US[1])


def events(columns, values, days=None):
    n = len(values)
    data = {
        "operation": pa.array([0] * n, pa.int32()),
        "originalTransaction": [1] * n,
        "bucket": [B0] * n,
        "rowId": list(range(n)),
        "currentTransaction": [1] * n,
        "id": pa.array(range(n), pa.int32()),
        "ts": pa.array(values, pa.timestamp("us")),
        "day": pa.array(days if days is not None else [None] * n, pa.date32()),
    }
    if any(c == "v" for c, _ in columns):
        data["v"] = [f"v{i % 7}" for i in range(n)]
    return pa.table(data)


def raw_seconds_nanos(path) -> list[tuple[int, int] | None]:
    """``(seconds, nanoseconds)`` of the ``ts`` column as ORC's reader reconstructs them (the
    C++ reader, which applies the same adjustment as Hive 3.1.3's Java ``TimestampTreeReader``)."""

    class Raw(pyorc.converters.ORCConverter):
        @staticmethod
        def from_orc(seconds, nanoseconds, timezone):
            return (seconds, nanoseconds)

        @staticmethod
        def to_orc(obj, timezone):  # pragma: no cover - read only
            raise NotImplementedError

    with open(path, "rb") as fh:
        rows = pyorc.Reader(
            fh, column_names=("row.ts",), converters={pyorc.TypeKind.TIMESTAMP: Raw}
        )
        return [r[0][0] for r in rows]


def hive_layout(v: dt.datetime | None) -> tuple[int, int] | None:
    """What Hive's reader reconstructs: floor seconds and nanoseconds 0..999999999."""
    if v is None:
        return None
    us = _us(v)
    return us // 1_000_000, us % 1_000_000 * 1000


def roundtrip(tmp_path, columns, values, days=None, name="f") -> None:
    """Write ``values`` (and ``days``) through ``write_event_table`` and through the streamed
    ``ColumnarEventWriter`` (one event per batch), read them back and check values and layout."""
    tfs = TableFS(str(tmp_path))
    ev = events(columns, values, days)
    paths = [str(tmp_path / f"{name}_table")]
    C.write_event_table(tfs, paths[0], columns, ev)
    if F.columnar_writable(columns):
        paths.append(str(tmp_path / f"{name}_stream"))
        w = C.ColumnarEventWriter(tfs, paths[1], columns)
        for b in ev.to_batches(max_chunksize=max(1, len(values) // 3)):
            w.write(C.event_batch(paths[1], columns, b, w.schema))
        assert w.close() is not None
    for path in paths:
        back = F.read_events(tfs, path)
        assert back.schema.field("ts").type == pa.timestamp("us")
        assert back.column("ts").to_pylist() == values, path
        if days is not None:
            assert back.column("day").to_pylist() == days, path
        assert raw_seconds_nanos(path) == [hive_layout(v) for v in values], path
        with open(path, "rb") as fh:  # stripe by stripe, as the snapshot reader reads
            orc = T.OrcReader(fh)
            got = [orc.read_stripe(s).column(5).field(1) for s in range(orc.nstripes)]
        assert [v for a in got for v in F.normalize_timestamps(a).to_pylist()] == values


@pytest.mark.parametrize("columns", [COLUMNAR, PYORC], ids=["columnar", "pyorc"])
def test_sentinels_and_pre_1970_fractions_round_trip(tmp_path, columns):
    days = [v.date() for v in SENTINELS]
    roundtrip(tmp_path, columns, SENTINELS + [None], days + [None])


def random_timestamps(rng: random.Random, n: int) -> list[dt.datetime]:
    """Timestamps in 0001..9999 with microseconds: uniform over the range, near 1970 (both
    sides), whole seconds and pre-1970 fractions; never in the unstorable second."""
    out: list[dt.datetime] = []
    while len(out) < n:
        pick = rng.random()
        if pick < 0.4:
            us = rng.randint(T.MIN_TIMESTAMP_US, T.MAX_TIMESTAMP_US)
        elif pick < 0.6:
            us = rng.randint(-5_000_000, 5_000_000)
        elif pick < 0.8:
            us = rng.randint(T.MIN_TIMESTAMP_US // 10**6, -1) * 10**6 + rng.randint(1, 999_999)
        else:
            us = rng.randint(T.MIN_TIMESTAMP_US // 10**6, T.MAX_TIMESTAMP_US // 10**6) * 10**6
        v = EPOCH + dt.timedelta(microseconds=us)
        if storable(v):
            out.append(v)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("columns", [COLUMNAR, PYORC], ids=["columnar", "pyorc"])
def test_random_timestamps_round_trip_exactly(tmp_path, columns, seed):
    """Property: any storable timestamp in 0001..9999 (seeded sample of 400 per case)."""
    rng = random.Random(seed)
    values = random_timestamps(rng, 400)
    days = [dt.date(1, 1, 1) + dt.timedelta(days=rng.randint(0, 3652058)) for _ in values]
    roundtrip(tmp_path, columns, values, days)
    # and a file pyarrow reads on its own (every value within timestamp[ns])
    near = [v for v in values if NS_RANGE[0] <= v <= NS_RANGE[1]]
    roundtrip(tmp_path, columns, near, name="near")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(
        st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)).filter(
            storable
        ),
        min_size=1,
        max_size=50,
    ),
    pyorc_path=st.booleans(),
)
def test_hypothesis_timestamps_round_trip_exactly(tmp_path, values, pyorc_path):
    roundtrip(tmp_path, PYORC if pyorc_path else COLUMNAR, values)


@pytest.mark.parametrize("columns", [COLUMNAR, PYORC], ids=["columnar", "pyorc"])
@pytest.mark.parametrize(
    "ts, day, what",
    [
        (T.MIN_TIMESTAMP_US - 1, None, "timestamp 0000-12-31 23:59:59.999999"),
        (T.MAX_TIMESTAMP_US + 1, None, "timestamp 10000-01-01 00:00:00"),
        (-500_000, None, "timestamp 1969-12-31 23:59:59.500000"),
        (-999_000, None, "timestamp 1969-12-31 23:59:59.001000"),
        (0, T.MAX_DATE_DAYS + 1, "date 10000-01-01"),
        (0, T.MIN_DATE_DAYS - 1, "date 0000-12-31"),
    ],
)
def test_values_hive_cannot_store_are_refused(tmp_path, columns, ts, day, what):
    tfs = TableFS(str(tmp_path))
    ev = events(columns, [EPOCH, EPOCH]).set_column(
        6, "ts", pa.array([0, ts], pa.int64()).cast(pa.timestamp("us"))
    )
    ev = ev.set_column(7, "day", pa.array([0, day], pa.int32()).cast(pa.date32()))
    path = str(tmp_path / "bucket_00000")
    with pytest.raises(T.HiveRangeError, match=f"column '(ts|day)' row 1 holds {what}") as info:
        C.write_event_table(tfs, path, columns, ev)
    assert isinstance(info.value, ValueError) and isinstance(info.value, AcidflowError)
    assert path in str(info.value)
    assert not (tmp_path / "bucket_00000").exists()
    if F.columnar_writable(columns):  # the streamed writer refuses them too
        w = C.ColumnarEventWriter(tfs, path, columns)
        with pytest.raises(T.HiveRangeError, match=what):
            w.write(C.event_batch(path, columns, ev.to_batches()[0], w.schema))
        w.abort()
    else:
        w2 = F.EventFileWriter(tfs, path, columns)
        with pytest.raises(T.HiveRangeError, match=what):
            w2.write_batch(C.event_batch(path, columns, ev.to_batches()[0]))
        w2.abort()


def test_pyorc_writer_refuses_the_unstorable_second_from_python_rows(tmp_path):
    tfs = TableFS(str(tmp_path))
    row = (1, dt.datetime(1969, 12, 31, 23, 59, 59, 5000), None, "x")
    with pytest.raises(T.HiveRangeError, match="column 'ts' holds timestamp 1969-12-31"):
        F.write_event_file(tfs, str(tmp_path / "b"), PYORC, [(0, 1, B0, 0, 1, row)])


def test_streamed_writer_moves_to_pyorc_keeping_earlier_batches(tmp_path):
    """A pre-1970 fraction arriving after batches already went to pyarrow's writer: the file
    continues through pyorc with every event, in order, and the Hive layout."""
    tfs = TableFS(str(tmp_path))
    path = str(tmp_path / "bucket_00000")
    w = C.ColumnarEventWriter(tfs, path, COLUMNAR, stripe_rows=1024)
    first = [EPOCH + dt.timedelta(seconds=i) for i in range(3000)] + [dt.datetime(9999, 12, 31)]
    later = [dt.datetime(1960, 6, 15, 8, 0, 0, 500123), dt.datetime(2000, 1, 1)]
    ev = events(COLUMNAR, first + later)
    w.write(C.event_batch(path, COLUMNAR, ev.slice(0, len(first)).to_batches()[0], w.schema))
    w.write(C.event_batch(path, COLUMNAR, ev.slice(len(first)).to_batches()[0], w.schema))
    done = w.close()
    assert done is not None and done.rows == len(first) + 2 and done.inserts == done.rows
    back = F.read_events(tfs, path)
    assert back.column("ts").to_pylist() == first + later
    assert back.column("rowId").to_pylist() == list(range(len(first) + 2))
    assert raw_seconds_nanos(path)[-2] == hive_layout(later[0])
    assert F.parse_acid_stats(F.read_user_metadata(tfs, path)["hive.acid.stats"]) == (3003, 0, 0)


def test_to_micros_drops_sub_microseconds_toward_the_earlier_instant():
    ns = pa.array([-1_500, -1_000, 1_500, None], pa.int64()).cast(pa.timestamp("ns"))
    assert T.to_micros(ns).cast(pa.int64()).to_pylist() == [-2, -1, 1, None]
