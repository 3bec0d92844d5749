"""A PostgreSQL source table: its columns and primary key as PostgreSQL reports them, and its
contents as ``COPY ... TO STDOUT WITH CSV HEADER``.

Used by the reconciliation (``acidflow.quality.reconcile``) and the sample-data tool. Column types
are ``format_type(atttypid, atttypmod)`` strings (``integer``, ``character(84)``,
``numeric(10,2)``, ``timestamp with time zone`` ...), the same strings wal2json writes with
``include-types`` (type modifiers on).

COPY runs with ``TimeZone = 'UTC'``, ``DateStyle = 'ISO, YMD'``, ``IntervalStyle = 'postgres'``
and ``bytea_output = 'hex'`` so the text of every value is independent of the server's and the
role's settings. In CSV, NULL is an unquoted empty field and the empty string is ``""``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

COPY_SETTINGS = {
    "TimeZone": "UTC",
    "DateStyle": "ISO, YMD",
    "IntervalStyle": "postgres",
    "bytea_output": "hex",
    "extra_float_digits": "1",
}


@dataclass(frozen=True)
class SourceTable:
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
    extra: dict = field(default_factory=dict, compare=False)

    def to_json(self) -> dict:
        """``{"name", "columns": [{"name", "type"}], "primary_key", "replica_identity"}``."""
        return {"name": self.name,
                "columns": [{"name": n, "type": t} for n, t in self.columns],
                "primary_key": list(self.primary_key),
                "replica_identity": self.replica_identity}


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


def describe(conn, qualified: str) -> SourceTable:
    """Columns, primary key and replica identity of ``schema.table`` from the catalogs.

    Args:
        conn: psycopg2 connection.
    Raises:
        LookupError: no such table.
    """
    schema, table = split_name(qualified)
    with conn.cursor() as cur:
        cur.execute("SELECT c.oid, c.relreplident FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
                    "AND c.relkind IN ('r', 'p')", (schema, table))
        row = cur.fetchone()
        if row is None:
            raise LookupError(f"no table {schema}.{table} in the source database")
        oid, replident = row
        cur.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    (oid,))
        columns = tuple((n, t) for n, t in cur.fetchall())
        cur.execute("SELECT a.attname FROM pg_index i, unnest(i.indkey::int2[]) WITH ORDINALITY "
                    "AS k(attnum, ord) JOIN pg_attribute a ON a.attnum = k.attnum "
                    "WHERE i.indrelid = %s AND i.indisprimary AND a.attrelid = i.indrelid "
                    "ORDER BY k.ord", (oid,))
        pk = tuple(r[0] for r in cur.fetchall())
    return SourceTable(f"{schema}.{table}", columns, pk, _REPLIDENT.get(replident, replident))


def list_tables(conn, schema: str = "public") -> list[str]:
    """``schema.table`` names of the ordinary and partitioned tables of a schema, sorted."""
    with conn.cursor() as cur:
        cur.execute("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = "
                    "c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'p') "
                    "AND NOT c.relispartition ORDER BY 1", (schema,))
        return [f"{schema}.{r[0]}" for r in cur.fetchall()]


def copy_csv(conn, table: SourceTable, fileobj, *, ordered: bool = True) -> None:
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
    sql = (f"COPY (SELECT {cols} FROM {qualified_sql(table.name)}{order}) "
           "TO STDOUT WITH CSV HEADER")
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
