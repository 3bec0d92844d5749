"""The demo's history step: restore ``pgbench.pgbench_accounts`` to the write id of
the first workload batch, reconcile it against the source's contents at that point, then roll
the restore back and reconcile against the source's final contents.

The source at batch k is the initial load plus the changes of landing files 1..k, replayed
here from the wal2json files themselves (``acidflow.sources.wal2json``): truncate empties the
table, insert and update put the new image under its key (an update whose old key differs
removes the old one), delete removes the key. The replay is written as a CSV in PostgreSQL's
``COPY ... CSV HEADER`` form and reconciled like the saved final contents
(``acidflow.quality.reconcile``).
"""

from __future__ import annotations

import gzip
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from acidflow.catalog import Catalog
from acidflow.quality.reconcile import ReconcileResult, reconcile
from acidflow.sources.postgres.equality import PostgresEquality
from acidflow.sources.postgres.snapshot import SavedSource
from acidflow.sources.wal2json import parse_wal2json
from acidflow.tableops.restore import restore, rollback

TABLE = "pgbench.pgbench_accounts"
SOURCE = "public.pgbench_accounts"


def _csv_field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    return str(value)


@dataclass
class ReplayedSource:
    """A reconciliation source (``acidflow.quality.reconcile.ReconcileSource``): a source
    table as of the end of some landing files, replayed from their wal2json changes.

    Attributes:
        saved: the saved final contents (columns, types and key come from its manifest).
        files: the landing files to replay, in LSN order.
    """

    saved: SavedSource
    files: list[Path]

    @property
    def equality(self) -> PostgresEquality:
        """The saved source's notion of equality (PostgreSQL's)."""
        return self.saved.equality

    def describe_columns(self) -> tuple[list[tuple[str, str | None]] | None, list[str]]:
        """Columns and key of the saved source."""
        return self.saved.describe_columns()

    def rows(self) -> dict[tuple[Any, ...], dict[str, Any]]:
        """``{key: row}`` after the replay.

        Raises:
            ValueError: a change of the table without its key columns.
        """
        cols, key = self.saved.describe_columns()
        state: dict[tuple[Any, ...], dict[str, Any]] = {}
        for f in self.files:
            opener = gzip.open if f.name.endswith(".gz") else open
            with opener(f, "rt", encoding="utf-8") as fh:
                stream = parse_wal2json(fh, str(f))
            for c in stream.changes:
                if c.table != self.saved.table:
                    continue
                if c.op == "T":
                    state.clear()
                    continue
                if c.before is not None and c.op in ("U", "D"):
                    state.pop(tuple(c.before[k] for k in key), None)
                if c.op in ("I", "U") and c.after is not None:
                    state[tuple(c.after[k] for k in key)] = dict(c.after)
        return state

    def open_csv(self) -> tuple[Path, Callable[[], None]]:
        """The replayed rows as a temp CSV; returns it and a function that removes it."""
        cols, _key = self.saved.describe_columns()
        names = [n for n, _t in cols] if cols else []
        rows = self.rows()
        if not names and rows:
            names = list(next(iter(rows.values())))
        fd, name = tempfile.mkstemp(prefix="acidflow-replay-", suffix=".csv")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(",".join(names) + "\n")
            for row in rows.values():
                fh.write(",".join(_csv_field(row.get(n)) for n in names) + "\n")
        return Path(name), lambda: os.unlink(name)

    def __str__(self) -> str:
        return f"{self.saved.table} replayed to {self.files[-1].name}"


def restore_and_rollback(catalog: Catalog, sample_dir: Path, out: Any) -> None:
    """When this run applied batches: restore :data:`TABLE` to the write id of the second
    batch that changed it (the first one after the initial load), reconcile with the source
    replayed to that batch, roll the restore back, reconcile with the source's final contents.
    Sets ``out.history`` (lines for people) and ``out.history_ok`` (both reconciled exactly) of
    the demo's ``DemoSummary``. A rerun that skipped every batch does nothing (the tables stay
    as they were).

    Raises:
        RuntimeError: the table has fewer than two batches (the sample data changed).
    """
    if not any(getattr(b, "status", "") == "applied" for b in out.batches):
        return
    landing = sorted(p for p in (sample_dir / "landing").iterdir() if ".jsonl" in p.name)
    file_of = {
        b.txn_id: Path(str(b.details.get("file", ""))).name
        for b in catalog.list_batches(kind="cdc")
    }
    from_batches = [
        (r.write_id, file_of[r.txn_id])
        for r in catalog.commit_records(TABLE)
        if r.txn_id in file_of
    ]
    if len(from_batches) < 2:
        raise RuntimeError(f"{TABLE}: fewer than two batches changed it; nothing to restore to")
    write_id, file_name = from_batches[1]
    upto = [p.name for p in landing].index(file_name)
    saved = SavedSource.from_dir(sample_dir, SOURCE)
    r = restore(catalog, TABLE, write_id)
    at_k = reconcile(None, catalog, TABLE, ReplayedSource(saved, landing[: upto + 1]))
    rb = rollback(catalog, TABLE)
    final = reconcile(None, catalog, TABLE, saved)

    def verdict(res: ReconcileResult) -> str:
        return (
            f"exact ({res.table_rows} rows)"
            if res.matches
            else f"MISMATCH: {res.differing_keys} keys differ, e.g. "
            f"{[str(k) for k in res.first_differing_keys[:3]]}"
        )

    out.history = [
        r.summary(),
        f"  reconciled with {SOURCE} replayed to batch {upto + 1} ({file_name}): " + verdict(at_k),
        rb.summary(),
        f"  reconciled with {SOURCE}'s final contents: " + verdict(final),
    ]
    out.history_ok = at_k.matches and final.matches
