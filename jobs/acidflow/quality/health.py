"""Operational health of a catalog: the rules behind ``acidflow health`` and the ``acid_health``
DAG.

Pure rules over what the catalog reports (:meth:`Catalog.list_compactions`,
:meth:`Catalog.list_transactions`) plus replication-slot lags measured by the caller
(:func:`acidflow.sources.postgres.slotlag.slot_lags`); nothing here connects anywhere.
Each rule yields :class:`HealthFinding` objects with a message naming what is stuck, since when
and the threshold it passed:

=========================  ===============================================================
kind                       finding when
=========================  ===============================================================
compaction-initiated       a queue entry is ``initiated`` (not claimed by a worker) for
                           longer than ``initiated_max_s`` (since ``enqueued_at``)
compaction-working         an entry is ``working`` for longer than ``working_max_s``
                           (since ``started_at``)
compactions-failed         at least ``failed_max`` compactions ended ``failed`` within the
                           last ``failed_window_s``
compaction-not-queued      a partition over the initiator's thresholds has had no compaction
                           queued for longer than ``unqueued_max_s`` (since the commit of the
                           delta that made it eligible; measured by the caller with
                           :func:`acidflow.compactor.unqueued.unqueued_partitions`: Hive's
                           initiator has skipped eligible tables, HIVE-26487, HIVE-30026)
txn-timed-out              an ``open`` transaction's last heartbeat is older than the
                           catalog's ``txn_timeout_s`` (Hive ``hive.txn.timeout``): the
                           housekeeper (``AcidHouseKeeperService``) should have aborted it
txn-open-too-long          an ``open`` transaction started more than ``txn_max_age_s`` ago
                           (heartbeating or not: it pins the cleaner and the write set)
slot-lag                   a replication slot's ``confirmed_flush_lsn`` is more than
                           ``slot_lag_max_bytes`` behind ``pg_current_wal_lsn()``
slot-missing               a configured replication slot does not exist
=========================  ===============================================================

Defaults (:class:`HealthThresholds`): the compaction ages follow Hive 4's error levels of the
oldest-initiated / oldest-working compaction metrics (2 h); the failure count is Hive's
``hive.compactor.initiator.failed.compacts.threshold`` (2) over a day; a transaction open for
6 h; 1 GiB of WAL retained behind a slot; an eligible partition unqueued for 1 h (an hourly
initiator has had its run). Each is settable through ``ACIDFLOW_HEALTH_<NAME>``
(:meth:`HealthThresholds.from_env`) or the CLI options.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Protocol, Sequence

from acidflow.catalog import Catalog, CompactionInfo, TxnInfo
from acidflow.catalog.records import CompactionState, TxnState

#: Finding kinds, in report order.
KINDS = (
    "compaction-initiated",
    "compaction-working",
    "compactions-failed",
    "compaction-not-queued",
    "txn-timed-out",
    "txn-open-too-long",
    "slot-lag",
    "slot-missing",
)
ENV_PREFIX = "ACIDFLOW_HEALTH_"


@dataclass(frozen=True)
class HealthThresholds:
    """Limits of the health rules.

    Attributes:
        initiated_max_s: seconds a compaction may stay ``initiated`` (default 7200).
        working_max_s: seconds a compaction may stay ``working`` (default 7200).
        failed_max: failed compactions within ``failed_window_s`` that raise a finding
            (default 2; 0 disables the rule).
        failed_window_s: the window of that count in seconds (default 86400).
        txn_max_age_s: seconds a transaction may stay open (default 21600).
        slot_lag_max_bytes: WAL bytes a replication slot may lag (default 1 GiB).
        unqueued_max_s: seconds a partition may stay eligible for compaction (over the
            initiator's thresholds) with nothing queued for it (default 3600).
    """

    initiated_max_s: float = 7200.0
    working_max_s: float = 7200.0
    failed_max: int = 2
    failed_window_s: float = 86400.0
    txn_max_age_s: float = 21600.0
    slot_lag_max_bytes: int = 1 << 30
    unqueued_max_s: float = 3600.0

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(
                    f"health threshold {f.name} must be >= 0, got {getattr(self, f.name)!r}"
                )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: float | int | None
    ) -> HealthThresholds:
        """Defaults, then ``ACIDFLOW_HEALTH_<FIELD>`` (e.g. ``ACIDFLOW_HEALTH_WORKING_MAX_S``),
        then the non-``None`` ``overrides`` (CLI options).

        Raises:
            ValueError: a value is not a number or is negative (names the variable).
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = ENV_PREFIX + f.name.upper()
            conv = int if f.name in ("failed_max", "slot_lag_max_bytes") else float
            if overrides.get(f.name) is not None:
                values[f.name] = conv(overrides[f.name])  # type: ignore[arg-type]
            elif env.get(key, "").strip():
                try:
                    values[f.name] = conv(env[key])
                except ValueError:
                    raise ValueError(
                        f"{key}={env[key]!r}: expected a {'whole ' if conv is int else ''}number"
                    ) from None
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"unknown health thresholds: {sorted(unknown)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return asdict(self)


@dataclass(frozen=True)
class HealthFinding:
    """One health problem.

    Attributes:
        kind: one of :data:`KINDS`.
        subject: what is affected (``compaction 12``, ``txn 45``, ``slot acidflow``,
            ``compactions``).
        value: the measured age (seconds), count or lag (bytes); threshold: the limit passed.
        message: one sentence naming the subject, table/partition, since when and the limit.
        details: ids and names for machines (JSON-able).
    """

    kind: str
    subject: str
    value: float
    threshold: float
    message: str
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return asdict(self)


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _dur(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} s"
    return f"{s} s"


def _where(c: CompactionInfo) -> str:
    return c.table + (f" partition {c.partition}" if c.partition else "")


def compaction_findings(
    compactions: list[CompactionInfo], thresholds: HealthThresholds, now: datetime
) -> list[HealthFinding]:
    """Stuck (``initiated`` / ``working`` too long) and repeatedly failed compactions.

    Args:
        compactions: queue and history entries (any states).
        now: reference time (aware UTC; naive = UTC).
    """
    now = _utc(now)
    out: list[HealthFinding] = []
    for c in compactions:
        if c.state == CompactionState.INITIATED:
            since, limit, kind = c.enqueued_at, thresholds.initiated_max_s, "compaction-initiated"
            what = "queued and not claimed by a worker"
        elif c.state == CompactionState.WORKING and c.started_at is not None:
            since, limit, kind = c.started_at, thresholds.working_max_s, "compaction-working"
            what = f"working (worker {c.worker_id})"
        else:
            continue
        age = (now - _utc(since)).total_seconds()
        if age > limit:
            out.append(
                HealthFinding(
                    kind,
                    f"compaction {c.id}",
                    age,
                    limit,
                    f"{c.type} compaction {c.id} of {_where(c)} has been {what} for {_dur(age)} "
                    f"(since {_utc(since):%Y-%m-%d %H:%M:%S} UTC; threshold {_dur(limit)})",
                    {
                        "id": c.id,
                        "table": c.table,
                        "partition": c.partition,
                        "state": c.state,
                        "since": _utc(since).isoformat(),
                        "worker_id": c.worker_id,
                    },
                )
            )
    if thresholds.failed_max > 0:
        start = now - timedelta(seconds=thresholds.failed_window_s)
        failed = [
            c
            for c in compactions
            if c.state == CompactionState.FAILED
            and c.ended_at is not None
            and _utc(c.ended_at) >= start
        ]
        if len(failed) >= thresholds.failed_max:
            listed = "; ".join(
                f"{c.id} {_where(c)}: {(c.error or '').splitlines()[0][:120]}"
                if c.error
                else f"{c.id} {_where(c)}"
                for c in failed[-5:]
            )
            out.append(
                HealthFinding(
                    "compactions-failed",
                    "compactions",
                    len(failed),
                    thresholds.failed_max,
                    f"{len(failed)} compactions failed in the last {_dur(thresholds.failed_window_s)}"
                    f" (threshold {thresholds.failed_max}): {listed}",
                    {"ids": [c.id for c in failed], "tables": sorted({c.table for c in failed})},
                )
            )
    return out


class UnqueuedLike(Protocol):
    """What :func:`unqueued_findings` reads of a partition the initiator would queue
    (:class:`acidflow.compactor.unqueued.UnqueuedPartition`)."""

    @property
    def table(self) -> str: ...
    @property
    def partition(self) -> str | None: ...
    @property
    def compaction_type(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def deltas(self) -> int: ...
    @property
    def delete_deltas(self) -> int: ...
    @property
    def eligible_write_id(self) -> int | None: ...
    @property
    def eligible_since(self) -> datetime | None: ...


def unqueued_findings(
    partitions: Sequence[UnqueuedLike], thresholds: HealthThresholds, now: datetime
) -> list[HealthFinding]:
    """Partitions over the initiator's thresholds with nothing queued for longer than
    ``unqueued_max_s`` (one finding each; a partition whose start is unknown raises none).

    Args:
        partitions: eligible partitions with no ``initiated`` / ``working`` entry
            (:func:`acidflow.compactor.unqueued.unqueued_partitions`).
        now: reference time (aware UTC; naive = UTC).
    """
    now = _utc(now)
    out: list[HealthFinding] = []
    limit = thresholds.unqueued_max_s
    for p in partitions:
        if p.eligible_since is None:
            continue
        since = _utc(p.eligible_since)
        age = (now - since).total_seconds()
        if age <= limit:
            continue
        where = p.table + (f" partition {p.partition}" if p.partition else "")
        out.append(
            HealthFinding(
                "compaction-not-queued",
                where,
                age,
                limit,
                f"{where} has {p.deltas} deltas and {p.delete_deltas} delete deltas and has been "
                f"eligible for a {p.compaction_type} compaction for {_dur(age)} (since "
                f"{since:%Y-%m-%d %H:%M:%S} UTC, write id {p.eligible_write_id}; {p.reason}) "
                f"with nothing queued (threshold {_dur(limit)}): is the initiator running "
                "(`acidflow initiate`, the compaction DAG)?",
                {
                    "table": p.table,
                    "partition": p.partition,
                    "type": p.compaction_type,
                    "reason": p.reason,
                    "deltas": p.deltas,
                    "delete_deltas": p.delete_deltas,
                    "eligible_write_id": p.eligible_write_id,
                    "since": since.isoformat(),
                },
            )
        )
    return out


def transaction_findings(
    open_txns: list[TxnInfo], thresholds: HealthThresholds, txn_timeout_s: float, now: datetime
) -> list[HealthFinding]:
    """Open transactions past the heartbeat timeout or open too long (one finding per
    transaction, the timeout rule first).

    Args:
        open_txns: transactions (states other than ``open`` are ignored).
        txn_timeout_s: the catalog's heartbeat timeout (Hive ``hive.txn.timeout``).
        now: reference time (aware UTC; naive = UTC).
    """
    now = _utc(now)
    out: list[HealthFinding] = []
    for t in open_txns:
        if t.state != TxnState.OPEN:
            continue
        who = f"{t.user or '?'}@{t.host or '?'}" + (f" ({t.agent_info})" if t.agent_info else "")
        tables = ", ".join(sorted(t.write_ids)) or "no table yet"
        details = {
            "txn_id": t.txn_id,
            "tables": sorted(t.write_ids),
            "started_at": _utc(t.started_at).isoformat(),
            "last_heartbeat": _utc(t.last_heartbeat).isoformat(),
        }
        silent = (now - _utc(t.last_heartbeat)).total_seconds()
        age = (now - _utc(t.started_at)).total_seconds()
        if silent > txn_timeout_s:
            out.append(
                HealthFinding(
                    "txn-timed-out",
                    f"txn {t.txn_id}",
                    silent,
                    txn_timeout_s,
                    f"transaction {t.txn_id} of {who} on {tables} is open with no heartbeat for "
                    f"{_dur(silent)}, past the timeout of {_dur(txn_timeout_s)}: the housekeeper "
                    "has not aborted it (is `acidflow clean` / the compactor DAG running?)",
                    details,
                )
            )
        elif age > thresholds.txn_max_age_s:
            out.append(
                HealthFinding(
                    "txn-open-too-long",
                    f"txn {t.txn_id}",
                    age,
                    thresholds.txn_max_age_s,
                    f"transaction {t.txn_id} of {who} on {tables} has been open for {_dur(age)} "
                    f"(since {_utc(t.started_at):%Y-%m-%d %H:%M:%S} UTC; threshold "
                    f"{_dur(thresholds.txn_max_age_s)}); it holds back the cleaner",
                    details,
                )
            )
    return out


def slot_findings(
    slot_lag: Mapping[str, int | None], thresholds: HealthThresholds
) -> list[HealthFinding]:
    """Replication slots lagging by more than ``slot_lag_max_bytes``, or missing.

    Args:
        slot_lag: slot name -> WAL bytes between ``pg_current_wal_lsn()`` and the slot's
            ``confirmed_flush_lsn`` (``None``: the slot does not exist).
    """
    out: list[HealthFinding] = []
    for slot, lag in sorted(slot_lag.items()):
        if lag is None:
            out.append(
                HealthFinding(
                    "slot-missing",
                    f"slot {slot}",
                    0,
                    0,
                    f"replication slot {slot!r} does not exist: CDC cannot pull "
                    "(create it with `acidflow cdc pull --create-slot`)",
                    {"slot": slot},
                )
            )
        elif lag > thresholds.slot_lag_max_bytes:
            out.append(
                HealthFinding(
                    "slot-lag",
                    f"slot {slot}",
                    lag,
                    thresholds.slot_lag_max_bytes,
                    f"replication slot {slot!r} lags {lag / 2**20:.1f} MiB of WAL behind the "
                    f"server (threshold {thresholds.slot_lag_max_bytes / 2**20:.1f} MiB): the pull "
                    "is not keeping up and PostgreSQL retains the WAL",
                    {"slot": slot, "bytes": lag},
                )
            )
    return out


def check_health(
    catalog: Catalog,
    thresholds: HealthThresholds | None = None,
    now: datetime | None = None,
    *,
    slot_lag: Mapping[str, int | None] | None = None,
    unqueued: Sequence[UnqueuedLike] | None = None,
) -> list[HealthFinding]:
    """Every rule of this module against ``catalog``.

    Args:
        catalog: any backend (reads the compaction queue/history and open transactions).
        thresholds: limits (default :class:`HealthThresholds` ()).
        now: reference time (aware UTC; naive = UTC); default the current time.
        slot_lag: measured slot lags (slot -> bytes, ``None`` = missing); omitted when no
            PostgreSQL source is configured.
        unqueued: eligible partitions with nothing queued (measured by the caller,
            :func:`acidflow.compactor.unqueued.unqueued_partitions`); omitted: rule not run.
    Returns:
        Findings ordered by :data:`KINDS`; empty when healthy.
    """
    th = thresholds or HealthThresholds()
    at = _utc(now) if now is not None else datetime.now(timezone.utc)
    found = compaction_findings(catalog.list_compactions(), th, at)
    found += transaction_findings(
        catalog.list_transactions([TxnState.OPEN]), th, float(catalog.txn_timeout_s), at
    )
    found += unqueued_findings(unqueued or (), th, at)
    found += slot_findings(slot_lag or {}, th)
    return sorted(found, key=lambda f: KINDS.index(f.kind))
