"""Table definitions of CDC targets: the bookkeeping column every CDC table carries, and
auto-creation from a change stream's own column types and primary key.

The YAML tables config (``include/tables/``) that names CDC and ingest targets is read by
``acidflow.tables_config``. Tables the CDC job creates always end with the bookkeeping column
``_cdc_position string`` (the ordering value of the event that wrote each row version,
:data:`acidflow.cdc.changes.POSITION_COLUMN`), which is also their ``ordering_column``: it is
appended by :func:`with_position_column` when the YAML does not list it.
"""

from __future__ import annotations

from acidflow.catalog import Column, TableDef
from acidflow.cdc.changes import POSITION_COLUMN
from acidflow.sources.records import SourceTable


def with_position_column(tdef: TableDef) -> TableDef:
    """The definition with ``_cdc_position string`` appended (if absent) and set as the
    ordering column."""
    if POSITION_COLUMN not in tdef.column_names():
        tdef.columns.append(Column(POSITION_COLUMN, "string"))
    tdef.ordering_column = POSITION_COLUMN
    return tdef


def table_from_stream(source: SourceTable, target_db: str, num_buckets: int = 4) -> TableDef:
    """A table definition from what the stream says (``--auto-create``): the source's columns
    and types, its primary key, bucketed by the key into ``num_buckets`` buckets (unbucketed
    when keyless), plus ``_cdc_position``.

    Raises:
        ValueError: the stream gave no columns for the table.
    """
    if not source.columns:
        raise ValueError(
            f"cannot auto-create a table for {source.name}: the stream carries no "
            "column names/types for it"
        )
    tbl = source.name.split(".", 1)[-1]
    tdef = TableDef(
        name=f"{target_db}.{tbl}",
        columns=[Column(n, t) for n, t in source.columns.items()],
        primary_key=list(source.primary_key),
        num_buckets=num_buckets if source.primary_key else 0,
        properties={"acidflow.cdc.source": source.name},
    )
    return with_position_column(tdef)
