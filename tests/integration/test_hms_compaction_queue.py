"""Hive's compaction queue and acidflow's compactor on one Hive 3.1.3 metastore (on PostgreSQL,
so that acidflow reaches its ``COMPACTION_QUEUE`` through ``metastore_db``): a Hive client's
``compact2`` request (what ``ALTER TABLE ... COMPACT 'major'`` sends) is run by acidflow's
initiator / worker / cleaner and ``show_compact`` follows it; acidflow's own compaction is
listed by ``show_compact`` with Hive's states; a failing one ends ``failed``; without
``metastore_db`` Hive's request is reported as waiting."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from pymetastore.hive_metastore.ttypes import (
    CompactionRequest,
    CompactionType,
    ShowCompactRequest,
)

from acidflow.catalog import Column, TableDef, load_catalog
from acidflow.catalog.hms.client import hms_client
from acidflow.catalog.records import CompactionState
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from tests.support import acidtables as at
from tests.support.hms import reset_metastore

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CFG = CompactorConfig(heartbeat_s=0)


@pytest.fixture
def hms(hive_metastore_pg, monkeypatch):
    """The PostgreSQL-backed session metastore, emptied for this test."""
    monkeypatch.delenv("ACIDFLOW_HMS_METASTORE_DB", raising=False)
    reset_metastore(hive_metastore_pg.url)
    return hive_metastore_pg


def _catalog(hms, tmp_path, *, with_db: bool = True):
    url = hms.url + (f"?metastore_db={quote(hms.metastore_db, safe='')}" if with_db else "")
    return load_catalog(url, warehouse=str(tmp_path / "warehouse"))


@pytest.fixture
def catalog(hms, tmp_path):
    cat = _catalog(hms, tmp_path)
    yield cat
    cat.close()


def _table(catalog, name: str, partition: str | None = None) -> Path:
    """Two deltas in ``name`` (partitioned by ``ds`` when ``partition`` is given); returns the
    directory that holds them."""
    parts = [Column("ds", "string")] if partition else []
    catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("id", "int"), Column("v", "string")],
            partition_columns=parts,
        )
    )
    at.write(catalog, name, {0: [(1, "a"), (2, "b")]}, partition=partition)
    at.write(catalog, name, {0: [(3, "c")]}, partition=partition)
    loc = Path(catalog.get_table(name).location)
    return loc / partition if partition else loc


def _shown(hms, cq_id: int):
    """The ``show_compact`` element of Hive's entry ``cq_id``."""
    with hms_client(hms.url) as client:
        found = [e for e in client.show_compact(ShowCompactRequest()).compacts if e.id == cq_id]
    assert len(found) == 1, found
    return found[0]


def _compact2(hms, db: str, tbl: str, partition: str | None = None, user: str = "bob") -> int:
    """What Hive's ``ALTER TABLE db.tbl [PARTITION (...)] COMPACT 'major'`` sends: ``compact2``
    run as the user."""
    with hms_client(hms.url) as client:
        resp = client.compact2(
            CompactionRequest(
                dbname=db,
                tablename=tbl,
                partitionname=partition,
                type=CompactionType.MAJOR,
                runas=user,
            )
        )
    assert resp.accepted and resp.state == "initiated"
    return resp.id


def test_hive_request_is_run_by_acidflow_and_shown_in_hive(catalog, hms):
    """compact2 -> the initiator queues it (linked to Hive's CQ_ID, run as the user), one
    worker run compacts it (base on disk, rows equal) and Hive shows it 'ready for cleaning'
    with acidflow's entry as the job id, then 'succeeded' after the cleaner."""
    loc = _table(catalog, "hq.req", "ds=1")
    before = at.rows(catalog, "hq.req")
    hive_id = _compact2(hms, "hq", "req", "ds=1")
    assert _shown(hms, hive_id).state == "initiated"

    report = initiator.run_initiator(catalog, config=CFG)
    (decision,) = [d for d in report.decisions if "CQ_ID" in d.reason]
    assert decision.action == "major" and f"CQ_ID {hive_id}" in decision.reason
    assert report.queued_ids == [decision.queued_id]
    entry = catalog.get_compaction(decision.queued_id)
    assert (entry.metastore_cq_id, entry.requester, entry.state, entry.partition, entry.type) == (
        hive_id,
        "bob",
        "initiated",
        "ds=1",
        "major",
    )

    (out,) = worker.run_queue(None, catalog, config=CFG)
    assert out.state == "ready for cleaning", out.report
    assert "base_0000002" in {p.name for p in loc.iterdir()}
    assert at.rows(catalog, "hq.req") == before
    shown = _shown(hms, hive_id)
    assert shown.state == "ready for cleaning"
    assert shown.hadoopJobId == f"acidflow-{entry.id}"

    cleaner.run_cleaner(catalog)
    assert catalog.get_compaction(entry.id).state == "succeeded"
    assert _shown(hms, hive_id).state == "succeeded"
    assert sorted(p.name for p in loc.iterdir()) == ["base_0000002"]
    assert initiator.run_initiator(catalog, config=CFG).queued_ids == []  # not taken twice


def test_acidflow_compaction_is_listed_by_show_compact(catalog, hms):
    """acidflow's own request is queued in Hive by compact2 (Hive's CQ_ID on the side entry)
    and Hive sees it 'initiated', 'working' while the worker runs (claimed as Hive's worker
    claims), 'ready for cleaning', then 'succeeded'."""
    _table(catalog, "hq.own")
    info = initiator.request_compaction(catalog, "hq.own", None, "major")
    assert info.metastore_cq_id is not None
    assert _shown(hms, info.metastore_cq_id).state == "initiated"
    with load_catalog(catalog.job_url(), warehouse=catalog.warehouse) as again:
        assert again.get_compaction(info.id).metastore_cq_id == info.metastore_cq_id
        assert again.queue.db is not None
    seen = []

    def look(_tmp):  # while the worker runs, before it publishes
        shown = _shown(hms, info.metastore_cq_id)
        seen.append((shown.state, shown.workerid))

    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG, worker_id="w-1", tamper=look)
    assert out.state == "ready for cleaning", out.report
    assert seen == [("working", "w-1")]
    assert _shown(hms, info.metastore_cq_id).state == "ready for cleaning"
    cleaner.run_cleaner(catalog)
    assert _shown(hms, info.metastore_cq_id).state == "succeeded"


def test_failing_compaction_ends_failed_in_hive(catalog, hms):
    """A compaction that fails ends 'failed' in show_compact, its error in the completed
    entry's meta info, and the table is left as it was."""
    loc = _table(catalog, "hq.bad")
    info = initiator.request_compaction(catalog, "hq.bad", None, "major")

    def boom(_tmp):
        raise RuntimeError("disk on fire")

    out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG, tamper=boom)
    assert out.state == "failed"
    assert _shown(hms, info.metastore_cq_id).state == "failed"
    engine = sa.create_engine(hms.metastore_db, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        meta = conn.execute(
            sa.text("SELECT cc_meta_info FROM completed_compactions WHERE cc_id = :i"),
            {"i": info.metastore_cq_id},
        ).scalar()
    engine.dispose()
    assert "disk on fire" in bytes(meta).decode()
    assert "base_0000002" not in {p.name for p in loc.iterdir()}


def test_without_metastore_db_hive_request_is_reported_waiting(hms, tmp_path):
    """Without metastore_db the initiator reports Hive's request as waiting, naming it and
    the missing setting; nothing is queued or run and Hive keeps it 'initiated'."""
    with _catalog(hms, tmp_path, with_db=False) as cat:
        _table(cat, "hq.wait")
        hive_id = _compact2(hms, "hq", "wait")
        report = initiator.run_initiator(cat, config=CFG)
        (decision,) = [d for d in report.decisions if "CQ_ID" in d.reason]
        assert decision.action is None and decision.queued_id is None
        assert f"CQ_ID {hive_id}" in decision.reason
        assert "no metastore_db configured" in decision.reason
        assert report.queued_ids == []
        assert worker.run_queue(None, cat, config=CFG) == []
        assert _shown(hms, hive_id).state == "initiated"


def test_entry_hive_worker_claimed_first_is_left_to_it(catalog, hms):
    """Both claim with Hive's conditional UPDATE: when Hive's own worker took an adopted entry
    first, acidflow's worker fails its side entry (naming the CQ_ID) and leaves Hive's alone."""
    _table(catalog, "hq.race")
    hive_id = _compact2(hms, "hq", "race")
    (queued,) = initiator.run_initiator(catalog, config=CFG).queued_ids
    engine = sa.create_engine(hms.metastore_db, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:  # Hive 3.1's findNextToCompact, run by Hive's worker
        conn.execute(
            sa.text(
                "UPDATE compaction_queue SET cq_state = 'w', cq_worker_id = 'hive-worker-0' "
                "WHERE cq_id = :i AND cq_state = 'i'"
            ),
            {"i": hive_id},
        )
    engine.dispose()
    assert worker.run_worker(None, catalog, cq_id=queued, config=CFG) is None
    entry = catalog.get_compaction(queued)
    assert entry.state == "failed" and f"CQ_ID {hive_id}" in entry.error
    shown = _shown(hms, hive_id)
    assert (shown.state, shown.workerid) == ("working", "hive-worker-0")


def test_late_moves_never_touch_a_claim_another_worker_took_over(catalog, hms):
    """acidflow's claim marks Hive's entry as its own (CQ_HADOOP_JOB_ID acidflow-<side id>);
    once it was revoked and Hive's worker claimed the entry, acidflow's late moves (ready for
    cleaning, failed, revoke) leave Hive's claim alone."""
    _table(catalog, "hq.late")
    hive_id = _compact2(hms, "hq", "late")
    (queued,) = initiator.run_initiator(catalog, config=CFG).queued_ids
    assert catalog.claim_compaction("acidflow-worker-0", queued).id == queued
    shown = _shown(hms, hive_id)
    assert (shown.state, shown.hadoopJobId) == ("working", f"acidflow-{queued}")
    engine = sa.create_engine(hms.metastore_db, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:  # revoked (timed out), then claimed by Hive's own worker
        conn.execute(
            sa.text(
                "UPDATE compaction_queue SET cq_state = 'w', cq_worker_id = 'hive-worker-1', "
                "cq_hadoop_job_id = NULL WHERE cq_id = :i"
            ),
            {"i": hive_id},
        )
    engine.dispose()
    catalog.queue.ready_for_cleaning(queued, 5)
    catalog.queue.finished(queued, CompactionState.FAILED, "a late failure")
    catalog.queue.reclaimed([queued])
    shown = _shown(hms, hive_id)
    assert (shown.state, shown.workerid) == ("working", "hive-worker-1")
