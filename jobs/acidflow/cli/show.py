"""What the catalog knows, as Hive prints it: ``acidflow tables``, ``acidflow describe TABLE``
(DESCRIBE FORMATTED) and the ``acidflow show`` group (SHOW TRANSACTIONS, SHOW LOCKS,
SHOW COMPACTIONS, and the batch ledger). Each has ``--json`` (JSON lines, one object per item;
``describe`` one object), see :mod:`acidflow.cli.console`.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import typer
from rich.table import Table

from acidflow.cli.console import console, emit_json, emit_json_lines, time_cell
from acidflow.cli.context import cli_context
from acidflow.states import TxnState

JSON_HELP = "JSON lines, one object per item"


def tables(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help=JSON_HELP)
) -> None:
    """List the catalog's tables with their high watermark."""
    cat = cli_context(ctx).catalog()
    docs = []
    for td in cat.list_tables():
        doc = td.to_dict()
        doc["high_watermark"] = cat.valid_write_ids(td.name).high_watermark
        docs.append(doc)
    if as_json:
        emit_json_lines(docs)
        return
    t = Table("table", "columns", "partitioned by", "buckets", "key", "high watermark", "location")
    for d in docs:
        t.add_row(
            d["name"],
            str(len(d["columns"])),
            ",".join(c["name"] for c in d["partition_columns"]) or "-",
            str(d["num_buckets"] or "-"),
            ",".join(d["primary_key"]) or "-",
            str(d["high_watermark"]),
            d["location"],
        )
    console.print(t)


def describe(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="db.table"),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="one JSON object: the table definition plus valid_write_ids (Hive's "
        "ValidWriteIdList string), high_watermark and history (retained write ids)",
    ),
) -> None:
    """DESCRIBE FORMATTED: columns, partition columns, bucketing, properties, snapshot."""
    # deferred: the readers import pyarrow and the ORC codec; --help needs none of it
    from acidflow.read import history

    cat = cli_context(ctx).catalog()
    td = cat.get_table(name)
    valid = cat.valid_write_ids(td.name)
    retained = history.retained_range(cat, td.name, table=td)
    if as_json:
        doc = td.to_dict()
        doc.update(
            valid_write_ids=valid.to_string(),
            high_watermark=valid.high_watermark,
            history={
                "oldest_write_id": retained.oldest,
                "newest_write_id": retained.newest,
                "policy": retained.policy.describe(),
            },
        )
        emit_json(doc)
        return
    t = Table("col_name", "data_type", "comment")
    for c in td.columns:
        t.add_row(c.name, c.hive_type, "primary key" if c.name in td.primary_key else "")
    for c in td.partition_columns:
        t.add_row(c.name, c.hive_type, "partition column")
    console.print(t)
    info = Table("property", "value")
    info.add_row("location", td.location)
    info.add_row("bucket columns", ",".join(td.bucket_columns) or "-")
    info.add_row("num buckets", str(td.num_buckets))
    info.add_row("ordering column", td.ordering_column or "-")
    for k, v in sorted(td.properties.items()):
        info.add_row(k, v)
    info.add_row("ValidWriteIdList", valid.to_string())
    info.add_row("history", retained.describe())
    console.print(info)


def show_transactions(
    ctx: typer.Context,
    all_: bool = typer.Option(False, "--all", help="include committed"),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """SHOW TRANSACTIONS: open and aborted transactions (and committed with --all)."""
    states = None if all_ else [TxnState.OPEN, TxnState.ABORTED]
    txns = cli_context(ctx).catalog().list_transactions(states=states)
    if as_json:
        emit_json_lines(dataclasses.asdict(x) for x in txns)
        return
    t = Table("txn id", "state", "started", "last heartbeat", "user", "host", "agent", "write ids")
    for x in txns:
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


def show_locks(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help=JSON_HELP)
) -> None:
    """SHOW LOCKS: lock id, table, partition, state, type, txn."""
    locks = cli_context(ctx).catalog().list_locks()
    if as_json:
        emit_json_lines(dataclasses.asdict(lk) for lk in locks)
        return
    t = Table("lock id", "table", "partition", "state", "type", "txn id", "acquired at", "user")
    for lk in locks:
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


def show_batches(
    ctx: typer.Context,
    kind: Optional[str] = typer.Option(None, "--kind", help="cdc | ingest"),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Idempotence records: each batch id and the transaction that applied it."""
    batches = cli_context(ctx).catalog().list_batches(kind)
    if as_json:
        emit_json_lines(dataclasses.asdict(b) for b in batches)
        return
    t = Table(title="batches")
    for c in ("batch", "kind", "txn", "state", "registered", "source"):
        t.add_column(c)
    for b in batches:
        t.add_row(
            b.batch_id, b.kind, str(b.txn_id), b.state, time_cell(b.registered_at), b.source or ""
        )
    console.print(t)


def show_compactions(
    ctx: typer.Context,
    table: Optional[str] = typer.Option(None, "--table", help="only this table"),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """SHOW COMPACTIONS: queue and history (id, table, partition, type, state, worker,
    times, highest write id, txn, error)."""
    items = cli_context(ctx).catalog().list_compactions(table)
    if as_json:
        emit_json_lines(c.to_dict() for c in items)
        return
    t = Table(
        "CompactionId",
        "Table",
        "Partition",
        "Type",
        "State",
        "Requester",
        "Worker",
        "Enqueued",
        "Start",
        "End",
        "HighestWriteId",
        "TxnId",
        "Error",
    )
    for c in items:
        t.add_row(
            str(c.id),
            c.table,
            c.partition or "---",
            c.type.upper(),
            c.state,
            c.requester,
            c.worker_id or "---",
            time_cell(c.enqueued_at),
            time_cell(c.started_at),
            time_cell(c.ended_at),
            time_cell(c.highest_write_id),
            time_cell(c.txn_id),
            (c.error or "")[:60],
        )
    console.print(t)


def register(app: typer.Typer) -> None:
    """Add ``tables`` and ``describe`` to ``app`` and the ``show`` group (``transactions``,
    ``locks``, ``batches``, ``compactions``)."""
    app.command("tables")(tables)
    app.command("describe")(describe)
    show_app = typer.Typer(
        help="SHOW TRANSACTIONS / LOCKS / COMPACTIONS as Hive prints them, and the batch ledger.",
        no_args_is_help=True,
    )
    app.add_typer(show_app, name="show")
    show_app.command("transactions")(show_transactions)
    show_app.command("locks")(show_locks)
    show_app.command("batches")(show_batches)
    show_app.command("compactions")(show_compactions)
