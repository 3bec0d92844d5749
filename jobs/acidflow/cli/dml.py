"""``acidflow delete TABLE --where ...`` and ``acidflow update TABLE --set col=expr ... --where
...``: Hive's ``DELETE FROM`` / ``UPDATE ... SET`` on an acidflow table, each one transaction
(``Transaction.delete(where=)`` / ``Transaction.update``, :mod:`acidflow.engine.statements.dml`), run on a
local SparkSession (``acidflow.spark.get_spark``; predicates and values are Spark SQL).

``acidflow.cli.app`` calls :func:`register` with its top-level app.
Errors go up to ``acidflow.cli.app.main`` (one line naming the table and the reason, exit 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from acidflow.cli.console import console, emit_json
from acidflow.cli.context import cli_context
from acidflow.spark import get_spark

if TYPE_CHECKING:
    from acidflow.engine.writer import WriteResult

DELETE_HELP = """Delete the rows of TABLE that satisfy --where (a Spark SQL predicate over the
table's columns, as in Hive's DELETE FROM t WHERE ...), in one transaction: one delete event per
row, in delete_delta_W_W_0. --where true deletes every row. Prints the rows deleted, the write
id and the transaction id (--json: as one JSON object)."""

UPDATE_HELP = """Set columns of the rows of TABLE that satisfy --where (Hive's UPDATE t SET
col = expr WHERE ...), in one transaction: every matching row becomes a delete event of its
ROW__ID plus an insert event of the new version (split-update). --set col=expr may be repeated;
expr is Spark SQL over the table's columns (quote string literals: --set "status='closed'").
Partition, bucketing and primary key columns cannot be set (Hive refuses the first two; a key
change is a delete plus an insert). Prints the rows updated, the write id and the transaction
id (--json: as one JSON object)."""


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``["col=expr", ...]`` -> ``{col: expr}`` (split at the first ``=``).

    Raises:
        typer.BadParameter: an item without ``col=``, or a column set twice.
    """
    out: dict[str, str] = {}
    for item in items:
        name, sep, expr = item.partition("=")
        name = name.strip()
        if not sep or not name or not expr.strip():
            raise typer.BadParameter(f"--set takes col=expr, got {item!r}")
        if name.lower() in {k.lower() for k in out}:
            raise typer.BadParameter(f"--set sets column {name!r} twice")
        out[name] = expr.strip()
    return out


def _report(
    verb: str, table: str, rows: int, result: WriteResult, txn_id: int | None, as_json: bool
) -> None:
    if as_json:
        emit_json(
            {
                "table": table,
                "operation": verb,
                f"rows_{verb}d": rows,
                "write_id": result.write_id,
                "txn_id": txn_id,
                "files": result.files,
                "bytes": result.bytes,
            }
        )
    else:
        console.print(
            f"{table}: {rows} row(s) {verb}d in write id {result.write_id} (transaction {txn_id})"
        )


def delete(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    where: str = typer.Option(..., "--where", help="Spark SQL predicate"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    # deferred: the engine imports pyarrow and pyspark; --help needs neither
    from acidflow.engine.transaction import Transaction

    cat = cli_context(ctx).catalog()
    spark = get_spark("acidflow-delete")
    with Transaction(cat, spark=spark, agent_info="acidflow delete") as txn:
        res = txn.delete(table, where=where)
    _report("delete", cat.get_table(table).name, res.rows_deleted, res, txn.txn_id, as_json)


def update(
    ctx: typer.Context,
    table: str = typer.Argument(..., help="db.table"),
    set_: list[str] = typer.Option(..., "--set", help="col=expr (repeatable)"),
    where: str = typer.Option(..., "--where", help="Spark SQL predicate (true = every row)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON line"),
) -> None:
    values = parse_assignments(set_)
    # deferred: the engine imports pyarrow and pyspark; --help needs neither
    from acidflow.engine.transaction import Transaction

    cat = cli_context(ctx).catalog()
    spark = get_spark("acidflow-update")
    with Transaction(cat, spark=spark, agent_info="acidflow update") as txn:
        res = txn.update(table, where, set=values)
    _report("update", cat.get_table(table).name, res.rows_updated, res, txn.txn_id, as_json)


def register(app: typer.Typer) -> None:
    """Add the ``delete`` and ``update`` commands to ``app``."""
    app.command("delete", help=DELETE_HELP)(delete)
    app.command("update", help=UPDATE_HELP)(update)
