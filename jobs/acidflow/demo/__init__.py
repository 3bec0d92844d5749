"""The demos, driver-side only (never in the executor zip; only the command line imports them).

* :mod:`acidflow.demo.pgbench`: the CDC demo ``make demo`` / ``acidflow demo`` runs (real
  PostgreSQL change data through the ``acid_cdc`` and ``acid_compaction`` DAGs, or in this
  process with ``--direct``), reconciled against the source;
* :mod:`acidflow.demo.history`, :mod:`acidflow.demo.timeline`: its restore / rollback and
  timeline / incremental-pull steps;
* :mod:`acidflow.demo.engine`: ``acidflow engine-demo`` (insert, upsert, delete on one table);
* :mod:`acidflow.demo.localairflow`: Airflow on embedded defaults (a private ``AIRFLOW_HOME``),
  for the demo and the tests.

The commands that run them and print their results are in :mod:`acidflow.cli.demo`.
"""
