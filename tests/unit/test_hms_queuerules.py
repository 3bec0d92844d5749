"""The pure rules linking acidflow's compaction queue with the Hive metastore's
(``acidflow.catalog.hms.queuerules``)."""

from __future__ import annotations

from pymetastore.hive_metastore.ttypes import CompactionType, ShowCompactResponseElement

from acidflow.catalog.hms.queuerules import (
    HIVE_STATE,
    from_show_compact,
    hive_type,
    requests_to_adopt,
    waiting_reason,
)


def _element(cq_id: int, state: str, part: str | None = None) -> ShowCompactResponseElement:
    return ShowCompactResponseElement(
        dbname="db",
        tablename="T",
        partitionname=part,
        type=CompactionType.MINOR,
        state=state,
        runAs="bob",
        id=cq_id,
    )


def test_hive_words_and_codes_map_to_acidflow_states():
    entry = from_show_compact(_element(7, "ready for cleaning", "ds=1"))
    assert (entry.table, entry.partition, entry.type, entry.state) == (
        "db.t",
        "ds=1",
        "minor",
        "ready for cleaning",
    )
    assert from_show_compact(_element(8, "attempted")).state == "did not initiate"
    assert hive_type("major") == CompactionType.MAJOR and hive_type("minor") == CompactionType.MINOR
    assert [HIVE_STATE[s] for s in ("initiated", "working", "ready for cleaning")] == [
        "i",
        "w",
        "r",
    ]
    assert (HIVE_STATE["succeeded"], HIVE_STATE["failed"]) == ("s", "f")


def test_only_initiated_unlinked_entries_are_adopted_oldest_first():
    entries = [
        from_show_compact(e)
        for e in (
            _element(9, "initiated"),
            _element(3, "initiated"),
            _element(4, "working"),
            _element(5, "initiated"),
        )
    ]
    assert [e.metastore_cq_id for e in requests_to_adopt(entries, {5})] == [3, 9]
    reason = waiting_reason(entries[0], "no metastore_db configured")
    assert reason.startswith("Hive compaction request CQ_ID 9 (minor of db.t, run as bob) waits")
