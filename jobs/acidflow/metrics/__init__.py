"""Metrics an operator graphs: :mod:`~acidflow.metrics.collect` measures them from the catalog
and the table directories (plain values), :mod:`~acidflow.metrics.export` pushes them once over
OTLP with the OpenTelemetry SDK (the ``metrics`` extra). ``acidflow metrics [--json] [--push]``
runs both; the ``acid_health`` DAG pushes when an OTLP endpoint is configured."""
