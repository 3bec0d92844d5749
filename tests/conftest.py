"""Shared fixtures: one SparkSession per test session, fixture paths, temp warehouses."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = (REPO.parent / "shared" / "fixtures" / "hive-acid").resolve()


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (local[2], UI off)."""
    from acidflow.spark import get_spark

    session = get_spark("acidflow-tests", master="local[2]", **{"spark.ui.enabled": "false"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory):
    """One Spark Connect server for the whole test run, started the first time a test asks
    for it (``devservers.sparkconnect``: PySpark's own server, acidflow's settings, its Python
    workers importing this checkout's ``jobs/``): the server object, ``.url`` =
    ``sc://127.0.0.1:<port>``. Stopped at the end of the session."""
    from devservers.sparkconnect import start_connect_server

    with start_connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server


@pytest.fixture
def connect_spark(spark_connect, warehouse):
    """A Spark Connect session on :func:`spark_connect` for one test (``get_spark(remote=...)``,
    the ``acid`` source bound to the test's warehouse), stopped after it. pyspark's Connect
    mode is process-wide (``SPARK_CONNECT_MODE_ENABLED``, which a Connect session's ``stop()``
    leaves set): it is undone after the test, so the classic ``spark`` session of later tests
    and the processes they start see classic mode again."""
    from acidflow.spark import get_spark

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # get_spark sets it; restored on exit
        mp.delenv("SPARK_REMOTE", raising=False)
        session = get_spark(remote=spark_connect.url)
        assert type(session).__module__.startswith("pyspark.sql.connect"), type(session)
        yield session
        session.stop()


@pytest.fixture(scope="session", autouse=True)
def _cleaner_without_history_retention():
    """The suite runs the cleaner as Hive's (history retention 0 commits / 0 hours through
    ``ACIDFLOW_HISTORY_RETAIN_*``, for module and session fixtures too), so tests of
    compaction and cleaning see Hive's layout; tests of retention set the table properties
    (they win over the environment) or carry the ``default_retention`` marker (the shipped
    defaults, 10 commits / 24 h)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACIDFLOW_HISTORY_RETAIN_COMMITS", "0")
        mp.setenv("ACIDFLOW_HISTORY_RETAIN_HOURS", "0")
        yield


@pytest.fixture(autouse=True)
def _default_retention_when_marked(request, monkeypatch):
    if request.node.get_closest_marker("default_retention") is not None:
        monkeypatch.delenv("ACIDFLOW_HISTORY_RETAIN_COMMITS")
        monkeypatch.delenv("ACIDFLOW_HISTORY_RETAIN_HOURS")


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """``../shared/fixtures/hive-acid`` (Hive-written tables); skips when absent."""
    if not FIXTURES.is_dir():
        pytest.skip(f"Hive fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture
def warehouse(tmp_path, monkeypatch) -> Path:
    """A fresh warehouse dir with ACIDFLOW_WAREHOUSE / ACIDFLOW_CATALOG_URL pointing at it."""
    wh = tmp_path / "warehouse"
    wh.mkdir()
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", str(wh))
    monkeypatch.setenv("ACIDFLOW_CATALOG_URL", f"sqlite:///{wh / '_acidflow_catalog.db'}")
    return wh


@pytest.fixture
def catalog(warehouse):
    """The test's SQLite catalog in ``warehouse`` (the file ``ACIDFLOW_CATALOG_URL`` names),
    closed after the test. ``tests/catalog`` overrides it with its backend-parametrised one."""
    from acidflow.catalog import SqlCatalog  # deferred: the pure unit tests import no catalog

    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    yield cat
    cat.close()


@pytest.fixture(scope="session")
def postgres_url():
    """SQLAlchemy URL of a database on a private PostgreSQL 15 cluster for the whole session:
    ``postgresql+psycopg2://postgres@127.0.0.1:<port>/acidflow`` (superuser ``postgres``, trust
    auth, ``wal_level=logical``). Tests that need isolation create their own databases on the
    same server (``tests.support.postgres.create_database``). Skips when the PostgreSQL server
    binaries are absent."""
    from tests.support.postgres import PostgresCluster, require_postgres

    require_postgres()
    with PostgresCluster(settings={"wal_level": "logical"}) as cluster:
        yield cluster.url()


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory):
    """A Hive 3.1.3 metastore thrift server on 127.0.0.1 for the whole session (embedded Derby
    initialised by Hive's schematool, DbTxnManager settings, Hive's compactor off; see
    ``devservers.hms``): an object with ``.url`` (``thrift://127.0.0.1:<port>``),
    ``.warehouse`` and ``.log``. Skips without the ``make hive-jars`` artifacts, fails instead
    when ``CI=true``. Stopped at the end of the session."""
    from devservers.hms import start_metastore
    from tests.support.hms import require_hive_artifacts

    artifacts = require_hive_artifacts()
    hms = start_metastore(tmp_path_factory.mktemp("hive-metastore"), artifacts=artifacts)
    try:
        yield hms
    finally:
        hms.stop()


@pytest.fixture(scope="session")
def hive_metastore_pg(postgres_url, tmp_path_factory):
    """A Hive 3.1.3 metastore on a PostgreSQL backing database (database
    ``hive_metastore_queue`` of the ``postgres_url`` cluster) for the whole session, for tests
    that use the metastore's database as well as its thrift port (the thrift catalog's
    ``metastore_db``: Hive's ``COMPACTION_QUEUE``), which the ``hive_metastore`` fixture's
    embedded Derby keeps inside the metastore's JVM. The :class:`devservers.hms.HiveMetastore`
    with ``.metastore_db``, the backing database's SQLAlchemy URL. Skips as
    ``hive_metastore`` does."""
    from devservers.hms import start_metastore
    from tests.support.hms import require_hive_artifacts
    from tests.support.postgres import create_database

    artifacts = require_hive_artifacts()
    url = create_database(postgres_url, "hive_metastore_queue")
    hms = start_metastore(
        tmp_path_factory.mktemp("hive-metastore-pg"), backing_db_url=url, artifacts=artifacts
    )
    hms.metastore_db = url
    try:
        yield hms
    finally:
        hms.stop()


@pytest.fixture(scope="session")
def kdc(tmp_path_factory):
    """An MIT Kerberos KDC for realm ``ACIDFLOW.TEST`` on 127.0.0.1 for the whole session
    (``devservers.kdc``), with ``KRB5_CONFIG`` pointing at its ``krb5.conf`` for the session
    (the Kerberos library of this process reads it). Skips without the MIT programs, fails
    instead when ``CI=true``."""
    from devservers.kdc import start_kdc
    from tests.support.kerberos import require_kdc_tools

    require_kdc_tools()
    with start_kdc(tmp_path_factory.mktemp("kdc")) as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("KRB5_CONFIG", str(server.krb5_conf))
        yield server


@pytest.fixture(scope="session")
def kerberos_metastore(kdc, tmp_path_factory):
    """A Kerberos-secured Hive 3.1.3 metastore for the session (``devservers.hms`` with
    :class:`devservers.hms.MetastoreKerberos`: ``hadoop.security.authentication=kerberos``,
    ``hive.metastore.sasl.enabled=true``, principal ``hive/localhost@ACIDFLOW.TEST`` with its
    keytab, ``hadoop.proxyuser.acidflow.hosts/groups=*``) and a client principal
    ``acidflow@ACIDFLOW.TEST`` with a keytab: a
    :class:`tests.support.kerberos.KerberosMetastore`."""
    from devservers.hms import MetastoreKerberos, start_metastore
    from tests.support.hms import require_hive_artifacts
    from tests.support.kerberos import KerberosMetastore

    artifacts = require_hive_artifacts()
    service = kdc.add_principal("hive/localhost")
    client = kdc.add_principal("acidflow")
    kerberos = MetastoreKerberos(
        service, kdc.keytab(service), kdc.krb5_conf, {"acidflow": ("*", "*")}
    )
    hms = start_metastore(
        tmp_path_factory.mktemp("hive-metastore-kerberos"), artifacts=artifacts, kerberos=kerberos
    )
    try:
        yield KerberosMetastore(hms, kdc, client, kdc.keytab(client))
    finally:
        hms.stop()


@pytest.fixture(scope="session")
def trino_server(hive_metastore, tmp_path_factory):
    """A Trino 476 server on 127.0.0.1 for the whole session, its ``hive`` catalog on the
    ``hive_metastore`` fixture's metastore (``devservers.trino``; ``.url``, ``.execute(sql)``).
    Skips without ``make trino-server`` artifacts, fails instead when ``CI=true``."""
    from tests.support.trino import session_trino

    with session_trino(hive_metastore.url, tmp_path_factory.mktemp("trino")) as server:
        yield server


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """A Kafka 4.3.0 broker on 127.0.0.1 for the whole session (one KRaft node, broker and
    controller; topics created on first use; see ``devservers.kafka``): an object with
    ``.bootstrap_servers``, ``.log`` and ``.consume(topic, max_messages=...)``. Started only
    when a test asks for it; skips without the ``make kafka-jars`` artifacts, fails instead when
    ``CI=true``. Stopped at the end of the session."""
    from devservers.kafka import start_kafka
    from tests.support.kafka import require_kafka_artifacts

    artifacts = require_kafka_artifacts()
    server = start_kafka(tmp_path_factory.mktemp("kafka"), artifacts=artifacts)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kafka_connect(kafka, tmp_path_factory):
    """A standalone Kafka Connect worker on the ``kafka`` fixture's broker for the whole
    session, with Debezium 3.6.1's PostgreSQL connector on its plugin path and JsonConverter
    (schemas on) for keys and values: ``.url`` (the REST API), ``.create_connector(name,
    config)``, ``.wait_running(name)``, ``.delete_connector(name)``. No connector runs until a
    test adds one. Stopped at the end of the session."""
    from devservers.kafka import start_connect

    server = start_connect(kafka, tmp_path_factory.mktemp("kafka-connect"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_server():
    """One local S3 server (moto in server mode on 127.0.0.1, free port) for the test session:
    a :class:`tests.support.s3.S3Server` with ``endpoint``, ``env`` (the AWS variables pointing
    at it; a test applies them, e.g. ``monkeypatch.setenv``) and ``make_bucket()``."""
    from tests.support.s3 import start_s3_server

    server = start_s3_server()
    yield server
    server.stop()
