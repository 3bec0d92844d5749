"""What an operator graphs, measured from the catalog and the table directories: plain values,
no OpenTelemetry (:mod:`acidflow.metrics.export` turns them into OTel instruments).

Every value comes from the query that already decides it elsewhere, never a second rule:

- commits: the table's ValidWriteIdList (committed write ids = high-water mark minus open and
  aborted ones, which stay listed: monotonic, unlike the commit records the cleaner purges) and
  the commit records' operations (``CommitRecord.operations``); commits whose record is purged
  count as operation ``unrecorded``;
- commit duration: committed transactions, ``committed_at - started_at``
  (``Catalog.list_transactions``), one observation per table the transaction wrote;
- deltas per partition: the initiator's own statistics (``partition_stats``: ``getAcidState``
  at the compactor's snapshot over one listing of the table);
- compaction queue: SHOW COMPACTIONS (``Catalog.list_compactions``) by state, and the age of
  the oldest ``initiated`` entry;
- unqueued partitions: the initiator's dry run (:mod:`acidflow.compactor.unqueued`);
- quarantined records: the quarantine files (:func:`acidflow.quarantine.quarantined_counts`);
- Kafka: the end offsets the newest committed batch of each Kafka source recorded in the batch
  ledger (:func:`acidflow.cdc.offsets.high_water_mark`); the lag behind the broker needs the
  broker and is not measured here;
- replication slot lag: measured by the caller (``acidflow.sources.postgres.slotlag``), passed in.

Metric names follow OpenTelemetry's style (``acidflow.compaction.queue.oldest_age``, unit ``s``)
with the attributes ``table``, ``partition``, ``state`` (:data:`METRICS`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from acidflow.catalog import (
    COMPACTION_STATES,
    Catalog,
    CommitRecord,
    CompactionInfo,
    CompactionState,
    TableDef,
    TxnInfo,
    TxnState,
)
from acidflow.cdc.offsets import KIND as KAFKA_KIND
from acidflow.cdc.offsets import high_water_mark
from acidflow.compactor.config import CompactorConfig
from acidflow.compactor.initiator import partition_stats
from acidflow.compactor.unqueued import UnqueuedPartition, unqueued_partitions
from acidflow.format.writeids import ValidWriteIdList
from acidflow.quarantine import quarantined_counts
from acidflow.storage.fs import TableFS
from acidflow.storage.tablepaths import split_partitions

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric.

    Attributes:
        name: OTel name (``acidflow.commits``); instrument: ``counter`` (cumulative, monotonic),
            ``gauge`` or ``histogram``; unit: UCUM (``s``, ``By``, ``{commit}``);
        description: one line; attributes: the attribute keys its points carry.
    """

    name: str
    instrument: str
    unit: str
    description: str
    attributes: tuple[str, ...] = ()


COMMITS = MetricSpec(
    "acidflow.commits",
    COUNTER,
    "{commit}",
    "Committed transactions per table and operations (insert, update, delete, "
    "insert_overwrite joined by '+'; 'unrecorded' once the cleaner purged the record)",
    ("table", "operation"),
)
COMMIT_DURATION = MetricSpec(
    "acidflow.commit.duration",
    HISTOGRAM,
    "s",
    "Seconds from a transaction's open to its commit, per table written",
    ("table",),
)
DELTAS = MetricSpec(
    "acidflow.partition.deltas",
    GAUGE,
    "{delta}",
    "Current delta directories of a partition (the initiator's snapshot)",
    ("table", "partition"),
)
DELETE_DELTAS = MetricSpec(
    "acidflow.partition.delete_deltas",
    GAUGE,
    "{delta}",
    "Current delete delta directories of a partition (the initiator's snapshot)",
    ("table", "partition"),
)
QUEUE = MetricSpec(
    "acidflow.compaction.queue",
    GAUGE,
    "{compaction}",
    "Compaction queue and history entries by state (SHOW COMPACTIONS)",
    ("state",),
)
QUEUE_OLDEST = MetricSpec(
    "acidflow.compaction.queue.oldest_age",
    GAUGE,
    "s",
    "Age of the oldest initiated compaction (0 when none waits)",
    ("state",),
)
UNQUEUED = MetricSpec(
    "acidflow.compaction.unqueued",
    GAUGE,
    "{partition}",
    "Partitions over the initiator's thresholds with no compaction queued",
    ("table",),
)
UNQUEUED_AGE = MetricSpec(
    "acidflow.compaction.unqueued.age",
    GAUGE,
    "s",
    "Seconds a partition has been eligible for compaction with nothing queued",
    ("table", "partition"),
)
QUARANTINED = MetricSpec(
    "acidflow.quarantine.records",
    COUNTER,
    "{record}",
    "Bad records kept in the quarantine, per table and source kind (cdc, ingest)",
    ("table", "source"),
)
KAFKA_OFFSET = MetricSpec(
    "acidflow.cdc.kafka.offset",
    GAUGE,
    "{offset}",
    "End offset the newest committed batch of a Kafka source applied (batch ledger)",
    ("source", "topic", "partition"),
)
SLOT_LAG = MetricSpec(
    "acidflow.cdc.slot.lag",
    GAUGE,
    "By",
    "WAL bytes a replication slot's confirmed_flush_lsn is behind the server",
    ("slot",),
)
#: every metric this module produces, in report order
METRICS: tuple[MetricSpec, ...] = (
    COMMITS,
    COMMIT_DURATION,
    DELTAS,
    DELETE_DELTAS,
    QUEUE,
    QUEUE_OLDEST,
    UNQUEUED,
    UNQUEUED_AGE,
    QUARANTINED,
    KAFKA_OFFSET,
    SLOT_LAG,
)
SPECS: dict[str, MetricSpec] = {m.name: m for m in METRICS}

#: UCUM units -> the suffix an OTel collector's Prometheus exporter appends
_PROMETHEUS_UNITS = {"s": "seconds", "By": "bytes", "ms": "milliseconds", "1": "ratio"}


def prometheus_name(spec: MetricSpec) -> str:
    """The name an OpenTelemetry collector's Prometheus exporter gives ``spec`` (its default
    translation: dots to underscores, the unit's word appended unless it is an annotation in
    braces, ``_total`` after a counter; a histogram's series add ``_bucket`` / ``_sum`` /
    ``_count``)."""
    name = spec.name.replace(".", "_")
    word = _PROMETHEUS_UNITS.get(spec.unit)
    if word and not name.endswith("_" + word):
        name += "_" + word
    if spec.instrument == COUNTER:
        name += "_total"
    return name


@dataclass(frozen=True)
class Sample:
    """One measured value: a counter's or gauge's point, or one histogram observation.

    Attributes:
        metric: a :data:`METRICS` name; attributes: its attribute values (strings);
        value: in the metric's unit.
    """

    metric: str
    attributes: dict[str, str]
    value: float


@dataclass
class MetricsSnapshot:
    """What one collection measured.

    Attributes:
        collected_at: aware UTC time of the collection.
        samples: every point and histogram observation, in :data:`METRICS` order.
    """

    collected_at: datetime
    samples: list[Sample] = field(default_factory=list)

    def of(self, metric: str) -> list[Sample]:
        """The samples of one metric."""
        return [s for s in self.samples if s.metric == metric]

    def value(self, metric: str, **attributes: str) -> float | None:
        """The value of the point of ``metric`` with exactly ``attributes``, else None
        (a histogram: the sum of its observations with them)."""
        found = [s.value for s in self.of(metric) if s.attributes == attributes]
        return sum(found) if found else None

    def to_dicts(self) -> list[dict[str, Any]]:
        """One JSON-able dict per point (``metric``, ``unit``, ``attributes``, ``value``); a
        histogram one per attribute set with ``count``, ``sum``, ``max`` instead of
        ``value``."""
        out: list[dict[str, Any]] = []
        hist: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = defaultdict(list)
        for s in self.samples:
            spec = SPECS[s.metric]
            if spec.instrument == HISTOGRAM:
                hist[(s.metric, tuple(sorted(s.attributes.items())))].append(s.value)
            else:
                out.append(
                    {
                        "metric": s.metric,
                        "unit": spec.unit,
                        "attributes": s.attributes,
                        "value": s.value,
                    }
                )
        for (metric, attrs), values in hist.items():
            out.append(
                {
                    "metric": metric,
                    "unit": SPECS[metric].unit,
                    "attributes": dict(attrs),
                    "count": len(values),
                    "sum": sum(values),
                    "max": max(values),
                }
            )
        order = {m.name: i for i, m in enumerate(METRICS)}
        return sorted(out, key=lambda d: order[d["metric"]])


# ------------------------------------------------------------------------- pure rules


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def commit_samples(
    table: str, valid: ValidWriteIdList, records: Sequence[CommitRecord]
) -> list[Sample]:
    """``acidflow.commits`` of one table: committed write ids (the high-water mark minus the
    open and aborted ones) split by the operations of their commit records; the commits
    without a record as ``unrecorded``."""
    committed = valid.high_watermark - len(valid.invalid_write_ids)
    by_op = Counter("+".join(r.operations) or "none" for r in records)
    unrecorded = committed - sum(by_op.values())
    if unrecorded > 0:
        by_op["unrecorded"] += unrecorded
    return [
        Sample(COMMITS.name, {"table": table, "operation": op}, float(n))
        for op, n in sorted(by_op.items())
    ]


def duration_samples(txns: Iterable[TxnInfo], tables: set[str]) -> list[Sample]:
    """``acidflow.commit.duration``: one observation per committed transaction and table of
    ``tables`` it wrote (``committed_at - started_at`` in seconds)."""
    out = []
    for t in txns:
        if t.state != TxnState.COMMITTED or t.committed_at is None:
            continue
        seconds = max(0.0, (_utc(t.committed_at) - _utc(t.started_at)).total_seconds())
        for name in sorted(t.write_ids):
            if name in tables:
                out.append(Sample(COMMIT_DURATION.name, {"table": name}, seconds))
    return out


def queue_samples(compactions: Iterable[CompactionInfo], now: datetime) -> list[Sample]:
    """``acidflow.compaction.queue`` per state (every state, 0 when empty) and
    ``acidflow.compaction.queue.oldest_age`` of the ``initiated`` entries (since
    ``enqueued_at``; 0 when none)."""
    now = _utc(now)
    entries = list(compactions)
    counts = Counter(c.state for c in entries)
    waiting = [c for c in entries if c.state == CompactionState.INITIATED]
    oldest = max(((now - _utc(c.enqueued_at)).total_seconds() for c in waiting), default=0.0)
    return [
        Sample(QUEUE.name, {"state": s}, float(counts.get(s, 0))) for s in COMPACTION_STATES
    ] + [Sample(QUEUE_OLDEST.name, {"state": CompactionState.INITIATED}, max(0.0, oldest))]


def unqueued_samples(
    partitions: Sequence[UnqueuedPartition], tables: Iterable[str], now: datetime
) -> list[Sample]:
    """``acidflow.compaction.unqueued`` per table (0 for a table with none) and
    ``acidflow.compaction.unqueued.age`` per partition whose start is known."""
    now = _utc(now)
    counts = Counter(p.table for p in partitions)
    out = [Sample(UNQUEUED.name, {"table": t}, float(counts.get(t, 0))) for t in sorted(tables)]
    for p in partitions:
        if p.eligible_since is not None:
            age = max(0.0, (now - _utc(p.eligible_since)).total_seconds())
            attrs = {"table": p.table, "partition": p.partition or ""}
            out.append(Sample(UNQUEUED_AGE.name, attrs, age))
    return out


def quarantine_samples(counts: Mapping[tuple[str, str], int]) -> list[Sample]:
    """``acidflow.quarantine.records`` from :func:`acidflow.quarantine.quarantined_counts`."""
    return [
        Sample(QUARANTINED.name, {"table": table, "source": kind}, float(n))
        for (kind, table), n in sorted(counts.items())
    ]


def kafka_samples(batches: Sequence[Any]) -> list[Sample]:
    """``acidflow.cdc.kafka.offset`` per source, topic and partition: the high-water mark of
    each Kafka source among ``batches`` (``Catalog.list_batches(kind="kafka")``)."""
    out = []
    for source in sorted({b.source for b in batches if b.source}):
        offsets, _ = high_water_mark(list(batches), source)
        for topic, parts in sorted((offsets or {}).items()):
            for part, offset in sorted(parts.items(), key=lambda kv: int(kv[0])):
                attrs = {"source": source, "topic": topic, "partition": str(part)}
                out.append(Sample(KAFKA_OFFSET.name, attrs, float(offset)))
    return out


def slot_samples(slot_lag: Mapping[str, int | None]) -> list[Sample]:
    """``acidflow.cdc.slot.lag`` per existing slot (a missing slot has no lag to report)."""
    return [
        Sample(SLOT_LAG.name, {"slot": slot}, float(lag))
        for slot, lag in sorted(slot_lag.items())
        if lag is not None
    ]


# ---------------------------------------------------------------------------------- I/O


def delta_samples(catalog: Catalog, table: TableDef) -> list[Sample]:
    """``acidflow.partition.deltas`` / ``.delete_deltas`` of every partition directory of
    ``table``: the initiator's :func:`partition_stats` over one recursive listing.

    Raises:
        OSError: the table location cannot be listed.
        acidflow.format.layout.NotEnoughHistoryError: a partition has no usable base.
    """
    tfs = TableFS(table.location)
    grouped = split_partitions(tfs.list_recursive(table.location), len(table.partition_columns))
    valid = catalog.valid_write_ids(table.name)
    lookup = catalog.visibility_lookup()
    out = []
    for part in sorted(grouped):
        stats = partition_stats(table, part or None, valid, 0, lookup, entries=grouped[part])
        attrs = {"table": table.name, "partition": part}
        inserts = stats.delta_count - stats.delete_delta_count
        out.append(Sample(DELTAS.name, attrs, float(inserts)))
        out.append(Sample(DELETE_DELTAS.name, dict(attrs), float(stats.delete_delta_count)))
    return out


def collect_metrics(
    catalog: Catalog,
    *,
    config: CompactorConfig | None = None,
    slot_lag: Mapping[str, int | None] | None = None,
    now: datetime | None = None,
) -> MetricsSnapshot:
    """Measure every metric of :data:`METRICS` (module docstring) once.

    Args:
        catalog: any backend; read only.
        config: compactor settings of the unqueued rule (default the initiator's,
            :meth:`CompactorConfig.from_env`).
        slot_lag: replication slot -> WAL bytes behind (``None``: missing), measured by the
            caller; omitted: no slot metric.
        now: reference time of the ages (aware UTC; naive = UTC); default now.
    Returns:
        the snapshot, samples in :data:`METRICS` order.
    Raises:
        OSError: a table directory or quarantine file cannot be read.
    """
    at = _utc(now) if now is not None else datetime.now(timezone.utc)
    tables = catalog.list_tables()
    names = {t.name for t in tables}
    samples: list[Sample] = []
    for t in tables:
        samples += commit_samples(
            t.name, catalog.valid_write_ids(t.name), catalog.commit_records(t.name)
        )
    samples += duration_samples(catalog.list_transactions([TxnState.COMMITTED]), names)
    for t in tables:
        samples += delta_samples(catalog, t)
    samples += queue_samples(catalog.list_compactions(), at)
    samples += unqueued_samples(unqueued_partitions(catalog, config=config), names, at)
    samples += quarantine_samples(quarantined_counts(catalog.warehouse))
    samples += kafka_samples(catalog.list_batches(kind=KAFKA_KIND))
    samples += slot_samples(slot_lag or {})
    return MetricsSnapshot(at, samples)
