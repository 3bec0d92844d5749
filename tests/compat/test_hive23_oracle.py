"""What Hive 2.3.10's own ACID reader (shipped with PySpark) reads correctly, measured.

Tables are either Hive-written fixtures or written here with pyorc in Hive 3's exact event
layout (six event columns, ``hive.acid.key.index`` / ``hive.acid.stats`` / ``hive.acid.version``
footer keys, ``_orc_acid_version`` in every dir, BucketCodec V1 bucket properties). Expected rows
come from construction (or, for the Trino fixture, from an independent pyarrow computation).

Summary (row-by-row path = OrcInputFormat.getRecordReader -> OrcRawRecordMerger, the default of
read_with_hive23):
* correct: V1 bucket properties in every bucket (537001984, ...) incl. deletes and updates,
  several writer files per delta, statement ids, several stripes (also one split per stripe,
  bounded by hive.acid.key.index), base_N + later deltas (obsolete deltas ignored), partitions,
  open / aborted write ids, all scalar types tried, Hive's own Trino fixture.
* the oracle catches: missing key index in insert/base files, wrong key index entries (with
  per-stripe splits), unsorted insert or delete events, row-struct field names that differ from
  the (lower-case) table columns.
* the oracle does NOT catch: missing ``_orc_acid_version``, zstd compression, missing
  hive.acid.stats / key index in delete files (Hive 3's vectorized reader needs the stats).
* Hive 2.3's vectorized reader (VectorizedOrcAcidRowBatchReader) is NOT usable: it throws on any
  V1 delete file that needs a second batch and ignores statement ids.
"""

from __future__ import annotations

import collections
import datetime as dt
import math
import shutil
from decimal import Decimal
from pathlib import Path

import pyarrow.orc as paorc
import pyorc
import pytest

from tests.compat.hive23 import (
    Hive23ReadError,
    describe_hive23_splits,
    read_with_hive23,
    valid_txn_list,
)

pytestmark = pytest.mark.spark

NATION_COLS = [
    ("n_nationkey", "int"),
    ("n_name", "string"),
    ("n_regionkey", "int"),
    ("n_comment", "string"),
]
SIMPLE_COLS = [("id", "bigint"), ("v", "string")]
# Hive 2.3 ETL split strategy with tiny split sizes: one split per stripe, so the row merger
# must bound every split with the hive.acid.key.index entries (OrcRawRecordMerger.discoverKeyBounds).
PER_STRIPE_SPLITS = {
    "hive.exec.orc.split.strategy": "ETL",
    "mapreduce.input.fileinputformat.split.maxsize": "1",
    "mapreduce.input.fileinputformat.split.minsize": "1",
}


# --------------------------------------------------------------------------- writing helpers


def bucket_property(bucket: int, statement: int = 0) -> int:
    """BucketCodec V1: ``(1 << 29) | (bucket << 16) | statement``."""
    return (1 << 29) | (bucket << 16) | statement


def insert_event(write_id: int, bucket: int, row_id: int, row: tuple, statement: int = 0) -> tuple:
    return (0, write_id, bucket_property(bucket, statement), row_id, write_id, row)


def delete_event(
    orig_write_id: int, bucket: int, row_id: int, delete_write_id: int, statement: int = 0
) -> tuple:
    return (2, orig_write_id, bucket_property(bucket, statement), row_id, delete_write_id, None)


def acid_dir(table: Path, name: str) -> Path:
    """Create ``table/name`` with Hive 3's ``_orc_acid_version`` marker (one byte ``2``)."""
    d = table / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "_orc_acid_version").write_bytes(b"2")
    return d


def write_acid_file(
    path: Path,
    columns: list[tuple[str, str]],
    stripes: list[list[tuple]],
    key_index: str | None = None,
) -> None:
    """Write ACID events with pyorc, one ORC stripe per inner list, Hive's footer metadata.

    pyorc only cuts a stripe at ``write_intermediate_footer()`` for rows it has already handed
    to the ORC writer, i.e. at multiples of its ``batch_size``: the batch size is the gcd of the
    stripe lengths so every requested boundary is exact (checked after writing).
    """
    row_type = ",".join(f"{n}:{t}" for n, t in columns)
    schema = (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        f"currentTransaction:bigint,row:struct<{row_type}>>"
    )
    events = [e for s in stripes for e in s]
    ops = collections.Counter(e[0] for e in events)
    if key_index is None:
        key_index = "".join(f"{s[-1][1]},{s[-1][2]},{s[-1][3]};" for s in stripes)
    batch = math.gcd(*[len(s) for s in stripes])
    with open(path, "wb") as f:
        writer = pyorc.Writer(f, schema, compression=pyorc.CompressionKind.ZLIB, batch_size=batch)
        for stripe in stripes:
            for event in stripe:
                writer.write(event)
            writer.write_intermediate_footer()
        writer.set_user_metadata(
            **{
                "hive.acid.key.index": key_index.encode(),
                "hive.acid.stats": f"{ops[0]},{ops[1]},{ops[2]}".encode(),
                "hive.acid.version": b"2",
            }
        )
        writer.close()
    with open(path, "rb") as f:
        reader = pyorc.Reader(f)
        assert [len(reader.read_stripe(i)) for i in range(reader.num_of_stripes)] == [
            len(s) for s in stripes
        ]


def multiset(rows) -> collections.Counter:
    return collections.Counter(rows)


def copy_fixture(fixtures_dir: Path, name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(fixtures_dir / name / "table", dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


# --------------------------------------------------------------------------- 0. txn list format


def test_valid_txn_list_format_matches_hive23(spark):
    """Our string parses in hive-common 2.3.10's ValidReadTxnList to the intended validity."""
    jvm = spark._jvm
    assert valid_txn_list(4) == "4:9223372036854775807:"
    s = valid_txn_list(9, open_write_ids=[7, 5], aborted_write_ids=[3, 12])
    assert s == "9:5:3:5:7"
    txns = jvm.org.apache.hadoop.hive.common.ValidReadTxnList(s)
    assert [i for i in range(1, 12) if txns.isTxnValid(i)] == [1, 2, 4, 6, 8, 9]
    assert txns.getMinOpenTxn() == 5
    assert txns.writeToString() == s


# --------------------------------------------------------------------------- 1. Hive fixture


def _pyarrow_nation_expected(table: Path, hwm: int) -> collections.Counter:
    """Independent merge: insert events minus visible delete events on (owid, bucket, rowId)."""
    deleted = set()
    for f in table.glob("delete_delta_*/bucket_*"):
        t = paorc.ORCFile(str(f)).read().to_pydict()
        for owid, bucket, row_id, cwid in zip(
            t["originalTransaction"], t["bucket"], t["rowId"], t["currentTransaction"]
        ):
            if cwid <= hwm:
                deleted.add((owid, bucket, row_id))
    rows = []
    for f in table.glob("delta_*/bucket_*"):
        t = paorc.ORCFile(str(f)).read().to_pydict()
        for owid, bucket, row_id, cwid, row in zip(
            t["originalTransaction"], t["bucket"], t["rowId"], t["currentTransaction"], t["row"]
        ):
            if cwid <= hwm and (owid, bucket, row_id) not in deleted:
                rows.append(tuple(row[n] for n, _ in NATION_COLS))
    return multiset(rows)


@pytest.mark.parametrize("hwm,count", [(4, 23_000), (3, 24_000), (2, 25_000)])
def test_trino_nation_delete_deltas(spark, fixtures_dir, tmp_path, hwm, count):
    table = copy_fixture(fixtures_dir, "trino-nation-delete-deltas", tmp_path)
    rows = read_with_hive23(spark, str(table), NATION_COLS, high_watermark=hwm)
    assert len(rows) == count
    assert multiset(rows) == _pyarrow_nation_expected(table, hwm)
    keys = {r[0] for r in rows}
    assert (5 in keys) == (hwm < 3) and (19 in keys) == (hwm < 4)


def test_trino_nation_open_and_aborted_ids(spark, fixtures_dir, tmp_path):
    table = copy_fixture(fixtures_dir, "trino-nation-delete-deltas", tmp_path)
    # write id 3 open: its delete delta is ignored, write id 4's applies.
    rows = read_with_hive23(spark, str(table), NATION_COLS, high_watermark=4, open_write_ids=[3])
    assert len(rows) == 24_000 and 5 in {r[0] for r in rows} and 19 not in {r[0] for r in rows}
    rows = read_with_hive23(spark, str(table), NATION_COLS, high_watermark=4, aborted_write_ids=[4])
    assert len(rows) == 24_000 and 19 in {r[0] for r in rows} and 5 not in {r[0] for r in rows}


def test_trino_nation_per_stripe_splits_and_vectorized(spark, fixtures_dir, tmp_path):
    """5 stripes -> 5 splits bounded by the key index; the vectorized reader agrees."""
    table = copy_fixture(fixtures_dir, "trino-nation-delete-deltas", tmp_path)
    expected = _pyarrow_nation_expected(table, 4)
    splits = describe_hive23_splits(
        spark, str(table), NATION_COLS, high_watermark=4, conf_overrides=PER_STRIPE_SPLITS
    )
    assert len(splits) == 5
    rows = read_with_hive23(
        spark, str(table), NATION_COLS, high_watermark=4, conf_overrides=PER_STRIPE_SPLITS
    )
    assert multiset(rows) == expected
    rows = read_with_hive23(spark, str(table), NATION_COLS, high_watermark=4, vectorized=True)
    assert multiset(rows) == expected


@pytest.mark.parametrize(
    "unset,outcome",
    [
        ("hive.txn.operational.properties", 25_000),  # split-update off: delete deltas ignored
        ("transactional_properties", 0),  # no split-update: insert deltas never become splits
        ("transactional", 0),
        ("hive.txn.valid.txns", 23_000),  # absent = every txn valid
        ("columns", 23_000),  # schema.evolution.columns is what counts ...
        ("schema.evolution.columns", "Table schema information is required to read ACID"),
        ("hive.transactional.table.scan", "ClassCastException"),  # events read as plain rows
    ],
)
def test_jobconf_keys_that_matter(spark, fixtures_dir, tmp_path, unset, outcome):
    """Why build_jobconf sets every key: several omissions fail SILENTLY (wrong row counts)."""
    table = copy_fixture(fixtures_dir, "trino-nation-delete-deltas", tmp_path)
    overrides = {unset: None}
    if unset.endswith("columns"):
        overrides[unset + ".types"] = None
    if isinstance(outcome, int):
        rows = read_with_hive23(
            spark, str(table), NATION_COLS, high_watermark=4, conf_overrides=overrides
        )
        assert len(rows) == outcome
    else:
        with pytest.raises(Hive23ReadError, match=outcome):
            read_with_hive23(
                spark, str(table), NATION_COLS, high_watermark=4, conf_overrides=overrides
            )


# --------------------------------------------------------------------------- 2a. bucketed table


def _bucketed_table(root: Path) -> dict:
    """4 buckets, 1000 rows each (id % 4 == bucket), deletes in buckets 1 and 3 (write id 2),
    an update of id 30 in bucket 2 (write id 3: delete + re-insert)."""
    table = root / "bucketed"
    inserts = {}
    d1 = acid_dir(table, "delta_0000001_0000001_0000")
    for b in range(4):
        ids = [i for i in range(4000) if i % 4 == b]
        events = [insert_event(1, b, rid, (i, f"v{i}")) for rid, i in enumerate(ids)]
        inserts[b] = events
        write_acid_file(d1 / f"bucket_{b:05d}", SIMPLE_COLS, [events])
    dd2 = acid_dir(table, "delete_delta_0000002_0000002_0000")
    deletes2 = {1: [0, 5, 999], 3: list(range(10, 20))}
    for b, rids in deletes2.items():
        write_acid_file(
            dd2 / f"bucket_{b:05d}", SIMPLE_COLS, [[delete_event(1, b, rid, 2) for rid in rids]]
        )
    # id 30 is bucket 2, rowId 7
    assert inserts[2][7][5] == (30, "v30")
    write_acid_file(
        acid_dir(table, "delete_delta_0000003_0000003_0000") / "bucket_00002",
        SIMPLE_COLS,
        [[delete_event(1, 2, 7, 3)]],
    )
    write_acid_file(
        acid_dir(table, "delta_0000003_0000003_0000") / "bucket_00002",
        SIMPLE_COLS,
        [[insert_event(3, 2, 0, (30, "updated"))]],
    )

    def expected(visible: set[int]) -> collections.Counter:
        rows = []
        for b, events in inserts.items():
            for e in events:
                if 2 in visible and e[3] in deletes2.get(b, []):
                    continue
                if 3 in visible and b == 2 and e[3] == 7:
                    continue
                rows.append(e[5])
        if 3 in visible:
            rows.append((30, "updated"))
        return multiset(rows)

    return {"table": table, "expected": expected}


@pytest.mark.parametrize("num_buckets", [4, 0])
def test_bucketed_v1_buckets_deletes_and_update(spark, tmp_path, num_buckets):
    """Row-by-row path: deletes and updates in buckets 1-3 (bucket property 537001984 etc.)."""
    t = _bucketed_table(tmp_path)
    table, expected = str(t["table"]), t["expected"]
    for kwargs, visible in [
        (dict(high_watermark=3), {1, 2, 3}),
        (dict(high_watermark=2), {1, 2}),
        (dict(high_watermark=1), {1}),
        (dict(high_watermark=3, aborted_write_ids=[2]), {1, 3}),
        (dict(high_watermark=3, open_write_ids=[2]), {1, 3}),
    ]:
        rows = read_with_hive23(spark, table, SIMPLE_COLS, num_buckets=num_buckets, **kwargs)
        assert multiset(rows) == expected(visible), kwargs
    assert len(read_with_hive23(spark, table, SIMPLE_COLS, high_watermark=3)) == 4000 - 13


def test_vectorized_reader_small_delete_files_ok(spark, tmp_path):
    """Hive 2.3's VectorizedOrcAcidRowBatchReader also gets the bucketed table right: every
    delete file here has fewer than 1024 events (one VectorizedRowBatch)."""
    t = _bucketed_table(tmp_path)
    rows = read_with_hive23(
        spark, str(t["table"]), SIMPLE_COLS, high_watermark=3, num_buckets=4, vectorized=True
    )
    assert multiset(rows) == t["expected"]({1, 2, 3})


@pytest.mark.parametrize("bucket,stripes", [(0, 1), (1, 1), (0, 2)])
def test_vectorized_reader_fails_on_v1_delete_files_over_one_batch(
    spark, tmp_path, bucket, stripes
):
    """LIMITATION of Hive 2.3's vectorized ACID path, for every bucket (also 0).

    VectorizedOrcAcidRowBatchReader$ColumnizedDeleteEventRegistry$DeleteReaderValue.next()
    compares the raw ``bucket`` column of every delete-event batch after the first with the bucket
    number parsed from the file name (``bucket_00001`` -> 1). A V1 bucket property
    (536870912 | bucket << 16) never equals it, so a delete file that needs a second batch
    (more than 1024 events = VectorizedRowBatch.DEFAULT_SIZE, or more than one stripe) throws.
    The first batch is read in the DeleteReaderValue constructor without that check, which is why
    small one-stripe delete files pass. Hive 2.3 has no BucketCodec at all. The row-by-row path
    (OrcRawRecordMerger, read_with_hive23's default) merges on (originalTransaction, bucket,
    rowId) and is correct.
    """
    table = tmp_path / "big_deletes"
    n = 3000
    rows = [(i, f"v{i}") for i in range(n)]
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / f"bucket_{bucket:05d}",
        SIMPLE_COLS,
        [[insert_event(1, bucket, i, r) for i, r in enumerate(rows)]],
    )
    dels = [delete_event(1, bucket, rid, 2) for rid in range(0, n, 2)]  # 1500 events
    if stripes == 2:
        dels = dels[:8]  # few events, but two stripes -> two batches
    write_acid_file(
        acid_dir(table, "delete_delta_0000002_0000002_0000") / f"bucket_{bucket:05d}",
        SIMPLE_COLS,
        [dels[: len(dels) // stripes], dels[len(dels) // stripes :]] if stripes == 2 else [dels],
    )
    gone = {e[3] for e in dels}
    expected = multiset(r for i, r in enumerate(rows) if i not in gone)

    assert multiset(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == expected
    with pytest.raises(Hive23ReadError) as err:
        read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2, vectorized=True)
    message = str(err.value)
    assert "Corrupted records with different bucket ids" in message
    assert (
        f"Expected bucket id {bucket}, however found the bucket id {bucket_property(bucket)}"
    ) in message


def test_statement_ids_row_path_right_vectorized_wrong(spark, tmp_path):
    """Two statements of write id 1 (delta_1_1_0000 and delta_1_1_0001, bucket properties
    536870912 and 536870913) both number rows from 0. A delete of (1, stmt 0, row 3) and one of
    (1, stmt 1, row 4): the row merger keeps the statement apart (it compares the whole bucket
    property); Hive 2.3's ColumnizedDeleteEventRegistry keys on (originalTransaction, rowId)
    only and deletes rowIds 3 and 4 of BOTH statements (wrong)."""
    table = tmp_path / "stmts"
    s0 = [(i, "s0") for i in range(10)]
    s1 = [(100 + i, "s1") for i in range(10)]
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[insert_event(1, 0, k, r) for k, r in enumerate(s0)]],
    )
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0001") / "bucket_00000",
        SIMPLE_COLS,
        [[insert_event(1, 0, k, r, statement=1) for k, r in enumerate(s1)]],
    )
    write_acid_file(
        acid_dir(table, "delete_delta_0000002_0000002_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[delete_event(1, 0, 3, 2), delete_event(1, 0, 4, 2, statement=1)]],
    )
    expected = multiset([r for r in s0 if r[0] != 3] + [r for r in s1 if r[0] != 104])
    assert multiset(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == expected
    vec = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2, vectorized=True)
    assert {3, 4, 103, 104}.isdisjoint(r[0] for r in vec) and len(vec) == 16


# --------------------------------------------------------------------------- 2b. unbucketed, 2 writers


def test_unbucketed_two_writer_files_per_delta(spark, tmp_path):
    """Writer ids 0 and 1 in one delta (bucket_00000 / bucket_00001), deletes in both, a later
    insert delta and delete delta with two writer files each."""
    table = tmp_path / "unbucketed"
    d1 = acid_dir(table, "delta_0000001_0000001_0000")
    w0 = [(i, f"a{i}") for i in range(500)]
    w1 = [(i, f"b{i}") for i in range(500, 1200)]
    for writer, rows in ((0, w0), (1, w1)):
        write_acid_file(
            d1 / f"bucket_{writer:05d}",
            SIMPLE_COLS,
            [[insert_event(1, writer, k, r) for k, r in enumerate(rows)]],
        )
    dd2 = acid_dir(table, "delete_delta_0000002_0000002_0000")
    write_acid_file(dd2 / "bucket_00000", SIMPLE_COLS, [[delete_event(1, 0, 3, 2)]])
    write_acid_file(
        dd2 / "bucket_00001", SIMPLE_COLS, [[delete_event(1, 1, k, 2) for k in (4, 699)]]
    )
    d3 = acid_dir(table, "delta_0000003_0000003_0000")
    w3a, w3b = [(2000, "c0"), (2001, "c1")], [(3000, "d0")]
    for writer, rows in ((0, w3a), (1, w3b)):
        write_acid_file(
            d3 / f"bucket_{writer:05d}",
            SIMPLE_COLS,
            [[insert_event(3, writer, k, r) for k, r in enumerate(rows)]],
        )
    dd4 = acid_dir(table, "delete_delta_0000004_0000004_0000")
    # write id 4 deletes (1, writer 1, row 5) and (3, writer 1, row 0): one file, two write ids
    write_acid_file(
        dd4 / "bucket_00001", SIMPLE_COLS, [[delete_event(1, 1, 5, 4), delete_event(3, 1, 0, 4)]]
    )

    base = w0 + w1
    gone2 = {w0[3], w1[4], w1[699]}
    expect4 = multiset([r for r in base if r not in gone2 | {w1[5]}] + w3a)
    rows = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=4)
    assert multiset(rows) == expect4
    rows = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=3)
    assert multiset(rows) == multiset([r for r in base if r not in gone2] + w3a + w3b)
    rows = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=4, open_write_ids=[3])
    assert multiset(rows) == multiset([r for r in base if r not in gone2 | {w1[5]}])
    assert len(describe_hive23_splits(spark, str(table), SIMPLE_COLS, high_watermark=4)) == 4


# --------------------------------------------------------------------------- 2c. several stripes


def _multi_stripe_table(
    root: Path, key_index: str | None = None
) -> tuple[Path, collections.Counter]:
    table = root / "stripes"
    rows = [(i, f"r{i}") for i in range(15_000)]
    events = [insert_event(1, 0, i, r) for i, r in enumerate(rows)]
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        SIMPLE_COLS,
        [events[0:5000], events[5000:10_000], events[10_000:]],
        key_index=key_index,
    )
    deleted = [0, 100, 4999, 5000, 5001, 9999, 12_345, 14_999]
    dels = [delete_event(1, 0, rid, 2) for rid in deleted]
    write_acid_file(
        acid_dir(table, "delete_delta_0000002_0000002_0000") / "bucket_00000",
        SIMPLE_COLS,
        [dels[:4], dels[4:]],
    )
    return table, multiset(r for i, r in enumerate(rows) if i not in set(deleted))


def test_several_stripes_with_key_index(spark, tmp_path):
    """3 stripes (key index with 3 entries) and a 2-stripe delete file; read as one split per
    file and as one split per stripe (each bounded by the key index)."""
    table, expected = _multi_stripe_table(tmp_path)
    assert multiset(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == expected
    assert (
        len(
            describe_hive23_splits(
                spark, str(table), SIMPLE_COLS, high_watermark=2, conf_overrides=PER_STRIPE_SPLITS
            )
        )
        == 3
    )
    rows = read_with_hive23(
        spark, str(table), SIMPLE_COLS, high_watermark=2, conf_overrides=PER_STRIPE_SPLITS
    )
    assert multiset(rows) == expected


def test_wrong_key_index_is_caught_only_with_per_stripe_splits(spark, tmp_path):
    """A key index whose entries are not the stripes' last keys reads fine as one split (Hive
    ignores it then) but loses / duplicates rows when splits are bounded by it: per-stripe splits
    make the oracle check acidflow's key index."""
    # entry for stripe 0 says rowId 2999 instead of 4999: split 1 then starts after 2999
    bad = "1,536870912,2999;1,536870912,9999;1,536870912,14999;"
    table, expected = _multi_stripe_table(tmp_path, key_index=bad)
    assert multiset(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == expected
    rows = read_with_hive23(
        spark, str(table), SIMPLE_COLS, high_watermark=2, conf_overrides=PER_STRIPE_SPLITS
    )
    # split 0 stops after key (1, 536870912, 2999): rows 3000..4998 are lost (4999 is deleted)
    assert expected - multiset(rows) == multiset((i, f"r{i}") for i in range(3000, 4999))
    assert not multiset(rows) - expected


def test_key_index_with_fewer_entries_than_stripes(spark, tmp_path):
    """OrcRawRecordMerger.discoverKeyBounds indexes the key index by stripe number: one entry for
    three stripes passes a whole-file split but fails per-stripe splits."""
    table, expected = _multi_stripe_table(tmp_path, key_index="1,536870912,14999;")
    assert multiset(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == expected
    with pytest.raises(Hive23ReadError, match="ArrayIndexOutOfBounds"):
        read_with_hive23(
            spark, str(table), SIMPLE_COLS, high_watermark=2, conf_overrides=PER_STRIPE_SPLITS
        )


# --------------------------------------------------------------------------- 2d. base + deltas


def test_base_plus_later_deltas(spark, tmp_path):
    """base_0000002 (events of write ids 1 and 2) supersedes delta_1 / delta_2, which hold
    marker rows that must not show; then delta_3 and delete_delta_4 on top."""
    table = tmp_path / "based"
    base_rows_1 = [(i, f"w1-{i}") for i in range(300)]
    base_rows_2 = [(i, f"w2-{i}") for i in range(300, 400)]
    base_events = [insert_event(1, 0, k, r) for k, r in enumerate(base_rows_1)] + [
        insert_event(2, 0, k, r) for k, r in enumerate(base_rows_2)
    ]
    write_acid_file(
        acid_dir(table, "base_0000002") / "bucket_00000",
        SIMPLE_COLS,
        [base_events[:200], base_events[200:]],
    )
    for w in (1, 2):  # obsolete dirs a cleaner has not removed yet
        write_acid_file(
            acid_dir(table, f"delta_{w:07d}_{w:07d}_0000") / "bucket_00000",
            SIMPLE_COLS,
            [[insert_event(w, 0, 0, (-w, "obsolete"))]],
        )
    d3 = [(1000 + i, f"w3-{i}") for i in range(50)]
    write_acid_file(
        acid_dir(table, "delta_0000003_0000003_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[insert_event(3, 0, k, r) for k, r in enumerate(d3)]],
    )
    write_acid_file(
        acid_dir(table, "delete_delta_0000004_0000004_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[delete_event(1, 0, 7, 4), delete_event(2, 0, 0, 4), delete_event(3, 0, 49, 4)]],
    )
    base_rows = base_rows_1 + base_rows_2
    gone = {base_rows_1[7], base_rows_2[0], d3[49]}
    rows = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=4)
    assert multiset(rows) == multiset([r for r in base_rows + d3 if r not in gone])
    rows = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=3)
    assert multiset(rows) == multiset(base_rows + d3)
    rows = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=4, aborted_write_ids=[3])
    assert multiset(rows) == multiset([r for r in base_rows if r not in gone])
    rows = read_with_hive23(
        spark, str(table), SIMPLE_COLS, high_watermark=4, conf_overrides=PER_STRIPE_SPLITS
    )
    assert multiset(rows) == multiset([r for r in base_rows + d3 if r not in gone])


# --------------------------------------------------------------------------- 2e. partitions


def test_partitioned_table(spark, tmp_path):
    table = tmp_path / "parted"
    parts = {
        "dt=2024-01-01": [(i, f"x{i}") for i in range(100)],
        "dt=2024-01-02": [(i, f"y{i}") for i in range(100, 250)],
    }
    for p, prow in parts.items():
        write_acid_file(
            acid_dir(table / p, "delta_0000001_0000001_0000") / "bucket_00000",
            SIMPLE_COLS,
            [[insert_event(1, 0, k, r) for k, r in enumerate(prow)]],
        )
    # write id 2 touches only the second partition
    write_acid_file(
        acid_dir(table / "dt=2024-01-02", "delete_delta_0000002_0000002_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[delete_event(1, 0, k, 2) for k in (0, 1, 2)]],
    )
    write_acid_file(
        acid_dir(table / "dt=2024-01-02", "delta_0000002_0000002_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[insert_event(2, 0, 0, (100, "y100-new"))]],
    )
    p1, p2 = parts["dt=2024-01-01"], parts["dt=2024-01-02"]
    p2_now = p2[3:] + [(100, "y100-new")]
    rows = read_with_hive23(
        spark, str(table), SIMPLE_COLS, high_watermark=2, partition_dirs=list(parts)
    )
    assert multiset(rows) == multiset(p1 + p2_now)
    rows = read_with_hive23(
        spark,
        str(table),
        SIMPLE_COLS,
        high_watermark=2,
        partition_dirs=[str(table / "dt=2024-01-02")],
    )
    assert multiset(rows) == multiset(p2_now)
    rows = read_with_hive23(
        spark, str(table), SIMPLE_COLS, high_watermark=1, partition_dirs=list(parts)
    )
    assert multiset(rows) == multiset(p1 + p2)


# --------------------------------------------------------------------------- 2f. column types

TYPED_COLS = [
    ("i", "int"),
    ("b", "bigint"),
    ("s", "string"),
    ("d", "double"),
    ("f", "boolean"),
    ("m", "decimal(10,2)"),
    ("day", "date"),
    ("ts", "timestamp"),
]


def test_column_types_and_nulls(spark, tmp_path):
    utc = dt.timezone.utc
    rows = [
        (
            1,
            2**40,
            "plain",
            1.5,
            True,
            Decimal("12.50"),
            dt.date(2024, 2, 29),
            dt.datetime(2024, 2, 29, 23, 59, 58, 123456),
        ),
        (
            -2147483648,
            -(2**63),
            'quote " back\\slash, comma',
            -0.0,
            False,
            Decimal("-99999999.99"),
            dt.date(1969, 12, 31),
            dt.datetime(1969, 12, 31, 23, 59, 58, 500001),
        ),
        (
            2147483647,
            2**63 - 1,
            "tab\tnew\nline \u00e9\u4e2d\U0001f600",
            1e300,
            True,
            Decimal("0.01"),
            dt.date(1900, 1, 1),
            dt.datetime(1900, 1, 1, 0, 0, 0),
        ),
        (
            0,
            0,
            "",
            0.1,
            False,
            Decimal("0.00"),
            dt.date(9999, 12, 31),
            dt.datetime(2038, 1, 19, 3, 14, 8, 1),
        ),
        (None, None, None, None, None, None, None, None),
        (
            7,
            7,
            "null",
            float("inf"),
            None,
            Decimal("1"),
            dt.date(2000, 1, 1),
            dt.datetime(2000, 1, 1, 12),
        ),
        (
            8,
            8,
            "to be deleted",
            2.0,
            True,
            Decimal("2"),
            dt.date(2000, 1, 2),
            dt.datetime(2000, 1, 2),
        ),
    ]
    table = tmp_path / "typed"

    def to_orc(r):  # pyorc wants aware datetimes; Hive gives back the UTC wall clock
        return r[:7] + ((r[7].replace(tzinfo=utc) if r[7] else None),)

    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        TYPED_COLS,
        [[insert_event(1, 0, k, to_orc(r)) for k, r in enumerate(rows)]],
    )
    write_acid_file(
        acid_dir(table, "delete_delta_0000002_0000002_0000") / "bucket_00000",
        TYPED_COLS,
        [[delete_event(1, 0, 6, 2)]],
    )
    got = read_with_hive23(spark, str(table), TYPED_COLS, high_watermark=2)
    expected = [
        tuple(Decimal(v).quantize(Decimal("0.01")) if isinstance(v, Decimal) else v for v in r)
        for r in rows[:6]
    ]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    for g in got:  # exact Python types, not just equal values
        for v, (_, t) in zip(g, TYPED_COLS):
            if v is not None:
                assert (
                    type(v).__name__
                    == {
                        "int": "int",
                        "bigint": "int",
                        "string": "str",
                        "double": "float",
                        "boolean": "bool",
                        "decimal(10,2)": "Decimal",
                        "date": "date",
                        "timestamp": "datetime",
                    }[t]
                )


def test_more_types_and_empty_result(spark, tmp_path):
    cols = [
        ("t", "tinyint"),
        ("sm", "smallint"),
        ("big", "decimal(38,10)"),
        ("vc", "varchar(10)"),
        ("ch", "char(3)"),
        ("d0", "decimal(5,0)"),
    ]
    rows = [
        (
            -128,
            32767,
            Decimal("1234567890123456789012345678.0123456789"),
            "abc",
            "xy ",
            Decimal("-99999"),
        ),
        (127, -32768, Decimal("-0.0000000001"), "", "zzz", Decimal("0")),
    ]
    table = tmp_path / "more"
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        cols,
        [[insert_event(1, 0, k, r) for k, r in enumerate(rows)]],
    )
    assert multiset(read_with_hive23(spark, str(table), cols, high_watermark=1)) == multiset(rows)
    assert read_with_hive23(spark, str(table), cols, high_watermark=0) == []


def test_orc_timestamp_in_last_second_before_epoch(spark, tmp_path):
    """ORC format quirk, not a Hive 2.3 one: a timestamp in (1969-12-31 23:59:59, 1970-01-01)
    with a fraction comes back one second late from every reader tried (Hive 2.3 here, pyarrow,
    pyorc, Spark 4.3's native ORC reader; Spark's own writer does the same). Oracle and pyarrow
    agree, so such values cannot reveal writer bugs; avoid them in round-trip tests."""
    table = tmp_path / "epoch"
    cols = [("i", "int"), ("ts", "timestamp")]
    value = dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)
    f = acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000"
    write_acid_file(f, cols, [[insert_event(1, 0, 0, (1, value))]])
    assert read_with_hive23(spark, str(table), cols, high_watermark=1) == [
        (1, dt.datetime(1970, 1, 1, 0, 0, 0, 999999))
    ]
    arrow = paorc.ORCFile(str(f)).read().to_pydict()["row"][0]["ts"]
    assert arrow.replace(tzinfo=None) == dt.datetime(1970, 1, 1, 0, 0, 0, 999999)


# --------------------------------------------------------------------------- 3. what Hive 2.3 needs


def _write_raw(
    path: Path,
    columns,
    events,
    metadata: dict[str, bytes],
    event_names=None,
    compression=pyorc.CompressionKind.ZLIB,
) -> None:
    """Like write_acid_file but with exactly the given footer metadata / event field names."""
    names = event_names or [
        "operation",
        "originalTransaction",
        "bucket",
        "rowId",
        "currentTransaction",
    ]
    row_type = ",".join(f"{n}:{t}" for n, t in columns)
    schema = (
        f"struct<{names[0]}:int,{names[1]}:bigint,{names[2]}:int,{names[3]}:bigint,"
        f"{names[4]}:bigint,row:struct<{row_type}>>"
    )
    with open(path, "wb") as f:
        writer = pyorc.Writer(f, schema, compression=compression)
        for e in events:
            writer.write(e)
        if metadata:
            writer.set_user_metadata(**metadata)
        writer.close()


def _ten_rows(table: Path, columns=SIMPLE_COLS) -> list[tuple]:
    rows = [(i, f"x{i}") for i in range(10)]
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        columns,
        [[insert_event(1, 0, k, r) for k, r in enumerate(rows)]],
    )
    return rows


def test_insert_file_without_key_index_fails(spark, tmp_path):
    """Every insert-delta / base file needs hive.acid.key.index (OrcRawRecordMerger reads it
    through OrcRecordUpdater.parseKeyIndex): loud failure without it."""
    table = tmp_path / "nokey"
    _write_raw(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        SIMPLE_COLS,
        [insert_event(1, 0, k, (k, "x")) for k in range(10)],
        {"hive.acid.stats": b"10,0,0", "hive.acid.version": b"2"},
    )
    with pytest.raises(Hive23ReadError, match="Can't find user metadata hive.acid.key.index"):
        read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=1)


def test_delete_file_metadata_requirements(spark, tmp_path):
    """Delete files: the row path needs neither key index nor stats; the vectorized path needs
    hive.acid.stats (ColumnizedDeleteEventRegistry reads ``acidStats.deletes``: NPE)."""
    for meta, vectorized_ok in [
        ({"hive.acid.stats": b"0,0,1"}, True),
        ({"hive.acid.key.index": b"1,536870912,3;"}, False),
    ]:
        table = tmp_path / f"del{len(meta[next(iter(meta))])}"
        rows = _ten_rows(table)
        _write_raw(
            acid_dir(table, "delete_delta_0000002_0000002_0000") / "bucket_00000",
            SIMPLE_COLS,
            [delete_event(1, 0, 3, 2)],
            meta,
        )
        expected = multiset(r for r in rows if r[0] != 3)
        assert (
            multiset(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == expected
        )
        if vectorized_ok:
            assert (
                multiset(
                    read_with_hive23(
                        spark, str(table), SIMPLE_COLS, high_watermark=2, vectorized=True
                    )
                )
                == expected
            )
        else:
            with pytest.raises(Hive23ReadError, match="acidStats"):
                read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2, vectorized=True)


def test_unsorted_events_give_wrong_results(spark, tmp_path):
    """The row merger assumes every file sorted by (originalTransaction, bucket, rowId), so the
    oracle catches unsorted output: unsorted delete events are all missed (both paths; the
    vectorized registry binary-searches), unsorted insert events lose deletes (row path only;
    the vectorized path does not care about insert order)."""
    table = tmp_path / "unsorted_del"
    _ten_rows(table)
    write_acid_file(
        acid_dir(table, "delete_delta_0000002_0000002_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[delete_event(1, 0, r, 2) for r in (5, 1, 9, 0)]],
    )
    assert len(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == 10
    assert (
        len(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2, vectorized=True))
        == 10
    )

    table = tmp_path / "unsorted_ins"
    events = [insert_event(1, 0, k, (k, "x")) for k in range(100)]
    write_acid_file(
        acid_dir(table, "delta_0000001_0000001_0000") / "bucket_00000",
        SIMPLE_COLS,
        [events[50:] + events[:50]],
    )
    write_acid_file(
        acid_dir(table, "delete_delta_0000002_0000002_0000") / "bucket_00000",
        SIMPLE_COLS,
        [[delete_event(1, 0, r, 2) for r in (5, 10, 50, 90)]],
    )
    assert len(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2)) == 98  # not 96
    assert (
        len(read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=2, vectorized=True))
        == 96
    )


def test_row_fields_are_matched_by_exact_name(spark, tmp_path):
    """The ``row`` struct is matched to the table columns by name, case-sensitively (ORC
    SchemaEvolution under Hive 2.3): other or upper-case names read as all-NULL columns,
    silently. Hive's own ``_col0, _col1`` names are matched by position."""
    for names, ok in [(("ID", "V"), False), (("a", "b"), False), (("_col0", "_col1"), True)]:
        table = tmp_path / "names" / names[0]
        cols = [(names[0], "bigint"), (names[1], "string")]
        rows = _ten_rows(table, cols)
        got = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=1)
        assert multiset(got) == (multiset(rows) if ok else multiset([(None, None)] * 10))


def test_what_hive23_cannot_parse(spark, tmp_path):
    """Hive 4 / query-compactor layouts Hive 2.3 rejects loudly (so the oracle cannot judge them):
    ``base_N_vT`` visibility suffix and ``bucket_N_A`` names (AcidUtils parseBase /
    parseBucketId: NumberFormatException), lower-case ACID event field names (Hive 3.1
    query-based compactor output: NullPointerException in OrcRawRecordMerger)."""
    ev = [insert_event(1, 0, k, (k, "x")) for k in range(3)]
    t1 = tmp_path / "vsuffix"
    write_acid_file(acid_dir(t1, "base_0000001_v0000005") / "bucket_00000", SIMPLE_COLS, [ev])
    with pytest.raises(Hive23ReadError, match="NumberFormatException"):
        read_with_hive23(spark, str(t1), SIMPLE_COLS, high_watermark=1)
    t2 = tmp_path / "directinsert"
    write_acid_file(
        acid_dir(t2, "delta_0000001_0000001_0000") / "bucket_00000_0", SIMPLE_COLS, [ev]
    )
    with pytest.raises(Hive23ReadError, match='For input string: "00000_0"'):
        read_with_hive23(spark, str(t2), SIMPLE_COLS, high_watermark=1)
    t3 = tmp_path / "lowercase"
    _write_raw(
        acid_dir(t3, "delta_0000001_0000001_0000") / "bucket_00000",
        SIMPLE_COLS,
        ev,
        {
            "hive.acid.key.index": b"1,536870912,2;",
            "hive.acid.stats": b"3,0,0",
            "hive.acid.version": b"2",
        },
        event_names=["operation", "originaltransaction", "bucket", "rowid", "currenttransaction"],
    )
    with pytest.raises(Hive23ReadError, match="NullPointerException"):
        read_with_hive23(spark, str(t3), SIMPLE_COLS, high_watermark=1)


def test_what_hive23_tolerates_that_hive3_may_not(spark, tmp_path):
    """Things the oracle does NOT check, so other tests must: a missing ``_orc_acid_version``
    marker (Hive 2.3 never reads it) and the ORC codec (the ORC 2.3 jar under Hive 2.3 reads
    zstd, which Hive 3.1's ORC 1.5 cannot)."""
    table = tmp_path / "tolerated"
    d = table / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    rows = [(k, "x") for k in range(10)]
    _write_raw(
        d / "bucket_00000",
        SIMPLE_COLS,
        [insert_event(1, 0, k, r) for k, r in enumerate(rows)],
        {
            "hive.acid.key.index": b"1,536870912,9;",
            "hive.acid.stats": b"10,0,0",
            "hive.acid.version": b"2",
        },
        compression=pyorc.CompressionKind.ZSTD,
    )
    got = read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=1)
    assert multiset(got) == multiset(rows)


def test_base_newer_than_an_open_write_id(spark, tmp_path):
    """Hive 2.3 uses base_N only when N < minOpenTxn (ValidReadTxnList.isValidBase); otherwise
    getAcidState fails rather than reading a base that may contain uncommitted data."""
    table = tmp_path / "openbase"
    write_acid_file(
        acid_dir(table, "base_0000005") / "bucket_00000",
        SIMPLE_COLS,
        [[insert_event(1, 0, k, (k, "x")) for k in range(3)]],
    )
    assert (
        len(
            read_with_hive23(
                spark, str(table), SIMPLE_COLS, high_watermark=6, aborted_write_ids=[3]
            )
        )
        == 3
    )
    with pytest.raises(Hive23ReadError, match="Not enough history available"):
        read_with_hive23(spark, str(table), SIMPLE_COLS, high_watermark=6, open_write_ids=[3])
