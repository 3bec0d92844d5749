"""Findings of the table checks (fsck, ACID invariants, validation): one problem each, with a
severity.

``severity`` is :data:`ERROR` (the table breaks a rule Hive's readers rely on: validation fails),
:data:`WARNING` (leftovers that do no harm to readers, such as orphans of a killed worker) or
:data:`INFO` (state awaiting the cleaner: aborted or obsolete directories). The compactor's
``fsck`` and ``acidflow.quality.invariants`` both report in this shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass(frozen=True)
class Finding:
    """One finding: ``partition`` ('' = table root), ``kind``, ``severity``, ``path``
    (relative to the partition), ``detail``."""

    partition: str
    kind: str
    severity: str
    path: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return asdict(self)
