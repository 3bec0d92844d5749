"""The compactor: initiator (what to compact), worker (rewrite, verify, publish) and cleaner
(delete what compaction made obsolete once no reader needs it), after Hive's
``ql/txn/compactor`` (``Initiator``, ``Worker``, ``Cleaner``). See README "Compaction"."""
