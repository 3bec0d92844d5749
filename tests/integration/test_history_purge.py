"""The cleaner keeps the catalog's history bounded on a real table: after many commits and a
pass with history retention of K commits, the table's commit records and completed components
are bounded, time travel within retention still reads what it read before, and an applied
batch's rerun is still refused (exactly-once)."""

from __future__ import annotations

import pytest

from acidflow.catalog import BatchAlreadyAppliedError
from acidflow.compactor import cleaner
from acidflow.read import history
from acidflow.storage.retention import RETAIN_COMMITS, RETAIN_HOURS, TIMELINE_KEEP_COMMITS
from tests.support import history_tables as ht


def test_cleaner_bounds_commit_records_and_keeps_retained_history(catalog):
    # the timeline bound off: only retention decides (the default keeps the newest 100 records)
    ht.make_table(
        catalog,
        "keyed_bucketed",
        **{RETAIN_COMMITS: "3", RETAIN_HOURS: "0", TIMELINE_KEEP_COMMITS: "0"},
    )
    wids = [ht.put(catalog, "db.h", [i % 7, 100 + i], f"t{i}") for i in range(20)]
    before = {w: ht.values(catalog, "db.h", as_of_write_id=w) for w in wids[-4:]}
    txn = catalog.open_transaction()
    catalog.register_batch(txn, "ingest:db.h:1", "ingest", source="batch 1")
    catalog.commit_transaction(txn)
    ht.compact(catalog, "db.h", "major")

    rep = cleaner.run_cleaner(catalog)

    assert rep.purged["commit_records"] == 16
    assert [r.write_id for r in catalog.commit_records("db.h")] == wids[-4:]
    assert history.retained_range(catalog, "db.h").oldest == wids[-4]
    for w, rows in before.items():
        assert ht.values(catalog, "db.h", as_of_write_id=w) == rows
    # the initiator's input: one completed component per written partition
    with catalog.engine.connect() as conn:
        n = conn.exec_driver_sql("SELECT COUNT(*) FROM completed_txn_components").scalar_one()
    assert n == 1
    rerun = catalog.open_transaction()
    with pytest.raises(BatchAlreadyAppliedError):
        catalog.register_batch(rerun, "ingest:db.h:1", "ingest", source="batch 1")
    catalog.abort_transaction(rerun)
    # a second pass finds nothing more
    assert cleaner.run_cleaner(catalog).purged["commit_records"] == 0


def test_the_timeline_keeps_its_newest_records_beyond_retention(catalog):
    """Commit records outlive the readable snapshots up to acidflow.timeline.keep.commits
    (default 100): ``acidflow commits``, the UI and restore's choice of a commit read them."""
    ht.make_table(catalog, "keyed_bucketed", **{RETAIN_COMMITS: "3", RETAIN_HOURS: "0"})
    wids = [ht.put(catalog, "db.h", [i % 7, 100 + i], f"t{i}") for i in range(12)]
    ht.compact(catalog, "db.h", "major")
    assert cleaner.run_cleaner(catalog).purged["commit_records"] == 0
    assert [r.write_id for r in catalog.commit_records("db.h")] == wids
    catalog.set_table_properties("db.h", {TIMELINE_KEEP_COMMITS: "5"})
    assert cleaner.run_cleaner(catalog).purged["commit_records"] == 7
    assert [r.write_id for r in catalog.commit_records("db.h")] == wids[-5:]
