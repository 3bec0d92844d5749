"""The history part of ``make demo``: the commit timeline of one pgbench table and an
incremental pull between two CDC batches, checked against the batch's change file.

After the demo's DAG runs and reconciliation, ``acidflow demo`` (``acidflow.cli.demo``) prints
the newest entries of ``pgbench.pgbench_accounts``'s timeline
(:func:`acidflow.tableops.timeline.timeline`), then :func:`incremental_check` reads the changes
between the write ids of the 2nd and 3rd CDC batches that wrote the table
(:func:`acidflow.read.table.read_incremental`, pyarrow), counts them by op, and checks that the
distinct primary keys changed equal the distinct keys the 3rd batch's wal2json file changes for
the source table.
"""

from __future__ import annotations

import collections
import gzip
from dataclasses import dataclass, field
from pathlib import Path

from acidflow.catalog import Catalog
from acidflow.format.layout import NotEnoughHistoryError
from acidflow.read import table as reads
from acidflow.sources.formats import parse_lines
from acidflow.tableops.timeline import timeline

DEMO_TABLE = "pgbench.pgbench_accounts"
DEMO_SOURCE = "public.pgbench_accounts"


@dataclass
class IncrementalCheck:
    """Outcome of the demo's incremental pull.

    Attributes:
        start_write_id, end_write_id: the range (exclusive, inclusive).
        batch_file: the change file of the end batch.
        ops: rows per op (``{"I": n, "D": n}``).
        table_keys, source_keys: distinct keys changed per the table and per the change file.
        ok: the two key sets are equal; skipped: why nothing was checked (else ``None``).
    """

    start_write_id: int = 0
    end_write_id: int = 0
    batch_file: str = ""
    ops: dict[str, int] = field(default_factory=dict)
    table_keys: int = 0
    source_keys: int = 0
    ok: bool = True
    skipped: str | None = None


def _changed_keys(path: str, source_table: str, key: str) -> set[object]:
    """Distinct ``key`` values the wal2json file ``path`` changes in ``source_table`` with a
    net effect: every key it inserts, updates or deletes (new and old key of an update), except
    keys whose first change in the file is an insert and last a delete (born and gone inside
    the batch, so no snapshot shows them)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        stream = parse_lines("wal2json", fh, Path(path).name)
    first: dict[object, str] = {}
    last: dict[object, str] = {}
    for ch in stream.changes:
        if ch.table != source_table:
            continue
        for image in (ch.after, ch.before):
            if image and key in image:
                k = int(image[key])
                first.setdefault(k, ch.op)
                last[k] = ch.op
    return {k for k in first if not (first[k] == "I" and last[k] == "D")}


def incremental_check(
    catalog: Catalog, table: str = DEMO_TABLE, source_table: str = DEMO_SOURCE
) -> IncrementalCheck:
    """The changes of ``table`` between the 2nd and 3rd CDC batches that wrote it, checked
    against the 3rd batch's change file (module doc).

    Raises:
        NoSuchTableError: no such table.
    """
    td = catalog.get_table(table)
    key = td.primary_key[0]
    batches = [
        e
        for e in reversed(timeline(catalog, table, include_compactions=False))
        if e.batch_kind == "cdc" and e.write_id is not None
    ]
    if len(batches) < 3:
        return IncrementalCheck(skipped=f"{table} has {len(batches)} CDC batches, need 3")
    b2, b3 = batches[1], batches[2]
    assert b2.write_id is not None and b3.write_id is not None
    info = catalog.get_batch(b3.batch_id or "")
    out = IncrementalCheck(
        b2.write_id, b3.write_id, str(info.details.get("file", "")) if info else ""
    )
    try:
        changes = reads.read_incremental(None, catalog, table, b2.write_id, b3.write_id)
    except NotEnoughHistoryError as exc:
        out.skipped = f"history cleaned: {exc}"
        return out
    out.ops = dict(collections.Counter(changes.column("op").to_pylist()))
    table_keys = set(changes.column(key).to_pylist())
    source_keys = _changed_keys(out.batch_file, source_table, key) if out.batch_file else set()
    out.table_keys, out.source_keys = len(table_keys), len(source_keys)
    out.ok = table_keys == source_keys
    return out


def describe(chk: IncrementalCheck, table: str = DEMO_TABLE) -> str:
    """One line for people about a finished (not skipped) check: the write-id range, rows per
    op, and the two distinct-key counts."""
    ops = ", ".join(f"{op} {n}" for op, n in sorted(chk.ops.items()))
    return (
        f"incremental pull {table} write ids ({chk.start_write_id}, {chk.end_write_id}] "
        f"(batches 2 -> 3): {ops} rows; {chk.table_keys} distinct keys changed, the batch's "
        f"change file {Path(chk.batch_file).name} changes {chk.source_keys}"
    )
