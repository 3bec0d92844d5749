"""Turn ``bench/results/bench_n*_k*.json`` (written by :mod:`bench.run`) into ``RESULTS.md``:
the machine, the versions, the commands, every run, medians and ranges, and each target of the
benchmark issue with its measured ratio.

Run: ``python -m bench.report [--results DIR] [--out bench/RESULTS.md] [--notes FILE]``
(``--notes``: a Markdown file appended as the profile / changes section).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("acidflow", "delta", "duckdb", "spark-cow")
LABEL = {
    "acidflow": "acidflow upsert (merge-on-read)",
    "delta": "delta-rs MERGE",
    "duckdb": "DuckDB copy-on-write",
    "spark-cow": "Spark copy-on-write (ORC)",
    "spark-orc": "plain Spark ORC",
}
#: the benchmark targets (ratios measured side by side in one run)
GROWTH_NS = (1_000_000, 3_000_000, 10_000_000)
GROWTH_K = 10_000
GROWTH_MAX = 1.3
READ_MAX = 1.2
COMPACT_MAX = 1.3
LOAD_MAX = 1.5
DELTA_MAX = 0.5
DUCKDB_MAX = 0.7
S3_MAX = 2.0
KAFKA_MAX = 1.2  # Kafka batch path apply time / file path apply time, the same events
KAFKA_P95_MAX = 20.0  # seconds, streaming at 1,000 events/s offered, 5 s trigger
FRESH_DS_MAX = 1.5  # format("acid") in a fresh process / plain Spark ORC scan
KEY_PREDICATE_MAX = 0.2  # a read touching 0.1 % of the rows by a key predicate / the full read
CONNECT_MAX = 0.3  # an acid_cdc task through Spark Connect / the same through spark-submit


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def span(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}" if values else "–"


def work(runs: list[dict]) -> list[float]:
    """The measured operation of each run, seconds (JVM start excluded)."""
    return [r["work"] for r in runs]


def all_correct(runs: list[dict]) -> bool:
    """No checked run was wrong, and at least one was checked."""
    checks = [r["check"] for r in runs if "check" in r and not r["check"].get("skipped")]
    return bool(checks) and all(c.get("correct") for c in checks)


def op_peak(runs: list[dict]) -> float | None:
    """Peak MB of the operation itself: over the runs whose result was not read back (a
    checked run's process also holds the whole result and the expected table); None when
    every run was checked."""
    plain = [r["peak_rss_mb"] or 0 for r in runs if "check" not in r or r["check"].get("skipped")]
    return max(plain) if plain else None


def load(results: Path) -> list[dict]:
    docs = [json.loads(p.read_text()) for p in sorted(results.glob("bench_n*_k*.json"))]
    return sorted(docs, key=lambda d: (d["rows"], d["events"]))


def load_extra(results: Path, pattern: str) -> list[dict]:
    """The documents of the extra phases (``load_n*.json``, ``s3_n*_k*.json``) by size."""
    docs = [json.loads(p.read_text()) for p in sorted(results.glob(pattern))]
    return sorted(docs, key=lambda d: (d["rows"], d.get("events", 0)))


def size_section(d: dict) -> list[str]:
    n, k = d["rows"], d["events"]
    out = [
        f"### N = {n:,} rows, K = {k:,} events per batch ({100 * k / n:g} %)",
        "",
        (
            "**Partial**: the run was stopped before it finished (rebuilt from its logs by "
            "`bench.run.doc_from_logs`); phases without rows below were not reached. "
            if d.get("partial")
            else ""
        )
        + f"{d['runs']} runs; started {d.get('started', '?')}"
        + (f", {d['seconds']:.0f} s in all. " if d.get("seconds") else ". ")
        + "Times in seconds: *work* is the operation itself (reading the change file to the "
        "committed result); *JVM* is the SparkSession start, reported apart; *peak* is the "
        "largest summed RSS of the step's process tree (driver, JVM, Python workers) over "
        "the runs that did not read their result back for the check.",
        "",
        "| upsert of batch 1 | work median | work range | JVM start | wall median | peak MB"
        " | correct | runs (work) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in TOOLS:
        runs = d["upsert"].get(t) or []
        if not runs:
            continue
        out.append(
            f"| {LABEL[t]} | {med(work(runs)):.2f} | {span(work(runs))} | "
            f"{med([r.get('jvm_start', 0) for r in runs]):.1f} | "
            f"{med([r['wall'] for r in runs]):.1f} | "
            f"{op_peak(runs) or float('nan'):.0f} | "
            f"{'yes' if all_correct(runs) else '**NO**'} | "
            + ", ".join(f"{w:.2f}" for w in work(runs))
            + " |"
        )
    batches = d.get("acidflow_batches") or []
    if batches:
        out += [
            "",
            f"acidflow, batches 1..{len(batches)} applied in turn (work, s): "
            + ", ".join(f"{r['work']:.2f}" for r in batches)
            + f"; every checked state correct: "
            f"{'yes' if all_correct(batches) else '**NO**'}.",
        ]
    if d.get("read"):
        out += [
            "",
            "| snapshot read (all rows, all columns) | acidflow `read_table` median | "
            "range | data source median | range | plain Spark ORC median | range | "
            "ratio read_table | ratio data source | correct |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for b, r in sorted(d["read"].items(), key=lambda kv: int(kv[0])):
            a, s = work(r["acidflow"]), work(r["spark-orc"])
            ds = work(r.get("acidflow-ds") or [])
            ok = all_correct(r["acidflow"]) and (not ds or all_correct(r["acidflow-ds"]))
            out.append(
                f"| after {b} batch{'es' if b != '1' else ''} | {med(a):.2f} | {span(a)}"
                f" | {med(ds):.2f} | {span(ds)} | {med(s):.2f} | {span(s)} | "
                f"{med(a) / med(s):.2f}× | {med(ds) / med(s):.2f}× | "
                f"{'yes' if ok else '**NO**'} |"
            )
    c = d.get("compact") or {}
    if c.get("acidflow"):
        a, s = work(c["acidflow"]), work(c["spark-orc"])
        out += [
            "",
            "| major compaction after the last batch | acidflow median | range | "
            "plain Spark ORC rewrite median | range | ratio | correct |",
            "|---|---|---|---|---|---|---|",
            f"| base + {len(batches)} deltas + {len(batches)} delete deltas | {med(a):.2f} | "
            f"{span(a)} | {med(s):.2f} | {span(s)} | {med(a) / med(s):.2f}× | "
            f"{'yes' if all_correct(c['acidflow']) else '**NO**'} |",
        ]
    out.append("")
    return out


def load_kafka(results: Path) -> list[dict]:
    """The Kafka phase's documents (``kafka_e*.json``, :mod:`bench.kafka`) by event count."""
    docs = [json.loads(p.read_text()) for p in sorted(results.glob("kafka_e*.json"))]
    return sorted(docs, key=lambda d: d["events"])


def kafka_targets(kafka: list[dict]) -> list[str]:
    """The Kafka rows of the targets table."""
    rows = []
    for d in kafka:
        f, k, s = d["file"], d["kafka"], d["stream"]
        ratio = k["work"] / f["work"]
        rows.append(
            f"| Kafka path ≤ {KAFKA_MAX}× file path apply time ({d['events']:,} Debezium "
            f"events, batches of {d['meta']['per_file']:,}) | {k['work']:.1f} s vs "
            f"{f['work']:.1f} s = {ratio:.2f}× | {'yes' if ratio <= KAFKA_MAX else 'no'} |"
        )
        rows.append(
            f"| p95 latency at {d['rate']:,.0f} events/s offered ≤ {KAFKA_P95_MAX:g} s "
            f"({d['trigger']:g} s trigger, {d['duration']:g} s) | p95 "
            f"{s['latency_p95']:.1f} s (p50 {s['latency_p50']:.1f} s) | "
            f"{'yes' if s['latency_p95'] <= KAFKA_P95_MAX else 'no'} |"
        )
    return rows


def spark_native_targets(native: list[dict], docs: list[dict]) -> list[str]:
    """The Spark-native read rows of the targets table: the warm-session reads of
    ``spark_native_n*.json`` (:mod:`bench.datasource`) and ``format("acid")`` in a fresh
    process (the ``read-ds`` steps of the size documents)."""
    rows = []
    labels = (
        ("read_table", "`read_table`, arrow executor (`ACIDFLOW_SPARK_READER=arrow`)"),
        ("datasource", '`format("acid")`'),
        ("engine", "`read_table`, engine executor (`ACIDFLOW_SPARK_READER=engine`)"),
        ("jvm", "`read_table`, JVM reader (`ACIDFLOW_SPARK_READER=jvm`)"),
    )
    for d in native:
        ratios = d["vs_plain_orc"]
        plain = d["plain_orc_median_s"]
        for key, label in labels:
            if key not in ratios:  # documents of runs before the executor existed
                continue
            ratio = ratios[key]
            rows.append(
                f"| snapshot read in a warm session, {d['deltas']} deltas of 1 % churn, "
                f"N={d['rows']:,}: {label} ≤ {READ_MAX}× Spark ORC scan | "
                f"{d[key + '_median_s']:.2f} s vs {plain:.2f} s = {ratio:.2f}× | "
                f"{'yes' if ratio <= READ_MAX else 'no'} |"
            )
    for d in docs:
        r = (d.get("read") or {}).get(str(d["batches"])) or {}
        if r.get("acidflow-ds") and r.get("spark-orc"):
            ratio = med(work(r["acidflow-ds"])) / med(work(r["spark-orc"]))
            rows.append(
                f"| snapshot read in a fresh process, {d['batches']} deltas of "
                f"{100 * d['events'] / d['rows']:g} % churn, N={d['rows']:,}: "
                f'`format("acid")` ≤ {FRESH_DS_MAX}× Spark ORC scan | {ratio:.2f}× | '
                f"{'yes' if ratio <= FRESH_DS_MAX else 'no'} |"
            )
    return rows


def pushdown_connect_targets(pushdown: list[dict], connect: list[dict]) -> list[str]:
    """The key-predicate rows (``pushdown_n*.json``, :mod:`bench.pushdown`) and the Spark
    Connect row (``connect_e*.json``, :mod:`bench.connect`) of the targets table."""
    rows = []
    for d in pushdown:
        for key, label in (("arrow", "`read_table` (pyarrow)"), ("spark", '`format("acid")`')):
            if key not in d:
                continue
            r = d[key]
            ratio = r["filtered_median_s"] / r["full_median_s"]
            rows.append(
                f"| key predicate selecting {d['selected_rows']:,} of {d['rows']:,} rows "
                f"({d['stripes']} stripes), {label} ≤ {KEY_PREDICATE_MAX}× the full read | "
                f"{r['filtered_median_s']:.2f} s vs {r['full_median_s']:.2f} s = {ratio:.2f}× | "
                f"{'yes' if ratio <= KEY_PREDICATE_MAX else 'no'} |"
            )
    for d in connect:
        m = d["median_seconds"]
        ratio = m["connect"] / m["submit"]
        rows.append(
            f"| `acid_cdc` task applying one {d['events_per_file']}-event file through Spark "
            f"Connect (warm server) ≤ {CONNECT_MAX}× spark-submit | {m['connect']:.2f} s vs "
            f"{m['submit']:.2f} s = {ratio:.2f}× | {'yes' if ratio <= CONNECT_MAX else 'no'} |"
        )
    return rows


def kafka_section(kafka: list[dict]) -> list[str]:
    """The Kafka phase: file path vs Kafka path on the same events, streaming latency, decode
    rates."""
    if not kafka:
        return []
    out = [
        "### Kafka phase",
        "",
        "`bench/kafka.py`: pgbench-like source transactions over the four pgbench tables "
        "(mostly update account + teller + branch and insert history; some account inserts "
        "and deletes), encoded once as Debezium PostgreSQL records (transaction metadata, "
        "schemaless JSON, tombstones) and written both as change files and into a Kafka "
        "4.3.0 broker. *Apply* is from the first read to the last commit, JVM start apart; "
        "both paths start from the same base and are checked against the generator's final "
        "state. Latency: commit time of the batch that applied an event (batch ledger) minus "
        "its produce time (`source.ts_ms`).",
        "",
        "| events | path | apply s | events/s | batches | JVM start s | peak MB | correct |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in kafka:
        for name, label in (("file", "file path (`apply_path`)"), ("kafka", "Kafka (`drain`)")):
            r = d[name]
            out.append(
                f"| {d['events']:,} | {label} | {r['work']:.1f} | {r['events_per_s']:,.0f} | "
                f"{r['batches']} | {r.get('jvm_start', 0):.1f} | {r['peak_rss_mb'] or 0:.0f} | "
                f"{'yes' if r['check'].get('correct') else '**NO**'} |"
            )
    out += [
        "",
        "| offered events/s | offered for s | trigger s | latency p50 s | p95 s | max s | "
        "sustained events/s | apply capacity events/s | micro-batches | peak MB | correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in kafka:
        s = d["stream"]
        out.append(
            f"| {s['achieved_offered_rate']:,.0f} (asked {d['rate']:,.0f}) | "
            f"{s['produce_seconds']:.0f} | {d['trigger']:g} | {s['latency_p50']:.1f} | "
            f"{s['latency_p95']:.1f} | {s['latency_max']:.1f} | "
            f"{s['sustained_events_per_s']:,.0f} | {s['apply_capacity_events_per_s']:,.0f} | "
            f"{s['micro_batches']} | {s['peak_rss_mb'] or 0:.0f} | "
            f"{'yes' if s['check'].get('correct') else '**NO**'} |"
        )
    out += [
        "",
        "Sustained: events applied / (last commit − first produce); apply capacity: events / "
        "the batches' own apply seconds (what the stream could take with no idle time).",
        "",
        "| events | Kafka decoder (`decode_records`) events/s | file parser (`parse_lines`) "
        "events/s |",
        "|---|---|---|",
    ]
    for d in kafka:
        p = d["parse"]
        out.append(
            f"| {d['events']:,} | {p['kafka_decode_events_per_s']:,.0f} | "
            f"{p['file_parse_events_per_s']:,.0f} |"
        )
    return out + [""]


def targets(docs: list[dict], loads: list[dict] = (), s3: list[dict] = ()) -> list[str]:
    """The benchmark targets table: one row per target with the measured ratio."""
    by = {(d["rows"], d["events"]): d for d in docs}
    rows = ["| target | measured | met |", "|---|---|---|"]

    def upsert_med(d, t):
        return med(work(d["upsert"].get(t) or []))

    def met(ok: bool) -> str:
        return "yes" if ok else "no"

    big = by.get((10_000_000, 100_000))
    if big:
        a, dl, dk = (upsert_med(big, t) for t in ("acidflow", "delta", "duckdb"))
        rows.append(
            f"| upsert N=10M, K=100k ≤ {DELTA_MAX}× delta-rs MERGE | {a:.2f} s vs "
            f"{dl:.2f} s = {a / dl:.2f}× | {met(a <= DELTA_MAX * dl)} |"
        )
        rows.append(
            f"| upsert N=10M, K=100k ≤ {DUCKDB_MAX}× DuckDB copy-on-write | {a:.2f} s "
            f"vs {dk:.2f} s = {a / dk:.2f}× | {met(a <= DUCKDB_MAX * dk)} |"
        )
    small, large = by.get((GROWTH_NS[0], GROWTH_K)), by.get((GROWTH_NS[-1], GROWTH_K))
    if small and large:
        a1, a10 = upsert_med(small, "acidflow"), upsert_med(large, "acidflow")
        rows.append(
            f"| upsert K=10k grows ≤ {GROWTH_MAX}× from N=1M to N=10M | {a1:.2f} s → "
            f"{a10:.2f} s = {a10 / a1:.2f}× | {met(a10 <= GROWTH_MAX * a1)} |"
        )
    for d in docs:
        last = str(d["batches"])
        if d.get("read", {}).get(last):
            r = d["read"][last]
            ratio = med(work(r["acidflow"])) / med(work(r["spark-orc"]))
            rows.append(
                f"| snapshot read, {last} deltas of {100 * d['events'] / d['rows']:g} %"
                f" churn, N={d['rows']:,} ≤ {READ_MAX}× Spark ORC scan | {ratio:.2f}× | "
                f"{met(ratio <= READ_MAX)} |"
            )
        if (d.get("compact") or {}).get("acidflow") and d["rows"] >= 10_000_000:
            c = d["compact"]
            ratio = med(work(c["acidflow"])) / med(work(c["spark-orc"]))
            rows.append(
                f"| major compaction N={d['rows']:,} ≤ {COMPACT_MAX}× Spark ORC rewrite"
                f" | {ratio:.2f}× | {met(ratio <= COMPACT_MAX)} |"
            )
    for ld in loads:
        a, s = med(work(ld["acidflow"])), med(work(ld["spark-orc"]))
        rows.append(
            f"| initial load of N={ld['rows']:,} rows ≤ {LOAD_MAX}× a plain Spark ORC "
            f"write | {a:.2f} s vs {s:.2f} s = {a / s:.2f}× | {met(a <= LOAD_MAX * s)} |"
        )
    for d in s3:
        for step in ("upsert", "read"):
            a, loc = med(work(d["s3"][step])), med(work(d["local"][step]))
            rows.append(
                f"| {step} on S3 (moto) N={d['rows']:,} K={d['events']:,} ≤ {S3_MAX}× "
                f"local disk | {a:.2f} s vs {loc:.2f} s = {a / loc:.2f}× | "
                f"{met(a <= S3_MAX * loc) if step == 'upsert' else '(reported)'} |"
            )
    peaks: list[float] = []
    for d in docs:
        if d["rows"] == 10_000_000:
            groups = [
                d["upsert"].get("acidflow") or [],
                d.get("acidflow_batches") or [],
                *[rr["acidflow"] for rr in (d.get("read") or {}).values()],
                *[rr.get("acidflow-ds") or [] for rr in (d.get("read") or {}).values()],
                (d.get("compact") or {}).get("acidflow") or [],
            ]
            peaks += [p for p in (op_peak(g) for g in groups if g) if p is not None]
    peaks += [
        p
        for ld in loads
        if ld["rows"] == 10_000_000
        for p in [op_peak(ld["acidflow"])]
        if p is not None
    ]
    if peaks:
        rows.append(
            f"| peak memory < 4 GB at N=10M, every acidflow load, upsert, read and "
            f"compaction | {max(peaks) / 1024:.2f} GB | {met(max(peaks) < 4096)} |"
        )
    return rows


def growth_section(docs: list[dict]) -> list[str]:
    """The key-index growth series: acidflow's upsert of K = 10k events at each N, with the
    other tools on the same files."""
    series = [d for d in docs if d["events"] == GROWTH_K and d["rows"] in GROWTH_NS]
    if len(series) < 2:
        return []
    out = [
        f"### Growth series: upsert of K = {GROWTH_K:,} events as N grows",
        "",
        "Same generated files for every tool; work medians in seconds, and each tool's "
        f"growth against its own N = {series[0]['rows']:,} time.",
        "",
        "| tool | " + " | ".join(f"N = {d['rows']:,}" for d in series) + " | growth |",
        "|---|" + "---|" * (len(series) + 1),
    ]
    for t in TOOLS:
        meds = [med(work(d["upsert"].get(t) or [])) for d in series]
        if any(m != m for m in meds):  # NaN: the tool did not run at some N
            continue
        out.append(
            f"| {LABEL[t]} | "
            + " | ".join(f"{m:.2f}" for m in meds)
            + f" | {meds[-1] / meds[0]:.2f}× |"
        )
    return out + [""]


def load_section(loads: list[dict]) -> list[str]:
    """Initial load: acidflow's INSERT OVERWRITE of N rows next to a plain Spark ORC write."""
    if not loads:
        return []
    out = [
        "### Initial load",
        "",
        "acidflow: `Transaction.insert_overwrite` of the N base rows (with the stored "
        "`_cdc_position`) into a fresh table bucketed by `id` (4 buckets); plain Spark ORC: "
        "the same DataFrame written with `df.write.orc` (zlib, 4 files). Work in seconds.",
        "",
        "| N | acidflow median | range | plain Spark ORC median | range | ratio | "
        "acidflow peak MB | correct |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ld in loads:
        a, s = work(ld["acidflow"]), work(ld["spark-orc"])
        ok = all_correct(ld["acidflow"]) and all_correct(ld["spark-orc"])
        out.append(
            f"| {ld['rows']:,} | {med(a):.2f} | {span(a)} | {med(s):.2f} | {span(s)} | "
            f"{med(a) / med(s):.2f}× | {op_peak(ld['acidflow']) or float('nan'):.0f} | "
            f"{'yes' if ok else '**NO**'} |"
        )
    return out + [""]


def s3_section(s3: list[dict]) -> list[str]:
    """acidflow with the warehouse on S3 (a moto server on loopback) next to local disk."""
    if not s3:
        return []
    out = [
        "### Object storage: S3 (moto server on 127.0.0.1) vs local disk",
        "",
        "The same acidflow steps on the same files, once with the warehouse on local disk "
        "and once on `s3://` served by moto in server mode on loopback (no network "
        "latency: the ratio shows request overhead, not a real store's). Work in seconds.",
        "",
        "| N | K | step | local median | S3 median | ratio | correct |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in s3:
        for step in ("upsert", "read"):
            a, loc = work(d["s3"][step]), work(d["local"][step])
            ok = all_correct(d["s3"][step]) and all_correct(d["local"][step])
            out.append(
                f"| {d['rows']:,} | {d['events']:,} | {step} | {med(loc):.2f} | "
                f"{med(a):.2f} | {med(a) / med(loc):.2f}× | {'yes' if ok else '**NO**'} |"
            )
    return out + [""]


def load_parse(results: Path) -> dict | None:
    """``parse.json`` of :mod:`bench.parse`, if there is one."""
    path = results / "parse.json"
    return json.loads(path.read_text()) if path.exists() else None


def parse_section(parse: dict | None) -> list[str]:
    """Events per second into the columnar fold's Arrow frame, per format, old and new."""
    if not parse:
        return []
    out = [
        "### Change records into Arrow (`python -m bench.parse`)",
        "",
        f"{parse['when']}, load average {parse['machine'].get('load_average')}; best of the "
        "runs, CPU time; parse + `event_frame` (old) against the columnar parser + `column_frame` "
        "(new); "
        f"Kafka: {parse['kafka_source']}.",
        "",
        "| format | events | old events/s | new events/s | speed-up | frames equal |",
        "|---|---|---|---|---|---|",
    ]
    for r in parse["formats"]:
        out.append(
            f"| {r['format']} | {r['events']:,} | {r['old_events_per_s']:,.0f} | "
            f"{r['new_events_per_s']:,.0f} | {r['speedup']:.2f}× | "
            f"{'yes' if r['frames_equal'] else '**NO**'} |"
        )
    out += ["", "GoldenGate parse alone, per candidate:", ""]
    out += [f"- {name}: {rate:,.0f} events/s" for name, rate in parse["candidates"].items()]
    return out + [""]


def render(
    docs: list[dict],
    notes: str = "",
    loads: list[dict] = (),
    s3: list[dict] = (),
    kafka: list[dict] = (),
    native: list[dict] = (),
    parse: dict | None = None,
    pushdown: list[dict] = (),
    connect: list[dict] = (),
) -> str:
    if not docs and not loads and not s3 and not kafka and not native:
        return "# Benchmark results\n\nNo results yet: run `make bench`.\n"
    first = (docs or list(loads) or list(s3) or list(kafka) or list(native))[0]
    m, v = first["machine"], first["versions"]
    out = [
        "# Benchmark results",
        "",
        "Written by `python -m bench.report` from `bench/results/*.json` "
        "(each written by `python -m bench.run`). Every tool runs on the same generated "
        "files (`bench/generate.py`), each step in its own process, and every result is "
        "checked against the generator's expected table.",
        "",
        "## Machine and versions",
        "",
        f"- {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gb']} GB, {m['os']}",
        "- " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- Spark: `local[2]`, driver memory {m.get('driver_memory', '4g')} "
        "(`acidflow.spark.get_spark` defaults)",
        "",
        "## Commands",
        "",
    ]
    out += list(
        dict.fromkeys(
            f"- `{d['command']}`"
            for d in [
                *docs,
                *loads,
                *s3,
                *kafka,
                *native,
                *([parse] if parse else []),
                *pushdown,
                *connect,
            ]
            if d.get("command")
        )
    )
    out += ["", "## Targets", ""] + targets(docs, loads, s3) + kafka_targets(kafka)
    out += spark_native_targets(list(native), docs)
    out += pushdown_connect_targets(list(pushdown), list(connect))
    out += ["", "## Runs", ""]
    out += growth_section(docs) + load_section(loads) + s3_section(s3) + kafka_section(kafka)
    out += parse_section(parse)
    for d in docs:
        out += size_section(d)
    if notes:
        out += ["## Profile and changes", "", notes.strip(), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "results")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    ap.add_argument("--notes", type=Path, default=None)
    a = ap.parse_args(argv)
    notes = a.notes.read_text() if a.notes else ""
    a.out.write_text(
        render(
            load(a.results),
            notes,
            load_extra(a.results, "load_n*.json"),
            load_extra(a.results, "s3_n*_k*.json"),
            load_kafka(a.results),
            load_extra(a.results, "spark_native_n*.json"),
            load_parse(a.results),
            [json.loads(p.read_text()) for p in sorted(a.results.glob("pushdown_n*.json"))],
            [json.loads(p.read_text()) for p in sorted(a.results.glob("connect_e*.json"))],
        )
    )
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
