"""The columnar event-file writer (pyarrow ORC + Hive footer metadata added afterwards) and the
ORC footer rewrite it relies on: files read back identically, carry exactly the ORC types and
footer keys pyorc's writer gives, and the key index matches the stripes the writer cut."""

from __future__ import annotations

import datetime as dt
import decimal
import io

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyorc
import pytest

from acidflow.format.orc import columnar as C
from acidflow.format.orc import files as F
from acidflow.format.orc import orcfooter
from acidflow.storage.fs import TableFS
from tests.support import orcstreams

ALL_TYPES = [
    ("b", "boolean"),
    ("t", "tinyint"),
    ("s", "smallint"),
    ("i", "int"),
    ("g", "bigint"),
    ("f", "float"),
    ("d", "double"),
    ("st", "string"),
    ("bi", "binary"),
    ("da", "date"),
    ("ts", "timestamp"),
    ("m", "decimal(10,2)"),
    ("m2", "decimal(38,10)"),
]
ROWS = [
    (
        True,
        -128,
        32767,
        -2147483648,
        2**63 - 1,
        1.5,
        -0.0,
        "tab\t\u00e9\U0001f600",
        b"\x00y",
        dt.date(2024, 2, 29),
        dt.datetime(2024, 2, 29, 23, 59, 58, 123456),
        decimal.Decimal("12.50"),
        decimal.Decimal("1234567890123456789012345678.0123456789"),
    ),
    (
        False,
        127,
        -32768,
        2147483647,
        -(2**63),
        float("inf"),
        1e300,
        "",
        b"",
        dt.date(1900, 1, 1),
        dt.datetime(1900, 1, 1),
        decimal.Decimal("-99999999.99"),
        decimal.Decimal("-0.0000000001"),
    ),
    (None,) * 13,
]
B0 = 536870912


def events(columns, rows, ops, owid=1, cwid=None, start=0):
    n = len(rows)
    data = {
        "operation": pa.array(ops, pa.int32()),
        "originalTransaction": [owid] * n,
        "bucket": [B0] * n,
        "rowId": list(range(start, start + n)),
        "currentTransaction": [cwid or owid] * n,
    }
    for k, (c, t) in enumerate(columns):
        data[c] = pa.array([r[k] for r in rows], type=F.htypes.arrow_type(t))
    return pa.table(data)


def pyorc_rows(path):
    with open(path, "rb") as fh:
        return [tuple(r) for r in pyorc.Reader(fh, struct_repr=pyorc.StructRepr.TUPLE)]


def test_round_trip_types_footer_and_nulls(tmp_path):
    tfs = TableFS(str(tmp_path))
    path = str(tmp_path / "d" / "bucket_00000")
    ev = events(ALL_TYPES, ROWS + [ROWS[0]], [0, 0, 0, 2])
    done = C.write_event_table(tfs, path, ALL_TYPES, ev)
    assert (done.rows, done.inserts, done.deletes, done.stripes) == (4, 3, 1, 1)
    assert done.key_index == f"1,{B0},3;" and done.min_key == (1, B0, 0)
    with open(path, "rb") as fh:
        r = pyorc.Reader(fh)
        assert str(r.schema) == F.event_schema(ALL_TYPES)  # exact ORC types, as pyorc writes
        assert r.user_metadata == {
            "hive.acid.key.index": f"1,{B0},3;".encode(),
            "hive.acid.stats": b"3,0,1",
            "hive.acid.version": b"2",
        }
    back = F.read_events(tfs, path)
    got = [tuple(r[c] for c, _ in ALL_TYPES) for r in back.to_pylist()]
    assert got[:3] == ROWS
    assert got[3] == (None,) * 13  # a delete event's row is NULL
    assert pyorc_rows(path)[3][5] is None
    assert back.column("operation").to_pylist() == [0, 0, 0, 2]


def test_same_file_contents_as_the_pyorc_writer(tmp_path):
    cols = [("id", "bigint"), ("v", "string"), ("ts", "timestamp")]
    rows = [(i, f"v{i}", dt.datetime(2020, 1, 1) + dt.timedelta(seconds=i)) for i in range(3000)]
    ev = events(cols, rows, [0] * 3000)
    tfs = TableFS(str(tmp_path))
    C.write_event_table(tfs, str(tmp_path / "a"), cols, ev)
    F.write_event_file(tfs, str(tmp_path / "b"), cols, C.event_tuples(cols, ev))
    assert pyorc_rows(tmp_path / "a") == pyorc_rows(tmp_path / "b")
    assert F.read_events(tfs, str(tmp_path / "a")).equals(F.read_events(tfs, str(tmp_path / "b")))


def test_key_index_follows_the_stripes_the_writer_cut(tmp_path):
    cols = [("id", "bigint"), ("payload", "string")]
    rng = np.random.default_rng(7)
    n = 60000
    rows = [(i, "".join(rng.choice(list("abcdefgh"), 40))) for i in range(n)]
    ev = events(cols, rows, [0] * n, owid=5)
    path = tmp_path / "bucket_00001"
    done = C.write_event_table(TableFS(str(tmp_path)), str(path), cols, ev, stripe_bytes=64 * 1024)
    with open(path, "rb") as fh:
        r = pyorc.Reader(fh)
        sizes = [len(r.read_stripe(i)) for i in range(r.num_of_stripes)]
    assert len(sizes) > 3 and sum(sizes) == n and done.stripes == len(sizes)
    ends = np.cumsum(sizes) - 1
    assert F.parse_key_index(done.key_index) == [(5, B0, int(e)) for e in ends]
    assert orcfooter.read_tail(path.read_bytes()).stripe_rows == sizes


def test_unsorted_or_duplicate_keys_are_refused_and_nothing_is_left(tmp_path):
    cols = [("id", "int")]
    tfs = TableFS(str(tmp_path))
    for row_ids in ([0, 2, 1], [0, 1, 1]):
        ev = events(cols, [(1,), (2,), (3,)], [0, 0, 0]).set_column(
            3, "rowId", pa.array(row_ids, pa.int64())
        )
        with pytest.raises(F.AcidFileError, match="not above the previous key"):
            C.write_event_table(tfs, str(tmp_path / "x"), cols, ev)
        assert not (tmp_path / "x").exists()
    assert C.write_event_table(tfs, str(tmp_path / "y"), cols, events(cols, [], [])) is None
    assert not (tmp_path / "y").exists()


def test_varchar_char_and_snappy_go_through_pyorc(tmp_path):
    cols = [("id", "int"), ("vc", "varchar(5)"), ("ch", "char(2)")]
    assert not F.columnar_writable(cols)
    assert not F.columnar_writable([("id", "int")], "snappy")
    assert F.columnar_writable([("id", "int"), ("m", "decimal(5,1)")])
    path = tmp_path / "v"
    C.write_event_table(
        TableFS(str(tmp_path)), str(path), cols, events(cols, [(1, "abc", "xy")], [0])
    )
    with open(path, "rb") as fh:
        assert str(pyorc.Reader(fh).schema).endswith("row:struct<id:int,vc:varchar(5),ch:char(2)>>")


def test_missing_row_columns_are_written_as_null(tmp_path):
    cols = [("id", "int"), ("added", "string")]
    ev = events([("id", "int")], [(1,), (2,)], [0, 0])
    path = str(tmp_path / "m")
    C.write_event_table(TableFS(str(tmp_path)), path, cols, ev)
    assert [r[5] for r in pyorc_rows(path)] == [(1, None), (2, None)]


@pytest.mark.parametrize("compression", ["zlib", "uncompressed"])
def test_footer_rewrite_keeps_data_and_adds_metadata(compression):
    rng = np.random.default_rng(3)  # incompressible, so that 32 KiB stripes are cut
    t = pa.table(
        {
            "a": rng.integers(0, 2**62, 50000),
            "s": [f"x{v:x}" for v in rng.integers(0, 2**40, 50000)],
        }
    )
    sink = io.BytesIO()
    paorc.write_table(t, sink, compression=compression, stripe_size=32 * 1024)
    data = sink.getvalue()
    parsed = orcfooter.read_tail(data)
    patched = orcfooter.add_user_metadata(parsed, {"k1": b"v1", "hive.acid.stats": b"1,2,3"})
    new = data[: patched.keep] + patched.tail
    f = paorc.ORCFile(io.BytesIO(new))
    assert f.read().equals(t)
    assert f.metadata == {b"k1": b"v1", b"hive.acid.stats": b"1,2,3"}
    r = pyorc.Reader(io.BytesIO(new))
    assert [len(r.read_stripe(i)) for i in range(r.num_of_stripes)] == parsed.stripe_rows
    assert sum(parsed.stripe_rows) == 50000 and len(parsed.stripe_rows) > 1
    with pytest.raises(orcfooter.OrcFooterError, match="already present"):
        orcfooter.add_user_metadata(orcfooter.read_tail(new), {"k1": b"again"})


def test_footer_rewrite_refuses_what_it_cannot_handle():
    with pytest.raises(orcfooter.OrcFooterError, match="not an ORC file"):
        orcfooter.read_tail(b"PAR1 not orc at all")
    sink = io.BytesIO()
    paorc.write_table(pa.table({"a": [1, 2]}), sink, compression="snappy")
    with pytest.raises(orcfooter.OrcFooterError, match="compression kind 2"):
        orcfooter.read_tail(sink.getvalue())


def test_event_column_ids_number_the_row_fields_in_preorder():
    cols = [
        ("id", "int"),
        ("tags", "array<string>"),
        ("m", "map<string,struct<a:int,b:int>>"),
        ("K", "string"),
    ]
    # 0 root, 1..5 event fields, 6 row; tags 8 + element 9; m 10 + key 11 + value 12 (a 13, b 14)
    assert F.event_column_ids(cols, ["id", "tags", "m", "k"]) == [7, 8, 10, 15]
    assert F.event_column_ids(cols, []) == []
    with pytest.raises(ValueError, match=r"\['nope'\] are not table columns"):
        F.event_column_ids(cols, ["id", "nope"])
    assert F.key_bloom_filter_columns(cols, ["region", "ID", "k"]) == ["ID", "k"]


@pytest.mark.parametrize("writer", ["columnar", "pyorc"])
def test_bloom_filters_on_exactly_the_key_columns_in_every_stripe(tmp_path, writer):
    cols = [("id", "bigint"), ("v", "string"), ("k2", "string"), ("n", "int")]
    rng = np.random.default_rng(11)
    n = 40000
    rows = [(i, "".join(rng.choice(list("abcdef"), 30)), f"k{i}", i % 7) for i in range(n)]
    ev = events(cols, rows, [0] * n, owid=3)
    path = tmp_path / "bucket_00000"
    tfs = TableFS(str(tmp_path))
    if writer == "columnar":
        done = C.write_event_table(
            tfs,
            str(path),
            cols,
            ev,
            stripe_bytes=64 * 1024,
            bloom_filter_columns=["k2", "id"],
            bloom_filter_fpp=0.01,
        )
    else:
        done = F.write_event_file(
            tfs,
            str(path),
            cols,
            C.event_tuples(cols, ev),
            stripe_rows=8192,
            bloom_filter_columns=["k2", "id"],
            bloom_filter_fpp=0.01,
        )
    assert done.stripes > 1
    assert orcstreams.bloom_filter_columns(path) == [{7, 9}] * done.stripes
    with open(path, "rb") as fh:
        r = pyorc.Reader(fh)
        assert [set(r.read_stripe(i).bloom_filter_columns) for i in range(r.num_of_stripes)] == [
            {7, 9}
        ] * done.stripes
    assert F.read_events(tfs, str(path)).column("k2").to_pylist() == [f"k{i}" for i in range(n)]
