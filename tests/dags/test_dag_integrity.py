"""DAG integrity: every DAG file imports without errors, names its owner, retries and tags, has
the ids and params that are part of the interface, and does no heavy work at parse time."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"

PARSE = r"""
import json, sys, time
t = time.monotonic()
from airflow.dag_processing.dagbag import DagBag
t_airflow = time.monotonic() - t
t = time.monotonic()
bag = DagBag(dag_folder=sys.argv[1])
t_parse = time.monotonic() - t
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}, "parse_s": t_parse,
       "heavy": sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "great_expectations", "pyorc")
                or m.split(".")[:2] in (["acidflow", "acid"], ["acidflow", "catalog"], ["acidflow", "cdc"])),
       "dags": {}}
for dag_id, dag in bag.dags.items():
    out["dags"][dag_id] = {
        "tags": sorted(dag.tags), "owners": sorted({t.owner for t in dag.tasks}),
        "retries": sorted({t.retries for t in dag.tasks}), "tasks": sorted(t.task_id for t in dag.tasks),
        "operators": sorted({type(t).__name__ for t in dag.tasks}),
        "params": {k: dag.params.get_param(k).schema for k in dag.params},
        "schedule": str(getattr(dag.timetable, "expression", "")),
        "timetable": type(dag.timetable).__name__,
        "delta": str(getattr(dag.timetable, "delta", "")),
        "max_active_runs": dag.max_active_runs,
        "defaults": {k: dag.params[k] for k in dag.params},
        "outlets": {t.task_id: [repr(o) for o in (t.outlets or [])] for t in dag.tasks},
        "callbacks": {t.task_id: [type(c).__name__ for c in (t.on_failure_callback or [])]
                      for t in dag.tasks},
        "notifier": [{k: getattr(c, k, None) for k in ("to", "from_email", "smtp_conn_id")}
                     for t in dag.tasks[:1] for c in (t.on_failure_callback or [])],
        "catchup": dag.catchup}
print("RESULT " + json.dumps(out, default=str))
"""


def parse(home, **config):
    """Parse the DAG folder in a subprocess with ``AIRFLOW__ACIDFLOW__<KEY>`` = ``config``."""
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{DAGS}:{REPO / 'jobs'}",
        **{f"AIRFLOW__ACIDFLOW__{k.upper()}": v for k, v in config.items()},
    }
    r = subprocess.run(
        [sys.executable, "-c", PARSE, str(DAGS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, r.stderr[-3000:]
    return json.loads(line[-1][len("RESULT ") :])


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    return parse(tmp_path_factory.mktemp("airflow_home"))


DAG_IDS = {"acid_ingest", "acid_cdc", "acid_compaction", "acid_health"}


def test_every_dag_imports_without_errors(parsed):
    assert parsed["errors"] == {}
    assert set(parsed["dags"]) == DAG_IDS


def test_owners_retries_tags(parsed):
    for dag_id, d in parsed["dags"].items():
        assert d["owners"] == ["data-platform"], dag_id
        assert min(d["retries"]) >= 1, dag_id
        assert "acidflow" in d["tags"] and len(d["tags"]) >= 2, dag_id


def test_no_heavy_work_at_parse_time(parsed):
    # parsing the DAGs imports neither Spark, GX, pyorc nor our jobs package
    assert parsed["heavy"] == []


def test_interface_params_and_schedules(parsed):
    dags = parsed["dags"]
    cdc, ingest, comp = dags["acid_cdc"], dags["acid_ingest"], dags["acid_compaction"]
    assert cdc["params"]["format"]["enum"] == ["wal2json", "debezium", "goldengate"]
    assert cdc["params"]["source"]["enum"] == ["landing", "postgres", "kafka"]
    assert cdc["params"]["kafka_topics"]["type"] == "array"
    assert cdc["params"]["kafka_max_offsets"]["minimum"] == 0
    assert cdc["params"]["kafka_min_bad_records"]["minimum"] == 1
    assert cdc["params"]["kafka_value_format"]["enum"] == ["json", "avro"]
    assert cdc["params"]["quarantine_threshold"]["maximum"] == 1
    assert ingest["params"]["tables"]["type"] == "array"
    assert ingest["params"]["mode"]["enum"] == ["overwrite", "append", "upsert"]
    assert comp["params"]["dry_run"]["type"] == "boolean"
    assert comp["schedule"] == "0 2 * * *"
    assert ingest["schedule"] in ("@daily", "0 0 * * *")
    assert "AcidflowSparkSubmitOperator" in cdc["operators"]
    assert {"initiate", "worker", "clean"} <= set(comp["tasks"])
    assert {"cdc_upsert", "pull"} <= set(cdc["tasks"])


def test_schedules_run_one_at_a_time_without_catchup(parsed):
    dags = parsed["dags"]
    cdc, health = dags["acid_cdc"], dags["acid_health"]
    # acid_cdc every 5 minutes by default, acid_health every 15
    assert (cdc["schedule"], health["schedule"]) == ("*/5 * * * *", "*/15 * * * *")
    for dag_id, d in dags.items():
        assert d["max_active_runs"] <= (2 if dag_id == "acid_ingest" else 1), dag_id
        assert d["catchup"] is False, dag_id
    # the short-circuit between the pull and the Spark job
    assert cdc["tasks"] == ["cdc_upsert", "pending", "pull", "validate"]
    assert (
        "ShortCircuitOperator" in str(cdc["operators"])
        or "_ShortCircuitDecoratedOperator" in cdc["operators"]
    )
    assert health["tasks"] == ["check", "push_metrics"]
    assert {k for k, v in health["defaults"].items() if v is None} == {
        "initiated_max_s",
        "working_max_s",
        "failed_max",
        "failed_window_s",
        "txn_max_age_s",
        "slot_lag_max_bytes",
        "unqueued_max_s",
    }


def test_table_writers_declare_the_asset_alias(parsed):
    dags = parsed["dags"]
    alias = "AssetAlias(name='acidflow-tables', group='asset')"
    assert dags["acid_cdc"]["outlets"]["cdc_upsert"] == [alias]
    assert dags["acid_ingest"]["outlets"]["ingest"] == [alias]
    # the compactor rewrites files, not rows: no asset events (a DAG scheduled on the tables
    # would otherwise trigger itself)
    assert not any(dags["acid_compaction"]["outlets"].values())
    assert not dags["acid_cdc"]["outlets"]["validate"]


def test_no_notifier_without_recipients(parsed):
    for d in parsed["dags"].values():
        assert not any(d["callbacks"].values())


def test_configured_schedule_params_notifier_and_asset_trigger(tmp_path):
    p = parse(
        tmp_path,
        cdc_schedule="30",
        health_schedule="@continuous",
        alert_to="ops@example.com, dba@example.com",
        alert_smtp_conn_id="smtp_alerts",
        compaction_on_writes="true",
        cdc_params=json.dumps({"format": "goldengate", "input_path": "/data/landing"}),
    )
    assert p["errors"] == {}
    dags = p["dags"]
    assert dags["acid_cdc"]["timetable"] == "DeltaTriggerTimetable"
    assert dags["acid_cdc"]["delta"] == "0:00:30"
    assert dags["acid_health"]["timetable"] == "ContinuousTimetable"
    assert dags["acid_cdc"]["defaults"]["format"] == "goldengate"
    assert dags["acid_cdc"]["defaults"]["input_path"] == "/data/landing"
    assert dags["acid_compaction"]["timetable"] == "AssetOrTimeSchedule"
    for dag_id, d in dags.items():
        assert set(map(tuple, d["callbacks"].values())) == {("SmtpNotifier",)}, dag_id
    (n,) = dags["acid_health"]["notifier"]
    assert n == {
        "to": ["ops@example.com", "dba@example.com"],
        "from_email": "acidflow@localhost",
        "smtp_conn_id": "smtp_alerts",
    }


def test_bad_configuration_is_an_import_error_naming_the_key(tmp_path):
    p = parse(
        tmp_path,
        cdc_params='{"formt": "x"}',
        health_schedule="0",
        alert_notifier="nosuch.module:make",
    )
    errors = "\n".join(p["errors"].values())
    assert "cdc_params: unknown params ['formt']" in errors
    assert "health_schedule='0': the interval must be > 0 seconds" in errors
    assert "alert_notifier='nosuch.module:make': cannot load it" in errors


def test_params_are_validated_by_json_schema():
    from airflow.sdk import Param
    from airflow.sdk.exceptions import ParamValidationError

    p = Param(0.01, type="number", minimum=0, maximum=1)
    assert p.resolve(0.5) == 0.5
    with pytest.raises(ParamValidationError):
        p.resolve(2)
