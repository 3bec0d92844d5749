"""spark-submit subcommand ``cdc-upsert`` (see ``jobs/submit.py`` and ``acidflow.entry``:
``cdc_upsert_main``).

Two sources: change files (``--input``: :func:`acidflow.cdc.apply.apply_path`) or a Kafka source
(``--kafka-bootstrap-servers`` and ``--kafka-source``: :func:`acidflow.cdc.kafka.drain`, from
the offsets the catalog recorded to the topics' current ends, at most ``--max-offsets`` records
per batch and ``--max-batches`` batches per run).

Prints one JSON summary as its last stdout line (what an Airflow task pushes to XCom) and
returns 0; errors propagate (non-zero exit, message on stderr) with the transaction aborted.
"""

from __future__ import annotations

import argparse
import json
import sys

from acidflow import lineage
from acidflow.catalog import Catalog
from acidflow.cdc.apply import apply_path, build_options
from acidflow.cdc.kafka import DEFAULT_MIN_BAD_RECORDS, VALUE_FORMATS, drain, kafka_options
from acidflow.spark import get_spark


def _cdc_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="submit.py cdc-upsert",
        description="Apply change files (one batch per file) or a Kafka source's new offsets.",
    )
    p.add_argument("--input", default=None, help="change file or directory")
    k = p.add_argument_group("Kafka source (instead of --input)")
    k.add_argument("--kafka-bootstrap-servers", default=None)
    k.add_argument("--kafka-source", default=None, help="the source's name (its offsets)")
    k.add_argument("--kafka-topics", default="", help="comma-separated change topics")
    k.add_argument("--kafka-topic-pattern", default="", help="regular expression of topics")
    k.add_argument("--kafka-transaction-topic", default="", help="Debezium's BEGIN/END topic")
    k.add_argument(
        "--starting-offsets", default="earliest", help="first batch: earliest|latest|JSON"
    )
    k.add_argument("--max-offsets", type=int, default=0, help="records per batch (0: no cap)")
    k.add_argument("--max-batches", type=int, default=0, help="batches per run (0: until idle)")
    k.add_argument(
        "--min-bad-records",
        type=int,
        default=DEFAULT_MIN_BAD_RECORDS,
        help="a batch with fewer bad records is never refused by the quarantine threshold",
    )
    k.add_argument(
        "--kafka-value-format",
        default="json",
        choices=list(VALUE_FORMATS),
        help="json (JsonConverter) or avro (through a schema registry)",
    )
    k.add_argument(
        "--schema-registry-url",
        default="",
        help="with avro: the registry's apicurio.registry.url (http://host:8080/apis/registry/v2)",
    )
    p.add_argument(
        "--input-format",
        dest="fmt",
        default="wal2json",
        choices=["wal2json", "debezium", "goldengate"],
    )
    p.add_argument("--tables-config", default=None, help="YAML file or directory")
    p.add_argument(
        "--auto-create",
        nargs="?",
        const="true",
        default="false",
        type=_flag,
        help="register unknown tables (optionally =true/false, for templates)",
    )
    p.add_argument("--target-db", default="default")
    p.add_argument("--num-buckets", type=int, default=4)
    p.add_argument("--schema-drift", default="add", choices=["add", "fail"])
    p.add_argument("--update-missing", default="insert", choices=["insert", "quarantine"])
    p.add_argument("--insert-existing", default="update", choices=["update", "quarantine"])
    p.add_argument("--delete-missing", default="count", choices=["count", "quarantine"])
    p.add_argument("--quarantine-threshold", type=float, default=0.01)
    p.add_argument("--table", action="append", default=None, help="only this source table")
    p.add_argument("--tables", default="", help="comma-separated source tables (templates)")
    return p


def _flag(text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("1", "true", "yes", "y", "on"):
        return True
    if t in ("0", "false", "no", "n", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def cdc_upsert_main(argv: list[str]) -> int:
    """``cdc-upsert``: :func:`acidflow.cdc.apply.apply_path` with the options of the CLI."""
    a = _cdc_parser().parse_args(argv)
    options = build_options(
        a.fmt,
        tables_config=a.tables_config,
        auto_create=a.auto_create,
        target_db=a.target_db,
        num_buckets=a.num_buckets,
        schema_drift=a.schema_drift,
        update_missing=a.update_missing,
        insert_existing=a.insert_existing,
        delete_missing=a.delete_missing,
        quarantine_threshold=a.quarantine_threshold,
        tables=(a.table or []) + [t for t in a.tables.split(",") if t.strip()],
    )
    a.input = a.input or None  # the DAG renders the unused source's option as ''
    a.kafka_bootstrap_servers = a.kafka_bootstrap_servers or None
    if (a.input is None) == (a.kafka_bootstrap_servers is None):
        raise SystemExit("cdc-upsert: give --input or --kafka-bootstrap-servers (one of them)")
    catalog = Catalog.from_settings()
    spark = get_spark("acidflow-cdc-upsert")
    if a.input is not None:
        reports = apply_path(spark, catalog, a.input, options)
    else:
        kopts = kafka_options(
            a.kafka_source or "",
            a.kafka_bootstrap_servers,
            topics=a.kafka_topics,
            topic_pattern=a.kafka_topic_pattern,
            transaction_topic=a.kafka_transaction_topic,
            starting_offsets=a.starting_offsets,
            max_offsets=a.max_offsets,
            min_bad_records=a.min_bad_records,
            value_format=a.kafka_value_format,
            schema_registry_url=a.schema_registry_url,
        )
        reports = drain(spark, catalog, options, kopts, max_batches=a.max_batches or None)
        reports = [r for r in reports if r.batch_id]
    if reports:  # lineage for the Airflow operator (acidflow.lineage): batch files -> tables
        cid = catalog.catalog_id()
        lineage.report_lineage(
            "cdc-upsert",
            [lineage.file_dataset(r.file) for r in reports]
            if a.input is not None
            else [
                {"namespace": f"kafka://{a.kafka_bootstrap_servers.split(',')[0]}", "name": t}
                for t in kopts.topics or [kopts.topic_pattern or ""]
            ],
            [
                lineage.table_dataset(cid, t, changed=r.status == "applied")
                for r in reports
                for t in r.tables
            ],
        )
    print(json.dumps({"batches": [r.__dict__ for r in reports]}, default=str))
    return 0


def main(argv: list[str]) -> int:
    """``python -m acidflow.cdc.entry [cdc-upsert] ...``."""
    if argv and argv[0] == "cdc-upsert":
        argv = argv[1:]
    return cdc_upsert_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
