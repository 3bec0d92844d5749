"""docker-compose.yml, validated offline (no Docker engine needed).

* ``docker-compose config -q`` accepts the file with every required variable set (dummy values)
  and refuses it, naming the variable, when any one of them is missing;
* structure (PyYAML): the services, healthchecks, one-shot init, the shared warehouse volume in
  every Airflow and Spark container, Airflow on PostgreSQL + LocalExecutor, ``spark_default`` on
  the standalone master (resolved by the Spark provider's own hook);
* the streaming and metastore services (Kafka, Kafka Connect + the Debezium registration, the
  Hive metastore): what their entry point ``include/deploy/services.py`` writes for them with the
  compose file's names, ports and volumes (the broker's KRaft settings, Connect's plugin path
  and converters, the metastore's ACID settings equal to the tests' metastore's), PostgreSQL
  with ``wal_level=logical``; the Dockerfile's sources, stages and Maven executions exist;
* no secret in the file: every password / secret / key value is a required ``${VAR:?...}``
  reference, and ``.env.example`` lists each such variable with an empty value.

Needs the ``docker-compose`` command (``make system-deps`` installs Debian's 1.29); skipped
with that hint when absent. An empty ``--env-file`` keeps a developer's ``.env`` out of it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from devservers.hms import HiveArtifacts, site_properties
from devservers.kafka import KafkaArtifacts, worker_properties
from tests.conftest import REPO

COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
DOCKERFILE = REPO / "include" / "deploy" / "Dockerfile"
SERVICES_PY = REPO / "include" / "deploy" / "services.py"

REQUIRED = [
    "POSTGRES_PASSWORD",
    "AIRFLOW_DB_PASSWORD",
    "ACIDFLOW_DB_PASSWORD",
    "AIRFLOW_ADMIN_PASSWORD",
    "AIRFLOW_FERNET_KEY",
    "AIRFLOW_API_SECRET_KEY",
    "AIRFLOW_JWT_SECRET",
    "HIVE_METASTORE_DB_PASSWORD",
    "SOURCE_DB_PASSWORD",
]
AIRFLOW_SERVICES = [
    "airflow-init",
    "airflow-api-server",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
]
SPARK_SERVICES = ["spark-master", "spark-worker"]
STREAM_SERVICES = ["kafka", "kafka-connect", "hive-metastore"]
ONE_SHOT = ["airflow-init", "debezium-register"]
LONG_RUNNING = ["postgres", *AIRFLOW_SERVICES[1:], *SPARK_SERVICES, *STREAM_SERVICES]
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
        if k not in REQUIRED
        and not k.startswith(
            ("AIRFLOW_", "ACIDFLOW_", "SPARK_", "KAFKA_", "HIVE_", "SOURCE_DB_", "DEBEZIUM_")
        )
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
    for name in ["postgres", *AIRFLOW_SERVICES, *SPARK_SERVICES, *STREAM_SERVICES, *ONE_SHOT]:
        assert name in services, f"service {name} missing; have {sorted(services)}"
    assert services["postgres"]["image"].startswith("postgres:15")
    # one image for everything else, built from the Dockerfile: no third-party image
    for name, svc in services.items():
        if name != "postgres":
            assert svc["image"] == "acidflow:latest", name
            assert svc["build"]["dockerfile"] == "include/deploy/Dockerfile", name


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
    streaming = {
        "kafka-connect": {"kafka": "service_healthy"},
        "debezium-register": {"postgres": "service_healthy", "kafka-connect": "service_healthy"},
        "hive-metastore": {"postgres": "service_healthy"},
    }
    for name, deps in streaming.items():
        got = {d: c["condition"] for d, c in services[name]["depends_on"].items()}
        assert got == deps, name
    assert str(services["debezium-register"].get("restart", "no")) == "no"


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


# ------------------------------------------------------------- streaming and metastore services


@pytest.fixture(scope="module")
def services_py():
    """include/deploy/services.py, the entry point of the kafka, kafka-connect,
    debezium-register and hive-metastore containers."""
    spec = importlib.util.spec_from_file_location("acidflow_deploy_services", SERVICES_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entry_args(services_py, service: dict):
    """The container's ``services.py`` command line, parsed with its defaults."""
    cmd = service["command"]
    assert cmd[:2] == ["python", "/opt/acidflow/include/deploy/services.py"], cmd
    return services_py.parser().parse_args(cmd[2:])


def _fake_home(artifacts) -> None:
    """Empty stand-ins for the files ``locate`` checks (the real jars: test_services.py)."""
    for path in artifacts.missing():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def _properties(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


def test_postgres_runs_with_logical_wal(rendered):
    cmd = rendered["services"]["postgres"]["command"]
    assert cmd[0] == "postgres"
    settings = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-c"]
    assert "wal_level=logical" in settings, cmd


def test_stream_services_stay_on_the_compose_network(rendered):
    for name in [*STREAM_SERVICES, *ONE_SHOT]:
        assert not rendered["services"][name].get("ports"), f"{name} publishes a port"


def test_kafka_broker(rendered, services_py, tmp_path):
    svc = rendered["services"]["kafka"]
    args = _entry_args(services_py, svc)
    # the log directory is on the named volume
    assert "kafka-data" in rendered["volumes"]
    mounts = dict(_mount(m) for m in svc["volumes"])
    assert args.data_dir.is_relative_to(mounts["kafka-data"])
    assert args.host == svc["hostname"] == "kafka"
    env = _env(svc)
    cluster_id = env["KAFKA_CLUSTER_ID"]
    # a Kafka Uuid: 16 bytes in URL-safe base64 without padding
    import base64

    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
    assert "python" in svc["healthcheck"]["test"] and "kafka-ready" in svc["healthcheck"]["test"]

    home = tmp_path / "kafka"
    _fake_home(KafkaArtifacts(home))
    fmt, server = services_py.kafka_commands(
        home=home,
        data_dir=tmp_path / "data",
        conf_dir=tmp_path / "conf",
        cluster_id=cluster_id,
        host=args.host,
        port=args.port,
        controller_port=args.controller_port,
    )
    assert fmt[fmt.index("--cluster-id") + 1] == cluster_id
    assert "format" in fmt and "--ignore-formatted" in fmt  # idempotent on every start
    assert server[-2] == "kafka.Kafka"
    props = _properties(Path(server[-1]))
    assert props["process.roles"] == "broker,controller"
    assert props["advertised.listeners"] == "PLAINTEXT://kafka:9092"
    assert props["listeners"] == "PLAINTEXT://:9092,CONTROLLER://:9093"
    assert props["controller.quorum.voters"] == "1@kafka:9093"
    assert props["log.dirs"] == str(tmp_path / "data")


def test_kafka_connect_worker(rendered, services_py, tmp_path):
    svc = rendered["services"]["kafka-connect"]
    args = _entry_args(services_py, svc)
    assert args.host == svc["hostname"] == "kafka-connect"
    assert args.bootstrap_servers == "kafka:9092"
    assert "http://localhost:8083/connectors" in svc["healthcheck"]["test"]

    # the image's Kafka folder (the Dockerfile copies the fetched artifacts there)
    assert args.home == Path("/opt/kafka")
    home = tmp_path / "kafka"
    _fake_home(KafkaArtifacts(home))
    cmd = services_py.connect_command(
        home=home,
        conf_dir=tmp_path / "conf",
        bootstrap_servers=args.bootstrap_servers,
        host=args.host,
        rest_port=args.rest_port,
    )
    assert cmd[-2] == "org.apache.kafka.connect.cli.ConnectDistributed"
    props = _properties(Path(cmd[-1]))
    assert props["plugin.path"] == str(home / "plugins")
    json_converter = "org.apache.kafka.connect.json.JsonConverter"
    for side in ("key", "value"):
        assert props[f"{side}.converter"] == json_converter
        assert props[f"{side}.converter.schemas.enable"] == "true"
    # the tests' worker settings, except the standalone offsets file
    dev = worker_properties(
        bootstrap_servers=args.bootstrap_servers,
        rest_port=args.rest_port,
        offsets_file=tmp_path / "offsets",
        plugin_path=home / "plugins",
        host=args.host,
    )
    for key in ("key.converter", "value.converter", "plugin.discovery", "rest.advertised.port"):
        assert props[key] == dev[key], key
    assert "offset.storage.file.filename" not in props
    for key in ("group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic"):
        assert props[key], key
    assert props["rest.advertised.host.name"] == "kafka-connect"
    assert props["listeners"] == "http://:8083"
    # the only environment variable a connector config can read
    assert props["config.providers.env.param.allowlist.pattern"] == "^SOURCE_DB_PASSWORD$"
    assert _env(svc)["SOURCE_DB_PASSWORD"] == "dummy-source-db-password"


def test_airflow_kafka_settings(rendered, monkeypatch, tmp_path):
    """The Airflow services find Spark's Kafka connector where the image has it, and acid_cdc's
    Kafka defaults point at this deployment's broker and Debezium transaction topic."""
    import importlib

    from acidflow.spark import kafka_spark_jars

    prefix = _env(rendered["services"]["debezium-register"])["DEBEZIUM_TOPIC_PREFIX"]
    for name in AIRFLOW_SERVICES:
        env = _env(rendered["services"][name])
        assert env["ACIDFLOW_KAFKA_SPARK_JARS"] == "/opt/kafka/spark", name
        params = json.loads(env["AIRFLOW__ACIDFLOW__CDC_PARAMS"])
        assert params == {
            "kafka_bootstrap_servers": "kafka:9092",
            "kafka_transaction_topic": f"{prefix}.transaction",
        }, name
    assert params["kafka_bootstrap_servers"] == f"{rendered['services']['kafka']['hostname']}:9092"
    # the variable is the one acidflow.spark reads for the connector's folder
    (tmp_path / "spark-sql-kafka.jar").touch()
    monkeypatch.setenv("ACIDFLOW_KAFKA_SPARK_JARS", str(tmp_path))
    assert kafka_spark_jars() == [str(tmp_path / "spark-sql-kafka.jar")]
    # the DAG accepts these defaults (unknown names would fail its import)
    monkeypatch.setenv("AIRFLOW__ACIDFLOW__CDC_PARAMS", env["AIRFLOW__ACIDFLOW__CDC_PARAMS"])
    spec = importlib.util.spec_from_file_location("acid_cdc_compose", REPO / "dags" / "acid_cdc.py")
    dag_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dag_module)
    assert dag_module.DEFAULTS["kafka_bootstrap_servers"] == "kafka:9092"
    assert dag_module.DEFAULTS["source"] == "landing"  # the deployment does not switch sources


def test_debezium_registration(rendered, services_py):
    svc = rendered["services"]["debezium-register"]
    args = _entry_args(services_py, svc)
    assert args.connect_url == "http://kafka-connect:8083"
    assert (args.db_host, args.db_port) == ("postgres", 5432)
    env = _env(svc)
    assert "SOURCE_DB_PASSWORD" not in env  # the worker resolves it, not this one-shot
    # the same source database and publication postgres-init.sh created
    pg_env = _env(rendered["services"]["postgres"])
    for key in ("SOURCE_DB_USER", "SOURCE_DB_NAME", "SOURCE_DB_PUBLICATION"):
        assert env[key] == pg_env[key], key
    config = services_py.debezium_config(env, db_host=args.db_host, db_port=args.db_port)
    assert config["database.hostname"] == "postgres"
    assert config["database.password"] == "${env:SOURCE_DB_PASSWORD}"
    assert config["plugin.name"] == "pgoutput"
    assert config["provide.transaction.metadata"] == "true"
    assert config["publication.name"] == pg_env["SOURCE_DB_PUBLICATION"]
    assert config["topic.prefix"] == env["DEBEZIUM_TOPIC_PREFIX"] == "acidflow"
    assert "table.include.list" not in config  # empty by default: the whole source database
    narrowed = services_py.debezium_config(
        {**env, "DEBEZIUM_TABLE_INCLUDE_LIST": "public.orders"}, db_host="postgres", db_port=5432
    )
    assert narrowed["table.include.list"] == "public.orders"


def test_hive_metastore(rendered, services_py, tmp_path, monkeypatch):
    svc = rendered["services"]["hive-metastore"]
    args = _entry_args(services_py, svc)
    assert args.host == svc["hostname"] == "hive-metastore"
    assert (args.db_host, args.db_port) == ("postgres", 5432)
    assert "9083" in " ".join(svc["healthcheck"]["test"])
    mounts = dict(_mount(m) for m in svc["volumes"])
    assert mounts["warehouse"] == str(args.warehouse) == "/warehouse"
    assert args.home == Path("/opt/hive")

    env = _env(svc)
    pg_env = _env(rendered["services"]["postgres"])
    for key in ("HIVE_METASTORE_DB_USER", "HIVE_METASTORE_DB_NAME", "HIVE_METASTORE_DB_PASSWORD"):
        assert env[key] == pg_env[key], key  # the role postgres-init.sh created
    monkeypatch.setenv("HIVE_METASTORE_DB_PASSWORD", env["HIVE_METASTORE_DB_PASSWORD"])
    url = services_py.metastore_db_url(env, args.db_host, args.db_port)
    assert (
        url == "postgresql+psycopg2://hive:dummy-hive-metastore-db-password@postgres:5432/metastore"
    )

    home = tmp_path / "hive"
    _fake_home(HiveArtifacts(home))
    conf = tmp_path / "conf"
    init, server, _ = services_py.metastore_commands(
        home=home,
        conf_dir=conf,
        warehouse=args.warehouse,
        db_url=url,
        host=args.host,
        port=args.port,
    )
    assert init[-4:] == [
        "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
        "-initSchema",
        "-dbType",
        "postgres",
    ]
    assert server[-3:] == ["org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", "9083"]
    from xml.etree import ElementTree

    site = conf / "metastore-site.xml"
    assert site.stat().st_mode & 0o777 == 0o600  # it holds the database password
    props = {
        p.findtext("name"): p.findtext("value")
        for p in ElementTree.parse(site).getroot().iter("property")
    }
    assert props["javax.jdo.option.ConnectionURL"] == "jdbc:postgresql://postgres:5432/metastore"
    assert props["metastore.warehouse.dir"] == "file:///warehouse"
    # Hive 3 ACID and the compactor switches: exactly the tests' metastore's (one home)
    from devservers.hms import backing_db

    dev = site_properties(db=backing_db(None, tmp_path), warehouse=tmp_path, port=1)
    acid = {k for k in dev if "txn" in k or "concurrency" in k or "compactor" in k}
    assert {
        "hive.txn.manager",
        "hive.support.concurrency",
        "metastore.compactor.initiator.on",
    } <= acid
    assert {k: props[k] for k in acid} == {k: dev[k] for k in acid}
    assert props["hive.txn.manager"] == "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"


# ------------------------------------------------------------------------------- Dockerfile


def _dockerignored(rel: str) -> bool:
    """Whether .dockerignore keeps ``rel`` (or a folder above it) out of the build context:
    its patterns in order, the last one matching wins, ``!`` re-includes (Docker's rules, for
    the plain and ``**/`` patterns the file uses)."""
    from fnmatch import fnmatchcase

    rules = [
        ln.strip()
        for ln in (REPO / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    parts = Path(rel).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for rule in rules:
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").strip("/")
        patterns = (
            [pattern, pattern.removeprefix("**/")] if pattern.startswith("**/") else [pattern]
        )
        for cand in candidates:
            names = [cand, cand.rsplit("/", 1)[-1]] if pattern.startswith("**/") else [cand]
            if any(fnmatchcase(n, p) for n in names for p in patterns):
                ignored = not negate
                break
    return ignored


def test_dockerignore_matcher():
    assert _dockerignored("tests/deploy/test_compose.py")
    assert _dockerignored("tools/trino/pom.xml")
    assert _dockerignored("jobs/acidflow/__pycache__/x.pyc")
    assert not _dockerignored("jobs/acidflow/config.py")


def _dockerfile_stages(text: str) -> list[str]:
    return re.findall(r"^FROM\s+\S+(?:\s+AS\s+(\S+))?", text, flags=re.M | re.I)


def test_dockerfile_sources_and_maven_executions_exist():
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    stages = [s for s in _dockerfile_stages(text) if s]
    assert {"kafka-jars", "kafka-spark-jars", "hive-jars"} <= set(stages)
    assert "ARG MAVEN_IMAGE=maven:3-eclipse-temurin-17" in text
    for m in re.finditer(r"^COPY\s+(.+)$", text, flags=re.M):
        parts = m[1].split()
        flags = [p for p in parts if p.startswith("--")]
        paths = [p for p in parts if not p.startswith("--")]
        sources = paths[:-1]
        frm = [f.split("=", 1)[1] for f in flags if f.startswith("--from=")]
        if frm:
            assert frm[0] in stages, f"COPY --from={frm[0]}: no such stage"
            continue
        for src in sources:
            assert (REPO / src).exists(), f"COPY source {src} does not exist"
            assert not _dockerignored(src.rstrip("/")), f"COPY source {src} is in .dockerignore"
            if (REPO / src).is_dir():
                for f in (REPO / src).rglob("*.py"):
                    rel = f.relative_to(REPO).as_posix()
                    assert not _dockerignored(rel), f"{rel} is in .dockerignore"
    # each mvn run names a pom of the repository and only executions that pom defines (the
    # versions live in the pom; the Makefile's kafka-jars / hive-jars run the same ones)
    runs = re.findall(r"mvn\s[^&]*?-f\s+(\S+)\s([^&]*)", text)
    assert len(runs) == 3, runs
    for pom_path, goals in runs:
        rel = pom_path.removeprefix("/build/")
        pom = REPO / rel
        assert pom.exists(), pom_path
        assert f"COPY {rel} {pom_path}" in text
        ids = set(re.findall(r"<execution>\s*<id>([^<]+)</id>", pom.read_text()))
        wanted = re.findall(r"dependency:[\w-]+@([\w-]+)", goals)
        assert wanted and set(wanted) <= ids, (pom_path, wanted, ids)
    # the final image has the artifacts where services.py looks for them
    assert "COPY --from=kafka-jars /out/kafka/ /opt/kafka/" in text
    assert "COPY --from=hive-jars /out/hive/ /opt/hive/" in text
    assert "COPY --from=kafka-spark-jars /out/kafka-spark/ /opt/kafka/spark/" in text
    assert "COPY tools/devservers/ /opt/acidflow/tools/devservers/" in text
