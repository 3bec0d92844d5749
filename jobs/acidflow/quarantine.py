"""Quarantine: bad records are written, never dropped (shared by the CDC job and batch ingest).

One JSON-lines file per batch under ``<warehouse>/_quarantine/<kind>/<batch>.jsonl`` with one
object per bad record::

    {"batch_id": ..., "source": "<file>:<line> [lsn X/Y]", "table": "schema.table" | null,
     "reason": "...", "raw": "<the record as read>", "quarantined_at": "<UTC ISO time>"}

The file is written before the batch's transaction commits (a rerun after an abort rewrites
it), so every committed batch's bad records are on disk. It appears whole or not at all
(``TableFS.put_atomic``: a temporary file and a rename on local disk, one ``PutObject`` on S3). A batch whose share of bad records
exceeds the threshold (default 1 %) is refused: :class:`QuarantineThresholdError`.
:func:`quarantined_counts` reads the records back (the ``acidflow.quarantine.records`` metric).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import datetime, timezone

from acidflow.errors import AcidflowError
from acidflow.sources.records import BadRecord
from acidflow.storage.fs import TableFS, join

DEFAULT_THRESHOLD = 0.01


class QuarantineThresholdError(AcidflowError, RuntimeError):
    """Too many bad records in one batch; the batch was not applied.

    Attributes:
        batch_id, bad, total, threshold, path: the batch, its bad and total record counts, the
            threshold (fraction) and the quarantine file holding the bad records.
    """

    def __init__(
        self,
        batch_id: str,
        bad: int,
        total: int,
        threshold: float,
        path: str,
        first_reason: str,
        source: str | None = None,
    ) -> None:
        self.batch_id, self.bad, self.total = batch_id, bad, total
        self.threshold, self.path, self.source = threshold, path, source
        of = f" ({source})" if source else ""
        super().__init__(
            f"batch {batch_id}{of}: {bad} of {total} records are bad ({bad / max(total, 1):.2%} > "
            f"threshold {threshold:.2%}); nothing was applied. First reason: {first_reason}. "
            f"Bad records: {path}"
        )


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
    text = "".join(
        json.dumps(
            {
                "batch_id": batch_id,
                "source": b.source,
                "table": b.table,
                "reason": b.reason,
                "raw": b.raw,
                "quarantined_at": now,
            },
            sort_keys=True,
        )
        + "\n"
        for b in bad
    )
    tfs = TableFS(warehouse)
    tfs.makedirs(join(warehouse, "_quarantine", kind))
    tfs.put_atomic(path, text.encode("utf-8"))  # whole or nothing, also on S3 (one PUT)
    return path


def quarantined_counts(warehouse: str) -> dict[tuple[str, str], int]:
    """Bad records kept under ``<warehouse>/_quarantine/<kind>/*.jsonl`` (module docstring),
    counted per kind and table. Whole input files set aside by :func:`quarantine_input_file`
    (``files/``) are not records and are not counted; a line that is not a JSON object counts
    with table ``""``.

    Args:
        warehouse: the warehouse root (local path or fsspec URL).
    Returns:
        ``{(kind, table): records}``: kind is the folder (``"cdc"``, ``"ingest"``), table the
        record's ``db.table`` or ``""`` when it names none; empty without a quarantine.
    Raises:
        OSError: a quarantine file cannot be read.
    """
    tfs = TableFS(warehouse)
    root = join(warehouse, "_quarantine")
    counts: Counter[tuple[str, str]] = Counter()
    for kind, is_dir in tfs.list_dir(root):
        if not is_dir:
            continue
        folder = join(root, kind)
        for name, sub_dir in tfs.list_dir(folder):
            if sub_dir or not name.endswith(".jsonl"):
                continue
            for line in tfs.read_bytes(join(folder, name)).decode("utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    record = None
                table = record.get("table") if isinstance(record, dict) else None
                counts[(kind, str(table or ""))] += 1
    return dict(counts)


def check_threshold(
    batch_id: str,
    bad: list[BadRecord],
    total: int,
    threshold: float,
    path: str | None,
    source: str | None = None,
) -> None:
    """Raise :class:`QuarantineThresholdError` when ``len(bad) / total > threshold``
    (``source``: the input file, named in the message)."""
    if bad and total and len(bad) / total > threshold:
        raise QuarantineThresholdError(
            batch_id, len(bad), total, threshold, path or "", bad[0].reason, source
        )


def quarantine_input_file(
    warehouse: str, kind: str, path: str, reason: str, now: datetime | None = None
) -> tuple[str, str]:
    """Set a whole input file aside, deliberately: move it to
    ``<warehouse>/_quarantine/<kind>/files/<UTC time>_<name>`` and write next to it
    ``<that>.json`` = ``{"file": <original path>, "quarantined_as", "reason", "quarantined_at",
    "size" (bytes), "sha256"}``. The file leaves its landing directory, so the next run goes on
    with the later files (``acidflow cdc quarantine-file``).

    Args:
        path: the file (local path or fsspec URL); reason: why, recorded verbatim (non-empty).
    Returns:
        ``(new path of the file, path of its JSON record)``.
    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: empty reason.
    """
    if not reason.strip():
        raise ValueError("a reason is required to quarantine a file")
    src_fs = TableFS(path)
    if not src_fs.exists(path) or src_fs.isdir(path):
        raise FileNotFoundError(f"no such file to quarantine: {path}")
    data = src_fs.read_bytes(path)
    when = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", path.rstrip("/").rsplit("/", 1)[-1])
    folder = join(warehouse, "_quarantine", kind, "files")
    dest = join(folder, f"{when:%Y%m%dT%H%M%S%fZ}_{name}")
    tfs = TableFS(warehouse)
    tfs.makedirs(folder)
    tfs.put_atomic(dest, data)
    record = {
        "file": path,
        "quarantined_as": dest,
        "reason": reason,
        "quarantined_at": when.isoformat(),
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    tfs.write_bytes(dest + ".json", (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))
    src_fs.delete(path)
    return dest, dest + ".json"
