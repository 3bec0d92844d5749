"""Schema versions of a table (schema evolution), backend-neutral.

A table's schema history is a list of :class:`SchemaVersion` s, each valid from the write id of
the transaction that made the change (0 = the schema before the first recorded change). A reader
holding a ValidWriteIdList uses the newest version whose write id it sees (:func:`pick_version`):
a change becomes visible exactly when its transaction commits, an aborted change never, and a
time-travel read (``as_of_write_id``) gets the schema of its time. This is Hive's "schema of the
snapshot" idea; Hive itself keeps only the current schema and reads every file through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acidflow.catalog.tabledef import Column
from acidflow.format.writeids import ValidWriteIdList

__all__ = [
    "SchemaVersion",
    "pick_version",
    "columns_to_json",
    "columns_from_json",
    "renames_of",
    "rewrites",
]


@dataclass(frozen=True)
class SchemaVersion:
    """One schema version.

    Attributes:
        table: ``db.table``.
        write_id: first write id the version applies to (0 = before the first change).
        txn_id: the transaction that made the change (``None`` for version 0).
        columns: the data columns in file order.
        change: what was done, e.g. ``{"op": "rename_column", "column": "a", "to": "b"}``.
        recorded_at: UTC time the change was recorded.
    """

    table: str
    write_id: int
    txn_id: int | None
    columns: list[Column] = field(default_factory=list)
    change: dict[str, Any] = field(default_factory=dict)
    recorded_at: datetime | None = None


def columns_to_json(columns: Sequence[Column]) -> list[dict[str, Any]]:
    """``[{"name", "type", "comment"}]`` for storage."""
    return [{"name": c.name, "type": c.hive_type, "comment": c.comment} for c in columns]


def columns_from_json(data: Sequence[dict[str, Any]]) -> list[Column]:
    """Inverse of :func:`columns_to_json`."""
    return [Column(d["name"], d["type"], d.get("comment")) for d in data]


def pick_version(history: Sequence[SchemaVersion], valid: ValidWriteIdList) -> SchemaVersion | None:
    """The newest version of ``history`` (ascending by write id) whose write id ``valid``
    sees (version 0 always); ``None`` when ``history`` is empty."""
    best = None
    for v in history:
        if v.write_id == 0 or valid.is_write_id_valid(v.write_id):
            if best is None or v.write_id > best.write_id:
                best = v
    return best


def _steps(change: dict[str, Any]) -> list[dict[str, Any]]:
    """The single changes of a version (several changes in one transaction are stored as
    ``{"op": "multiple", "steps": [...]}``)."""
    steps = change.get("steps")
    return [dict(c) for c in steps] if isinstance(steps, list) else [change]


def renames_of(version: SchemaVersion) -> dict[str, str]:
    """``{old name: new name}`` of every rename a version made, composed in order over its
    steps (``a -> b`` then ``b -> c`` gives ``a -> c``)."""
    out: dict[str, str] = {}
    for step in _steps(version.change):
        renames = {str(k): str(v) for k, v in (step.get("renames") or {}).items()}
        tracked = set(out.values())  # names that already stand for an earlier name
        out = {old: renames.get(now, now) for old, now in out.items()}
        out.update({k: v for k, v in renames.items() if k not in tracked})
    return out


def rewrites(version: SchemaVersion) -> bool:
    """Whether a version moved data positions (drop/reorder with ``rewrite``): files written
    for the columns before it cannot be read with it. A ``revert`` (of an aborted change)
    puts back the layout committed files already have, so it moves nothing."""
    return any(
        step.get("rewrite") and step.get("op") != "revert" for step in _steps(version.change)
    )
