"""include/grafana/acidflow.json: valid dashboard JSON whose every query names a metric
acidflow.metrics exports, under the name an OTel collector's Prometheus exporter gives it, and
which shows every exported metric."""

from __future__ import annotations

import json
import re

from acidflow.metrics.collect import HISTOGRAM, METRICS, MetricSpec, prometheus_name
from tests.conftest import REPO

DASHBOARD = REPO / "include" / "grafana" / "acidflow.json"


def series(spec: MetricSpec) -> set[str]:
    name = prometheus_name(spec)
    if spec.instrument == HISTOGRAM:
        return {name + suffix for suffix in ("_bucket", "_sum", "_count")}
    return {name}


def test_prometheus_names_follow_the_collector_translation():
    names = {m.name: prometheus_name(m) for m in METRICS}
    assert names["acidflow.commits"] == "acidflow_commits_total"
    assert names["acidflow.commit.duration"] == "acidflow_commit_duration_seconds"
    assert names["acidflow.compaction.queue.oldest_age"] == (
        "acidflow_compaction_queue_oldest_age_seconds"
    )
    assert names["acidflow.cdc.slot.lag"] == "acidflow_cdc_slot_lag_bytes"
    assert names["acidflow.partition.deltas"] == "acidflow_partition_deltas"


def test_every_query_names_an_exported_metric_and_every_metric_is_shown():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "acidflow" and dash["panels"]
    exported = {s: m.name for m in METRICS for s in series(m)}
    shown: set[str] = set()
    for panel in dash["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            used = set(re.findall(r"\bacidflow_[a-z_]+\b", target["expr"]))
            assert used, (panel["title"], target["expr"])
            unknown = used - set(exported)
            assert not unknown, (panel["title"], unknown)
            shown |= {exported[u] for u in used}
    assert shown == {m.name for m in METRICS}
