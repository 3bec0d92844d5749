"""Kafka offset ranges of CDC batches: where a batch starts and ends, and its batch id (pure: no
Spark, no catalog, no Kafka client).

Exactly once rests on the batch ledger (``Catalog.register_batch``): every Kafka batch of a
source records the end offsets it applied in its batch record's details, committed atomically
with its data; the next batch starts at the end offsets of the newest committed batch of the
source (the *high-water mark*, :func:`high_water_mark`). The batch id is derived from the source
and that start (:func:`batch_id`), so two runs from the same start (a crash and its retry, an
Airflow retry racing the scheduled run, a backfill) claim the same id and the ledger lets only
one of them apply it.

Start offsets (:func:`plan_start`): the high-water mark per partition; a partition it does not
name (a new partition or topic) from its earliest offset; with no committed batch at all,
``startingOffsets`` (``earliest``, ``latest`` or Spark's JSON, ``-2`` = earliest, ``-1`` = latest,
unnamed partitions earliest). A start below the partition's earliest available offset (records
deleted by retention before they were applied) or above its end (a topic deleted and created
again) is an error naming topic, partition and the missing range -- never a silent skip (Spark's
``failOnDataLoss=true``, with acidflow's message).

End offsets (:func:`plan_end`): the partitions' current ends, at most ``max_offsets`` records in
all when capped (shared in proportion to what each partition has, as Spark's
``maxOffsetsPerTrigger`` does). The transaction topic is capped apart (:func:`cap_topic`, twice
the data cap: a BEGIN and an END per transaction): its records beyond the cap are only read by
a later batch, so the transactions they close wait (their change events stay for that batch)
and every batch stops re-reading the whole rest of the topic; a range whose capped markers
complete no transaction is read again with the cap doubled.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from acidflow.catalog.records import TxnState
from acidflow.errors import AcidflowError
from acidflow.sources.kafka import Offsets

#: the batch ledger's kind of Kafka batches
KIND = "kafka"


class KafkaDataLossError(AcidflowError, RuntimeError):
    """Offsets a source still has to apply are gone from Kafka (deleted by retention, or the
    topic was deleted and created again). Nothing was applied.

    Attributes:
        source: the CDC source; topic, partition: where; start: the first offset to apply;
        earliest, latest: the partition's available range now.
    """

    def __init__(
        self, source: str, topic: str, partition: int, start: int, earliest: int, latest: int
    ) -> None:
        self.source, self.topic, self.partition = source, topic, partition
        self.start, self.earliest, self.latest = start, earliest, latest
        if start < earliest:
            what = (
                f"offsets {start}..{earliest - 1} are no longer available (the partition now "
                f"starts at {earliest}: deleted by retention before they were applied)"
            )
        else:
            what = (
                f"offset {start} is beyond the partition's end {latest} (the topic was "
                "deleted and created again, or its records were truncated)"
            )
        super().__init__(
            f"Kafka source {source}: topic {topic} partition {partition}: {what}; nothing was "
            "applied. Replay the source (a new Debezium snapshot) into a new source name, or "
            "accept the loss by starting a new source name from the earliest offsets"
        )


def offsets_json(offsets: Offsets) -> str:
    """Offsets as Spark's JSON (sorted: a stable text)."""
    return json.dumps(offsets, sort_keys=True)


def batch_id(source: str, start: Offsets | None, starting: str) -> str:
    """``kafka:<source>:<sha256 of the start>``: the start is the high-water mark the batch
    began from (its sorted JSON), or ``initial:<startingOffsets>`` for a source's first batch.

    Raises:
        ValueError: the id would be over 128 characters (a source name over ~100).
    """
    text = offsets_json(start) if start is not None else f"initial:{starting}"
    bid = f"{KIND}:{source}:{hashlib.sha256(text.encode()).hexdigest()[:24]}"
    if len(bid) > 128:
        raise ValueError(f"Kafka source name {source!r} is too long for a batch id")
    return bid


def high_water_mark(batches: list[Any], source: str) -> tuple[Offsets | None, Any]:
    """The end offsets of the newest committed Kafka batch of ``source`` among ``batches``
    (``Catalog.list_batches(kind="kafka")``; newest = largest transaction id), and that batch
    record; ``(None, None)`` when none committed."""
    newest = None
    for b in batches:
        if b.source != source or b.state != TxnState.COMMITTED:
            continue
        if newest is None or b.txn_id > newest.txn_id:
            newest = b
    if newest is None:
        return None, None
    end = (newest.details or {}).get("offsets", {}).get("end")
    return ({t: {p: int(o) for p, o in ps.items()} for t, ps in (end or {}).items()}, newest)


def _starting(starting: str) -> Offsets | str:
    s = starting.strip()
    if s in ("earliest", "latest"):
        return s
    try:
        parsed = json.loads(s)
    except ValueError:
        raise ValueError(
            f"startingOffsets must be earliest, latest or JSON offsets, got {starting!r}"
        ) from None
    if not isinstance(parsed, dict):
        raise ValueError(f"startingOffsets JSON must be an object, got {starting!r}")
    return {t: {str(p): int(o) for p, o in ps.items()} for t, ps in parsed.items()}


def plan_start(
    source: str,
    committed: Offsets | None,
    earliest: Offsets,
    latest: Offsets,
    starting: str = "earliest",
) -> Offsets:
    """The start offset of every partition of ``earliest``/``latest`` (module docstring), plus
    the high-water mark's partitions no longer read (kept, so they are not forgotten).

    Raises:
        KafkaDataLossError: a start outside the partition's available range.
        ValueError: a ``startingOffsets`` that is not earliest, latest or JSON.
    """
    spec = _starting(starting) if committed is None else None
    out: Offsets = {t: dict(ps) for t, ps in (committed or {}).items()}
    for topic, parts in earliest.items():
        for p, low in parts.items():
            high = latest[topic][p]
            start: int | None = (committed or {}).get(topic, {}).get(p)
            if start is None:
                start = low
                if spec == "latest":
                    start = high
                elif isinstance(spec, dict) and p in spec.get(topic, {}):
                    given = spec[topic][p]
                    start = high if given == -1 else low if given == -2 else given
            if start < low or start > high:
                raise KafkaDataLossError(source, topic, int(p), start, low, high)
            out.setdefault(topic, {})[p] = start
    return out


def plan_end(
    start: Offsets,
    latest: Offsets,
    max_offsets: int | None = None,
    uncapped: frozenset[str] = frozenset(),
) -> Offsets:
    """The end offsets of a batch from ``start`` (module docstring): ``latest``, or at most
    ``max_offsets`` records of the capped topics, shared in proportion (each partition with
    records gets at least one)."""
    end: Offsets = {t: dict(ps) for t, ps in start.items()}
    avail = {
        (t, p): max(0, high - start.get(t, {}).get(p, high))
        for t, ps in latest.items()
        for p, high in ps.items()
    }
    capped = {k: n for k, n in avail.items() if k[0] not in uncapped and n}
    total = sum(capped.values())
    for (t, p), n in avail.items():
        take = n
        if max_offsets is not None and (t, p) in capped and total > max_offsets:
            take = max(1, n * max_offsets // total)
        end.setdefault(t, {})[p] = start.get(t, {}).get(p, latest[t][p]) + take
    return end


def cap_topic(end: Offsets, start: Offsets, topic: str, max_records: int) -> Offsets:
    """``end`` with each partition of ``topic`` at most ``max_records`` records after its
    ``start`` (other topics unchanged; a partition ``start`` does not name is left as is)."""
    out = {t: dict(ps) for t, ps in end.items()}
    for p, o in out.get(topic, {}).items():
        first = start.get(topic, {}).get(p)
        if first is not None:
            out[topic][p] = min(o, first + max(0, max_records))
    return out


def has_records(start: Offsets, end: Offsets) -> bool:
    """Whether the range ``start``..``end`` holds any record."""
    return any(o > start.get(t, {}).get(p, o) for t, ps in end.items() for p, o in ps.items())
