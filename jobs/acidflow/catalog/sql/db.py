"""The SQL catalog's database: engine, SQLite/PostgreSQL set-up, the transaction runner with
retries, and the Alembic migrations.

Every public method of :class:`~acidflow.catalog.sql.SqlCatalog` is one database transaction run
by :meth:`Database.run`; several processes may use the same database at once:

* PostgreSQL: ``SELECT ... FOR UPDATE`` on ``next_txn_id`` (open, commit), on the transaction's
  ``txns`` row (anything that changes a transaction), on the table's ``next_write_id`` row
  (write id allocation) and on ``next_lock_id`` (lock grants) - Hive ``TxnHandler`` takes the
  same row locks. Deadlocks and serialisation failures (SQLSTATE 40P01 / 40001) are retried.
* SQLite: every writing transaction starts with ``BEGIN IMMEDIATE`` (one writer at a time),
  WAL journal (readers do not block the writer), 30 s busy timeout; "database is locked" is
  retried. Local disks only.

Schema changes are Alembic migrations (``sql/migrations``), run in code (no ini file), inside
one catalog transaction, serialised between processes (SQLite ``BEGIN IMMEDIATE``, PostgreSQL
advisory transaction lock). Create one :class:`Database` per process (SQLAlchemy engines do not
survive ``fork``).

Checks: an upgrade refuses a database that has tables but is not an
acidflow catalog (:class:`~acidflow.catalog.errors.ForeignDatabaseError`, unless forced by
``acidflow catalog init --force``), and every database error at connect, migrate or run
becomes a one-line :class:`~acidflow.catalog.errors.CatalogDatabaseError` naming the URL with
its password masked: read-only, locked beyond the busy timeout, corrupt / not a database,
cannot be opened (missing or unusable directory, server down), not initialised (no catalog
tables: ``acidflow catalog init``).
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import os
import random
import shutil
import socket
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event

from acidflow.catalog.errors import CatalogDatabaseError, ForeignDatabaseError
from acidflow.catalog.sql.schema import VERSION_TABLE

#: the Alembic scripts beside this module (inside the jobs zip when acidflow is imported from
#: ``--py-files``: see :func:`migrations_dir`)
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_S = 30
_PG_MIGRATION_LOCK_KEY = 0x61636964666C6F77 & 0x7FFFFFFFFFFFFFFF  # "acidflow"

T = TypeVar("T")


def utcnow() -> datetime:
    """The current time, aware UTC (the client clock: keep hosts in NTP sync)."""
    return datetime.now(timezone.utc)


class Deferred:
    """An error to raise after the surrounding database transaction has committed: a function
    run by :meth:`Database.run` returns ``Deferred(err)`` when its writes (for example aborting
    the transaction on a write conflict) must persist although the caller gets an error."""

    def __init__(self, error: Exception) -> None:
        self.error = error


@functools.lru_cache(maxsize=1)
def migrations_dir() -> Path:
    """The directory of the Alembic scripts, on a file system: :data:`MIGRATIONS_DIR`, or --
    when acidflow is imported from a zip (``spark-submit --py-files``, ``acidflow.jobszip``),
    which Alembic cannot load scripts from -- the zip's ``migrations/`` copied once into
    ``<temp dir>/acidflow-migrations-<digest of the zip's entries>`` (written under a temporary
    name and renamed, so concurrent processes never see a partial copy).

    Raises:
        RuntimeError: neither a directory nor a zip holds the migrations.
    """
    if MIGRATIONS_DIR.is_dir():
        return MIGRATIONS_DIR
    archive, inner = _zip_parts(MIGRATIONS_DIR)
    if archive is None:
        raise RuntimeError(f"no catalog migrations found under {migrations_dir()}")
    with zipfile.ZipFile(archive) as z:
        members = sorted(n for n in z.namelist() if n.startswith(inner + "/") and n[-1] != "/")
        digest = hashlib.sha256()
        for n in members:
            digest.update(n.encode() + b"\0" + z.read(n))
        target = Path(tempfile.gettempdir()) / f"acidflow-migrations-{digest.hexdigest()[:16]}"
        if target.is_dir():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        for n in members:
            out = tmp / n[len(inner) + 1 :]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(z.read(n))
    try:
        os.rename(tmp, target)
    except OSError:  # another process renamed its copy first: use it
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _zip_parts(path: Path) -> tuple[Path | None, str]:
    """``(zip file, member path inside it)`` of a path below a zip, or ``(None, "")``."""
    for parent in path.parents:
        if parent.is_file() and zipfile.is_zipfile(parent):
            return parent, path.relative_to(parent).as_posix()
    return None, ""


def alembic_config(connection: sa.Connection | None = None, url: str | None = None) -> Config:
    """An ``alembic.config.Config`` for the catalog migrations, built in code (no ini file).

    Args:
        connection: an open connection to run on (stored in ``config.attributes``); it may
            already be inside a transaction, which the migration then joins.
        url: SQLAlchemy URL, used when no connection is given.
    """
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()).replace("%", "%%"))
    cfg.set_main_option("path_separator", "os")
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", str(url).replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@functools.lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest migration revision id (cached per process)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships its migrations
        raise RuntimeError(f"no catalog migrations found under {MIGRATIONS_DIR}")
    return head


def known_revisions() -> set[str]:
    """Every revision id of acidflow's migrations."""
    return {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def describe_db_error(url: str, exc: BaseException) -> CatalogDatabaseError:
    """A one-line :class:`CatalogDatabaseError` for a database error: what went wrong with
    the catalog at ``url`` (already masked) and what to do."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    low = text.lower()
    if "readonly" in low or "read-only" in low or "read only" in low:
        return CatalogDatabaseError(
            url,
            "read-only",
            f"catalog database {url} is read-only ({text}): acidflow must "
            "write to its catalog; make the file and its directory writable or point "
            "ACIDFLOW_CATALOG_URL at a writable catalog",
        )
    if "database is locked" in low or "database table is locked" in low:
        return CatalogDatabaseError(
            url,
            "locked",
            f"catalog database {url} stayed locked by another process beyond "
            f"the {SQLITE_BUSY_TIMEOUT_S} s busy timeout ({text}): find the process holding it "
            "(a stuck job, an open sqlite3 shell) and retry",
        )
    if "not a database" in low or "malformed" in low or "file is encrypted" in low:
        return CatalogDatabaseError(
            url,
            "corrupt",
            f"catalog database {url} is corrupt or not a SQLite database "
            f"({text}): restore it from a backup, or point ACIDFLOW_CATALOG_URL at the right "
            "file",
        )
    if _not_initialised(orig, low):
        return CatalogDatabaseError(
            url,
            "not-initialised",
            f"catalog database {url} is not initialised ({text}): create the catalog's "
            f"tables with `acidflow catalog init` (ACIDFLOW_CATALOG_URL={url})",
        )
    if (
        "unable to open database file" in low
        or "could not connect" in low
        or "connection refused" in low
        or ("database" in low and "does not exist" in low)
    ):
        return CatalogDatabaseError(
            url,
            "cannot-open",
            f"cannot open catalog database {url} ({text}): check that its "
            "directory exists and is writable (or that the server is up and the database "
            "exists), then `acidflow catalog init` creates the catalog's tables",
        )
    return CatalogDatabaseError(url, "error", f"catalog database {url}: {text}")


def _not_initialised(orig: BaseException, low: str) -> bool:
    """A statement refused because a catalog table is missing: SQLite ``no such table``,
    PostgreSQL ``undefined_table`` (SQLSTATE 42P01, ``relation ... does not exist``)."""
    return (
        low.startswith("no such table")
        or getattr(orig, "pgcode", None) == "42P01"
        or (low.startswith("relation ") and "does not exist" in low)
    )


def _default_user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # pragma: no cover - no passwd entry
        return None


class Database:
    """One catalog database: its engine, who we are, and how to run a unit of work.

    Args:
        url: SQLAlchemy URL (``sqlite:///path.db`` or ``postgresql+psycopg2://...``). For a
            SQLite file its directory is created.

    Attributes:
        url: the parsed ``sqlalchemy.URL``; engine: the ``sqlalchemy.Engine``.
        is_sqlite / is_postgres: the backend.
        user, host: recorded on transactions, locks and readers opened here (OS user name,
            host name).
    """

    def __init__(self, url: str | sa.URL) -> None:
        try:
            self.url = sa.engine.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise CatalogDatabaseError(
                str(url), "error", f"catalog URL {url!r} is not a SQLAlchemy URL: {exc}"
            ) from exc
        self.backend = self.url.get_backend_name()
        self.is_sqlite = self.backend == "sqlite"
        self.is_postgres = self.backend == "postgresql"
        self.engine = self._create_engine()
        self.user = _default_user()
        self.host = socket.gethostname()
        #: ids from an outside authority (``shared.TxnHooks``; the Hive metastore catalog's)
        self.txn_hooks: Any = None

    def _create_engine(self) -> sa.Engine:
        if not self.is_sqlite:
            return sa.create_engine(self.url, pool_pre_ping=True)
        database = self.url.database or ""
        memory = database in ("", ":memory:") or database.startswith("file::memory:")
        if memory:
            engine = sa.create_engine(
                self.url, poolclass=sa.pool.StaticPool, connect_args={"check_same_thread": False}
            )
        else:
            uri = str(self.url.query.get("uri", "")).lower() in ("true", "1")
            path = (
                database[len("file:") :].split("?", 1)[0]
                if uri and database.startswith("file:")
                else database
            )
            read_only = uri and "mode=ro" in str(self.url)
            if not read_only:
                try:
                    Path(path).expanduser().absolute().parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise CatalogDatabaseError(
                        self.render_url(),
                        "cannot-open",
                        f"cannot open catalog database {self.render_url()}: its directory "
                        f"{Path(path).expanduser().absolute().parent} cannot be created "
                        f"({exc.strerror or exc}); fix the path in ACIDFLOW_CATALOG_URL",
                    ) from exc
            engine = sa.create_engine(
                self.url,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
            )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:  # pragma: no cover - trivial
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_S * 1000}")
            if not memory:
                try:
                    cur.execute("PRAGMA journal_mode = WAL")
                except Exception:  # noqa: BLE001 - a read-only file: reads still work
                    pass
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: sa.Connection) -> None:
            write = conn.get_execution_options().get("acidflow_write", True)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")

        return engine

    def close(self) -> None:
        """Dispose of the connection pool (new connections are opened on demand)."""
        self.engine.dispose()

    def render_url(self) -> str:
        """The URL with its password hidden (for messages and ``repr``)."""
        return self.url.render_as_string(hide_password=True)

    # -- units of work -------------------------------------------------------------------
    def run(
        self, fn: Callable[[sa.Connection], T | Deferred], *, write: bool = True, attempts: int = 8
    ) -> T:
        """Run ``fn(conn)`` in one database transaction and return its result.

        Retries the whole transaction (up to ``attempts`` times, jittered exponential backoff
        from 20 ms to 1 s) on deadlock / serialisation failure / SQLite busy. ``write=False``
        starts SQLite transactions with ``BEGIN DEFERRED`` (no writer lock).

        Raises:
            the error of a returned :class:`Deferred`, after the commit; whatever ``fn``
            raises (the transaction is rolled back); ``sqlalchemy.exc.IntegrityError`` as is;
            :class:`CatalogDatabaseError` (naming the URL, password masked) for any other
            database error, e.g. when the retries on a locked database are exhausted, a
            read-only or corrupt database.
        """
        delay = 0.02
        for attempt in range(attempts):
            try:
                with self.engine.connect() as conn:
                    if self.is_sqlite:
                        conn.execution_options(acidflow_write=write)
                    conn.info["acidflow_txn_hooks"] = self.txn_hooks
                    with conn.begin():
                        result = fn(conn)
            except sa.exc.OperationalError as exc:
                if attempt + 1 < attempts and self.retryable(exc):
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 1.0)
                    continue
                raise describe_db_error(self.render_url(), exc) from exc
            except sa.exc.IntegrityError:
                raise
            except sa.exc.DBAPIError as exc:
                raise describe_db_error(self.render_url(), exc) from exc
            if isinstance(result, Deferred):
                raise result.error
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def retryable(exc: sa.exc.OperationalError) -> bool:
        """True for PostgreSQL serialisation failures / deadlocks and SQLite lock errors."""
        code = getattr(exc.orig, "pgcode", None)
        if code in ("40001", "40P01"):
            return True
        text = str(exc.orig).lower()
        return "database is locked" in text or "database table is locked" in text

    # -- migrations ----------------------------------------------------------------------
    def upgrade(self, revision: str = "head", *, force: bool = False) -> None:
        """``alembic upgrade <revision>`` inside one catalog transaction, serialised between
        processes (SQLite ``BEGIN IMMEDIATE``, PostgreSQL advisory transaction lock).

        Args:
            force: migrate even a database that has other tables and is not an acidflow
                catalog (``acidflow catalog init --force``).
        Raises:
            ForeignDatabaseError: the database holds tables but no acidflow revision (or a
                revision acidflow does not know), unless ``force``.
            CatalogDatabaseError: the database cannot be opened, read or written.
        """
        current = self.current_revision()
        if revision == "head" and current == head_revision():
            return  # fast path: nothing to do, no lock taken
        with self._errors_named():
            with self._migration_connection() as conn:
                if not force:  # checked under the migration lock: another process may
                    # have migrated the database since ``current`` was read
                    ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
                    self.check_is_catalog(conn, ctx.get_current_revision())
                command.upgrade(alembic_config(connection=conn), revision)

    def check_is_catalog(self, conn: sa.Connection, current: str | None) -> None:
        """Refuse a database that is not (yet) an acidflow catalog but is not empty either.

        Args:
            conn: a connection to the database. current: its acidflow revision or ``None``.
        Raises:
            ForeignDatabaseError: tables but no acidflow revision, or an unknown revision.
        """
        if current is not None:
            if current not in known_revisions():
                raise ForeignDatabaseError(
                    self.render_url(),
                    [VERSION_TABLE],
                    f"; its {VERSION_TABLE} names revision {current!r}, which this acidflow "
                    "does not know (a newer acidflow, or another application)",
                )
            return
        names = sorted(sa.inspect(conn).get_table_names())
        others = [n for n in names if n != VERSION_TABLE]
        if others:
            raise ForeignDatabaseError(self.render_url(), others)

    def downgrade(self, revision: str) -> None:
        """``alembic downgrade <revision>`` (``"base"`` drops every catalog table)."""
        with self._errors_named():
            with self._migration_connection() as conn:
                command.downgrade(alembic_config(connection=conn), revision)

    def current_revision(self) -> str | None:
        """The revision the database is at (``None`` if never migrated).

        Raises:
            CatalogDatabaseError: the database cannot be opened or read.
        """
        with self._errors_named():
            with self.engine.connect() as conn:
                if self.is_sqlite:
                    conn.execution_options(acidflow_write=False)
                ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
                return ctx.get_current_revision()

    @contextmanager
    def _errors_named(self) -> Iterator[None]:
        """Turn SQLAlchemy / DB-API errors into :class:`CatalogDatabaseError` naming the URL."""
        try:
            yield
        except sa.exc.IntegrityError:
            raise
        except sa.exc.DBAPIError as exc:
            raise describe_db_error(self.render_url(), exc) from exc

    @contextmanager
    def _migration_connection(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as conn:
            if self.is_sqlite:
                conn.execution_options(acidflow_write=True)
            with conn.begin():
                if self.is_postgres:
                    conn.execute(
                        sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK_KEY}
                    )
                yield conn
