"""End to end as a user would: real ``api-server``, ``scheduler`` and ``dag-processor`` on
127.0.0.1 with a private AIRFLOW_HOME.

* ``acid_cdc`` triggered through the REST API (what the UI's trigger button calls) with params,
  invalid params refused by the JSON schema, the run's result checked in the tables;
* ``airflow backfill create`` over two days of ``acid_ingest``: every partition holds exactly
  its day's landing file (what the scheduled run of that day loads), and backfilling the range
  again (``--reprocess-behavior completed``: the same runs cleared and run again) changes
  nothing.
"""

import csv
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from acidflow.catalog import SqlCatalog
from acidflow.read.table import read_table
from tests.support.airflow_services import BIN, AirflowServices

pytestmark = [pytest.mark.slow, pytest.mark.spark]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def services(tmp_path_factory, postgres_url):
    """The services on a PostgreSQL metadata database, as deployed (docker-compose.yml): with
    SQLite, the scheduler, the task supervisors and the backfill CLI contend for one writer lock,
    and on a loaded machine tasks stalled."""
    from tests.support.postgres import create_database

    root = tmp_path_factory.mktemp("airflow-services")
    wh = root / "warehouse"
    metadata = create_database(postgres_url, "airflow_e2e")
    af = AirflowServices(root, wh, metadata_url=metadata)
    # acid_cdc is triggered here (tests/e2e/test_airflow_alerts_lineage.py runs its schedule)
    af.env["AIRFLOW__ACIDFLOW__CDC_SCHEDULE"] = "none"
    with af:
        yield af, SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=str(wh)), root


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


def test_trigger_acid_cdc_through_the_rest_api(services):
    af, cat, root = services
    land = root / "landing"
    land.mkdir()
    (land / "0001.json").write_text(
        "\n".join(
            [
                gg("I", "01", {"ID": 1, "EMAIL": "a@x"}),
                gg("I", "02", {"ID": 2, "EMAIL": "b@x"}),
                gg("U", "03", {"ID": 1, "EMAIL": "a2@x"}, {"ID": 1}),
                gg("D", "04", None, {"ID": 2}),
            ]
        )
        + "\n"
    )
    (root / "none.yaml").write_text("tables: []\n")
    dag = af.wait_dag("acid_cdc")
    assert dag["is_paused"] in (True, False)
    status, body = af.request("PATCH", "/api/v2/dags/acid_cdc", {"is_paused": False})
    assert status == 200, body

    # the trigger form's JSON schema refuses a bad format
    status, body = af.request(
        "POST", "/api/v2/dags/acid_cdc/dagRuns", {"logical_date": None, "conf": {"format": "xml"}}
    )
    assert status == 400 and "format" in body, (status, body)

    conf = {
        "format": "goldengate",
        "input_path": str(land),
        "target_db": "app",
        "auto_create": True,
        "tables_config": str(root / "none.yaml"),
    }
    status, body = af.request(
        "POST", "/api/v2/dags/acid_cdc/dagRuns", {"logical_date": None, "conf": conf}
    )
    assert status == 200, body
    run_id = json.loads(body)["dag_run_id"]
    (run,) = af.wait_runs("acid_cdc", [run_id])
    assert run["state"] == "success", af.logs()
    rows = {r["id"]: r["email"] for r in read_table(None, cat, "app.users").to_pylist()}
    assert rows == {1: "a2@x"}
    status, body = af.request("GET", f"/api/v2/dags/acid_cdc/dagRuns/{run_id}/taskInstances")
    assert {t["task_id"]: t["state"] for t in json.loads(body)["task_instances"]} == {
        "pull": "success",
        "pending": "success",
        "cdc_upsert": "success",
        "validate": "success",
    }


#: the backfilled days (two: a backfill is several runs, each two spark-submits; the third
#: sample day stays unloaded, which the comparison checks too)
DAYS = ["2024-01-01", "2024-01-02"]


def expected_orders():
    out = {}
    for f in sorted((REPO / "include/sample_data/ingest/sales.orders").glob("*/orders.csv")):
        if f.parent.name not in DAYS:
            continue
        for r in csv.DictReader(f.open()):
            out[int(r["order_id"])] = (f.parent.name, r["customer"], Decimal(r["amount"]))
    return out


def snapshot(cat):
    return {
        r["order_id"]: (r["ds"], r["customer"], r["amount"])
        for r in read_table(None, cat, "sales.orders").to_pylist()
    }


def backfill(af, *extra):
    """``airflow backfill create`` for :data:`DAYS`."""
    r = subprocess.run(
        [
            str(BIN / "airflow"),
            "backfill",
            "create",
            "--dag-id",
            "acid_ingest",
            "--from-date",
            DAYS[0],
            "--to-date",
            DAYS[-1],
            *extra,
        ],
        env=af.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def wait_backfills_done(af, timeout=300):
    """The scheduler marks a backfill completed a little after its last run finished; only
    then may another backfill of the DAG be created."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = af.request("GET", "/api/v2/backfills?dag_id=acid_ingest")
        assert status == 200, body
        if all(b["completed_at"] for b in json.loads(body)["backfills"]):
            return
        time.sleep(3)
    raise AssertionError("backfill not marked completed\n" + af.logs())


def test_backfill_matches_the_daily_runs_and_rerunning_changes_nothing(services):
    af, cat, _ = services
    af.wait_dag("acid_ingest")
    # backfill runs are scheduled only for an active DAG (the user switches it on in the UI);
    # that also starts today's scheduled run, which is not part of the comparison
    status, body = af.request("PATCH", "/api/v2/dags/acid_ingest", {"is_paused": False})
    assert status == 200, body
    backfill(af)
    runs = af.wait_runs("acid_ingest", count=len(DAYS), run_type="backfill")
    assert sorted(r["logical_date"][:10] for r in runs) == DAYS
    assert {r["state"] for r in runs} == {"success"}, af.logs()
    first = snapshot(cat)
    assert first == expected_orders()  # each day's partition = that day's file
    commits = cat.commit_records("sales.orders")
    assert len(commits) == len(DAYS)
    assert sorted(c.stats["data_interval"][:10] for c in commits) == DAYS

    wait_backfills_done(af)
    # backfilling the range again re-runs the same runs (Airflow clears and reruns them)
    backfill(af, "--reprocess-behavior", "completed")
    wait_backfills_done(af)
    runs = af.wait_runs("acid_ingest", count=len(DAYS), run_type="backfill")
    assert {r["state"] for r in runs} == {"success"}, af.logs()
    for r in runs:
        status, body = af.request(
            "GET", f"/api/v2/dags/acid_ingest/dagRuns/{r['dag_run_id']}/taskInstances"
        )
        tis = {t["task_id"]: t for t in json.loads(body)["task_instances"]}
        assert tis["ingest"]["try_number"] >= 2 and tis["ingest"]["state"] == "success"
    assert snapshot(cat) == first
    assert len(cat.commit_records("sales.orders")) == len(DAYS)  # every batch was skipped
