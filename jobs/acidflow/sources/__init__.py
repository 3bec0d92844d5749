"""Change sources, below the jobs: change-record formats (wal2json, Debezium, GoldenGate) turned
into canonical changes (``records``; ``formats`` dispatches to ``wal2json``, ``debezium`` and
``goldengate``, which share ``lines``), and the PostgreSQL source (``postgres``).

Nothing here imports the jobs (``acidflow.cdc``, ``acidflow.ingest``), the checks
(``acidflow.quality``) or the compactor; they import this."""
