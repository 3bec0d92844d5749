"""acidflow: Hive 3 full-ACID tables kept from PySpark.

What a user imports, from the top of the package::

    from acidflow import Transaction, load_catalog, read_table

    catalog = load_catalog("sqlite:///catalog.db")
    with Transaction(catalog, spark=spark) as txn:
        txn.upsert("db.accounts", changes_df)
    df = read_table(spark, catalog, "db.accounts")

Every error acidflow raises on purpose derives from ``AcidflowError`` (``from acidflow import
AcidflowError``) and keeps its builtin base, so ``except ValueError`` still catches a ``DmlError``.

The names resolve lazily (PEP 562), so ``import acidflow`` (and the ``acidflow`` command line,
which imports this package first) pays for none of pyarrow, SQLAlchemy or pyspark.

The packages, from the ground floor up (docs/architecture.md): ``format`` (Hive's rules and the
ORC codec, pure), ``storage`` (file systems, listing to AcidState), ``read`` (merge-on-read),
``engine`` (the Transaction and its statements), ``maintenance`` (compaction), ``catalog``
(the transaction catalog), then the jobs (``cdc``, ``ingest``, ``compactor``, ``quality``,
``tableops``, ``datasource``) and the command line (``cli``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acidflow.catalog import Catalog, load_catalog
    from acidflow.engine.transaction import Transaction
    from acidflow.errors import AcidflowError
    from acidflow.read.table import read_incremental, read_table

__all__ = [
    "AcidflowError",
    "Catalog",
    "Transaction",
    "load_catalog",
    "read_incremental",
    "read_table",
]

#: public name -> the module that defines it
_EXPORTS = {
    "AcidflowError": "acidflow.errors",
    "Catalog": "acidflow.catalog",
    "load_catalog": "acidflow.catalog",
    "Transaction": "acidflow.engine.transaction",
    "read_table": "acidflow.read.table",
    "read_incremental": "acidflow.read.table",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use (``from acidflow import Transaction``)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'acidflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
