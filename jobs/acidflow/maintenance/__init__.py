"""Table maintenance below the compactor jobs: ``compaction`` (Hive's minor and major
compaction of a partition's deltas into a new delta or base). Uses the engine, the reads and
storage; the initiator / worker / cleaner jobs are :mod:`acidflow.compactor`."""
