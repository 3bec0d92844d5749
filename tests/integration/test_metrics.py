"""acidflow.metrics on a real catalog and real table directories: what ``collect_metrics``
measures (commits, durations, deltas per partition, the compaction queue, unqueued eligible
partitions, quarantined records, Kafka offsets), the OTLP/HTTP push received by a real HTTP
server decoding the protobuf request, the ``compaction-not-queued`` health finding, and the
``acidflow metrics`` / ``acidflow health`` commands."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from airflow.sdk.exceptions import AirflowSkipException
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from typer.testing import CliRunner

from acidflow.catalog import Column, TableDef
from acidflow.cli import app
from acidflow.compactor.unqueued import unqueued_partitions
from acidflow.format.bucketing import encode_bucket_property
from acidflow.metrics.collect import METRICS, collect_metrics
from acidflow.metrics.export import MetricsExportError, export_metrics
from acidflow.quality.health import HealthThresholds, check_health
from acidflow.quarantine import write_quarantine
from acidflow.sources.records import BadRecord
from acidflow_airflow.health import run_metrics_push
from tests.support import acidtables as at

B0 = encode_bucket_property(0, 0)
ORDERS = "shop.orders"
ITEMS = "shop.items"


def build(catalog):
    """shop.orders (by ds; more than 2 deltas compact): ds=a 3 inserts + 1 delete (eligible
    since its 3rd delta, write id 3), ds=b 3 inserts (eligible, compaction queued), one aborted
    write; shop.items: one insert and a failed compaction; a quarantined batch of 2 bad records;
    a committed Kafka batch."""
    catalog.create_table(
        TableDef(
            name=ORDERS,
            columns=[Column("id", "int"), Column("name", "string")],
            partition_columns=[Column("ds", "string")],
            properties={
                "compactorthreshold.hive.compactor.delta.num.threshold": "2",
                "acidflow.target.file.bytes": "0",
            },
        )
    )
    catalog.create_table(TableDef(name=ITEMS, columns=[Column("sku", "int")]))
    for i in range(3):
        at.write(catalog, ORDERS, {0: [(i, f"a{i}")]}, partition="ds=a")
    at.write(catalog, ORDERS, deletes=[(1, B0, 0)], partition="ds=a")
    for i in range(3):
        at.write(catalog, ORDERS, {0: [(10 + i, f"b{i}")]}, partition="ds=b")
    at.write(catalog, ORDERS, {0: [(99, "gone")]}, partition="ds=a", end="abort")
    at.write(catalog, ITEMS, {0: [(1,)]})
    queued = catalog.enqueue_compaction(ORDERS, "ds=b", "minor")
    done = catalog.enqueue_compaction(ITEMS, None, "major")
    catalog.claim_compaction("w-1", done.id)
    catalog.mark_compaction_failed(done.id, "disk full")
    write_quarantine(
        catalog.warehouse,
        "cdc",
        "batch-1",
        [
            BadRecord("f.jsonl:3", "no key", "{}", ORDERS),
            BadRecord("f.jsonl:9", "not JSON", "{", None),
        ],
    )
    txn = catalog.open_transaction(agent_info="kafka test")
    catalog.register_batch(
        txn,
        "kafka:orders:1",
        "kafka",
        source="orders",
        details={"offsets": {"start": {}, "end": {"dbz.orders": {"0": 42, "1": 7}}}},
    )
    catalog.commit_transaction(txn)
    return catalog.get_compaction(queued.id)


def test_collect_measures_the_catalog_and_the_directories(catalog):
    queued = build(catalog)
    now = queued.enqueued_at + timedelta(minutes=10)
    snap = collect_metrics(catalog, now=now)
    v = snap.value

    # commits: 7 committed write ids (the aborted 8th is not one), by their operations
    assert v("acidflow.commits", table=ORDERS, operation="insert") == 6
    assert v("acidflow.commits", table=ORDERS, operation="delete") == 1
    assert v("acidflow.commits", table=ITEMS, operation="insert") == 1
    assert not [s for s in snap.of("acidflow.commits") if s.attributes["operation"] == "unrecorded"]
    durations = [s for s in snap.of("acidflow.commit.duration") if s.attributes["table"] == ORDERS]
    assert len(durations) == 7 and all(0 <= s.value < 60 for s in durations)

    # deltas per partition, from the initiator's snapshot (the aborted delta is not current)
    assert v("acidflow.partition.deltas", table=ORDERS, partition="ds=a") == 3
    assert v("acidflow.partition.delete_deltas", table=ORDERS, partition="ds=a") == 1
    assert v("acidflow.partition.deltas", table=ORDERS, partition="ds=b") == 3
    assert v("acidflow.partition.delete_deltas", table=ORDERS, partition="ds=b") == 0
    assert v("acidflow.partition.deltas", table=ITEMS, partition="") == 1

    # the queue by state, the oldest initiated entry's age
    assert v("acidflow.compaction.queue", state="initiated") == 1
    assert v("acidflow.compaction.queue", state="failed") == 1
    assert v("acidflow.compaction.queue", state="working") == 0
    assert v("acidflow.compaction.queue.oldest_age", state="initiated") == pytest.approx(600)

    # eligible and not queued: ds=a only (ds=b has its entry), since the commit of write id 3
    assert v("acidflow.compaction.unqueued", table=ORDERS) == 1
    assert v("acidflow.compaction.unqueued", table=ITEMS) == 0
    commit3 = {h.write_id: h.committed_at for h in catalog.write_id_history(ORDERS)}[3]
    age = v("acidflow.compaction.unqueued.age", table=ORDERS, partition="ds=a")
    assert age == pytest.approx((now - commit3.replace(tzinfo=now.tzinfo)).total_seconds())
    assert v("acidflow.compaction.unqueued.age", table=ORDERS, partition="ds=b") is None

    # quarantine, Kafka
    assert v("acidflow.quarantine.records", table=ORDERS, source="cdc") == 1
    assert v("acidflow.quarantine.records", table="", source="cdc") == 1
    assert v("acidflow.cdc.kafka.offset", source="orders", topic="dbz.orders", partition="0") == 42
    assert v("acidflow.cdc.kafka.offset", source="orders", topic="dbz.orders", partition="1") == 7

    # every sample names a declared metric with its declared attributes
    specs = {m.name: m for m in METRICS}
    for s in snap.samples:
        assert tuple(s.attributes) == specs[s.metric].attributes, s


def test_unqueued_partition_names_its_deltas_and_since_when_and_the_health_finding(catalog):
    build(catalog)
    (p,) = unqueued_partitions(catalog)
    assert (p.table, p.partition, p.compaction_type) == (ORDERS, "ds=a", "major")
    assert (p.deltas, p.delete_deltas, p.eligible_write_id) == (3, 1, 3)
    history = {h.write_id: h.committed_at for h in catalog.write_id_history(ORDERS)}
    assert p.eligible_since.replace(tzinfo=None) == history[3].replace(tzinfo=None)

    since = p.eligible_since
    th = HealthThresholds(unqueued_max_s=3600)
    early = check_health(catalog, th, since + timedelta(minutes=59), unqueued=[p])
    assert [f for f in early if f.kind == "compaction-not-queued"] == []
    late = check_health(catalog, th, since + timedelta(minutes=61), unqueued=[p])
    (f,) = [f for f in late if f.kind == "compaction-not-queued"]
    assert f.subject == "shop.orders partition ds=a" and f.value == pytest.approx(61 * 60)
    assert "3 deltas and 1 delete deltas" in f.message and "write id 3" in f.message
    assert f.details["since"] == since.isoformat() and f.details["partition"] == "ds=a"

    # the initiator queues ds=a: no longer unqueued, no finding
    catalog.enqueue_compaction(ORDERS, "ds=a", "major")
    assert unqueued_partitions(catalog) == []


def test_a_later_failed_compaction_moves_the_start(catalog):
    build(catalog)
    (before,) = unqueued_partitions(catalog)
    entry = catalog.enqueue_compaction(ORDERS, "ds=a", "major")
    catalog.claim_compaction("w-2", entry.id)
    catalog.mark_compaction_failed(entry.id, "boom")
    (after,) = unqueued_partitions(catalog)
    ended = catalog.get_compaction(entry.id).ended_at
    assert after.eligible_since > before.eligible_since
    assert after.eligible_since.replace(tzinfo=None) == ended.replace(tzinfo=None)


# ------------------------------------------------------------------ OTLP/HTTP receiver


class Receiver:
    """An OTLP/HTTP metrics endpoint on localhost: decodes each ``ExportMetricsServiceRequest``
    POSTed to ``/v1/metrics`` and answers with ``status`` (200: an empty response)."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/v1/metrics":
                    req = ExportMetricsServiceRequest()
                    req.ParseFromString(body)
                    outer.requests.append(req)
                    outer.headers.append(dict(self.headers))
                payload = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(status if self.path == "/v1/metrics" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def points(self) -> dict[str, list[tuple[dict[str, str], object]]]:
        """metric name -> [(attributes, value or histogram data point)] of every request."""
        out: dict[str, list[tuple[dict[str, str], object]]] = {}
        for req in self.requests:
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        for dp in getattr(m, kind).data_points:
                            attrs = {a.key: a.value.string_value for a in dp.attributes}
                            if kind == "histogram":
                                value: object = dp
                            else:
                                value = dp.as_double if dp.HasField("as_double") else dp.as_int
                            out.setdefault(m.name, []).append((attrs, value))
        return out


@pytest.fixture
def otlp_env(monkeypatch):
    for var in (
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
    ):
        monkeypatch.delenv(var, raising=False)

    def point_at(receiver: Receiver) -> None:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-acidflow-test=yes")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "5")

    return point_at


def test_export_reaches_an_otlp_http_receiver_with_attributes_and_values(catalog, otlp_env):
    build(catalog)
    snap = collect_metrics(catalog)
    with Receiver() as rx:
        otlp_env(rx)
        sent = export_metrics(snap, timeout_s=10)
    assert len(rx.requests) == 1 and rx.headers[0].get("x-acidflow-test") == "yes"
    (rm,) = rx.requests[0].resource_metrics
    resource = {a.key: a.value.string_value for a in rm.resource.attributes}
    assert resource["service.name"] == "acidflow"
    got = rx.points()
    assert sent == sum(len(v) for v in got.values())
    commits = {(a["table"], a["operation"]): val for a, val in got["acidflow.commits"]}
    assert commits == {(ORDERS, "delete"): 1, (ORDERS, "insert"): 6, (ITEMS, "insert"): 1}
    deltas = {(a["table"], a["partition"]): val for a, val in got["acidflow.partition.deltas"]}
    assert deltas[(ORDERS, "ds=a")] == 3 and deltas[(ITEMS, "")] == 1
    queue = {a["state"]: val for a, val in got["acidflow.compaction.queue"]}
    assert queue["initiated"] == 1 and queue["failed"] == 1
    unqueued = {a["table"]: val for a, val in got["acidflow.compaction.unqueued"]}
    assert unqueued == {ORDERS: 1, ITEMS: 0}
    ((age_attrs, age),) = got["acidflow.compaction.unqueued.age"]
    assert age_attrs == {"table": ORDERS, "partition": "ds=a"} and age > 0
    assert ({"table": ORDERS, "source": "cdc"}, 1) in got["acidflow.quarantine.records"]
    hist = {a["table"]: dp for a, dp in got["acidflow.commit.duration"]}
    assert hist[ORDERS].count == 7 and hist[ITEMS].count == 1
    assert list(hist[ORDERS].explicit_bounds)[:3] == [0.1, 0.5, 1.0]
    # units travel with the metrics
    units = {
        m.name: m.unit
        for req in rx.requests
        for r in req.resource_metrics
        for sm in r.scope_metrics
        for m in sm.metrics
    }
    assert units["acidflow.compaction.queue.oldest_age"] == "s"
    assert units["acidflow.commits"] == "{commit}"


def test_export_refused_by_the_receiver_is_an_error(catalog, otlp_env):
    build(catalog)
    with Receiver(status=400) as rx:
        otlp_env(rx)
        with pytest.raises(MetricsExportError, match="OTLP export"):
            export_metrics(collect_metrics(catalog), timeout_s=5)
    assert len(rx.requests) == 1


# --------------------------------------------------------------------------------- CLI

runner = CliRunner()


def test_metrics_and_health_commands(catalog, otlp_env):
    build(catalog)
    res = runner.invoke(app, ["metrics", "--json"])
    assert res.exit_code == 0, (res.output, res.exception)
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    by = {(d["metric"], tuple(sorted(d["attributes"].items()))): d for d in lines}
    assert (
        by[("acidflow.partition.delete_deltas", (("partition", "ds=a"), ("table", ORDERS)))][
            "value"
        ]
        == 1
    )
    hist = by[("acidflow.commit.duration", (("table", ORDERS),))]
    assert hist["count"] == 7 and hist["unit"] == "s"

    res = runner.invoke(app, ["metrics"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "acidflow.compaction.unqueued" in res.stdout

    with Receiver() as rx:
        otlp_env(rx)
        res = runner.invoke(app, ["metrics", "--push", "--json"])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "acidflow.commits" in rx.points() and "pushed" in res.stderr
    with Receiver(status=400) as rx:
        otlp_env(rx)
        res = runner.invoke(app, ["metrics", "--push", "--json"])
    assert res.exit_code == 1 and "metrics push failed" in res.stderr

    # health: ds=a eligible (not queued) just now: no finding within the hour, one at 0 s
    res = runner.invoke(app, ["health", "--json"])
    report = json.loads(res.stdout.splitlines()[-1])
    assert "compaction-not-queued" not in {f["kind"] for f in report["findings"]}
    assert [(u["table"], u["partition"]) for u in report["unqueued"]] == [(ORDERS, "ds=a")]
    res = runner.invoke(app, ["health", "--json", "--unqueued-max", "0"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout.splitlines()[-1])
    found = [f for f in report["findings"] if f["kind"] == "compaction-not-queued"]
    assert [f["details"]["partition"] for f in found] == ["ds=a"]


def test_acid_health_pushes_the_metrics_only_to_a_configured_endpoint(
    catalog, otlp_env, monkeypatch
):
    build(catalog)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    with pytest.raises(AirflowSkipException, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
        run_metrics_push({})
    with Receiver() as rx:
        otlp_env(rx)
        pushed = run_metrics_push({})
    got = rx.points()
    assert pushed["samples"] == len([p for p in collect_metrics(catalog).to_dicts()])
    assert ({"table": ORDERS, "partition": "ds=a"}, 1) in got["acidflow.partition.delete_deltas"]
