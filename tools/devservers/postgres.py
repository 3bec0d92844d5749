"""A private, throw-away PostgreSQL cluster for the tests and the demos (``make demo-kafka``).

:class:`PostgresCluster` runs ``initdb`` and ``pg_ctl`` from the PostgreSQL 15 server binaries
(``/usr/lib/postgresql/15/bin`` or ``$ACIDFLOW_PG_BINDIR``) on a data directory under a new
temporary directory, listening on a free TCP port on 127.0.0.1 (unix socket inside the temp
dir), with trust authentication for the superuser ``postgres``. Stopping it removes the
directory. As root the binaries run as user ``postgres`` (``runuser -u postgres --``), which
owns the temp dir, because PostgreSQL refuses to run as root.

    from devservers.postgres import PostgresCluster

    with PostgresCluster(settings={"wal_level": "logical"}) as pg:
        url = pg.url()                     # postgresql+psycopg2://postgres@127.0.0.1:<port>/acidflow
        other = pg.create_database("x")    # URL of a second database

Logical decoding with wal2json: ``PostgresCluster(settings=LOGICAL_SETTINGS)`` and
:func:`require_wal2json` (skips when the plugin is not installed).

In pytest use ``tests.support.postgres.require_postgres`` (skips with the reason when binaries
are missing; that module re-exports this one) or the session fixture ``postgres_url`` from
``tests/conftest.py``. A development tool: not part of the shipped ``acidflow`` package.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_BINDIR = "/usr/lib/postgresql/15/bin"
SUPERUSER = "postgres"
OS_USER = "postgres"

#: Settings that make a disposable cluster fast; durability does not matter here.
FAST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "100",
    "shared_buffers": "32MB",
}


#: Settings for logical decoding tests (slots, wal2json): commits must be flushed before a slot
#: can decode them, so ``synchronous_commit`` stays on.
LOGICAL_SETTINGS = {
    "wal_level": "logical",
    "synchronous_commit": "on",
    "max_replication_slots": "10",
    "max_wal_senders": "10",
}


def bindir() -> Path:
    """Directory of the server binaries (``$ACIDFLOW_PG_BINDIR`` or the Debian PG 15 path)."""
    return Path(os.environ.get("ACIDFLOW_PG_BINDIR", DEFAULT_BINDIR))


def unavailable_reason() -> str | None:
    """Why a private cluster cannot be started here, or ``None`` if it can."""
    bd = bindir()
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (bd / tool).is_file():
            return f"PostgreSQL server binaries not found ({bd / tool} missing)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(OS_USER)
        except KeyError:
            return f"running as root but there is no '{OS_USER}' OS user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root but 'runuser' is not available"
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 is not installed"
    return None


def wal2json_unavailable_reason() -> str | None:
    """Why a private cluster with the wal2json output plugin cannot run here, or ``None``.
    The plugin is ``<bindir>/../lib/wal2json.so`` (Debian ``postgresql-15-wal2json``, installed
    by ``make system-deps``)."""
    reason = unavailable_reason()
    if reason:
        return reason
    so = bindir().parent / "lib" / "wal2json.so"
    if not so.is_file():
        return f"wal2json output plugin not installed ({so} missing; run 'make system-deps')"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    return "'" + text.replace("'", "''") + "'"


class PostgresCluster:
    """One private PostgreSQL cluster (start on enter / :meth:`start`, stop+delete on exit).

    Args:
        settings: extra ``postgresql.conf`` settings, e.g. ``{"wal_level": "logical",
            "max_replication_slots": 4}`` (strings are quoted for you).
        dbname: database created at start; :meth:`url` points at it.
        fast: apply :data:`FAST_SETTINGS` (fsync off etc.) before ``settings``.
        base_dir: parent of the temp dir (default: the system temp dir).
        start_timeout_s: how long ``pg_ctl start`` may take.
    Attributes (after start):
        port, host ("127.0.0.1"), socket_dir, data_dir, log_file, root (the temp dir).
    """

    def __init__(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        dbname: str = "acidflow",
        fast: bool = True,
        base_dir: str | os.PathLike | None = None,
        start_timeout_s: float = 60.0,
    ):
        self.settings: dict[str, object] = dict(FAST_SETTINGS if fast else {})
        self.settings.update(settings or {})
        self.dbname = dbname
        self.base_dir = base_dir
        self.start_timeout_s = start_timeout_s
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.root: Path | None = None
        self._running = False

    # -- paths ---------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None
        return self.root / "sock"

    @property
    def log_file(self) -> Path:
        assert self.root is not None
        return self.root / "postgres.log"

    # -- process helpers -----------------------------------------------------------------
    def _cmd(self, tool: str, *args: str) -> list[str]:
        cmd = [str(bindir() / tool), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", OS_USER, "--", *cmd]
        return cmd

    def tool_path(self, tool: str) -> str:
        """Path of a PostgreSQL client/server binary (``pgbench``, ``psql`` ...) in :func:`bindir`."""
        return str(bindir() / tool)

    def libpq_url(self, dbname: str | None = None) -> str:
        """libpq URL ``postgresql://postgres@127.0.0.1:<port>/<db>`` (psycopg2, psql, pgbench)."""
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{dbname or self.dbname}"

    def _run(self, tool: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            self._cmd(tool, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            cwd=str(self.root),
        )
        if proc.returncode != 0:
            log = ""
            if self.root is not None and self.log_file.exists():
                log = self.log_file.read_text(errors="replace")[-4000:]
            raise RuntimeError(
                f"{tool} {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{log}"
            )
        return proc

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "PostgresCluster":
        """initdb, configure, start, create :attr:`dbname`. Raises RuntimeError on failure."""
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        self.root = Path(tempfile.mkdtemp(prefix="acidflow-pg-", dir=self.base_dir))
        try:
            self.socket_dir.mkdir()
            if os.geteuid() == 0:
                ent = pwd.getpwnam(OS_USER)
                for p in (self.root, self.socket_dir):
                    os.chown(p, ent.pw_uid, ent.pw_gid)
            self._run(
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            )
            last_error: Exception | None = None
            for _ in range(5):  # a "free" port can be taken by someone else meanwhile
                self.port = free_port()
                self._write_conf()
                try:
                    self._run(
                        "pg_ctl",
                        "-D",
                        str(self.data_dir),
                        "-l",
                        str(self.log_file),
                        "-w",
                        "-t",
                        str(int(self.start_timeout_s)),
                        "start",
                        timeout=self.start_timeout_s + 30,
                    )
                    break
                except RuntimeError as exc:
                    last_error = exc
                    if "could not bind" not in str(exc) and "in use" not in str(exc):
                        raise
            else:
                raise last_error or RuntimeError("could not start PostgreSQL")
            self._running = True
            atexit.register(self.stop)
            self._wait_ready()
            if self.dbname and self.dbname != "postgres":
                self.create_database(self.dbname)
        except BaseException:
            self.stop()
            raise
        return self

    def _write_conf(self) -> None:
        conf: dict[str, object] = dict(self.settings)
        conf.update(
            {
                "listen_addresses": self.host,
                "port": self.port,
                "unix_socket_directories": str(self.socket_dir),
            }
        )
        text = "# acidflow test cluster settings (included from postgresql.conf)\n" + "".join(
            f"{k} = {_conf_value(v)}\n" for k, v in conf.items()
        )
        extra = self.data_dir / "acidflow.conf"
        extra.write_text(text)
        main = self.data_dir / "postgresql.conf"
        if "include_if_exists = 'acidflow.conf'" not in main.read_text():
            with main.open("a") as fh:  # later lines win over initdb's defaults
                fh.write("\ninclude_if_exists = 'acidflow.conf'\n")
        if os.geteuid() == 0:
            ent = pwd.getpwnam(OS_USER)
            os.chown(extra, ent.pw_uid, ent.pw_gid)

    def _wait_ready(self, timeout_s: float = 30.0) -> None:
        import psycopg2

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                psycopg2.connect(**self.dsn("postgres")).close()
                return
            except psycopg2.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (immediate mode) and delete the temp dir. Idempotent."""
        if self.root is None:
            return
        if self._running:
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop", timeout=60
                )
            except Exception:  # pragma: no cover - best effort
                pass
            self._running = False
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
        try:
            atexit.unregister(self.stop)
        except Exception:  # pragma: no cover
            pass

    def __enter__(self) -> "PostgresCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- connections ---------------------------------------------------------------------
    def dsn(self, dbname: str | None = None) -> dict[str, object]:
        """psycopg2 ``connect(**dsn)`` keyword arguments."""
        return {
            "host": self.host,
            "port": self.port,
            "user": SUPERUSER,
            "dbname": dbname or self.dbname,
        }

    def url(self, dbname: str | None = None) -> str:
        """SQLAlchemy URL ``postgresql+psycopg2://postgres@127.0.0.1:<port>/<db>``."""
        return f"postgresql+psycopg2://{SUPERUSER}@{self.host}:{self.port}/{dbname or self.dbname}"

    def execute(self, sql: str, dbname: str = "postgres") -> list[tuple]:
        """Run one statement in autocommit mode; returns fetched rows (or ``[]``)."""
        import psycopg2

        conn = psycopg2.connect(**self.dsn(dbname))
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def create_database(self, name: str, template: str | None = None) -> str:
        """``CREATE DATABASE name`` (optionally from a template); returns its URL."""
        tmpl = f" TEMPLATE {quote_ident(template)}" if template else ""
        self.execute(f"CREATE DATABASE {quote_ident(name)}{tmpl}")
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """``DROP DATABASE IF EXISTS name WITH (FORCE)`` (kills its connections)."""
        self.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


def quote_ident(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def create_database(url: str, name: str, template: str | None = None) -> str:
    """Create database ``name`` on the server of a superuser SQLAlchemy/libpq ``url``
    (e.g. the ``postgres_url`` fixture) and return the new database's SQLAlchemy URL."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    _admin_execute(
        u,
        f"CREATE DATABASE {quote_ident(name)}"
        + (f" TEMPLATE {quote_ident(template)}" if template else ""),
    )
    return u.set(database=name).render_as_string(hide_password=False)


def drop_database(url: str, name: str) -> None:
    """``DROP DATABASE IF EXISTS name WITH (FORCE)`` on the server of ``url``."""
    from sqlalchemy.engine import make_url

    _admin_execute(make_url(url), f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


def _admin_execute(u: Any, sql: str) -> None:
    import psycopg2

    conn = psycopg2.connect(
        host=u.host, port=u.port, user=u.username, password=u.password, dbname="postgres"
    )
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()
