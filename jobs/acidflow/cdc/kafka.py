"""Kafka as a CDC source: one offset range per batch, one catalog transaction per batch,
exactly once (Spark's Kafka source, ``spark.read.format("kafka")``).

:func:`apply_kafka` runs one batch of a source (a name: the batch ledger's ``source`` of its
batches, kind ``kafka``):

1. the topics (``topics``, or the ones matching ``topic_pattern``, never the transaction topic)
   and their partitions' available offsets (a Kafka consumer in the driver's JVM, through the
   Spark session: the connector's own kafka-clients);
2. the range: from the high-water mark recorded by the newest committed batch of the source to
   the partitions' ends, at most ``max_offsets`` records (``acidflow.cdc.offsets``: first batch,
   new partitions, data loss);
3. the records of the range (``spark.read.format("kafka")`` with ``assign``,
   ``startingOffsets`` and ``endingOffsets`` JSON, ``failOnDataLoss=true``), decoded on the
   driver to whole source transactions (``acidflow.sources.kafka.decode_records``: records of a
   source transaction that is not complete yet are left for the next batch, and the batch's end
   offsets stop before them). When a capped range holds no complete transaction at all, the cap
   is doubled until it does (a source transaction larger than the cap is never cut);
4. the batch is applied by the same plan -> Great Expectations gate -> split-update write ->
   quarantine -> commit as change files (:func:`acidflow.cdc.apply.apply_stream`), its id
   ``kafka:<source>:<digest of its start>`` claimed in the batch ledger and its start and end
   offsets (``details["offsets"]``) committed with its data.

A range with nothing to apply (no new record, or only records of incomplete transactions)
commits nothing and reports ``status`` ``idle`` (or ``waiting``).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from acidflow.cdc import columnar
from acidflow.cdc import offsets as ofs
from acidflow.cdc.apply import BatchReport, CdcOptions, apply_stream
from acidflow.errors import AcidflowError
from acidflow.quality.gx import prewarm
from acidflow.sources.avro import avro_decoder
from acidflow.sources.kafka import KAFKA_FORMATS, KafkaBatch, KafkaRecord, Offsets, decode_records
from acidflow.sparkmode import require_classic

log = logging.getLogger(__name__)

#: a Kafka batch with fewer bad records than this is never refused by the quarantine threshold
DEFAULT_MIN_BAD_RECORDS = 10
#: how record keys and values are written: Kafka Connect's JsonConverter (with or without
#: schemas), or Avro through a schema registry (Apicurio's AvroConverter: acidflow.sources.avro)
VALUE_FORMATS = ("json", "avro")

#: ``fetch.max.wait.ms`` of the consumers of a bounded range read (:func:`read_range`)
BATCH_FETCH_MAX_WAIT_MS = "10"

#: a drain reads the records of this many capped batches at once (:func:`drain`)
READ_AHEAD_BATCHES = 8


@dataclass
class KafkaOptions:
    """Where a Kafka CDC source reads.

    Attributes:
        source: the source's name (the batch ledger's ``source``; one high-water mark each).
        bootstrap_servers: ``kafka.bootstrap.servers``.
        topics: the change topics; or topic_pattern: a regular expression (full match) of them.
        transaction_topic: Debezium's transaction metadata topic (``<prefix>.transaction``) for
            whole source transactions; None: every range is applied as it is.
        starting_offsets: the first batch's start: ``earliest`` (default), ``latest`` or
            Spark's JSON (``{"topic": {"0": 42}}``).
        max_offsets: at most this many records per batch (the data topics; Spark's
            ``maxOffsetsPerTrigger``); None = no cap.
        kafka: more Kafka client settings (``security.protocol``, ``sasl.*`` ...), for the
            consumer and for Spark (as ``kafka.<key>``).
        min_bad_records: the quarantine threshold (``CdcOptions.quarantine_threshold``, a
            fraction of the batch's records) refuses a batch only when it holds at least this
            many bad records (default 10): a small micro-batch holding one poison message is
            quarantined and applied, not refused (:func:`kafka_threshold`).
        value_format: how keys and values are written (:data:`VALUE_FORMATS`): ``json``
            (default) or ``avro`` (Debezium only).
        schema_registry_url: with ``avro``, the schema registry the converter wrote to: its
            ``apicurio.registry.url`` (``http://host:8080/apis/registry/v2``, or the host root).
    """

    source: str
    bootstrap_servers: str
    topics: list[str] = field(default_factory=list)
    topic_pattern: str | None = None
    transaction_topic: str | None = None
    starting_offsets: str = "earliest"
    max_offsets: int | None = None
    kafka: dict[str, str] = field(default_factory=dict)
    min_bad_records: int = DEFAULT_MIN_BAD_RECORDS
    value_format: str = "json"
    schema_registry_url: str | None = None

    def __post_init__(self) -> None:
        if not self.source or not re.fullmatch(r"[A-Za-z0-9_.\-]+", self.source):
            raise KafkaOptionsError(
                self.source, f"the name must be [A-Za-z0-9_.-]+, got {self.source!r}"
            )
        if bool(self.topics) == bool(self.topic_pattern):
            raise KafkaOptionsError(self.source, "give either topics or a topic pattern")
        if self.max_offsets is not None and self.max_offsets < 1:
            raise KafkaOptionsError(
                self.source, f"max_offsets must be at least 1, got {self.max_offsets}"
            )
        if self.min_bad_records < 1:
            raise KafkaOptionsError(
                self.source, f"min_bad_records must be at least 1, got {self.min_bad_records}"
            )
        if self.value_format not in VALUE_FORMATS:
            raise KafkaOptionsError(
                self.source,
                f"value format must be one of {VALUE_FORMATS}, got {self.value_format!r}",
            )
        if (self.value_format == "avro") != bool(self.schema_registry_url):
            raise KafkaOptionsError(
                self.source,
                "a schema registry URL goes with value format avro (and only with it)",
            )


class KafkaOptionsError(AcidflowError, ValueError):
    """A Kafka source's settings do not fit together (names the source and the reason)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"Kafka source {source!r}: {reason}")
        self.source = source


def kafka_threshold(threshold: float, min_bad_records: int, total: int) -> float:
    """The quarantine threshold of a Kafka batch of ``total`` records (changes and bad ones):
    ``max(threshold, (min_bad_records - 1) / total)``, at most 1. ``bad / total`` exceeds it
    exactly when the batch holds at least ``min_bad_records`` bad records and more than
    ``threshold`` of its records are bad; a batch with fewer bad records is never refused
    (they are quarantined and the rest applied)."""
    if total <= 0:
        return threshold
    return min(1.0, max(threshold, (min_bad_records - 1) / total))


def kafka_options(
    source: str,
    bootstrap_servers: str,
    *,
    topics: str | list[str] = "",
    topic_pattern: str = "",
    transaction_topic: str = "",
    starting_offsets: str = "earliest",
    max_offsets: int = 0,
    min_bad_records: int = DEFAULT_MIN_BAD_RECORDS,
    value_format: str = "json",
    schema_registry_url: str = "",
) -> KafkaOptions:
    """:class:`KafkaOptions` from command-line values (comma-separated topics, empty strings
    and 0 for none), shared by the CLI and the spark-submit entry.

    Raises:
        ValueError: see :class:`KafkaOptions`.
    """
    names = topics.split(",") if isinstance(topics, str) else list(topics)
    return KafkaOptions(
        source=source,
        bootstrap_servers=bootstrap_servers,
        topics=[t.strip() for t in names if t.strip()],
        topic_pattern=topic_pattern or None,
        transaction_topic=transaction_topic or None,
        starting_offsets=starting_offsets or "earliest",
        max_offsets=max_offsets or None,
        min_bad_records=min_bad_records,
        value_format=value_format or "json",
        schema_registry_url=schema_registry_url or None,
    )


class _Consumer:
    """A Kafka consumer in the driver's JVM (kafka-clients of Spark's Kafka connector) for
    metadata only: topics, partitions, earliest and latest offsets."""

    def __init__(self, spark: Any, kopts: KafkaOptions) -> None:
        require_classic(
            spark,
            f"the Kafka source {kopts.source!r} (its offsets come from a Kafka consumer in the"
            " driver's JVM)",
            "run Kafka CDC jobs on a classic session (spark-submit: spark_mode=submit, no"
            " SPARK_REMOTE)",
        )
        jvm = spark.sparkContext._jvm
        props = jvm.java.util.Properties()
        des = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
        for k, v in {
            **kopts.kafka,
            "bootstrap.servers": kopts.bootstrap_servers,
            "key.deserializer": des,
            "value.deserializer": des,
            "allow.auto.create.topics": "false",
            "enable.auto.commit": "false",
        }.items():
            props.put(k, v)
        self.jvm = jvm
        self.consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)

    def close(self) -> None:
        self.consumer.close()

    def topics(self, kopts: KafkaOptions) -> list[str]:
        if kopts.topics:
            return list(kopts.topics)
        names = list(self.consumer.listTopics().keySet())
        rx = re.compile(kopts.topic_pattern or "")
        return sorted(
            str(n)
            for n in names
            if rx.fullmatch(str(n))
            and str(n) != kopts.transaction_topic
            and not str(n).startswith("__")
        )

    def offsets(self, topics: list[str]) -> tuple[Offsets, Offsets]:
        """``(earliest, latest)`` of every partition of ``topics`` (missing topics: none)."""
        tps = self.jvm.java.util.ArrayList()
        for t in topics:
            for info in self.consumer.partitionsFor(t) or []:
                tps.add(self.jvm.org.apache.kafka.common.TopicPartition(t, info.partition()))

        def as_offsets(m: Any) -> Offsets:
            out: Offsets = {}
            for e in m.entrySet():
                tp = e.getKey()
                out.setdefault(str(tp.topic()), {})[str(tp.partition())] = int(e.getValue())
            return out

        if tps.isEmpty():
            return {}, {}
        return as_offsets(self.consumer.beginningOffsets(tps)), as_offsets(
            self.consumer.endOffsets(tps)
        )


def read_range(spark: Any, kopts: KafkaOptions, start: Offsets, end: Offsets) -> list[KafkaRecord]:
    """The records of ``start``..``end`` (partitions without records are not read), with
    Spark's Kafka source in batch mode (``failOnDataLoss=true``: a range deleted meanwhile
    fails the read), in (topic, partition, offset) order.

    The rows come to the driver as Arrow batches (``DataFrame.toArrow``, not a ``Row`` per
    record), and the consumers' ``fetch.max.wait.ms`` is :data:`BATCH_FETCH_MAX_WAIT_MS` unless
    ``kopts.kafka`` sets it: a bounded range is on the broker already, while Kafka's default
    (500 ms) makes every partition read up to its log end wait that long for records that are
    not asked for (measured: 1.5-2.4 s per range against 0.3 s, bench/NOTES.md "Kafka phase").
    """
    parts = {
        t: sorted(int(p) for p, o in ps.items() if o > start.get(t, {}).get(p, o))
        for t, ps in end.items()
    }
    parts = {t: ps for t, ps in parts.items() if ps}
    if not parts:
        return []
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kopts.bootstrap_servers)
        .option("assign", json.dumps(parts))
        .option("startingOffsets", json.dumps(_only(start, parts)))
        .option("endingOffsets", json.dumps(_only(end, parts)))
        .option("failOnDataLoss", "true")
    )
    settings = {"fetch.max.wait.ms": BATCH_FETCH_MAX_WAIT_MS, **kopts.kafka}
    for k, v in settings.items():
        reader = reader.option(f"kafka.{k}", v)
    table = reader.load().select("topic", "partition", "offset", "key", "value").toArrow()
    cols = [table.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")]
    records = [KafkaRecord(t, p, o, k, v) for t, p, o, k, v in zip(*cols, strict=True)]
    records.sort(key=_position)
    return records


def _position(r: KafkaRecord) -> tuple[str, int, int]:
    return (r.topic, r.partition, r.offset)


def _offset(r: KafkaRecord) -> int:
    return r.offset


@dataclass
class _Window:
    """Records read ahead for the next batches of a drain: ``start``..``end`` of every
    partition, each partition's records in offset order, and maybe a read of the records
    after ``end`` still running (``pending``: its end offsets and records)."""

    start: Offsets
    end: Offsets
    records: dict[tuple[str, str], list[KafkaRecord]] = field(default_factory=dict)
    #: the transaction topic's records decoded once for all the window's batches
    markers_seen: dict[tuple[int, int], Any] = field(default_factory=dict)
    pending: Future[tuple[Offsets, list[KafkaRecord]]] | None = None

    @classmethod
    def read(cls, spark: Any, kopts: KafkaOptions, start: Offsets, end: Offsets) -> "_Window":
        w = cls(start, end)
        w.add(read_range(spark, kopts, start, end), end)
        return w

    def add(self, records: list[KafkaRecord], end: Offsets) -> None:
        """Append the records that follow the window, up to ``end``."""
        for r in records:
            self.records.setdefault((r.topic, str(r.partition)), []).append(r)
        merged = {t: dict(ps) for t, ps in self.end.items()}
        for t, ps in end.items():
            merged.setdefault(t, {}).update(ps)
        self.end = merged

    def take(self, start: Offsets, end: Offsets) -> list[KafkaRecord] | None:
        """The records of ``start``..``end`` when the window holds all of them (waiting for
        the pending read when it does not yet), else None: the caller reads the range itself
        (and fails as that read does when its offsets are gone)."""
        got = self._take(start, end)
        if got is None and self.pending is not None:
            pending, self.pending = self.pending, None
            try:
                more_end, more = pending.result()
            except Exception as e:  # the batch's own read reports it
                log.warning("Kafka read-ahead failed (%s); the batch reads its own range", e)
                return None
            self.add(more, more_end)
            got = self._take(start, end)
        return got

    def _take(self, start: Offsets, end: Offsets) -> list[KafkaRecord] | None:
        out: list[KafkaRecord] = []
        for t, ps in end.items():
            for p, high in ps.items():
                low = start.get(t, {}).get(p, high)
                if high <= low:
                    continue
                w_low = self.start.get(t, {}).get(p)
                w_high = self.end.get(t, {}).get(p)
                if w_low is None or w_high is None or low < w_low or high > w_high:
                    return None
                recs = self.records.get((t, p), [])
                first = bisect.bisect_left(recs, low, key=_offset)
                out += recs[first : bisect.bisect_left(recs, high, key=_offset)]
        return out


def _only(offsets: Offsets, parts: dict[str, list[int]]) -> Offsets:
    return {t: {str(p): offsets[t][str(p)] for p in ps} for t, ps in parts.items()}


def source_state(catalog: Any, source: str) -> tuple[Offsets | None, Any]:
    """The high-water mark of ``source`` and the batch record it comes from
    (:func:`acidflow.cdc.offsets.high_water_mark` over the ledger's newest committed Kafka
    batch of ``source``, ``Catalog.newest_batch``)."""
    newest = catalog.newest_batch(ofs.KIND, source)
    return ofs.high_water_mark([] if newest is None else [newest], source)


@dataclass
class _Look:
    """One look at a source's topics: their names, the partitions' available offsets and,
    in a drain, records read ahead."""

    topics: list[str]
    earliest: Offsets
    latest: Offsets
    window: _Window | None = None

    @classmethod
    def take(cls, spark: Any, kopts: KafkaOptions) -> "_Look":
        consumer = _Consumer(spark, kopts)
        try:
            topics = consumer.topics(kopts)
            every = topics + ([kopts.transaction_topic] if kopts.transaction_topic else [])
            return cls(topics, *consumer.offsets(every))
        finally:
            consumer.close()

    def records(
        self, spark: Any, kopts: KafkaOptions, start: Offsets, end: Offsets
    ) -> list[KafkaRecord]:
        got = None if self.window is None else self.window.take(start, end)
        return read_range(spark, kopts, start, end) if got is None else got


def _start(catalog: Any, kopts: KafkaOptions, look: _Look) -> tuple[Offsets | None, Offsets]:
    """The source's high-water mark and the next batch's start offsets."""
    committed, _ = source_state(catalog, kopts.source)
    start = ofs.plan_start(
        kopts.source, committed, look.earliest, look.latest, kopts.starting_offsets
    )
    return committed, start


def _end(kopts: KafkaOptions, start: Offsets, latest: Offsets, cap: int | None) -> Offsets:
    """The end offsets of a range of at most ``cap`` data records from ``start`` (the
    transaction topic: at most twice that many markers)."""
    uncapped = frozenset([kopts.transaction_topic] if kopts.transaction_topic else [])
    end = ofs.plan_end(start, latest, cap, uncapped)
    if cap is not None and kopts.transaction_topic:
        end = ofs.cap_topic(end, start, kopts.transaction_topic, 2 * cap)
    return end


def apply_kafka(
    spark: Any,
    catalog: Any,
    options: CdcOptions,
    kopts: KafkaOptions,
    *,
    details: dict[str, Any] | None = None,
) -> BatchReport:
    """Apply the next offset range of a Kafka source as one batch (module docstring).

    Args:
        options: how changes are applied (``options.fmt``: ``debezium`` or ``goldengate``).
        kopts: where the source reads.
        details: more JSON for the batch record (the streaming query's id and batch).
    Returns:
        the :class:`~acidflow.cdc.apply.BatchReport` (``file`` = ``kafka:<source>``); status
        ``idle`` / ``waiting`` when nothing was committed.
    Raises:
        KafkaDataLossError: offsets still to apply are gone (retention); nothing applied.
        ValueError: a format other than debezium/goldengate; Avro values with goldengate.
        acidflow.sources.avro.SchemaRegistryError: the schema registry of Avro values cannot
            be reached; nothing applied.
        Everything :func:`acidflow.cdc.apply.apply_stream` raises (quarantine threshold,
        quality gate, BatchInProgressError for a concurrent run from the same start...).
    """
    if options.fmt not in KAFKA_FORMATS:
        raise ValueError(f"Kafka sources carry {KAFKA_FORMATS}, not {options.fmt!r}")
    t0 = time.monotonic()
    return _apply_next(spark, catalog, options, kopts, _Look.take(spark, kopts), details, t0)


def _apply_next(
    spark: Any,
    catalog: Any,
    options: CdcOptions,
    kopts: KafkaOptions,
    look: _Look,
    details: dict[str, Any] | None,
    t0: float,
) -> BatchReport:
    """:func:`apply_kafka` within one look at the source's offsets."""
    label = f"kafka:{kopts.source}"
    decoder = (
        avro_decoder(kopts.schema_registry_url or "") if kopts.value_format == "avro" else None
    )
    committed, start = _start(catalog, kopts, look)
    cap = kopts.max_offsets
    while True:
        end = _end(kopts, start, look.latest, cap)
        batch = decode_records(
            options.fmt,
            look.records(spark, kopts, start, end),
            end_offsets=end,
            transaction_topic=kopts.transaction_topic,
            markers_seen=None if look.window is None else look.window.markers_seen,
            decoder=decoder,
            columns=columnar.enabled(options.columnar),
            # the configured topics, existing or not: a transaction END may be read before
            # the first record of a topic Debezium has yet to create
            topics=kopts.topics or look.topics,
        )
        if ofs.has_records(start, batch.end_offsets) or cap is None or end == look.latest:
            break
        cap *= 2  # the capped range holds no complete source transaction: read more
        log.info("%s: no whole source transaction in the range; cap raised to %d", label, cap)
    if not ofs.has_records(start, batch.end_offsets):
        status = "waiting" if batch.carried else "idle"
        log.info("%s: %s (%d record(s) wait for their transaction)", label, status, batch.carried)
        return BatchReport(
            "", label, status, seconds=time.monotonic() - t0, tables={}, quarantined=0
        )
    bid = ofs.batch_id(kopts.source, committed, kopts.starting_offsets)
    total = batch.stream.change_count() + len(batch.stream.bad)
    threshold = kafka_threshold(options.quarantine_threshold, kopts.min_bad_records, total)
    return apply_stream(
        spark,
        catalog,
        batch.stream,
        bid,
        label,
        dataclasses.replace(options, quarantine_threshold=threshold),
        kind=ofs.KIND,
        source=kopts.source,
        details={**_details(kopts, look.topics, start, batch), **(details or {})},
        t0=t0,
    )


def _details(
    kopts: KafkaOptions, topics: list[str], start: Offsets, batch: KafkaBatch
) -> dict[str, Any]:
    return {
        "offsets": {"start": start, "end": batch.end_offsets},
        "topics": topics,
        "transaction_topic": kopts.transaction_topic,
        "bootstrap_servers": kopts.bootstrap_servers,
        "source_transactions": batch.transactions,
        "carried": batch.carried,
        "waiting_transactions": batch.waiting[:20],
    }


def drain(
    spark: Any,
    catalog: Any,
    options: CdcOptions,
    kopts: KafkaOptions,
    *,
    details: dict[str, Any] | None = None,
    max_batches: int | None = None,
    on_commit: Callable[[BatchReport], None] | None = None,
) -> list[BatchReport]:
    """Apply batches of the source until one has nothing more to apply (``idle``/``waiting``)
    or ``max_batches`` were committed. Returns the committed batches' reports (or the one idle
    report when there was nothing). ``on_commit`` is called with each batch's report right
    after its catalog commit.

    Each look at the partitions' offsets reads ahead the records of up to
    :data:`READ_AHEAD_BATCHES` capped batches (``max_offsets`` each, and not more than
    ``max_batches`` still allow): the first batch's range at once, the rest in a second Spark
    job on a thread of its own, started first and running on while the first batch is applied
    (Spark runs jobs of several threads side by side); the batches are then cut from those
    records one by one as :func:`apply_kafka` cuts them (each batch still commits its own
    start and end offsets with its data, from the catalog's high-water mark). A batch that
    needs records beyond the window (a source transaction larger than the cap) reads them
    itself. When the window's offsets are used up the source is looked at again. Memory: the
    window's record bytes (about ``READ_AHEAD_BATCHES * max_offsets`` records).

    Raises:
        What :func:`apply_kafka` raises; batches committed before the error stay committed.
    """
    if options.fmt not in KAFKA_FORMATS:
        raise ValueError(f"Kafka sources carry {KAFKA_FORMATS}, not {options.fmt!r}")
    if options.quality_gate:
        prewarm(options.suite_dir)  # while the first range is read in the JVM
    out: list[BatchReport] = []
    with ThreadPoolExecutor(1, thread_name_prefix="acidflow-kafka-read-ahead") as reader:
        while max_batches is None or len(out) < max_batches:
            t0 = time.monotonic()
            look = _Look.take(spark, kopts)
            # without a cap a batch reads to the look's end: one batch per look
            left = READ_AHEAD_BATCHES if kopts.max_offsets is not None else 1
            if max_batches is not None:
                left = min(left, max_batches - len(out))
            if kopts.max_offsets is not None:
                look.window = _read_ahead(spark, catalog, kopts, look, left, reader)
            committed = 0
            try:
                while committed < left:
                    r = _apply_next(spark, catalog, options, kopts, look, details, t0)
                    t0 = time.monotonic()
                    if r.status in ("idle", "waiting"):
                        if not out:
                            return [r]
                        break
                    out.append(r)
                    committed += 1
                    if on_commit is not None:
                        on_commit(r)
            finally:
                if look.window is not None and look.window.pending is not None:
                    look.window.pending.cancel()  # not started yet: not read at all
            if not committed:
                break
    return out


def _read_ahead(
    spark: Any,
    catalog: Any,
    kopts: KafkaOptions,
    look: _Look,
    batches: int,
    reader: ThreadPoolExecutor,
) -> _Window | None:
    """The window of a drain's look (:func:`drain`): the first batch's range read now, the
    rest of ``batches`` capped batches by ``reader`` meanwhile (started first: the two Spark
    jobs run side by side, and the second goes on while the first batch is applied)."""
    assert kopts.max_offsets is not None
    _, start = _start(catalog, kopts, look)
    first = _end(kopts, start, look.latest, kopts.max_offsets)
    if not ofs.has_records(start, first):
        return None
    ahead = _end(kopts, start, look.latest, kopts.max_offsets * batches)
    ahead = {
        t: {p: max(o, first.get(t, {}).get(p, o)) for p, o in ps.items()} for t, ps in ahead.items()
    }
    pending = None
    if batches > 1 and ofs.has_records(first, ahead):
        pending = reader.submit(lambda: (ahead, read_range(spark, kopts, first, ahead)))
    window = _Window.read(spark, kopts, start, first)
    window.pending = pending
    return window
