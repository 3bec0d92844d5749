"""The rules that link acidflow's compaction queue with the Hive metastore's (pure; no I/O).

Hive 3.1 keeps its compaction queue in the metastore's database (``COMPACTION_QUEUE``, then
``COMPLETED_COMPACTIONS``; ``TxnHandler.compact`` / ``showCompact`` and
``CompactionTxnHandler``). Its states are one letter in ``CQ_STATE`` and words in
``show_compact``; its types are ``CQ_TYPE`` 'a' (major) / 'i' (minor) and the thrift
``CompactionType`` MAJOR=2 / MINOR=1. The SQL against those tables is
:mod:`acidflow.catalog.hms.hivequeue`; the catalog's moves are
:mod:`acidflow.catalog.hms.queuelink`; docs/hms-catalog.md ("Compaction") has the design.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from acidflow.catalog.records import CompactionState, CompactionType

__all__ = [
    "HIVE_STATE",
    "HIVE_STATE_WORDS",
    "HiveQueueEntry",
    "from_show_compact",
    "hive_job_id",
    "hive_type",
    "hive_type_code",
    "requests_to_adopt",
    "waiting_reason",
]

#: acidflow's state -> Hive's ``CQ_STATE`` / ``CC_STATE`` letter (``TxnStore``: INITIATED_STATE
#: 'i', WORKING_STATE 'w', READY_FOR_CLEANING 'r', FAILED_STATE 'f', SUCCEEDED_STATE 's',
#: ATTEMPTED_STATE 'a'; acidflow's ``refused`` is a failure to Hive).
HIVE_STATE: dict[str, str] = {
    CompactionState.INITIATED: "i",
    CompactionState.WORKING: "w",
    CompactionState.READY_FOR_CLEANING: "r",
    CompactionState.SUCCEEDED: "s",
    CompactionState.FAILED: "f",
    CompactionState.REFUSED: "f",
    CompactionState.DID_NOT_INITIATE: "a",
}

#: Hive's ``show_compact`` state words (``TxnHandler.compactorStateToResponse``) -> acidflow's.
HIVE_STATE_WORDS: dict[str, str] = {
    "initiated": CompactionState.INITIATED,
    "working": CompactionState.WORKING,
    "ready for cleaning": CompactionState.READY_FOR_CLEANING,
    "succeeded": CompactionState.SUCCEEDED,
    "failed": CompactionState.FAILED,
    "attempted": CompactionState.DID_NOT_INITIATE,
}

#: thrift ``CompactionType`` values (hive_metastore.thrift: MINOR = 1, MAJOR = 2).
_THRIFT_TYPE = {CompactionType.MINOR: 1, CompactionType.MAJOR: 2}
#: ``CQ_TYPE`` letters (``TxnHandler``: MAJOR_TYPE 'a', MINOR_TYPE 'i').
_TYPE_CODE = {CompactionType.MAJOR: "a", CompactionType.MINOR: "i"}


@dataclass(frozen=True)
class HiveQueueEntry:
    """One entry of the metastore's compaction queue as ``show_compact`` lists it.

    Attributes:
        metastore_cq_id: Hive's ``CQ_ID``.
        table: ``db.table``; partition: Hive's partition name (``ds=1/h=2``) or ``None``.
        type: ``"major"`` / ``"minor"``.
        state: acidflow's word for Hive's state (:data:`HIVE_STATE_WORDS`; an unknown word is
            kept as Hive wrote it).
        run_as: the user the request runs as (``CQ_RUN_AS``), ``None`` when unset.
    """

    metastore_cq_id: int
    table: str
    partition: str | None
    type: str
    state: str
    run_as: str | None


def hive_type(compaction_type: str) -> int:
    """The thrift ``CompactionType`` value of a compaction type (``compact2``'s request).

    Raises:
        ValueError: not ``"major"`` / ``"minor"``.
    """
    try:
        return _THRIFT_TYPE[CompactionType(compaction_type)]
    except ValueError:
        raise ValueError(f"unknown compaction type {compaction_type!r}") from None


def hive_type_code(compaction_type: str) -> str:
    """The ``CQ_TYPE`` / ``CC_TYPE`` letter of a compaction type ('a' major, 'i' minor)."""
    return _TYPE_CODE[CompactionType(compaction_type)]


def from_show_compact(element: Any) -> HiveQueueEntry:
    """A ``ShowCompactResponseElement`` (``dbname``, ``tablename``, ``partitionname``,
    ``type``, ``state``, ``runAs``, ``id``) as a :class:`HiveQueueEntry`. Hive 3.1 answers in
    lower case names and its state words; the type is the thrift enum value (1 minor, 2
    major)."""
    kind = CompactionType.MAJOR if element.type == 2 else CompactionType.MINOR
    return HiveQueueEntry(
        metastore_cq_id=int(element.id),
        table=f"{element.dbname}.{element.tablename}".lower(),
        partition=element.partitionname or None,
        type=kind,
        state=HIVE_STATE_WORDS.get(element.state, element.state),
        run_as=element.runAs or None,
    )


def requests_to_adopt(entries: Iterable[HiveQueueEntry], linked: set[int]) -> list[HiveQueueEntry]:
    """The metastore's entries acidflow's worker should run: ``initiated`` ones no side entry
    is linked to yet (acidflow's own are linked when ``compact2`` answers), oldest ``CQ_ID``
    first (Hive 3.1's ``findNextToCompact`` takes any ``initiated`` entry; acidflow keeps the
    order users queued them in).

    Args:
        entries: the metastore's queue (``show_compact``).
        linked: the ``CQ_ID`` values side entries are linked to.
    """
    return sorted(
        (
            e
            for e in entries
            if e.state == CompactionState.INITIATED and e.metastore_cq_id not in linked
        ),
        key=lambda e: e.metastore_cq_id,
    )


def waiting_reason(entry: HiveQueueEntry, why: str) -> str:
    """The sentence that reports a Hive request acidflow does not run (yet), naming the entry
    and why (e.g. no ``metastore_db`` configured, the table is not one acidflow can compact)."""
    where = entry.table + (f" partition {entry.partition}" if entry.partition else "")
    who = f", run as {entry.run_as}" if entry.run_as else ""
    return (
        f"Hive compaction request CQ_ID {entry.metastore_cq_id} ({entry.type} of {where}{who}) "
        f"waits: {why}"
    )


def hive_job_id(cq_id: int) -> str:
    """What acidflow writes into ``CQ_HADOOP_JOB_ID`` (``SHOW COMPACTIONS``' "Hadoop Job ID"
    column, varchar(32)): ``acidflow-<side id>``, the link back to acidflow's entry."""
    return f"acidflow-{cq_id}"[:32]
