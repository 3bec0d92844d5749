"""The PostgreSQL source: LSNs (``lsn``), connections (``connection``), the wal2json slot pull into
a landing zone (``pull``) and source snapshots for reconciliation (``snapshot``: a live table or
its saved ``COPY`` output, both :class:`acidflow.quality.reconcile.ReconcileSource`)."""
