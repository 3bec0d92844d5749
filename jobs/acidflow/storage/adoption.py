"""Adopting an existing Hive ACID table directory: which write ids its directories name, and
whether a write-id history (Hive's ``ValidWriteIdList``) can be the history of those files.

A catalog backend's ``Catalog.adopt_table`` calls :func:`check_adoptable` before it records
anything: the location must be a directory, every ``base_N`` / ``delta_N_M[_S]`` /
``delete_delta_N_M[_S]`` directory must sit at the partition depth of the table (``k=v``
levels in the order of the partition columns) and name no write id above the history's high
watermark (Hive allocated write ids 1..hwm; a directory above it cannot have been written by
Hive under that history - refused, naming the directory). Original files (non-ACID names such
as ``000000_0``, write id 0 by Hive's synthetic ROW__ID rule, docs/hive-acid-format.md §3) are
allowed anywhere a partition's data lives.

Pure apart from listing the directory (:class:`acidflow.storage.fs.TableFS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acidflow.errors import AcidflowError
from acidflow.format import partitions as parts
from acidflow.format.layout import is_hidden, parse_base, parse_delta
from acidflow.format.writeids import ValidWriteIdList
from acidflow.storage.fs import TableFS


class AdoptionError(AcidflowError, ValueError):
    """A table directory cannot be adopted with the given history (names the table, the
    directory or file, and the reason)."""


@dataclass
class AcidDir:
    """One base or delta directory found in a table.

    Attributes:
        partition: partition spec ``"k=v/k2=v2"`` (``None`` for an unpartitioned table).
        name: directory name (``delta_0000002_0000002_0000``).
        min_write_id, max_write_id: the write id range it names (a base: ``0..N``).
        kind: ``"base"``, ``"delta"`` or ``"delete_delta"``.
    """

    partition: str | None
    name: str
    min_write_id: int
    max_write_id: int
    kind: str


@dataclass
class TableDirs:
    """What a table directory holds: its ACID directories and the partitions that hold data.

    Attributes:
        acid_dirs: every base / delta / delete delta directory, sorted by (partition, name).
        partitions: partition specs holding any data file (original or ACID), sorted; ``[None]``
            for an unpartitioned table with data.
    """

    acid_dirs: list[AcidDir] = field(default_factory=list)
    partitions: list[str | None] = field(default_factory=list)

    def write_ids(self) -> set[int]:
        """Write ids named by the directories (both ends of every range; a base its N)."""
        out: set[int] = set()
        for d in self.acid_dirs:
            out.add(d.max_write_id)
            if d.kind != "base":
                out.add(d.min_write_id)
        return out

    def dirs_with(self, write_id: int) -> list[AcidDir]:
        """Delta / delete delta directories whose range covers ``write_id`` (bases excluded)."""
        return [
            d
            for d in self.acid_dirs
            if d.kind != "base" and d.min_write_id <= write_id <= d.max_write_id
        ]


def scan_table_dirs(table: str, location: str, partition_columns: list[str]) -> TableDirs:
    """List ``location`` and classify its directories (see the module doc).

    Args:
        table: table name (for messages).
        location: table root (path or URL).
        partition_columns: partition column names in order (``[]`` = unpartitioned).
    Returns:
        :class:`TableDirs`.
    Raises:
        AdoptionError: the location is missing or not a directory; a base/delta directory or a
            data file at a depth other than the partition depth, or under ``k=v`` levels whose
            keys are not the partition columns in order (names the path).
    """
    tfs = TableFS(location)
    if not tfs.exists(location):
        raise AdoptionError(f"table {table}: location {location} does not exist")
    if not tfs.isdir(location):
        raise AdoptionError(f"table {table}: location {location} is not a directory")
    depth = len(partition_columns)
    found: dict[tuple[str | None, str], AcidDir] = {}
    partitions: set[str | None] = set()
    for entry in tfs.list_recursive(location):
        comps = entry.path.split("/")
        if any(is_hidden(c) for c in comps):
            continue
        # an ACID directory may be listed only through its files (object stores)
        for i, comp in enumerate(comps[:-1] if not entry.is_dir else comps):
            base, delta = parse_base(comp), parse_delta(comp)
            if base is None and delta is None:
                continue
            spec = partition_of(table, comps[:i], partition_columns, entry.path)
            if base is not None:
                found[(spec, comp)] = AcidDir(spec, comp, 0, base.write_id, "base")
            elif delta is not None:
                found[(spec, comp)] = AcidDir(
                    spec,
                    comp,
                    delta.min_write_id,
                    delta.max_write_id,
                    "delete_delta" if delta.is_delete else "delta",
                )
            break
        if entry.is_dir:
            if len(comps) <= depth:
                partition_of(table, comps, partition_columns[: len(comps)], entry.path)
            continue
        if len(comps) <= depth:
            raise AdoptionError(
                f"table {table}: data file {entry.path} lies above the partition directories "
                f"({'/'.join(c + '=...' for c in partition_columns)}); Hive would not read it"
            )
        partitions.add(partition_of(table, comps[:depth], partition_columns, entry.path))
    dirs = sorted(found.values(), key=lambda d: (d.partition or "", d.name))
    return TableDirs(dirs, sorted(partitions, key=lambda p: p or ""))


def partition_of(
    table: str, comps: list[str], partition_columns: list[str], path: str
) -> str | None:
    """The partition spec of the directory levels ``comps`` (``None`` when there are none).

    Raises:
        AdoptionError: not exactly one ``<column>=<value>`` level per partition column, in
            order (names ``path``).
    """
    if len(comps) != len(partition_columns):
        raise AdoptionError(
            f"table {table}: {path} is not at the partition depth of the table "
            f"(partition columns {partition_columns or 'none'})"
        )
    if not comps:
        return None
    keys = []
    for comp, col in zip(comps, partition_columns):
        if not parts.is_partition_dir_name(comp):
            raise AdoptionError(
                f"table {table}: {path}: {comp!r} is not a partition directory ({col}=<value>)"
            )
        key = parts.unescape(comp.split("=", 1)[0]).lower()
        if key != col:
            raise AdoptionError(
                f"table {table}: {path}: partition directory {comp!r} does not "
                f"name the partition column {col!r}"
            )
        keys.append(comp)
    return "/".join(keys)


def check_adoptable(
    table: str, location: str, partition_columns: list[str], history: ValidWriteIdList
) -> TableDirs:
    """Check a table directory against the write-id history it is adopted with.

    Args:
        table: table name (messages); location: table root;
        partition_columns: partition column names in order;
        history: Hive's ValidWriteIdList of the table (high watermark, open, aborted).
    Returns:
        The :class:`TableDirs` of the location.
    Raises:
        AdoptionError: what :func:`scan_table_dirs` raises; a negative high watermark; open or
            aborted write ids outside 1..hwm; a directory naming a write id above the high
            watermark (Hive never allocated it: the history is not this table's, or is stale).
    """
    hwm = history.high_watermark
    if hwm < 0:
        raise AdoptionError(f"table {table}: high watermark {hwm} is negative")
    bad = [w for w in history.invalid_write_ids if not 1 <= w <= hwm]
    if bad:
        raise AdoptionError(
            f"table {table}: open/aborted write ids {bad} are outside 1..{hwm} (the high watermark)"
        )
    dirs = scan_table_dirs(table, location, partition_columns)
    for d in dirs.acid_dirs:
        if d.max_write_id > hwm:
            where = f"{d.partition}/{d.name}" if d.partition else d.name
            raise AdoptionError(
                f"table {table}: directory {where} under {location} names write id "
                f"{d.max_write_id}, above the high watermark {hwm}: Hive never allocated it "
                "under this history (take the ValidWriteIdList after the last write)"
            )
    return dirs
