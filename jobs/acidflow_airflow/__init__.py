"""acidflow's Airflow side: what the DAG files in ``dags/`` wire together.

* :mod:`acidflow_airflow.config` -- the ``[acidflow]`` keys locating the checkout, the jobs'
  Python and environment;
* :mod:`acidflow_airflow.operator` -- ``AcidflowSparkSubmitOperator`` (spark-submit of
  ``jobs/submit.py``, lineage and asset events) and ``cli_command`` (catalog-only CLI steps);
* :mod:`acidflow_airflow.schedules` -- configured schedules and scheduled runs' params;
* :mod:`acidflow_airflow.notifiers` -- failure notifiers and the DAGs' ``default_args``;
* :mod:`acidflow_airflow.health` -- ``acid_health``'s check;
* :mod:`acidflow_airflow.cdc` -- ``acid_cdc``'s pull and pending-files test;
* :mod:`acidflow_airflow.compaction` -- ``acid_compaction``'s initiator and cleaner commands.

It imports acidflow's public names only and never ``acidflow.cli`` (it runs the command line in
subprocesses); ``acidflow`` never imports it, and it is not in the executor zip
(``acidflow.jobszip`` zips ``acidflow/`` only). Contracts: ``[tool.importlinter]`` in
``pyproject.toml``.
"""
