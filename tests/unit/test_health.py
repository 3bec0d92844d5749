"""acidflow.quality.health: each rule, its threshold edge, no finding when healthy; then the
rules on a real SqlCatalog (a compaction claimed and never finished, a silent transaction)
through ``acidflow health``."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from acidflow.catalog import Column, CompactionInfo, SqlCatalog, TableDef, TxnInfo
from acidflow.cli import app
from acidflow.quality.health import (
    HealthThresholds,
    check_health,
    compaction_findings,
    slot_findings,
    transaction_findings,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
TH = HealthThresholds()


def comp(
    cq_id, state, *, enqueued=None, started=None, ended=None, error=None, partition="ds=2024-01-01"
):
    return CompactionInfo(
        id=cq_id,
        table="sales.orders",
        partition=partition,
        type="major",
        state=state,
        requester="initiator",
        worker_id="w-1" if started else None,
        enqueued_at=enqueued or NOW - timedelta(days=1),
        started_at=started,
        ended_at=ended,
        heartbeat=started,
        error=error,
        highest_write_id=None,
        txn_id=None,
        commit_id=None,
    )


def txn(txn_id, started_ago_s, silent_s, state="open"):
    return TxnInfo(
        txn_id=txn_id,
        state=state,
        user="etl",
        host="h1",
        agent_info="cdc",
        started_at=NOW - timedelta(seconds=started_ago_s),
        last_heartbeat=NOW - timedelta(seconds=silent_s),
        write_ids={"sales.orders": 7},
    )


def test_initiated_and_working_thresholds_are_strict():
    at_limit = [
        comp(1, "initiated", enqueued=NOW - timedelta(seconds=7200)),
        comp(2, "working", started=NOW - timedelta(seconds=7200)),
    ]
    assert compaction_findings(at_limit, TH, NOW) == []
    over = [
        comp(1, "initiated", enqueued=NOW - timedelta(seconds=7201)),
        comp(2, "working", started=NOW - timedelta(hours=5)),
    ]
    f1, f2 = compaction_findings(over, TH, NOW)
    assert (f1.kind, f1.subject, f1.threshold) == ("compaction-initiated", "compaction 1", 7200)
    assert "sales.orders partition ds=2024-01-01" in f1.message and "not claimed" in f1.message
    assert f2.kind == "compaction-working" and f2.value == 5 * 3600
    assert "worker w-1" in f2.message and "5 h 0 min" in f2.message
    assert f2.details["id"] == 2 and f2.details["state"] == "working"
    # per-threshold override
    assert (
        compaction_findings(over, HealthThresholds(working_max_s=6 * 3600), NOW)[-1].kind
        == "compaction-initiated"
    )


def test_finished_and_cleaning_entries_are_not_stuck():
    old = NOW - timedelta(days=30)
    items = [
        comp(1, "succeeded", started=old, ended=old),
        comp(2, "ready for cleaning", started=old),
        comp(3, "did not initiate", ended=old),
    ]
    assert compaction_findings(items, TH, NOW) == []


def test_failed_compactions_counted_in_the_window():
    one = [comp(1, "failed", ended=NOW - timedelta(hours=1), error="disk full\ntrace")]
    assert compaction_findings(one, TH, NOW) == []
    two = one + [
        comp(2, "failed", ended=NOW - timedelta(hours=23), partition=None),
        comp(3, "failed", ended=NOW - timedelta(hours=25)),
    ]  # outside the window
    (f,) = compaction_findings(two, TH, NOW)
    assert (f.kind, f.value, f.threshold) == ("compactions-failed", 2, 2)
    assert f.details["ids"] == [1, 2] and "disk full" in f.message and "trace" not in f.message
    assert compaction_findings(two, HealthThresholds(failed_max=3), NOW) == []
    assert compaction_findings(two, HealthThresholds(failed_max=0), NOW) == []  # off
    assert (
        len(
            compaction_findings(two, HealthThresholds(failed_window_s=26 * 3600, failed_max=3), NOW)
        )
        == 1
    )


def test_transactions_timed_out_or_open_too_long():
    healthy = [txn(1, 60, 5), txn(2, 3600, 300), txn(3, 10**6, 10**6, state="aborted")]
    assert transaction_findings(healthy, TH, 300, NOW) == []
    f1, f2 = transaction_findings([txn(4, 400, 301), txn(5, 21601, 10)], TH, 300, NOW)
    assert (f1.kind, f1.subject) == ("txn-timed-out", "txn 4")
    assert "no heartbeat for 5 min 1 s" in f1.message and "sales.orders" in f1.message
    assert (f2.kind, f2.subject, f2.threshold) == ("txn-open-too-long", "txn 5", 21600)
    assert "etl@h1 (cdc)" in f2.message
    # one finding per transaction: the timeout wins
    (f,) = transaction_findings([txn(6, 10**5, 10**5)], TH, 300, NOW)
    assert f.kind == "txn-timed-out"


def test_slot_lag_and_missing_slot():
    assert slot_findings({"acidflow": 1 << 30}, TH) == []
    lag, missing = slot_findings({"acidflow": (1 << 30) + 1, "other": None}, TH)
    assert lag.kind == "slot-lag" and lag.details == {"slot": "acidflow", "bytes": (1 << 30) + 1}
    assert "1024.0 MiB" in lag.message
    assert missing.kind == "slot-missing" and "'other'" in missing.message


def test_thresholds_from_env_and_overrides():
    th = HealthThresholds.from_env(
        {
            "ACIDFLOW_HEALTH_WORKING_MAX_S": "60",
            "ACIDFLOW_HEALTH_FAILED_MAX": "5",
            "ACIDFLOW_HEALTH_X": "1",
        },
        failed_max=7,
        initiated_max_s=None,
    )
    assert (th.working_max_s, th.failed_max, th.initiated_max_s) == (60.0, 7, 7200.0)
    with pytest.raises(ValueError, match="ACIDFLOW_HEALTH_FAILED_MAX='many'"):
        HealthThresholds.from_env({"ACIDFLOW_HEALTH_FAILED_MAX": "many"})
    with pytest.raises(ValueError, match="working_max_s must be >= 0"):
        HealthThresholds(working_max_s=-1)


# ---------------------------------------------------------------- on a real catalog

runner = CliRunner()


def health(*args, code):
    res = runner.invoke(app, ["health", *args], env={"COLUMNS": "250"})
    assert res.exit_code == code, (res.output, res.exception)
    return res.output


def test_check_health_on_a_catalog_and_the_cli(warehouse):
    cat = SqlCatalog(
        os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse), txn_timeout_s=300
    )
    cat.create_table(TableDef(name="shop.items", columns=[Column("sku", "int")]))
    assert check_health(cat) == []
    report = json.loads(health("--json", code=0).splitlines()[-1])
    assert report["healthy"] is True and report["findings"] == []
    assert "healthy" in health(code=0)

    # a worker claims a compaction and never finishes it (its transaction heartbeats)
    queued = cat.enqueue_compaction("shop.items", None, "major")
    claimed = cat.claim_compaction("w-dead", queued.id)
    assert claimed is not None and claimed.state == "working"
    later = claimed.started_at + timedelta(hours=3)
    (f,) = [f for f in check_health(cat, now=later) if f.kind == "compaction-working"]
    assert f.subject == f"compaction {queued.id}" and "shop.items" in f.message
    kinds = {f.kind for f in check_health(cat, now=later)}
    assert kinds == {"compaction-working", "txn-timed-out"}  # its txn: no heartbeat for 3 h
    assert check_health(cat, now=claimed.started_at + timedelta(minutes=1)) == []

    # the CLI on "now": thresholds from options and the environment
    out = health("--json", "--working-max", "0", code=1).splitlines()[-1]
    report = json.loads(out)
    assert report["healthy"] is False
    assert [f["kind"] for f in report["findings"]] == ["compaction-working"]
    assert report["thresholds"]["working_max_s"] == 0
    res = runner.invoke(
        app, ["health"], env={"COLUMNS": "250", "ACIDFLOW_HEALTH_WORKING_MAX_S": "0"}
    )
    assert res.exit_code == 1 and "compaction-working" in res.output
    assert f"compaction {queued.id}" in res.output
    res = runner.invoke(app, ["health"], env={"ACIDFLOW_HEALTH_WORKING_MAX_S": "soon"})
    assert res.exit_code == 2 and "ACIDFLOW_HEALTH_WORKING_MAX_S" in res.output
