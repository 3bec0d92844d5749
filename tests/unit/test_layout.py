"""Unit tests for acidflow.format.layout (pure: no I/O, no Spark).

Expected values are derived by hand from Hive's rules (AcidUtils, ValidReaderWriteIdList,
ValidCompactorWriteIdList, TxnUtils.createValidCompactWriteIdList; see
docs/hive-acid-format.md §2, §6, §8, §9).  Scenarios marked "Hive TestAcidUtils"
reproduce the directory layouts and outcomes of the matching test in Hive's
ql/src/test/.../io/TestAcidUtils.java; "MANIFEST" refers to
shared/fixtures/hive-acid/MANIFEST.md.
"""

from __future__ import annotations

import pytest

from acidflow.format.layout import (
    ACID_FORMAT_VERSION,
    ACID_VERSION_FILE,
    BASE_PREFIX,
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    LONG_MAX_VALUE,
    LONG_MIN_VALUE,
    METADATA_ACID_FILE,
    AcidState,
    DirEntry,
    NotEnoughHistoryError,
    ParsedBase,
    ParsedDelta,
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidWriteIdList,
    bucket_files,
    format_base,
    format_bucket_file,
    format_delta,
    format_original_file,
    get_acid_state,
    is_hidden,
    is_hidden_path,
    parse_base,
    parse_bucket_file,
    parse_delta,
    parse_original_bucket_id,
    parse_original_file,
)

ALL, SOME, NONE = RangeResponse.ALL, RangeResponse.SOME, RangeResponse.NONE
MAX = str(LONG_MAX_VALUE)


# ----------------------------------------------------------------------------- helpers


def listing(*files: str, dirs: bool = True) -> list[DirEntry]:
    """Recursive listing of files (size 10) plus, optionally, entries for every parent dir."""
    entries = [DirEntry(f, False, 10) for f in files]
    if dirs:
        parents = {"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)}
        entries += [DirEntry(p, True) for p in sorted(parents)]
    return entries


def names(deltas) -> list[str]:
    return [d.name for d in deltas]


def committed(hwm: int, table: str = "db.t") -> ValidWriteIdList:
    return ValidWriteIdList.all_valid(table, hwm)


# ----------------------------------------------------------------------------- constants


def test_constants():
    assert ACID_VERSION_FILE == "_orc_acid_version"
    assert METADATA_ACID_FILE == "_metadata_acid"
    assert ACID_FORMAT_VERSION == 2
    assert (BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX) == ("base_", "delta_", "delete_delta_")
    assert LONG_MIN_VALUE == -9223372036854775808


# ----------------------------------------------------------------------------- formatting


def test_format_base():
    assert format_base(5) == "base_0000005"
    assert format_base(5, 12) == "base_0000005_v0000012"
    assert format_base(5, 0) == "base_0000005"  # _v0 == no suffix (addVisibilitySuffix)
    assert format_base(5, None) == "base_0000005"
    assert format_base(1234567890) == "base_1234567890"  # more digits, no truncation
    assert format_base(LONG_MIN_VALUE) == "base_-9223372036854775808"
    with pytest.raises(ValueError):
        format_base(5, -1)


def test_format_delta():
    assert format_delta(1, 1, 0) == "delta_0000001_0000001_0000"
    assert format_delta(100, 200, 0) == "delta_0000100_0000200_0000"
    assert format_delta(100, 200, 7) == "delta_0000100_0000200_0007"
    assert format_delta(100, 200) == "delta_0000100_0000200"
    assert format_delta(100, 200, -1) == "delta_0000100_0000200"  # -1 = minor compaction form
    assert format_delta(3, 7, delete=True) == "delete_delta_0000003_0000007"
    assert format_delta(1, 10, 5, delete=True) == "delete_delta_0000001_0000010_0005"
    assert format_delta(1234567880, 1234567890, 0) == "delta_1234567880_1234567890_0000"
    assert format_delta(5, 9, visibility_txn_id=123) == "delta_0000005_0000009_v0000123"
    assert (
        format_delta(5, 9, 2, visibility_txn_id=123, delete=True)
        == "delete_delta_0000005_0000009_0002_v0000123"
    )
    assert format_delta(5, 9, visibility_txn_id=0) == "delta_0000005_0000009"
    with pytest.raises(ValueError):
        format_delta(5, 4)
    with pytest.raises(ValueError):
        format_delta(1, 1, -2)


def test_format_bucket_and_original_files():
    assert format_bucket_file(0) == "bucket_00000"
    assert format_bucket_file(23) == "bucket_00023"
    assert format_bucket_file(0, 0) == "bucket_00000_0"
    assert format_bucket_file(4095, 12) == "bucket_04095_12"
    with pytest.raises(ValueError):
        format_bucket_file(-1)
    with pytest.raises(ValueError):
        format_bucket_file(0, -1)
    assert format_original_file(1) == "000001_0"
    assert format_original_file(123) == "000123_0"
    assert format_original_file(123456789) == "123456789_0"
    assert format_original_file(2, 1) == "000002_0_copy_1"


def test_format_parse_round_trip():
    for name in (
        format_base(7),
        format_base(7, 99),
        format_delta(3, 3, 0),
        format_delta(3, 8),
        format_delta(3, 8, 1, 50, delete=True),
    ):
        parsed = parse_base(name) or parse_delta(name)
        assert parsed is not None and parsed.name == name
    assert parse_delta(format_delta(3, 8, 1, 50, delete=True)) == ParsedDelta(
        "delete_delta_0000003_0000008_0001_v0000050", 3, 8, 1, 50, True
    )


# ----------------------------------------------------------------------------- parsing


def test_parse_base():
    assert parse_base("base_0000005") == ParsedBase("base_0000005", 5, 0)
    assert parse_base("base_000123") == ParsedBase("base_000123", 123, 0)
    assert parse_base("base_5") == ParsedBase("base_5", 5, 0)
    assert parse_base("base_0000005_v0000012") == ParsedBase("base_0000005_v0000012", 5, 12)
    assert parse_base("base_5_v12") == ParsedBase("base_5_v12", 5, 12)
    b = parse_base("base_-9223372036854775808")
    assert b == ParsedBase("base_-9223372036854775808", LONG_MIN_VALUE, 0)
    assert b.is_conversion_base and not parse_base("base_1").is_conversion_base


@pytest.mark.parametrize(
    "name",
    [
        "base_",
        "base_abc",
        "base_5_v",
        "base_5_vx",
        "base_5_6",
        "base_1_000",
        "base_ 5",
        "base_5 ",
        "Base_5",
        "delta_1_1",
        "base_5/bucket_00000",
        "base_99999999999999999999",
        "base",
        "_base_5",
    ],
)
def test_parse_base_rejects(name):
    assert parse_base(name) is None


def test_parse_delta():
    assert parse_delta("delta_0000001_0000001_0000") == ParsedDelta(
        "delta_0000001_0000001_0000", 1, 1, 0, 0, False
    )
    assert parse_delta("delete_delta_0000003_0000007") == ParsedDelta(
        "delete_delta_0000003_0000007", 3, 7, -1, 0, True
    )
    assert parse_delta("delta_1_2") == ParsedDelta("delta_1_2", 1, 2, -1, 0, False)  # streaming
    assert parse_delta("delta_000005_000006").min_write_id == 5
    assert parse_delta("delta_4_4_3").statement_id == 3
    assert parse_delta("delta_0000005_0000009_v0000123") == ParsedDelta(
        "delta_0000005_0000009_v0000123", 5, 9, -1, 123, False
    )
    assert parse_delta("delete_delta_0000005_0000005_0002_v0000077") == ParsedDelta(
        "delete_delta_0000005_0000005_0002_v0000077", 5, 5, 2, 77, True
    )
    assert parse_delta("delta_1234567880_1234567890_0000").max_write_id == 1234567890


@pytest.mark.parametrize(
    "name",
    [
        "delta_5",
        "delta_",
        "delta_a_b",
        "delta_1_b",
        "delta_1_2_3_4",
        "delta_1_2_x",
        "delta_1_1_v",
        "delta_1_1_vabc",
        "deltas_1_1",
        "delete_delta_",
        "delete_delta_1",
        "delta_1_1/bucket_00000",
        "delta_-1_-1",
        "delta_1__1",
        "Delta_1_1",
        "base_1",
        "delta_1_1_0000_extra",
        "delta_1_1_99999999999",
    ],
)
def test_parse_delta_rejects(name):
    assert parse_delta(name) is None


def test_parsed_delta_properties():
    assert parse_delta("delta_1_1_0000").has_statement_id
    assert not parse_delta("delta_1_1").has_statement_id
    assert parse_delta("delta_1_2").may_contain_side_file  # streaming, min != max
    assert not parse_delta("delta_1_1_0000").may_contain_side_file
    assert not parse_delta("delete_delta_1_2").may_contain_side_file
    assert not parse_delta("delta_1_2_v0000009").may_contain_side_file  # compactor output


def test_parsed_delta_order():
    # Hive's comment on ParsedDeltaLight.compareTo: delta_5_20 delta_5_10 delta_11_20 delta_51_60.
    ds = [parse_delta(n) for n in ("delta_51_60", "delta_11_20", "delta_5_10", "delta_5_20")]
    assert names(sorted(ds)) == ["delta_5_20", "delta_5_10", "delta_11_20", "delta_51_60"]
    # Same range: no statement (-1, minor compaction) first, then by statement, then by name
    # ("delete_delta_…" < "delta_…").
    ds = [
        parse_delta(n)
        for n in (
            "delta_0000004_0000004_0001",
            "delta_0000004_0000004_0000",
            "delete_delta_0000004_0000004_0000",
            "delta_0000004_0000004",
            "delete_delta_0000004_0000004",
        )
    ]
    assert names(sorted(ds)) == [
        "delete_delta_0000004_0000004",
        "delta_0000004_0000004",
        "delete_delta_0000004_0000004_0000",
        "delta_0000004_0000004_0000",
        "delta_0000004_0000004_0001",
    ]
    a, b = parse_delta("delta_1_1"), parse_delta("delta_1_1_0000")
    assert a < b and a <= b and b > a and b >= a and not b < a
    assert a.sort_key == (1, -1, -1, "delta_1_1")


def test_parse_bucket_file():
    assert parse_bucket_file("bucket_00000") == (0, None)
    assert parse_bucket_file("bucket_00023") == (23, None)
    assert parse_bucket_file("bucket_0") == (0, None)  # unpadded
    assert parse_bucket_file("bucket_00000_0") == (0, 0)  # Hive 4 direct insert attempt id
    assert parse_bucket_file("bucket_00001_3") == (1, 3)


@pytest.mark.parametrize(
    "name",
    [
        "bucket_00000_flush_length",
        "bucket_00000_0_flush_length",
        "_orc_acid_version",
        "_metadata_acid",
        "000000_0",
        "000002_0_copy_1",
        "bucket_",
        "bucket_x",
        "bucket_00000_",
        "bucket_00000.orc",
        "bucket_00000_0_1",
        "xbucket_00000",
        "delta_1_1/bucket_00000",
        "bucket_99999999999",
    ],
)
def test_parse_bucket_file_rejects(name):
    assert parse_bucket_file(name) is None


def test_parse_original_files():
    assert parse_original_bucket_id("000002_0") == 2
    assert parse_original_bucket_id("000002_0_copy_1") == 2
    assert parse_original_bucket_id("000000_0") == 0
    assert parse_original_bucket_id("000123_0") == 123
    assert parse_original_bucket_id("123456789_0") == 123456789
    assert parse_original_bucket_id("000001_1") == 1
    assert parse_original_bucket_id("00000_0") == 0  # Trino fixture name "00000_0"
    assert parse_original_file("000002_0_copy_2") == (2, 2)
    assert parse_original_file("000002_0") == (2, 0)
    for bad in (
        "bucket_00000",
        "random",
        "000000_0_copy_",
        "000000",
        "_000000_0",
        "000000_0.orc",
        "000000_0_copy_x",
        "a_0",
        "000000_0_copy_1_copy_2",
        "sub/000000_0",
    ):
        assert parse_original_bucket_id(bad) is None, bad
        assert parse_original_file(bad) is None, bad


def test_is_hidden():
    for name in (
        "_orc_acid_version",
        "_metadata_acid",
        ".hive-staging_hive_2020",
        "_tmp.delta_0000001_0000001_0000",
        "_SUCCESS",
        ".",
        "delta_1_1/_x",
    ):
        assert is_hidden(name), name
    for name in (
        "delta_0000001_0000001_0000",
        "000000_0",
        "bucket_00000",
        "base_5",
        "_x/bucket_00000",
        "HIVE_UNION_SUBDIR_1",
    ):
        assert not is_hidden(name), name
    assert is_hidden_path("_x/bucket_00000")
    assert is_hidden_path("HIVE_UNION_SUBDIR_1/.staging/000000_0")
    assert not is_hidden_path("HIVE_UNION_SUBDIR_1/000000_0")


# ----------------------------------------------------------------------------- ValidWriteIdList


@pytest.fixture
def reader() -> ValidWriteIdList:
    # HWM 10; open 4, 7; aborted 2, 5, 9.
    return ValidWriteIdList("db.t", 10, open_write_ids=[7, 4], aborted_write_ids=[9, 2, 5])


def test_write_id_list_attributes(reader):
    assert reader.table_name == "db.t"
    assert reader.high_watermark == 10
    assert reader.open_write_ids == (4, 7)
    assert reader.aborted_write_ids == (2, 5, 9)
    assert reader.invalid_write_ids == (2, 4, 5, 7, 9)
    assert reader.min_open_write_id == 4  # defaults to min(open)
    assert committed(5).min_open_write_id is None
    assert ValidWriteIdList("t", 9, [], [3]).min_open_write_id is None


def test_write_id_list_single_ids(reader):
    valid = {w for w in range(0, 13) if reader.is_write_id_valid(w)}
    assert valid == {0, 1, 3, 6, 8, 10}
    assert [w for w in range(13) if reader.is_write_id_open(w)] == [4, 7]
    assert [w for w in range(13) if reader.is_write_id_aborted(w)] == [2, 5, 9]
    # isValidBase: w < minOpen (4) and w <= HWM.
    assert reader.is_valid_base(3) and not reader.is_valid_base(4) and not reader.is_valid_base(6)
    assert committed(10).is_valid_base(10) and not committed(10).is_valid_base(11)


def test_write_id_range_valid(reader):
    assert reader.is_write_id_range_valid(1, 1) is ALL  # first exception (2) is above the range
    assert reader.is_write_id_range_valid(1, 3) is SOME  # 2 aborted
    assert reader.is_write_id_range_valid(2, 2) is NONE
    assert reader.is_write_id_range_valid(4, 5) is NONE  # open + aborted
    assert reader.is_write_id_range_valid(8, 8) is ALL
    assert reader.is_write_id_range_valid(10, 12) is SOME  # 11, 12 above HWM
    assert reader.is_write_id_range_valid(11, 12) is NONE  # min > HWM
    assert reader.is_write_id_range_valid(1, 10) is SOME
    c = committed(5)
    assert c.is_write_id_range_valid(1, 5) is ALL
    assert c.is_write_id_range_valid(3, 7) is SOME
    assert c.is_write_id_range_valid(6, 6) is NONE
    # Hive's shortcut: the smallest exception above max means ALL, checked before ids above
    # the HWM are counted (only visible with an exception above the HWM, which the
    # metastore never hands out).
    assert ValidWriteIdList("t", 10, [5]).is_write_id_range_valid(1, 4) is ALL
    assert ValidWriteIdList("t", 3, [10]).is_write_id_range_valid(1, 5) is ALL
    assert ValidWriteIdList("t", 3, [4]).is_write_id_range_valid(1, 5) is SOME
    with pytest.raises(ValueError):
        c.is_write_id_range_valid(3, 2)


def test_write_id_range_aborted(reader):
    assert reader.is_write_id_range_aborted(2, 2) is ALL
    assert reader.is_write_id_range_aborted(9, 9) is ALL
    assert reader.is_write_id_range_aborted(4, 5) is SOME  # 4 is open, not aborted
    assert reader.is_write_id_range_aborted(2, 5) is SOME
    assert reader.is_write_id_range_aborted(4, 4) is NONE
    assert reader.is_write_id_range_aborted(1, 1) is NONE
    assert reader.is_write_id_range_aborted(11, 11) is NONE  # min > HWM
    assert ValidWriteIdList("t", 9, [], [3, 4]).is_write_id_range_aborted(3, 4) is ALL
    with pytest.raises(ValueError):
        reader.is_write_id_range_aborted(5, 4)


def test_write_id_list_to_string(reader):
    assert reader.to_string() == "db.t:10:4:4,7:2,5,9"
    assert str(reader) == reader.to_string()
    assert committed(5).to_string() == f"db.t:5:{MAX}::"
    assert ValidWriteIdList(None, 5).to_string() == f"null:5:{MAX}::"
    assert ValidWriteIdList("t", 9, [], [3]).to_string() == f"t:9:{MAX}::3"
    assert ValidWriteIdList("t", 9, [3]).to_string() == "t:9:3:3:"


@pytest.mark.parametrize(
    "text, hwm, open_ids, aborted, min_open, table",
    [
        # Forms used by Hive's own tests (Java split drops trailing empty fields).
        (f"tbl:100:{MAX}:", 100, (), (), None, "tbl"),
        (f"tbl:4:{MAX}", 4, (), (), None, "tbl"),
        ("tbl:100:4:4", 100, (4,), (), 4, "tbl"),
        ("default.acid_t:12:3:3,8:5,6", 12, (3, 8), (5, 6), 3, "default.acid_t"),
        (f"db.t:12:{MAX}::5,6", 12, (), (5, 6), None, "db.t"),
        (f"NULL:7:{MAX}::", 7, (), (), None, None),
    ],
)
def test_write_id_list_from_hive_string(text, hwm, open_ids, aborted, min_open, table):
    v = ValidWriteIdList.from_string(text)
    assert (
        v.table_name,
        v.high_watermark,
        v.open_write_ids,
        v.aborted_write_ids,
        v.min_open_write_id,
    ) == (table, hwm, open_ids, aborted, min_open)
    assert ValidWriteIdList.from_string(v.to_string()) == v


def test_write_id_list_string_round_trip(reader):
    assert ValidWriteIdList.from_string(reader.to_string()) == reader
    # Hive's writeToString always emits both list fields.
    assert ValidWriteIdList.from_string("tbl:100:4:4").to_string() == "tbl:100:4:4:"
    everything = ValidWriteIdList.from_string("")
    assert everything.high_watermark == LONG_MAX_VALUE and everything.table_name is None
    assert everything.is_write_id_valid(123456) and not everything.invalid_write_ids
    assert ValidWriteIdList.from_string(None) == everything


@pytest.mark.parametrize("bad", ["a:b", "t:x:1::", "t:1:2:3:4:5", "t:1", "t:5:9::x", "t:5: 9::"])
def test_write_id_list_from_string_rejects(bad):
    with pytest.raises(ValueError):
        ValidWriteIdList.from_string(bad)


def test_write_id_list_misc():
    with pytest.raises(ValueError):
        ValidWriteIdList("t", 10, [3], [3])
    a = ValidWriteIdList("t", 10, [4, 3], [2])
    assert a == ValidWriteIdList("t", 10, (3, 4), (2,)) and hash(a) == hash(
        ValidWriteIdList("t", 10, (3, 4), (2,))
    )
    assert a != ValidWriteIdList("t", 11, (3, 4), (2,))
    assert a.update_high_watermark(20).high_watermark == 20
    assert a.update_high_watermark(20).invalid_write_ids == (2, 3, 4)
    assert "t:10:3:3,4:2" in repr(a)
    assert ValidWriteIdList.all_valid("t", 3) == ValidWriteIdList("t", 3)


# ----------------------------------------------------------------------------- compactor list


def test_for_compactor(reader):
    c = reader.for_compactor()
    assert isinstance(c, ValidCompactorWriteIdList)
    # HWM = min open (4) - 1; only aborted ids <= HWM survive; min open kept (aborted existed).
    assert c.high_watermark == 3
    assert c.aborted_write_ids == (2,) and c.open_write_ids == ()
    assert c.min_open_write_id == 4
    assert c.to_string() == "db.t:3:4::2"
    # Range validity ignores exceptions and only looks at the HWM.
    assert c.is_write_id_range_valid(1, 3) is ALL
    assert c.is_write_id_range_valid(2, 2) is ALL
    assert c.is_write_id_range_valid(1, 4) is NONE
    assert c.is_write_id_range_valid(4, 4) is NONE
    assert not c.is_write_id_valid(2) and c.is_write_id_valid(3) and not c.is_write_id_valid(4)
    assert c.is_write_id_aborted(2) and not c.is_write_id_aborted(5)
    assert c.for_compactor() is c


def test_for_compactor_variants():
    # Nothing open: HWM unchanged, all aborted kept, no min open.
    c = ValidWriteIdList("t", 10, [], [2, 5]).for_compactor()
    assert c.to_string() == f"t:10:{MAX}::2,5"
    # Open but nothing aborted: HWM = min open - 1, min open not carried (no exceptions).
    c = ValidWriteIdList("t", 10, [4, 7]).for_compactor()
    assert c.to_string() == f"t:3:{MAX}::"
    assert committed(6).for_compactor().to_string() == f"db.t:6:{MAX}::"


def test_compactor_list_from_string_and_trim():
    # Hive TestAcidUtils.deltasWithOpenTxnsNotInCompact uses "tbl:4:<MAX>".
    c = ValidCompactorWriteIdList.from_string(f"tbl:4:{MAX}")
    assert isinstance(c, ValidCompactorWriteIdList)
    assert c.is_write_id_range_valid(1, 1) is ALL
    assert c.is_write_id_range_valid(2, 5) is NONE
    # Constructor drops exceptions above the HWM; every exception counts as aborted.
    c = ValidCompactorWriteIdList("t", 5, (), (2, 6, 8))
    assert c.aborted_write_ids == (2,)
    c2 = ValidCompactorWriteIdList.from_string("t:5:9223372036854775807:3:")
    assert c2.is_write_id_aborted(3)
    assert c2.update_high_watermark(2).invalid_write_ids == ()


# ----------------------------------------------------------------------------- getAcidState


def test_base_and_deltas_hive_testBaseDeltas():
    # Hive TestAcidUtils.testBaseDeltas: HWM 100, nothing open.
    entries = listing(
        "base_5/bucket_0",
        "base_10/bucket_0",
        "base_49/bucket_0",
        "delta_025_025/bucket_0",
        "delta_029_029/bucket_0",
        "delta_025_030/bucket_0",
        "delta_050_105/bucket_0",
        "delta_90_120/bucket_0",
    )
    for compacted in (False, True):  # IOW base (write id valid) or compacted (valid base)
        st = get_acid_state(
            entries,
            ValidWriteIdList.from_string(f"tbl:100:{MAX}:"),
            is_compacted_base=lambda n, c=compacted: c,
        )
        assert st.base == ParsedBase("base_49", 49)
        assert st.base_dir == "base_49"
        assert names(st.deltas) == ["delta_050_105"]  # SOME: 101..105 above HWM
        assert st.obsolete == sorted(
            ["base_5", "base_10", "delta_025_030", "delta_025_025", "delta_029_029"]
        )
        # delta_90_120 reaches past the covered range but 106..120 are all > HWM: skipped,
        # neither current nor obsolete.
        assert "delta_90_120" not in st.obsolete
        assert st.original_files == [] and st.aborted == []


def test_base_with_delete_deltas_hive_testBaseWithDeleteDeltas():
    entries = listing(
        "base_5/bucket_0",
        "base_10/bucket_0",
        "base_49/bucket_0",
        "delta_025_025/bucket_0",
        "delta_029_029/bucket_0",
        "delete_delta_029_029/bucket_0",
        "delta_025_030/bucket_0",
        "delete_delta_025_030/bucket_0",
        "delta_050_105/bucket_0",
        "delete_delta_050_105/bucket_0",
        "delete_delta_110_110/bucket_0",
    )
    st = get_acid_state(entries, committed(100, "tbl"))
    assert st.base_dir == "base_49"
    assert names(st.deltas) == ["delete_delta_050_105", "delta_050_105"]
    assert names(st.insert_deltas) == ["delta_050_105"]
    assert names(st.delete_deltas) == ["delete_delta_050_105"]
    assert st.current_dirs == ["base_49", "delete_delta_050_105", "delta_050_105"]
    assert st.obsolete == sorted(
        [
            "base_5",
            "base_10",
            "delete_delta_025_030",
            "delta_025_030",
            "delta_025_025",
            "delete_delta_029_029",
            "delta_029_029",
        ]
    )


def test_overlapping_deltas_hive_testOverlapingDeltaAndDeleteDelta():
    entries = listing(
        "delta_0000063_63/bucket_0",
        "delta_000062_62/bucket_0",
        "delta_00061_61/bucket_0",
        "delete_delta_00064_64/bucket_0",
        "delta_40_60/bucket_0",
        "delete_delta_40_60/bucket_0",
        "delta_0060_60/bucket_0",
        "delta_052_55/bucket_0",
        "delete_delta_052_55/bucket_0",
        "base_50/bucket_0",
    )
    st = get_acid_state(entries, committed(100, "tbl"))
    assert st.base_dir == "base_50"
    assert names(st.deltas) == [
        "delete_delta_40_60",
        "delta_40_60",
        "delta_00061_61",
        "delta_000062_62",
        "delta_0000063_63",
        "delete_delta_00064_64",
    ]
    assert st.obsolete == ["delete_delta_052_55", "delta_0060_60", "delta_052_55"]


def test_minor_compacted_delta_hides_inner_delete_delta():
    # Hive TestAcidUtils.testMinorCompactedDeltaMakesInBetweenDelteDeltaObsolete.
    st = get_acid_state(
        listing("delta_40_60/bucket_0", "delete_delta_50_50/bucket_0"), committed(100)
    )
    assert names(st.deltas) == ["delta_40_60"]
    assert st.obsolete == ["delete_delta_50_50"]


def test_iow_base_vs_compacted_base_with_open_id_below():
    entries = listing(
        "base_0000005/bucket_00000",
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000003_0000003_0000/bucket_00000",
        "delta_0000006_0000006_0000/bucket_00000",
    )
    snap = ValidWriteIdList("db.t", 6, open_write_ids=[3])
    # INSERT OVERWRITE base: usable as soon as its own write id (5) is committed.
    st = get_acid_state(entries, snap, is_compacted_base=lambda n: False)
    assert st.base_dir == "base_0000005"
    assert names(st.deltas) == ["delta_0000006_0000006_0000"]
    assert st.obsolete == ["delta_0000001_0000001_0000"]  # delta_3_3 (open) is just ignored
    # Compacted base (_metadata_acid): 3 is open below 5, so it lacks history.
    with pytest.raises(NotEnoughHistoryError) as err:
        get_acid_state(entries, snap, is_compacted_base=lambda n: n == "base_0000005")
    assert str(err.value) == (
        "Not enough history available for (6,3).  Oldest available base: base_0000005"
    )
    assert (err.value.high_watermark, err.value.min_open, err.value.oldest_base) == (
        6,
        "3",
        "base_0000005",
    )
    # Once the open id is above the base, the compacted base is fine.
    st = get_acid_state(entries, ValidWriteIdList("db.t", 8, [7]), is_compacted_base=lambda n: True)
    assert st.base_dir == "base_0000005"
    assert names(st.deltas) == ["delta_0000006_0000006_0000"]


def test_visibility_suffix_marks_base_compacted():
    entries = listing(
        "base_0000005_v0000020/bucket_00000", "delta_0000006_0000006_0000/bucket_00000"
    )
    with pytest.raises(NotEnoughHistoryError, match=r"\(6,3\).*base_0000005_v0000020"):
        get_acid_state(entries, ValidWriteIdList("db.t", 6, [3]))
    # The _metadata_acid callback is irrelevant for a _v base.
    with pytest.raises(NotEnoughHistoryError):
        get_acid_state(entries, ValidWriteIdList("db.t", 6, [3]), is_compacted_base=lambda n: False)


def test_not_enough_history_needs_compacted_oldest_base():
    entries = listing(
        "base_0000002/bucket_00000",
        "base_0000005/bucket_00000",
        "delta_0000001_0000001_0000/bucket_00000",
    )
    comp = {"base_0000005"}
    # Oldest base (2, INSERT OVERWRITE) has an open write id: skipped, no error, no base.
    st = get_acid_state(entries, ValidWriteIdList("t", 6, [2]), is_compacted_base=comp.__contains__)
    assert st.base is None
    assert names(st.deltas) == ["delta_0000001_0000001_0000"]
    # Both compacted and unusable: the error names the oldest one; minOpen is the first
    # exception, "x" when there is none.
    with pytest.raises(NotEnoughHistoryError, match="Oldest available base: base_0000002$"):
        get_acid_state(entries, ValidWriteIdList("t", 6, [1]), is_compacted_base=lambda n: True)
    with pytest.raises(NotEnoughHistoryError, match=r"for \(1,x\)"):
        get_acid_state(entries, committed(1, "t"), is_compacted_base=lambda n: True)


def test_conversion_base_is_always_usable():
    entries = listing(
        "base_-9223372036854775808/bucket_00000",
        "000000_0",
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000002_0000002_0000/bucket_00000",
    )
    st = get_acid_state(entries, ValidWriteIdList("t", 2, [1]), is_compacted_base=lambda n: True)
    assert st.base.write_id == LONG_MIN_VALUE
    assert names(st.deltas) == ["delta_0000002_0000002_0000"]
    assert st.original_files == [] and st.obsolete == ["000000_0"]


def test_trino_delete_deltas_only_manifest_case():
    # MANIFEST case 4: the minor-compacted name sorts first, its statement twin is obsolete.
    entries = listing(
        "delete_delta_0000004_0000004_0000/bucket_00000",
        "delete_delta_0000004_0000004/bucket_00000",
        "delete_delta_0000007_0000007_0000/bucket_00000",
    )
    st = get_acid_state(entries, committed(7))
    assert names(st.deltas) == ["delete_delta_0000004_0000004", "delete_delta_0000007_0000007_0000"]
    assert st.obsolete == ["delete_delta_0000004_0000004_0000"]
    assert st.base is None and st.original_files == [] and st.aborted == []


def test_minor_compacted_twins_supersede_statement_dirs():
    entries = listing(
        "delta_0000004_0000004/bucket_00000",
        "delete_delta_0000004_0000004/bucket_00000",
        "delta_0000004_0000004_0000/bucket_00000",
        "delete_delta_0000004_0000004_0000/bucket_00000",
        "delta_0000004_0000004_0001/bucket_00000",
    )
    st = get_acid_state(entries, committed(4))
    assert names(st.deltas) == ["delete_delta_0000004_0000004", "delta_0000004_0000004"]
    assert st.obsolete == [
        "delete_delta_0000004_0000004_0000",
        "delta_0000004_0000004_0000",
        "delta_0000004_0000004_0001",
    ]


def test_multiple_statements_of_one_txn():
    entries = listing(
        "delta_0000003_0000003_0000/bucket_00000",
        "delta_0000005_0000005_0000/bucket_00000",
        "delta_0000005_0000005_0001/bucket_00000",
        "delete_delta_0000005_0000005_0001/bucket_00000",
        "delta_0000005_0000005_0003/bucket_00000",
    )
    st = get_acid_state(entries, committed(5))
    assert names(st.deltas) == [
        "delta_0000003_0000003_0000",
        "delta_0000005_0000005_0000",
        "delete_delta_0000005_0000005_0001",
        "delta_0000005_0000005_0001",
        "delta_0000005_0000005_0003",
    ]
    assert st.obsolete == []


def test_statements_hive_testOverlapingDelta2():
    entries = listing(
        "delta_0000063_63_0/bucket_0",
        "delta_000062_62_0/bucket_0",
        "delta_000062_62_3/bucket_0",
        "delta_00061_61_0/bucket_0",
        "delta_40_60/bucket_0",
        "delta_0060_60_1/bucket_0",
        "delta_0060_60_4/bucket_0",
        "delta_0060_60_7/bucket_0",
        "delta_052_55/bucket_0",
        "delta_058_58/bucket_0",
        "base_50/bucket_0",
    )
    st = get_acid_state(entries, committed(100, "tbl"))
    assert st.base_dir == "base_50"
    assert names(st.deltas) == [
        "delta_40_60",
        "delta_00061_61_0",
        "delta_000062_62_0",
        "delta_000062_62_3",
        "delta_0000063_63_0",
    ]
    assert st.obsolete == sorted(
        ["delta_052_55", "delta_058_58", "delta_0060_60_1", "delta_0060_60_4", "delta_0060_60_7"]
    )


def test_aborted_ranges():
    entries = listing(
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000003_0000003_0000/bucket_00000",
        "delete_delta_0000003_0000003_0000/bucket_00000",
        "delta_0000004_0000005/bucket_00000",  # streaming: 4 aborted, 5 committed
        "delta_0000006_0000007/bucket_00000",  # streaming: all aborted
        "delta_0000008_0000008_0000/bucket_00000",
    )
    snap = ValidWriteIdList("t", 8, aborted_write_ids=[3, 4, 6, 7])
    st = get_acid_state(entries, snap)
    assert st.aborted == [
        "delete_delta_0000003_0000003_0000",
        "delta_0000003_0000003_0000",
        "delta_0000006_0000007",
    ]
    assert names(st.deltas) == [
        "delta_0000001_0000001_0000",
        "delta_0000004_0000005",
        "delta_0000008_0000008_0000",
    ]
    assert st.obsolete == []


def test_aborted_insert_overwrite_base():
    entries = listing("base_0000005/bucket_00000", "delta_0000001_0000001_0000/bucket_00000")
    snap = ValidWriteIdList("t", 5, aborted_write_ids=[5])
    st = get_acid_state(entries, snap)
    assert st.base is None and st.aborted == ["base_0000005"]
    assert names(st.deltas) == ["delta_0000001_0000001_0000"]
    # A compacted base is never "aborted": the compactor already dropped aborted data.
    st = get_acid_state(entries, snap, is_compacted_base=lambda n: True)
    assert st.base_dir == "base_0000005" and st.aborted == []


def test_open_write_id_in_the_middle():
    entries = listing(*[f"delta_000000{i}_000000{i}_0000/bucket_00000" for i in range(1, 6)])
    st = get_acid_state(entries, ValidWriteIdList("t", 5, [3]))
    # delta_3_3 is open: neither current, obsolete nor aborted; later deltas still kept.
    assert [d.min_write_id for d in st.deltas] == [1, 2, 4, 5]
    assert st.obsolete == [] and st.aborted == []


def test_range_spanning_delta_with_open_id():
    entries = listing(
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000001_0000005/bucket_00000",
        "delta_0000005_0000005_0000/bucket_00000",
    )
    snap = ValidWriteIdList("t", 5, [3])
    assert snap.is_write_id_range_valid(1, 5) is SOME
    st = get_acid_state(entries, snap)
    assert names(st.deltas) == ["delta_0000001_0000005"]
    assert st.obsolete == ["delta_0000001_0000001_0000", "delta_0000005_0000005_0000"]


def test_delete_deltas_with_open_txn_hive_deleteDeltasWithOpenTxnInRead():
    entries = listing(
        "delta_1_1/bucket_0",
        "delta_2_5/bucket_0",
        "delete_delta_2_5/bucket_0",
        "delete_delta_3_3/bucket_0",
        "delta_4_4_1/bucket_0",
        "delta_4_4_3/bucket_0",
        "delta_101_101_1/bucket_0",
    )
    st = get_acid_state(entries, ValidWriteIdList.from_string("tbl:100:4:4"))
    assert names(st.deltas) == ["delta_1_1", "delete_delta_2_5", "delta_2_5"]
    assert st.obsolete == ["delete_delta_3_3"]


def test_compactor_snapshot_hive_deltasAndDeleteDeltasWithOpenTxnsNotInCompact():
    entries = listing(
        "delta_1_1/bucket_0",
        "delete_delta_2_2/bucket_0",
        "delta_2_5/bucket_0",
        "delete_delta_2_5/bucket_0",
        "delta_2_5/bucket_0_flush_length",
        "delete_delta_7_7/bucket_0",
        "delta_6_10/bucket_0",
    )
    st = get_acid_state(entries, ValidCompactorWriteIdList.from_string(f"tbl:4:{MAX}:"))
    assert names(st.deltas) == ["delta_1_1", "delete_delta_2_2"]


def test_compactor_snapshot_from_reader():
    entries = listing(
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000002_0000002_0000/bucket_00000",
        "delta_0000003_0000003_0000/bucket_00000",
        "delta_0000004_0000004_0000/bucket_00000",
    )
    compactor = ValidWriteIdList("t", 4, open_write_ids=[3], aborted_write_ids=[2]).for_compactor()
    st = get_acid_state(entries, compactor)
    # HWM 2: aborted 2 is reported as aborted, nothing from 3 on is touched.
    assert names(st.deltas) == ["delta_0000001_0000001_0000"]
    assert st.aborted == ["delta_0000002_0000002_0000"]


def test_originals_hive_testOriginal():
    entries = listing(
        "000000_0",
        "000000_0_copy_1",
        "000000_0_copy_2",
        "000001_1",
        "000002_0",
        "random",
        "_done",
        "subdir/000000_0",
    )
    st = get_acid_state(entries, ValidWriteIdList.from_string(f"tbl:100:{MAX}:"))
    assert st.base is None and st.deltas == [] and st.obsolete == []
    assert st.original_files == [
        "000000_0",
        "000000_0_copy_1",
        "000000_0_copy_2",
        "000001_1",
        "000002_0",
        "random",
        "subdir/000000_0",
    ]


def test_originals_with_deltas_hive_testOriginalDeltas():
    entries = listing(
        "000000_0",
        "000001_1",
        "000002_0",
        "random",
        "_done",
        "subdir/000000_0",
        "delta_025_025/bucket_0",
        "delta_029_029/bucket_0",
        "delta_025_030/bucket_0",
        "delta_050_100/bucket_0",
        "delta_101_101/bucket_0",
    )
    st = get_acid_state(entries, committed(100, "tbl"))
    assert st.base is None
    assert st.obsolete == ["delta_025_025", "delta_029_029"]
    assert st.original_files == ["000000_0", "000001_1", "000002_0", "random", "subdir/000000_0"]
    assert names(st.deltas) == ["delta_025_030", "delta_050_100"]


def test_originals_nested_and_copies_sorted_by_path():
    # MANIFEST case 2 plus union subdirs and hidden junk.
    entries = listing(
        "000002_0_copy_2",
        "000001_0",
        "HIVE_UNION_SUBDIR_2/000000_0",
        "000002_0",
        "000002_0_copy_1",
        "HIVE_UNION_SUBDIR_1/000000_0",
        "HIVE_UNION_SUBDIR_1/nested/000001_0",
        "HIVE_UNION_SUBDIR_1/_SUCCESS",
        "HIVE_UNION_SUBDIR_1/.staging/000000_0",
        ".hive-staging_1/000000_0",
        "_tmp_dir/000000_0",
        "000000_0",
        "delete_delta_10000001_10000001_0000/bucket_00000",
    )
    st = get_acid_state(entries, committed(10000001))
    assert st.original_files == [
        "000000_0",
        "000001_0",
        "000002_0",
        "000002_0_copy_1",
        "000002_0_copy_2",
        "HIVE_UNION_SUBDIR_1/000000_0",
        "HIVE_UNION_SUBDIR_1/nested/000001_0",
        "HIVE_UNION_SUBDIR_2/000000_0",
    ]
    assert names(st.deltas) == ["delete_delta_10000001_10000001_0000"]
    # Listing without directory entries (object store) gives the same answer.
    st2 = get_acid_state([e for e in entries if not e.is_dir], committed(10000001))
    assert st2 == st


def test_base_makes_originals_obsolete_hive_testObsoleteOriginals():
    entries = listing(
        "base_10/bucket_0",
        "base_5/bucket_0",
        "000000_0",
        "000001_1",
        "HIVE_UNION_SUBDIR_1/000000_0",
    )
    st = get_acid_state(entries, committed(150, "tbl"))
    assert st.base_dir == "base_10"
    assert st.original_files == []
    assert st.obsolete == ["000000_0", "000001_1", "HIVE_UNION_SUBDIR_1", "base_5"]


def test_ignore_empty_files():
    entries = [
        DirEntry("000000_0", False, 0),
        DirEntry("000001_0", False, 5),
        DirEntry("sub/000002_0", False, 0),
        DirEntry("sub/000003_0", False, 7),
    ]
    assert get_acid_state(entries, committed(1)).original_files == [
        "000000_0",
        "000001_0",
        "sub/000002_0",
        "sub/000003_0",
    ]
    assert get_acid_state(entries, committed(1), ignore_empty_files=True).original_files == [
        "000001_0",
        "sub/000003_0",
    ]


def test_visibility_dirs_with_txn_state():
    entries = listing(
        "base_0000005_v0000020/bucket_00000",
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000006_0000006_0000/bucket_00000",
        "delta_0000001_0000006_v0000030/bucket_00000",
    )
    snap = committed(6)

    def states(**by_txn):
        return lambda t: by_txn[f"t{t}"]

    # Compactor txn 20 committed, minor compaction txn 30 still open: ignore delta_1_6_v30.
    st = get_acid_state(entries, snap, txn_state=states(t20="committed", t30="open"))
    assert st.base_dir == "base_0000005_v0000020"
    assert names(st.deltas) == ["delta_0000006_0000006_0000"]
    assert st.obsolete == ["delta_0000001_0000001_0000"] and st.aborted == []
    # Both compactions aborted: their dirs go to `aborted`, the deltas are read.
    st = get_acid_state(entries, snap, txn_state=states(t20="aborted", t30="aborted"))
    assert st.base is None
    assert names(st.deltas) == ["delta_0000001_0000001_0000", "delta_0000006_0000006_0000"]
    assert st.aborted == ["base_0000005_v0000020", "delta_0000001_0000006_v0000030"]
    # Open compaction: invisible, not aborted, and not counted as oldest base (no error).
    st = get_acid_state(entries, snap, txn_state=states(t20="open", t30="open"))
    assert st.base is None and st.aborted == []
    # No txn_state (Trino): everything committed; the wider minor-compacted delta wins.
    st = get_acid_state(entries, snap)
    assert st.base_dir == "base_0000005_v0000020"
    assert names(st.deltas) == ["delta_0000001_0000006_v0000030"]
    assert st.obsolete == ["delta_0000001_0000001_0000", "delta_0000006_0000006_0000"]
    with pytest.raises(ValueError):
        get_acid_state(entries, snap, txn_state=lambda t: "COMMITTED")


def test_compacted_base_beats_iow_base_with_same_write_id():
    entries = listing("base_0000005/bucket_00000", "base_0000005_v0000020/bucket_00000")
    st = get_acid_state(entries, committed(5), txn_state=lambda t: "committed")
    assert st.base_dir == "base_0000005_v0000020" and st.obsolete == ["base_0000005"]
    st = get_acid_state(entries, committed(5), txn_state=lambda t: "open")
    assert st.base_dir == "base_0000005" and st.obsolete == []


def test_streaming_delta():
    entries = listing("delta_1_2/bucket_00000", "delta_1_2/bucket_00000_flush_length")
    assert names(get_acid_state(entries, committed(2)).deltas) == ["delta_1_2"]
    assert names(get_acid_state(entries, committed(1)).deltas) == ["delta_1_2"]  # SOME
    assert get_acid_state(entries, committed(0)).deltas == []  # NONE
    assert bucket_files(entries, "delta_1_2") == [("delta_1_2/bucket_00000", 0)]


def test_nation_manifest_case_with_lower_hwm():
    # MANIFEST case 1 with write id 4 not yet committed (HWM 3).
    entries = listing(
        "delta_0000002_0000002_0000/bucket_00000",
        "delete_delta_0000003_0000003_0000/bucket_00000",
        "delete_delta_0000004_0000004_0000/bucket_00000",
    )
    st = get_acid_state(entries, committed(3))
    assert names(st.deltas) == ["delta_0000002_0000002_0000", "delete_delta_0000003_0000003_0000"]
    st = get_acid_state(entries, committed(4))
    assert names(st.delete_deltas) == [
        "delete_delta_0000003_0000003_0000",
        "delete_delta_0000004_0000004_0000",
    ]


def test_hidden_and_marker_files_are_ignored():
    entries = listing(
        "_tmp.delta_0000009_0000009_0000/bucket_00000",
        ".hive-staging_hive_1/-ext-10000/000000_0",
        "delta_0000001_0000001_0000/_orc_acid_version",
        "delta_0000001_0000001_0000/bucket_00000",
        "base_0000001/_metadata_acid",
        "base_0000001/_orc_acid_version",
        "base_0000001/bucket_00000",
    )
    st = get_acid_state(entries, committed(1))
    assert st.base_dir == "base_0000001"
    assert st.obsolete == ["delta_0000001_0000001_0000"]
    assert st.original_files == [] and st.aborted == []


def test_top_level_files_are_originals_whatever_their_name():
    # Hive getChildState: any plain file in the partition dir is an original file.
    st = get_acid_state(
        [DirEntry("delta_1_1", False, 3), DirEntry("bucket_00000", False, 3)], committed(1)
    )
    assert st.original_files == ["bucket_00000", "delta_1_1"] and st.deltas == []


@pytest.mark.parametrize(
    "entries",
    [
        [DirEntry("base_abc/bucket_00000", False, 1)],
        [DirEntry("delta_x", True)],
        [DirEntry("delete_delta_1/bucket_00000", False, 1)],
        [DirEntry("/abs/000000_0", False, 1)],
        [DirEntry("a//b", False, 1)],
    ],
)
def test_get_acid_state_rejects_bad_input(entries):
    with pytest.raises(ValueError):
        get_acid_state(entries, committed(1))


def test_empty_listing_and_partition_dir_entry():
    st = get_acid_state([DirEntry("", True)], committed(5))
    assert st == AcidState(base=None, deltas=[], original_files=[], obsolete=[], aborted=[])


# ----------------------------------------------------------------------------- bucket_files


def test_bucket_files():
    entries = [
        DirEntry("delta_0000001_0000001_0000", True),
        DirEntry("delta_0000001_0000001_0000/bucket_00002", False, 1),
        DirEntry("delta_0000001_0000001_0000/bucket_00000_1", False, 1),
        DirEntry("delta_0000001_0000001_0000/bucket_00000", False, 1),
        DirEntry("delta_0000001_0000001_0000/bucket_00000_0", False, 1),
        DirEntry("delta_0000001_0000001_0000/bucket_00010", False, 1),
        DirEntry("delta_0000001_0000001_0000/bucket_00001_flush_length", False, 8),
        DirEntry("delta_0000001_0000001_0000/_orc_acid_version", False, 1),
        DirEntry("delta_0000001_0000001_0000/000000_0", False, 1),
        DirEntry("delta_0000001_0000001_0000/sub/bucket_00003", False, 1),
        DirEntry("delta_0000001_0000001_0000/bucket_00004", True),
        DirEntry("delta_0000001_0000001_00001/bucket_00005", False, 1),
    ]
    d = "delta_0000001_0000001_0000"
    assert bucket_files(entries, d) == [
        (f"{d}/bucket_00000", 0),
        (f"{d}/bucket_00000_0", 0),
        (f"{d}/bucket_00000_1", 0),
        (f"{d}/bucket_00002", 2),
        (f"{d}/bucket_00010", 10),
    ]
    assert bucket_files(entries, "base_0000001") == []
