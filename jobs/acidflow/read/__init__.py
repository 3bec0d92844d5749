"""Reads: the merge-on-read snapshot (``snapshot``: insert events minus delete events on
``(originalTransaction, bucket, rowId)``), catalog-aware ``read_table`` / ``read_incremental``
(``table``) and a table's retained history (``history``). Below the engine: writers read
through it, it never writes."""
