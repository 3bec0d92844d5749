"""Source snapshots of PostgreSQL tables: a table's columns and primary key as PostgreSQL reports
them, and its contents as ``COPY ... TO STDOUT WITH CSV HEADER``; live (:class:`PostgresSource`)
or saved earlier (:class:`SavedSource`).

Used by the reconciliation (``acidflow.quality.reconcile``: both source classes implement its
``ReconcileSource`` protocol, and the command line or the job hands them to it) and the
sample-data tool. Column types
are ``format_type(atttypid, atttypmod)`` strings (``integer``, ``character(84)``,
``numeric(10,2)``, ``timestamp with time zone`` ...), the same strings wal2json writes with
``include-types`` (type modifiers on).

COPY runs with ``TimeZone = 'UTC'``, ``DateStyle = 'ISO, YMD'``, ``IntervalStyle = 'postgres'``
and ``bytea_output = 'hex'`` so the text of every value is independent of the server's and the
role's settings. In CSV, NULL is an unquoted empty field and the empty string is ``""``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from acidflow.errors import AcidflowError
from acidflow.sources.postgres.connection import connect, libpq_dsn
from acidflow.sources.postgres.equality import POSTGRES_EQUALITY, PostgresEquality

COPY_SETTINGS = {
    "TimeZone": "UTC",
    "DateStyle": "ISO, YMD",
    "IntervalStyle": "postgres",
    "bytea_output": "hex",
    "extra_float_digits": "1",
}


@dataclass(frozen=True)
class PostgresTable:
    """A source table's description.

    Attributes:
        name: ``schema.table`` as given (unquoted).
        columns: ``(name, pg_type)`` in column order.
        primary_key: key column names in key order (empty for keyless tables).
        replica_identity: ``default``, ``full``, ``index`` or ``nothing`` (``relreplident``).
    """

    name: str
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...] = ()
    replica_identity: str = "default"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        """``{"name", "columns": [{"name", "type"}], "primary_key", "replica_identity"}``."""
        return {
            "name": self.name,
            "columns": [{"name": n, "type": t} for n, t in self.columns],
            "primary_key": list(self.primary_key),
            "replica_identity": self.replica_identity,
        }


def split_name(qualified: str, default_schema: str = "public") -> tuple[str, str]:
    """``"schema.table"`` -> ``(schema, table)``; a bare name gets ``default_schema``.
    Double-quoted parts keep their case and may contain dots.

    Raises:
        ValueError: more than two parts or an empty part.
    """
    parts, cur, quoted, i = [], "", False, 0
    s = qualified.strip()
    while i < len(s):
        ch = s[i]
        if ch == '"':
            if quoted and i + 1 < len(s) and s[i + 1] == '"':
                cur += '"'
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    parts.append(cur)
    if len(parts) == 1:
        parts.insert(0, default_schema)
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"not a [schema.]table name: {qualified!r}")
    return parts[0], parts[1]


def quote_ident(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def qualified_sql(qualified: str) -> str:
    """``schema.table`` as a quoted SQL reference."""
    schema, table = split_name(qualified)
    return f"{quote_ident(schema)}.{quote_ident(table)}"


_REPLIDENT = {"d": "default", "f": "full", "i": "index", "n": "nothing"}


def describe(conn: Any, qualified: str) -> PostgresTable:
    """Columns, primary key and replica identity of ``schema.table`` from the catalogs.

    Args:
        conn: psycopg2 connection.
    Raises:
        LookupError: no such table.
    """
    schema, table = split_name(qualified)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.oid, c.relreplident FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
            "AND c.relkind IN ('r', 'p')",
            (schema, table),
        )
        row = cur.fetchone()
        if row is None:
            raise LookupError(f"no table {schema}.{table} in the source database")
        oid, replident = row
        cur.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (oid,),
        )
        columns = tuple((n, t) for n, t in cur.fetchall())
        cur.execute(
            "SELECT a.attname FROM pg_index i, unnest(i.indkey::int2[]) WITH ORDINALITY "
            "AS k(attnum, ord) JOIN pg_attribute a ON a.attnum = k.attnum "
            "WHERE i.indrelid = %s AND i.indisprimary AND a.attrelid = i.indrelid "
            "ORDER BY k.ord",
            (oid,),
        )
        pk = tuple(r[0] for r in cur.fetchall())
    return PostgresTable(f"{schema}.{table}", columns, pk, _REPLIDENT.get(replident, replident))


def list_tables(conn: Any, schema: str = "public") -> list[str]:
    """``schema.table`` names of the ordinary and partitioned tables of a schema, sorted."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'p') "
            "AND NOT c.relispartition ORDER BY 1",
            (schema,),
        )
        return [f"{schema}.{r[0]}" for r in cur.fetchall()]


def copy_csv(conn: Any, table: PostgresTable, fileobj: IO[bytes], *, ordered: bool = True) -> None:
    """Write the table as ``COPY (SELECT cols FROM t [ORDER BY pk]) TO STDOUT WITH CSV HEADER``
    into a binary file object, with :data:`COPY_SETTINGS` for the session (restored after).

    Args:
        ordered: order by the primary key (by all columns for keyless tables) so that the same
            contents give the same bytes.
    """
    cols = ", ".join(quote_ident(n) for n, _ in table.columns)
    order = ""
    if ordered:
        keys = table.primary_key or tuple(n for n, _ in table.columns)
        order = " ORDER BY " + ", ".join(quote_ident(k) for k in keys)
    sql = f"COPY (SELECT {cols} FROM {qualified_sql(table.name)}{order}) TO STDOUT WITH CSV HEADER"
    with conn.cursor() as cur:
        saved = {}
        for k, v in COPY_SETTINGS.items():
            cur.execute("SELECT current_setting(%s)", (k,))
            saved[k] = cur.fetchone()[0]
            cur.execute("SELECT set_config(%s, %s, false)", (k, v))
        try:
            cur.copy_expert(sql, fileobj)
        finally:
            for k, v in saved.items():
                cur.execute("SELECT set_config(%s, %s, false)", (k, v))


class SnapshotNotFoundError(AcidflowError, LookupError):
    """A saved source snapshot has no entry or no file for the table (the message names both)."""


@dataclass
class PostgresSource:
    """A live PostgreSQL table as a reconciliation source (``ReconcileSource``).

    Attributes:
        dsn: libpq string, URL or SQLAlchemy ``postgresql+psycopg2://`` URL.
        table: ``schema.table`` (a bare name means ``public``).
    """

    dsn: str
    table: str

    def describe(self) -> PostgresTable:
        """The table's :class:`PostgresTable` (columns, types, primary key).

        Raises:
            PullError: cannot connect; LookupError: no such table.
        """
        conn = connect(self.dsn)
        try:
            return describe(conn, self.table)
        finally:
            conn.close()

    @property
    def equality(self) -> PostgresEquality:
        """PostgreSQL's notion of equality (:mod:`acidflow.sources.postgres.equality`)."""
        return POSTGRES_EQUALITY

    def describe_columns(self) -> tuple[list[tuple[str, str | None]] | None, list[str]]:
        """``([(column, format_type)], primary key)`` from the catalogs (see :meth:`describe`)."""
        st = self.describe()
        return list(st.columns), list(st.primary_key)

    def open_csv(self) -> tuple[Path, Callable[[], None]]:
        """COPY the table into a temp CSV file; returns the path and a cleanup function."""
        st = self.describe()
        fd, name = tempfile.mkstemp(prefix="acidflow-reconcile-", suffix=".csv")
        try:
            conn = connect(self.dsn)
            try:
                with os.fdopen(fd, "wb") as fh:
                    copy_csv(conn, st, fh, ordered=False)
            finally:
                conn.close()
        except BaseException:
            os.unlink(name)
            raise
        return Path(name), lambda: os.unlink(name)

    def __str__(self) -> str:
        safe = re.sub(r"://([^:@/]*):[^@/]*@", r"://\1:***@", libpq_dsn(self.dsn))
        return f"{self.table} @ {safe}"


@dataclass
class SavedSource:
    """Saved source contents as a reconciliation source (``ReconcileSource``): a CSV
    (``.csv.gz`` or ``.csv``) from ``COPY ... TO STDOUT WITH CSV HEADER``.

    Attributes:
        path: the CSV file.
        table: source ``schema.table`` name (for messages).
        columns: ``(name, pg_type)`` pairs; ``pg_type`` may be ``None`` (unknown: the acidflow
            table's Hive type decides). Default: names from the CSV header, types unknown.
        primary_key: key columns (default: the acidflow table's primary key).
    """

    path: Path
    table: str
    columns: list[tuple[str, str | None]] | None = None
    primary_key: list[str] | None = None

    @classmethod
    def from_dir(cls, directory: str | os.PathLike[str], table: str) -> "SavedSource":
        """Find ``table`` (``schema.table`` or bare) in a directory of saved CSVs: through its
        ``manifest.json`` (``tables[]`` with ``name``, ``csv``, ``columns``, ``primary_key``)
        when there is one, else ``<table>.csv.gz`` / ``<schema>.<table>.csv.gz`` / ``.csv`` in
        the directory or its ``source/`` subdirectory.

        Raises:
            SnapshotNotFoundError: no such table or file.
        """
        d = Path(directory)
        schema, name = split_name(table)
        manifest = d / "manifest.json"
        if manifest.is_file():
            m = json.loads(manifest.read_text())
            for t in m.get("tables", []):
                ts, tn = split_name(t["name"])
                if (ts, tn) == (schema, name):
                    p = d / t.get("csv", f"source/{tn}.csv.gz")
                    if not p.is_file():
                        raise SnapshotNotFoundError(
                            f"{manifest}: file {p} of {t['name']} is missing"
                        )
                    return cls(
                        p,
                        f"{ts}.{tn}",
                        [(c["name"], c.get("type")) for c in t.get("columns", [])] or None,
                        list(t.get("primary_key", [])),
                    )
        for sub in (d, d / "source"):
            for fn in (
                f"{name}.csv.gz",
                f"{schema}.{name}.csv.gz",
                f"{name}.csv",
                f"{schema}.{name}.csv",
            ):
                if (sub / fn).is_file():
                    return cls(sub / fn, f"{schema}.{name}")
        raise SnapshotNotFoundError(
            f"no saved contents of {schema}.{name} in {d} (no manifest entry, no {name}.csv.gz)"
        )

    @property
    def equality(self) -> PostgresEquality:
        """PostgreSQL's notion of equality (:mod:`acidflow.sources.postgres.equality`)."""
        return POSTGRES_EQUALITY

    def describe_columns(self) -> tuple[list[tuple[str, str | None]] | None, list[str]]:
        """``(columns or None: the CSV header names them, primary key or [])``."""
        return (list(self.columns) if self.columns else None), list(self.primary_key or [])

    def open_csv(self) -> tuple[Path, Callable[[], None]]:
        """The saved CSV itself (nothing to clean up)."""
        return self.path, lambda: None

    def __str__(self) -> str:
        return f"{self.table} @ {self.path}"
