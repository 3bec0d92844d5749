"""The warehouse a catalog writes into: its owner marker and table locations (backend-neutral).

Ownership. Write ids are handed out by one catalog; two catalogs on one
warehouse (a typo in ``ACIDFLOW_CATALOG_URL``, a second Airflow deployment) would both hand out
write id 1 and write ``delta_0000001_0000001_0000`` over each other. So the warehouse root holds
``_acidflow_warehouse.json`` - the owning catalog's id, its masked URL and the creation time -
written once, with exclusive creation, by the first catalog that writes there. Before it writes
(table create, a write statement's write id, a compaction) a catalog calls
:func:`check_owner`: no marker -> it writes one; its own id -> fine; another id ->
:class:`~acidflow.catalog.errors.WarehouseOwnedError`. Reads are not checked. The answer is
cached per process.

Locations. :func:`resolve_location` makes a table location absolute
against the warehouse: relative locations are relative to the warehouse (never to the
process's working directory), ``..`` may not leave the warehouse, and an absolute path or URL
outside it needs ``external`` (the table property ``acidflow.external=true``; Hive's
``EXTERNAL=TRUE`` means a non-managed table, which a transactional table cannot be, so the
name is not used).
"""

from __future__ import annotations

import json
import posixpath
import threading
import time
from datetime import datetime, timezone

from acidflow.catalog.errors import TableLocationError, WarehouseOwnedError
from acidflow.catalog.tabledef import EXTERNAL_PROPERTY
from acidflow.storage.fs import TableFS, join

#: the owner marker's name at the warehouse root (``_``: hidden from ACID listings)
WAREHOUSE_MARKER = "_acidflow_warehouse.json"
__all__ = [
    "WAREHOUSE_MARKER",
    "EXTERNAL_PROPERTY",
    "check_owner",
    "read_marker",
    "resolve_location",
    "is_inside",
    "warehouse_root",
    "forget_checks",
]

_checked: set[tuple[str, str]] = set()
_lock = threading.Lock()


def _split(location: str) -> tuple[str, str]:
    """``"s3://b/wh/x"`` -> ``("s3://", "/b/wh/x")``; ``"file:///wh"`` and ``"/wh"`` ->
    ``("", "/wh")`` (the path part normalised, no trailing slash)."""
    loc = location.strip()
    if loc.startswith("file://"):
        loc = loc[len("file://") :]
    prefix = ""
    if "://" in loc:
        scheme, rest = loc.split("://", 1)
        prefix, loc = f"{scheme.lower()}://", "/" + rest
    path = posixpath.normpath(loc) if loc else "/"
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return prefix, path


def _join(prefix: str, path: str) -> str:
    return f"{prefix}{path.lstrip('/')}" if prefix else path


def warehouse_root(warehouse: str) -> str:
    """The warehouse as the catalog stores and compares it: a local path made absolute
    (``file://`` removed) or a URL, normalised, without a trailing slash."""
    wh = warehouse.strip()
    if "://" not in wh or wh.startswith("file://"):
        prefix, path = _split(wh)
        return (
            posixpath.normpath(posixpath.join(posixpath.abspath("."), path))
            if not path.startswith("/")
            else path
        )
    prefix, path = _split(wh)
    return _join(prefix, path)


def is_inside(location: str, warehouse: str) -> bool:
    """True when ``location`` is the warehouse or below it (same scheme, normalised paths)."""
    lp, lpath = _split(location)
    wp, wpath = _split(warehouse_root(warehouse))
    if lp != wp:
        return False
    return lpath == wpath or lpath.startswith(wpath.rstrip("/") + "/")


def resolve_location(table: str, location: str, warehouse: str, *, external: bool = False) -> str:
    """The absolute location of ``table`` for a location given in a tables YAML or a
    ``TableDef``.

    Args:
        table: ``db.table`` (for messages).
        location: ``""`` (the caller's default), a path relative to the warehouse, an absolute
            path or a URL.
        warehouse: the warehouse root (local path or URL).
        external: the table may live outside the warehouse (``external: true``).
    Returns:
        ``""`` for an empty location; else a normalised absolute path or URL.
    Raises:
        TableLocationError: a relative location that leaves the warehouse with ``..``, or an
            absolute one outside the warehouse without ``external``.
    """
    loc = (location or "").strip()
    if not loc:
        return ""
    root = warehouse_root(warehouse)
    if "://" not in loc and not loc.startswith("/"):
        rel = posixpath.normpath(loc)
        if rel == ".." or rel.startswith("../") or rel == ".":
            raise TableLocationError(
                table,
                location,
                root,
                "leaves the warehouse (relative locations are relative "
                "to the warehouse and may not climb out of it with '..')"
                if rel != "."
                else "is the warehouse root itself",
            )
        wp, wpath = _split(root)
        return _join(wp, posixpath.join(wpath, rel))
    prefix, path = _split(loc)
    resolved = _join(prefix, path)
    if is_inside(resolved, root):
        if resolved.rstrip("/") == root.rstrip("/"):
            raise TableLocationError(table, location, root, "is the warehouse root itself")
        return resolved
    if external:
        return resolved
    raise TableLocationError(
        table,
        location,
        root,
        "is outside the warehouse; set `external: true` in the tables "
        "YAML (TableDef(external=True)) to keep a table there",
    )


def read_marker(warehouse: str) -> dict[str, str] | None:
    """The warehouse's owner marker as a dict (``catalog_id``, ``catalog_url``,
    ``created_at``), ``None`` when there is none."""
    tfs = TableFS(warehouse)
    path = join(warehouse, WAREHOUSE_MARKER)
    for _ in range(50):  # a marker being created elsewhere can be empty for an instant
        try:
            data = tfs.read_bytes(path)
        except FileNotFoundError:
            return None
        try:
            value = json.loads(data)
        except ValueError:
            time.sleep(0.02)
            continue
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        break
    return {"catalog_id": "<unreadable marker>", "catalog_url": "?"}


def check_owner(warehouse: str, catalog_id: str, catalog_url: str) -> None:
    """Make sure this catalog owns ``warehouse`` before it writes there: write the owner
    marker if there is none (exclusive create: of two catalogs racing, one wins), accept
    our own, refuse another's. Cached per process for (warehouse, catalog id).

    Args:
        warehouse: the warehouse root. catalog_id: this catalog's id. catalog_url: its URL,
            password masked.
    Raises:
        WarehouseOwnedError: the marker names another catalog.
    """
    root = warehouse_root(warehouse)
    key = (root, catalog_id)
    with _lock:
        if key in _checked:
            return
    tfs = TableFS(root)
    marker = json.dumps(
        {
            "catalog_id": catalog_id,
            "catalog_url": catalog_url,
            "created_at": datetime.now(timezone.utc).isoformat(),
        },
        sort_keys=True,
    ).encode()
    try:
        tfs.create_exclusive(join(root, WAREHOUSE_MARKER), marker)
    except FileExistsError:
        owner = read_marker(root) or {}
        if owner.get("catalog_id") != catalog_id:
            raise WarehouseOwnedError(
                root,
                owner.get("catalog_id", "?"),
                owner.get("catalog_url", "?"),
                catalog_id,
                catalog_url,
            ) from None
    with _lock:
        _checked.add(key)


def forget_checks() -> None:
    """Drop the per-process cache of :func:`check_owner` (tests, tools that move markers)."""
    with _lock:
        _checked.clear()
