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
        "catchup": dag.catchup}
print("RESULT " + json.dumps(out, default=str))
"""


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    env = {"AIRFLOW_HOME": str(tmp_path_factory.mktemp("airflow_home")),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(DAGS)}
    r = subprocess.run([sys.executable, "-c", PARSE, str(DAGS)], env=env, capture_output=True,
                       text=True, timeout=300)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, r.stderr[-3000:]
    return json.loads(line[-1][len("RESULT "):])


def test_every_dag_imports_without_errors(parsed):
    assert parsed["errors"] == {}
    assert set(parsed["dags"]) == {"acid_ingest", "acid_cdc", "acid_compaction"}


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
    assert cdc["params"]["source"]["enum"] == ["landing", "postgres"]
    assert cdc["params"]["quarantine_threshold"]["maximum"] == 1
    assert ingest["params"]["tables"]["type"] == "array"
    assert ingest["params"]["mode"]["enum"] == ["overwrite", "append", "upsert"]
    assert comp["params"]["dry_run"]["type"] == "boolean"
    assert comp["schedule"] == "0 2 * * *"
    assert ingest["schedule"] in ("@daily", "0 0 * * *")
    assert "AcidflowSparkSubmitOperator" in cdc["operators"]
    assert {"initiate", "worker", "clean"} <= set(comp["tasks"])
    assert {"cdc_upsert", "pull"} <= set(cdc["tasks"])


def test_params_are_validated_by_json_schema():
    from airflow.sdk import Param
    from airflow.sdk.exceptions import ParamValidationError

    p = Param(0.01, type="number", minimum=0, maximum=1)
    assert p.resolve(0.5) == 0.5
    with pytest.raises(ParamValidationError):
        p.resolve(2)
