"""Benchmark: change records into the columnar fold's Arrow frame, per format, old and new.

No Spark, one process. The same change events (a GoldenGate upsert batch of
:mod:`bench.generate`: ``id`` bigint key, ``name``, ``age`` int, ``city``, ``updated_at``
timestamp, ``payload``; 30 % inserts, 15 % deletes) written in every format the CDC job reads --
GoldenGate, wal2json format-version 2 (transactions of 10 changes) and 1 (one document per 10
changes), Debezium JSON (bare envelope with the Kafka key) -- and the Kafka phase's Debezium
records (:mod:`bench.kafka`'s ``produce.tsv``, with its transaction topic, when that data is
there; else the same batch's Debezium values) and the GoldenGate lines as one topic's
Kafka values (GoldenGate's Kafka handler: one operation per record). Each is timed (CPU time
of the process), best of R runs:

* ``old``: today's parser (``parse_lines`` / ``decode_records``) then ``event_frame`` per table;
* ``new``: the columnar parser (``fastparse.parse_columns`` / ``decode_records(columns=True)``)
  then ``column_frame`` per table; the frames are checked equal to the old ones.

And the candidates for GoldenGate's parse alone (the choice made in
``acidflow.sources.fastparse``): msgspec to dicts (``lines.loads``) with Python column builders,
msgspec typed Structs (the envelope per line, the images per table: what is shipped), and
``pyarrow.json.read_json`` with the record's explicit schema (one thread and all threads; it
reads values with Arrow's own JSON conversion, not the row path's ``coerce``).

Run: ``python -m bench.parse [--events 100000] [--runs 3] [--kafka-data DIR]``.
Writes ``bench/results/parse.json`` (``python -m bench.report`` shows it).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from acidflow.cdc import columnar
from acidflow.sources import fastparse
from acidflow.sources.columns import ColumnStream
from acidflow.sources.formats import parse_lines
from acidflow.sources.kafka import KafkaRecord, decode_records
from acidflow.sources.lines import loads
from bench.generate import State, plan_batch, write_batch

REPO = Path(__file__).resolve().parents[1]
ALL = ("goldengate", "debezium", "wal2json")
RESULTS = REPO / "bench" / "results"
KAFKA_DATA = REPO / "build" / "bench" / "kafka_e40000_s42" / "data"
COLUMNS = [
    ("id", "bigint"),
    ("name", "string"),
    ("age", "int"),
    ("city", "string"),
    ("updated_at", "timestamp"),
    ("payload", "string"),
    ("_cdc_position", "string"),
]


def goldengate_batch(events: int, work: Path) -> list[str]:
    """A GoldenGate batch of ``events`` changes over a table of 2 x ``events`` rows."""
    state = State.initial(2 * events, 4 * events)
    plan = plan_batch(state, events, np.random.default_rng(42))
    path = work / "gg.jsonl"
    write_batch(state, plan, 1, path)
    return path.read_text().splitlines()


def as_formats(gg_lines: list[str]) -> dict[str, list[str]]:
    """The GoldenGate batch's changes in the other file formats (same values, same order)."""
    recs = [json.loads(line) for line in gg_lines]
    v2: list[str] = []
    v1: list[str] = []
    dbz: list[str] = []
    lsn = 0x1000
    for start in range(0, len(recs), 10):
        chunk = recs[start : start + 10]
        xid = 1000 + start
        v2.append(json.dumps({"action": "B", "xid": xid, "lsn": f"0/{lsn:X}"}))
        changes = []
        for j, r in enumerate(chunk):
            lsn += 1
            op = r["op_type"]
            after = {k.lower(): v for k, v in (r["after"] or {}).items()}
            before = {k.lower(): v for k, v in (r["before"] or {}).items()}
            types = {"id": "bigint", "age": "integer", "updated_at": "timestamp without time zone"}
            rec: dict[str, Any] = {
                "action": op,
                "lsn": f"0/{lsn:X}",
                "schema": "bench",
                "table": "items",
                "pk": [{"name": "id", "type": "bigint"}],
            }
            if op != "D":
                rec["columns"] = [
                    {"name": k, "type": types.get(k, "text"), "value": v} for k, v in after.items()
                ]
            if op != "I":
                rec["identity"] = [{"name": "id", "type": "bigint", "value": before["id"]}]
            v2.append(json.dumps(rec, separators=(",", ":")))
            change: dict[str, Any] = {
                "kind": {"I": "insert", "U": "update", "D": "delete"}[op],
                "schema": "bench",
                "table": "items",
                "pk": {"pknames": ["id"], "pktypes": ["bigint"]},
            }
            if op != "D":
                change["columnnames"] = list(after)
                change["columntypes"] = [types.get(k, "text") for k in after]
                change["columnvalues"] = list(after.values())
            if op != "I":
                change["oldkeys"] = {
                    "keynames": ["id"],
                    "keytypes": ["bigint"],
                    "keyvalues": [before["id"]],
                }
            changes.append(change)
            payload = {
                "op": {"I": "c", "U": "u", "D": "d"}[op],
                "before": before or None,
                "after": after or None,
                "source": {"schema": "bench", "table": "items", "lsn": lsn},
                "ts_ms": 1,
            }
            dbz.append(json.dumps({"key": {"id": (after or before)["id"]}, "value": payload}))
        lsn += 1
        v2.append(json.dumps({"action": "C", "xid": xid, "lsn": f"0/{lsn:X}"}))
        v1.append(json.dumps({"xid": xid, "nextlsn": f"0/{lsn:X}", "change": changes}))
    return {"goldengate": gg_lines, "wal2json-v2": v2, "wal2json-v1": v1, "debezium": dbz}


def kafka_records(kafka_data: Path | None, dbz_lines: list[str]) -> tuple[list, dict, str | None]:
    """``(records, end offsets, transaction topic)``: the Kafka phase's records when its data
    is there, else the Debezium lines as values of one topic."""
    records = []
    offsets: Counter[str] = Counter()
    if kafka_data is not None and (kafka_data / "produce.tsv").exists():
        for line in (kafka_data / "produce.tsv").read_text().splitlines():
            topic, key, value = line.split("\t", 2)
            records.append(
                KafkaRecord(topic, 0, offsets[topic], key.encode() or None, value.encode() or None)
            )
            offsets[topic] += 1
        end = {t: {"0": n} for t, n in offsets.items()}
        return records, end, "bench.transaction"
    for i, line in enumerate(dbz_lines):
        rec = json.loads(line)
        value = json.dumps(rec["value"]).encode()
        records.append(
            KafkaRecord("bench.bench.items", 0, i, json.dumps(rec["key"]).encode(), value)
        )
    return records, {"bench.bench.items": {"0": len(records)}}, None


def best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """Best CPU time of ``runs`` calls (this process: on a shared machine the CPU time is what
    the code costs, the wall time what the neighbours leave; the code measured is one thread
    but for pyarrow's threaded reader, whose figure is the CPU of all its threads) and the last
    result."""
    times, out = [], None
    for _ in range(runs):
        out = None
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
    return min(times), out


def _columns_of(stream: Any, table: str) -> tuple[list[tuple[str, str]], list[str]]:
    if table == "bench.items":
        return COLUMNS, ["id"]
    src = stream.tables[table]
    return [*src.columns.items(), ("_cdc_position", "string")], list(src.primary_key)


def old_frames(stream: Any) -> dict[str, Any]:
    by: dict[str, list] = {}
    for ch in stream.changes:
        by.setdefault(ch.table, []).append(ch)
    return {t: columnar.event_frame(chs, *_columns_of(stream, t)) for t, chs in by.items()}


def new_frames(stream: Any) -> dict[str, Any]:
    assert isinstance(stream, ColumnStream), "the columnar parser did not take the input"
    return {
        t: columnar.column_frame(tc, *_columns_of(stream, t)) for t, tc in stream.frames.items()
    }


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        (a[t] is None) == (b[t] is None)
        and (a[t] is None or (a[t].rows.equals(b[t].rows) and a[t].keys.equals(b[t].keys)))
        for t in a
    )


def measure_format(fmt: str, lines: list[str], runs: int) -> dict[str, Any]:
    parser = fmt.split("-")[0]
    n = sum(1 for line in lines if line.strip())
    old_p, ref = best(lambda: parse_lines(parser, lines, "f.jsonl"), runs)
    new_p, got = best(lambda: fastparse.parse_columns(parser, lines, "f.jsonl", ALL), runs)
    old_f, a = best(lambda: old_frames(ref), runs)
    new_f, b = best(lambda: new_frames(got), runs)
    events = len(ref.changes)
    return {
        "format": fmt,
        "lines": n,
        "events": events,
        "old_parse_s": old_p,
        "new_parse_s": new_p,
        "old_frame_s": old_f,
        "new_frame_s": new_f,
        "old_events_per_s": events / (old_p + old_f),
        "new_events_per_s": events / (new_p + new_f),
        "speedup": (old_p + old_f) / (new_p + new_f),
        "frames_equal": same(a, b),
    }


def goldengate_kafka_records(gg_lines: list[str]) -> tuple[list, dict]:
    """``(records, end offsets)``: the GoldenGate lines as the values of one topic (what
    GoldenGate's Kafka handler writes: one operation per record, no transaction topic)."""
    topic = "ogg.BENCH.ITEMS"
    records = [KafkaRecord(topic, 0, i, None, line.encode()) for i, line in enumerate(gg_lines)]
    return records, {topic: {"0": len(records)}}


def measure_kafka(
    records: list, end: dict, txn: str | None, runs: int, fmt: str = "debezium"
) -> dict[str, Any]:
    def old() -> Any:
        return decode_records(fmt, records, end_offsets=end, transaction_topic=txn)

    def new() -> Any:
        return decode_records(fmt, records, end_offsets=end, transaction_topic=txn, columns=True)

    old_p, ref = best(old, runs)
    new_p, got = best(new, runs)
    old_f, a = best(lambda: old_frames(ref.stream), runs)
    new_f, b = best(lambda: new_frames(got.stream), runs)
    events = len(ref.stream.changes)
    return {
        "format": f"{fmt}-kafka",
        "records": len(records),
        "events": events,
        "carried": ref.carried,
        "old_parse_s": old_p,
        "new_parse_s": new_p,
        "old_frame_s": old_f,
        "new_frame_s": new_f,
        "old_events_per_s": events / (old_p + old_f),
        "new_events_per_s": events / (new_p + new_f),
        "speedup": (old_p + old_f) / (new_p + new_f),
        "frames_equal": same(a, b)
        and (got.end_offsets, got.carried) == (ref.end_offsets, ref.carried),
    }


def candidates(gg_lines: list[str], runs: int) -> dict[str, float]:
    """GoldenGate parse alone, events/s per candidate (the same lines)."""
    n = len(gg_lines)
    data = "\n".join(gg_lines).encode()

    def dicts() -> Any:  # msgspec dicts + Python column builders
        recs = list(map(loads, gg_lines))
        afters = [r["after"] for r in recs]
        return {c: [a.get(c.upper()) if a else None for a in afters] for c, _ in COLUMNS[:-1]}

    image = pa.struct(
        [
            ("ID", pa.int64()),
            ("NAME", pa.string()),
            ("AGE", pa.int64()),
            ("CITY", pa.string()),
            ("UPDATED_AT", pa.string()),
            ("PAYLOAD", pa.string()),
        ]
    )
    schema = pa.schema(
        [
            ("table", pa.string()),
            ("op_type", pa.string()),
            ("op_ts", pa.string()),
            ("pos", pa.string()),
            ("primary_keys", pa.list_(pa.string())),
            ("before", pa.struct([("ID", pa.int64())])),
            ("after", image),
        ]
    )
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")

    def arrow(threads: bool) -> Callable[[], Any]:
        read = pj.ReadOptions(use_threads=threads, block_size=1 << 22)
        return lambda: pj.read_json(io.BytesIO(data), read_options=read, parse_options=opts)

    out = {}
    for name, fn in (
        ("msgspec dicts + Python column builders", dicts),
        (
            "msgspec typed Structs (shipped)",
            lambda: fastparse.parse_columns("goldengate", gg_lines, "f"),
        ),
        ("pyarrow.json.read_json, 1 thread", arrow(False)),
        ("pyarrow.json.read_json, threads", arrow(True)),
    ):
        seconds, _ = best(fn, runs)
        out[name] = n / seconds
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kafka-data", type=Path, default=KAFKA_DATA)
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench" / "parse")
    ap.add_argument("--out", type=Path, default=RESULTS / "parse.json")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    gg = goldengate_batch(a.events, a.work)
    formats = as_formats(gg)
    rows = [measure_format(fmt, lines, a.runs) for fmt, lines in formats.items()]
    records, end, txn = kafka_records(a.kafka_data, formats["debezium"])
    rows.append(measure_kafka(records, end, txn, a.runs))
    gg_records, gg_end = goldengate_kafka_records(gg)
    rows.append(measure_kafka(gg_records, gg_end, None, a.runs, "goldengate"))
    doc = {
        "command": "python -m bench.parse "
        + " ".join(f"--{k} {v}" for k, v in (("events", a.events), ("runs", a.runs))),
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "load_average": _load()},
        "kafka_source": "bench.kafka produce.tsv" if txn else "the batch's Debezium values",
        "formats": rows,
        "candidates": candidates(gg, a.runs),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=2) + "\n")
    for r in rows:
        print(
            f"{r['format']:15} {r['events']:>8,} events  old {r['old_events_per_s']:>10,.0f}/s"
            f"  new {r['new_events_per_s']:>10,.0f}/s  x{r['speedup']:.2f}"
            f"  (parse {r['old_parse_s']:.2f} -> {r['new_parse_s']:.2f} s, frame"
            f" {r['old_frame_s']:.2f} -> {r['new_frame_s']:.2f} s) equal={r['frames_equal']}"
        )
    for name, rate in doc["candidates"].items():
        print(f"  {name:42} {rate:>10,.0f} events/s")
    print(f"wrote {a.out}")


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


if __name__ == "__main__":
    main()
