"""Compactor settings under Hive's configuration keys.

Precedence: per-request properties (``compact --property``), then table properties with
Hive's ``compactorthreshold.`` prefix (thresholds only, e.g.
``compactorthreshold.hive.compactor.delta.num.threshold=4``), then the environment (the key
upper-cased with dots as underscores and an ``ACIDFLOW_`` prefix, e.g.
``ACIDFLOW_HIVE_COMPACTOR_DELTA_NUM_THRESHOLD=4``, ``ACIDFLOW_COMPACTOR_HEARTBEAT_SECONDS=10``), then Hive's defaults below.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from acidflow.format.packing import DEFAULT_TARGET_FILE_BYTES
from acidflow.maintenance.rewrite import DEFAULT_TARGET_STRIPE_BYTES
from acidflow.maintenance.verify import VERIFY_MODES, VERIFY_WRITER

#: Hive's per-table override prefix (Hive ``Initiator`` / ``COMPACTOR_THRESHOLD_PREFIX``)
THRESHOLD_PREFIX = "compactorthreshold."

#: dataclass field -> Hive configuration key
KEYS = {
    "delta_num_threshold": "hive.compactor.delta.num.threshold",
    "delta_pct_threshold": "hive.compactor.delta.pct.threshold",
    "max_num_delta": "hive.compactor.max.num.delta",
    "aborted_txn_threshold": "hive.compactor.abortedtxn.threshold",
    "failed_compacts_threshold": "hive.compactor.initiator.failed.compacts.threshold",
    "retention_succeeded": "hive.compactor.history.retention.succeeded",
    "retention_failed": "hive.compactor.history.retention.failed",
    "retention_attempted": "hive.compactor.history.retention.attempted",
    "worker_timeout_s": "hive.compactor.worker.timeout",
    "heartbeat_s": "acidflow.compactor.heartbeat.seconds",
    "target_stripe_bytes": "acidflow.compactor.target.stripe.bytes",
    # small files (acidflow.format.packing)
    "small_file_count": "acidflow.compactor.small.file.count",
    "small_file_ratio": "acidflow.compactor.small.file.ratio",
    "target_file_bytes": "acidflow.target.file.bytes",
    "verify": "acidflow.compactor.verify",
}
#: keys a table may override with the ``compactorthreshold.`` prefix
TABLE_OVERRIDABLE = (
    "delta_num_threshold",
    "delta_pct_threshold",
    "max_num_delta",
    "aborted_txn_threshold",
    "failed_compacts_threshold",
    "small_file_count",
    "small_file_ratio",
    "target_file_bytes",
    "verify",
)
#: acidflow's own table-overridable keys, also taken from a table property without the prefix
TABLE_BARE = ("small_file_count", "small_file_ratio", "target_file_bytes", "verify")


@dataclass(frozen=True)
class CompactorConfig:
    """Compactor thresholds and settings (Hive defaults).

    Attributes:
        delta_num_threshold: ``hive.compactor.delta.num.threshold`` (10): more current delta
            directories than this -> minor (major when there is no base).
        delta_pct_threshold: ``hive.compactor.delta.pct.threshold`` (0.1): delta bytes / base
            bytes above this -> major.
        max_num_delta: ``hive.compactor.max.num.delta`` (500): a worker finding more current
            delta directories than this first compacts them in minor slices of at most this
            many, then runs the requested compaction over the result (Hive ``CompactorMR``;
            :mod:`acidflow.maintenance.slices`).
        aborted_txn_threshold: ``hive.compactor.abortedtxn.threshold`` (1000): more aborted
            write ids in the partition than this -> major.
        failed_compacts_threshold: ``hive.compactor.initiator.failed.compacts.threshold`` (2):
            after this many consecutive failures the initiator records "did not initiate".
        retention_succeeded / retention_failed / retention_attempted: history kept per
            partition (3 / 3 / 2, Hive ``hive.compactor.history.retention.*``).
        worker_timeout_s: a working entry whose heartbeat is older goes back to the queue
            (default 300 s like ``hive.txn.timeout``; Hive's ``hive.compactor.worker.timeout``
            is 86400 s but Hive workers do not heartbeat the queue entry).
        heartbeat_s: worker heartbeat period (default 30 s).
        target_stripe_bytes: ``acidflow.compactor.target.stripe.bytes`` (64 MiB): stripe size
            the compacted files aim at.
        small_file_count: ``acidflow.compactor.small.file.count`` (32): more data files than
            this in a partition of an unbucketed table (original files in a bucketed one) ->
            major ("small files").
        small_file_ratio: ``acidflow.compactor.small.file.ratio`` (0.5): more than this
            fraction of the data files under a quarter of ``target_file_bytes`` -> major
            ("small files"), once there are more than ``small_file_count / 4`` files.
        target_file_bytes: ``acidflow.target.file.bytes`` (128 MiB): the size a major
            compaction of an unbucketed table packs its files to; 0 turns packing and the
            small-file rule off (Hive 3.1's one base file per writer id).
        verify: ``acidflow.compactor.verify`` (``writer``): the new side of a major
            compaction's verification from the digests its workers take of the events they
            hand to the ORC writer, each written file checked against its footer; ``readback``
            reads the new base back and digests it (a second full read, for the paranoid).
    """

    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    max_num_delta: int = 500
    aborted_txn_threshold: int = 1000
    failed_compacts_threshold: int = 2
    retention_succeeded: int = 3
    retention_failed: int = 3
    retention_attempted: int = 2
    worker_timeout_s: float = 300.0
    heartbeat_s: float = 30.0
    target_stripe_bytes: int = DEFAULT_TARGET_STRIPE_BYTES
    small_file_count: int = 32
    small_file_ratio: float = 0.5
    target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES
    verify: str = VERIFY_WRITER

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "CompactorConfig":
        """Defaults overridden by ``ACIDFLOW_<HIVE_KEY>`` environment variables.

        Raises:
            ValueError: a value that does not parse as the field's type.
        """
        env = os.environ if env is None else env
        values = {}
        for f in fields(cls):
            var = env_var(KEYS[f.name])
            if var in env:
                values[f.name] = _parse(f.name, env[var])
        return cls(**values)

    def with_properties(
        self, props: Mapping[str, Any], *, table: bool = False
    ) -> "CompactorConfig":
        """A copy with overrides from properties keyed by Hive key. With ``table=True`` only
        ``compactorthreshold.<key>`` entries of the overridable thresholds are used (Hive's
        per-table override rule), and acidflow's own keys (``acidflow.target.file.bytes``,
        ``acidflow.compactor.small.file.*``) also bare, the prefixed form winning; otherwise
        bare keys (request properties).

        Raises:
            ValueError: a value that does not parse.
        """
        changes = {}
        for name, key in KEYS.items():
            if table:
                if name not in TABLE_OVERRIDABLE:
                    continue
                if name in TABLE_BARE and key in props and THRESHOLD_PREFIX + key not in props:
                    changes[name] = _parse(name, props[key])
                    continue
                key = THRESHOLD_PREFIX + key
            if key in props:
                changes[name] = _parse(name, props[key])
        return replace(self, **changes) if changes else self

    def retention(self) -> dict[str, int]:
        """History retention per state for ``Catalog.purge_compaction_history``."""
        return {
            "succeeded": self.retention_succeeded,
            "failed": self.retention_failed,
            "did not initiate": self.retention_attempted,
        }


def env_var(key: str) -> str:
    """Environment variable of a config key: ``hive.compactor.delta.num.threshold`` ->
    ``ACIDFLOW_HIVE_COMPACTOR_DELTA_NUM_THRESHOLD``, ``acidflow.compactor.heartbeat.seconds``
    -> ``ACIDFLOW_COMPACTOR_HEARTBEAT_SECONDS``."""
    var = key.upper().replace(".", "_")
    return var if var.startswith("ACIDFLOW_") else "ACIDFLOW_" + var


def _parse(name: str, value: Any) -> Any:
    kind = {f.name: f.type for f in fields(CompactorConfig)}[name]
    if name == "verify":
        text = str(value).strip().lower()
        if text not in VERIFY_MODES:
            raise ValueError(f"{KEYS[name]}: {value!r} is not one of {', '.join(VERIFY_MODES)}")
        return text
    try:
        if kind in ("int", int):
            return int(str(value).strip())
        return float(str(value).strip())
    except ValueError:
        raise ValueError(f"{KEYS[name]}: cannot parse {value!r}") from None


def no_auto_compaction(props: Mapping[str, str]) -> bool:
    """True when the table property ``no_auto_compaction`` (or ``NO_AUTO_COMPACTION``) is
    ``true`` in any case (Hive ``Initiator.noAutoCompactSet``)."""
    value = props.get("no_auto_compaction", props.get("NO_AUTO_COMPACTION"))
    return value is not None and str(value).strip().lower() == "true"
