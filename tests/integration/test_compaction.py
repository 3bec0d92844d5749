"""The compactor on real files, a real catalog and real Spark: minor and major compaction
produce docs/hive-acid-format.md §9's names and contents, keep the visible rows (also at older
write ids), stop below open write ids, drop aborted data, wait for older readers before
cleaning, fail safely, and Hive 2.3's own reader reads the result identically."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import json
import os
from pathlib import Path

import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.format.bucketing import encode_bucket_property
from acidflow.format.orc import files as acid_files
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS
from tests.compat.hive23 import read_with_hive23
from tests.support import acidtables as at

pytestmark = pytest.mark.spark

B0, B1 = encode_bucket_property(0, 0), encode_bucket_property(1, 0)
COLS = [
    Column("id", "int"),
    Column("name", "string"),
    Column("price", "decimal(10,2)"),
    Column("day", "date"),
]
# acidflow.target.file.bytes=0: Hive 3.1's one base file per writer id, which these tests check
# file by file (packing is tests/integration/test_small_files.py)
CFG = CompactorConfig(heartbeat_s=0.5, target_file_bytes=0)


def row(i: int, tag: str = "a") -> tuple:
    return (i, f"{tag}{i}", decimal.Decimal(i) / 4, dt.date(2024, 1, 1) + dt.timedelta(days=i))


def history(catalog, name="db.t"):
    """Writes 1..5 on an unbucketed table with two writer files; returns expected rows."""
    catalog.create_table(TableDef(name=name, columns=COLS))
    at.write(
        catalog, name, {0: [row(i) for i in range(0, 6)], 1: [row(i) for i in range(6, 10)]}
    )  # w1
    at.write(
        catalog, name, {0: [row(i, "u") for i in (2, 3)]}, [(1, B0, 2), (1, B0, 3)]
    )  # w2 update
    at.write(catalog, name, {1: [row(i) for i in range(10, 14)]})  # w3
    at.write(catalog, name, deletes=[(1, B1, 0), (3, B1, 1)])  # w4 delete
    at.write(catalog, name, {0: [row(99, "x")]}, end="abort")  # w5 aborted


def listing(catalog, name="db.t") -> list[str]:
    return sorted(p.name for p in Path(catalog.get_table(name).location).iterdir())


def events(path: Path) -> list[tuple]:
    t = acid_files.read_events(TableFS(str(path)), str(path))
    return list(zip(*(t.column(i).to_pylist() for i in range(5))))


def hive23(spark, catalog, name="db.t", hwm=None):
    td = catalog.get_table(name)
    valid = catalog.valid_write_ids(td.name)
    got = read_with_hive23(
        spark,
        td.location,
        [(c.name, c.hive_type) for c in td.columns],
        high_watermark=valid.high_watermark if hwm is None else hwm,
        open_write_ids=valid.open_write_ids,
        aborted_write_ids=valid.aborted_write_ids,
    )
    return collections.Counter(got)


def ours(catalog, name="db.t", **kw):
    return collections.Counter(r[:-1] for r in at.rows(catalog, name, **kw))


def test_minor_then_major_names_contents_and_hive23(spark, catalog):
    history(catalog)
    before = at.rows(catalog, "db.t")
    before_at2 = at.rows(catalog, "db.t", as_of_write_id=2)
    assert len(before) == 10 + 0 + 4 - 2

    # ---- minor
    info = initiator.request_compaction(catalog, "db.t", None, "minor", requester="alice")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out.state == "ready for cleaning", out.report
    entry = catalog.get_compaction(info.id)
    assert entry.highest_write_id == 5 and entry.requester == "alice" and entry.commit_id
    assert catalog.get_transaction(entry.txn_id).state == "committed"
    names = listing(catalog)
    assert "delta_0000001_0000004" in names and "delete_delta_0000001_0000004" in names
    loc = Path(catalog.get_table("db.t").location)
    d = loc / "delta_0000001_0000004"
    assert (d / "_orc_acid_version").read_bytes() == b"2"
    assert not (d / "_metadata_acid").exists()
    assert sorted(p.name for p in d.iterdir()) == [
        "_orc_acid_version",
        "bucket_00000",
        "bucket_00001",
    ]
    ev0 = events(d / "bucket_00000")
    # insert events unchanged: w1 rows 0..5 and w2's two new rows; the aborted w5 row is gone
    assert [(e[1], e[3], e[4]) for e in ev0] == [(1, i, 1) for i in range(6)] + [
        (2, 0, 2),
        (2, 1, 2),
    ]
    assert all(e[0] == 0 and e[2] == B0 for e in ev0)
    dels = events(loc / "delete_delta_0000001_0000004" / "bucket_00000")
    assert dels == [(2, 1, B0, 2, 2), (2, 1, B0, 3, 2)]
    dels1 = events(loc / "delete_delta_0000001_0000004" / "bucket_00001")
    assert dels1 == [(2, 1, B1, 0, 4), (2, 3, B1, 1, 4)]
    meta = acid_files.read_user_metadata(TableFS(str(d)), str(d / "bucket_00000"))
    assert meta["hive.acid.stats"] == b"8,0,0" and meta["hive.acid.version"] == b"2"
    assert meta["hive.acid.key.index"] == f"2,{B0},1;".encode()
    assert at.rows(catalog, "db.t") == before
    assert at.rows(catalog, "db.t", as_of_write_id=2) == before_at2
    assert hive23(spark, catalog) == ours(catalog)

    # ---- cleaner: old deltas and the aborted dir go, the entry succeeds
    rep = cleaner.run_cleaner(catalog)
    assert rep.cleaned[info.id] and catalog.get_compaction(info.id).state == "succeeded"
    assert listing(catalog) == ["delete_delta_0000001_0000004", "delta_0000001_0000004"]
    assert at.rows(catalog, "db.t") == before
    assert at.rows(catalog, "db.t", as_of_write_id=2) == before_at2  # row filter still works

    # ---- major
    at.write(catalog, "db.t", {0: [row(20, "n")]}, [(1, B0, 5)])  # w6: new row, delete id 5
    expected = at.rows(catalog, "db.t")
    info2 = initiator.request_compaction(catalog, "db.t", None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info2.id, config=CFG)
    assert out.state == "ready for cleaning", out.report
    base = loc / "base_0000006"
    assert json.loads((base / "_metadata_acid").read_text()) == {
        "thisFileVersion": "0",
        "dataFormat": "compacted",
    }
    assert (base / "_orc_acid_version").read_bytes() == b"2"
    all_events = events(base / "bucket_00000") + events(base / "bucket_00001")
    assert all(e[0] == 0 and e[1] == e[4] for e in all_events)  # currentTransaction = original
    assert sorted((e[1], e[2], e[3]) for e in all_events) == sorted(r[-1] for r in expected)
    assert at.rows(catalog, "db.t") == expected
    assert hive23(spark, catalog) == ours(catalog)
    assert out.report["before"] == out.report["after"]
    assert out.report["before"]["rows"] == len(expected)
    cleaner.run_cleaner(catalog)
    assert listing(catalog) == ["base_0000006"]
    assert at.rows(catalog, "db.t") == expected
    assert hive23(spark, catalog) == ours(catalog)


def test_open_transaction_stops_compaction_and_aborted_data_disappears(spark, catalog):
    catalog.create_table(TableDef(name="db.o", columns=COLS))
    at.write(catalog, "db.o", {0: [row(1)]})  # w1
    at.write(catalog, "db.o", {0: [row(2)]}, end="abort")  # w2 aborted
    at.write(catalog, "db.o", {0: [row(3)]})  # w3
    open_txn, w4 = at.write(catalog, "db.o", {0: [row(4)]}, end="open")  # w4 open
    at.write(catalog, "db.o", {0: [row(5)]})  # w5 committed above it
    info = initiator.request_compaction(catalog, "db.o", None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out.state == "ready for cleaning", out.report
    assert catalog.get_compaction(info.id).highest_write_id == 3
    names = listing(catalog, "db.o")
    assert "base_0000003" in names and "delta_0000004_0000004_0000" in names
    assert "delta_0000005_0000005_0000" in names
    base_rows = events(Path(catalog.get_table("db.o").location) / "base_0000003" / "bucket_00000")
    assert [e[1] for e in base_rows] == [1, 3]  # aborted w2 dropped
    assert [r[0] for r in at.rows(catalog, "db.o")] == [1, 3, 5]
    rep = cleaner.run_cleaner(catalog)
    assert info.id in rep.waiting and open_txn in rep.waiting[info.id]["txns"]
    catalog.commit_transaction(open_txn)
    rep = cleaner.run_cleaner(catalog)
    assert catalog.get_compaction(info.id).state == "succeeded"
    assert listing(catalog, "db.o") == [
        "base_0000003",
        "delta_0000004_0000004_0000",
        "delta_0000005_0000005_0000",
    ]
    assert [r[0] for r in at.rows(catalog, "db.o")] == [1, 3, 4, 5]
    assert hive23(spark, catalog, "db.o") == ours(catalog, "db.o")


def test_long_reader_keeps_its_snapshot_while_cleaner_waits(spark, catalog):
    history(catalog)
    expected = at.rows(catalog, "db.t")
    snap = reads.reader_snapshot(catalog, "db.t", heartbeat_s=0.2)
    df = snap.read(spark, row_id=True)  # lazy Spark DataFrame of the old snapshot
    info = initiator.request_compaction(catalog, "db.t", None, "major")
    assert (
        worker.run_worker(spark, catalog, cq_id=info.id, config=CFG).state == "ready for cleaning"
    )
    rep = cleaner.run_cleaner(catalog)
    assert rep.waiting[info.id]["readers"] == [snap.reader_id]
    assert catalog.get_compaction(info.id).state == "ready for cleaning"
    assert "delta_0000001_0000001_0000" in listing(catalog)  # nothing deleted yet
    got = sorted(
        (tuple(r[c.name] for c in COLS) + (tuple(r["ROW__ID"]),) for r in df.collect()), key=repr
    )
    assert got == expected
    snap.close()
    rep = cleaner.run_cleaner(catalog)
    assert rep.cleaned[info.id] and catalog.get_compaction(info.id).state == "succeeded"
    assert listing(catalog) == ["base_0000004"]
    assert at.rows(catalog, "db.t") == expected


def test_failed_verification_leaves_table_unchanged(spark, catalog):
    history(catalog)
    before_names, before = listing(catalog), at.rows(catalog, "db.t")

    def tamper(tmp):  # drop one output file before verification
        os.remove(os.path.join(tmp, "base_0000004", "bucket_00001"))

    info = initiator.request_compaction(catalog, "db.t", None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG, tamper=tamper)
    assert out.state == "failed" and "verification failed" in out.report["error"]
    entry = catalog.get_compaction(info.id)
    assert entry.state == "failed" and "VerificationError" in entry.error
    assert catalog.get_transaction(entry.txn_id).state == "aborted"
    assert listing(catalog) == before_names
    assert at.rows(catalog, "db.t") == before


def test_major_makes_original_row_ids_permanent(spark, catalog):
    import pyarrow as pa
    import pyarrow.orc as paorc

    catalog.create_table(
        TableDef(name="db.orig", columns=[Column("id", "int"), Column("s", "string")])
    )
    loc = Path(catalog.get_table("db.orig").location)
    loc.mkdir(parents=True, exist_ok=True)
    paorc.write_table(
        pa.table({"id": pa.array([1, 2, 3], pa.int32()), "s": ["a", "b", "c"]}),
        str(loc / "000000_0"),
    )
    paorc.write_table(
        pa.table({"id": pa.array([4], pa.int32()), "s": ["d"]}), str(loc / "000000_0_copy_1")
    )
    at.write(catalog, "db.orig", {0: [(5, "e")]}, [(0, B0, 1)])  # delete original row 2
    before = at.rows(catalog, "db.orig")
    assert [r[0] for r in before] == [1, 3, 4, 5] and before[2][-1] == (0, B0, 3)
    info = initiator.request_compaction(catalog, "db.orig", None, "major")
    assert (
        worker.run_worker(spark, catalog, cq_id=info.id, config=CFG).state == "ready for cleaning"
    )
    ev = events(loc / "base_0000001" / "bucket_00000")
    assert [(e[1], e[3]) for e in ev] == [(0, 0), (0, 2), (0, 3), (1, 0)]
    cleaner.run_cleaner(catalog)
    assert listing(catalog, "db.orig") == ["base_0000001"]
    assert at.rows(catalog, "db.orig") == before


def test_initiator_queue_worker_cleaner_pipeline(spark, catalog, capsys):
    """Initiator decides from real files; the Spark entry runs the queue; the cleaner finishes."""
    from acidflow import entry

    catalog.create_table(
        TableDef(
            name="db.p",
            columns=COLS,
            partition_columns=[Column("ds", "string")],
            properties={"compactorthreshold.hive.compactor.delta.num.threshold": "2"},
        )
    )
    catalog.create_table(
        TableDef(name="db.q", columns=COLS, properties={"NO_AUTO_COMPACTION": "true"})
    )
    for i in range(3):
        at.write(catalog, "db.p", {0: [row(i)]}, partition="ds=a")
    at.write(catalog, "db.p", {0: [row(9)]}, partition="ds=b")
    for i in range(3):
        at.write(catalog, "db.q", {0: [row(i)]})
    dry = initiator.run_initiator(catalog, dry_run=True, config=CFG)
    by = {(d.table, d.partition): d for d in dry.decisions}
    assert by[("db.p", "ds=a")].action == "major"  # 3 deltas > 2, no base
    assert by[("db.p", "ds=b")].action is None
    assert "NO_AUTO_COMPACTION" in by[("db.q", None)].reason
    assert catalog.list_compactions() == []
    assert entry.main(["compact", "--initiate"]) == 0
    ids = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(ids) == 1
    assert entry.main(["compact", "--worker", "--id", str(ids[0])]) == 0
    assert catalog.get_compaction(ids[0]).state == "ready for cleaning"
    assert entry.main(["clean"]) == 0
    assert catalog.get_compaction(ids[0]).state == "succeeded"
    loc = Path(catalog.get_table("db.p").location) / "ds=a"
    assert sorted(p.name for p in loc.iterdir()) == ["base_0000003"]
    assert [r[0] for r in at.rows(catalog, "db.p")] == [0, 1, 2, 9]
    # written since: nothing new -> no candidate for ds=a
    assert all(
        d.partition != "ds=a" for d in initiator.run_initiator(catalog, dry_run=True).decisions
    )


TYPED = [
    Column("id", "bigint"),
    Column("b", "boolean"),
    Column("t", "tinyint"),
    Column("s", "smallint"),
    Column("i", "int"),
    Column("d", "double"),
    Column("st", "string"),
    Column("da", "date"),
    Column("ts", "timestamp"),
    Column("m", "decimal(12,3)"),
]


def typed_row(k: int, tag: str) -> tuple:
    return (
        k,
        k % 3 == 0 if k % 7 else None,
        k % 256 - 128,
        k % 65536 - 32768,
        k * 7919 % 2**31,
        k / 7,
        f"{tag}{k * 2654435761 % 2**32:x}",
        dt.date(1970, 1, 1) + dt.timedelta(days=k % 40000),
        dt.datetime(2001, 2, 3, 4, 5, 6, 789012) + dt.timedelta(seconds=k * 37, microseconds=k),
        decimal.Decimal(k * 1001) / 1000,
    )


def test_major_compaction_of_every_columnar_type_in_several_stripes_hive23(spark, catalog):
    """The base written column by column (pyarrow's ORC writer + Hive's footer keys) holds every
    primitive type the columnar path takes, in several stripes; Hive 2.3's reader, with one
    split per stripe (bounded by our hive.acid.key.index), returns exactly our rows."""
    catalog.create_table(TableDef(name="db.ty", columns=TYPED))
    n = 100_000  # pyarrow's ORC writer cuts ~30k-row stripes at least, whatever the target
    at.write(
        catalog,
        "db.ty",
        {
            0: [typed_row(k, "a") for k in range(0, n, 2)],
            1: [typed_row(k, "a") for k in range(1, n, 2)],
        },
    )  # w1
    at.write(
        catalog,
        "db.ty",
        {0: [typed_row(k, "u") for k in range(0, 600, 2)]},
        [(1, B0, r) for r in range(300)],
    )  # w2
    at.write(catalog, "db.ty", deletes=[(1, B1, r) for r in range(0, 3000, 5)])  # w3
    expected = at.rows(catalog, "db.ty")
    assert len(expected) == n - 600
    info = initiator.request_compaction(catalog, "db.ty", None, "major")
    out = worker.run_worker(
        spark,
        catalog,
        cq_id=info.id,
        config=CompactorConfig(heartbeat_s=0.5, target_stripe_bytes=32 * 1024, target_file_bytes=0),
    )
    assert out.state == "ready for cleaning", out.report
    base = Path(catalog.get_table("db.ty").location) / "base_0000003"
    for b in ("bucket_00000", "bucket_00001"):
        info_b = acid_files.file_info(TableFS(str(base)), str(base / b))
        meta = acid_files.read_user_metadata(TableFS(str(base)), str(base / b))
        keys = acid_files.parse_key_index(meta["hive.acid.key.index"])
        assert info_b.stripes >= 2 and len(keys) == info_b.stripes, (b, info_b)
    assert at.rows(catalog, "db.ty") == expected
    got = read_with_hive23(
        spark,
        str(Path(catalog.get_table("db.ty").location)),
        [(c.name, c.hive_type) for c in TYPED],
        high_watermark=3,
        conf_overrides={
            "hive.exec.orc.split.strategy": "ETL",
            "mapreduce.input.fileinputformat.split.maxsize": "1",
            "mapreduce.input.fileinputformat.split.minsize": "1",
        },
    )
    assert collections.Counter(got) == ours(catalog, "db.ty")
