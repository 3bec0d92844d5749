"""Quarantine: bad records are written, never dropped (shared by the CDC job and batch ingest).

One JSON-lines file per batch under ``<warehouse>/_quarantine/<kind>/<batch>.jsonl`` with one
object per bad record::

    {"batch_id": ..., "source": "<file>:<line> [lsn X/Y]", "table": "schema.table" | null,
     "reason": "...", "raw": "<the record as read>", "quarantined_at": "<UTC ISO time>"}

The file is written before the batch's transaction commits (a rerun after an abort rewrites
it), so every committed batch's bad records are on disk. A batch whose share of bad records
exceeds the threshold (default 1 %) is refused: :class:`QuarantineThresholdError`.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from acidflow.acid.fs import TableFS, join
from acidflow.sources.records import BadRecord

DEFAULT_THRESHOLD = 0.01


class QuarantineThresholdError(RuntimeError):
    """Too many bad records in one batch; the batch was not applied.

    Attributes:
        batch_id, bad, total, threshold, path: the batch, its bad and total record counts, the
            threshold (fraction) and the quarantine file holding the bad records.
    """

    def __init__(self, batch_id: str, bad: int, total: int, threshold: float, path: str,
                 first_reason: str) -> None:
        self.batch_id, self.bad, self.total = batch_id, bad, total
        self.threshold, self.path = threshold, path
        super().__init__(
            f"batch {batch_id}: {bad} of {total} records are bad ({bad / max(total, 1):.2%} > "
            f"threshold {threshold:.2%}); nothing was applied. First reason: {first_reason}. "
            f"Bad records: {path}")


def quarantine_path(warehouse: str, kind: str, batch_id: str) -> str:
    """``<warehouse>/_quarantine/<kind>/<batch id made file-safe>.jsonl``."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", batch_id)
    return join(warehouse, "_quarantine", kind, f"{safe}.jsonl")


def write_quarantine(warehouse: str, kind: str, batch_id: str, bad: list[BadRecord]) -> str | None:
    """Write the batch's bad records (see module docstring); returns the path, or None when
    there are none."""
    if not bad:
        return None
    path = quarantine_path(warehouse, kind, batch_id)
    now = datetime.now(timezone.utc).isoformat()
    text = "".join(json.dumps({"batch_id": batch_id, "source": b.source, "table": b.table,
                               "reason": b.reason, "raw": b.raw, "quarantined_at": now},
                              sort_keys=True) + "\n" for b in bad)
    tfs = TableFS(warehouse)
    tfs.makedirs(join(warehouse, "_quarantine", kind))
    tmp = path + ".tmp"
    tfs.write_bytes(tmp, text.encode("utf-8"))
    tfs.rename(tmp, path)
    return path


def check_threshold(batch_id: str, bad: list[BadRecord], total: int, threshold: float,
                    path: str | None) -> None:
    """Raise :class:`QuarantineThresholdError` when ``len(bad) / total > threshold``."""
    if bad and total and len(bad) / total > threshold:
        raise QuarantineThresholdError(batch_id, len(bad), total, threshold, path or "",
                                       bad[0].reason)
