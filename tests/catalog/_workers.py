"""Process body for the multi-process test (importable under 'spawn')."""

from __future__ import annotations


def worker(url: str, warehouse: str, table_def: dict, barrier, rounds: int, out) -> None:
    """``url``: any catalog URL (``load_catalog``). Phases, each started together with the other processes via ``barrier``:

    1. open the catalog (migrating a fresh database, maybe concurrently) and create the
       table if missing (concurrently);
    2. ``rounds`` transactions that each allocate a write id for the table and commit;
    3. open a transaction deleting in the (unpartitioned) table, wait until every process
       has one open, then commit: exactly one may win the write-set check.

    Puts ``("ok", [(txn, write_id), ...], "committed"|"conflict", txn)`` or
    ``("error", repr)`` on ``out``.
    """
    from acidflow.catalog import TableDef, WriteConflictError, load_catalog

    catalog = None
    try:
        catalog = load_catalog(url, warehouse=warehouse)
        table = catalog.create_table(TableDef.from_dict(table_def), if_not_exists=True)
        barrier.wait(60)
        got = []
        for _ in range(rounds):
            txn = catalog.open_transaction()
            write_id = catalog.allocate_write_id(txn, table.name)
            assert catalog.allocate_write_id(txn, table.name) == write_id
            catalog.add_component(txn, table.name, None, "insert")
            catalog.commit_transaction(txn, {table.name: {"rows_inserted": 1}})
            got.append((txn, write_id))
        barrier.wait(60)
        txn = catalog.open_transaction()
        catalog.allocate_write_id(txn, table.name)
        catalog.add_component(txn, table.name, None, "delete")
        barrier.wait(60)
        try:
            catalog.commit_transaction(txn)
            outcome = "committed"
        except WriteConflictError:
            outcome = "conflict"
        out.put(("ok", got, outcome, txn))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.put(("error", repr(exc)))
    finally:
        if catalog is not None:
            catalog.close()
