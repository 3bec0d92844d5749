"""Push a :class:`~acidflow.metrics.collect.MetricsSnapshot` once over OTLP with the
OpenTelemetry SDK (what Airflow 3's own metrics use with ``[metrics] otel_on``).

A ``MeterProvider`` (resource ``service.name=acidflow``, overridable by ``OTEL_SERVICE_NAME`` /
``OTEL_RESOURCE_ATTRIBUTES``) with one ``PeriodicExportingMetricReader`` whose interval is
infinite: no background thread, the one collection is :meth:`MeterProvider.force_flush`, then
``shutdown``. Counters and gauges are observable instruments reporting the snapshot's values
(cumulative: a counter's value is the catalog's total); the commit durations are recorded into a
histogram.

The exporter is the OTLP exporter configured by the standard variables, read by the exporter
itself: ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` (HTTP: the base
URL, ``/v1/metrics`` appended), ``OTEL_EXPORTER_OTLP_HEADERS`` (``key=value,...``),
``OTEL_EXPORTER_OTLP_TIMEOUT``, ``OTEL_EXPORTER_OTLP_COMPRESSION``, and the protocol
``OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf``
(default, as the specification's) or ``grpc``.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping, Sequence

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import OTELResourceDetector, Resource

from acidflow.errors import AcidflowError
from acidflow.metrics.collect import COUNTER, GAUGE, METRICS, MetricsSnapshot, Sample

SERVICE_NAME = "acidflow"
#: histogram buckets of the commit durations, seconds
DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
PROTOCOLS = ("http/protobuf", "grpc")


class MetricsExportError(AcidflowError, RuntimeError):
    """The OTLP export did not succeed (collector unreachable, refused, or a bad setting)."""


class _RecordingExporter(MetricExporter):
    """Hands every export to ``inner`` and keeps the results (the reader only logs them)."""

    def __init__(self, inner: MetricExporter) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self.inner = inner
        self.results: list[MetricExportResult] = []

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception:
            self.results.append(MetricExportResult.FAILURE)
            raise
        self.results.append(result)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self.inner.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)


def otlp_protocol(env: Mapping[str, str] | None = None) -> str:
    """The OTLP protocol the environment asks for (``OTEL_EXPORTER_OTLP_METRICS_PROTOCOL``,
    then ``OTEL_EXPORTER_OTLP_PROTOCOL``, default ``http/protobuf``).

    Raises:
        MetricsExportError: a protocol other than :data:`PROTOCOLS` (``http/json`` is not
            implemented by the Python exporters).
    """
    e = os.environ if env is None else env
    value = (
        e.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") or e.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"
    if value not in PROTOCOLS:
        raise MetricsExportError(
            f"OTLP protocol {value!r} is not supported: use one of {', '.join(PROTOCOLS)}"
        )
    return value


def otlp_exporter(env: Mapping[str, str] | None = None) -> MetricExporter:
    """The OTLP metric exporter of :func:`otlp_protocol`, configured by the exporter from the
    ``OTEL_EXPORTER_OTLP_*`` environment (module docstring).

    Raises:
        MetricsExportError: unsupported protocol.
    """
    if otlp_protocol(env) == "grpc":
        # deferred: the gRPC exporter loads grpcio, which the default HTTP push does not need
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return GrpcMetricExporter()
    return OTLPMetricExporter()


def resource() -> Resource:
    """``service.name=acidflow`` (plus the SDK's ``telemetry.sdk.*``), overridden by
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``."""
    return Resource.create({"service.name": SERVICE_NAME}).merge(OTELResourceDetector().detect())


def _observer(samples: Sequence[Sample]) -> Callable[[CallbackOptions], Iterable[Observation]]:
    points = [Observation(s.value, s.attributes) for s in samples]

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        return points

    return observe


def export_metrics(
    snapshot: MetricsSnapshot, exporter: MetricExporter | None = None, *, timeout_s: float = 30
) -> int:
    """Export ``snapshot`` once: build the provider and its instruments, collect and export
    (``force_flush``), shut down.

    Args:
        snapshot: what :func:`acidflow.metrics.collect.collect_metrics` measured.
        exporter: default :func:`otlp_exporter` (the ``OTEL_EXPORTER_OTLP_*`` environment).
        timeout_s: bound of the flush and of the shutdown, seconds.
    Returns:
        the number of data points exported (a histogram's attribute set is one point).
    Raises:
        MetricsExportError: the exporter reported a failure or nothing was exported.
    """
    recorder = _RecordingExporter(exporter or otlp_exporter())
    reader = PeriodicExportingMetricReader(
        recorder, export_interval_millis=math.inf, export_timeout_millis=timeout_s * 1000
    )
    provider = MeterProvider(metric_readers=[reader], resource=resource())
    meter = provider.get_meter("acidflow.metrics")
    by_metric: dict[str, list[Sample]] = defaultdict(list)
    for s in snapshot.samples:
        by_metric[s.metric].append(s)
    points = 0
    for spec in METRICS:
        samples = by_metric.get(spec.name, [])
        if spec.instrument == COUNTER:
            meter.create_observable_counter(
                spec.name, [_observer(samples)], unit=spec.unit, description=spec.description
            )
            points += len(samples)
        elif spec.instrument == GAUGE:
            meter.create_observable_gauge(
                spec.name, [_observer(samples)], unit=spec.unit, description=spec.description
            )
            points += len(samples)
        else:
            hist = meter.create_histogram(
                spec.name,
                unit=spec.unit,
                description=spec.description,
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
            )
            for s in samples:
                hist.record(s.value, s.attributes)
            points += len({tuple(sorted(s.attributes.items())) for s in samples})
    try:
        provider.force_flush(timeout_millis=timeout_s * 1000)
    finally:
        provider.shutdown(timeout_millis=timeout_s * 1000)
    if not recorder.results or any(r != MetricExportResult.SUCCESS for r in recorder.results):
        raise MetricsExportError(
            f"OTLP export of {points} metric points failed (see the log above for the "
            "exporter's reason; endpoint from OTEL_EXPORTER_OTLP_METRICS_ENDPOINT / "
            "OTEL_EXPORTER_OTLP_ENDPOINT)"
        )
    return points
