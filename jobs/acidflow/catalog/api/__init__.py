"""The roles of a transaction catalog, one class each; :class:`acidflow.catalog.Catalog` is
the facade that joins them, and a backend implements every role.

* :class:`TableCatalog` -- tables and their schema versions;
* :class:`TransactionCatalog` -- transactions, write ids, snapshots, commit records;
* :class:`LockCatalog` -- locks;
* :class:`BatchLedger` -- the batch ledger and CDC tombstones;
* :class:`CompactionQueue` -- the compaction queue and its history;
* :class:`ReaderRegistry` -- reader registrations;
* :class:`DataFileRegistry` -- the event files of each write (sizes, event counts), losses;
* :class:`SavepointRegistry` -- savepoints (named states kept past history retention).
"""

from acidflow.catalog.api.batches import BatchLedger
from acidflow.catalog.api.compactions import CompactionQueue
from acidflow.catalog.api.datafiles import DataFileRegistry
from acidflow.catalog.api.locks import LockCatalog
from acidflow.catalog.api.readers import ReaderRegistry
from acidflow.catalog.api.savepoints import SavepointRegistry
from acidflow.catalog.api.tables import TableCatalog
from acidflow.catalog.api.transactions import TransactionCatalog

__all__ = [
    "BatchLedger",
    "CompactionQueue",
    "DataFileRegistry",
    "LockCatalog",
    "ReaderRegistry",
    "SavepointRegistry",
    "TableCatalog",
    "TransactionCatalog",
]
