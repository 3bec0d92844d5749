"""Scheduling, lineage and alerts end to end with a real ``api-server``, ``scheduler`` and
``dag-processor`` (PostgreSQL metadata, LocalExecutor):

* ``acid_cdc`` on its schedule (every 15 s here, ``[acidflow] cdc_schedule``; the scheduled runs'
  params from ``[acidflow] cdc_params``): a run over an empty landing directory is a quick
  success with the Spark tasks skipped; a change file written later is applied by the next
  scheduled run;
* lineage: ``cdc_upsert`` adds an asset event for the table it changed
  (``acid://<catalog id>/app.users``, through the alias ``acidflow-tables``) and the OpenLineage
  provider's ``file`` transport records a COMPLETE event naming the landing file as input and
  the table as output;
* ``acid_health``: healthy first; then a compaction claimed by a worker that never finishes it
  makes the check fail, and the failure notifier (the SMTP provider's ``SmtpNotifier``) sends a
  mail to a local SMTP server (aiosmtpd, started here) listing the finding.
"""

from __future__ import annotations

import email
import json
import time
from datetime import datetime

import pytest
from aiosmtpd.controller import Controller

from acidflow.catalog import SqlCatalog
from acidflow.read.table import read_table
from tests.support.airflow_services import AirflowServices, free_port

pytestmark = [pytest.mark.slow, pytest.mark.spark]


class Inbox:
    """aiosmtpd handler keeping every message received."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.Message]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        self.messages.append(
            (list(envelope.rcpt_tos), email.message_from_bytes(envelope.original_content))
        )
        return "250 OK"


@pytest.fixture(scope="module")
def smtp():
    inbox = Inbox()
    ctl = Controller(inbox, hostname="127.0.0.1", port=free_port())
    ctl.start()
    try:
        yield ctl, inbox
    finally:
        ctl.stop()


def gg(op, pos, after=None, before=None):
    return json.dumps(
        {
            "table": "APP.USERS",
            "op_type": op,
            "op_ts": "2024-03-01 10:00:00",
            "current_ts": "x",
            "pos": pos,
            "primary_keys": ["ID"],
            "before": before,
            "after": after,
        }
    )


@pytest.fixture(scope="module")
def services(tmp_path_factory, postgres_url, smtp):
    from tests.support.postgres import create_database

    ctl, _ = smtp
    root = tmp_path_factory.mktemp("airflow-alerts")
    wh = root / "warehouse"
    land = root / "landing"
    land.mkdir()
    (root / "none.yaml").write_text("tables: []\n")
    metadata = create_database(postgres_url, "airflow_alerts_e2e")
    af = AirflowServices(root, wh, metadata_url=metadata)
    af.env.update(
        {
            "AIRFLOW__ACIDFLOW__CDC_SCHEDULE": "15",
            "AIRFLOW__ACIDFLOW__CDC_PARAMS": json.dumps(
                {
                    "format": "goldengate",
                    "input_path": str(land),
                    "target_db": "app",
                    "auto_create": True,
                    "tables_config": str(root / "none.yaml"),
                }
            ),
            "AIRFLOW__ACIDFLOW__HEALTH_SCHEDULE": "none",
            "AIRFLOW__ACIDFLOW__ALERT_TO": "oncall@example.com",
            "AIRFLOW__ACIDFLOW__ALERT_FROM": "acidflow@example.com",
            "AIRFLOW_CONN_SMTP_DEFAULT": json.dumps(
                {
                    "conn_type": "smtp",
                    "host": "127.0.0.1",
                    "port": ctl.port,
                    "extra": {
                        "disable_ssl": True,
                        "disable_tls": True,
                        "timeout": 10,
                        "retry_limit": 1,
                    },
                }
            ),
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
                {"type": "file", "log_file_path": str(root / "openlineage.jsonl"), "append": True}
            ),
            "AIRFLOW__OPENLINEAGE__NAMESPACE": "acidflow-e2e",
        }
    )
    with af:
        yield af, SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=str(wh)), root


def task_states(af, dag_id, run_id):
    status, body = af.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
    assert status == 200, body
    return {t["task_id"]: t for t in json.loads(body)["task_instances"]}


def finished_runs(af, dag_id, run_type):
    status, body = af.request("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")
    assert status == 200, body
    return [
        r
        for r in json.loads(body)["dag_runs"]
        if r["run_type"] == run_type and r["state"] in ("success", "failed")
    ]


def wait_for(what, check, af, dag_id, timeout=420):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(3)
    raise AssertionError(
        f"{what} not seen after {timeout} s\n{af.describe_runs(dag_id)}\n{af.logs()}"
    )


def seconds(run):
    return (
        datetime.fromisoformat(run["end_date"]) - datetime.fromisoformat(run["start_date"])
    ).total_seconds()


def test_scheduled_cdc_assets_and_openlineage(services):
    af, cat, root = services
    land = root / "landing"
    af.wait_dag("acid_cdc")
    status, body = af.request("PATCH", "/api/v2/dags/acid_cdc", {"is_paused": False})
    assert status == 200, body

    # 1. the empty landing directory: scheduled runs succeed, the Spark tasks skipped
    empty = wait_for(
        "a scheduled run", lambda: finished_runs(af, "acid_cdc", "scheduled"), af, "acid_cdc"
    )
    run = empty[0]
    assert run["state"] == "success", af.describe_runs("acid_cdc")
    tis = task_states(af, "acid_cdc", run["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {
        "pull": "success",
        "pending": "success",
        "cdc_upsert": "skipped",
        "validate": "skipped",
    }
    print(f"\nempty landing: scheduled run took {seconds(run):.1f} s")
    assert seconds(run) < 120

    # 2. a change file lands: the next scheduled run applies it
    (land / "0001.json").write_text(
        "\n".join(
            [
                gg("I", "01", {"ID": 1, "EMAIL": "a@x"}),
                gg("I", "02", {"ID": 2, "EMAIL": "b@x"}),
                gg("U", "03", {"ID": 1, "EMAIL": "a2@x"}, {"ID": 1}),
            ]
        )
        + "\n"
    )

    def applied():
        for r in finished_runs(af, "acid_cdc", "scheduled"):
            if task_states(af, "acid_cdc", r["dag_run_id"])["cdc_upsert"]["state"] != "skipped":
                return r
        return None

    run = wait_for("a scheduled run applying the file", applied, af, "acid_cdc", timeout=600)
    assert run["state"] == "success", af.describe_runs("acid_cdc")
    status, _ = af.request("PATCH", "/api/v2/dags/acid_cdc", {"is_paused": True})
    assert status == 200
    print(f"applying run took {seconds(run):.1f} s")
    rows = {r["id"]: r["email"] for r in read_table(None, cat, "app.users").to_pylist()}
    assert rows == {1: "a2@x", 2: "b@x"}
    details = json.loads(af.request("GET", "/api/v2/dags/acid_cdc/details")[1])
    assert (details["max_active_runs"], details["catchup"]) == (1, False)

    # 3. the asset event of the table, through the alias
    uri = f"acid://{cat.catalog_id()}/app.users"
    status, body = af.request("GET", "/api/v2/assets/events?limit=100")
    assert status == 200, body
    events = [e for e in json.loads(body)["asset_events"] if e["uri"] == uri]
    assert events, body[:3000]
    assert {(e["source_dag_id"], e["source_task_id"]) for e in events} == {
        ("acid_cdc", "cdc_upsert")
    }
    assert events[0]["extra"]["table"] == "app.users"

    # 4. the OpenLineage COMPLETE event of cdc_upsert: landing file in, table out
    ol = root / "openlineage.jsonl"

    def completed():
        if not ol.exists():
            return None
        evs = [json.loads(line) for line in ol.read_text().splitlines() if line.strip()]
        return [
            e
            for e in evs
            if e.get("eventType") == "COMPLETE"
            and e["job"]["name"] == "acid_cdc.cdc_upsert"
            and e.get("outputs")
        ]

    (ev, *_) = wait_for("the OpenLineage COMPLETE event", completed, af, "acid_cdc", timeout=60)
    assert ev["job"]["namespace"] == "acidflow-e2e"
    assert [(d["namespace"], d["name"]) for d in ev["inputs"]] == [
        ("file", str(land / "0001.json"))
    ]
    assert [(d["namespace"], d["name"]) for d in ev["outputs"]] == [
        (f"acid://{cat.catalog_id()}", "app.users")
    ]


def test_health_alerts_on_a_stuck_compaction(services, smtp):
    af, cat, _ = services
    _, inbox = smtp
    af.wait_dag("acid_health")
    status, body = af.request("PATCH", "/api/v2/dags/acid_health", {"is_paused": False})
    assert status == 200, body

    def trigger(conf):
        status, body = af.request(
            "POST", "/api/v2/dags/acid_health/dagRuns", {"logical_date": None, "conf": conf}
        )
        assert status == 200, body
        run_id = json.loads(body)["dag_run_id"]
        (run,) = af.wait_runs("acid_health", [run_id], timeout=300)
        return run, task_states(af, "acid_health", run_id)["check"]

    run, ti = trigger({"working_max_s": 1})
    assert run["state"] == "success", af.describe_runs("acid_health")
    assert inbox.messages == []

    # a worker claims a compaction and never finishes it
    queued = cat.enqueue_compaction("app.users", None, "major")
    assert cat.claim_compaction("w-stuck", queued.id).state == "working"
    time.sleep(2)
    run, ti = trigger({"working_max_s": 1})
    assert run["state"] == "failed" and ti["state"] == "failed"
    assert ti["try_number"] == 1  # findings fail at once: no retries delay the alert

    msgs = wait_for("the alert mail", lambda: inbox.messages, af, "acid_health", timeout=120)
    ((rcpts, msg),) = msgs
    assert rcpts == ["oncall@example.com"]
    assert msg["From"] == "acidflow@example.com"
    assert "acid_health.check failed" in msg["Subject"]
    body = "".join(
        p.get_payload(decode=True).decode()
        for p in msg.walk()
        if p.get_content_type() == "text/html"
    )
    assert "compaction-working" in body and f"compaction {queued.id}" in body
    assert "app.users" in body and "worker w-stuck" in body
    cat.mark_compaction_failed(queued.id, "test: released")
