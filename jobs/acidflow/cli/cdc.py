"""``acidflow cdc apply``, ``acidflow cdc stream`` and ``acidflow ingest`` (Typer + Rich)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from acidflow.cli.console import console, emit_json
from acidflow.cli.context import cli_context
from acidflow.spark import get_spark

if TYPE_CHECKING:
    from acidflow.cdc.apply import BatchReport


def print_reports(reports: list[BatchReport], as_json: bool = False) -> None:
    """Print batch reports as a Rich table, or as JSON lines (one object per report: its
    fields, see :class:`acidflow.cdc.apply.BatchReport`)."""
    if as_json:
        for r in reports:
            emit_json(r.__dict__)
        return
    t = Table(title="CDC batches")
    for c in (
        "file",
        "batch",
        "status",
        "txn",
        "table",
        "ins",
        "upd",
        "del",
        "late",
        "del-missing",
        "quarantined",
        "s",
    ):
        t.add_column(
            c,
            justify="right"
            if c in ("txn", "ins", "upd", "del", "late", "del-missing", "quarantined", "s")
            else "left",
        )
    for r in reports:
        rows = list(r.tables.items()) or [("-", {})]
        for i, (name, st) in enumerate(rows):
            first = i == 0
            t.add_row(
                r.file.rsplit("/", 1)[-1] if first else "",
                r.batch_id[:40] if first else "",
                r.status if first else "",
                str(r.txn_id or "") if first else "",
                name,
                str(st.get("rows_inserted", "")),
                str(st.get("rows_updated", "")),
                str(st.get("rows_deleted", "")),
                str(st.get("ignored_late", "")),
                str(st.get("deletes_of_missing", "")),
                str(r.quarantined) if first else "",
                f"{r.seconds:.1f}" if first else "",
            )
    console.print(t)
    for r in reports:
        for src, n in r.waiting.items():
            console.print(
                f"{r.file}: {n} TRUNCATE(s) of {src} ignored: the table does not exist "
                "yet (created by the first change that carries its columns)"
            )
        for name, st in r.tables.items():
            if st.get("schema_change"):
                console.print(f"[yellow]{name}: schema change {st['schema_change']}")
    bad = [r for r in reports if r.quarantine_file]
    for r in bad:
        console.print(f"[yellow]{r.quarantined} bad record(s) of {r.file} in {r.quarantine_file}")


def apply(
    ctx: typer.Context,
    input: str = typer.Option(..., "--input", help="change file or directory of files"),
    fmt: str = typer.Option("wal2json", "--input-format", help="wal2json | debezium | goldengate"),
    tables_config: Optional[str] = typer.Option(
        None, "--tables-config", help="YAML file or directory (include/tables/)"
    ),
    auto_create: bool = typer.Option(
        False, "--auto-create", help="register unknown tables from the stream"
    ),
    target_db: str = typer.Option(
        "default", "--target-db", help="database of tables named after their source"
    ),
    num_buckets: int = typer.Option(4, "--num-buckets", help="buckets of auto-created tables"),
    schema_drift: str = typer.Option("add", "--schema-drift", help="add | fail"),
    update_missing: str = typer.Option("insert", "--update-missing", help="insert | quarantine"),
    insert_existing: str = typer.Option("update", "--insert-existing", help="update | quarantine"),
    delete_missing: str = typer.Option("count", "--delete-missing", help="count | quarantine"),
    quarantine_threshold: float = typer.Option(
        0.01, "--quarantine-threshold", help="largest fraction of bad records"
    ),
    table: Optional[list[str]] = typer.Option(None, "--table", help="only these source tables"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Apply change files (one batch per file, in name order) in Spark."""
    # deferred: the CDC job imports pyarrow, SQLAlchemy and the Spark writer; --help needs none
    from acidflow.cdc.apply import apply_path, build_options

    options = build_options(
        fmt,
        tables_config=tables_config,
        auto_create=auto_create,
        target_db=target_db,
        num_buckets=num_buckets,
        schema_drift=schema_drift,
        update_missing=update_missing,
        insert_existing=insert_existing,
        delete_missing=delete_missing,
        quarantine_threshold=quarantine_threshold,
        tables=table,
    )
    spark = get_spark("acidflow-cdc-apply")
    reports = apply_path(spark, cli_context(ctx).catalog(), input, options)
    print_reports(reports, as_json)


def stream(
    ctx: typer.Context,
    bootstrap_servers: str = typer.Option(..., "--bootstrap-servers", help="host:port,..."),
    source: str = typer.Option(..., "--source", help="the source's name (the catalog's offsets)"),
    topics: str = typer.Option("", "--topics", help="comma-separated change topics"),
    topic_pattern: str = typer.Option("", "--topic-pattern", help="regex of change topics"),
    transaction_topic: str = typer.Option(
        "", "--transaction-topic", help="Debezium's BEGIN/END topic (whole transactions)"
    ),
    fmt: str = typer.Option("debezium", "--input-format", help="debezium | goldengate"),
    starting_offsets: str = typer.Option(
        "earliest", "--starting-offsets", help="first batch: earliest | latest | offsets JSON"
    ),
    max_offsets: int = typer.Option(0, "--max-offsets", help="records per batch (0: no cap)"),
    trigger_seconds: float = typer.Option(5.0, "--trigger-seconds", help="trigger interval"),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint", help="Spark checkpointLocation (default: a temporary folder)"
    ),
    max_batches: int = typer.Option(0, "--max-batches", help="stop after N batches (0: never)"),
    timeout: float = typer.Option(0, "--timeout", help="stop after N seconds (0: never)"),
    tables_config: Optional[str] = typer.Option(None, "--tables-config", help="YAML file/dir"),
    auto_create: bool = typer.Option(False, "--auto-create", help="register unknown tables"),
    target_db: str = typer.Option("default", "--target-db", help="database of new tables"),
    schema_drift: str = typer.Option("add", "--schema-drift", help="add | fail"),
    quarantine_threshold: float = typer.Option(
        0.01, "--quarantine-threshold", help="largest fraction of bad records"
    ),
    min_bad_records: int = typer.Option(
        10, "--min-bad-records", help="a batch with fewer bad records is never refused"
    ),
    value_format: str = typer.Option(
        "json", "--value-format", help="json (JsonConverter) | avro (through a schema registry)"
    ),
    schema_registry_url: str = typer.Option(
        "",
        "--schema-registry-url",
        help="with avro: apicurio.registry.url (http://host:8080/apis/registry/v2)",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Apply a Kafka CDC source continuously (Structured Streaming, foreachBatch): each batch
    with its offsets in one catalog transaction, whole source transactions, exactly once."""
    # deferred: the CDC job imports pyarrow, SQLAlchemy and the Spark writer; --help needs none
    from acidflow.cdc.apply import build_options
    from acidflow.cdc.kafka import kafka_options
    from acidflow.cdc.stream import run_kafka_stream

    options = build_options(
        fmt,
        tables_config=tables_config,
        auto_create=auto_create,
        target_db=target_db,
        num_buckets=4,
        schema_drift=schema_drift,
        update_missing="insert",
        insert_existing="update",
        delete_missing="count",
        quarantine_threshold=quarantine_threshold,
    )
    kopts = kafka_options(
        source,
        bootstrap_servers,
        topics=topics,
        topic_pattern=topic_pattern,
        transaction_topic=transaction_topic,
        starting_offsets=starting_offsets,
        max_offsets=max_offsets,
        min_bad_records=min_bad_records,
        value_format=value_format,
        schema_registry_url=schema_registry_url,
    )
    run = run_kafka_stream(
        get_spark("acidflow-cdc-stream"),
        cli_context(ctx).catalog(),
        options,
        kopts,
        trigger_seconds=trigger_seconds,
        checkpoint=checkpoint,
        max_batches=max_batches or None,
        timeout_s=timeout or None,
    )
    if run.reports or as_json:
        print_reports(run.reports, as_json)
    else:
        console.print(
            f"nothing to apply: {run.micro_batches} micro-batch(es) found no new whole source "
            f"transaction on {topics or topic_pattern} (source {source})",
            soft_wrap=True,
        )


def quarantine_file(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="the change file to set aside"),
    reason: str = typer.Option(..., "--reason", help="why (recorded with the file)"),
) -> None:
    """Set a poison change file aside (moved under <warehouse>/_quarantine/cdc/files/ with
    a JSON record of reason, time, size and sha256) so the next `cdc apply` goes on with the
    later files. Its changes are NOT applied: replay them from the source if needed."""
    # deferred: imports the catalog's SQL backend (SQLAlchemy); --help needs none of it
    from acidflow.quarantine import quarantine_input_file

    dest, record = quarantine_input_file(cli_context(ctx).catalog().warehouse, "cdc", path, reason)
    console.print(f"quarantined {path} -> {dest} (record {record})", soft_wrap=True)


def ingest_cmd(
    ctx: typer.Context,
    table: str = typer.Option(..., "--table", help="db.table"),
    path: str = typer.Option(..., "--path", help="landing file, glob or directory"),
    fmt: str = typer.Option(..., "--input-format", help="csv | jsonl | parquet"),
    data_interval: str = typer.Option(
        ..., "--data-interval", help="identity of the interval, e.g. 2024-01-01"
    ),
    mode: str = typer.Option("append", "--mode", help="append | overwrite | upsert"),
    upsert: bool = typer.Option(
        False,
        "--upsert",
        help="update rows whose primary key is already in the "
        "table instead of refusing them (= --mode upsert)",
    ),
    partition: Optional[list[str]] = typer.Option(
        None, "--partition", help="col=value (repeatable)"
    ),
    quarantine_threshold: float = typer.Option(0.01, "--quarantine-threshold"),
    as_json: bool = typer.Option(
        False, "--json", help="one JSON line: the batch report (IngestReport fields)"
    ),
) -> None:
    """Load the landing files of one data interval into a table, once (Spark).

    Appending to a table with a primary key refuses keys that are already in the table
    (or repeat in the files) unless --upsert is given. Unreadable files (binary, truncated
    .gz, broken Parquet) are quarantined whole and the other files are loaded."""
    if upsert:
        if mode not in ("append", "upsert"):
            raise typer.BadParameter(f"--upsert does not combine with --mode {mode}")
        mode = "upsert"
    spec = dict(kv.split("=", 1) for kv in partition or []) or None
    # deferred: the ingest job imports pyarrow, SQLAlchemy and the Spark writer
    from acidflow.ingest import ingest

    r = ingest(
        get_spark("acidflow-ingest"),
        cli_context(ctx).catalog(),
        table,
        path,
        fmt,
        data_interval,
        mode=mode,
        partition=spec,
        quarantine_threshold=quarantine_threshold,
    )
    if as_json:
        emit_json(dataclasses.asdict(r))
        return
    console.print(
        f"{r.status}: {r.table} {r.data_interval} ({r.mode}) rows={r.rows} "
        + (f"updated={r.rows_updated} " if r.mode == "upsert" else "")
        + f"quarantined={r.quarantined} txn={r.txn_id} write id={r.write_id} "
        f"batch={r.batch_id} {r.seconds:.1f}s"
    )
    if r.note:
        console.print(f"[yellow]{r.note}")
    for f in r.files:
        if f.get("unreadable"):
            console.print(f"[yellow]quarantined unreadable file {f['path']}: {f['unreadable']}")
    if r.quarantine_file:
        console.print(f"[yellow]bad records: {r.quarantine_file}")


def register(app: typer.Typer, cdc_app: typer.Typer) -> None:
    """Add ``ingest`` to ``app`` and ``apply`` / ``stream`` / ``quarantine-file`` to the ``cdc``
    group."""
    cdc_app.command("apply")(apply)
    cdc_app.command("stream")(stream)
    cdc_app.command("quarantine-file")(quarantine_file)
    app.command("ingest")(ingest_cmd)
