"""``acidflow table ddl | adopt | convert | upgrade``: acidflow's tables seen from Hive, and Hive's
tables taken into acidflow (``acidflow.tableops``; ``upgrade``: ``acidflow.compactor.upgrade``).

``acidflow.cli.app`` calls :func:`register` with its top-level app.
Errors go up to ``acidflow.cli.app.main`` (one line naming the table / file / URL, exit 1).
"""

from __future__ import annotations

import os
from typing import Optional

import typer

from acidflow.catalog import Column, TableDef
from acidflow.catalog.tabledef import normalize_table_name
from acidflow.cli.console import console, emit_json
from acidflow.cli.context import cli_context
from acidflow.cli.tablealter import register_alter
from acidflow.spark import get_spark
from acidflow.tableops.ddl import hive_ddl, trino_ddl

DDL_HELP = """Print the CREATE TABLE statement of an acidflow table, as Hive's SHOW CREATE TABLE
prints it: columns with Hive types (and COMMENTs), PARTITIONED BY, CLUSTERED BY ... INTO n
BUCKETS, the ORC serde and input/output formats, LOCATION, and TBLPROPERTIES
('transactional'='true', 'transactional_properties'='default', 'bucketing_version'=...).

Hive: run it in beeline (or any Hive 3 client) and Hive's readers see the table; write ids
stay in acidflow's catalog, so give a Hive reader acidflow's ValidWriteIdList
('acidflow describe TABLE' prints it) or keep acidflow the only writer. Trino: Trino's CREATE
TABLE cannot point a transactional table at an existing location, so register the table by
running the Hive statement in Hive against the metastore Trino's Hive connector uses; Trino then
reads it like any Hive ACID table. '--dialect trino' prints Trino's CREATE TABLE ... WITH
(format = 'ORC', transactional = true, partitioned_by = ..., bucketed_by = ..., bucket_count
= ...) of a new, empty table of the same shape."""

ADOPT_HELP = """Take an existing Hive full-ACID table into acidflow's catalog with its
write-id history, so acidflow's next write gets the next write id (hwm+1), its snapshot reads
exactly what Hive reads, and the compactor treats Hive's deltas as its own.

From a path: --location PATH and the history, either --hwm N [--open 3,4] [--aborted 5] or
Hive's string form --valid-write-ids 'db.t:5:9223372036854775807::4' (a Hive reader's
hive.txn.valid.writeids). Columns come from --columns 'id bigint, name string' or from the ORC
files (the row struct Hive wrote); files that name their columns _col0, _col1 ... need
--columns. Partition columns: --partitioned-by 'ds string' (default: the k=v directories, as
strings); buckets: --buckets N --clustered-by col.

From a metastore: --metastore thrift://host:port reads the columns, partition keys, buckets,
location and the table's ValidWriteIdList from Hive; tables that are not full-ACID ORC
(non-transactional, insert-only, external, not ORC, sorted) are refused with the reason.

Open write ids of the history are recorded as aborted: after adoption acidflow is the table's
writer, and a Hive transaction open at adoption can never commit into it. A location outside
acidflow's warehouse stays where it is (the table is marked external)."""

CONVERT_HELP = """Make a plain ORC table transactional (Hive's ALTER TABLE ... SET
TBLPROPERTIES ('transactional'='true')). The files stay in place as original files: readers
give them synthetic ROW__IDs (write id 0, bucket from the file name, rowId = position), new
writes are deltas, and the first major compaction rewrites everything into a base.

Refused, naming the file: file names Hive refuses (it wants <bucket>_0[_copy_<n>]; Spark's
part-*.orc names too, unless --rename-files renames them Hive's way), files that are not ORC,
files whose columns do not match the declared ones, ACID directories (adopt those instead),
files above the partition directories. Columns come from --columns or from the files."""


def _paragraphs(text: str) -> str:
    """Help text as paragraphs: single newlines joined, blank lines kept (Rich wraps)."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def ddl_cmd(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    dialect: str = typer.Option("hive", "--dialect", help="hive or trino"),
    trino_catalog: str = typer.Option(
        "hive", "--trino-catalog", help="Trino catalog of the Hive connector"
    ),
    constraints: bool = typer.Option(
        True,
        "--constraints/--no-constraints",
        help="render the primary key as PRIMARY KEY (...) DISABLE NOVALIDATE",
    ),
) -> None:
    cat = cli_context(ctx).catalog()
    t = cat.get_table(table)
    if dialect == "hive":
        print(hive_ddl(t, constraints=constraints))
    elif dialect == "trino":
        print(trino_ddl(t, catalog=trino_catalog))
    else:
        raise typer.BadParameter(f"--dialect must be hive or trino, got {dialect!r}")


def adopt_cmd(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table (the name in acidflow's catalog)"),
    location: Optional[str] = typer.Option(None, "--location", help="table directory"),
    hwm: Optional[int] = typer.Option(None, "--hwm", help="high watermark write id"),
    open_ids: Optional[str] = typer.Option(None, "--open", help="open write ids, 3,4"),
    aborted_ids: Optional[str] = typer.Option(None, "--aborted", help="aborted write ids, 5,6"),
    valid_write_ids: Optional[str] = typer.Option(
        None, "--valid-write-ids", help="Hive's ValidWriteIdList string"
    ),
    columns: Optional[str] = typer.Option(None, "--columns", help="'id bigint, name string'"),
    partitioned_by: Optional[str] = typer.Option(
        None, "--partitioned-by", help="'ds string, region string'"
    ),
    buckets: int = typer.Option(0, "--buckets", help="number of buckets"),
    clustered_by: Optional[str] = typer.Option(
        None, "--clustered-by", help="bucket columns, id,name"
    ),
    primary_key: Optional[str] = typer.Option(None, "--primary-key", help="upsert key columns, id"),
    metastore: Optional[str] = typer.Option(
        None, "--metastore", help="thrift://host:port: read the table from Hive"
    ),
    metastore_table: Optional[str] = typer.Option(
        None, "--metastore-table", help="its name in the metastore (default TABLE)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print a JSON line"),
) -> None:
    # deferred: adoption reads ORC files (pyarrow) and may ask a metastore (pymetastore)
    from acidflow.tableops import adopt as ops

    name = normalize_table_name(table)
    if metastore is not None:
        if location or hwm is not None or valid_write_ids or open_ids or aborted_ids:
            raise ops.TableOpsError(
                "--metastore reads the location and the history from "
                "Hive; do not combine it with --location/--hwm/"
                "--valid-write-ids"
            )
        found = ops.table_from_metastore(metastore, metastore_table or name, as_name=name)
        tdef, history = found.table, found.history
        if columns:
            tdef.columns = ops.parse_columns(columns)
        if primary_key:
            tdef.primary_key = _names(primary_key)
    else:
        if not location:
            raise ops.TableOpsError(f"table {name}: give --location PATH (or --metastore)")
        history = ops.history_from_options(
            name,
            hwm=hwm,
            open_ids=ops.parse_ids(open_ids, "--open"),
            aborted_ids=ops.parse_ids(aborted_ids, "--aborted"),
            valid_write_ids=valid_write_ids,
        )
        tdef = _definition(
            name, location, columns, partitioned_by, buckets, clustered_by, primary_key
        )
    cat = cli_context(ctx).catalog()
    stored = ops.adopt(cat, tdef, history)
    valid = cat.valid_write_ids(stored.name)
    info = {
        "table": stored.name,
        "location": stored.location,
        "valid_write_ids": valid.to_string(),
        "next_write_id": valid.high_watermark + 1,
        "source": metastore or "path",
    }
    if as_json:
        emit_json(info)
        return
    console.print(
        f"adopted {stored.name} at {stored.location}: ValidWriteIdList "
        f"{info['valid_write_ids']}; the next write id is {info['next_write_id']}"
    )


def convert_cmd(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    location: str = typer.Option(..., "--location", help="the plain ORC table's directory"),
    columns: Optional[str] = typer.Option(None, "--columns", help="'id bigint, name string'"),
    partitioned_by: Optional[str] = typer.Option(None, "--partitioned-by", help="'ds string'"),
    buckets: int = typer.Option(0, "--buckets", help="number of buckets"),
    clustered_by: Optional[str] = typer.Option(None, "--clustered-by", help="bucket columns"),
    primary_key: Optional[str] = typer.Option(None, "--primary-key", help="upsert key columns"),
    rename_files: bool = typer.Option(
        False,
        "--rename-files",
        help="rename non-Hive file names (Spark's part-*) to Hive's original names first",
    ),
    as_json: bool = typer.Option(False, "--json", help="print a JSON line"),
) -> None:
    # deferred: conversion reads the ORC files (pyarrow); --help needs none of it
    from acidflow.tableops.convert import convert_table

    name = normalize_table_name(table)
    tdef = _definition(name, location, columns, partitioned_by, buckets, clustered_by, primary_key)
    cat = cli_context(ctx).catalog()
    stored, plan = convert_table(cat, tdef, rename=rename_files)
    info = {
        "table": stored.name,
        "location": stored.location,
        "original_files": len(plan.files),
        "rows": plan.rows,
        "columns": [c.to_dict() for c in stored.columns],
    }
    if as_json:
        emit_json(info)
        return
    console.print(
        f"converted {stored.name} at {stored.location}: {len(plan.files)} "
        f"original files, {plan.rows} rows; new writes are deltas from write id 1"
    )


UPGRADE_HELP = """Rewrite an ACID v1 table (Hive 0.14-2.x: in-place update events, txn ids
as write ids) into Hive 3 (v2) bases, as the major compaction Hive 3's upgrade demands.

Each partition still reading v1 directories gets a major compaction under a new write id W
(an empty transaction commits W first): base_W with _orc_acid_version, every ROW__ID kept.
The rows (ROW__IDs included) are digested before and after and must be equal; the old
directories stay until the cleaner pass that follows removes them. A table without v1
directories: nothing to do, said so. A partition holding v1 and v2 directories together is
refused."""


def upgrade_cmd(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    use_spark: bool = typer.Option(False, "--spark", help="run the compactions in Spark"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON line"),
) -> None:
    # deferred: the compactor imports duckdb, pyarrow and the ORC codec; --help needs none
    from acidflow.compactor.cleaner import run_cleaner
    from acidflow.compactor.upgrade import upgrade_table

    cat = cli_context(ctx).catalog()
    spark = get_spark("acidflow-upgrade") if use_spark else None
    report = upgrade_table(cat, normalize_table_name(table), spark=spark)
    if report.nothing_to_do is None:
        run_cleaner(cat)
    if as_json:
        emit_json(report.to_dict())
        return
    if report.nothing_to_do is not None:
        console.print(f"{report.table}: nothing to do: {report.nothing_to_do}")
        return
    rows = report.after.rows if report.after else 0
    console.print(
        f"upgraded {report.table}: {len(report.partitions)} partition(s) rewritten into "
        f"base_{report.write_id:07d} (compactions {report.compactions}); {rows} rows, "
        "digest equal before and after"
    )


def register(app: typer.Typer) -> None:
    """Add the ``table`` command group (``ddl``, ``adopt``, ``convert``, ``upgrade``, ``alter``) to
    ``app``."""
    table_app = typer.Typer(
        help="Tables and Hive: DDL, adopt a Hive ACID table, convert a plain ORC table.",
        no_args_is_help=True,
    )
    app.add_typer(table_app, name="table")
    register_alter(table_app)
    table_app.command("ddl", help=_paragraphs(DDL_HELP))(ddl_cmd)
    table_app.command("adopt", help=_paragraphs(ADOPT_HELP))(adopt_cmd)
    table_app.command("convert", help=_paragraphs(CONVERT_HELP))(convert_cmd)
    table_app.command("upgrade", help=_paragraphs(UPGRADE_HELP))(upgrade_cmd)


def _names(text: str) -> list[str]:
    return [p.strip().lower() for p in text.split(",") if p.strip()]


def _definition(
    name: str,
    location: str,
    columns: Optional[str],
    partitioned_by: Optional[str],
    buckets: int,
    clustered_by: Optional[str],
    primary_key: Optional[str],
) -> TableDef:
    """The TableDef of a path adoption / conversion from the options (module doc)."""
    # deferred: adoption reads ORC files (pyarrow); --help needs none of it
    from acidflow.tableops import adopt as ops

    if "://" not in location and not location.startswith("file:"):
        location = os.path.abspath(location)
    if partitioned_by is not None:
        pcols = ops.parse_columns(partitioned_by, "--partitioned-by")
    else:
        pcols = [Column(n, "string") for n in ops.partition_names_from_dirs(location)]
    cols = (
        ops.parse_columns(columns)
        if columns
        else ops.columns_from_files(name, location, [c.name for c in pcols])
    )
    if buckets and not (clustered_by or primary_key):
        raise ops.TableOpsError(f"table {name}: --buckets {buckets} needs --clustered-by")
    tdef = TableDef(
        name=name,
        columns=cols,
        partition_columns=pcols,
        primary_key=_names(primary_key) if primary_key else [],
        bucket_columns=_names(clustered_by) if clustered_by else [],
        num_buckets=buckets,
        location=location,
    )
    tdef.validate()
    return tdef
