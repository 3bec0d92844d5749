"""docker-compose.yml, validated offline (no Docker engine needed).

* ``docker-compose config -q`` accepts the file with every required variable set (dummy values)
  and refuses it, naming the variable, when any one of them is missing;
* structure (PyYAML): the services, healthchecks, one-shot init, the shared warehouse volume in
  every Airflow and Spark container, Airflow on PostgreSQL + LocalExecutor, ``spark_default`` on
  the standalone master (resolved by the Spark provider's own hook);
* no secret in the file: every password / secret / key value is a required ``${VAR:?...}``
  reference, and ``.env.example`` lists each such variable with an empty value.

Needs the ``docker-compose`` command (``make system-deps`` installs Debian's 1.29); skipped
with that hint when absent. An empty ``--env-file`` keeps a developer's ``.env`` out of it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
DOCKERFILE = REPO / "include" / "deploy" / "Dockerfile"

REQUIRED = [
    "POSTGRES_PASSWORD",
    "AIRFLOW_DB_PASSWORD",
    "ACIDFLOW_DB_PASSWORD",
    "AIRFLOW_ADMIN_PASSWORD",
    "AIRFLOW_FERNET_KEY",
    "AIRFLOW_API_SECRET_KEY",
    "AIRFLOW_JWT_SECRET",
]
AIRFLOW_SERVICES = [
    "airflow-init",
    "airflow-api-server",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
]
SPARK_SERVICES = ["spark-master", "spark-worker"]
LONG_RUNNING = ["postgres", *AIRFLOW_SERVICES[1:], *SPARK_SERVICES]
SECRET_KEY = re.compile(r"PASSWORD|SECRET|FERNET|TOKEN|_KEY$")
REQUIRED_REF = re.compile(r"^\$\{(?P<var>[A-Z0-9_]+):\?[^}]+\}$")
# scheme://user:password@host where user/password are literals or ${...} references
URL_CREDENTIALS = re.compile(r"://((?:\$\{[^}]*\}|[^:/@\s${}])*):((?:\$\{[^}]*\}|[^@/\s${}])*)@")


@pytest.fixture(scope="module")
def compose_bin() -> str:
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.skip(
            "docker-compose is not installed: run `make system-deps` "
            "(installs Debian's docker-compose 1.29; no engine needed)"
        )
    return exe


def _config(
    compose_bin: str, env: dict[str, str], tmp_path: Path, *extra: str
) -> subprocess.CompletedProcess:
    empty = tmp_path / "empty.env"
    empty.write_text("")
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in REQUIRED and not k.startswith(("AIRFLOW_", "ACIDFLOW_", "SPARK_"))
    }
    clean.update(env)
    return subprocess.run(
        [compose_bin, "--env-file", str(empty), "-f", str(COMPOSE), "config", *extra],
        cwd=REPO,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _dummy() -> dict[str, str]:
    return {v: f"dummy-{v.lower().replace('_', '-')}" for v in REQUIRED}


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def rendered(compose_bin, tmp_path_factory) -> dict:
    res = _config(compose_bin, _dummy(), tmp_path_factory.mktemp("compose"))
    assert res.returncode == 0, res.stderr
    return yaml.safe_load(res.stdout)


def _env(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


# ------------------------------------------------------------------------------ docker-compose


def test_config_valid_with_required_variables(compose_bin, tmp_path):
    res = _config(compose_bin, _dummy(), tmp_path, "-q")
    assert res.returncode == 0, f"docker-compose config rejected the file:\n{res.stderr}"


def test_config_without_variables_fails_naming_one(compose_bin, tmp_path):
    res = _config(compose_bin, {}, tmp_path, "-q")
    assert res.returncode != 0
    assert any(f"{v} must be set" in res.stderr for v in REQUIRED), res.stderr


@pytest.mark.parametrize("missing", REQUIRED)
def test_config_names_each_missing_variable(compose_bin, tmp_path, missing):
    env = _dummy()
    del env[missing]
    res = _config(compose_bin, env, tmp_path, "-q")
    assert res.returncode != 0, f"config accepted the file without {missing}"
    assert f"{missing} must be set" in res.stderr, res.stderr


def test_dummy_values_are_interpolated(rendered):
    env = _env(rendered["services"]["airflow-scheduler"])
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == (
        "postgresql+psycopg2://airflow:dummy-airflow-db-password@postgres:5432/airflow"
    )
    assert env["ACIDFLOW_CATALOG_URL"] == (
        "postgresql+psycopg2://acidflow:dummy-acidflow-db-password@postgres:5432/acidflow"
    )
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "dummy-airflow-jwt-secret"


# -------------------------------------------------------------------------------- structure


def test_services_present(rendered):
    services = rendered["services"]
    for name in ["postgres", *AIRFLOW_SERVICES, *SPARK_SERVICES]:
        assert name in services, f"service {name} missing; have {sorted(services)}"
    assert services["postgres"]["image"].startswith("postgres:15")


def test_healthchecks_and_startup_order(rendered):
    services = rendered["services"]
    for name in LONG_RUNNING:
        hc = services[name].get("healthcheck")
        assert hc and hc.get("test") and not hc.get("disable"), f"{name} has no healthcheck"
    init = services["airflow-init"]
    assert str(init.get("restart", "no")) == "no"
    assert init["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in AIRFLOW_SERVICES[1:]:
        deps = services[name]["depends_on"]
        assert deps["postgres"]["condition"] == "service_healthy", name
        assert deps["airflow-init"]["condition"] == "service_completed_successfully", name
    assert (
        services["airflow-scheduler"]["depends_on"]["spark-master"]["condition"]
        == "service_healthy"
    )
    assert services["spark-worker"]["depends_on"]["spark-master"]["condition"] == "service_healthy"


def _mount(m) -> tuple[str, str]:
    """(source, target) of a short ("src:dst[:mode]") or long (mapping) volume entry."""
    if isinstance(m, dict):
        return str(m.get("source")), str(m.get("target"))
    src, dst = (str(m).split(":") + [""])[:2]
    return src, dst


def test_shared_warehouse_volume(rendered):
    assert "warehouse" in rendered.get("volumes", {}), "named volume 'warehouse' not declared"
    for name in [*AIRFLOW_SERVICES, *SPARK_SERVICES]:
        mounts = rendered["services"][name].get("volumes", [])
        assert ("warehouse", "/warehouse") in [_mount(m) for m in mounts], (
            f"{name} does not mount the warehouse volume at /warehouse: {mounts}"
        )
        if name != "spark-master":
            assert _env(rendered["services"][name]).get("ACIDFLOW_WAREHOUSE") == "/warehouse"


def test_airflow_settings(rendered):
    services = rendered["services"]
    for name in AIRFLOW_SERVICES:
        env = _env(services[name])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor", name
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
        assert env["ACIDFLOW_CATALOG_URL"].startswith("postgresql+psycopg2://")
        assert env["AIRFLOW_CONN_SPARK_DEFAULT"] == "spark://spark-master:7077"
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith(
            "http://airflow-api-server:8080/"
        )
        for key in ("REPO", "PYSPARK_PYTHON", "JAVA_HOME"):
            assert env.get(f"AIRFLOW__ACIDFLOW__{key}"), f"{name}: AIRFLOW__ACIDFLOW__{key}"
        # every component signs/validates the same JWTs and decrypts the same connections
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"] and env["AIRFLOW__CORE__FERNET_KEY"]
    # the Spark driver runs in the scheduler: executors must reach it by name, not 127.0.0.1
    sched = _env(services["airflow-scheduler"])
    assert sched["AIRFLOW__ACIDFLOW__SPARK_LOCAL_IP"] == services["airflow-scheduler"]["hostname"]
    assert "8080" in str(services["airflow-api-server"]["ports"])


def test_image_paths_match_acidflow_keys(raw):
    """The [acidflow] keys name paths the Dockerfile creates."""
    text = DOCKERFILE.read_text()
    env = raw["x-airflow-env"]
    assert "openjdk-17" in text and "requirements.txt" in text
    assert "/opt/acidflow/venv" in text and env["AIRFLOW__ACIDFLOW__PYSPARK_PYTHON"].startswith(
        "/opt/acidflow/venv/bin/"
    )
    assert "WORKDIR /opt/acidflow" in text and env["AIRFLOW__ACIDFLOW__REPO"] == "/opt/acidflow"
    assert "/opt/java" in text and env["AIRFLOW__ACIDFLOW__JAVA_HOME"] == "/opt/java"
    assert "/opt/spark" in text
    for d in ("jobs", "dags", "plugins", "include"):
        assert f"COPY {d}/" in text, d
    for service in raw["services"].values():
        for m in service.get("volumes", []):
            host = str(m).split(":", 1)[0]
            if host.startswith("./"):
                assert (REPO / host).exists(), f"bind-mounted {host} does not exist"


def test_spark_default_resolves_to_the_master(rendered, monkeypatch):
    """The Spark provider's hook turns the connection into ``--master spark://spark-master:7077``."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    uri = _env(rendered["services"]["airflow-scheduler"])["AIRFLOW_CONN_SPARK_DEFAULT"]
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", uri)
    hook = SparkSubmitHook(conn_id="spark_default")
    assert hook._connection["master"] == "spark://spark-master:7077"


# -------------------------------------------------------------------------------- no secrets


def _walk_env(raw: dict):
    """(where, key, value) of every environment entry in the raw file (anchors resolved)."""
    blocks = [("x-airflow-env", raw.get("x-airflow-env", {}))]
    blocks += [(name, svc.get("environment") or {}) for name, svc in raw["services"].items()]
    for where, env in blocks:
        items = env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env)
        for k, v in items:
            yield where, k, "" if v is None else str(v)


def test_no_literal_secrets(raw):
    seen_required = set()
    for where, key, value in _walk_env(raw):
        if SECRET_KEY.search(key) and not key.endswith("_FILE"):
            m = REQUIRED_REF.match(value)
            assert m, (
                f"{where}: {key} must be a required ${{VAR:?message}} reference, got {value!r}"
            )
            seen_required.add(m["var"])
        for _user, password in URL_CREDENTIALS.findall(value):
            assert REQUIRED_REF.match(password), (
                f"{where}: {key} embeds credentials that are not a required reference: {value!r}"
            )
            seen_required.add(REQUIRED_REF.match(password)["var"])
    assert seen_required == set(REQUIRED), seen_required ^ set(REQUIRED)
    # nothing that looks like a password default anywhere in the file
    text = COMPOSE.read_text()
    for m in re.finditer(r"\$\{(\w*(?:PASSWORD|SECRET|KEY)\w*):?-", text):
        pytest.fail(f"secret variable {m[1]} has a default value in docker-compose.yml")


def test_env_example_documents_required_variables_without_values():
    lines = [ln.strip() for ln in ENV_EXAMPLE.read_text().splitlines()]
    values = dict(ln.split("=", 1) for ln in lines if ln and not ln.startswith("#") and "=" in ln)
    for var in REQUIRED:
        assert var in values, f".env.example does not list {var}"
        assert values[var] == "", f".env.example must not carry a value for {var}"
    for var, value in values.items():
        assert var in REQUIRED or not SECRET_KEY.search(var), var
    assert ".env" in (REPO / ".gitignore").read_text().split()
