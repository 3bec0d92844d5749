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
LABEL = {"acidflow": "acidflow upsert (merge-on-read)", "delta": "delta-rs MERGE",
         "duckdb": "DuckDB copy-on-write", "spark-cow": "Spark copy-on-write (ORC)",
         "spark-orc": "plain Spark ORC"}


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


def size_section(d: dict) -> list[str]:
    n, k = d["rows"], d["events"]
    out = [f"### N = {n:,} rows, K = {k:,} events per batch ({100 * k / n:g} %)", "",
           (f"**Partial**: the run was stopped before it finished (rebuilt from its logs by "
            f"`bench.run.doc_from_logs`); phases without rows below were not reached. "
            if d.get("partial") else "") +
           f"{d['runs']} runs; started {d.get('started', '?')}"
           + (f", {d['seconds']:.0f} s in all. " if d.get("seconds") else ". ") +
           "Times in seconds: *work* is the operation itself (reading the change file to the "
           "committed result); *JVM* is the SparkSession start, reported apart; *peak* is the "
           "largest summed RSS of the step's process tree (driver, JVM, Python workers) over "
           "the runs that did not read their result back for the check.", "",
           "| upsert of batch 1 | work median | work range | JVM start | wall median | peak MB"
           " | correct | runs (work) |", "|---|---|---|---|---|---|---|---|"]
    for t in TOOLS:
        runs = d["upsert"].get(t) or []
        if not runs:
            continue
        out.append(f"| {LABEL[t]} | {med(work(runs)):.2f} | {span(work(runs))} | "
                   f"{med([r.get('jvm_start', 0) for r in runs]):.1f} | "
                   f"{med([r['wall'] for r in runs]):.1f} | "
                   f"{op_peak(runs) or float('nan'):.0f} | "
                   f"{'yes' if all_correct(runs) else '**NO**'} | "
                   + ", ".join(f"{w:.2f}" for w in work(runs)) + " |")
    batches = d.get("acidflow_batches") or []
    if batches:
        out += ["", f"acidflow, batches 1..{len(batches)} applied in turn (work, s): "
                + ", ".join(f"{r['work']:.2f}" for r in batches)
                + f"; every checked state correct: "
                f"{'yes' if all_correct(batches) else '**NO**'}."]
    if d.get("read"):
        out += ["", "| snapshot read (all rows, all columns) | acidflow median | range | "
                    "plain Spark ORC median | range | ratio | correct |",
                "|---|---|---|---|---|---|---|"]
        for b, r in sorted(d["read"].items(), key=lambda kv: int(kv[0])):
            a, s = work(r["acidflow"]), work(r["spark-orc"])
            out.append(f"| after {b} batch{'es' if b != '1' else ''} | {med(a):.2f} | {span(a)}"
                       f" | {med(s):.2f} | {span(s)} | {med(a) / med(s):.2f}× | "
                       f"{'yes' if all_correct(r['acidflow']) else '**NO**'} |")
    c = d.get("compact") or {}
    if c.get("acidflow"):
        a, s = work(c["acidflow"]), work(c["spark-orc"])
        out += ["", "| major compaction after the last batch | acidflow median | range | "
                    "plain Spark ORC rewrite median | range | ratio | correct |",
                "|---|---|---|---|---|---|---|",
                f"| base + {len(batches)} deltas + {len(batches)} delete deltas | {med(a):.2f} | "
                f"{span(a)} | {med(s):.2f} | {span(s)} | {med(a) / med(s):.2f}× | "
                f"{'yes' if all_correct(c['acidflow']) else '**NO**'} |"]
    out.append("")
    return out


def targets(docs: list[dict]) -> list[str]:
    by = {(d["rows"], d["events"]): d for d in docs}
    rows = ["| target | measured | met |", "|---|---|---|"]

    def upsert_med(d, t):
        return med(work(d["upsert"].get(t) or []))

    big = by.get((10_000_000, 100_000))
    if big:
        a, dl, dk = (upsert_med(big, t) for t in ("acidflow", "delta", "duckdb"))
        rows.append(f"| upsert N=10M, K=100k ≤ 0.5 × delta-rs MERGE | {a:.2f} s vs {dl:.2f} s"
                    f" = {a / dl:.2f}× | {'yes' if a <= 0.5 * dl else 'no'} |")
        rows.append(f"| upsert N=10M, K=100k ≤ DuckDB rewrite | {a:.2f} s vs {dk:.2f} s = "
                    f"{a / dk:.2f}× | {'yes' if a <= dk else 'no'} |")
    small, large = by.get((1_000_000, 10_000)), by.get((10_000_000, 10_000))
    if small and large:
        a1, a10 = upsert_med(small, "acidflow"), upsert_med(large, "acidflow")
        rows.append(f"| upsert K=10k grows ≤ 1.5× from N=1M to N=10M | {a1:.2f} s → "
                    f"{a10:.2f} s = {a10 / a1:.2f}× | {'yes' if a10 <= 1.5 * a1 else 'no'} |")
    for d in docs:
        last = str(d["batches"])
        if d.get("read", {}).get(last):
            r = d["read"][last]
            ratio = med(work(r["acidflow"])) / med(work(r["spark-orc"]))
            rows.append(f"| snapshot read, {last} deltas of {100 * d['events'] / d['rows']:g} %"
                        f" churn, N={d['rows']:,} ≤ 1.2× Spark ORC scan | {ratio:.2f}× | "
                        f"{'yes' if ratio <= 1.2 else 'no'} |")
        if (d.get("compact") or {}).get("acidflow"):
            c = d["compact"]
            ratio = med(work(c["acidflow"])) / med(work(c["spark-orc"]))
            rows.append(f"| major compaction N={d['rows']:,} ≤ 1.3× Spark ORC rewrite | "
                        f"{ratio:.2f}× | {'yes' if ratio <= 1.3 else 'no'} |")
    for d in docs:
        if d["rows"] == 10_000_000:
            groups = [d["upsert"].get("acidflow") or [], d.get("acidflow_batches") or [],
                      *[rr["acidflow"] for rr in (d.get("read") or {}).values()],
                      (d.get("compact") or {}).get("acidflow") or []]
            peaks = [p for p in (op_peak(g) for g in groups if g) if p is not None]
            if peaks:
                rows.append(f"| peak memory < 4 GB at N=10M (K={d['events']:,}), every acidflow "
                            f"upsert, read and compaction | {max(peaks) / 1024:.2f} GB | "
                            f"{'yes' if max(peaks) < 4096 else 'no'} |")
    return rows


def render(docs: list[dict], notes: str = "") -> str:
    if not docs:
        return "# Benchmark results\n\nNo results yet: run `make bench`.\n"
    first = docs[0]
    m, v = first["machine"], first["versions"]
    out = ["# Benchmark results", "",
           "Written by `python -m bench.report` from `bench/results/*.json` "
           "(each written by `python -m bench.run`). Every tool runs on the same generated "
           "files (`bench/generate.py`), each step in its own process, and every result is "
           "checked against the generator's expected table.", "",
           "## Machine and versions", "",
           f"- {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gb']} GB, {m['os']}",
           "- " + ", ".join(f"{k} {val}" for k, val in v.items()),
           "- Spark: `local[2]`, driver memory 4g (`acidflow.spark.get_spark` defaults)", "",
           "## Commands", ""]
    out += list(dict.fromkeys(f"- `{d['command']}`" for d in docs if d.get("command")))
    out += ["", "## Targets", ""] + targets(docs) + ["", "## Runs", ""]
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
    a.out.write_text(render(load(a.results), notes))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
