"""Where the Kafka phase's batch time goes (bench/NOTES.md, "Kafka phase"): one process, one
SparkSession, on the data of a Kafka phase run (``build/bench/kafka_e<E>_s<seed>/data``).

``decode``: cProfile of the Kafka decoder on the first capped batch's records (the data records
under ``max_offsets`` plus the transaction topic as far as ``apply_kafka``'s first batch reads it).

``batches``: a broker of its own, the records produced, then ``drain`` with the time of each
batch's parts (consumer, the read-ahead and the batches' own reads, ``decode_records``,
``apply_stream``), then the file path's batches on the same data (a warm JVM: compare the
steady batches, not the first).

``ranges``: a broker of its own, the records produced, then the whole topics read as five
consecutive offset ranges by :func:`acidflow.cdc.kafka.read_range`, three times each with
the consumers' ``fetch.max.wait.ms`` at Kafka's default (500 ms) and at acidflow's (10 ms):
the last range ends at every partition's log end.

Run: ``PYTHONPATH=. python -m bench.kafka_profile decode DATA``,
``PYTHONPATH=. python -m bench.kafka_profile batches DATA WORK`` or
``PYTHONPATH=. python -m bench.kafka_profile ranges DATA WORK``.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import pstats
import shutil
import time
from collections import Counter, defaultdict
from pathlib import Path

from acidflow.cdc import kafka as ck
from acidflow.cdc import offsets as ofs
from acidflow.cdc.apply import apply_file, apply_path
from acidflow.cdc.files import change_files
from acidflow.sources import kafka as sk
from bench import kafka as bk


def _records(data: Path) -> list[sk.KafkaRecord]:
    offsets: Counter[str] = Counter()
    out = []
    for line in (data / "produce.tsv").read_text().splitlines():
        topic, key, value = line.split("\t", 2)
        out.append(
            sk.KafkaRecord(topic, 0, offsets[topic], key.encode() or None, value.encode() or None)
        )
        offsets[topic] += 1
    return out


def decode(data: Path) -> None:
    meta = json.loads((data / "meta.json").read_text())
    records = _records(data)
    counts = Counter(r.topic for r in records)
    txn_topic = f"{bk.BATCH_PREFIX}.transaction"
    start = {t: {"0": 0} for t in counts}
    end = ofs.plan_end(
        start, {t: {"0": n} for t, n in counts.items()}, meta["per_file"], frozenset([txn_topic])
    )
    end = ofs.cap_topic(end, start, txn_topic, 2 * meta["per_file"])
    first = [r for r in records if r.offset < end[r.topic]["0"]]
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    b = sk.decode_records("debezium", first, end_offsets=end, transaction_topic=txn_topic)
    prof.disable()
    print(
        f"first batch: {len(first)} records, {len(b.stream.changes)} changes, "
        f"{len(b.waiting)} waiting transactions; decode {time.perf_counter() - t0:.2f} s "
        "(under cProfile)"
    )
    pstats.Stats(prof).sort_stats("cumulative").print_stats(8)


def batches(data: Path, work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    timing: dict[str, float] = defaultdict(float)

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timing[name] += time.perf_counter() - t0

        return wrapper

    ck.read_range = timed("read_range", ck.read_range)
    ck.decode_records = timed("decode_records", ck.decode_records)
    ck.apply_stream = timed("apply_stream", ck.apply_stream)
    ck._Consumer.offsets = timed("consumer_offsets", ck._Consumer.offsets)
    ck._Window.read = classmethod(timed("read_ahead", ck._Window.read.__func__))
    meta = json.loads((data / "meta.json").read_text())
    artifacts = bk.KafkaArtifacts.locate()
    broker = bk.start_kafka(work / "broker", artifacts=artifacts)
    try:
        bk.produce_file(data / "produce.tsv", broker.bootstrap_servers, artifacts, work / "p.log")
        spark, _ = bk._spark()
        for name in ("file", "kafka"):
            apply_path(spark, bk._catalog(work, name), str(data / "snapshot"), bk._options())
        catalog = bk._catalog(work, "kafka")
        kopts = bk._kopts(bk.BATCH_PREFIX, broker.bootstrap_servers, meta["per_file"])
        per: list[dict] = []
        mark = {"t": time.perf_counter(), "timing": dict(timing)}

        def on_commit(r):
            now, before = time.perf_counter(), mark["timing"]
            per.append(
                {"total": round(now - mark["t"], 2)}
                | {"events": sum(s.get("events", 0) for s in r.tables.values())}
                | {k: round(v - before.get(k, 0), 2) for k, v in timing.items()}
            )
            mark.update(t=now, timing=dict(timing))

        t0 = time.perf_counter()
        ck.drain(spark, catalog, bk._options(), kopts, on_commit=on_commit)
        kafka_s = time.perf_counter() - t0
        fcat, fper = bk._catalog(work, "file"), []
        t0 = time.perf_counter()
        for f in change_files(str(data / "files")):
            b0 = time.perf_counter()
            apply_file(spark, fcat, f, bk._options())
            fper.append(round(time.perf_counter() - b0, 2))
        file_s = time.perf_counter() - t0
        out = {"kafka_s": kafka_s, "file_s": file_s}
        print(json.dumps(out | {"kafka_batches": per, "file_batches": fper}, indent=1))
    finally:
        broker.stop()


def ranges(data: Path, work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    meta = json.loads((data / "meta.json").read_text())
    artifacts = bk.KafkaArtifacts.locate()
    broker = bk.start_kafka(work / "broker", artifacts=artifacts)
    try:
        bk.produce_file(data / "produce.tsv", broker.bootstrap_servers, artifacts, work / "p.log")
        spark, _ = bk._spark()
        kopts = bk._kopts(bk.BATCH_PREFIX, broker.bootstrap_servers, meta["per_file"])
        latest = ck._Look.take(spark, kopts).latest

        def cut(i: int) -> dict:
            return {t: {p: o * i // 5 for p, o in ps.items()} for t, ps in latest.items()}

        out: dict[str, list[list[float]]] = {}
        for wait in ("500", ck.BATCH_FETCH_MAX_WAIT_MS, "500", ck.BATCH_FETCH_MAX_WAIT_MS):
            ko = dataclasses.replace(kopts, kafka={"fetch.max.wait.ms": wait})
            runs = out.setdefault(f"fetch.max.wait.ms={wait}", [])
            for _ in range(3):
                secs = []
                for i in range(5):
                    t0 = time.perf_counter()
                    ck.read_range(spark, ko, cut(i), cut(i + 1))
                    secs.append(round(time.perf_counter() - t0, 2))
                runs.append(secs)
        print(json.dumps(out, indent=1))
    finally:
        broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["decode", "batches", "ranges"])
    ap.add_argument("data", type=Path)
    ap.add_argument("work", type=Path, nargs="?", default=Path("build/bench/kafka_profile"))
    a = ap.parse_args()
    if a.what == "decode":
        decode(a.data)
    elif a.what == "ranges":
        ranges(a.data, a.work)
    else:
        batches(a.data, a.work)


if __name__ == "__main__":
    main()
