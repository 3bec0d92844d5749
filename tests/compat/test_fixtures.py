"""The seven Hive/Trino/Impala-written cases of ../shared/fixtures/hive-acid, read exactly as
their MANIFEST states: through the Python API (Arrow), through Spark, and through `acidflow cat`.

Expected values are the MANIFEST's (taken from the source projects' own test assertions), not
outputs of our reader.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acidflow.format.layout import ValidWriteIdList
from acidflow.format.orc.files import AcidFileError
from acidflow.read import snapshot
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS

NATION_KEYS = set(range(25))


def table_dir(fixtures_dir: Path, case: str) -> str:
    return str(fixtures_dir / case / "table")


def read_rows(path: str, **kw) -> list[dict]:
    return reads.run_plan(None, reads.plan_path(path, **kw), row_id=True).to_pylist()


def cli_rows(path: str, *args: str) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "acidflow.cli", "cat", path, "--row-id", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# ---------------------------------------------------------------- 1. trino-nation-delete-deltas


@pytest.mark.parametrize("hwm,deleted", [(None, {5, 19}), (4, {5, 19}), (3, {5}), (2, set())])
def test_nation_delete_deltas(fixtures_dir, hwm, deleted):
    rows = read_rows(table_dir(fixtures_dir, "trino-nation-delete-deltas"), high_watermark=hwm)
    per_key = collections.Counter(r["n_nationkey"] for r in rows)
    assert len(rows) == 25_000 - 1000 * len(deleted)
    assert set(per_key) == NATION_KEYS - deleted
    assert all(v == 1000 for v in per_key.values())
    assert {r["ROW__ID"]["writeid"] for r in rows} == {2}
    assert {r["ROW__ID"]["bucketid"] for r in rows} == {536870912}


def test_nation_delete_deltas_open_and_aborted_write_ids(fixtures_dir):
    path = table_dir(fixtures_dir, "trino-nation-delete-deltas")
    # write id 4 open: its delete events do not count -> only key 5 deleted
    rows = read_rows(path, high_watermark=4, open_write_ids=[4])
    assert {r["n_nationkey"] for r in rows} == NATION_KEYS - {5}
    rows = read_rows(path, high_watermark=4, aborted_write_ids=[3])
    assert {r["n_nationkey"] for r in rows} == NATION_KEYS - {19}
    # the insert write id itself aborted: nothing is visible
    assert read_rows(path, high_watermark=4, aborted_write_ids=[2]) == []


# ---------------------------------------------------------------- 2. trino-original-files-dummy-id


def test_original_files_dummy_id(fixtures_dir):
    rows = read_rows(table_dir(fixtures_dir, "trino-original-files-dummy-id"))
    ids = sorted(r["id"] for r in rows)
    assert ids == [0, 1] + list(range(4, 21))
    # synthetic ROW__IDs: bucket from the file name, rowId continues across copies of bucket 2
    by_id = {r["id"]: r["ROW__ID"] for r in rows}
    assert by_id[0] == {"writeid": 0, "bucketid": 536870912, "rowid": 0}
    assert by_id[4] == {"writeid": 0, "bucketid": 536870912, "rowid": 3}
    assert by_id[5]["bucketid"] == 536936448  # V1 bucket 1
    assert by_id[9] == {"writeid": 0, "bucketid": 537001984, "rowid": 0}
    assert by_id[13] == {"writeid": 0, "bucketid": 537001984, "rowid": 4}
    assert by_id[20] == {"writeid": 0, "bucketid": 537001984, "rowid": 11}
    quirk = [r for r in rows if r["id"] == 14][0]
    assert "Hadoopf=" in quirk["comment"]


# ---------------------------------------------------------------- 3. trino-original-file-nation


def test_original_file_nation(fixtures_dir):
    rows = read_rows(table_dir(fixtures_dir, "trino-original-file-nation"))
    assert len(rows) == 24
    assert {r["n_nationkey"] for r in rows} == set(range(24))
    assert "UNITED STATES" not in {r["n_name"] for r in rows}


# ---------------------------------------------------------------- 4. trino-delete-deltas-only


def test_delete_deltas_only_selection_and_events(fixtures_dir):
    path = table_dir(fixtures_dir, "trino-delete-deltas-only")
    assert read_rows(path) == []
    state = reads.acid_state_of(path)
    assert [d.name for d in state.deltas] == [
        "delete_delta_0000004_0000004",
        "delete_delta_0000007_0000007_0000",
    ]
    assert state.obsolete == ["delete_delta_0000004_0000004_0000"]


def _survivors(tfs, files, valid, owids):
    keys = snapshot.load_delete_keys(tfs, files, valid)
    import pyarrow as pa

    cand = pa.table(
        {
            "originalTransaction": pa.array(owids, pa.int64()),
            "bucket": pa.array([536870912] * len(owids), pa.int32()),
            "rowId": pa.array([0] * len(owids), pa.int64()),
        }
    )
    pos = snapshot._surviving(cand, keys)
    return owids if pos is None else [owids[i] for i in pos.to_pylist()]


def test_delete_locations(fixtures_dir):
    """Trino TestOrcDeletedRows.testDeleteLocations / ...AfterMinorCompaction."""
    path = Path(table_dir(fixtures_dir, "trino-delete-deltas-only"))
    tfs = TableFS(str(path))
    valid = ValidWriteIdList("t", 10)
    both = [
        str(path / "delete_delta_0000004_0000004_0000/bucket_00000"),
        str(path / "delete_delta_0000007_0000007_0000/bucket_00000"),
    ]
    assert _survivors(tfs, both, valid, list(range(10))) == [0, 1, 3, 4, 5, 7, 8, 9]
    assert _survivors(tfs, both, valid, list(range(10, 20))) == list(range(10, 20))
    minor = [str(path / "delete_delta_0000004_0000004/bucket_00000")]
    assert _survivors(tfs, minor, valid, list(range(10))) == [0, 1, 3, 4, 5, 6, 7, 8, 9]


# ---------------------------------------------------------------- 5. trino-no-acid-version-negative


def test_no_acid_version_negative(fixtures_dir, tmp_path):
    src = Path(table_dir(fixtures_dir, "trino-no-acid-version-negative")) / "00000_0"
    # at a table root it is a legitimate original file
    assert sorted(r["id"] for r in read_rows(str(src.parent))) == [0, 1, 3, 4]
    # read as ACID data (inside a delta, no _orc_acid_version) it must fail like Trino
    delta = tmp_path / "t" / "delta_0000001_0000001_0000"
    delta.mkdir(parents=True)
    shutil.copy(src, delta / "bucket_00000")
    with pytest.raises(
        AcidFileError, match=r"Expected `hive.acid.version` .* to be >=2 but was <empty>"
    ):
        read_rows(str(tmp_path / "t"))


# ---------------------------------------------------------------- 6. impala-original-file-alltypes


def test_impala_original_file_alltypes(fixtures_dir):
    rows = read_rows(table_dir(fixtures_dir, "impala-original-file-alltypes"))
    assert len(rows) == 7300
    assert {(r["ROW__ID"]["writeid"], r["ROW__ID"]["bucketid"]) for r in rows} == {(0, 536870912)}
    by_id = {r["id"]: r["ROW__ID"]["rowid"] for r in rows}
    by_rowid = {r["ROW__ID"]["rowid"]: r["id"] for r in rows}
    assert [by_id[i] for i in range(10)] == list(range(4030, 4040))
    assert [by_id[i] for i in range(991, 1000)] == list(range(6531, 6540))
    assert [by_id[i] for i in range(7201, 7210)] == list(range(2381, 2390))
    assert [by_rowid[r] for r in range(7201, 7210)] == list(range(491, 500))
    assert all(r in by_rowid for r in range(1201, 1210))
    assert sorted(by_rowid) == list(range(7300))


# ---------------------------------------------------------------- 7. impala-query-compacted-no-acid-metadata


def test_impala_query_compacted_without_metadata(fixtures_dir):
    rows = read_rows(table_dir(fixtures_dir, "impala-query-compacted-no-acid-metadata"))
    assert sorted(r["i"] for r in rows) == [1, 2, 3]
    assert sorted(r["ROW__ID"]["writeid"] for r in rows) == [1, 2, 3]


# ---------------------------------------------------------------- the same through Spark and the CLI

CASES = {
    "trino-nation-delete-deltas": 23000,
    "trino-original-files-dummy-id": 19,
    "trino-original-file-nation": 24,
    "trino-delete-deltas-only": 0,
    "trino-no-acid-version-negative": 4,
    "impala-original-file-alltypes": 7300,
    "impala-query-compacted-no-acid-metadata": 3,
}


def _canon(rows):
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(CASES))
def test_spark_reads_fixtures_like_arrow(spark, fixtures_dir, case):
    path = table_dir(fixtures_dir, case)
    plan = reads.plan_path(path)
    df = reads.run_plan(spark, plan, row_id=True)
    spark_rows = [r.asDict(recursive=True) for r in df.collect()]
    assert len(spark_rows) == CASES[case]
    assert _canon(spark_rows) == _canon(read_rows(path))


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_cat_fixtures(fixtures_dir, case):
    rows = cli_rows(table_dir(fixtures_dir, case))
    assert len(rows) == CASES[case]
    if case == "trino-nation-delete-deltas":
        assert len(cli_rows(table_dir(fixtures_dir, case), "--hwm", "3")) == 24000
        assert len(cli_rows(table_dir(fixtures_dir, case), "--hwm", "2")) == 25000
        assert len(cli_rows(table_dir(fixtures_dir, case), "--hwm", "4", "--open", "4")) == 24000
    if case == "trino-original-files-dummy-id":
        assert 3 not in {r["id"] for r in rows}


@pytest.mark.parametrize("case", sorted(CASES))
def test_split_reads_of_fixtures_equal_the_unsplit_read(fixtures_dir, case):
    """Hive/Trino/Impala-written files read split by split (every stripe its own split, each
    loading the delete events of its key-index range) give the unsplit read's rows."""
    path = table_dir(fixtures_dir, case)
    plan = reads.plan_path(path)
    tfs = TableFS(path)
    whole = snapshot.read_arrow(tfs, plan, row_id=True, file_name=True, split_bytes=0)
    split = snapshot.read_arrow(tfs, plan, row_id=True, file_name=True, split_bytes=1)
    assert whole.num_rows == CASES[case]
    assert split.equals(whole)
