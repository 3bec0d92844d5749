"""The engine demo (``acidflow engine-demo``): the write engine end to end on one table.

:func:`run_engine_demo` (re)creates ``demo.accounts`` (bucketed by its key), inserts ``rows``
rows, upserts (split-update) every 10th key plus 500 new ones, deletes every 20th key from 5,
then reads the snapshot back with pyarrow and compares it with the rows expected. The command
(``acidflow.cli.demo``) prints the outcome.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acidflow.catalog import Catalog, Column, NoSuchTableError, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.engine.writer import WriteResult
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS

if TYPE_CHECKING:  # annotations only
    from pyspark.sql import SparkSession

TABLE = "demo.accounts"
_SCHEMA = "aid int, balance bigint, owner string"


@dataclass
class EngineDemoResult:
    """What :func:`run_engine_demo` did.

    Attributes:
        table: the demo table's name.
        steps: ``(step name, its WriteResult)`` for insert, upsert and delete.
        visible_rows: rows the snapshot read back holds.
        deltas: names of the table's delta folders after the three writes.
        seconds: wall time.
        missing, unexpected, different: up to 5 keys each that the snapshot lacks, has in
            excess, or holds with other values than expected (all empty when it matches).
    """

    table: str
    steps: list[tuple[str, WriteResult]] = field(default_factory=list)
    visible_rows: int = 0
    deltas: list[str] = field(default_factory=list)
    seconds: float = 0.0
    missing: list[int] = field(default_factory=list)
    unexpected: list[int] = field(default_factory=list)
    different: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The snapshot read back equals the expected rows."""
        return not (self.missing or self.unexpected or self.different)


def run_engine_demo(
    spark: SparkSession, catalog: Catalog, rows: int = 20_000, table: str = TABLE
) -> EngineDemoResult:
    """Recreate ``table`` and run insert, upsert and delete on it, then check the snapshot
    (module doc). A table of that name is dropped first, its files deleted."""
    t0 = time.monotonic()
    try:
        old = catalog.get_table(table)
        catalog.drop_table(table)
        TableFS(old.location).delete(old.location)
    except NoSuchTableError:
        pass
    created = catalog.create_table(
        TableDef(
            name=table,
            columns=[Column("aid", "int"), Column("balance", "bigint"), Column("owner", "string")],
            primary_key=["aid"],
            num_buckets=4,
        )
    )
    out = EngineDemoResult(table)
    expected = {i: (i * 100, f"owner-{i}") for i in range(rows)}
    with Transaction(catalog) as txn:
        out.steps.append(
            (
                "insert",
                txn.insert(
                    table, spark.createDataFrame([(k, *v) for k, v in expected.items()], _SCHEMA)
                ),
            )
        )
    changes = [
        (i, -i, f"new-{i}") for i in list(range(0, rows, 10)) + list(range(rows, rows + 500))
    ]
    with Transaction(catalog) as txn:
        out.steps.append(("upsert", txn.upsert(table, spark.createDataFrame(changes, _SCHEMA))))
    expected.update({k: (b, o) for k, b, o in changes})
    gone = list(range(5, rows, 20))
    with Transaction(catalog) as txn:
        out.steps.append(
            ("delete", txn.delete(table, spark.createDataFrame([(k,) for k in gone], "aid int")))
        )
    for k in gone:
        expected.pop(k, None)
    got = {
        r["aid"]: (r["balance"], r["owner"])
        for r in reads.read_table(None, catalog, table).to_pylist()
    }
    state = reads.acid_state_of(created.location, catalog.valid_write_ids(table))
    out.visible_rows = len(got)
    out.deltas = [d.name for d in state.deltas]
    out.missing = sorted(set(expected) - set(got))[:5]
    out.unexpected = sorted(set(got) - set(expected))[:5]
    out.different = sorted(k for k in set(got) & set(expected) if got[k] != expected[k])[:5]
    out.seconds = time.monotonic() - t0
    return out
