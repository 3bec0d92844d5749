"""The statements' writer body (``writer.write_task``, run in-process by ``write_local``) writes
event files from Arrow columns: the same rows, ROW__IDs, footer metadata and ORC types as the
row-by-row pyorc writer it replaced (reproduced here with ``files.EventFileWriter`` fed the
tuples it was fed), a key index that follows the stripes cut, key hashes equal to
``keys.key_hash64`` of every key written, and nothing left behind by a failed or empty group."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyorc
import pytest

from acidflow.engine import writer as W
from acidflow.format import keys as K
from acidflow.format.bucketing import encode_bucket_property
from acidflow.format.orc import files as F
from acidflow.storage.fs import TableFS
from tests.unit.test_event_table_writer import ALL_TYPES, ROWS

UTC = dt.timezone.utc


def spec(
    tmp_path: Path,
    columns,
    kind="insert",
    *,
    partition_columns=(),
    bucketed=False,
    key=(),
    write_id=7,
    statement_id=0,
    **kw,
) -> W.WriteSpec:
    return W.WriteSpec(
        tfs_url=str(tmp_path),
        table_dir=str(tmp_path),
        columns=list(columns),
        partition_columns=list(partition_columns),
        write_id=write_id,
        statement_id=statement_id,
        kind=kind,
        bucketed=bucketed,
        key_columns=list(key),
        **kw,
    )


def arrow_rows(columns, rows, *, aware_timestamps=False) -> pa.Table:
    data = {}
    for k, (c, t) in enumerate(columns):
        typ = F.htypes.arrow_type(t)
        vals = [r[k] for r in rows]
        if aware_timestamps and pa.types.is_timestamp(typ):  # as Spark sends them
            typ = pa.timestamp("us", tz="UTC")
            vals = [v.replace(tzinfo=UTC) if v else v for v in vals]
        data[c] = pa.array(vals, typ)
    return pa.table(data)


def read_file(path):
    with open(path, "rb") as fh:
        r = pyorc.Reader(fh, struct_repr=pyorc.StructRepr.TUPLE)
        return str(r.schema), r.user_metadata, [tuple(x) for x in r], r.num_of_stripes


def reference_file(tmp_path, columns, events) -> Path:
    """What the pyorc path wrote: EventFileWriter fed the event tuples."""
    path = tmp_path / "reference" / "bucket_00000"
    F.write_event_file(TableFS(str(tmp_path)), str(path), columns, events)
    return path


@pytest.mark.parametrize("aware", [False, True])
def test_insert_files_equal_the_pyorc_writers_for_every_primitive_type(tmp_path, aware):
    rows = (ROWS * 40)[:100]
    s = spec(tmp_path, ALL_TYPES)
    out = W.write_local(arrow_rows(ALL_TYPES, rows, aware_timestamps=aware), s)
    assert [(r["partition"], r["bucket"], r["rows"], r["stripes"]) for r in out] == [
        ("", 0, 100, 1)
    ]
    bp = encode_bucket_property(0, 0)
    ref = reference_file(tmp_path, ALL_TYPES, [(0, 7, bp, i, 7, r) for i, r in enumerate(rows)])
    got = read_file(out[0]["path"])
    assert got == read_file(ref)
    assert got[1] == {
        "hive.acid.key.index": f"7,{bp},99;".encode(),
        "hive.acid.stats": b"100,0,0",
        "hive.acid.version": b"2",
    }
    # timestamps: the UTC wall clock, as pyorc's converter wrote them
    assert got[2][0][5][10] == ROWS[0][10].replace(tzinfo=UTC)
    assert out[0]["bytes"] == Path(out[0]["path"]).stat().st_size


def test_delete_files_equal_the_pyorc_writers(tmp_path):
    bp = [encode_bucket_property(1, s) for s in (0, 0, 2, 0)]
    keys = [(3, bp[0], 5), (3, bp[1], 9), (3, bp[2], 0), (4, bp[3], 1)]
    tbl = pa.table(
        {
            "_acid_bucket": pa.array([1] * 4, pa.int32()),
            "owid": [k[0] for k in keys],
            "bprop": pa.array([k[1] for k in keys]),
            "rowid": [k[2] for k in keys],
        }
    )
    out = W.write_local(tbl, spec(tmp_path, ALL_TYPES, "delete", key=["i"]))
    assert [(r["bucket"], r["rows"], r["key_hashes"]) for r in out] == [(1, 4, None)]
    assert Path(out[0]["path"]).parent.name == "delete_delta_0000007_0000007_0000"
    ref = reference_file(tmp_path, ALL_TYPES, [(2, o, b, r, 7, None) for o, b, r in keys])
    assert read_file(out[0]["path"]) == read_file(ref)
    assert (
        F.read_user_metadata(TableFS(str(tmp_path)), out[0]["path"])["hive.acid.stats"] == b"0,0,4"
    )


def test_out_of_order_deletes_fail_and_leave_no_file(tmp_path):
    tbl = pa.table(
        {
            "_acid_bucket": pa.array([0, 0], pa.int32()),
            "owid": [3, 3],
            "bprop": [536870912, 536870912],
            "rowid": [9, 2],
        }
    )
    with pytest.raises(F.AcidFileError, match="not above the previous key"):
        W.write_local(tbl, spec(tmp_path, [("id", "int")], "delete"))
    assert not list(tmp_path.rglob("bucket_*"))


def test_groups_by_partition_and_bucket_with_rowids_across_batches(tmp_path):
    cols = [("id", "bigint"), ("v", "string")]
    n = 5000
    region = ["eu"] * 2000 + ["us"] * 3000
    bucket = [0] * 1500 + [3] * 500 + [3] * 3000
    tbl = pa.table(
        {
            "region": region,
            "_acid_bucket": pa.array(bucket, pa.int32()),
            "id": pa.array(range(n), pa.int64()),
            "v": [f"v{i}" for i in range(n)],
        }
    )
    tbl = pa.Table.from_batches(tbl.to_batches(max_chunksize=700))  # groups span batches
    s = spec(
        tmp_path,
        cols,
        partition_columns=["region"],
        bucketed=True,
        key=["id", "region"],
        statement_id=2,
    )
    out = W.write_local(tbl, s)
    assert [(r["partition"], r["bucket"], r["rows"]) for r in out] == [
        ("region=eu", 0, 1500),
        ("region=eu", 3, 500),
        ("region=us", 3, 3000),
    ]
    first = 0
    for r in out:
        ev = F.read_events(TableFS(str(tmp_path)), r["path"])
        assert ev.column("rowId").to_pylist() == list(range(r["rows"]))
        assert set(ev.column("bucket").to_pylist()) == {encode_bucket_property(r["bucket"], 2)}
        ids = list(range(first, first + r["rows"]))
        assert ev.column("id").to_pylist() == ids
        first += r["rows"]
        region_value = r["partition"].split("=")[1]
        want = K.pack_hashes(K.hash_array(K.key_hash64((i, region_value)) for i in ids))
        assert r["key_hashes"] == want
        assert (
            F.read_user_metadata(TableFS(str(tmp_path)), r["path"])["hive.acid.key.index"]
            == f"7,{encode_bucket_property(r['bucket'], 2)},{r['rows'] - 1};".encode()
        )


@pytest.mark.parametrize("key", [["id"], ["name", "id"], ["ts"], ["m", "d"]])
def test_key_hashes_are_key_hash64_of_every_key(tmp_path, key):
    cols = [
        ("id", "int"),
        ("name", "string"),
        ("ts", "timestamp"),
        ("m", "decimal(10,2)"),
        ("d", "date"),
    ]
    rng = np.random.default_rng(5)
    n = 3000
    ids = rng.permutation(10 * n)[:n] - 5 * n
    rows = [
        (
            int(i),
            f'n\u00e9{i}"',
            dt.datetime(2020, 1, 1) + dt.timedelta(seconds=int(i)),
            decimal.Decimal(int(i)) / 100,
            dt.date(2000, 1, 1) + dt.timedelta(days=int(i) % 999),
        )
        for i in ids
    ]
    tbl = arrow_rows(cols, rows, aware_timestamps=True)
    out = W.write_local(tbl, spec(tmp_path, cols, key=key))
    pos = [[c for c, _ in cols].index(k) for k in key]
    pylist = [tuple(r) for r in zip(*[tbl.column(c).to_pylist() for c, _ in cols])]
    want = K.hash_array(K.key_hash64(tuple(r[p] for p in pos)) for r in pylist)
    assert K.unpack_hashes(out[0]["key_hashes"]).tolist() == want.tolist()
    assert len(want) == n


def test_key_hashes_only_up_to_max_keys_per_scope(tmp_path, monkeypatch):
    monkeypatch.setattr(K, "MAX_KEYS_PER_SCOPE", 1000)
    cols = [("id", "bigint")]
    tbl = pa.table(
        {
            "_acid_bucket": pa.array([0] * 1000 + [1] * 1001, pa.int32()),
            "id": pa.array(range(2001), pa.int64()),
        }
    )
    out = W.write_local(
        pa.Table.from_batches(tbl.to_batches(max_chunksize=300)),
        spec(tmp_path, cols, bucketed=True, key=["id"]),
    )
    assert [(r["bucket"], r["rows"]) for r in out] == [(0, 1000), (1, 1001)]
    assert len(K.unpack_hashes(out[0]["key_hashes"])) == 1000
    assert out[1]["key_hashes"] is None  # the scope is recorded as written whole


def test_multi_stripe_insert_file_keeps_a_correct_key_index(tmp_path):
    cols = [("id", "bigint"), ("payload", "string")]
    rng = np.random.default_rng(9)
    n = 200_000
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz012345", dtype=np.uint8)
    payload = pa.array(alphabet[rng.integers(0, 32, (n, 40))].view("S40").ravel()).cast(pa.string())
    tbl = pa.table({"id": pa.array(np.arange(n)), "payload": payload})
    out = W.write_local(tbl, spec(tmp_path, cols, stripe_rows=16384, key=["id"]))
    path = out[0]["path"]
    with open(path, "rb") as fh:
        r = pyorc.Reader(fh)
        sizes = [len(r.read_stripe(i)) for i in range(r.num_of_stripes)]
    assert len(sizes) > 3 and set(sizes[:-1]) == {16384} and out[0]["stripes"] == len(sizes)
    meta = F.read_user_metadata(TableFS(str(tmp_path)), path)
    ends = np.cumsum(sizes) - 1
    assert F.parse_key_index(meta["hive.acid.key.index"]) == [(7, 536870912, int(e)) for e in ends]
    ev = F.read_events(TableFS(str(tmp_path)), path)
    assert ev.column("payload").equals(pa.chunked_array([payload]))


def test_pyorc_path_for_varchar_and_nested_columns(tmp_path):
    cols = [("id", "int"), ("vc", "varchar(5)"), ("tags", "array<string>")]
    tbl = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "vc": ["ab", "cde"],
            "tags": pa.array([["x"], []], pa.list_(pa.string())),
        }
    )
    out = W.write_local(tbl, spec(tmp_path, cols, key=["id"]))
    schema, meta, rows, _ = read_file(out[0]["path"])
    assert schema.endswith("row:struct<id:int,vc:varchar(5),tags:array<string>>>")
    assert [r[5] for r in rows] == [(1, "ab", ["x"]), (2, "cde", [])]
    assert meta["hive.acid.stats"] == b"2,0,0"
    assert (
        K.unpack_hashes(out[0]["key_hashes"]).tolist()
        == K.hash_array([K.key_hash64((1,)), K.key_hash64((2,))]).tolist()
    )


def test_a_bucket_arriving_again_after_its_file_closed_is_refused(tmp_path):
    """Rows of bucket 0, then 1, then 0 again: the second run of bucket 0 would open (and
    overwrite) bucket_00000, so the task stops instead."""
    cols = [("id", "bigint")]
    tbl = pa.table(
        {W.BUCKET_COL: pa.array([0, 1, 0], pa.int32()), "id": pa.array([1, 2, 3], pa.int64())}
    )
    with pytest.raises(F.AcidFileError, match="bucket 0 arrived after"):
        W.write_local(tbl, spec(tmp_path, cols, bucketed=True))


def test_explicit_stripe_rows_are_exact_even_for_compressible_data(tmp_path):
    """``stripe_rows=`` cuts a stripe at that many events (rounded up to the 1,024-row write
    batch) even when the data compresses to nothing (pyarrow's writer would make one stripe);
    the default writer keeps pyarrow's columnar path."""
    cols = [("id", "bigint"), ("payload", "string")]
    n = 20_000
    tbl = pa.table({"id": pa.array(np.arange(n)), "payload": ["a"] * n})
    out = W.write_local(tbl, spec(tmp_path / "exact", cols, stripe_rows=1000, key=["id"]))
    with open(out[0]["path"], "rb") as fh:
        r = pyorc.Reader(fh)
        sizes = [len(r.read_stripe(i)) for i in range(r.num_of_stripes)]
    assert sizes == [1024] * 19 + [n - 19 * 1024]
    ev = F.read_events(TableFS(str(tmp_path / "exact")), out[0]["path"])
    assert ev.column("id").to_pylist() == list(range(n))
    out = W.write_local(tbl, spec(tmp_path / "default", cols, key=["id"]))
    assert out[0]["stripes"] == 1  # by size: this data fits in one stripe
