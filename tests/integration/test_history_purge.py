"""The cleaner keeps the catalog's history bounded on a real table: after many commits and a
pass with history retention of K commits, the table's commit records and completed components
are bounded, time travel within retention still reads what it read before, and an applied
batch's rerun is still refused (exactly-once)."""

from __future__ import annotations

import pytest

from acidflow.catalog import BatchAlreadyAppliedError
from acidflow.compactor import cleaner, fsck
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


def _count(catalog, table: str) -> int:
    with catalog.engine.connect() as conn:
        return conn.exec_driver_sql(f"SELECT COUNT(*) FROM {table}").scalar_one()


def _problems(catalog, name: str) -> list:
    return [f for f in fsck.fsck_table(catalog, name) if f.severity != "info"]


def test_transactions_go_with_the_timeline_and_every_read_stays_the_same(catalog):
    """Committed transactions whose commit records are archived leave ``txns`` and
    ``txn_to_write_id``; the current snapshot, time travel within the timeline, the file
    records (fsck) and the ``_v<T>`` directories of purged compactions read as before."""
    ht.make_table(
        catalog,
        "keyed_partitioned_unbucketed",
        **{RETAIN_COMMITS: "2", RETAIN_HOURS: "0", TIMELINE_KEEP_COMMITS: "4"},
    )
    wids = [ht.put(catalog, "db.h", [i % 5, 10 + i], f"t{i}") for i in range(12)]
    ht.compact(catalog, "db.h", "major")
    wids.append(ht.put(catalog, "db.h", [1, 2], "late"))
    before_valid = catalog.valid_write_ids("db.h")
    before_now = ht.values(catalog, "db.h")
    before_tt = {w: ht.values(catalog, "db.h", as_of_write_id=w) for w in wids[-3:]}
    assert _problems(catalog, "db.h") == []
    txns_before = _count(catalog, "txns")

    rep = cleaner.run_cleaner(catalog)

    # 13 table commits + 2 compaction transactions; the 4 newest table commits stay
    assert rep.purged["transactions"] >= 9
    assert _count(catalog, "txns") == txns_before - rep.purged["transactions"]
    assert _count(catalog, "txn_to_write_id") == 4
    assert [h.write_id for h in catalog.write_id_history("db.h")] == wids[-4:]
    assert catalog.valid_write_ids("db.h") == before_valid
    assert ht.values(catalog, "db.h") == before_now
    for w, rows in before_tt.items():
        assert ht.values(catalog, "db.h", as_of_write_id=w) == rows
    # every file of the snapshot still has its record (fsck would list it as unexpected)
    assert _problems(catalog, "db.h") == []
    # a new writer and a compaction after the purge see the same table
    ht.put(catalog, "db.h", [3], "after")
    ht.compact(catalog, "db.h", "major")
    assert ht.values(catalog, "db.h")[(3, "after3", "a")] == 1
    assert cleaner.run_cleaner(catalog).purged["transactions"] >= 1


def test_an_open_transaction_and_a_late_commit_keep_later_transactions(catalog):
    """Only commits below the oldest open transaction go, and only a table's lowest write
    ids: a write id that committed late keeps every higher one (commit order stays known)."""
    ht.make_table(
        catalog,
        "keyed_bucketed",
        **{RETAIN_COMMITS: "0", RETAIN_HOURS: "0", TIMELINE_KEEP_COMMITS: "1"},
    )
    first = [ht.put(catalog, "db.h", [i], "a") for i in range(3)]
    slow = catalog.open_transaction()
    slow_wid = catalog.allocate_write_id(slow, "db.h")
    later = [ht.put(catalog, "db.h", [10 + i], "b") for i in range(3)]
    rep = cleaner.run_cleaner(catalog)
    # the open transaction holds back everything committed after it opened
    kept = [h.write_id for h in catalog.write_id_history("db.h")]
    assert rep.purged["transactions"] == 3
    assert kept == [slow_wid, *later]
    catalog.commit_transaction(slow)  # commits last: the newest record, write id below others
    tt = ht.values(catalog, "db.h", as_of_write_id=later[-1])
    cleaner.run_cleaner(catalog)
    kept = [h.write_id for h in catalog.write_id_history("db.h")]
    # slow_wid is the lowest write id left and committed last: nothing above it may go
    assert kept[0] == slow_wid and set(later) <= set(kept)
    assert ht.values(catalog, "db.h", as_of_write_id=later[-1]) == tt
    assert first[0] not in kept


def test_batch_records_beyond_retention_go_but_each_sources_newest_stays(catalog, monkeypatch):
    """Committed batch records older than ACIDFLOW_BATCH_RETAIN_HOURS go, except the newest
    of each (kind, source): the high-water mark of a Kafka source or a data source app."""
    for i in range(4):
        for source in ("kafka:orders", "landing/a"):
            txn = catalog.open_transaction()
            catalog.register_batch(txn, f"{source}:{i}", "cdc", source=source, details={"i": i})
            catalog.commit_transaction(txn)
    claim = catalog.open_transaction()
    catalog.register_batch(claim, "kafka:orders:4", "cdc", source="kafka:orders")
    # the default (720 h) keeps every record
    assert cleaner.run_cleaner(catalog).purged["batches"] == 0
    monkeypatch.setenv("ACIDFLOW_BATCH_RETAIN_HOURS", "0")
    rep = cleaner.run_cleaner(catalog)
    assert rep.purged["batches"] == 6
    left = {b.batch_id: b.state for b in catalog.list_batches("cdc")}
    assert left == {
        "kafka:orders:3": "committed",
        "landing/a:3": "committed",
        "kafka:orders:4": "open",
    }
    # the purged records' transactions went too; the kept ones' stay (their batches name them)
    assert catalog.get_batch("kafka:orders:3").state == "committed"
    catalog.abort_transaction(claim)
    monkeypatch.setenv("ACIDFLOW_BATCH_RETAIN_HOURS", "soon")
    assert cleaner.run_cleaner(catalog).purged["batches"] == 1  # only the aborted claim
