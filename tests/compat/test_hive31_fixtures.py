"""The Hive/Trino/Impala-written cases of ../shared/fixtures/hive-acid read by Hive 3.1.3's own
ACID reader (``tests/compat/hive31.py``): the rows the MANIFEST states, and exactly acidflow's
snapshot of the same directory, ROW__IDs included.

The MANIFEST's expectations come from the source projects' tests; Hive 3.1.3 here is a third,
independent reader (the fixtures were written by Hive 3).
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from acidflow.format.layout import ValidWriteIdList
from acidflow.read import table as reads
from tests.compat.hive31 import (
    Hive31Error,
    Hive31Oracle,
    acidflow_multiset,
    hive_multiset,
    read_acid,
    require_hive31_tools,
)

pytestmark = pytest.mark.slow

ARTIFACTS = require_hive31_tools()
LONG_MAX = 2**63 - 1
NATION_KEYS = set(range(25))
V1_BUCKET_0 = 536870912  # BucketCodec V1: bucket 0, statement 0


@pytest.fixture(scope="module", params=[False, True], ids=["row", "vectorized"])
def vectorized(request) -> bool:
    """Hive 3.1's row-by-row ACID reader, then its vectorized one."""
    return request.param


@pytest.fixture(scope="module")
def hive31():
    with Hive31Oracle(ARTIFACTS) as oracle:
        yield oracle


def case_dir(fixtures_dir: Path, case: str) -> str:
    return str(fixtures_dir / case / "table")


def read_both(hive31, path: str, valid: ValidWriteIdList, vectorized: bool = False):
    """(Hive 3.1.3's rows, their multiset, acidflow's multiset) of a bare directory."""
    info = reads.describe_path(path)
    hive = hive31.read(path, info.columns, valid, vectorized=vectorized)
    ours = reads.run_plan(
        None,
        reads.plan_path(
            path,
            high_watermark=valid.high_watermark,
            open_write_ids=valid.open_write_ids,
            aborted_write_ids=valid.aborted_write_ids,
        ),
        row_id=True,
    ).to_pylist()
    return hive, hive_multiset(hive), acidflow_multiset(ours, info.columns)


@pytest.mark.parametrize(
    "hwm,open_ids,aborted,deleted",
    [
        (LONG_MAX, (), (), {5, 19}),
        (4, (), (), {5, 19}),
        (3, (), (), {5}),
        (2, (), (), set()),
        (4, (4,), (), {5}),
        (4, (), (3,), {19}),
    ],
)
def test_nation_delete_deltas(hive31, vectorized, fixtures_dir, hwm, open_ids, aborted, deleted):
    """Insert delta + two delete deltas under several ValidWriteIdLists: an open or aborted
    delete write id does not delete."""
    valid = ValidWriteIdList(
        "default.nation", hwm, open_write_ids=open_ids, aborted_write_ids=aborted
    )
    rows, hive, ours = read_both(
        hive31, case_dir(fixtures_dir, "trino-nation-delete-deltas"), valid, vectorized
    )
    per_key = collections.Counter(r.values[0] for r in rows)
    assert len(rows) == 25_000 - 1000 * len(deleted)
    assert set(per_key) == NATION_KEYS - deleted and set(per_key.values()) == {1000}
    assert {(r.write_id, r.bucket) for r in rows} == {(2, V1_BUCKET_0)}
    assert hive == ours


def test_original_files_with_a_delete_delta(hive31, vectorized, fixtures_dir):
    """A converted table: original files get synthetic ROW__IDs (write id 0, bucket from the
    file name, running row number per bucket across ``_copy_N`` files) and the delete event
    (0, bucket 0, row 2) removes id 3."""
    rows, hive, ours = read_both(
        hive31,
        case_dir(fixtures_dir, "trino-original-files-dummy-id"),
        ValidWriteIdList("default.dummy", LONG_MAX),
        vectorized,
    )
    assert sorted(r.values[0] for r in rows) == [0, 1] + list(range(4, 21))
    by_id = {r.values[0]: r.row_id_struct for r in rows}
    assert by_id[0] == (0, V1_BUCKET_0, 0) and by_id[4] == (0, V1_BUCKET_0, 3)
    assert by_id[5] == (0, V1_BUCKET_0 | 1 << 16, 0)
    # bucket 2 = 000002_0, then _copy_1, then _copy_2: row numbers run on across the files
    assert [by_id[i][2] for i in (9, 13, 17, 20)] == [0, 4, 8, 11]
    assert hive == ours


def test_original_nation_file_with_a_delete_delta(hive31, vectorized, fixtures_dir):
    rows, hive, ours = read_both(
        hive31,
        case_dir(fixtures_dir, "trino-original-file-nation"),
        ValidWriteIdList("default.nation", LONG_MAX),
        vectorized,
    )
    assert {r.values[0] for r in rows} == NATION_KEYS - {24}
    assert all(r.values[1] != "UNITED STATES" for r in rows)
    assert hive == ours


def test_delete_deltas_only(hive31, vectorized, fixtures_dir):
    """Delete events and no data (with a minor-compacted delete delta name): no rows."""
    rows, hive, ours = read_both(
        hive31,
        case_dir(fixtures_dir, "trino-delete-deltas-only"),
        ValidWriteIdList("default.dd", LONG_MAX),
        vectorized,
    )
    assert rows == [] and ours == collections.Counter()


def test_plain_orc_file_at_the_root_is_an_original_file(hive31, vectorized, fixtures_dir):
    """Trino refuses this file as ACID data; at the root of a transactional table Hive 3.1
    reads it as an original file (synthetic ROW__IDs), and so does acidflow."""
    rows, hive, ours = read_both(
        hive31,
        case_dir(fixtures_dir, "trino-no-acid-version-negative"),
        ValidWriteIdList("default.neg", LONG_MAX),
        vectorized,
    )
    assert [(r.values[0], r.row_id) for r in rows] == [(0, 0), (1, 1), (3, 2), (4, 3)]
    assert hive == ours


def test_impala_alltypes_original_file(hive31, vectorized, fixtures_dir):
    """7,300 rows of an original file: the ROW__ID samples the Impala test asserts, every
    type (float as float32, timestamps as wall clock) equal to acidflow's."""
    rows, hive, ours = read_both(
        hive31,
        case_dir(fixtures_dir, "impala-original-file-alltypes"),
        ValidWriteIdList("default.alltypes", LONG_MAX),
        vectorized,
    )
    assert len(rows) == 7300
    assert {(r.write_id, r.bucket) for r in rows} == {(0, V1_BUCKET_0)}
    row_of_id = {r.values[0]: r.row_id for r in rows}
    id_of_row = {r.row_id: r.values[0] for r in rows}
    assert [row_of_id[i] for i in range(10)] == list(range(4030, 4040))
    assert [row_of_id[i] for i in range(991, 1000)] == list(range(6531, 6540))
    assert [row_of_id[i] for i in range(7201, 7210)] == list(range(2381, 2390))
    assert [id_of_row[i] for i in range(7201, 7210)] == list(range(491, 500))
    assert hive == ours


def test_impala_staged_acid_file_at_the_root(hive31, vectorized, fixtures_dir):
    """An ACID-schema file copied to the table root (Impala's test staging, not a layout Hive
    writes): 3 rows, as the MANIFEST states. Hive 3.1's getAcidState classifies any file at the
    root as an original file, so Hive reads the event struct's first field (operation = 0) as
    ``i`` under synthetic ROW__IDs; acidflow follows Impala and reads the events (i = 1, 2, 3
    under their own ROW__IDs). The counts agree; the values are where the readers differ."""
    rows, hive, ours = read_both(
        hive31,
        case_dir(fixtures_dir, "impala-query-compacted-no-acid-metadata"),
        ValidWriteIdList("default.compacted", LONG_MAX),
        vectorized,
    )
    assert [(r.row_id_struct, r.values) for r in rows] == [
        ((0, V1_BUCKET_0, i), (0,)) for i in range(3)
    ]
    assert sorted(k[:2] for k in ours) == [((w, V1_BUCKET_0, 0), (w,)) for w in (1, 2, 3)]


def test_the_oracle_fails_loudly(hive31, fixtures_dir):
    """Hive's exceptions come back as Hive31Error with the Java stack, a bad request line is
    refused, the JVM keeps answering after both, and a snapshot Hive reads differently is told
    apart (the comparison can fail)."""
    path = case_dir(fixtures_dir, "trino-nation-delete-deltas")
    columns = reads.describe_path(path).columns
    with pytest.raises(Hive31Error, match="(?s)Hive 3.1.3 failed to read: .*Exception"):
        hive31.read(path, columns, "default.nation:not-a-number:1::")
    with pytest.raises(ValueError, match="newline or tab"):
        hive31.read(path, columns, ValidWriteIdList("default.nation", 4), conf={"k": "a\tb"})
    with pytest.raises(ValueError, match="unsupported column name"):
        hive31.read(path, [("n x", "int")], ValidWriteIdList("default.nation", 4))
    with pytest.raises(FileNotFoundError, match="no-such-dir"):
        hive31.read(Path(path) / "no-such-dir", columns, ValidWriteIdList("default.nation", 4))
    at3 = hive_multiset(hive31.read(path, columns, ValidWriteIdList("default.nation", 3)))
    _, at4, ours_at4 = read_both(hive31, path, ValidWriteIdList("default.nation", 4))
    assert at4 == ours_at4 and at3 != ours_at4
    assert sum((at3 - ours_at4).values()) == 1000  # nation key 19 is back at write id 3


def test_one_shot_read_and_splits(fixtures_dir):
    """read_acid: one JVM per call (start, read, quit); splits: what getSplits made."""
    path = case_dir(fixtures_dir, "trino-original-file-nation")
    columns = reads.describe_path(path).columns
    rows = read_acid(path, columns, ValidWriteIdList("default.nation", LONG_MAX))
    assert len(rows) == 24
    with Hive31Oracle(ARTIFACTS) as oracle:
        (split,) = oracle.splits(path, columns, ValidWriteIdList("default.nation", LONG_MAX))
    assert "000000_0" in split and "isOriginal=true" in split


@pytest.mark.parametrize(
    "unset,outcome",
    [
        ((), 24_000),
        (("transactional_properties",), 24_000),  # Hive 3's default flavour anyway
        (("hive.txn.operational.properties",), 24_000),  # split-update is Hive 3's only mode
        (("columns", "columns.types"), 24_000),  # the read schema is schema.evolution.*
        (("hive.txn.valid.writeids",), 23_000),  # no list: every write id is valid
        (("transactional",), 0),  # silently nothing
        (("schema.evolution.columns",), "Error 30020"),
        (("schema.evolution.columns.types",), "Error 30020"),
        (("hive.transactional.table.scan",), ("did not pick an ACID reader", "Error 30022")),
    ],
)
def test_jobconf_keys_that_matter(hive31, vectorized, fixtures_dir, unset, outcome):
    """Which of the oracle's JobConf keys Hive 3.1.3 needs, measured on the nation fixture at
    high watermark 3 (24,000 rows): what the module doc of ``tests/compat/hive31.py`` states.
    Without ``hive.transactional.table.scan`` the row path hands out a plain ORC reader (event
    structs, no ROW__ID) and the vectorized one refuses with Error 30022."""
    path = case_dir(fixtures_dir, "trino-nation-delete-deltas")
    columns = reads.describe_path(path).columns
    conf = {key: None for key in unset}
    valid = ValidWriteIdList("default.nation", 3)
    if isinstance(outcome, int):
        rows = hive31.read(path, columns, valid, conf=conf, vectorized=vectorized)
        assert len(rows) == outcome
    else:
        expected = outcome if isinstance(outcome, str) else outcome[vectorized]
        with pytest.raises(Hive31Error, match=expected):
            hive31.read(path, columns, valid, conf=conf, vectorized=vectorized)
