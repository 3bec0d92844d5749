"""The DAGs' package ``acidflow_airflow`` without a scheduler: the health report's reading, the
schedules' forms, the CDC pull's no-op, what the Spark operator hands spark-submit, and that the
executor zip leaves the package out."""

from __future__ import annotations

import json
import zipfile
from datetime import timedelta

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from acidflow.jobszip import build_jobs_zip
from acidflow_airflow.cdc import pull_argv, pull_changes
from acidflow_airflow.health import HealthOutputError, health_argv, read_health_report
from acidflow_airflow.schedules import param_defaults, schedule


def test_the_executor_zip_holds_acidflow_only(tmp_path):
    with zipfile.ZipFile(build_jobs_zip(tmp_path)) as z:
        roots = {n.split("/")[0] for n in z.namelist()}
    assert roots == {"acidflow"}


def test_healthy_report_is_returned():
    report = {"catalog": "c1", "findings": [], "healthy": True}
    assert read_health_report(0, "log line\n" + json.dumps(report) + "\n") == report


def test_findings_fail_without_retry_and_list_each_one():
    report = {
        "catalog": "c1",
        "findings": [
            {"kind": "stuck_working", "message": "compaction 3 working for 3 h"},
            {"kind": "stale_txn", "message": "txn 9 open for 7 h"},
        ],
    }
    with pytest.raises(AirflowFailException) as info:
        read_health_report(1, json.dumps(report))
    text = str(info.value)
    assert "2 finding(s) in c1" in text
    assert "- [stuck_working] compaction 3 working for 3 h" in text
    assert "- [stale_txn] txn 9 open for 7 h" in text


@pytest.mark.parametrize(
    "code, out, says",
    [
        (0, "not json at all", "the last stdout line is not JSON"),
        (0, "", "the last stdout line is not JSON"),
        (0, "[1, 2]", "expected a JSON object, got list"),
        (1, '{"catalog": "c1", "findings": [', "the last stdout line is not JSON"),
        (1, '{"catalog": "c1"}', "has no 'findings' list"),
    ],
)
def test_a_bad_report_is_a_clear_retried_error(code, out, says):
    with pytest.raises(HealthOutputError, match="acidflow health --json") as info:
        read_health_report(code, out)
    assert says in str(info.value)
    assert not isinstance(info.value, AirflowFailException)


def test_a_check_that_could_not_run_is_retried_with_its_output():
    with pytest.raises(AirflowException, match=r"could not run \(exit 2\): Traceback") as info:
        read_health_report(2, "", "Traceback ...\ncatalog unreachable")
    assert "catalog unreachable" in str(info.value)


def test_health_argv_takes_the_set_thresholds_and_the_slots():
    assert health_argv({"initiated_max_s": None, "failed_max": 3}) == [
        "health",
        "--json",
        "--failed-max",
        "3",
    ]
    assert health_argv({"postgres_conn_id": "pg", "slots": ["a", "b"]})[-2:] == ["--slot", "a,b"]


def test_schedule_forms(monkeypatch):
    key = "AIRFLOW__ACIDFLOW__TEST_SCHEDULE"
    monkeypatch.setenv(key, "30")
    assert schedule("test_schedule", "@daily") == timedelta(seconds=30)
    monkeypatch.setenv(key, "none")
    assert schedule("test_schedule", "@daily") is None
    monkeypatch.setenv(key, "0")
    with pytest.raises(ValueError, match="test_schedule='0': the interval must be > 0"):
        schedule("test_schedule", "@daily")
    monkeypatch.delenv(key)
    assert schedule("test_schedule", "@daily") == "@daily"


def test_param_defaults_reject_unknown_names(monkeypatch):
    monkeypatch.setenv("AIRFLOW__ACIDFLOW__TEST_PARAMS", '{"formt": "x"}')
    with pytest.raises(ValueError, match=r"test_params: unknown params \['formt'\]"):
        param_defaults("test_params", {"format": "wal2json"})
    monkeypatch.setenv("AIRFLOW__ACIDFLOW__TEST_PARAMS", '{"format": "debezium"}')
    assert param_defaults("test_params", {"format": "wal2json"}) == {"format": "debezium"}


def test_pull_does_nothing_unless_the_source_is_postgres(monkeypatch):
    def no_subprocess(*a, **k):
        raise AssertionError("nothing should run")

    monkeypatch.setattr("acidflow_airflow.cdc.SubprocessHook.run_command", no_subprocess)
    assert "nothing to pull" in pull_changes({"source": "landing", "input_path": "/x"})
    with pytest.raises(AirflowException, match="needs the param postgres_conn_id"):
        pull_changes(
            {"source": "postgres", "postgres_conn_id": "", "slot": "s", "input_path": "/x"}
        )


def test_pull_argv_keeps_the_dsn_off_the_command_line():
    argv = pull_argv({"slot": "acidflow", "input_path": "/land", "postgres_conn_id": "pg"})
    assert argv == [
        "-m",
        "acidflow.cli",
        "cdc",
        "pull",
        "--slot",
        "acidflow",
        "--landing",
        "/land",
        "--create-slot",
    ]


def test_the_operator_hands_its_run_settings_to_spark_submit(monkeypatch, tmp_path):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from acidflow.lineage import LINEAGE_ENV
    from acidflow_airflow.operator import AcidflowSparkSubmitOperator

    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"})
    )
    monkeypatch.setattr("acidflow_airflow.operator.build_jobs_zip", lambda: tmp_path / "a.zip")
    submitted = []

    def submit(hook, application="", **kwargs):
        cmd = hook._build_spark_submit_command(application)
        submitted.append((cmd, dict(hook._env or {})))
        with open(hook._env[LINEAGE_ENV], "w") as f:
            json.dump({"job": "validate", "inputs": [], "outputs": []}, f)

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    op = AcidflowSparkSubmitOperator(
        task_id="validate", subcommand="validate", args=["--db", "shop"]
    )
    op.execute({})  # type: ignore[arg-type]
    ((cmd, env),) = submitted
    assert cmd[-4:] == [op.application, "validate", "--db", "shop"]
    assert cmd[cmd.index("--py-files") + 1] == str(tmp_path / "a.zip")
    assert env["PYSPARK_PYTHON"] and LINEAGE_ENV in env
    assert op.lineage == {"job": "validate", "inputs": [], "outputs": []}


def test_compaction_commands_follow_the_params():
    from acidflow_airflow.compaction import clean_command, initiate_command, worker_args

    dry = initiate_command({"dry_run": True, "table_filter": "shop.*"})
    assert dry.endswith("jobs/submit.py compact --initiate --dry-run --table-filter 'shop.*'")
    assert "--dry-run" not in initiate_command({"dry_run": False, "table_filter": ""})
    assert initiate_command({"dry_run": False, "table_filter": ""}).endswith("--table-filter ''")
    assert clean_command({"dry_run": True}) == "echo 'dry run: nothing to clean'"
    assert clean_command({"dry_run": False}).endswith("jobs/submit.py clean")
    assert worker_args("[3, 4]") == [["--worker", "--id", "3"], ["--worker", "--id", "4"]]
    assert worker_args("") == []
    with pytest.raises(ValueError, match="not JSON"):
        worker_args("queued 3")
