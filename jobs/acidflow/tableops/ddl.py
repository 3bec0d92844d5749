"""Hive's ``SHOW CREATE TABLE`` of an acidflow table, and Trino's ``CREATE TABLE`` of the same
shape (``acidflow table ddl``). Pure: a :class:`~acidflow.catalog.tabledef.TableDef` in, text out.

Hive form (the layout Hive 3.1's ``DDLTask.showCreateTable`` prints): backquoted identifiers
(a backquote doubled), column types as Hive type strings, ``COMMENT`` strings in single quotes
with ``\\``, ``'`` and ``;`` escaped by a backslash (Hive ``HiveStringUtils.escapeHiveCommand``
plus the backslash, so that Hive's lexer gives back the exact text), then ``PARTITIONED BY``,
``CLUSTERED BY ... INTO n BUCKETS``, the ORC serde and input/output formats, ``LOCATION`` (a
local path as a ``file:`` URI) and ``TBLPROPERTIES`` (sorted; ``transactional='true'``,
``transactional_properties='default'``, ``bucketing_version``). The primary key, which Hive keeps
as an informational constraint, is rendered as ``PRIMARY KEY (...) DISABLE NOVALIDATE`` (Hive 3
DDL; ``--no-constraints`` leaves it out).

Comments: Hive keeps a table comment in the table parameter ``comment`` (rendered as the
``COMMENT`` clause) and column comments in the columns; acidflow's catalog keeps column comments
as table properties ``acidflow.comment.<column>`` (:data:`COLUMN_COMMENT_PREFIX`, filled by
``acidflow table adopt --metastore`` from Hive's field schemas), rendered on their columns and
not repeated in ``TBLPROPERTIES``.

Trino form (``io.trino.plugin.hive`` table properties): ``CREATE TABLE catalog.db.t (...) WITH
(format = 'ORC', transactional = true, partitioned_by = ARRAY[...], bucketed_by = ARRAY[...],
bucket_count = n, bucketing_version = v)``; partition columns last, as Trino requires; Hive types
mapped to Trino's (``string`` -> ``varchar``, ``int`` -> ``integer``, ``float`` -> ``real``,
``binary`` -> ``varbinary``, ``array<t>`` -> ``array(t)``, ``struct<a:t>`` -> ``row(a t)``,
``timestamp`` -> ``timestamp(3)``, Trino's default precision for Hive tables). Trino cannot
create a transactional table at an existing location (``external_location`` makes a table
external, and Hive refuses external transactional tables), so the Trino form makes a new, empty
table of the same shape; an existing acidflow table is registered by running the Hive form in
Hive (beeline), after which Trino's Hive connector reads it through the metastore.
"""

from __future__ import annotations

from acidflow.catalog.tabledef import EXTERNAL_PROPERTY, TableDef
from acidflow.format import hivetypes as ht

ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
ORC_INPUT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
#: table property prefix of a column comment: ``acidflow.comment.<column>``
COLUMN_COMMENT_PREFIX = "acidflow.comment."
#: Hive's table parameter of the table comment.
TABLE_COMMENT_KEY = "comment"


def hive_ident(name: str) -> str:
    """A Hive identifier in backquotes, a backquote inside doubled: ``a`b`` -> ```a``b```."""
    return "`" + name.replace("`", "``") + "`"


def hive_string(text: str) -> str:
    """A Hive string literal in single quotes: backslash, single quote and semicolon escaped by
    a backslash, control characters as ``\\n`` / ``\\t`` / ``\\r``, so Hive's lexer
    (``BaseSemanticAnalyzer.unescapeSQLString``) gives back ``text``."""
    out = []
    for c in text:
        if c in "\\';":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        else:
            out.append(c)
    return "'" + "".join(out) + "'"


def trino_ident(name: str) -> str:
    """A Trino (SQL standard) identifier in double quotes, a double quote inside doubled."""
    return '"' + name.replace('"', '""') + '"'


def trino_string(text: str) -> str:
    """A Trino string literal: single quotes, a single quote inside doubled."""
    return "'" + text.replace("'", "''") + "'"


def location_uri(location: str) -> str:
    """A table location as Hive stores it: URLs unchanged, a local absolute path as
    ``file:<path>`` (Hive resolves a bare path against ``fs.defaultFS``, usually HDFS)."""
    if "://" in location or location.startswith("file:"):
        return location
    return "file:" + location


def column_comments(table: TableDef) -> dict[str, str]:
    """``{column: comment}`` from the ``acidflow.comment.<column>`` table properties, and the
    columns' own comments (``Column.comment``, set by ``acidflow table alter --comment``), which
    win."""
    out = {
        k[len(COLUMN_COMMENT_PREFIX) :]: v
        for k, v in table.properties.items()
        if k.startswith(COLUMN_COMMENT_PREFIX)
    }
    out.update({c.name: c.comment for c in [*table.columns, *table.partition_columns] if c.comment})
    return out


def shown_properties(table: TableDef) -> dict[str, str]:
    """The table properties ``TBLPROPERTIES`` shows, sorted by key: all but the comments and
    ``acidflow.external`` (acidflow's warehouse rule; Hive's tables have no such notion and
    its ``EXTERNAL`` means something else)."""
    return {
        k: v
        for k, v in sorted(table.properties.items())
        if k not in (TABLE_COMMENT_KEY, EXTERNAL_PROPERTY)
        and not k.startswith(COLUMN_COMMENT_PREFIX)
    }


def hive_ddl(table: TableDef, *, constraints: bool = True) -> str:
    """Hive's ``CREATE TABLE`` statement of ``table`` (module doc), ending in ``;``.

    Args:
        table: the definition (``location`` should be set, as the catalog stores it).
        constraints: render the primary key as ``PRIMARY KEY (...) DISABLE NOVALIDATE``.
    """
    comments = column_comments(table)
    lines = []
    for col in table.columns:
        text = f"  {hive_ident(col.name)} {col.hive_type}"
        if col.name in comments:
            text += f" COMMENT {hive_string(comments[col.name])}"
        lines.append(text)
    if constraints and table.primary_key:
        keys = ", ".join(hive_ident(k) for k in table.primary_key)
        lines.append(f"  PRIMARY KEY ({keys}) DISABLE NOVALIDATE")
    out = [
        f"CREATE TABLE {hive_ident(table.db_name)}.{hive_ident(table.table_name)}(",
        ",\n".join(lines) + ")",
    ]
    if TABLE_COMMENT_KEY in table.properties:
        out.append(f"COMMENT {hive_string(table.properties[TABLE_COMMENT_KEY])}")
    if table.partition_columns:
        pcols = []
        for col in table.partition_columns:
            text = f"  {hive_ident(col.name)} {col.hive_type}"
            if col.name in comments:
                text += f" COMMENT {hive_string(comments[col.name])}"
            pcols.append(text)
        out.append("PARTITIONED BY (\n" + ",\n".join(pcols) + ")")
    if table.num_buckets > 0:
        bcols = ", ".join(hive_ident(c) for c in table.bucket_columns)
        out.append(f"CLUSTERED BY (\n  {bcols})\nINTO {table.num_buckets} BUCKETS")
    out.append(f"ROW FORMAT SERDE\n  {hive_string(ORC_SERDE)}")
    out.append(
        f"STORED AS INPUTFORMAT\n  {hive_string(ORC_INPUT)}\n"
        f"OUTPUTFORMAT\n  {hive_string(ORC_OUTPUT)}"
    )
    if table.location:
        out.append(f"LOCATION\n  {hive_string(location_uri(table.location))}")
    props = [f"  {hive_string(k)}={hive_string(v)}" for k, v in shown_properties(table).items()]
    out.append("TBLPROPERTIES (\n" + ",\n".join(props) + ")")
    return "\n".join(out) + ";"


def trino_type(hive_type: str) -> str:
    """Trino's name of a Hive column type (module doc).

    Raises:
        ValueError: a type Trino's Hive connector cannot read (``uniontype``, intervals,
            ``void``), naming it.
    """
    return _trino(ht.parse_hive_type(hive_type), hive_type)


_TRINO_PRIMITIVES = {
    "tinyint": "tinyint",
    "smallint": "smallint",
    "int": "integer",
    "bigint": "bigint",
    "float": "real",
    "double": "double",
    "boolean": "boolean",
    "string": "varchar",
    "binary": "varbinary",
    "date": "date",
    "timestamp": "timestamp(3)",
}


def _trino(t: ht.HiveType, text: str) -> str:
    if isinstance(t, ht.DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, ht.CharType):
        return f"char({t.length})"
    if isinstance(t, ht.VarcharType):
        return f"varchar({t.length})"
    if isinstance(t, ht.ArrayType):
        return f"array({_trino(t.element, text)})"
    if isinstance(t, ht.MapType):
        return f"map({_trino(t.key, text)}, {_trino(t.value, text)})"
    if isinstance(t, ht.StructType):
        return "row(" + ", ".join(f"{trino_ident(n)} {_trino(f, text)}" for n, f in t.fields) + ")"
    if isinstance(t, ht.PrimitiveType) and t.name in _TRINO_PRIMITIVES:
        return _TRINO_PRIMITIVES[t.name]
    raise ValueError(f"Hive type {text!r}: no Trino counterpart for {t.type_name!r}")


def trino_ddl(table: TableDef, *, catalog: str = "hive") -> str:
    """Trino's ``CREATE TABLE`` of a new, empty transactional table shaped like ``table``
    (module doc: Trino cannot point a transactional table at an existing location), ending in
    ``;``.

    Args:
        catalog: the Trino catalog name of the Hive connector.
    Raises:
        ValueError: a column type with no Trino counterpart.
    """
    comments = column_comments(table)
    cols = []
    for col in [*table.columns, *table.partition_columns]:
        text = f"   {trino_ident(col.name)} {trino_type(col.hive_type)}"
        if col.name in comments:
            text += f" COMMENT {trino_string(comments[col.name])}"
        cols.append(text)
    name = ".".join(trino_ident(p) for p in (catalog, table.db_name, table.table_name))
    out = [f"CREATE TABLE {name} (", ",\n".join(cols), ")"]
    if TABLE_COMMENT_KEY in table.properties:
        out.append(f"COMMENT {trino_string(table.properties[TABLE_COMMENT_KEY])}")
    props = ["   format = 'ORC'", "   transactional = true"]
    if table.partition_columns:
        props.append(
            "   partitioned_by = ARRAY["
            + ", ".join(trino_string(c.name) for c in table.partition_columns)
            + "]"
        )
    if table.num_buckets > 0:
        props.append(
            "   bucketed_by = ARRAY["
            + ", ".join(trino_string(c) for c in table.bucket_columns)
            + "]"
        )
        props.append(f"   bucket_count = {table.num_buckets}")
        props.append(f"   bucketing_version = {table.bucketing_version}")
    out.append("WITH (\n" + ",\n".join(props) + "\n)")
    return "\n".join(out) + ";"
