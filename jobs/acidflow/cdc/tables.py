"""Table definitions for CDC targets: YAML files under ``include/tables/`` and auto-creation
from a change stream's own column types and primary key.

YAML shape (one file may hold several tables)::

    database: pgbench            # default database for names without one
    defaults: {num_buckets: 4}   # merged into every table (optional)
    tables:
      - source: public.pgbench_accounts   # source table as the change records name it
        name: pgbench.pgbench_accounts    # acidflow table (db.table)
        columns: [{name: aid, type: int}, {name: bid, type: int}, ...]
        primary_key: [aid]
        num_buckets: 4                    # CLUSTERED BY the primary key

Every other key of :class:`acidflow.catalog.TableDef` (``partition_columns``, ``bucket_columns``,
``bucketing_version``, ``properties``, ``location``) is accepted. The same files serve batch
ingest (``acidflow.ingest``) and CDC; tables the CDC job creates always end with the bookkeeping
column ``_cdc_position string`` (the ordering value of the event that wrote each row version,
:data:`acidflow.cdc.changes.POSITION_COLUMN`), which is also their ``ordering_column``: it is
appended by :func:`with_position_column` when the YAML does not list it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from acidflow.catalog import Column, TableDef
from acidflow.cdc.changes import POSITION_COLUMN
from acidflow.cdc.formats import SourceTable


class TablesConfigError(ValueError):
    """A tables config file is malformed (message names the file and the entry)."""


def with_position_column(tdef: TableDef) -> TableDef:
    """The definition with ``_cdc_position string`` appended (if absent) and set as the
    ordering column."""
    if POSITION_COLUMN not in tdef.column_names():
        tdef.columns.append(Column(POSITION_COLUMN, "string"))
    tdef.ordering_column = POSITION_COLUMN
    return tdef


def load_tables_config(path: str | Path) -> dict[str, TableDef]:
    """Read one YAML file, or every ``*.yaml``/``*.yml`` in a directory.

    Returns:
        ``{source table (lower case): TableDef}`` as written (no ``_cdc_position`` added).
    Raises:
        TablesConfigError: unreadable YAML, missing keys, invalid definitions, or one source
            mapped twice.
    """
    p = Path(path)
    files = sorted([*p.glob("*.yaml"), *p.glob("*.yml")]) if p.is_dir() else [p]
    out: dict[str, TableDef] = {}
    for f in files:
        try:
            doc = yaml.safe_load(f.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise TablesConfigError(f"{f}: cannot read tables config: {e}") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list):
            raise TablesConfigError(f"{f}: expected a mapping with a 'tables' list")
        db = doc.get("database")
        defaults = doc.get("defaults") or {}
        for i, entry in enumerate(doc["tables"]):
            if not isinstance(entry, dict) or "name" not in entry:
                raise TablesConfigError(f"{f}: tables[{i}] needs at least 'name' and 'columns'")
            data: dict[str, Any] = {**defaults, **entry}
            source = str(data.pop("source", data["name"])).lower()
            if db and "." not in str(data["name"]):
                data["name"] = f"{db}.{data['name']}"
            try:
                tdef = TableDef.from_dict(data)
                tdef.validate()
            except (ValueError, TypeError, KeyError) as e:
                raise TablesConfigError(f"{f}: tables[{i}] ({data.get('name')}): {e}") from e
            if source in out:
                raise TablesConfigError(f"{f}: source {source} is mapped twice")
            out[source] = tdef
    return out


def table_from_stream(source: SourceTable, target_db: str, num_buckets: int = 4) -> TableDef:
    """A table definition from what the stream says (``--auto-create``): the source's columns
    and types, its primary key, bucketed by the key into ``num_buckets`` buckets (unbucketed
    when keyless), plus ``_cdc_position``.

    Raises:
        ValueError: the stream gave no columns for the table.
    """
    if not source.columns:
        raise ValueError(f"cannot auto-create a table for {source.name}: the stream carries no "
                         "column names/types for it")
    tbl = source.name.split(".", 1)[-1]
    tdef = TableDef(name=f"{target_db}.{tbl}",
                    columns=[Column(n, t) for n, t in source.columns.items()],
                    primary_key=list(source.primary_key),
                    num_buckets=num_buckets if source.primary_key else 0,
                    properties={"acidflow.cdc.source": source.name})
    return with_position_column(tdef)


def find_table(config: dict[str, TableDef], name: str) -> TableDef | None:
    """The definition named ``name`` (``db.table``) in a loaded config, or None."""
    name = name.lower()
    return next((t for t in config.values() if t.name == name), None)
