"""The ``acidflow`` command (Typer + Rich).

Reads run in this process with pyarrow (no JVM start); writes and jobs run in Spark through
``jobs/submit.py``. Catalog and warehouse come from ``ACIDFLOW_CATALOG_URL`` /
``ACIDFLOW_WAREHOUSE`` (see ``acidflow.config``).
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import decimal
import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from acidflow.catalog import Catalog
from acidflow.catalog.records import TxnState
from acidflow.cli import catalog as catalog_cli
from acidflow.cli import cdc as cdc_cli
from acidflow.cli import compactor as compactor_cli
from acidflow.cli import demo as demo_cli
from acidflow.cli import dml as dml_cli
from acidflow.cli import health as health_cli
from acidflow.cli import history as history_cli
from acidflow.cli import pull as pull_cli
from acidflow.cli import reconcile as reconcile_cli
from acidflow.cli import table as table_cli
from acidflow.cli import timeline as timeline_cli
from acidflow.cli import validate as validate_cli
from acidflow.cli.console import console, err
from acidflow.format.layout import ValidWriteIdList
from acidflow.storage.fs import TableFS

app = typer.Typer(
    help="acidflow: Hive 3 full-ACID tables on Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
show_app = typer.Typer(
    help="SHOW TRANSACTIONS / SHOW LOCKS, as Hive prints them.", no_args_is_help=True
)
app.add_typer(show_app, name="show")
cdc_app = typer.Typer(
    help="Change data capture: apply change files, pull from PostgreSQL.", no_args_is_help=True
)
app.add_typer(cdc_app, name="cdc")


def _catalog() -> Catalog:
    return Catalog.from_settings()


def _ids(text: Optional[str]) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(sorted(int(x) for x in text.split(",") if x.strip()))
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated write ids, got {text!r}")


def _json_default(v: object) -> str:
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat(sep=" ") if isinstance(v, _dt.datetime) else v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    raise TypeError(f"not JSON serialisable: {type(v).__name__}")


def _emit(rows: list[dict[str, Any]], columns: list[str], fmt: str) -> None:
    if fmt == "jsonl":
        out = sys.stdout
        for r in rows:
            out.write(json.dumps(r, default=_json_default, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        for r in rows:
            w.writerow(
                [
                    json.dumps(r[c], default=_json_default)
                    if isinstance(r[c], (dict, list))
                    else ("" if r[c] is None else _fmt_cell(r[c]))
                    for c in columns
                ]
            )
    elif fmt == "table":
        t = Table(*columns)
        for r in rows:
            t.add_row(*[_fmt_cell(r[c]) for c in columns])
        console.print(t)
        console.print(f"{len(rows)} rows")
    else:
        raise typer.BadParameter(f"unknown format {fmt!r} (jsonl, csv, table)")


def _fmt_cell(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, (dict, list)):
        return json.dumps(v, default=_json_default)
    if isinstance(v, (bytes, bytearray, decimal.Decimal, _dt.date)):
        return str(_json_default(v))
    return str(v)


@app.command()
def cat(
    target: str = typer.Argument(..., help="table name or table/partition directory"),
    as_of: Optional[int] = typer.Option(
        None, "--as-of", help="time travel: snapshot at this write id (catalog tables)"
    ),
    hwm: Optional[int] = typer.Option(None, "--hwm", help="high watermark for a bare directory"),
    open_ids: Optional[str] = typer.Option(None, "--open", help="open write ids, comma-separated"),
    aborted_ids: Optional[str] = typer.Option(
        None, "--aborted", help="aborted write ids, comma-separated"
    ),
    row_id: bool = typer.Option(False, "--row-id", help="add ROW__ID {writeid, bucketid, rowid}"),
    read_optimized: bool = typer.Option(False, "--read-optimized", help="base only"),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl | csv | table"),
    incremental: Optional[str] = typer.Option(
        None,
        "--incremental",
        metavar="FROM[:TO]",
        help="changed rows between write ids FROM (exclusive) and TO (inclusive, default "
        "the high watermark): op I/D and write_id columns first; an update is a D of "
        "the old version and an I of the new one",
    ),
) -> None:
    """Print the visible rows of a table or a table directory.

    A bare directory with no catalog entry: every write id found is committed unless
    --hwm/--open/--aborted say otherwise (Hive ValidWriteIdList semantics)."""
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import table as reads

    if incremental is not None:
        if as_of is not None or hwm is not None or open_ids or aborted_ids or read_optimized:
            raise typer.BadParameter(
                "--incremental takes no --as-of/--hwm/--open/--aborted/--read-optimized"
            )
        changes = timeline_cli.incremental_rows(_catalog(), target, incremental, row_id=row_id)
        _emit(changes.to_pylist(), changes.column_names, fmt)
        return
    if Path(target).exists() or "://" in target:
        if as_of is not None:
            raise typer.BadParameter("--as-of needs a catalog table; use --hwm for a directory")
        plan = reads.plan_path(
            target,
            high_watermark=hwm,
            open_write_ids=_ids(open_ids),
            aborted_write_ids=_ids(aborted_ids),
            read_optimized=read_optimized,
        )
    else:
        if hwm is not None or open_ids or aborted_ids:
            raise typer.BadParameter(
                "--hwm/--open/--aborted apply to directories; use --as-of for a catalog table"
            )
        plan = reads.plan_table(
            _catalog(), target, as_of_write_id=as_of, read_optimized=read_optimized
        )
    table = reads.run_plan(None, plan, row_id=row_id)
    rows = table.to_pylist()
    _emit(rows, table.column_names, fmt)


@app.command()
def dump(file: str = typer.Argument(..., help="an ORC event or original file")) -> None:
    """Print every event of an ORC file as JSON lines (like ``orc-tools data``), then nothing
    else; the footer metadata goes to stderr."""
    # deferred: the ORC codec imports pyarrow and pyorc; --help needs neither
    from acidflow.format.orc import files as acid_files

    tfs = TableFS(file)
    info = acid_files.file_info(tfs, file)
    err.print(
        f"[dim]{file}: {info.rows} rows, {info.stripes} stripes, "
        f"{'ACID events' if info.is_acid else 'original (non-ACID) file'}; metadata: "
        + json.dumps({k: v.decode(errors="replace") for k, v in info.metadata.items()})
        + "[/]"
    )
    if info.is_acid:
        t = acid_files.read_events(tfs, file)
        names = t.column_names
        for r in t.to_pylist():
            ev = {k: r[k] for k in names[:5]}
            ev["row"] = (
                None
                if r["operation"] == acid_files.OPERATION_DELETE
                else {k: r[k] for k in names[5:]}
            )
            sys.stdout.write(json.dumps(ev, default=_json_default, ensure_ascii=False) + "\n")
    else:
        for r in acid_files.read_original(tfs, file).to_pylist():
            sys.stdout.write(json.dumps(r, default=_json_default, ensure_ascii=False) + "\n")


@app.command()
def state(
    path: str = typer.Argument(..., help="table or partition directory"),
    hwm: Optional[int] = typer.Option(None, "--hwm"),
    open_ids: Optional[str] = typer.Option(None, "--open"),
    aborted_ids: Optional[str] = typer.Option(None, "--aborted"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The AcidState of a directory (Hive getAcidState): base, current deltas, original files,
    obsolete and aborted directories."""
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import table as reads

    valid = ValidWriteIdList(
        Path(path).name,
        reads.LONG_MAX if hwm is None else hwm,
        open_write_ids=_ids(open_ids),
        aborted_write_ids=_ids(aborted_ids),
    )
    st = reads.acid_state_of(path, valid)
    doc: dict[str, Any] = {
        "base": st.base.name if st.base else None,
        "deltas": [d.name for d in st.deltas],
        "original_files": list(st.original_files),
        "obsolete": list(st.obsolete),
        "aborted": list(st.aborted),
        "valid_write_ids": valid.to_string(),
    }
    if as_json:
        print(json.dumps(doc, indent=2))
        return
    t = Table("kind", "name")
    t.add_row("base", doc["base"] or "-")
    for d in doc["deltas"]:
        t.add_row("delta", d)
    for o in doc["original_files"]:
        t.add_row("original", o)
    for o in doc["obsolete"]:
        t.add_row("obsolete", o)
    for o in doc["aborted"]:
        t.add_row("aborted", o)
    console.print(t)


@app.command()
def tables() -> None:
    """List the catalog's tables with their high watermark."""
    cat_ = _catalog()
    t = Table("table", "columns", "partitioned by", "buckets", "key", "high watermark", "location")
    for td in cat_.list_tables():
        valid = cat_.valid_write_ids(td.name)
        t.add_row(
            td.name,
            str(len(td.columns)),
            ",".join(c.name for c in td.partition_columns) or "-",
            str(td.num_buckets or "-"),
            ",".join(td.primary_key) or "-",
            str(valid.high_watermark),
            td.location,
        )
    console.print(t)


@app.command()
def describe(name: str) -> None:
    """DESCRIBE FORMATTED: columns, partition columns, bucketing, properties, snapshot."""
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import history

    cat_ = _catalog()
    td = cat_.get_table(name)
    t = Table("col_name", "data_type", "comment")
    for c in td.columns:
        t.add_row(c.name, c.hive_type, "primary key" if c.name in td.primary_key else "")
    for c in td.partition_columns:
        t.add_row(c.name, c.hive_type, "partition column")
    console.print(t)
    valid = cat_.valid_write_ids(td.name)
    info = Table("property", "value")
    info.add_row("location", td.location)
    info.add_row("bucket columns", ",".join(td.bucket_columns) or "-")
    info.add_row("num buckets", str(td.num_buckets))
    info.add_row("ordering column", td.ordering_column or "-")
    for k, v in sorted(td.properties.items()):
        info.add_row(k, v)
    info.add_row("ValidWriteIdList", valid.to_string())
    info.add_row("history", history.retained_range(cat_, td.name, table=td).describe())
    console.print(info)


@show_app.command("transactions")
def show_transactions(all_: bool = typer.Option(False, "--all", help="include committed")) -> None:
    """SHOW TRANSACTIONS: open and aborted transactions (and committed with --all)."""
    cat_ = _catalog()
    states = None if all_ else [TxnState.OPEN, TxnState.ABORTED]
    t = Table("txn id", "state", "started", "last heartbeat", "user", "host", "agent", "write ids")
    for x in cat_.list_transactions(states=states):
        t.add_row(
            str(x.txn_id),
            x.state,
            str(x.started_at),
            str(x.last_heartbeat or ""),
            x.user or "",
            x.host or "",
            x.agent_info or "",
            ", ".join(f"{k}:{v}" for k, v in sorted((x.write_ids or {}).items())),
        )
    console.print(t)


@show_app.command("locks")
def show_locks() -> None:
    """SHOW LOCKS: lock id, table, partition, state, type, txn."""
    cat_ = _catalog()
    t = Table("lock id", "table", "partition", "state", "type", "txn id", "acquired at", "user")
    for lk in cat_.list_locks():
        t.add_row(
            str(lk.lock_id),
            lk.table,
            lk.partition or "",
            lk.state,
            lk.lock_type,
            str(lk.txn_id),
            str(lk.acquired_at or ""),
            lk.user or "",
        )
    console.print(t)


def _register_subcommands() -> None:
    cdc_cli.register(app, cdc_app, show_app, _catalog)
    pull_cli.register(cdc_app)
    reconcile_cli.register(app)
    validate_cli.register(app)
    compactor_cli.register(app, show_app)
    catalog_cli.register(app)
    table_cli.register(app, _catalog)
    health_cli.register(app, _catalog)
    timeline_cli.register(app, _catalog)
    dml_cli.register(app, _catalog)
    history_cli.register(app, _catalog)
    demo_cli.register(app, _catalog)


_register_subcommands()


def main() -> None:
    """Console-script entry point; errors print one clear line and exit 1."""
    try:
        app()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        # one line (no wrapping at the console width), the message taken literally
        err.print(f"[red]error:[/] {type(exc).__name__}: ", end="")
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
