"""Where a table's partitions live: the partition directories found under its location, and
one partition's directory. Listing only (``TableFS``); the ACID state of each directory is
:mod:`acidflow.storage.state`'s.
"""

from __future__ import annotations

from acidflow.format import partitions as parts
from acidflow.format.layout import DirEntry, is_hidden
from acidflow.format.table import TableDesc
from acidflow.storage.fs import TableFS, join


def split_partitions(entries: list[DirEntry], depth: int) -> dict[str, list[DirEntry]]:
    """Group a recursive table listing by partition directory.

    Args:
        entries: recursive listing of the table root.
        depth: number of partition columns (0 = unpartitioned: one group keyed '').
    Returns:
        ``{partition_path: entries relative to that partition}``; directories that are not
        ``key=value`` at every level, and hidden ones, are ignored.
    """
    if depth == 0:
        return {"": list(entries)}
    out: dict[str, list[DirEntry]] = {}
    for e in entries:
        comps = e.path.split("/")
        if len(comps) < depth or not all(parts.is_partition_dir_name(c) for c in comps[:depth]):
            continue
        key = "/".join(comps[:depth])
        group = out.setdefault(key, [])
        if len(comps) > depth:
            group.append(DirEntry("/".join(comps[depth:]), e.is_dir, e.size))
    return out


def partition_paths(table: TableDesc) -> list[str]:
    """Relative partition paths of a table found on disk (``[""]`` when unpartitioned)."""
    if not table.partition_columns:
        return [""]
    tfs = TableFS(table.location)
    depth = len(table.partition_columns)
    grouped = split_partitions(tfs.list_recursive(table.location), depth)
    return sorted(p for p in grouped if not any(is_hidden(c) for c in p.split("/")))


def partition_dir(table: TableDesc, partition: str | None) -> str:
    """Absolute directory of a partition (the table root for ``None``/``""``)."""
    return join(table.location, partition) if partition else table.location
