"""The benchmark at tiny sizes: every phase runs and every tool's result equals the
generator's expected table. This is the harness's correctness, not its speed: the growth and
S3 phases run their steps in this process on the test session's SparkSession
(``bench.run.IN_PROCESS``), the initial-load phase in a process per step as ``make bench`` runs
every step. No timings are asserted: speed is measured by ``make bench``, reported in
``bench/RESULTS.md``."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from bench import generate, parse, report, run

pytestmark = [pytest.mark.slow]


@pytest.fixture
def in_process(spark, monkeypatch):
    """Steps run in this process, on the session's SparkSession (no JVM start per step)."""
    monkeypatch.setattr(run, "IN_PROCESS", True)
    return spark


def test_generator_is_deterministic_and_its_expected_table_follows_the_rules(tmp_path):
    a = generate.generate(tmp_path / "a", rows=2000, events=200, batches=2, seed=5)
    generate.generate(tmp_path / "b", rows=2000, events=200, batches=2, seed=5)
    for name in ("base.parquet", "batch_0001.jsonl", "batch_0002.jsonl", "expected_0002.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    counts = a["batch_counts"][0]
    assert sum(counts[op] for op in "IUD") == 200
    assert counts["late"] >= 2
    events = [json.loads(line) for line in (tmp_path / "a/batch_0001.jsonl").open()]
    positions = [e["pos"] for e in events]
    assert positions == sorted(positions) and len(set(positions)) == 200
    per_key: dict[int, list] = {}
    for e in events:
        per_key.setdefault((e["after"] or e["before"])["ID"], []).append(e)
    twice = [k for k, evs in per_key.items() if len(evs) == 2]
    assert 0.05 < len(twice) / len(per_key) < 0.15  # about 10 % of touched keys
    # the expected table: base, then per key the latest event unless it is late
    base = {r["id"]: r for r in pq.read_table(tmp_path / "a/base.parquet").to_pylist()}
    expected = {r["id"]: r for r in pq.read_table(tmp_path / "a/expected_0001.parquet").to_pylist()}
    for key, evs in per_key.items():
        last = max(evs, key=lambda e: (e["op_ts"], e["pos"]))
        stored = base.get(key)
        late = stored is not None and last["op_ts"] <= str(stored["updated_at"])
        if late:
            assert expected[key] == stored
        elif last["op_type"] == "D":
            assert key not in expected
        else:
            assert expected[key]["name"] == last["after"]["NAME"]
            assert str(expected[key]["updated_at"]).startswith(last["op_ts"][:19])


def test_every_tool_runs_and_is_correct(tmp_path, in_process):
    doc = run.bench_size(1500, 150, runs=1, batches=2, seed=3, work=tmp_path, log=print)
    for tool in run.UPSERT_TOOLS:
        (r,) = doc["upsert"][tool]
        assert r["check"]["correct"], (tool, r["check"])
        assert r["work"] > 0 and r["peak_rss_mb"] > 0
    assert len(doc["acidflow_batches"]) == 2
    assert all(b["check"]["correct"] for b in doc["acidflow_batches"])
    assert doc["acidflow_batches"][0]["report"]["ignored_late"] >= 1
    for b in ("1", "2"):
        assert doc["read"][b]["acidflow"][0]["check"]["correct"]
        assert doc["read"][b]["spark-orc"][0]["work"] > 0
    (c,) = doc["compact"]["acidflow"]
    assert c["state"] == "ready for cleaning" or c["state"] == "succeeded", c
    assert c["check"]["correct"]
    assert doc["compact"]["spark-orc"][0]["check"]["correct"]
    doc.update(machine=run.machine(), versions=run.versions(), command="smoke")
    text = report.render([doc])
    for label in report.LABEL.values():
        assert label in text
    assert "**NO**" not in text


def test_initial_load_phase_runs_and_is_correct(tmp_path):
    doc = run.bench_load(1500, runs=1, seed=3, work=tmp_path, log=print)
    for tool in ("acidflow", "spark-orc"):
        (r,) = doc[tool]
        assert r["check"]["correct"], (tool, r["check"])
        assert r["check"]["rows"] == 1500
        assert r["work"] > 0
    doc.update(machine=run.machine(), versions=run.versions(), command="smoke")
    text = report.render([], "", [doc])
    assert "### Initial load" in text and "initial load of N=1,500 rows" in text
    assert "**NO**" not in text


def test_s3_phase_runs_and_is_correct(tmp_path, in_process):
    doc = run.bench_s3(1500, 150, runs=1, seed=3, work=tmp_path, log=print)
    for where in ("local", "s3"):
        for step in ("upsert", "read"):
            (r,) = doc[where][step]
            assert r["check"]["correct"], (where, step, r["check"])
            assert r["work"] > 0
    doc.update(machine=run.machine(), versions=run.versions(), command="smoke")
    text = report.render([], "", [], [doc])
    assert "### Object storage" in text and "upsert on S3 (moto)" in text
    assert "**NO**" not in text


def test_spark_native_phase_reads_agree_and_are_reported(tmp_path, spark):
    from bench import datasource as bench_ds

    doc = bench_ds.run(rows=3000, deltas=2, runs=1, work=str(tmp_path), spark=spark)
    # every read (data source, read_table's arrow, engine and JVM executors, plain ORC) gave
    # the same rows (run() asserts count and hash sum); each was timed once
    for name in ("datasource_s", "read_table_s", "engine_s", "jvm_s", "plain_orc_s"):
        assert len(doc[name]) == 1 and doc[name][0] > 0
    assert set(doc["vs_plain_orc"]) == {"datasource", "read_table", "engine", "jvm"}
    doc.update(machine=run.machine(), versions=run.versions(), command="smoke")
    text = report.render([], "", [], [], [], [doc])
    assert "snapshot read in a warm session, 2 deltas of 1 % churn, N=3,000" in text
    assert '`format("acid")` ≤ 1.2× Spark ORC scan' in text


def test_parse_phase_runs_and_the_frames_are_equal(tmp_path):
    """``python -m bench.parse`` at a tiny size: every format (and the Kafka values) taken by
    the columnar parser, its frames equal to today's parser's, the report section rendered."""
    out = tmp_path / "parse.json"
    parse.main(
        ["--events", "300", "--runs", "1", "--kafka-data", str(tmp_path / "none"),
         "--work", str(tmp_path), "--out", str(out)]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert [r["format"] for r in doc["formats"]] == [
        "goldengate",
        "wal2json-v2",
        "wal2json-v1",
        "debezium",
        "debezium-kafka",
        "goldengate-kafka",
    ]
    assert all(r["frames_equal"] and r["events"] == 300 for r in doc["formats"])
    text = "\n".join(report.parse_section(doc))
    assert "Change records into Arrow" in text and "**NO**" not in text
