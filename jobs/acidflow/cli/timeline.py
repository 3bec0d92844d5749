"""``acidflow commits TABLE`` (Hudi CLI ``commits show``) and the ``--incremental`` range of
``acidflow cat``: the history of a table from the command line.

``acidflow.cli.app`` calls :func:`register` with its top-level app;
``cat --incremental FROM[:TO]`` parses its range with :func:`parse_incremental_range` and reads
with :func:`incremental_rows`. The rows come from :func:`acidflow.tableops.timeline.timeline`
and :func:`acidflow.read.table.read_incremental` (pyarrow, no JVM); this module only prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from acidflow.catalog import Catalog
from acidflow.cli.console import console, emit_json_lines
from acidflow.cli.context import cli_context

if TYPE_CHECKING:
    import pyarrow as pa

    from acidflow.tableops.timeline import TimelineEntry

COMMITS_HELP = """The commit timeline of a table, newest first (Hudi's 'commits show'): one row
per commit (write id, transaction, commit time UTC, operation, batch id, rows
inserted/updated/deleted, files, bytes, the savepoints pinning it) and per compaction (type,
write-id range, its own transaction = visibility txn id, state), ordered by the catalog's
commit sequence.

--json prints JSON lines, one object per entry, newest first, with the keys kind, operation,
operations, write_id, txn_id, commit_id, time, batch_id, batch_kind, rows_inserted,
rows_updated, rows_deleted, files, bytes,
partitions ({partition: {files, bytes, rows}}) and compaction ({id, type, state, partition,
min_write_id, max_write_id, visibility_txn_id, inputs, outputs, error} or null) and
savepoints (the names of the savepoints pinning the commit's write id, 'acidflow savepoint')."""


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _short(batch_id: str | None) -> str:
    """A batch id cut to its head and tail (``wal2json:00…0029D49A8``); ``-`` when none."""
    if not batch_id:
        return "-"
    return batch_id if len(batch_id) <= 24 else f"{batch_id[:9]}…{batch_id[-12:]}"


def timeline_table(entries: list[TimelineEntry], title: str | None = None) -> Table:
    """A Rich table of timeline entries (one line each, in the order given)."""
    t = Table(
        "write id",
        "txn",
        "commit time (UTC)",
        "operation",
        "batch",
        "inserted",
        "updated",
        "deleted",
        "files",
        "bytes",
        "partitions",
        "savepoint",
        title=title,
    )
    for e in entries:
        if e.compaction is not None:
            c = e.compaction
            lo = c["min_write_id"]
            wid = (
                f"{lo}..{c['max_write_id']}"
                if lo is not None
                else f"<={c['max_write_id']}"
                if c["max_write_id"] is not None
                else "-"
            )
            op = f"compaction ({c['type']}, {c['state']})"
        else:
            wid, op = str(e.write_id), e.operation
        t.add_row(
            wid,
            str(e.txn_id) if e.txn_id is not None else "-",
            e.time.strftime("%Y-%m-%d %H:%M:%S") if e.time else "-",
            op,
            _short(e.batch_id),
            str(e.rows_inserted),
            str(e.rows_updated),
            str(e.rows_deleted),
            str(e.files),
            _human_bytes(e.bytes),
            str(len(e.partitions)),
            ", ".join(e.savepoints) or "-",
        )
    return t


def parse_incremental_range(text: str) -> tuple[int, Optional[int]]:
    """``FROM`` or ``FROM:TO`` -> ``(FROM, TO or None)``.

    Raises:
        typer.BadParameter: not integers, negative, or FROM > TO.
    """
    head, sep, tail = text.partition(":")
    try:
        start = int(head)
        end = int(tail) if sep and tail.strip() else None
    except ValueError:
        raise typer.BadParameter(
            f"--incremental expects FROM[:TO] write ids (integers), got {text!r}"
        )
    if start < 0 or (end is not None and end < 0):
        raise typer.BadParameter(f"--incremental {text!r}: write ids are not negative")
    if end is not None and start > end:
        raise typer.BadParameter(
            f"--incremental {text!r}: FROM {start} is after TO {end} "
            f"(FROM is exclusive, TO inclusive)"
        )
    return start, end


def incremental_rows(catalog: Catalog, name: str, text: str, *, row_id: bool = False) -> pa.Table:
    """The changed rows of ``name`` between write ids FROM (exclusive) and TO (inclusive,
    default the high watermark) of ``text`` (``FROM[:TO]``), from ``reads.read_incremental``
    in this process: ``op``, ``write_id``, the columns, and ``ROW__ID`` with ``row_id``.

    Raises:
        typer.BadParameter: a bad range, or FROM/TO beyond the table's high watermark (named).
        acidflow.format.layout.NotEnoughHistoryError: the start snapshot's files were cleaned.
    """
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import table as reads
    from acidflow.read.snapshot import ROW_ID

    start, end = parse_incremental_range(text)
    table = catalog.get_table(name)
    hwm = catalog.valid_write_ids(table.name).high_watermark
    for label, w in (("FROM", start), ("TO", end)):
        if w is not None and w > hwm:
            raise typer.BadParameter(
                f"--incremental {text!r}: {label} {w} is beyond the high "
                f"watermark {hwm} of {table.name}"
            )
    changes: pa.Table = reads.read_incremental(None, catalog, table.name, start, end)
    return changes if row_id else changes.drop_columns([ROW_ID])


def commits(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="db.table"),
    as_json: bool = typer.Option(
        False, "--json", help="JSON lines, one object per entry (keys above)"
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="only the newest N entries"),
) -> None:
    # deferred: the timeline imports the readers (pyarrow); --help needs none of it
    from acidflow.tableops.timeline import timeline

    entries = timeline(cli_context(ctx).catalog(), name, limit=limit)
    if as_json:
        emit_json_lines(e.to_dict() for e in entries)
        return
    console.print(timeline_table(entries, title=f"{name}: commits, newest first"))


def register(app: typer.Typer) -> None:
    """Add ``commits`` to ``app``."""
    app.command("commits", help=COMMITS_HELP)(commits)
