"""The tables config: YAML files (``include/tables/``) that define the target tables of the jobs.

Shape (one file may hold several tables)::

    database: pgbench            # default database for names without one
    defaults: {num_buckets: 4}   # merged into every table (optional)
    tables:
      - source: public.pgbench_accounts   # source table as the change records name it
        name: pgbench.pgbench_accounts    # acidflow table (db.table)
        columns: [{name: aid, type: int}, {name: bid, type: int}, ...]
        primary_key: [aid]
        num_buckets: 4                    # CLUSTERED BY the primary key

Every other key of :class:`acidflow.catalog.TableDef` (``partition_columns``, ``bucket_columns``,
``bucketing_version``, ``properties``, ``location``) is accepted. The same files serve the CDC job
(``acidflow.cdc``, which adds its bookkeeping column, ``acidflow.cdc.tables``), batch ingest
(``acidflow.ingest``) and validation (``acidflow.validation``), so they live below all three.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from acidflow.catalog import TableDef
from acidflow.errors import AcidflowError


class TablesConfigError(AcidflowError, ValueError):
    """A tables config file is malformed (message names the file and the entry)."""


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


def find_table(config: dict[str, TableDef], name: str) -> TableDef | None:
    """The definition named ``name`` (``db.table``) in a loaded config, or None."""
    name = name.lower()
    return next((t for t in config.values() if t.name == name), None)
