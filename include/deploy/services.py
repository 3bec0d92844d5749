#!/usr/bin/env python
"""Entry points of docker-compose.yml's JVM services, run in the acidflow image:

    services.py kafka              a single KRaft node (broker + controller): format its log
                                   directory on first start, then run the broker
    services.py kafka-connect      a distributed Kafka Connect worker (Debezium in plugin.path)
    services.py hive-metastore     Hive 3.1.3's metastore on PostgreSQL: schematool -initSchema
                                   when the database has no schema yet, then the thrift server
    services.py register-connector the Debezium PostgreSQL connector, created or updated through
                                   Connect's REST API (one-shot)
    services.py kafka-ready        healthcheck: the broker answers a Metadata request listing
                                   itself

Why Python and not shell: every property these servers get comes from ``tools/devservers``
(``devservers.kafka.broker_properties`` / ``worker_properties``, ``devservers.hms
.site_properties``), the functions the tests' servers use, so the deployment and the tests run
with the same settings and each list has one home. Only what differs in a deployment is set
here: host names and fixed ports of the compose network, storage in volumes, Connect's
distributed mode (its configs, offsets and status in Kafka topics), PostgreSQL as the
metastore's database. The artifact folders have the layout of ``make kafka-jars`` /
``make hive-jars`` (the Dockerfile fetches them with the same poms), so ``KafkaArtifacts`` /
``HiveArtifacts`` give the classpaths and check that the pinned jars are there.

Secrets come from the environment only and are never printed: ``HIVE_METASTORE_DB_PASSWORD``
goes into the metastore's ``metastore-site.xml`` (mode 600, in the container's /tmp), the source
database's password reaches Debezium as ``${env:SOURCE_DB_PASSWORD}``, resolved inside the
Connect worker by Kafka's ``EnvVarConfigProvider``: it is neither sent over REST nor stored in
the config topic.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# /opt/acidflow/include/deploy/services.py -> /opt/acidflow (or a checkout): tools/ holds devservers
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

DEFAULT_HEAP = ("-Xmx1g",)
#: Connect's internal topics (distributed mode); one broker, so replication factor 1.
CONNECT_TOPICS = {
    "config.storage.topic": "acidflow-connect-configs",
    "offset.storage.topic": "acidflow-connect-offsets",
    "status.storage.topic": "acidflow-connect-status",
}
#: The only environment variable a connector config may reference as ``${env:NAME}``.
SOURCE_PASSWORD_ENV = "SOURCE_DB_PASSWORD"


class ServiceError(RuntimeError):
    """A required setting is missing or a preparation step failed (the message says which)."""


def required_env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise ServiceError(f"{name} must be set (see .env.example)")
    return value


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ServiceError("no java on PATH and none in $JAVA_HOME")
    return found


def heap() -> list[str]:
    """``$JAVA_HEAP_OPTS`` (e.g. ``-Xms256m -Xmx2g``), default ``-Xmx1g``."""
    return os.environ.get("JAVA_HEAP_OPTS", "").split() or list(DEFAULT_HEAP)


def _private_file(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` readable by the owner only (it may hold a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


# ----------------------------------------------------------------------------------- kafka


def kafka_commands(
    *,
    home: Path,
    data_dir: Path,
    conf_dir: Path,
    cluster_id: str,
    host: str,
    port: int,
    controller_port: int,
) -> tuple[list[str], list[str]]:
    """Write ``server.properties`` and ``log4j2.properties`` into ``conf_dir``; return the
    storage format command (idempotent: ``--ignore-formatted`` leaves a formatted log directory
    as it is, cluster id included) and the broker command."""
    from devservers.kafka import (
        _LOG4J2,
        BROKER_MAIN,
        STORAGE_TOOL_MAIN,
        KafkaArtifacts,
        broker_properties,
        write_properties,
    )

    arts = KafkaArtifacts.locate(home)
    conf_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    props = broker_properties(
        port=port,
        controller_port=controller_port,
        log_dir=data_dir,
        host=host,
        # bind every interface of the container; clients and the controller quorum use `host`
        # (advertised.listeners, controller.quorum.voters)
        extra={"listeners": f"PLAINTEXT://:{port},CONTROLLER://:{controller_port}"},
    )
    props_file = write_properties(conf_dir / "server.properties", props)
    log4j = conf_dir / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    base = [
        java(),
        *heap(),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        arts.classpath(),
    ]
    fmt = [
        *base,
        STORAGE_TOOL_MAIN,
        "format",
        "--cluster-id",
        cluster_id,
        "--config",
        str(props_file),
        "--ignore-formatted",
    ]
    return fmt, [*base, BROKER_MAIN, str(props_file)]


def kafka_ready(host: str, port: int) -> bool:
    """The broker at ``host:port`` answers a Metadata request that lists itself."""
    import struct

    from devservers.kafka_wire import metadata

    try:
        _cluster, brokers = metadata(host, port, timeout_s=5.0)
    except (OSError, struct.error):
        return False
    return f"{host}:{port}" in brokers


# --------------------------------------------------------------------------- kafka connect


def connect_properties(
    *, bootstrap_servers: str, plugin_path: Path, host: str, rest_port: int, group_id: str
) -> dict[str, str]:
    """The distributed worker's properties: the tests' worker (converters, plugin path and
    discovery) without the standalone offsets file, plus the group, the internal topics at
    replication factor 1, the REST API on every interface (advertised as ``host``) and the
    ``env`` config provider limited to :data:`SOURCE_PASSWORD_ENV`."""
    from devservers.kafka import worker_properties

    props = worker_properties(
        bootstrap_servers=bootstrap_servers,
        rest_port=rest_port,
        offsets_file=Path("/dev/null"),
        plugin_path=plugin_path,
        host=host,
    )
    del props["offset.storage.file.filename"]  # standalone only: offsets go to a topic here
    props.update(
        {
            "group.id": group_id,
            **CONNECT_TOPICS,
            **{t.replace(".topic", ".replication.factor"): "1" for t in CONNECT_TOPICS},
            "listeners": f"http://:{rest_port}",
            "config.providers": "env",
            "config.providers.env.class": (
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
            ),
            "config.providers.env.param.allowlist.pattern": f"^{SOURCE_PASSWORD_ENV}$",
        }
    )
    return props


def connect_command(
    *, home: Path, conf_dir: Path, bootstrap_servers: str, host: str, rest_port: int
) -> list[str]:
    """Write ``worker.properties`` and ``log4j2.properties`` into ``conf_dir``; return the
    distributed worker's command."""
    from devservers.kafka import _LOG4J2, KafkaArtifacts, write_properties

    arts = KafkaArtifacts.locate(home)
    conf_dir.mkdir(parents=True, exist_ok=True)
    props_file = write_properties(
        conf_dir / "worker.properties",
        connect_properties(
            bootstrap_servers=bootstrap_servers,
            plugin_path=arts.plugins_dir,
            host=host,
            rest_port=rest_port,
            group_id="acidflow-connect",
        ),
    )
    log4j = conf_dir / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    return [
        java(),
        *heap(),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        arts.classpath(),
        "org.apache.kafka.connect.cli.ConnectDistributed",
        str(props_file),
    ]


def debezium_config(env: Mapping[str, str], *, db_host: str, db_port: int) -> dict[str, str]:
    """The Debezium PostgreSQL connector's config from the environment: ``SOURCE_DB_USER`` /
    ``SOURCE_DB_NAME`` / ``SOURCE_DB_PUBLICATION`` (the publication postgres-init.sh created),
    ``DEBEZIUM_TOPIC_PREFIX``, ``DEBEZIUM_TABLE_INCLUDE_LIST`` (empty: every table the
    publication has), ``DEBEZIUM_SLOT_NAME``. pgoutput, transaction metadata on (BEGIN/END
    events: acidflow commits whole source transactions), tombstones after deletes."""
    from devservers.kafka import DEBEZIUM_POSTGRES_CONNECTOR

    def get(name: str) -> str:
        if not env.get(name):
            raise ServiceError(f"{name} must be set")
        return env[name]

    config = {
        "connector.class": DEBEZIUM_POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "database.hostname": db_host,
        "database.port": str(db_port),
        "database.user": get("SOURCE_DB_USER"),
        # resolved by the worker (EnvVarConfigProvider): the password stays in its environment
        "database.password": f"${{env:{SOURCE_PASSWORD_ENV}}}",
        "database.dbname": get("SOURCE_DB_NAME"),
        "topic.prefix": get("DEBEZIUM_TOPIC_PREFIX"),
        "plugin.name": "pgoutput",
        "slot.name": get("DEBEZIUM_SLOT_NAME"),
        "publication.name": get("SOURCE_DB_PUBLICATION"),
        # the publication exists (FOR ALL TABLES, created by the superuser at init): the
        # connector's role need not own the tables
        "publication.autocreate.mode": "disabled",
        "provide.transaction.metadata": "true",
        "tombstones.on.delete": "true",
    }
    if env.get("DEBEZIUM_TABLE_INCLUDE_LIST"):
        config["table.include.list"] = env["DEBEZIUM_TABLE_INCLUDE_LIST"]
    return config


def register_connector(url: str, name: str, config: Mapping[str, str]) -> dict:
    """Create or update connector ``name`` (``PUT /connectors/<name>/config``: idempotent, so
    the one-shot can run on every ``up``); returns Connect's answer.

    Raises:
        ServiceError: Connect refused the config (its status and message).
    """
    import requests

    resp = requests.put(f"{url}/connectors/{name}/config", json=dict(config), timeout=120)
    if resp.status_code >= 400:
        raise ServiceError(f"PUT {url}/connectors/{name}/config: {resp.status_code} {resp.text}")
    return resp.json()


# -------------------------------------------------------------------------- hive metastore


def metastore_commands(
    *,
    home: Path,
    conf_dir: Path,
    warehouse: Path,
    db_url: str,
    host: str,
    port: int,
) -> tuple[list[str], list[str], dict[str, str]]:
    """Write ``metastore-site.xml`` (the tests' metastore properties, on the PostgreSQL
    database of the SQLAlchemy ``db_url``; mode 600: it holds the password) and the log
    config into ``conf_dir``; return schematool's ``-initSchema`` command, the server's
    command and their environment (``METASTORE_HOME`` with the schema scripts)."""
    from devservers.hms import (
        _LOG4J2,
        METASTORE_MAIN,
        SCHEMATOOL_MAIN,
        HiveArtifacts,
        _home_dir,
        backing_db,
        site_properties,
        write_site_xml,
    )

    arts = HiveArtifacts.locate(home)
    conf_dir.mkdir(parents=True, exist_ok=True)
    db = backing_db(db_url, conf_dir)
    site = conf_dir / "metastore-site.xml"
    _private_file(site, "")
    write_site_xml(
        site,
        site_properties(
            db=db,
            warehouse=warehouse,
            port=port,
            extra={"metastore.thrift.uris": f"thrift://{host}:{port}"},
        ),
    )
    (conf_dir / "metastore-log4j2.properties").write_text(_LOG4J2)
    env = dict(
        os.environ,
        METASTORE_HOME=str(_home_dir(conf_dir, arts, db.db_type)),
        METASTORE_CONF_DIR=str(conf_dir),
    )
    base = [java(), *heap(), "-cp", arts.classpath(conf_dir)]
    init = [*base, SCHEMATOOL_MAIN, "-initSchema", "-dbType", db.db_type]
    return init, [*base, METASTORE_MAIN, "-p", str(port)], env


def metastore_schema_present(db_url: str) -> bool:
    """Whether Hive's schema is in the database (its ``VERSION`` table exists). A connection
    failure raises: the container exits and compose restarts it, rather than running
    ``-initSchema`` over an existing schema."""
    import sqlalchemy as sa

    eng = sa.create_engine(db_url)
    try:
        with eng.connect() as c:
            found = c.execute(sa.text("""SELECT to_regclass('public."VERSION"')""")).scalar()
            return found is not None
    finally:
        eng.dispose()


def metastore_db_url(env: Mapping[str, str], host: str, port: int) -> str:
    from sqlalchemy.engine import URL

    return URL.create(
        "postgresql+psycopg2",
        username=env.get("HIVE_METASTORE_DB_USER") or "hive",
        password=required_env("HIVE_METASTORE_DB_PASSWORD"),
        host=host,
        port=port,
        database=env.get("HIVE_METASTORE_DB_NAME") or "metastore",
    ).render_as_string(hide_password=False)


# ------------------------------------------------------------------------------------ main


def _run(cmd: Sequence[str], what: str, env: Mapping[str, str] | None = None) -> None:
    print(f"services: {what}", flush=True)
    done = subprocess.run(list(cmd), env=None if env is None else dict(env), check=False)
    if done.returncode != 0:
        raise ServiceError(f"{what} failed (exit {done.returncode})")


def _exec(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Replace this process with the server (tini, PID 1, then signals the JVM directly)."""
    sys.stdout.flush()
    os.execve(cmd[0], list(cmd), dict(os.environ if env is None else env))


def parser() -> argparse.ArgumentParser:
    """The command line; its defaults are the compose network's names, ports and the image's
    paths (tests/deploy/test_compose.py checks them against docker-compose.yml)."""
    ap = argparse.ArgumentParser(prog="services.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="service", required=True)

    k = sub.add_parser("kafka", help="KRaft broker+controller")
    k.add_argument("--home", type=Path, default=Path("/opt/kafka"))
    k.add_argument("--data-dir", type=Path, default=Path("/var/lib/kafka/data"))
    k.add_argument("--conf-dir", type=Path, default=Path("/tmp/acidflow-kafka"))
    k.add_argument("--host", default="kafka", help="advertised host name")
    k.add_argument("--port", type=int, default=9092)
    k.add_argument("--controller-port", type=int, default=9093)

    r = sub.add_parser("kafka-ready", help="healthcheck of the broker")
    r.add_argument("--host", default="kafka")
    r.add_argument("--port", type=int, default=9092)

    c = sub.add_parser("kafka-connect", help="distributed Connect worker")
    c.add_argument("--home", type=Path, default=Path("/opt/kafka"))
    c.add_argument("--conf-dir", type=Path, default=Path("/tmp/acidflow-connect"))
    c.add_argument("--bootstrap-servers", default="kafka:9092")
    c.add_argument("--host", default="kafka-connect", help="advertised REST host name")
    c.add_argument("--rest-port", type=int, default=8083)

    g = sub.add_parser("register-connector", help="create/update the Debezium connector")
    g.add_argument("--connect-url", default="http://kafka-connect:8083")
    g.add_argument("--name", default="acidflow-postgres-source")
    g.add_argument("--db-host", default="postgres")
    g.add_argument("--db-port", type=int, default=5432)

    h = sub.add_parser("hive-metastore", help="Hive 3.1.3 metastore on PostgreSQL")
    h.add_argument("--home", type=Path, default=Path("/opt/hive"))
    h.add_argument("--conf-dir", type=Path, default=Path("/tmp/acidflow-metastore"))
    h.add_argument("--warehouse", type=Path, default=Path("/warehouse"))
    h.add_argument("--host", default="hive-metastore", help="advertised host name")
    h.add_argument("--port", type=int, default=9083)
    h.add_argument("--db-host", default="postgres")
    h.add_argument("--db-port", type=int, default=5432)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.service == "kafka":
            fmt, server = kafka_commands(
                home=args.home,
                data_dir=args.data_dir,
                conf_dir=args.conf_dir,
                cluster_id=required_env("KAFKA_CLUSTER_ID"),
                host=args.host,
                port=args.port,
                controller_port=args.controller_port,
            )
            _run(fmt, f"kafka-storage format {args.data_dir} (kept when already formatted)")
            _exec(server)
        elif args.service == "kafka-ready":
            return 0 if kafka_ready(args.host, args.port) else 1
        elif args.service == "kafka-connect":
            required_env(SOURCE_PASSWORD_ENV)  # what the connector's ${env:...} resolves
            _exec(
                connect_command(
                    home=args.home,
                    conf_dir=args.conf_dir,
                    bootstrap_servers=args.bootstrap_servers,
                    host=args.host,
                    rest_port=args.rest_port,
                )
            )
        elif args.service == "register-connector":
            config = debezium_config(os.environ, db_host=args.db_host, db_port=args.db_port)
            deadline = time.monotonic() + 120
            while True:
                try:
                    answer = register_connector(args.connect_url, args.name, config)
                    break
                except (ServiceError, OSError) as exc:
                    # 409 while the worker group rebalances; a refused config is retried too
                    # (the source database may still be starting) and reported at the end
                    print(f"services: {exc}; retrying", file=sys.stderr, flush=True)
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(5)
            print(f"services: connector {answer['name']} registered", flush=True)
            shown = {k: v for k, v in answer["config"].items() if "password" not in k}
            print(json.dumps(shown, indent=2, sort_keys=True), flush=True)
        elif args.service == "hive-metastore":
            url = metastore_db_url(os.environ, args.db_host, args.db_port)
            init, server, env = metastore_commands(
                home=args.home,
                conf_dir=args.conf_dir,
                warehouse=args.warehouse,
                db_url=url,
                host=args.host,
                port=args.port,
            )
            if metastore_schema_present(url):
                print("services: the metastore schema is there", flush=True)
            else:
                _run(init, "schematool -initSchema -dbType postgres", env)
            _exec(server, env)
    except RuntimeError as exc:  # ServiceError, KafkaArtifactsMissing, HiveArtifactsMissing
        print(f"services {args.service}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
