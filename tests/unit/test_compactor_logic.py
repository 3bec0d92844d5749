"""Pure compactor logic: the initiator's thresholds, overrides and skips, history rules, the
compaction plan (names, inputs, nothing-to-do), the cleaner's capped list and fsck checks."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from acidflow.catalog.records import CompactionInfo
from acidflow.compactor.cleaner import capped_list
from acidflow.compactor.config import CompactorConfig, no_auto_compaction
from acidflow.compactor.fsck import check_layout, duplicate_row_ids
from acidflow.compactor.initiator import (
    PartitionStats,
    decide,
    determine_compaction_type,
    failed_too_often,
)
from acidflow.compactor.unqueued import eligible_since
from acidflow.format.layout import DirEntry, ValidWriteIdList, get_acid_state
from acidflow.format.names import parse_delta
from acidflow.maintenance.compaction import plan_compaction
from acidflow.maintenance.slices import plan_slices

CFG = CompactorConfig()


def kind(**kw):
    return determine_compaction_type(PartitionStats(**kw), CFG)[0]


# ---------------------------------------------------------------- thresholds


def test_delta_pct_threshold_triggers_major_only_above_ratio():
    assert kind(base_bytes=1000, delta_bytes=101, delta_count=1) == "major"
    assert kind(base_bytes=1000, delta_bytes=100, delta_count=1) is None  # == 0.1 is not >
    assert kind(base_bytes=1000, delta_bytes=50, delta_count=1) is None


def test_delta_num_threshold_minor_with_base_major_without():
    assert kind(base_bytes=10**9, delta_bytes=11, delta_count=11) == "minor"
    assert kind(base_bytes=10**9, delta_bytes=10, delta_count=10) is None  # == 10 is not >
    assert kind(base_bytes=0, delta_bytes=11, delta_count=11) == "major"
    assert kind(base_bytes=0, delta_bytes=10, delta_count=10) is None


def test_aborted_threshold_short_circuits_to_major():
    assert kind(base_bytes=10**9, delta_bytes=1, delta_count=1, aborted_count=1001) == "major"
    assert kind(base_bytes=10**9, delta_bytes=1, delta_count=1, aborted_count=1000) is None


def test_no_deltas_means_nothing():
    t, reason = determine_compaction_type(PartitionStats(base_bytes=5), CFG)
    assert t is None and reason == "no deltas"


def test_table_overrides_use_hive_prefix():
    props = {
        "compactorthreshold.hive.compactor.delta.num.threshold": "2",
        "compactorthreshold.hive.compactor.delta.pct.threshold": "0.9",
        "hive.compactor.delta.num.threshold": "1",
    }  # bare key on a table: ignored
    stats = PartitionStats(base_bytes=100, delta_bytes=50, delta_count=3)
    d = decide("db.t", None, props, active=False, history_states=[], stats=stats, config=CFG)
    assert d.action == "minor" and "threshold 2" in d.reason
    d = decide("db.t", None, {}, active=False, history_states=[], stats=stats, config=CFG)
    assert d.action == "major"  # 0.5 > 0.1 without override


def test_max_num_delta_default_table_override_and_env():
    assert CFG.max_num_delta == 500  # Hive's default
    props = {"compactorthreshold.hive.compactor.max.num.delta": "3"}
    assert CFG.with_properties(props, table=True).max_num_delta == 3
    assert (
        CFG.with_properties({"hive.compactor.max.num.delta": "3"}, table=True).max_num_delta == 500
    )
    env = {"ACIDFLOW_HIVE_COMPACTOR_MAX_NUM_DELTA": "7"}
    assert CompactorConfig.from_env(env).max_num_delta == 7


def _deltas(*names: str):
    return [parse_delta(n) for n in names]


def test_plan_slices_follows_hive_and_keeps_a_write_id_range_whole():
    five = _deltas(*(f"delta_{i}_{i}" for i in range(1, 6)))
    assert plan_slices(five, 5) == []  # not more than the limit: one go
    assert plan_slices(five, 2) == [["delta_1_1", "delta_2_2"], ["delta_3_3", "delta_4_4"]]
    assert plan_slices(five, 1) == plan_slices(five, 2)  # a slice needs two deltas
    # the insert and delete delta of write id 3 never go to different slices
    mixed = _deltas(
        "delta_1_1", "delta_2_2", "delete_delta_3_3", "delta_3_3", "delta_4_4", "delta_5_5"
    )
    assert plan_slices(mixed, 3) == [
        ["delta_1_1", "delta_2_2"],
        ["delete_delta_3_3", "delta_3_3", "delta_4_4"],
    ]
    # a range alone as a slice is no minor compaction: skipped
    pairs = _deltas("delete_delta_1_1", "delta_1_1", "delete_delta_2_2", "delta_2_2", "delta_3_3")
    assert plan_slices(pairs, 2) == []
    # the statements of one write id (delta_W_W_S) stay together too: delta_1_2 would cover
    # write id 2 and hide a delta_2_2_0001 left to the next slice
    stmts = sorted(
        _deltas(
            "delta_1_1_0000",
            "delete_delta_1_1_0000",
            "delta_2_2_0000",
            "delta_2_2_0001",
            "delta_3_3_0000",
            "delta_4_4_0000",
        )
    )
    # write id 1's two directories alone are one range (no slice); 2's two statements + 3
    assert plan_slices(stmts, 3) == [["delta_2_2_0000", "delta_2_2_0001", "delta_3_3_0000"]]


def test_env_config_and_request_properties():
    cfg = CompactorConfig.from_env(
        {
            "ACIDFLOW_HIVE_COMPACTOR_DELTA_NUM_THRESHOLD": "4",
            "ACIDFLOW_HIVE_COMPACTOR_DELTA_PCT_THRESHOLD": "0.5",
        }
    )
    assert cfg.delta_num_threshold == 4 and cfg.delta_pct_threshold == 0.5
    assert (
        cfg.with_properties({"acidflow.compactor.target.stripe.bytes": "1024"}).target_stripe_bytes
        == 1024
    )
    with pytest.raises(ValueError):
        CompactorConfig.from_env({"ACIDFLOW_HIVE_COMPACTOR_DELTA_NUM_THRESHOLD": "x"})


def test_verify_setting_from_env_table_and_request():
    """``acidflow.compactor.verify``: ``writer`` by default, ``readback`` from the environment,
    a table property (bare, like acidflow's other table keys) or a request; anything else is
    refused naming the key."""
    assert CompactorConfig().verify == "writer"
    assert CompactorConfig.from_env({"ACIDFLOW_COMPACTOR_VERIFY": "readback"}).verify == "readback"
    table = {"acidflow.compactor.verify": "ReadBack"}
    assert CompactorConfig().with_properties(table, table=True).verify == "readback"
    assert CompactorConfig().with_properties({"acidflow.compactor.verify": "readback"}).verify == (
        "readback"
    )
    with pytest.raises(ValueError, match="acidflow.compactor.verify"):
        CompactorConfig.from_env({"ACIDFLOW_COMPACTOR_VERIFY": "sometimes"})


def test_no_auto_compaction_and_active_entries_skip():
    assert no_auto_compaction({"NO_AUTO_COMPACTION": "TRUE"})
    assert no_auto_compaction({"no_auto_compaction": "true"})
    assert not no_auto_compaction({"no_auto_compaction": "false"})
    stats = PartitionStats(delta_count=50, delta_bytes=5)
    d = decide(
        "db.t",
        "ds=1",
        {"NO_AUTO_COMPACTION": "true"},
        active=False,
        history_states=[],
        stats=None,
        config=CFG,
    )
    assert d.action is None and "NO_AUTO_COMPACTION" in d.reason
    d = decide("db.t", "ds=1", {}, active=True, history_states=[], stats=None, config=CFG)
    assert d.action is None and "already" in d.reason
    assert (
        decide("db.t", "ds=1", {}, active=False, history_states=[], stats=stats, config=CFG).action
        == "major"
    )


def test_failed_compacts_threshold_gives_did_not_initiate():
    assert failed_too_often(["failed", "failed"], 2)
    assert failed_too_often(["did not initiate", "failed", "did not initiate", "failed"], 2)
    assert not failed_too_often(["failed", "succeeded", "failed"], 2)
    assert not failed_too_often(["failed"], 2)
    assert failed_too_often(["failed"], 1)
    stats = PartitionStats(delta_count=50, delta_bytes=5)
    d = decide(
        "db.t", None, {}, active=False, history_states=["failed", "failed"], stats=stats, config=CFG
    )
    assert d.action == "did not initiate" and "failed.compacts.threshold" in d.reason
    d = decide(
        "db.t",
        None,
        {"compactorthreshold.hive.compactor.initiator.failed.compacts.threshold": "3"},
        active=False,
        history_states=["failed", "failed"],
        stats=stats,
        config=CFG,
    )
    assert d.action == "major"


# ---------------------------------------------------------------- plans


def _entries(*names):
    out = []
    for n in names:
        out.append(DirEntry(n, True))
        out.append(DirEntry(f"{n}/bucket_00000", False, 10))
    return out


def test_minor_plan_names_and_inputs():
    valid = ValidWriteIdList("db.t", 9, open_write_ids=[7], aborted_write_ids=[3])
    e = _entries(
        "base_0000002",
        "delta_0000003_0000003_0000",
        "delta_0000004_0000004_0000",
        "delete_delta_0000005_0000005_0000",
        "delta_0000006_0000006_0000",
        "delta_0000007_0000007_0000",
        "delta_0000008_0000008_0000",
    )
    p = plan_compaction(e, valid, "minor")
    # open 7 stops the compactor at 6; aborted 3 is not an input
    assert p.deltas == [
        "delta_0000004_0000004_0000",
        "delete_delta_0000005_0000005_0000",
        "delta_0000006_0000006_0000",
    ]
    assert p.outputs == ["delete_delta_0000004_0000006", "delta_0000004_0000006"]
    assert ValidWriteIdList.from_string(p.valid).high_watermark == 6
    pm = plan_compaction(e, valid, "major")
    assert pm.base == "base_0000002" and pm.outputs == ["base_0000006"]


def test_nothing_to_do_and_clash():
    valid = ValidWriteIdList("db.t", 5)
    p = plan_compaction(
        _entries("delta_0000001_0000005", "delete_delta_0000001_0000005"), valid, "minor"
    )
    assert p.nothing_to_do and "2 delta ranges" in p.skip_reason
    p = plan_compaction(_entries("base_0000005"), valid, "major")
    assert p.nothing_to_do
    with pytest.raises(ValueError):
        plan_compaction([], valid, "medium")


def test_cleaner_capped_list():
    valid = ValidWriteIdList("db.t", 9, open_write_ids=[8], aborted_write_ids=[2, 9])
    c = capped_list(valid, 5)
    assert c.high_watermark == 5 and c.aborted_write_ids == (2,) and c.open_write_ids == ()


# ---------------------------------------------------------------- fsck


def test_fsck_layout_findings():
    e = _entries(
        "delta_0000001_0000003", "delta_0000002_0000005", "delta_0000004_0000004_0000", "junk"
    ) + [
        DirEntry(".compact_tmp_7", True),
        DirEntry("delta_0000001_0000003/_orc_acid_version", False, 1),
    ]
    valid = ValidWriteIdList("db.t", 5)
    findings = check_layout("", e, get_acid_state(e, valid))
    kinds = {(f.kind, f.path) for f in findings}
    assert ("orphan", ".compact_tmp_7") in kinds and ("orphan", "junk") in kinds
    assert ("overlap", "delta_0000002_0000005") in kinds
    assert ("missing_metadata", "delta_0000002_0000005") in kinds
    assert ("missing_metadata", "delta_0000001_0000003") not in kinds
    assert duplicate_row_ids("", [(1, 2, 3), (1, 2, 3), (1, 2, 4)])[0].detail.startswith(
        "ROW__ID (1, 2, 3)"
    )


def test_eligible_since_without_a_write_id_is_the_newest_compaction_end():
    """A partition eligible through original files only (no delta write id) has been eligible
    since its newest finished compaction (none: unknown)."""
    t1 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    t2 = datetime(2026, 1, 2, tzinfo=timezone.utc)
    done = [
        CompactionInfo(
            id=i,
            table="db.t",
            partition=None,
            type="major",
            state="succeeded",
            requester="initiator",
            worker_id=None,
            enqueued_at=t,
            started_at=t,
            ended_at=t,
            heartbeat=None,
            error=None,
            highest_write_id=1,
            txn_id=None,
            commit_id=None,
        )  # fmt: skip
        for i, t in ((1, t1), (2, t2))
    ]
    assert eligible_since(None, {}, done) == t2
    assert eligible_since(None, {}, []) is None
    assert eligible_since(3, {3: t1}, done) == t2  # a later end moves the start
