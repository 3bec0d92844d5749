"""How a CDC target table follows its source: new columns (the schema drift policy, ``add``
or ``fail``) and a primary key the source newly names for a keyless auto-created table
(learned while the batch is planned, set in the catalog only once the batch committed). Used by
:mod:`acidflow.cdc.apply` for every batch, file or Kafka."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from acidflow.catalog import Column, TableDef
from acidflow.cdc import changes as chg
from acidflow.engine import lookup
from acidflow.errors import AcidflowError
from acidflow.sources.columns import TableChanges
from acidflow.sources.records import Change, ParsedStream

log = logging.getLogger(__name__)


class SchemaDriftError(AcidflowError, RuntimeError):
    """New source columns under schema drift policy ``fail``; the batch was not applied."""


def add_new_columns(
    catalog: Any,
    table: TableDef,
    changes_: Sequence[Change],
    stream: ParsedStream,
    schema_drift: str,
    path: str,
) -> TableDef:
    """New source columns of ``changes_`` that ``table`` lacks, under the schema drift policy:
    ``add`` appends them to the table (types from the stream, ``string`` when it gives none;
    a catalog change made before the batch commits, idempotent), ``fail`` stops the batch.

    Returns:
        The table definition (with the new columns under ``add``).
    Raises:
        SchemaDriftError: new columns under ``fail`` (table and columns named).
    """
    known = set(table.column_names()) | set(table.partition_column_names())
    if isinstance(changes_, TableChanges):  # parsed into columns: the names are at hand
        if changes_.columns.image_names() <= known | {chg.POSITION_COLUMN}:
            return table
    new = chg.new_columns(list(changes_), known)
    if not new:
        return table
    if schema_drift == "fail":
        raise SchemaDriftError(
            f"{path}: source table {changes_[0].table} has new column(s) {', '.join(new)} not "
            f"in {table.name}; rerun with schema drift policy 'add' to append them, or add "
            "them to the table first"
        )
    src = stream.tables.get(changes_[0].table)
    cols = [Column(n, (src.columns.get(n) if src else None) or "string") for n in new]
    log.warning(
        "schema drift: adding %s to %s", [f"{c.name} {c.hive_type}" for c in cols], table.name
    )
    return catalog.add_columns(table.name, cols)


def take_learned_keys(catalog: Any, tables: dict[str, dict[str, Any]], path: str) -> None:
    """``tables``: a batch report's ``{table: stats}``. Set the primary keys a committed batch took (``schema_change`` of its table stats, see
    :func:`learn_primary_key`) in the catalog, each in its own catalog transaction right after
    the batch's commit. Idempotent: a table that already has the key is left alone, and so is
    one whose key changed otherwise since (its key is no longer the change's previous key)."""
    for name, stats in tables.items():
        change = stats.get("schema_change") if isinstance(stats, dict) else None
        if not change or "primary_key" not in change:
            continue
        key = list(change["primary_key"])
        current = list(catalog.get_table(name).primary_key)
        if current == key:
            continue
        if current != list(change.get("previous_primary_key") or []):
            log.warning(
                "%s: %s has primary key (%s) now, not the (%s) the batch took: left as it is",
                path,
                name,
                ", ".join(current),
                ", ".join(key),
            )
            continue
        catalog.set_primary_key(name, key)
        log.warning(
            "%s: %s takes the primary key (%s) its source now names", path, name, ", ".join(key)
        )


class PrimaryKeyError(AcidflowError, RuntimeError):
    """A keyless auto-created table cannot take the primary key its source now names: stored
    rows repeat a key (or hold NULL in it). The batch was not applied.

    Attributes:
        table: the table; key: the key columns; duplicates: ``[(key values, count)]`` (at most
            10 shown).
    """

    def __init__(
        self, table: str, key: list[str], duplicates: list[tuple[tuple, int]], source: str
    ) -> None:
        self.table, self.key, self.duplicates = table, key, duplicates
        shown = ", ".join(f"{dict(zip(key, k))} x{n}" for k, n in duplicates[:10])
        super().__init__(
            f"{source}: {table} has no primary key and its source now names ({', '.join(key)}), "
            f"but the stored rows repeat or lack it: {shown}; nothing was applied. Remove the "
            "duplicates (or recreate the table) and run again"
        )


def learn_primary_key(
    spark: Any,
    catalog: Any,
    txn: Any,
    table: TableDef,
    stream: ParsedStream,
    source_name: str,
    schema_drift: str,
    path: str,
) -> tuple[TableDef, dict[str, Any] | None]:
    """Follow the source when a keyless auto-created table's stream now names a primary key
    (``pg_restore`` / ``pgbench -i`` load the rows first and add the key afterwards).

    Under schema drift ``add`` the stored rows (at the transaction's snapshot) are checked for
    repeated or NULL keys; the batch is then planned with the key (a copy of the definition
    that has it) and the change is returned for the commit record (``schema_change``). The
    catalog is not changed here: the key is set only after the batch commits
    (:func:`take_learned_keys`, :meth:`acidflow.catalog.base.Catalog.set_primary_key`), so a
    batch that aborts (quarantine threshold, quality gate, write conflict, crash) leaves the
    table keyless and every retry or rerun takes -- and records -- the key again. Under
    ``fail`` the batch stops.

    Remaining window: the key is set in its own catalog transaction just after the batch's
    commit. A crash in between leaves the batch applied and the table keyless; a rerun of the
    batch (reported as skipped) sets the key from the batch ledger, and the next batch that
    names the key would take it anyway. The learning batch writes the table while the catalog
    still calls it keyless, so its inserted keys are not in the key-level write set: a second
    run of *another* batch of the same table, racing it before the key is set, is not checked
    against them (two concurrent runs over one source stream break its order anyway).

    Returns:
        ``(table definition -- with the key when it is taken, schema change or None)``.
    Raises:
        SchemaDriftError: schema drift policy ``fail`` (names the table and the new key), or a
            key column the table does not have.
        PrimaryKeyError: the stored rows repeat the key.
    """
    source = stream.tables.get(source_name)
    key = list(source.primary_key) if source else []
    if table.primary_key or not key or "acidflow.cdc.source" not in table.properties:
        return table, None
    if schema_drift == "fail":
        raise SchemaDriftError(
            f"{path}: source table {source_name} now has primary key ({', '.join(key)}) but "
            f"{table.name} has none; rerun with schema drift policy 'add' to take the key"
        )
    names = set(table.column_names()) | set(table.partition_column_names())
    missing = [k for k in key if k not in names]
    if missing:
        raise SchemaDriftError(
            f"{path}: primary key ({', '.join(key)}) of {source_name} names "
            f"column(s) {missing} that {table.name} does not have"
        )
    from pyspark.sql import (
        functions as F,  # deferred: pyspark is heavy; the CLI imports the CDC job's modules
    )

    current = lookup.current_rows(spark, catalog, table, txn, row_id=False, project=key)
    null_key = F.col(key[0]).isNull()
    for k in key[1:]:
        null_key = null_key | F.col(k).isNull()
    dups = (
        current.groupBy(*key)
        .count()
        .where((F.col("count") > 1) | null_key)
        .orderBy(F.col("count").desc())
        .limit(10)
        .collect()
    )
    if dups:
        raise PrimaryKeyError(
            table.name, key, [(tuple(r[k] for k in key), r["count"]) for r in dups], path
        )
    log.info(
        "%s: %s will take the primary key (%s) its source now names once the batch commits",
        path,
        table.name,
        ", ".join(key),
    )
    # planned with the key; the catalog keeps the table keyless until the batch commits
    keyed = replace(table, primary_key=list(key))
    return keyed, {
        "primary_key": key,
        "previous_primary_key": list(table.primary_key),
        "source": source_name,
    }
