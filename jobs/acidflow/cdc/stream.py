"""Kafka CDC as a Structured Streaming query: ``spark.readStream.format("kafka")`` with
``foreachBatch``, exactly once.

The streaming query is the trigger, the catalog is the source of truth: each micro-batch
(``foreachBatch(df, batch_id)``) does not apply the rows of ``df`` but runs
:func:`acidflow.cdc.kafka.drain`, which reads its own ranges with ``spark.read`` from the
offsets recorded by the newest committed batch of the source. Why:

* whole source transactions: a micro-batch's range may end inside a source transaction; the
  incomplete tail is simply not applied and the recorded end offsets stop before it, so the
  next micro-batch (triggered by the rest arriving) reads it again with the rest. A micro-batch
  DataFrame cannot carry records over; the recorded offsets can.
* exactly once: the offsets are committed with the data in one catalog transaction. A
  micro-batch replayed after a crash between the catalog commit and Spark's checkpoint commit,
  a restart from an old checkpoint or from none (a lost checkpoint: the query starts from the
  earliest offsets again) finds the range applied and applies nothing twice. Each batch record
  also carries the query's id and the micro-batch id (``details["stream"]``); a replayed
  micro-batch of the same query whose id the newest batch already recorded is counted
  (``StreamRun.skipped``) and drains on from the catalog's offsets: the crash may have come
  between two batches of its drain, and Spark will not trigger the rest of its range again.

The query subscribes to the data topics and the transaction topic, so any arrival (a late END
too) triggers a micro-batch; its own offsets live in ``checkpointLocation`` and only decide
when micro-batches run. Trigger interval: ``trigger_seconds`` (default 5 s).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from acidflow.cdc.apply import BatchReport, CdcOptions
from acidflow.cdc.kafka import KafkaOptions, drain, source_state

log = logging.getLogger(__name__)

DEFAULT_TRIGGER_SECONDS = 5.0

#: test hook: the stream process SIGKILLs itself right after its N-th catalog commit (before
#: the micro-batch returns, so before Spark writes the micro-batch's ``commits/<id>``)
KILL_AFTER_COMMITS_ENV = "ACIDFLOW_TEST_KILL_AFTER_COMMITS"

_commits = 0


def _fault_point(report: BatchReport) -> None:
    """The crash window of exactly once, for the fault tests: with
    ``ACIDFLOW_TEST_KILL_AFTER_COMMITS=N`` in the environment, ``kill -9`` of this process
    right after the N-th Kafka batch it committed to the catalog, before Spark's checkpoint
    records the micro-batch. Without it, nothing."""
    global _commits
    limit = os.environ.get(KILL_AFTER_COMMITS_ENV)
    if not limit:
        return
    _commits += 1
    if _commits >= int(limit):
        log.warning("%s=%s: kill -9 after batch %s", KILL_AFTER_COMMITS_ENV, limit, report.batch_id)
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class StreamRun:
    """What a streaming query has applied so far (filled from its micro-batches).

    Attributes:
        reports: the committed batches' reports, in order.
        micro_batches: micro-batches run (including those with nothing to apply).
        skipped: replayed micro-batches recognised by the (query id, batch id) record (they
            apply only what their first run had not committed).
        error: the exception a micro-batch raised (the query stops with it), or None.
        busy: a micro-batch is running; last_done: ``time.monotonic()`` when the last one ended.
    """

    reports: list[BatchReport] = field(default_factory=list)
    micro_batches: int = 0
    skipped: int = 0
    error: BaseException | None = None
    busy: bool = False
    last_done: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def trigger_pattern(kopts: KafkaOptions) -> str:
    """The ``subscribePattern`` of the query that triggers micro-batches: the change topics
    (named ones as exact names, or the source's pattern) and the transaction topic. A pattern,
    never ``subscribe``: Spark's Kafka source ends a query subscribed to a topic the broker does
    not have (``UnknownTopicOrPartitionException``), while a pattern picks the topic up when it
    is created (Debezium creates each table's topic with its first change)."""
    names = list(kopts.topics) + ([kopts.transaction_topic] if kopts.transaction_topic else [])
    parts = [re.escape(n) for n in names]
    if kopts.topic_pattern:
        parts.insert(0, f"(?:{kopts.topic_pattern})")
    return "|".join(parts)


def start_kafka_stream(
    spark: Any,
    catalog: Any,
    options: CdcOptions,
    kopts: KafkaOptions,
    *,
    trigger_seconds: float = DEFAULT_TRIGGER_SECONDS,
    checkpoint: str | None = None,
    run: StreamRun | None = None,
    batches_per_trigger: int | None = None,
) -> Any:
    """Start the streaming query of a Kafka CDC source (module docstring).

    Args:
        catalog: the catalog the batches commit to.
        options, kopts: as :func:`acidflow.cdc.kafka.apply_kafka`.
        trigger_seconds: the processing-time trigger interval.
        checkpoint: Spark's ``checkpointLocation`` (default a new temporary folder the caller
            owns, ``acidflow-kafka-ckpt-*``: the catalog's offsets make the checkpoint optional
            for correctness; :func:`run_kafka_stream` deletes the one it made).
        run: a :class:`StreamRun` to collect the micro-batches' outcome into.
        batches_per_trigger: at most this many batches per micro-batch (None: until idle; a
            bound keeps micro-batches short under a steady load, so a bounded run stops on time).
    Returns:
        the running ``pyspark.sql.streaming.StreamingQuery``.
    """
    state = run if run is not None else StreamRun()
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kopts.bootstrap_servers)
        .option("startingOffsets", "earliest")
        # the query's own offsets only trigger micro-batches; the batches check data loss
        # against the catalog's offsets themselves (acidflow.cdc.offsets)
        .option("failOnDataLoss", "false")
    )
    reader = reader.option("subscribePattern", trigger_pattern(kopts))
    for k, v in kopts.kafka.items():
        reader = reader.option(f"kafka.{k}", v)

    def micro_batch(df: Any, batch_id: int) -> None:
        deadline = time.monotonic() + 60  # the first micro-batch may run before start() returns
        while "query" not in query_holder and time.monotonic() < deadline:
            time.sleep(0.05)
        # the query's id is kept in its checkpoint: the same across restarts from it
        query_id = str(query_holder["query"].id) if "query" in query_holder else None
        _, newest = source_state(catalog, kopts.source)
        done = (newest.details or {}).get("stream", {}) if newest is not None else {}
        with state.lock:
            state.micro_batches += 1
            state.busy = True
        try:
            if done.get("query_id") == query_id and int(done.get("batch_id", -1)) >= batch_id:
                # a replay after a crash between the catalog commit and Spark's checkpoint: the
                # crash may have come between two batches of the micro-batch's drain, so drain
                # on from the catalog's offsets (what was applied is not read again)
                log.info(
                    "stream %s: micro-batch %d replayed (applied up to the catalog's offsets)",
                    query_id,
                    batch_id,
                )
                with state.lock:
                    state.skipped += 1
            reports = drain(
                spark,
                catalog,
                options,
                kopts,
                details={"stream": {"query_id": query_id, "batch_id": batch_id}},
                on_commit=_fault_point,
                max_batches=batches_per_trigger,
            )
            with state.lock:
                state.reports += [r for r in reports if r.status not in ("idle", "waiting")]
        except BaseException as e:
            with state.lock:
                state.error = e
            raise
        finally:
            with state.lock:
                state.busy = False
                state.last_done = time.monotonic()

    query_holder: dict[str, Any] = {}
    query = (
        reader.load()
        .writeStream.foreachBatch(micro_batch)
        .option("checkpointLocation", checkpoint or tempfile.mkdtemp(prefix="acidflow-kafka-ckpt-"))
        .trigger(processingTime=f"{trigger_seconds} seconds")
        .queryName(f"acidflow-kafka-{kopts.source}")
        .start()
    )
    query_holder["query"] = query
    return query


def run_kafka_stream(
    spark: Any,
    catalog: Any,
    options: CdcOptions,
    kopts: KafkaOptions,
    *,
    trigger_seconds: float = DEFAULT_TRIGGER_SECONDS,
    checkpoint: str | None = None,
    max_batches: int | None = None,
    timeout_s: float | None = None,
    idle_s: float | None = None,
    batches_per_trigger: int | None = None,
) -> StreamRun:
    """Run the streaming query until ``max_batches`` batches were committed, ``timeout_s``
    seconds passed, ``idle_s`` seconds passed since the last micro-batch ended (after one at
    least), or it failed; then stop it between micro-batches (a bounded run: the CLI's
    ``--max-batches`` / ``--timeout``, the tests). Without any bound it runs until the process
    is interrupted. ``batches_per_trigger``: as :func:`start_kafka_stream`.

    Returns:
        the :class:`StreamRun`.
    Raises:
        the error a micro-batch raised (the query stopped with it).
    """
    run = StreamRun()
    # no checkpoint given: a temporary one, deleted when the query stops (what Spark does with
    # the temporary checkpoints of its own sinks, spark.sql.streaming.forceDeleteTempCheckpointLocation)
    temporary = None if checkpoint else tempfile.mkdtemp(prefix="acidflow-kafka-ckpt-")
    query = start_kafka_stream(
        spark,
        catalog,
        options,
        kopts,
        trigger_seconds=trigger_seconds,
        checkpoint=checkpoint or temporary,
        run=run,
        batches_per_trigger=batches_per_trigger,
    )
    t0 = time.monotonic()
    try:
        while query.isActive:
            now = time.monotonic()
            with run.lock:
                n, busy, ran, last = len(run.reports), run.busy, run.micro_batches, run.last_done
            if not busy:  # stop between micro-batches only (stop() interrupts a running one)
                if max_batches is not None and n >= max_batches:
                    break
                if timeout_s is not None and now - t0 >= timeout_s:
                    break
                if idle_s is not None and ran and now - last >= idle_s:
                    break
            time.sleep(0.2)
    finally:
        query.stop()
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
    if run.error is not None:
        raise run.error
    exc = query.exception()
    if exc is not None:
        raise RuntimeError(f"the Kafka CDC stream {kopts.source} failed: {exc}")
    return run
