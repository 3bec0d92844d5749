"""Kafka records -> changes (acidflow.sources.kafka) and offset ranges (acidflow.cdc.offsets):
the pure rules, without a broker."""

from __future__ import annotations

import json
import re
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from acidflow.cdc import offsets as ofs
from acidflow.cdc.kafka import KafkaOptions, KafkaOptionsError, _Window, kafka_threshold
from acidflow.cdc.stream import trigger_pattern
from acidflow.sources.kafka import KafkaRecord, _Marker, decode_records
from acidflow.sources.records import BadRecord

T = "acf.public.items"
TX = "acf.transaction"


def _schema_env(payload: dict) -> dict:
    return {"schema": {"type": "struct", "fields": []}, "payload": payload}


def _ev(op: str, lsn: int, before=None, after=None, txid: int | None = None, table="items"):
    ev = {
        "op": op,
        "before": before,
        "after": after,
        "source": {"db": "src", "schema": "public", "table": table, "lsn": lsn, "txId": txid},
        "ts_ms": 1,
    }
    if txid is not None:
        ev["transaction"] = {"id": f"{txid}:{lsn}", "total_order": 1}
    return ev


def _rec(topic, offset, value, key=None, partition=0) -> KafkaRecord:
    enc = None if value is None else json.dumps(value).encode()
    kenc = None if key is None else json.dumps(key).encode()
    return KafkaRecord(topic, partition, offset, kenc, enc)


def _marker(status: str, txid: int, lsn: int, count: int | None = None) -> dict:
    m = {"status": status, "id": f"{txid}:{lsn}", "event_count": count}
    if status == "END":
        m["data_collections"] = [{"data_collection": "public.items", "event_count": count}]
    return m


def test_debezium_ops_tombstone_and_envelope_on_and_off():
    key = {"schema": {}, "payload": {"id": 1}}
    recs = [
        _rec(T, 0, _schema_env(_ev("r", 10, after={"id": 1, "name": "a"})), key),
        _rec(T, 1, _ev("c", 11, after={"id": 2, "name": "b"}), {"id": 2}),  # no schemas
        _rec(T, 2, _ev("u", 12, {"id": 1, "name": "a"}, {"id": 1, "name": "a2"}), key),
        _rec(T, 3, _schema_env(_ev("d", 13, before={"id": 2, "name": "b"})), {"id": 2}),
        _rec(T, 4, None, {"id": 2}),  # tombstone
        _rec(T, 5, _ev("t", 14)),
    ]
    b = decode_records("debezium", recs, end_offsets={T: {"0": 6}})
    assert [(c.op, c.table) for c in b.stream.changes] == [
        ("I", "public.items"),
        ("I", "public.items"),
        ("U", "public.items"),
        ("D", "public.items"),
        ("T", "public.items"),
    ]
    assert b.stream.changes[2].after == {"id": 1, "name": "a2"}
    assert b.stream.changes[3].before == {"id": 2, "name": "b"}
    assert b.stream.changes[0].source == f"{T}/0:0 lsn 10"
    assert b.stream.tables["public.items"].primary_key == ["id"]
    assert b.stream.bad == [] and b.end_offsets == {T: {"0": 6}} and b.carried == 0
    # ordering by source position: lsn, then event order
    assert [c.position for c in b.stream.changes] == sorted(c.position for c in b.stream.changes)


def test_table_from_the_topic_when_the_envelope_names_none():
    ev = _ev("c", 5, after={"id": 1})
    del ev["source"]["table"], ev["source"]["schema"]
    b = decode_records("debezium", [_rec(T, 0, ev)], end_offsets={T: {"0": 1}})
    assert [c.table for c in b.stream.changes] == ["public.items"]


def test_bad_records_name_topic_partition_offset():
    recs = [
        KafkaRecord(T, 3, 41, None, b"\xff\xfe not utf8"),
        KafkaRecord(T, 3, 42, None, b"{not json"),
        _rec(T, 43, {"op": "x", "source": {"table": "items"}}, partition=3),
        _rec(T, 44, _ev("c", 9, after={"id": 1}), partition=3),
    ]
    b = decode_records("debezium", recs, end_offsets={T: {"3": 45}})
    assert len(b.stream.changes) == 1
    reasons = [x.reason for x in b.stream.bad]
    assert len(reasons) == 3
    for off, reason in zip((41, 42, 43), reasons):
        assert reason.startswith(f"Kafka topic {T} partition 3 offset {off}: "), reason
    assert "UTF-8" in reasons[0] and "JSON" in reasons[1] and "op" in reasons[2]
    assert b.stream.bad[1].raw == "{not json" and b.stream.bad[1].source == f"{T}/3:42"
    assert b.end_offsets == {T: {"3": 45}}


def test_goldengate_insert_update_delete():
    g = "ogg.HR.EMP"
    recs = [
        _rec(g, 0, {"table": "HR.EMP", "op_type": "I", "op_ts": "2024-01-01 00:00:01.000000",
                    "pos": "001", "primary_keys": ["ID"], "after": {"ID": 1, "N": "a"}}),
        _rec(g, 1, {"table": "HR.EMP", "op_type": "U", "op_ts": "2024-01-01 00:00:02.000000",
                    "pos": "002", "primary_keys": ["ID"], "before": {"ID": 1, "N": "a"},
                    "after": {"ID": 1, "N": "b"}, "txind": "M"}),
        _rec(g, 2, {"table": "HR.EMP", "op_type": "D", "op_ts": "2024-01-01 00:00:03.000000",
                    "pos": "003", "primary_keys": ["ID"], "before": {"ID": 1, "N": "b"}}),
        _rec(g, 3, {"table": "HR.EMP", "op_type": "X", "pos": "004"}),
    ]  # fmt: skip
    b = decode_records("goldengate", recs, end_offsets={g: {"0": 4}})
    assert [(c.op, c.table) for c in b.stream.changes] == [
        ("I", "hr.emp"),
        ("U", "hr.emp"),
        ("D", "hr.emp"),
    ]
    assert b.stream.changes[1].position == "2024-01-01 00:00:02.000000|002"
    assert b.stream.tables["hr.emp"].primary_key == ["id"]
    assert [x.reason.split(":")[0] for x in b.stream.bad] == [
        f"Kafka topic {g} partition 0 offset 3"
    ]


def _txn_records(txid, lsn0, n, data_off, tx_off, end=True, data_n=None):
    data = [
        _rec(T, data_off + i, _ev("c", lsn0 + i, after={"id": txid * 100 + i}, txid=txid),
             {"id": txid * 100 + i})
        for i in range(n if data_n is None else data_n)
    ]  # fmt: skip
    tx = [_rec(TX, tx_off, _schema_env(_marker("BEGIN", txid, lsn0)))]
    if end:
        tx.append(_rec(TX, tx_off + 1, _schema_env(_marker("END", txid, lsn0 + 50, n))))
    return data, tx


def test_a_transaction_split_across_batches_is_applied_whole_in_the_later_one():
    d1, t1 = _txn_records(7, 100, 2, data_off=0, tx_off=0)  # complete
    d2, t2 = _txn_records(8, 200, 3, data_off=2, tx_off=2, end=False, data_n=2)  # cut
    first = decode_records(
        "debezium", d1 + d2 + t1 + t2, end_offsets={T: {"0": 4}, TX: {"0": 3}}, transaction_topic=TX
    )
    assert [c.after["id"] for c in first.stream.changes] == [700, 701]
    # the batch ends before transaction 8: its first change (offset 2) and its BEGIN (offset 2)
    assert first.end_offsets == {T: {"0": 2}, TX: {"0": 2}}
    assert first.carried == 3 and first.waiting == ["8"] and first.transactions == 1
    # the next batch reads from there; now the rest of transaction 8 and its END are in
    d2, t2 = _txn_records(8, 200, 3, data_off=2, tx_off=2)
    second = decode_records(
        "debezium", d2 + t2, end_offsets={T: {"0": 5}, TX: {"0": 4}}, transaction_topic=TX
    )
    assert [c.after["id"] for c in second.stream.changes] == [800, 801, 802]
    assert second.end_offsets == {T: {"0": 5}, TX: {"0": 4}} and second.carried == 0


def test_end_arrived_but_not_all_events_waits():
    d, t = _txn_records(9, 300, 3, data_off=0, tx_off=0, data_n=2)  # END says 3, 2 arrived
    b = decode_records("debezium", d + t, end_offsets={T: {"0": 2}, TX: {"0": 2}},
                       transaction_topic=TX)  # fmt: skip
    assert b.stream.changes == [] and b.end_offsets == {T: {"0": 0}, TX: {"0": 0}}


@pytest.mark.parametrize("columns", [False, True])
def test_an_end_read_before_its_topic_exists_waits_for_the_events(columns):
    # Debezium's producer creates the data topic on its first record: the transaction topic
    # can hold BEGIN and END before the data topic has a partition (no end offset for it)
    d, t = _txn_records(9, 300, 2, data_off=0, tx_off=0)
    early = decode_records(
        "debezium", t, end_offsets={TX: {"0": 2}}, transaction_topic=TX, topics=[T],
        columns=columns,
    )  # fmt: skip
    assert early.stream.change_count() == 0 and early.waiting == ["9"]
    assert early.end_offsets == {TX: {"0": 0}} and early.carried == 2
    # once the events are there, the whole transaction is applied
    late = decode_records(
        "debezium", d + t, end_offsets={T: {"0": 2}, TX: {"0": 2}}, transaction_topic=TX,
        topics=[T], columns=columns,
    )  # fmt: skip
    assert [c.after["id"] for c in late.stream.changes] == [900, 901]
    assert late.end_offsets == {T: {"0": 2}, TX: {"0": 2}} and late.waiting == []


def test_without_a_transaction_topic_the_range_is_applied_as_is():
    d, _ = _txn_records(9, 300, 3, data_off=0, tx_off=0, data_n=2)
    b = decode_records("debezium", d, end_offsets={T: {"0": 2}})
    assert len(b.stream.changes) == 2 and b.end_offsets == {T: {"0": 2}}


def test_offsets_start_end_and_batch_id():
    earliest = {T: {"0": 0, "1": 5}}
    latest = {T: {"0": 10, "1": 5}}
    assert ofs.plan_start("s", None, earliest, latest) == {T: {"0": 0, "1": 5}}
    assert ofs.plan_start("s", None, earliest, latest, "latest") == {T: {"0": 10, "1": 5}}
    assert ofs.plan_start("s", None, earliest, latest, json.dumps({T: {"0": 4}})) == {
        T: {"0": 4, "1": 5}
    }
    assert ofs.plan_start("s", {T: {"0": 7}}, earliest, latest) == {T: {"0": 7, "1": 5}}
    assert ofs.plan_end({T: {"0": 0, "1": 5}}, latest, 4) == {T: {"0": 4, "1": 5}}
    assert ofs.plan_end({T: {"0": 0}}, latest) == {T: {"0": 10, "1": 5}}
    # the transaction topic: capped apart, per partition, never beyond the planned end
    ends = {T: {"0": 4}, "tx": {"0": 100}}
    assert ofs.cap_topic(ends, {T: {"0": 0}, "tx": {"0": 30}}, "tx", 8) == {
        T: {"0": 4},
        "tx": {"0": 38},
    }
    assert ofs.cap_topic(ends, {"tx": {"0": 95}}, "tx", 8)["tx"] == {"0": 100}
    a = ofs.batch_id("s", {T: {"0": 7}}, "earliest")
    assert a == ofs.batch_id("s", {T: {"0": 7}}, "latest") and a.startswith("kafka:s:")
    assert a != ofs.batch_id("s", {T: {"0": 8}}, "earliest")
    assert ofs.batch_id("s", None, "earliest") != ofs.batch_id("t", None, "earliest")


def test_offsets_deleted_by_retention_are_a_clear_error():
    with pytest.raises(ofs.KafkaDataLossError) as e:
        ofs.plan_start("orders", {T: {"0": 3}}, {T: {"0": 8}}, {T: {"0": 20}})
    assert str(e.value).startswith(
        f"Kafka source orders: topic {T} partition 0: offsets 3..7 are no longer available"
    )
    with pytest.raises(ofs.KafkaDataLossError, match="beyond the partition's end 2"):
        ofs.plan_start("orders", {T: {"0": 3}}, {T: {"0": 0}}, {T: {"0": 2}})


def test_high_water_mark_is_the_newest_committed_batch_of_the_source():
    def b(txn, source, state, end):
        return SimpleNamespace(
            txn_id=txn, source=source, state=state, details={"offsets": {"end": end}}
        )

    batches = [
        b(1, "s", "committed", {T: {"0": 3}}),
        b(3, "s", "committed", {T: {"0": 9}}),
        b(4, "s", "aborted", {T: {"0": 20}}),
        b(5, "other", "committed", {T: {"0": 30}}),
    ]
    assert ofs.high_water_mark(batches, "s")[0] == {T: {"0": 9}}
    assert ofs.high_water_mark(batches, "none") == (None, None)


def test_kafka_threshold_refuses_only_from_min_bad_records_on():
    def refused(bad: int, total: int, min_bad: int = 10, threshold: float = 0.01) -> bool:
        return bad / total > kafka_threshold(threshold, min_bad, total)

    assert not refused(1, 1)  # a micro-batch holding one poison record alone
    assert not refused(9, 9)
    assert refused(10, 10) and refused(10, 100)
    assert not refused(10, 1000)  # 1 %: the fraction still decides from 10 bad records on
    assert refused(2, 3, min_bad=2) and not refused(1, 3, min_bad=2)
    assert kafka_threshold(0.5, 10, 0) == 0.5


def _two_event_txns(n: int) -> list[KafkaRecord]:
    """``n`` source transactions of two events each, markers on TX (plus a bad marker)."""
    recs, off = [], 0
    for i in range(n):
        txid, lsn = 100 + i, 1000 + 10 * i
        recs.append(_rec(TX, 2 * i, _marker("BEGIN", txid, lsn)))
        recs.append(_rec(TX, 2 * i + 1, _marker("END", txid, lsn + 2, 2)))
        for j in range(2):
            after = {"id": i * 2 + j, "name": f"n{i}"}
            recs.append(_rec(T, off, _ev("c", lsn + j, after=after, txid=txid), {"id": 1}))
            off += 1
    recs.append(KafkaRecord(TX, 0, 2 * n, None, b"not json"))
    return recs


def test_markers_seen_decodes_the_transaction_topic_once_with_the_same_result():
    """A drain's read-ahead decodes overlapping ranges of the transaction topic: the markers
    kept between them give the same batches as decoding afresh, and a marker already kept is
    not decoded again."""
    recs = _two_event_txns(6)
    seen: dict = {}
    start = {T: {"0": 0}, TX: {"0": 0}}
    for end in ({T: {"0": 5}, TX: {"0": 13}}, {T: {"0": 12}, TX: {"0": 13}}):
        rng = [r for r in recs if start[r.topic]["0"] <= r.offset < end[r.topic]["0"]]
        fresh = decode_records("debezium", rng, end_offsets=end, transaction_topic=TX)
        kept = decode_records(
            "debezium", rng, end_offsets=end, transaction_topic=TX, markers_seen=seen
        )
        assert kept.end_offsets == fresh.end_offsets
        assert [c.source for c in kept.stream.changes] == [c.source for c in fresh.stream.changes]
        assert [b.reason for b in kept.stream.bad] == [b.reason for b in fresh.stream.bad]
        assert (kept.transactions, kept.waiting) == (fresh.transactions, fresh.waiting)
        start = kept.end_offsets
    # every marker of the two ranges decoded once, the bad one kept as bad
    assert len(seen) == 13 and sum(isinstance(v, BadRecord) for v in seen.values()) == 1
    seen[(0, 0)] = _Marker("999", begin=True)  # a kept marker is used as kept
    again = decode_records(
        "debezium",
        [r for r in recs if r.offset < 2 or r.topic == T and r.offset < 2],
        end_offsets={T: {"0": 2}, TX: {"0": 2}},
        transaction_topic=TX,
        markers_seen=seen,
    )
    assert again.waiting == ["999", "100"]


def test_read_ahead_window_gives_a_range_only_when_it_holds_all_of_it():
    recs = _two_event_txns(3)
    w = _Window({T: {"0": 0}, TX: {"0": 0}}, {T: {"0": 6}, TX: {"0": 5}})
    for r in recs:
        if r.offset < w.end[r.topic]["0"]:
            w.records.setdefault((r.topic, "0"), []).append(r)
    got = w.take({T: {"0": 2}, TX: {"0": 1}}, {T: {"0": 5}, TX: {"0": 5}})
    assert got is not None
    assert [(r.topic, r.offset) for r in got] == [(T, 2), (T, 3), (T, 4)] + [
        (TX, o) for o in range(1, 5)
    ]
    assert w.take({T: {"0": 6}, TX: {"0": 5}}, {T: {"0": 6}, TX: {"0": 5}}) == []  # empty
    assert w.take({T: {"0": 2}}, {T: {"0": 7}}) is None  # past the window's end
    assert w.take({T: {"0": 0}, "other": {"0": 0}}, {"other": {"0": 1}}) is None  # not read


def test_read_ahead_window_waits_for_its_pending_read_when_a_range_goes_past_it():
    recs = _two_event_txns(3)
    w = _Window({T: {"0": 0}}, {T: {"0": 0}})
    w.add([r for r in recs if r.topic == T and r.offset < 2], {T: {"0": 2}})
    pending: Future = Future()
    pending.set_result(({T: {"0": 6}}, [r for r in recs if r.topic == T and r.offset >= 2]))
    w.pending = pending
    assert [r.offset for r in w.take({T: {"0": 0}}, {T: {"0": 2}}) or []] == [0, 1]
    assert w.pending is pending  # not needed yet
    assert [r.offset for r in w.take({T: {"0": 1}}, {T: {"0": 4}}) or []] == [1, 2, 3]
    assert w.pending is None and w.end == {T: {"0": 6}}
    failed: Future = Future()
    failed.set_exception(RuntimeError("offsets gone"))
    w.pending = failed  # a failed read-ahead: the batch reads its range itself
    assert w.take({T: {"0": 4}}, {T: {"0": 7}}) is None and w.pending is None


def test_stream_trigger_pattern_names_topics_exactly_and_never_fails_on_a_missing_one():
    kw = {"source": "s", "bootstrap_servers": "b:9092"}
    named = trigger_pattern(
        KafkaOptions(**kw, topics=["pg.public.a-b", "x"], transaction_topic="pg.transaction")
    )
    assert re.fullmatch(named, "pg.public.a-b") and re.fullmatch(named, "pg.transaction")
    assert not re.fullmatch(named, "pgXpublic.a-b") and not re.fullmatch(named, "xy")
    pat = trigger_pattern(
        KafkaOptions(**kw, topic_pattern=r"pg\.public\..*", transaction_topic="pg.transaction")
    )
    assert re.fullmatch(pat, "pg.public.orders") and re.fullmatch(pat, "pg.transaction")
    assert not re.fullmatch(pat, "pg.other.orders")


def test_kafka_options_errors_name_the_source():
    kw = {"bootstrap_servers": "b:9092"}
    with pytest.raises(KafkaOptionsError, match="Kafka source 'orders': give either topics"):
        KafkaOptions(source="orders", **kw)
    with pytest.raises(ValueError, match="max_offsets must be at least 1"):  # a ValueError too
        KafkaOptions(source="orders", topics=["t"], max_offsets=0, **kw)
