"""A real Hive 3.1.3 metastore (HMS) on 127.0.0.1, for the tests and for a person.

The Hive artifacts come from ``make hive-jars`` (``tools/hive/pom.xml``) in a cache folder,
``.cache/hive/`` at the repository root unless ``$ACIDFLOW_HIVE_CACHE`` says otherwise::

    metastore/  hive-standalone-metastore 3.1.3 + dependencies, Hadoop 3.5.0, Derby, pgJDBC
    exec/       hive-exec-3.1.3.jar (Hive's fat jar)
    src/        hive_metastore.thrift and the schematool SQL scripts (derby, postgres)
    streaming/  hive-streaming-3.1.3.jar;  classes/  tools/hive/java compiled (Hive 3.1 oracle)

:func:`start_metastore` lays out a work folder (``conf/metastore-site.xml``, a Derby database or
a PostgreSQL one, a warehouse folder, the log), initialises the backing database with Hive's own
``schematool`` (``MetastoreSchemaTool -initSchema``) and starts
``org.apache.hadoop.hive.metastore.HiveMetaStore`` as a thrift server on a free port, with the
settings of a Hive 3 ACID deployment: ``hive.support.concurrency=true``,
``hive.txn.manager=org.apache.hadoop.hive.ql.lockmgr.DbTxnManager``, and Hive's compactor off
(``metastore.compactor.initiator.on=false``, 0 worker threads) so that acidflow's compactor is the
one that runs. The classpath is ``conf:metastore/*:exec/hive-exec-3.1.3.jar``: the metastore's
``TransactionalValidationListener`` loads ``OrcInputFormat`` / ``AcidInputFormat`` (hive-exec
classes) to accept ``transactional=true`` on an ORC table, as in a Hive install where the
metastore runs with hive-exec on its classpath.

Java: Hive 3.1.3 is built for Java 8; on Java 17 the metastore and schematool need no
``--add-opens`` for what acidflow calls (databases, tables, partitions, transactions, write ids,
locks, compaction requests): :data:`JAVA_OPTIONS` is empty on purpose and is where such a flag
would go.

Kerberos (``kerberos=`` :class:`MetastoreKerberos`): Hadoop security on
(``hadoop.security.authentication=kerberos`` in a ``core-site.xml`` on the classpath, written
after schematool ran), ``hive.metastore.sasl.enabled=true``, the service principal and keytab,
``-Djava.security.krb5.conf`` and the ``hadoop.proxyuser.*`` grants: the metastore logs
``Starting DB backed MetaStore Server in Secure Mode`` and speaks SASL (GSSAPI, and DIGEST-MD5
for delegation tokens) on its port. The port probe of :func:`start_metastore` is not a SASL
client: the log's ``TSaslTransportException: No data or no sasl data in the stream`` right after
start is that probe.

``python -m devservers.hms`` (``make hms``, with ``tools/`` on ``sys.path``; ``--kerberos`` for a
secured one with its own KDC) runs one in the foreground until Ctrl-C and prints its
``thrift://`` URL; the test suite's ``hive_metastore``
fixture (``tests/conftest.py``) starts one per test session. A development tool: not part of the
shipped ``acidflow`` package.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from sqlalchemy.engine import make_url

from devservers.kdc import Kdc, KdcStartError, KerberosToolsMissing, start_kdc
from devservers.process import JvmServer, cache_dir, free_port, serve_foreground, tail

__all__ = [
    "HIVE_VERSION",
    "HIVE_CACHE_ENV",
    "BackingDb",
    "HiveArtifacts",
    "HiveArtifactsMissing",
    "HiveMetastore",
    "MetastoreKerberos",
    "MetastoreStartError",
    "backing_db",
    "default_cache_dir",
    "free_port",
    "kerberos_core_site",
    "kerberos_site_properties",
    "main",
    "site_properties",
    "start_metastore",
    "write_site_xml",
]

HIVE_VERSION = "3.1.3"
HIVE_CACHE_ENV = "ACIDFLOW_HIVE_CACHE"
METASTORE_MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMATOOL_MAIN = "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool"
#: JVM flags the metastore needs on the running Java (17): none were needed (see module doc).
JAVA_OPTIONS: tuple[str, ...] = ()
#: The tasks of ``metastore.task.threads.always`` that live in the standalone metastore jar (the
#: default list also names ``repl.DumpDirCleanerTask``, a replication task we do not need).
_ALWAYS_TASKS = (
    "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
    "org.apache.hadoop.hive.metastore.RuntimeStatsCleanerTask",
)
_SRC_DIR = f"apache-hive-metastore-{HIVE_VERSION}-src"
_LOG4J2 = """\
# written by devservers.hms: INFO from the metastore, WARN from the rest, to stdout (the log)
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
logger.hms.name = org.apache.hadoop.hive.metastore
logger.hms.level = INFO
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = WARN
"""


class HiveArtifactsMissing(RuntimeError):
    """The Hive jars / scripts of ``make hive-jars`` are not in the cache folder (named)."""


class MetastoreStartError(RuntimeError):
    """schematool or the metastore failed or did not listen in time; the message names the
    command's log file and carries its tail."""


def default_cache_dir() -> Path:
    """``$ACIDFLOW_HIVE_CACHE`` or ``<repository root>/.cache/hive`` (where ``make hive-jars``
    puts the artifacts)."""
    env = os.environ.get(HIVE_CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return cache_dir() / "hive"


@dataclass(frozen=True)
class HiveArtifacts:
    """The fetched Hive 3.1.3 artifacts under ``root`` (layout: module doc)."""

    root: Path

    @property
    def metastore_dir(self) -> Path:
        """Folder of the standalone metastore's jars (with Hadoop, Derby, pgJDBC)."""
        return self.root / "metastore"

    @property
    def hive_exec_jar(self) -> Path:
        """``hive-exec-3.1.3.jar``, Hive's fat jar (ql, serde, ORC, AcidUtils)."""
        return self.root / "exec" / f"hive-exec-{HIVE_VERSION}.jar"

    @property
    def sql_dir(self) -> Path:
        """The schematool scripts: ``<sql_dir>/<dbType>/hive-schema-3.1.0.<dbType>.sql``."""
        return self.root / "src" / _SRC_DIR / "src" / "main" / "sql"

    @property
    def thrift_idl(self) -> Path:
        """Hive 3.1.3's ``hive_metastore.thrift`` (the API the Python client speaks)."""
        return self.root / "src" / _SRC_DIR / "src" / "main" / "thrift" / "hive_metastore.thrift"

    @property
    def streaming_dir(self) -> Path:
        """Folder of ``hive-streaming-3.1.3.jar`` (Hive's streaming ingest API, alone)."""
        return self.root / "streaming"

    @property
    def classes_dir(self) -> Path:
        """``tools/hive/java`` compiled by ``make hive-jars``: ``acidflow.hive31.AcidRead`` (the
        Hive 3.1.3 reader oracle) and ``acidflow.hive31.StreamWrite`` (the streaming writer)."""
        return self.root / "classes"

    def tools_classpath(self) -> str:
        """The classpath of the ``acidflow.hive31`` tools: their classes, hive-exec (first: its
        ORC and Hive classes win over the metastore folder's older ``orc-core``), hive-streaming,
        then the metastore's jars (Hadoop 3.5.0's LocalFileSystem, the thrift client's deps)."""
        return os.pathsep.join(
            [
                str(self.classes_dir),
                str(self.hive_exec_jar),
                str(self.streaming_dir / "*"),
                str(self.metastore_dir / "*"),
            ]
        )

    def missing_tools(self) -> list[Path]:
        """The ``acidflow.hive31`` tools' files that are absent (empty when all are there): the
        compiled classes and hive-streaming. Not part of :meth:`missing` (the metastore runs
        without them)."""
        wanted = [
            self.classes_dir / "acidflow" / "hive31" / "AcidRead.class",
            self.classes_dir / "acidflow" / "hive31" / "StreamWrite.class",
            self.streaming_dir / f"hive-streaming-{HIVE_VERSION}.jar",
        ]
        return [p for p in wanted if not p.exists()]

    def missing(self) -> list[Path]:
        """The expected files or folders that are absent (empty when all are there)."""
        wanted = [
            self.metastore_dir / f"hive-standalone-metastore-{HIVE_VERSION}.jar",
            self.hive_exec_jar,
            self.sql_dir / "derby",
            self.sql_dir / "postgres",
        ]
        return [p for p in wanted if not p.exists()]

    def classpath(self, conf_dir: Path) -> str:
        """The metastore JVM's classpath: the conf folder first (``metastore-site.xml``,
        ``metastore-log4j2.properties``), the metastore's jars, then hive-exec."""
        return os.pathsep.join(
            [str(conf_dir), str(self.metastore_dir / "*"), str(self.hive_exec_jar)]
        )

    @classmethod
    def locate(cls, root: Path | None = None) -> "HiveArtifacts":
        """The artifacts under ``root`` (default :func:`default_cache_dir`).

        Raises:
            HiveArtifactsMissing: naming the folder and the first missing file, and the fix.
        """
        found = cls((root or default_cache_dir()).resolve())
        gone = found.missing()
        if gone:
            raise HiveArtifactsMissing(
                f"Hive {HIVE_VERSION} artifacts not found in {found.root} ({gone[0]} is missing):"
                f" run 'make hive-jars' (Maven, tools/hive/pom.xml) or set ${HIVE_CACHE_ENV}"
            )
        return found


@dataclass(frozen=True)
class BackingDb:
    """The metastore's backing database as Hive's JDO / schematool settings take it."""

    db_type: str  # schematool -dbType: "derby" or "postgres"
    jdbc_url: str
    driver: str
    user: str = "APP"
    password: str = "mine"

    @property
    def display(self) -> str:
        """The JDBC URL with the user and a masked password, for messages."""
        return f"{self.jdbc_url} (user {self.user}, password ***)"


def backing_db(url: str | None, workdir: Path) -> BackingDb:
    """The backing database for ``url``: ``None`` for embedded Derby in ``workdir/metastore_db``,
    or a PostgreSQL URL in SQLAlchemy's form (``postgresql[+driver]://user[:pw]@host:port/db``,
    as the tests' ``postgres_url`` fixture gives), whose database must exist and be empty.

    Raises:
        ValueError: any other URL (named, password masked).
    """
    if url is None:
        return BackingDb(
            "derby",
            f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
            "org.apache.derby.jdbc.EmbeddedDriver",
        )
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(
            f"metastore backing database {parsed.render_as_string(hide_password=True)}:"
            " only embedded Derby (no URL) or a postgresql:// URL are supported"
        )
    host = parsed.host or "127.0.0.1"
    port = parsed.port or 5432
    return BackingDb(
        "postgres",
        f"jdbc:postgresql://{host}:{port}/{parsed.database or 'postgres'}",
        "org.postgresql.Driver",
        parsed.username or "postgres",
        parsed.password or "",
    )


def site_properties(
    *, db: BackingDb, warehouse: Path, port: int, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The ``metastore-site.xml`` properties: backing DB, warehouse (both the ``metastore.`` and
    the ``hive.metastore.`` key), thrift port, Hive 3 ACID (concurrency on, DbTxnManager), Hive's
    compactor off, schema verification off (schematool wrote the schema), the partition
    expression proxy of the standalone metastore (the default one is a hive-exec class that
    needs a HiveConf), then ``extra`` on top (e.g. ``metastore.txn.timeout``)."""
    wh = warehouse.resolve().as_uri()
    props = {
        "javax.jdo.option.ConnectionURL": db.jdbc_url,
        "javax.jdo.option.ConnectionDriverName": db.driver,
        "javax.jdo.option.ConnectionUserName": db.user,
        "javax.jdo.option.ConnectionPassword": db.password,
        "metastore.warehouse.dir": wh,
        "hive.metastore.warehouse.dir": wh,
        "metastore.thrift.port": str(port),
        "metastore.thrift.uris": f"thrift://127.0.0.1:{port}",
        "metastore.schema.verification": "false",
        "datanucleus.schema.autoCreateAll": "false",
        "hive.support.concurrency": "true",
        "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
        "metastore.compactor.initiator.on": "false",
        "hive.compactor.initiator.on": "false",
        "metastore.compactor.worker.threads": "0",
        "hive.compactor.worker.threads": "0",
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": ",".join(_ALWAYS_TASKS),
        # Hive's async log4j2 context needs LMAX disruptor, which is not on the classpath
        "metastore.async.log.enabled": "false",
    }
    props.update(extra or {})
    return props


def write_site_xml(path: Path, props: Mapping[str, str]) -> Path:
    """Write ``props`` as a Hadoop configuration XML file at ``path``; returns ``path``."""
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in props.items()
    )
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')
    return path


@dataclass(frozen=True)
class MetastoreKerberos:
    """Hadoop security for the metastore: SASL/GSSAPI on its thrift port.

    Attributes:
        principal: the metastore's service principal, ``hive/localhost@REALM`` (Hive's
            ``hive.metastore.kerberos.principal``; a ``_HOST`` in it is replaced by the
            server's canonical host name, so an explicit host is more predictable here).
        keytab: the service principal's keytab (``hive.metastore.kerberos.keytab.file``).
        krb5_conf: the realm's ``krb5.conf`` (``-Djava.security.krb5.conf``).
        proxy_users: Hadoop proxy-user grants, short service name -> (hosts, groups), written
            as ``hadoop.proxyuser.<name>.hosts`` / ``.groups`` (``*`` for any).
    """

    principal: str
    keytab: Path
    krb5_conf: Path
    proxy_users: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def jvm_options(self) -> list[str]:
        """The metastore JVM's flags: the realm's ``krb5.conf``, and Java's own Kerberos
        login allowed to use the keytab the server logs in from (not a JAAS prompt)."""
        return [
            f"-Djava.security.krb5.conf={self.krb5_conf}",
            "-Djavax.security.auth.useSubjectCredsOnly=false",
        ]


def kerberos_core_site(kerberos: MetastoreKerberos) -> dict[str, str]:
    """The ``core-site.xml`` properties of a secured metastore: ``hadoop.security
    .authentication=kerberos`` (``UserGroupInformation.isSecurityEnabled()``, which Hive's
    ``HadoopThriftAuthBridge.Server`` requires), ``hadoop.security.authorization=true`` and the
    ``hadoop.proxyuser.*`` grants (Hadoop's ``ProxyUsers``, checked on a doAs)."""
    props = {
        "hadoop.security.authentication": "kerberos",
        "hadoop.security.authorization": "true",
    }
    for name, (hosts, groups) in kerberos.proxy_users.items():
        props[f"hadoop.proxyuser.{name}.hosts"] = hosts
        props[f"hadoop.proxyuser.{name}.groups"] = groups
    return props


def kerberos_site_properties(kerberos: MetastoreKerberos) -> dict[str, str]:
    """The ``metastore-site.xml`` properties of a secured metastore (both the ``metastore.``
    and the ``hive.metastore.`` key): SASL on (``hive.metastore.sasl.enabled``), the service
    principal and keytab, Hadoop security as in :func:`kerberos_core_site`, and
    ``hive.metastore.execute.setugi`` on (Hive's default: a client's ``set_ugi`` is honoured on
    unsecured connections; on SASL ones the authenticated user is the caller)."""
    props = {
        "metastore.sasl.enabled": "true",
        "hive.metastore.sasl.enabled": "true",
        "metastore.kerberos.principal": kerberos.principal,
        "hive.metastore.kerberos.principal": kerberos.principal,
        "metastore.kerberos.keytab.file": str(kerberos.keytab),
        "hive.metastore.kerberos.keytab.file": str(kerberos.keytab),
        "metastore.execute.setugi": "true",
        "hive.metastore.execute.setugi": "true",
    }
    props.update(kerberos_core_site(kerberos))
    return props


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise MetastoreStartError(
            "no 'java' on PATH and none in $JAVA_HOME: the Hive metastore needs Java 17"
        )
    return found


@dataclass
class HiveMetastore(JvmServer):
    """A running metastore thrift server (from :func:`start_metastore`); a context manager that
    stops it on exit."""

    host: str
    port: int
    warehouse: Path
    log: Path
    workdir: Path
    db: BackingDb
    process: "subprocess.Popen[bytes]" = field(repr=False)

    @property
    def url(self) -> str:
        """``thrift://127.0.0.1:<port>``: what ``hive.metastore.uris`` would be set to."""
        return f"thrift://{self.host}:{self.port}"


def _home_dir(workdir: Path, artifacts: HiveArtifacts, db_type: str) -> Path:
    """``$METASTORE_HOME`` as schematool wants it: ``scripts/metastore/upgrade/<dbType>``."""
    home = workdir / "home"
    scripts = home / "scripts" / "metastore" / "upgrade"
    scripts.mkdir(parents=True, exist_ok=True)
    link = scripts / db_type
    if not link.exists():
        link.symlink_to(artifacts.sql_dir / db_type, target_is_directory=True)
    return home


def start_metastore(
    workdir: Path,
    *,
    port: int | None = None,
    backing_db_url: str | None = None,
    artifacts: HiveArtifacts | None = None,
    extra_conf: Mapping[str, str] | None = None,
    kerberos: MetastoreKerberos | None = None,
    timeout_s: float = 180.0,
) -> HiveMetastore:
    """Initialise a backing database with Hive's schematool and start a Hive 3.1.3 metastore
    thrift server on 127.0.0.1 (module doc: settings, classpath, Java flags).

    Args:
        workdir: folder for ``conf/``, ``metastore_db`` (Derby), ``warehouse/``,
            ``schematool.log`` and ``metastore.log``; created if needed.
        port: the thrift port; default a free one.
        backing_db_url: ``None`` for embedded Derby, or an empty PostgreSQL database's URL
            (:func:`backing_db`).
        artifacts: the Hive artifacts; default :meth:`HiveArtifacts.locate`.
        extra_conf: more ``metastore-site.xml`` properties, applied last.
        kerberos: Hadoop security on (SASL/GSSAPI, :class:`MetastoreKerberos`); schematool
            runs before the ``core-site.xml`` that turns it on is written (it needs no login).
        timeout_s: how long schematool and then the server each may take.

    Returns:
        The running :class:`HiveMetastore` (stop it, or use it as a context manager).

    Raises:
        HiveArtifactsMissing: no ``make hive-jars`` artifacts.
        MetastoreStartError: schematool failed, the JVM exited, or the port did not accept a
            connection within ``timeout_s``; the message names the log and carries its tail.
    """
    arts = artifacts or HiveArtifacts.locate()
    workdir = workdir.resolve()
    conf = workdir / "conf"
    warehouse = workdir / "warehouse"
    for d in (conf, warehouse):
        d.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    db = backing_db(backing_db_url, workdir)
    extra = kerberos_site_properties(kerberos) if kerberos else {}
    extra.update(extra_conf or {})
    write_site_xml(
        conf / "metastore-site.xml",
        site_properties(db=db, warehouse=warehouse, port=port, extra=extra),
    )
    (conf / "metastore-log4j2.properties").write_text(_LOG4J2)
    env = dict(
        os.environ,
        METASTORE_HOME=str(_home_dir(workdir, arts, db.db_type)),
        METASTORE_CONF_DIR=str(conf),
    )
    java = [_java(), *JAVA_OPTIONS, "-cp", arts.classpath(conf)]

    schema_log = workdir / "schematool.log"
    with schema_log.open("wb") as out:
        try:
            done = subprocess.run(
                [*java, SCHEMATOOL_MAIN, "-initSchema", "-dbType", db.db_type],
                cwd=workdir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise MetastoreStartError(
                f"Hive schematool -initSchema on {db.display} did not finish in {timeout_s:.0f}s;"
                f" {schema_log}:\n{tail(schema_log)}"
            ) from None
    if done.returncode != 0:
        raise MetastoreStartError(
            f"Hive schematool -initSchema -dbType {db.db_type} on {db.display} failed (exit"
            f" {done.returncode}); {schema_log}:\n{tail(schema_log)}"
        )

    if kerberos is not None:
        write_site_xml(conf / "core-site.xml", kerberos_core_site(kerberos))
        java = [java[0], *kerberos.jvm_options(), *java[1:]]
    log = workdir / "metastore.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*java, METASTORE_MAIN, "-p", str(port)],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    hms = HiveMetastore("127.0.0.1", port, warehouse, log, workdir, db, proc)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise MetastoreStartError(
                f"Hive metastore on port {port} exited with {proc.returncode} before listening;"
                f" {log}:\n{tail(log)}"
            )
        try:
            with socket.create_connection((hms.host, port), timeout=1.0):
                return hms
        except OSError:
            pass
        if time.monotonic() > deadline:
            hms.stop()
            raise MetastoreStartError(
                f"Hive metastore did not accept connections on {hms.url} within"
                f" {timeout_s:.0f}s; {log}:\n{tail(log)}"
            )
        time.sleep(0.25)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m devservers.hms`` / ``make hms``: start a metastore, print its URL, serve in
    the foreground until Ctrl-C (or SIGTERM), then stop it. Returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m devservers.hms",
        description=(
            f"Run a Hive {HIVE_VERSION} metastore (thrift, DbTxnManager, Hive's compactor off) on"
            " 127.0.0.1 until Ctrl-C."
        ),
    )
    ap.add_argument("--port", type=int, default=None, help="thrift port (default: a free one)")
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="work folder (default: a temporary one, removed at exit)",
    )
    ap.add_argument(
        "--backing-db",
        default=None,
        metavar="URL",
        help="an empty PostgreSQL database (postgresql://user@host:port/db);"
        " default: embedded Derby in the work folder",
    )
    ap.add_argument(
        "--kerberos",
        action="store_true",
        help="secure it: start an MIT KDC (devservers.kdc) and run the metastore with SASL/GSSAPI"
        " (principal hive/localhost), printing the ACIDFLOW_HMS_* settings of a client",
    )
    args = ap.parse_args(argv)
    tmp = None if args.dir else tempfile.mkdtemp(prefix="acidflow-hms-")
    workdir = args.dir or Path(tmp or ".")
    if args.dir and (workdir / "conf" / "metastore-site.xml").exists():
        print(f"error: {workdir} already holds a metastore; pick an empty --dir", file=sys.stderr)
        return 2
    started = time.monotonic()
    kdc: Kdc | None = None
    client_env = ""
    try:
        kerberos = None
        if args.kerberos:
            kdc = start_kdc(workdir / "kdc")
            service = kdc.add_principal("hive/localhost")
            user = kdc.add_principal("acidflow")
            kerberos = MetastoreKerberos(
                service, kdc.keytab(service), kdc.krb5_conf, {"acidflow": ("*", "*")}
            )
            client_env = (
                f"\n  Kerberos realm {kdc.realm}, KDC 127.0.0.1:{kdc.port}; a client (URL host"
                f" localhost):\n    export KRB5_CONFIG={kdc.krb5_conf}"
                " ACIDFLOW_HMS_SASL_ENABLED=true"
                f" ACIDFLOW_HMS_KERBEROS_PRINCIPAL=hive/_HOST@{kdc.realm}"
                f" ACIDFLOW_HMS_CLIENT_PRINCIPAL={user}"
                f" ACIDFLOW_HMS_CLIENT_KEYTAB={kdc.keytab(user)}"
            )
        hms = start_metastore(
            workdir, port=args.port, backing_db_url=args.backing_db, kerberos=kerberos
        )
    except (
        HiveArtifactsMissing,
        MetastoreStartError,
        ValueError,
        KerberosToolsMissing,
        KdcStartError,
    ) as exc:
        if kdc is not None:
            kdc.stop()
        print(f"error: {exc}", file=sys.stderr)
        return 1

    # a Kerberos client names the host of the principal hive/localhost
    client_url = f"thrift://localhost:{hms.port}" if kdc else hms.url
    print(
        f"Hive {HIVE_VERSION} metastore: {hms.url}  (started in"
        f" {time.monotonic() - started:.1f}s)\n"
        f"  warehouse: {hms.warehouse}\n  backing db: {hms.db.display}\n  log: {hms.log}\n"
        f"  clients: hive.metastore.uris={client_url}{client_env}   (Ctrl-C stops it)",
        flush=True,
    )
    companions = [(kdc.process, kdc.log, "the KDC")] if kdc else []
    try:
        return serve_foreground(hms.process, hms.log, "the metastore", companions)
    finally:
        hms.stop()
        if kdc is not None:
            kdc.stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
