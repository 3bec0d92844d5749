"""Wave 1's write API, kept as thin aliases for the names the README documents.

New code opens a :class:`~acidflow.acid.transaction.Transaction` and calls its statements
(``txn.insert("db.t", df)``, ``txn.upsert(...)``, ``txn.delete(...)``,
``txn.insert_overwrite(...)``, ``txn.apply_row_changes(...)``); the modules behind them are
``acidflow.acid.transaction`` (statements), ``acidflow.acid.writer`` (event files),
``acidflow.acid.lookup`` (current rows of keys) and ``acidflow.acid.conform`` (schema checks).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acidflow.acid.conform import DuplicateKeyError, SchemaMismatchError, check_schema
from acidflow.acid.ports import TxnCatalog
from acidflow.acid.transaction import Transaction
from acidflow.acid.writer import WriteResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Transaction", "WriteResult", "SchemaMismatchError", "DuplicateKeyError",
           "check_schema", "insert", "upsert"]


def insert(spark: "SparkSession | None", catalog: TxnCatalog, txn: Transaction,
           table_name: str, df: "DataFrame", **options: Any) -> WriteResult:
    """Wave 1 form of :meth:`Transaction.insert` (``spark`` and ``catalog`` are those of
    ``df`` and ``txn``; they are not used)."""
    return txn.insert(table_name, df, **options)


def upsert(spark: "SparkSession | None", catalog: TxnCatalog, txn: Transaction,
           table_name: str, df: "DataFrame", **options: Any) -> WriteResult:
    """Wave 1 form of :meth:`Transaction.upsert` (``spark`` and ``catalog`` are those of
    ``df`` and ``txn``; they are not used)."""
    return txn.upsert(table_name, df, **options)
