"""Development and test servers for acidflow: not part of the shipped ``acidflow`` package.

* :mod:`devservers.hms`: a Hive 3.1.3 metastore (``make hms``, ``make demo-hms``, the tests'
  ``hive_metastore`` fixture);
* :mod:`devservers.trino`: a Trino server on such a metastore (the Trino tests);
* :mod:`devservers.kafka`: a Kafka broker (KRaft) and Kafka Connect with Debezium's PostgreSQL
  connector (``make kafka``, the tests' ``kafka`` and ``kafka_connect`` fixtures), with
  :mod:`devservers.kafka_wire` (a Kafka protocol Metadata request for its readiness check);
* :mod:`devservers.postgres`: a private PostgreSQL 15 cluster (the tests' ``postgres_url``
  fixture, ``make sample-data``, ``make demo-kafka``);
* :mod:`devservers.sparkconnect`: a Spark Connect server with acidflow's settings (``make
  connect``, ``make demo SPARK_MODE=connect``, the tests' ``spark_connect`` fixture,
  ``bench.connect``);
* :mod:`devservers.demo_kafka`: ``make demo-kafka`` (PostgreSQL, Kafka, Connect started here,
  the demo itself in ``acidflow.demo.kafka``);
* :mod:`devservers.process`: what they share (a free port, a log's tail, stopping a server,
  serving in the foreground until Ctrl-C).

They live in ``tools/devservers/`` and import from ``tools/`` on ``sys.path`` (the Makefile and
pytest's ``pythonpath`` put it there); nothing under ``jobs/acidflow`` imports them.
"""
