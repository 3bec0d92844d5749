"""``acidflow.format.orc.orcindex`` against real ORC files of every writer we meet: pyarrow and pyorc
(ORC C++), Hive 3.1.3's ORC Java writer (``orc.bloom.filter.write.version`` utf8 and original:
BLOOM_FILTER_UTF8 only, or legacy BLOOM_FILTER too), Spark 4's ORC 2.3 Java writer (ORC-203
truncated string statistics), and the Hive-written fixtures. Ground truth is the file's own
rows: every value of a stripe must pass its stripe's statistics and bloom filters, and values
never written must pass the bloom filters about as often as the writer's fpp (0.05) says."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyorc
import pytest

from acidflow.format.orc import orcindex as oi

ROWS = 30000
JAVA_WRITER = Path(__file__).resolve().parents[1] / "support" / "OrcBloomWrite.java"
FIXTURES = Path("/work/shared/fixtures/hive-acid")
SCHEMA = "struct<id:bigint,name:string,day:date,price:decimal(12,2)>"


def _value(i: int) -> tuple:
    """Row ``i`` as OrcBloomWrite.java writes it."""
    return (
        3 * i,
        f"name-{i}-ü",
        dt.date(1970, 1, 1) + dt.timedelta(days=i % 20000),
        decimal.Decimal(i) / 100,
    )


def _arrow(n: int = ROWS) -> pa.Table:
    cols = list(zip(*(_value(i) for i in range(n))))
    return pa.table(
        {
            "id": pa.array(cols[0], pa.int64()),
            "name": pa.array(cols[1]),
            "day": pa.array(cols[2], pa.date32()),
            "price": pa.array(cols[3], pa.decimal128(12, 2)),
        }
    )


def _pyarrow_file(compression: str, blooms: bool = True) -> bytes:
    buf = io.BytesIO()
    paorc.write_table(
        _arrow(),
        buf,
        stripe_size=96 * 1024,
        compression=compression,
        bloom_filter_columns=[1, 2, 3, 4] if blooms else None,
    )
    return buf.getvalue()


def _pyorc_file() -> bytes:
    buf = io.BytesIO()
    with pyorc.Writer(
        buf,
        SCHEMA,
        stripe_size=96 * 1024,
        row_index_stride=2000,
        compression=pyorc.CompressionKind.ZLIB,
        bloom_filter_columns=["id", "name", "day", "price"],
    ) as w:
        for i in range(ROWS):
            w.write(_value(i))
    return buf.getvalue()


def _java(tmp: Path, name: str, classpath: str, *args: str) -> bytes:
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java")
    out = tmp / name
    subprocess.run(
        [java, "-cp", classpath, str(JAVA_WRITER), str(out), str(ROWS), *args],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out.read_bytes()


def _hive_classpath() -> str:
    from devservers.hms import HiveArtifacts

    try:
        arts = HiveArtifacts.locate()
    except Exception as exc:  # no Hive jars in this checkout
        pytest.skip(f"Hive 3.1.3 jars: {exc}")
    if not arts.hive_exec_jar.exists():
        pytest.skip("no hive-exec jar")
    return arts.tools_classpath()


def _spark_classpath() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "jars" / "*")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> "_Files":
    """Writer flavour -> ORC file bytes (ROWS rows of :func:`_value`, bloom filters on all)."""
    tmp = tmp_path_factory.mktemp("orcindex")
    out = {f"pyarrow-{c}": _pyarrow_file(c) for c in ("uncompressed", "zlib", "snappy")}
    out["pyorc-zlib"] = _pyorc_file()
    try:  # the Java writers: skipped one by one where Java or the jars are missing
        hive = _hive_classpath()
        out["hive31-utf8"] = _java(tmp, "h1.orc", hive, "utf8", "65536")
        out["hive31-original"] = _java(tmp, "h2.orc", hive, "original", "65536")
    except pytest.skip.Exception:
        pass
    try:
        out["orc23-truncated"] = _java(tmp, "s1.orc", _spark_classpath(), "utf8", "65536", "1500")
    except pytest.skip.Exception:
        pass
    return _Files(out)


class _Files(dict):
    """Flavour -> bytes; a flavour whose writer is missing here skips the test asking for it."""

    def __missing__(self, flavour: str) -> bytes:
        pytest.skip(f"no {flavour} file: its Java writer is not available")


def _tail(data: bytes) -> tuple[io.BytesIO, oi.OrcTailIndex]:
    fh = io.BytesIO(data)
    return fh, oi.read_tail_index(fh, len(data), path="test")


def _domain_values(tail: oi.OrcTailIndex, col: int, arr: pa.Array) -> oi.KeyValues:
    domain = oi.key_domain(tail.types[col], arr.type)
    assert domain is not None
    return oi.KeyValues.of(arr, domain)


FLAVOURS = [
    "pyarrow-uncompressed",
    "pyarrow-zlib",
    "pyarrow-snappy",
    "pyorc-zlib",
    "hive31-utf8",
    "hive31-original",
    "orc23-truncated",
]
NAMES = {1: "id", 2: "name", 3: "day", 4: "price"}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_written_value_passes_its_stripe(files, flavour):
    data = files[flavour]
    fh, tail = _tail(data)
    orc = paorc.ORCFile(io.BytesIO(data))
    assert len(tail.stripes) == orc.nstripes > 1
    assert sum(s.rows for s in tail.stripes) == ROWS
    assert [t.kind for t in tail.types] == [12, oi.LONG, oi.STRING, oi.DATE, oi.DECIMAL]
    for s in range(orc.nstripes):
        batch = orc.read_stripe(s)
        assert tail.stripes[s].rows == batch.num_rows
        for col, name in NAMES.items():
            arr = batch.column(name)
            kv = _domain_values(tail, col, arr)
            st = tail.column_stats(s, col)
            assert st is not None and st.values == batch.num_rows and st.has_null is False
            assert st.minimum is not None
            assert oi.stats_mask(st, kv).all()
            if col != 4:
                # exact bounds where the writer keeps them
                lo, hi = min(kv.values), max(kv.values)
                if st.truncated:
                    assert st.minimum <= lo and st.maximum >= hi
                else:
                    assert (st.minimum, st.maximum) == (lo, hi)
            if kv.hashes is None:  # decimals: never tested against bloom filters
                continue
            kinds = [(oi.BLOOM_FILTER_UTF8,)]
            if flavour == "hive31-original" and name != "name":
                kinds.append((oi.BLOOM_FILTER,))  # the legacy stream, ints and dates
            for k in kinds:
                filters = oi.read_bloom_filters(fh, tail, s, col, kinds=k)
                assert filters is not None, (flavour, s, name, k)
                stride = tail.row_index_stride
                assert len(filters) == -(-batch.num_rows // stride)
                assert oi.bloom_mask(filters, kv).all()
        keys = batch.select(["id", "name"]).slice(0, 50)
        verdict = oi.stripes_to_read(fh, tail, [1, 2], keys)
        assert verdict.keep[s] and verdict.indexed


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_false_positive_rate_is_near_the_fpp(files, flavour):
    """Absent values pass a filter at the rate its fill predicts ((bits set / bits) ** k);
    filters of full row groups were sized for fpp 0.05."""
    fh, tail = _tail(files[flavour])
    absent_ids = oi.KeyValues.of(pa.array(np.arange(5000) * 3 + 1, pa.int64()), oi.INTEGER)
    absent_names = oi.KeyValues.of(pa.array([f"absent-{i}" for i in range(5000)]), oi.TEXT)
    measured, predicted, full = [], [], []
    for s in range(len(tail.stripes)):
        rows = tail.stripes[s].rows
        for col, kv in ((1, absent_ids), (2, absent_names)):
            filters = oi.read_bloom_filters(fh, tail, s, col) or []
            for g, bf in enumerate(filters):
                rate = float(bf.test_hashes(kv.hashes_at(np.arange(5000))).mean())
                fill = float(np.unpackbits(bf.bits.view(np.uint8)).mean())
                measured.append(rate)
                predicted.append(fill**bf.num_hashes)
                if (
                    min(tail.row_index_stride, rows - g * tail.row_index_stride)
                    == tail.row_index_stride
                ):
                    full.append(rate)
    assert measured
    assert abs(np.mean(measured) - np.mean(predicted)) < 0.01 + 0.25 * np.mean(predicted)
    if full:
        assert 0.01 < float(np.mean(full)) < 0.12, full


def test_truncated_string_bounds_are_used_as_bounds(files):
    fh, tail = _tail(files["orc23-truncated"])
    assert tail.writer_version >= 8  # ORC_203
    stats = [tail.column_stats(s, 2) for s in range(len(tail.stripes))]
    assert all(st is not None and st.truncated and len(st.minimum) == 1024 for st in stats)
    pad = "x" * 1500
    # each stripe's first and last name is kept there; a name past every bound is skipped
    orc = paorc.ORCFile(io.BytesIO(files["orc23-truncated"]))
    for s in range(len(tail.stripes)):
        names = orc.read_stripe(s).column("name")
        keys = pa.table({"name": pa.array([names[0].as_py(), names[-1].as_py()])})
        assert oi.stripes_to_read(fh, tail, [2], keys, blooms=False).keep[s]
    beyond = pa.table({"name": pa.array(["zzz" + pad])})
    verdict = oi.stripes_to_read(fh, tail, [2], beyond, blooms=False)
    assert verdict.keep == [False] * len(tail.stripes) and verdict.by_stats == len(verdict.keep)


def test_sequential_keys_are_pruned_by_stats_random_absent_ones_by_blooms(files):
    fh, tail = _tail(files["pyarrow-uncompressed"])  # 1024-row stripes
    n = len(tail.stripes)
    assert n > 20
    last = pa.table({"id": pa.array([3 * i for i in range(ROWS - 100, ROWS)], pa.int64())})
    v = oi.stripes_to_read(fh, tail, [1], last)
    assert v.keep == [False] * (n - 1) + [True] and v.by_stats == n - 1
    # five absent ids inside five stripes' ranges: stats keep those five, blooms drop them
    absent = pa.table({"id": pa.array([3 * i + 1 for i in range(0, ROWS, ROWS // 5)], pa.int64())})
    v = oi.stripes_to_read(fh, tail, [1], absent)
    assert v.keep == [False] * n and (v.by_stats, v.by_bloom) == (n - 5, 5)
    assert sum(oi.stripes_to_read(fh, tail, [1], absent, blooms=False).keep) == 5


def test_composite_keys_keep_a_stripe_only_when_one_tuple_may_be_there(files):
    fh, tail = _tail(files["pyarrow-zlib"])
    orc = paorc.ORCFile(io.BytesIO(files["pyarrow-zlib"]))
    first, second = orc.read_stripe(0), orc.read_stripe(1)
    # (id of stripe 0, name of stripe 1): each part exists, the tuple nowhere -> both skipped
    # by stats on one column or the other (names sort as strings: use an exact bloom check)
    mixed = pa.table(
        {
            "id": pa.array([first.column("id")[5].as_py()]),
            "name": pa.array([second.column("name")[5].as_py()]),
        }
    )
    v = oi.stripes_to_read(fh, tail, [1, 2], mixed)
    assert not v.keep[1]  # the id is below stripe 1's minimum
    assert (
        v.keep[0] is False
        or oi.bloom_mask(
            oi.read_bloom_filters(fh, tail, 0, 2), _domain_values(tail, 2, mixed.column("name"))
        ).all()
    )  # kept only if stripe 0's name bloom filter says "may"
    # a real tuple and a tuple of parts from two rows of one stripe: that stripe is kept
    # (columns are tested one by one: an over-approximation, never a miss)
    pair = pa.table(
        {
            "id": pa.array([first.column("id")[3].as_py()]),
            "name": pa.array([first.column("name")[9].as_py()]),
        }
    )
    assert oi.stripes_to_read(fh, tail, [1, 2], pair).keep[0]


def test_refusals_keep_every_stripe(files, tmp_path):
    data = files["pyarrow-zlib"]
    fh, tail = _tail(data)
    n = len(tail.stripes)
    absent = pa.array([3 * ROWS + 3], pa.int64())
    # a key type of another family than the file column (schema evolution int -> string)
    v = oi.stripes_to_read(fh, tail, [1], pa.table({"id": absent.cast(pa.string())}))
    assert v.keep == [True] * n and not v.indexed
    # the file lacks the key column (added later: reads as NULL)
    v = oi.stripes_to_read(fh, tail, [None], pa.table({"id": absent}))
    assert v.keep == [True] * n and not v.indexed
    # a codec this module does not read (zstd): the file is read whole
    buf = io.BytesIO()
    paorc.write_table(_arrow(3000), buf, compression="zstd")
    z = buf.getvalue()
    zv = oi.file_stripes_to_read(
        io.BytesIO(z), acid=False, positions=[0], keys=pa.table({"id": absent})
    )
    assert not zv.indexed and all(zv.reads(s) for s in range(1))
    # no bloom filters: only statistics decide
    fh2, tail2 = _tail(_pyarrow_file("zlib", blooms=False))
    assert oi.read_bloom_filters(fh2, tail2, 0, 1) is None
    inside = pa.table({"id": pa.array([4], pa.int64())})  # absent, within stripe 0's range
    assert oi.stripes_to_read(fh2, tail2, [1], inside).keep[0]


def test_null_keys_match_only_stripes_that_may_hold_nulls():
    t = pa.table(
        {"k": pa.array([None if i % 2 and i < 5000 else i for i in range(20000)], pa.int64())}
    )
    buf = io.BytesIO()
    paorc.write_table(t, buf, stripe_size=32 * 1024, bloom_filter_columns=[1])
    fh, tail = _tail(buf.getvalue())
    with_nulls = [bool(tail.column_stats(s, 1).has_null) for s in range(len(tail.stripes))]
    assert with_nulls[0] and not with_nulls[-1]
    v = oi.stripes_to_read(fh, tail, [1], pa.table({"k": pa.array([None], pa.int64())}))
    assert v.keep == with_nulls


def test_decimal_keys_compare_by_value_across_scales(files):
    fh, tail = _tail(files["hive31-utf8"])
    keys = pa.table({"price": pa.array([decimal.Decimal("299.990")], pa.decimal128(14, 3))})
    v = oi.stripes_to_read(fh, tail, [4], keys)
    orc = paorc.ORCFile(io.BytesIO(files["hive31-utf8"]))
    holds = [
        decimal.Decimal("299.99") in orc.read_stripe(s).column("price").to_pylist()
        for s in range(orc.nstripes)
    ]
    assert sum(holds) == 1 and v.keep == holds


def test_hash_functions_match_orc_java_constants():
    # Murmur3.hash64 of empty input is fmix64(seed ^ 0); getLongHash(0) by hand (Java longs)
    assert oi.murmur3_64(b"") == oi.murmur3_64(b"", seed=104729)
    k = 0
    m = (1 << 64) - 1

    def sar(x: int, n: int) -> int:
        x = x - (1 << 64) if x >> 63 else x
        return (x >> n) & m

    k = ((~k) + (k << 21)) & m
    k ^= sar(k, 24)
    k = (k + (k << 3) + (k << 8)) & m
    k ^= sar(k, 14)
    k = (k + (k << 2) + (k << 4)) & m
    k ^= sar(k, 28)
    k = (k + (k << 31)) & m
    assert int(oi.long_hash(np.array([0]))[0]) == k


def _leaves(tail: oi.OrcTailIndex, tid: int, arr: pa.Array, out: list) -> None:
    t = tail.types[tid]
    if t.kind == 12:
        for j, child in enumerate(t.subtypes):
            _leaves(tail, child, arr.field(j), out)
    elif not t.subtypes:
        out.append((tid, arr))


@pytest.mark.skipif(not FIXTURES.exists(), reason="no Hive fixtures")
def test_hive_fixture_files_agree_with_their_rows():
    paths = [
        p for p in FIXTURES.rglob("*") if p.is_file() and p.name.startswith(("bucket_", "0000"))
    ]
    checked = 0
    for p in paths:
        data = p.read_bytes()
        if data[:3] != b"ORC":
            continue
        fh, tail = _tail(data)
        orc = paorc.ORCFile(io.BytesIO(data))
        for s in range(orc.nstripes):
            batch = orc.read_stripe(s)
            leaves: list = []
            _leaves(tail, 0, pa.StructArray.from_arrays(batch.columns, batch.schema.names), leaves)
            for tid, arr in leaves:
                domain = oi.key_domain(tail.types[tid], arr.type)
                if domain is None or arr.null_count == len(arr):
                    continue
                kv = oi.KeyValues.of(arr.filter(arr.is_valid()), domain)
                assert oi.stats_mask(tail.column_stats(s, tid), kv).all(), (p, s, tid)
                filters = oi.read_bloom_filters(fh, tail, s, tid)
                if filters is not None and kv.hashes is not None and domain != oi.TEXT:
                    assert oi.bloom_mask(filters, kv).all(), (p, s, tid)
                checked += 1
    assert checked > 10


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_randomized_lookups_never_skip_a_stripe_holding_a_key(seed):
    """Unordered int/string/date composite keys in many small stripes with bloom filters
    (pyarrow): for random batches of present and absent tuples -- small batches, so bloom
    filters are consulted -- a stripe holding one of the tuples is always kept, and absent
    batches are mostly skipped."""
    rnd = np.random.default_rng(seed)
    n = 40000
    a = rnd.integers(-(10**6), 10**6, n)
    b = np.array([f"s{x}" for x in rnd.integers(0, 5000, n)])
    d = rnd.integers(0, 30000, n).astype(np.int32)
    t = pa.table(
        {
            "a": pa.array(a, pa.int64()),
            "b": pa.array(b),
            "d": pa.array(d, pa.int32()).cast(pa.date32()),
        }
    )
    buf = io.BytesIO()
    paorc.write_table(
        t,
        buf,
        stripe_size=16 * 1024,
        compression="uncompressed",
        bloom_filter_columns=[1, 2, 3],
        row_index_stride=512,
    )
    fh, tail = _tail(buf.getvalue())
    bounds = np.cumsum([0] + [s.rows for s in tail.stripes])
    assert len(tail.stripes) > 10
    skipped = 0
    for _ in range(12):
        rows = rnd.integers(0, n, int(rnd.integers(1, 6)))
        absent = pa.table(
            {
                "a": pa.array(rnd.integers(2 * 10**6, 3 * 10**6, 3), pa.int64()),
                "b": pa.array(["s1", "s2", "s3"]),
                "d": pa.array([dt.date(2000, 1, 1)] * 3),
            }
        )
        for cols in (["a"], ["b"], ["a", "b"], ["b", "d"], ["a", "b", "d"]):
            keys = t.take(pa.array(rows)).select(cols)
            v = oi.stripes_to_read(fh, tail, [{"a": 1, "b": 2, "d": 3}[c] for c in cols], keys)
            for r in rows:
                stripe = int(np.searchsorted(bounds, r, side="right") - 1)
                assert v.keep[stripe], (cols, r, stripe)
            av = oi.stripes_to_read(
                fh,
                tail,
                [{"a": 1, "b": 2, "d": 3}[c] for c in cols if c in ("a",)] or [2],
                absent.select(["a"] if "a" in cols else ["b"]),
            )
            skipped += av.skipped
    assert skipped > 0


def test_statistics_that_do_not_count_the_stripes_rows_are_not_used():
    """Hive 3.1's streaming ingest writes each stripe's column statistics as 0 values, no
    NULLs, no bounds (found by tests/compat/test_hive31_streaming.py: a lookup skipped the
    stripes holding its keys and the upsert duplicated them); only statistics that count
    the stripe's rows may prune it."""
    from acidflow.format.orc.orcindex import ColumnStats, consistent_stats

    empty = ColumnStats(values=0, has_null=False)
    assert consistent_stats(empty, 7) is None
    assert consistent_stats(empty, 0) is empty
    exact = ColumnStats(values=7, has_null=False, minimum=2, maximum=10)
    assert consistent_stats(exact, 7) is exact
    assert consistent_stats(ColumnStats(values=5, has_null=False, minimum=2, maximum=10), 7) is None
    nullable = ColumnStats(values=5, has_null=True, minimum=2, maximum=10)
    assert consistent_stats(nullable, 7) is nullable
    assert consistent_stats(ColumnStats(values=None, has_null=None), 7) is None
