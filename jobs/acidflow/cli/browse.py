"""``acidflow cat``, ``acidflow dump`` and ``acidflow state``: a table's rows, an ORC file's
events and a directory's AcidState, read in this process with pyarrow (no JVM start).

``cat --format`` is the output format (``jsonl``, ``csv``, ``table``); ``dump`` always prints
JSON lines; ``state --json`` one JSON line (:mod:`acidflow.cli.console`).
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from acidflow.cli.console import console, emit_json, err, json_default, json_line
from acidflow.cli.context import cli_context
from acidflow.cli.timeline import incremental_rows
from acidflow.format.layout import ValidWriteIdList
from acidflow.storage.fs import TableFS

OUTPUT_FORMATS = ("jsonl", "csv", "table")


def parse_ids(text: Optional[str]) -> tuple[int, ...]:
    """``"3,4"`` -> ``(3, 4)`` (sorted); ``None`` or ``""`` -> ``()``.

    Raises:
        typer.BadParameter: an item that is not an integer.
    """
    if not text:
        return ()
    try:
        return tuple(sorted(int(x) for x in text.split(",") if x.strip()))
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated write ids, got {text!r}")


def format_cell(v: object) -> str:
    """One value as ``cat --format table|csv`` shows it: NULL, JSON for nested values, ISO
    dates, base64 binary, decimals and floats as Python prints them."""
    if v is None:
        return "NULL"
    if isinstance(v, (dict, list)):
        return json_line(v)
    if isinstance(v, (str, int, float)):
        return str(v)
    return str(json_default(v))


def emit_rows(rows: list[dict[str, Any]], columns: list[str], fmt: str) -> None:
    """Print ``rows`` (dicts keyed by ``columns``) as ``fmt``: ``jsonl`` (one JSON object per
    row, :func:`acidflow.cli.console.json_line`), ``csv`` (a header, then NULL as an empty
    field) or ``table`` (Rich, then the row count).

    Raises:
        typer.BadParameter: an unknown ``fmt``.
    """
    if fmt == "jsonl":
        out = sys.stdout
        for r in rows:
            out.write(json_line(r) + "\n")
    elif fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r[c] is None else format_cell(r[c]) for c in columns])
    elif fmt == "table":
        t = Table(*columns)
        for r in rows:
            t.add_row(*[format_cell(r[c]) for c in columns])
        console.print(t)
        console.print(f"{len(rows)} rows")
    else:
        raise typer.BadParameter(f"unknown format {fmt!r} ({', '.join(OUTPUT_FORMATS)})")


def cat(
    ctx: typer.Context,
    target: str = typer.Argument(..., help="table name or table/partition directory"),
    as_of: Optional[int] = typer.Option(
        None,
        "--as-of",
        help="time travel: the committed state right after this write id's commit (catalog tables)",
    ),
    as_of_timestamp: Optional[datetime] = typer.Option(
        None,
        "--as-of-timestamp",
        formats=["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d"],
        help="time travel: the state after the last commit at or before this UTC time",
    ),
    hwm: Optional[int] = typer.Option(None, "--hwm", help="high watermark for a bare directory"),
    open_ids: Optional[str] = typer.Option(None, "--open", help="open write ids, comma-separated"),
    aborted_ids: Optional[str] = typer.Option(
        None, "--aborted", help="aborted write ids, comma-separated"
    ),
    row_id: bool = typer.Option(False, "--row-id", help="add ROW__ID {writeid, bucketid, rowid}"),
    read_optimized: bool = typer.Option(False, "--read-optimized", help="base only"),
    fmt: str = typer.Option("jsonl", "--format", help="output: jsonl | csv | table"),
    incremental: Optional[str] = typer.Option(
        None,
        "--incremental",
        metavar="FROM[:TO]",
        help="changed rows between write ids FROM (exclusive) and TO (inclusive, default "
        "the high watermark): op I/D and write_id columns first; an update is a D of "
        "the old version and an I of the new one",
    ),
    where: Optional[list[str]] = typer.Option(
        None,
        "--where",
        help='a row filter, SQL-like: "region = \'eu\'", "id in (1, 2)", "closed is null"; '
        "repeat to AND them. Exact (the rows of the full read that pass it); partitions and "
        "stripes that cannot match are skipped",
    ),
) -> None:
    """Print the visible rows of a table or a table directory.

    A bare directory with no catalog entry: every write id found is committed unless
    --hwm/--open/--aborted say otherwise (Hive ValidWriteIdList semantics)."""
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import table as reads
    from acidflow.read.predicates import PredicateError, where_from_text

    if fmt not in OUTPUT_FORMATS:
        raise typer.BadParameter(f"unknown format {fmt!r} ({', '.join(OUTPUT_FORMATS)})")
    if incremental is not None:
        if (
            where
            or as_of is not None
            or as_of_timestamp is not None
            or hwm is not None
            or open_ids
            or aborted_ids
            or read_optimized
        ):
            raise typer.BadParameter(
                "--incremental takes no --where/--as-of/--as-of-timestamp/--hwm/--open/"
                "--aborted/--read-optimized"
            )
        changes = incremental_rows(cli_context(ctx).catalog(), target, incremental, row_id=row_id)
        emit_rows(changes.to_pylist(), changes.column_names, fmt)
        return
    if Path(target).exists() or "://" in target:
        if as_of is not None or as_of_timestamp is not None:
            raise typer.BadParameter(
                "--as-of/--as-of-timestamp need a catalog table; use --hwm for a directory"
            )
        plan = reads.plan_path(
            target,
            high_watermark=hwm,
            open_write_ids=parse_ids(open_ids),
            aborted_write_ids=parse_ids(aborted_ids),
            read_optimized=read_optimized,
        )
    else:
        if hwm is not None or open_ids or aborted_ids:
            raise typer.BadParameter(
                "--hwm/--open/--aborted apply to directories; use --as-of for a catalog table"
            )
        if as_of is not None and as_of_timestamp is not None:
            raise typer.BadParameter("give --as-of or --as-of-timestamp, not both")
        plan = reads.plan_table(
            cli_context(ctx).catalog(),
            target,
            as_of_write_id=as_of,
            as_of_timestamp=as_of_timestamp.replace(tzinfo=timezone.utc)
            if as_of_timestamp is not None
            else None,
            read_optimized=read_optimized,
        )
    try:
        preds = where_from_text(where or (), plan.columns, plan.partition_columns, table=target)
    except PredicateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--where") from None
    table = reads.run_plan(None, plan, row_id=row_id, where=preds or None)
    emit_rows(table.to_pylist(), table.column_names, fmt)


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
            emit_json(ev)
    else:
        for r in acid_files.read_original(tfs, file).to_pylist():
            emit_json(r)


def state(
    path: str = typer.Argument(..., help="table or partition directory"),
    hwm: Optional[int] = typer.Option(None, "--hwm"),
    open_ids: Optional[str] = typer.Option(None, "--open"),
    aborted_ids: Optional[str] = typer.Option(None, "--aborted"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    """The AcidState of a directory (Hive getAcidState): base, current deltas, original files,
    obsolete and aborted directories."""
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import table as reads

    valid = ValidWriteIdList(
        Path(path).name,
        reads.LONG_MAX if hwm is None else hwm,
        open_write_ids=parse_ids(open_ids),
        aborted_write_ids=parse_ids(aborted_ids),
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
        emit_json(doc)
        return
    t = Table("kind", "name")
    t.add_row("base", doc["base"] or "-")
    for kind, key in (
        ("delta", "deltas"),
        ("original", "original_files"),
        ("obsolete", "obsolete"),
        ("aborted", "aborted"),
    ):
        for name in doc[key]:
            t.add_row(kind, name)
    console.print(t)


def register(app: typer.Typer) -> None:
    """Add ``cat``, ``dump`` and ``state`` to ``app``."""
    app.command("cat")(cat)
    app.command("dump")(dump)
    app.command("state")(state)
