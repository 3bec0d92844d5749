"""The Kafka phase's generator and encoder (bench/kafka.py): the change files and the Kafka
records carry the same changes, and the generator's state is what they lead to."""

from __future__ import annotations

from collections import Counter

from acidflow.sources.formats import parse_lines
from acidflow.sources.kafka import KafkaRecord, decode_records
from bench.kafka import BATCH_PREFIX, Generator, generate


def test_files_and_kafka_records_carry_the_same_changes(tmp_path):
    meta = generate(tmp_path / "data", 400, 100, seed=3, accounts=500)
    assert meta["events"] >= 400 and meta["files"] >= 4
    offsets: Counter[str] = Counter()
    records = []
    for line in (tmp_path / "data" / "produce.tsv").read_text().splitlines():
        topic, key, value = line.split("\t", 2)
        records.append(
            KafkaRecord(topic, 0, offsets[topic], key.encode() or None, value.encode() or None)
        )
        offsets[topic] += 1
    batch = decode_records(
        "debezium",
        records,
        end_offsets={t: {"0": n} for t, n in offsets.items()},
        transaction_topic=f"{BATCH_PREFIX}.transaction",
    )
    lines = []
    for f in sorted((tmp_path / "data" / "files").iterdir()):
        lines += f.read_text().splitlines()
    stream = parse_lines("debezium", lines, "all.jsonl")

    def key(c):
        return (c.table, c.op, c.position, repr(c.after), repr(c.before))

    assert not batch.stream.bad and not stream.bad and batch.carried == 0
    assert len(stream.changes) == meta["events"]
    assert sorted(map(key, batch.stream.changes)) == sorted(map(key, stream.changes))
    kinds = Counter(c.op for c in stream.changes)
    assert kinds["U"] > kinds["I"] > 0 and kinds["D"] > 0  # mostly updates


def test_generator_is_deterministic_and_keeps_its_state():
    a, b = Generator(7, 300), Generator(7, 300)
    for _ in range(50):
        ta, tb = a.txn(), b.txn()
        assert [(e.table, e.op, e.key, e.lsn) for e in ta.events] == [
            (e.table, e.op, e.key, e.lsn) for e in tb.events
        ]
    assert a.state == b.state
    assert len(a.state["pgbench_accounts"]) == len(a.live)
    lsns = [e.lsn for e in a.snapshot()]
    assert max(lsns) < 30_000_000  # the base comes before every transaction
