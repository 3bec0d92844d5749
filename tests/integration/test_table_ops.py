"""``acidflow table adopt | convert | ddl`` on real files, a real catalog, the Hive/Trino/Impala
fixtures, Hive 3.1.3's own SQL parser and a real Hive 3.1.3 metastore.

Adopt is checked on every case of ../shared/fixtures/hive-acid (copied to tmp dirs first): the
snapshot equals the MANIFEST's expected rows, the next write gets hwm+1, a major compaction by
acidflow's compactor covers Hive's deltas and original files, and the result (also after the
cleaner) still reads right. Expected values are the MANIFEST's, not our reader's.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from acidflow.catalog import Column, TableDef, TableExistsError
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.format.layout import ValidWriteIdList
from acidflow.read import table as reads
from acidflow.storage.adoption import AdoptionError
from acidflow.tableops import adopt as ops
from acidflow.tableops.adopt import TableOpsError
from acidflow.tableops.convert import convert_table

LONG_MAX = 9223372036854775807
CFG = CompactorConfig(heartbeat_s=0.5)


def copy_case(fixtures_dir: Path, case: str, tmp_path: Path) -> Path:
    dst = tmp_path / "hive" / case
    shutil.copytree(fixtures_dir / case / "table", dst)
    return dst


def rows(catalog, name, **kw) -> list[dict]:
    return reads.read_table(None, catalog, name, row_id=True, **kw).to_pylist()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "acidflow.cli", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )


def compact_major(catalog, name) -> None:
    info = initiator.request_compaction(catalog, name, None, "major")
    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out


# -------------------------------------------------------------- every fixture: adopt -> write -> compact

#: case -> (hwm, primary key, expected(rows) check, key of the row the upsert replaces or adds)
NATION = set(range(25))


def _nation_1000(rs):
    per = collections.Counter(r["n_nationkey"] for r in rs)
    return len(rs) == 23000 and set(per) == NATION - {5, 19} and set(per.values()) == {1000}


FIXTURES = {
    "trino-nation-delete-deltas": (4, "n_nationkey", _nation_1000, 100),
    "trino-original-files-dummy-id": (
        10000001,
        "id",
        lambda rs: sorted(r["id"] for r in rs) == [0, 1] + list(range(4, 21)),
        4,
    ),
    "trino-original-file-nation": (
        10000001,
        "n_nationkey",
        lambda rs: sorted(r["n_nationkey"] for r in rs) == list(range(24)),
        0,
    ),
    "trino-delete-deltas-only": (7, "col", lambda rs: rs == [], 1),
    "trino-no-acid-version-negative": (
        0,
        "id",
        lambda rs: sorted(r["id"] for r in rs) == [0, 1, 3, 4],
        1,
    ),
    "impala-original-file-alltypes": (
        0,
        "id",
        lambda rs: len(rs) == 7300 and sorted(r["id"] for r in rs) == list(range(7300)),
        0,
    ),
    "impala-query-compacted-no-acid-metadata": (
        3,
        "i",
        lambda rs: sorted(r["i"] for r in rs) == [1, 2, 3],
        2,
    ),
}


@pytest.mark.parametrize("case", sorted(FIXTURES))
def test_adopt_every_fixture_write_compact_clean(catalog, fixtures_dir, tmp_path, case):
    hwm, key, expected, upsert_key = FIXTURES[case]
    loc = copy_case(fixtures_dir, case, tmp_path)
    name = "hive." + case.replace("-", "_")
    cols = ops.columns_from_files(name, str(loc))
    history = ops.history_from_options(name, hwm=hwm)
    table = ops.adopt(
        catalog, TableDef(name=name, columns=cols, primary_key=[key], location=str(loc)), history
    )
    assert table.external and table.location == str(loc)
    # the snapshot is Hive's: same ValidWriteIdList, the MANIFEST's rows
    assert catalog.valid_write_ids(name) == ValidWriteIdList(name, hwm)
    before = rows(catalog, name)
    assert expected(before), case
    assert all(rec.operations == ["adopted"] for rec in catalog.commit_records(name))

    # acidflow's next write gets hwm + 1 (an update of an existing row, or a new key)
    current = {r[key]: r for r in before}
    new_row = {
        c.name: current[upsert_key][c.name] if upsert_key in current else None
        for c in table.columns
    }
    new_row[key] = upsert_key
    changed = next(
        (c.name for c in table.columns if c.hive_type == "string" and c.name != key), None
    )
    if changed:
        new_row[changed] = "changed by acidflow"
    df = pa.Table.from_pylist([new_row])
    with Transaction(catalog) as txn:
        txn.upsert(name, df)
        assert txn.write_id(name) == hwm + 1
    after = rows(catalog, name)
    mine = [r for r in after if r["ROW__ID"]["writeid"] == hwm + 1]
    assert [r[key] for r in mine] == [upsert_key]
    if changed:
        assert mine[0][changed] == "changed by acidflow"
    assert len(after) == len(before) + (0 if upsert_key in current else 1)
    assert catalog.commit_records(name)[-1].write_id == hwm + 1

    def canon(rs):
        return collections.Counter(
            json.dumps({k: v for k, v in r.items()}, sort_keys=True, default=str) for r in rs
        )

    # a major compaction treats Hive's deltas and original files as its own
    compact_major(catalog, name)
    assert canon(rows(catalog, name)) == canon(after)
    cleaner.run_cleaner(catalog)
    assert canon(rows(catalog, name)) == canon(after)
    left = sorted(p.name for p in loc.iterdir() if not p.name.startswith((".", "_")))
    assert len(left) == 1 and left[0].startswith(f"base_{hwm + 1:07d}"), left


# -------------------------------------------------------------- histories: open / aborted / time travel


def test_adopt_open_and_aborted_history_and_time_travel(catalog, fixtures_dir, tmp_path):
    loc = copy_case(fixtures_dir, "trino-nation-delete-deltas", tmp_path)
    name = "hive.nation"
    cols = ops.columns_from_files(name, str(loc))
    # Hive's reader: write id 4 open, 1 aborted (no files)
    hist = ValidWriteIdList.from_string("default.nation_in_hive:4:4:4:1")
    ops.adopt(catalog, TableDef(name=name, columns=cols, location=str(loc)), hist)
    valid = catalog.valid_write_ids(name)
    # open turned aborted: after adoption no Hive transaction can commit into the table
    assert valid == ValidWriteIdList(name, 4, (), (1, 4))
    assert valid.to_string() == f"{name}:4:{LONG_MAX}::1,4"
    got = rows(catalog, name)
    assert {r["n_nationkey"] for r in got} == NATION - {5} and len(got) == 24000
    states = {w: s for w, _t, s in catalog.write_id_states(name)}
    assert states == {1: "aborted", 2: "committed", 3: "committed", 4: "aborted"}
    # time travel within Hive's history
    assert len(rows(catalog, name, as_of_write_id=2)) == 25000
    assert len(rows(catalog, name, as_of_write_id=3)) == 24000
    # the aborted delete delta 4 goes to the cleaner like any aborted write
    assert catalog.aborted_write_ids(name, None) == [4]
    assert catalog.aborted_write_ids(name, None, any_partition=True) == [1, 4]
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, name) == 5
    catalog.abort_transaction(txn)


def test_adopt_refusals_name_the_reason(catalog, fixtures_dir, tmp_path):
    loc = copy_case(fixtures_dir, "trino-nation-delete-deltas", tmp_path)
    cols = ops.columns_from_files("hive.n", str(loc))
    tdef = TableDef(name="hive.n", columns=cols, location=str(loc))
    with pytest.raises(
        AdoptionError,
        match=r"delete_delta_0000004_0000004_0000 .* above the "
        r"high watermark 3",
    ):
        ops.adopt(catalog, tdef, ValidWriteIdList("hive.n", 3))
    assert not catalog.table_exists("hive.n")
    with pytest.raises(AdoptionError, match="does not exist"):
        ops.adopt(
            catalog,
            TableDef(name="hive.m", columns=cols, location=str(tmp_path / "nope")),
            ValidWriteIdList("hive.m", 3),
        )
    ops.adopt(catalog, tdef, ValidWriteIdList("hive.n", 4))
    with pytest.raises(TableExistsError):
        ops.adopt(
            catalog,
            TableDef(name="hive.n", columns=cols, location=str(loc)),
            ValidWriteIdList("hive.n", 4),
        )
    # a partitioned table whose directories are not its partitions
    with pytest.raises(AdoptionError, match="partition depth"):
        ops.adopt(
            catalog,
            TableDef(
                name="hive.p",
                columns=cols,
                location=str(loc),
                partition_columns=[Column("ds", "string")],
            ),
            ValidWriteIdList("hive.p", 4),
        )
    with pytest.raises(TableOpsError, match="not in 1..4"):
        ops.history_from_options("hive.n", hwm=4, aborted_ids=[5])


def test_cli_adopt_and_ddl(warehouse, fixtures_dir, tmp_path):
    loc = copy_case(fixtures_dir, "trino-original-files-dummy-id", tmp_path)
    res = run_cli(
        "table",
        "adopt",
        "hive.dummy",
        "--location",
        str(loc),
        "--valid-write-ids",
        f"default.dummy:10000001:{LONG_MAX}::",
        "--primary-key",
        "id",
        "--json",
    )
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["valid_write_ids"] == f"hive.dummy:10000001:{LONG_MAX}::"
    assert info["next_write_id"] == 10000002
    out = run_cli("cat", "hive.dummy")
    assert out.returncode == 0, out.stderr
    assert len([line for line in out.stdout.splitlines() if line.strip()]) == 19
    ddl = run_cli("table", "ddl", "hive.dummy")
    assert ddl.returncode == 0, ddl.stderr
    assert ddl.stdout.startswith("CREATE TABLE `hive`.`dummy`(\n  `id` int,\n  `data` string,")
    assert f"LOCATION\n  'file:{loc}'" in ddl.stdout
    assert "'transactional'='true'" in ddl.stdout
    # refusals are one line naming the reason
    bad = run_cli("table", "adopt", "hive.other", "--location", str(loc), "--hwm", "5")
    assert bad.returncode == 1
    assert "delete_delta_10000001_10000001_0000" in bad.stderr and "above the high" in bad.stderr
    cols = run_cli(
        "table",
        "adopt",
        "hive.other",
        "--location",
        str(tmp_path / "missing"),
        "--hwm",
        "1",
        "--columns",
        "a int",
    )
    assert cols.returncode == 1 and "does not exist" in cols.stderr


def test_columns_from_placeholder_names_need_columns(catalog, tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    paorc.write_table(pa.table({"_col0": [1, 2], "_col1": ["a", "b"]}), str(d / "000000_0"))
    with pytest.raises(TableOpsError, match="pass --columns"):
        ops.columns_from_files("db.t", str(d))
    # with --columns the placeholders match by position (Hive's rule for such files)
    stored, plan = convert_table(
        catalog,
        TableDef(
            name="db.t", columns=[Column("id", "bigint"), Column("name", "string")], location=str(d)
        ),
    )
    assert plan.rows == 2
    assert sorted(r["id"] for r in rows(catalog, "db.t")) == [1, 2]


# -------------------------------------------------------------- convert a plain ORC table

B0, B1 = 536870912, 536936448  # BucketCodec V1 of buckets 0 and 1, statement 0


def _plain(path: Path, ids: list[int], tag: str = "r") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    paorc.write_table(
        pa.table({"id": pa.array(ids, pa.int64()), "name": [f"{tag}{i}" for i in ids]}), str(path)
    )


PLAIN_COLS = [Column("id", "bigint"), Column("name", "string")]


def test_convert_plain_orc_then_write_and_compact(catalog, tmp_path):
    d = tmp_path / "plain"
    _plain(d / "000000_0", [1, 2, 3])
    _plain(d / "000000_0_copy_1", [4, 5])
    _plain(d / "000001_0", [6, 7])
    (d / "_SUCCESS").write_text("")
    stored, plan = convert_table(
        catalog, TableDef(name="db.plain", columns=PLAIN_COLS, primary_key=["id"], location=str(d))
    )
    assert plan.rows == 7 and len(plan.files) == 3 and stored.external
    assert catalog.valid_write_ids("db.plain") == ValidWriteIdList("db.plain", 0)
    got = {r["id"]: r["ROW__ID"] for r in rows(catalog, "db.plain")}
    # synthetic ROW__IDs: write id 0, bucket from the name, rowId across the copies of bucket 0
    assert got[1] == {"writeid": 0, "bucketid": B0, "rowid": 0}
    assert got[5] == {"writeid": 0, "bucketid": B0, "rowid": 4}
    assert got[7] == {"writeid": 0, "bucketid": B1, "rowid": 1}
    # new writes are deltas from write id 1: an update of an original row is a delete event
    # of its synthetic ROW__ID plus an insert
    with Transaction(catalog) as txn:
        txn.upsert(
            "db.plain", pa.table({"id": pa.array([2, 8], pa.int64()), "name": ["two", "eight"]})
        )
        assert txn.write_id("db.plain") == 1
    names = sorted(p.name for p in d.iterdir())
    assert "delta_0000001_0000001_0000" in names and "delete_delta_0000001_0000001_0000" in names
    want = {1: "r1", 2: "two", 3: "r3", 4: "r4", 5: "r5", 6: "r6", 7: "r7", 8: "eight"}
    assert {r["id"]: r["name"] for r in rows(catalog, "db.plain")} == want
    # the first major compaction rewrites originals and deltas into a base; the cleaner
    # removes the originals
    compact_major(catalog, "db.plain")
    assert {r["id"]: r["name"] for r in rows(catalog, "db.plain")} == want
    cleaner.run_cleaner(catalog)
    left = sorted(p.name for p in d.iterdir() if not p.name.startswith(("_", ".")))
    assert len(left) == 1 and left[0].startswith("base_0000001"), left
    after = {r["id"]: r for r in rows(catalog, "db.plain")}
    assert {i: r["name"] for i, r in after.items()} == want
    assert after[1]["ROW__ID"] == {"writeid": 0, "bucketid": B0, "rowid": 0}  # kept for good


def test_convert_partitioned_plain_orc(catalog, tmp_path):
    d = tmp_path / "parted"
    _plain(d / "ds=2024-01-01" / "000000_0", [1, 2])
    _plain(d / "ds=2024-01-02" / "000000_0", [3])
    stored, plan = convert_table(
        catalog,
        TableDef(
            name="db.parted",
            columns=PLAIN_COLS,
            partition_columns=[Column("ds", "string")],
            primary_key=["id"],
            location=str(d),
        ),
    )
    assert plan.rows == 3
    got = {r["id"]: (r["ds"], r["ROW__ID"]["rowid"]) for r in rows(catalog, "db.parted")}
    assert got == {1: ("2024-01-01", 0), 2: ("2024-01-01", 1), 3: ("2024-01-02", 0)}
    with Transaction(catalog) as txn:
        txn.upsert(
            "db.parted",
            pa.table({"id": pa.array([2], pa.int64()), "name": ["two"], "ds": ["2024-01-01"]}),
        )
    info = initiator.request_compaction(catalog, "db.parted", "ds=2024-01-01", "major")
    assert worker.run_worker(None, catalog, cq_id=info.id, config=CFG).state == "ready for cleaning"
    cleaner.run_cleaner(catalog)
    assert sorted(p.name for p in (d / "ds=2024-01-01").iterdir())[0].startswith("base_")
    assert sorted(p.name for p in (d / "ds=2024-01-02").iterdir()) == ["000000_0"]
    assert {r["id"]: r["name"] for r in rows(catalog, "db.parted")} == {1: "r1", 2: "two", 3: "r3"}


def test_convert_refuses_what_hive_refuses(catalog, tmp_path):
    def table(d: Path, **kw) -> TableDef:
        return TableDef(name="db.bad", columns=PLAIN_COLS, location=str(d), **kw)

    d = tmp_path / "names"
    _plain(d / "part-00000-abc.c000.snappy.orc", [1])
    with pytest.raises(
        TableOpsError,
        match=r"Unexpected data file name format.*"
        r"part-00000-abc.c000.snappy.orc",
    ):
        convert_table(catalog, table(d))
    d = tmp_path / "parquet"
    d.mkdir()
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1], "name": ["a"]}), str(d / "000000_0"))
    with pytest.raises(TableOpsError, match=r"000000_0 is not an ORC file"):
        convert_table(catalog, table(d))
    d = tmp_path / "types"
    d.mkdir()
    paorc.write_table(pa.table({"id": ["x"], "name": ["a"]}), str(d / "000000_0"))
    with pytest.raises(
        TableOpsError,
        match=r"types/000000_0 column 'id' is string, the table "
        r"declares id bigint",
    ):
        convert_table(catalog, table(d))
    d = tmp_path / "wide"
    d.mkdir()
    paorc.write_table(pa.table({"id": [1], "name": ["a"], "x": [1]}), str(d / "000000_0"))
    with pytest.raises(TableOpsError, match=r"wide/000000_0 has 3 columns"):
        convert_table(catalog, table(d))
    d = tmp_path / "renamed"
    d.mkdir()
    paorc.write_table(pa.table({"key": [1], "name": ["a"]}), str(d / "000000_0"))
    with pytest.raises(TableOpsError, match=r"has column 'key' where the table declares 'id'"):
        convert_table(catalog, table(d))
    d = tmp_path / "acid"
    shutil.copytree(tmp_path / "renamed", d / "delta_0000001_0000001_0000")
    with pytest.raises(TableOpsError, match=r"already transactional"):
        convert_table(catalog, table(d))
    d = tmp_path / "above"
    _plain(d / "000000_0", [1])
    with pytest.raises(TableOpsError, match=r"above the partition directories"):
        convert_table(catalog, table(d, partition_columns=[Column("ds", "string")]))
    assert catalog.list_tables() == []
    # an older file with fewer columns is fine (ALTER TABLE ... ADD COLUMNS before)
    d = tmp_path / "narrow"
    d.mkdir()
    paorc.write_table(pa.table({"id": pa.array([1], pa.int64())}), str(d / "000000_0"))
    convert_table(catalog, table(d))
    assert rows(catalog, "db.bad")[0]["name"] is None


def test_cli_convert(warehouse, tmp_path):
    d = tmp_path / "cli"
    _plain(d / "000000_0", [1, 2])
    res = run_cli("table", "convert", "db.c", "--location", str(d), "--primary-key", "id", "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["rows"] == 2 and info["columns"] == [
        {"name": "id", "type": "bigint"},
        {"name": "name", "type": "string"},
    ]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "000000_0").write_text("not orc")
    res = run_cli("table", "convert", "db.d", "--location", str(bad), "--columns", "id bigint")
    assert res.returncode == 1 and "000000_0 is not an ORC file" in res.stderr


@pytest.mark.spark
@pytest.mark.slow
def test_convert_spark_written_table(spark, catalog, tmp_path):
    d = tmp_path / "spark_orc"
    df = spark.createDataFrame(
        [(i, f"s{i}", "a" if i % 2 else "b") for i in range(10)],
        "id bigint, name string, part string",
    )
    df.write.partitionBy("part").orc(str(d))
    tdef = TableDef(
        name="db.sparked",
        columns=PLAIN_COLS,
        primary_key=["id"],
        partition_columns=[Column("part", "string")],
        location=str(d),
    )
    # Spark's part-*.orc names are refused as Hive refuses them ...
    with pytest.raises(TableOpsError, match=r"Unexpected data file name format.*part-"):
        convert_table(catalog, tdef)
    # ... and renamed to Hive's original names on request
    stored, plan = convert_table(catalog, tdef, rename=True)
    assert plan.rows == 10
    assert all(Path(f.path).name.startswith("000000_0") for f in plan.files)
    got = rows(catalog, "db.sparked")
    assert sorted((r["id"], r["name"], r["part"]) for r in got) == sorted(
        (i, f"s{i}", "a" if i % 2 else "b") for i in range(10)
    )
    sdf = reads.read_table(spark, catalog, "db.sparked")
    assert sdf.count() == 10
    with Transaction(catalog) as txn:
        txn.upsert(
            "db.sparked",
            pa.table({"id": pa.array([3], pa.int64()), "name": ["three"], "part": ["a"]}),
        )
    compact_major_partition = initiator.request_compaction(catalog, "db.sparked", "part=a", "major")
    assert (
        worker.run_worker(None, catalog, cq_id=compact_major_partition.id, config=CFG).state
        == "ready for cleaning"
    )
    assert {r["id"]: r["name"] for r in rows(catalog, "db.sparked")}[3] == "three"
