"""``acidflow table convert``: a plain (non-ACID) ORC table becomes a full-ACID acidflow table,
as Hive's ``ALTER TABLE t SET TBLPROPERTIES ('transactional'='true')`` does.

The existing files stay where they are as *original files*: readers give their rows synthetic
ROW__IDs (originalTransaction 0, bucket from the file name ``<bucket>_0[_copy_<n>]``, rowId = the
row's position among the original files of that bucket in path order; docs/hive-acid-format.md
§3), new writes go to deltas (write ids from 1), and the first major compaction rewrites
originals and deltas into ``base_<N>`` (the cleaner then removes the originals).

Checks before anything is recorded (each refusal names the file):

* Hive's ``TransactionalValidationListener.validateTableStructure``: every data file's name
  matches Hive's original-file patterns (``[0-9]+_[0-9]+`` or ``..._copy_[0-9]+``); Hive refuses
  with "Unexpected data file name format" otherwise. Spark's ``part-...-c000.snappy.orc`` names
  are refused the same way, unless ``rename=True`` (``--rename-files``) renames them to Hive's
  names first (unbucketed tables only: a bucketed table's file name *is* its bucket; not on
  object stores such as S3, which cannot rename a file without a window where it has both
  names or none: there the files must already carry Hive's names). Hidden
  files (``_SUCCESS``, ``.crc``: names starting with ``_`` or ``.``) are skipped, as Hive's
  readers skip them;
* no ``base_`` / ``delta_`` / ``delete_delta_`` directory (the table is already ACID: adopt it);
* every non-empty file is ORC (Hive's ORC input format would fail on it), without the ACID
  event schema, and its columns match the declared ones: the same names in order (Hive's
  ``_col<i>`` placeholder names match by position), the same types (compared as the ORC reader
  gives them, so ``varchar(n)`` / ``char(n)`` read as ``string``), possibly fewer columns (a
  file written before ``ALTER TABLE ... ADD COLUMNS``);
* files lie at the partition depth (one ``<column>=<value>`` level per partition column, in
  order), or below it in sub-directories (Hive's ``HIVE_UNION_SUBDIR_<n>``);
* a bucketed table's file names name a bucket below the bucket count.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from acidflow.catalog.base import Catalog
from acidflow.catalog.errors import TableExistsError
from acidflow.catalog.tabledef import TableDef
from acidflow.format.hivetypes import HiveTypeError
from acidflow.format.layout import (
    format_original_file,
    is_hidden,
    parse_base,
    parse_delta,
    parse_original_file,
)
from acidflow.format.orc import files as acid_files
from acidflow.format.types import arrow_type, hive_type_from_arrow
from acidflow.format.writeids import ValidWriteIdList
from acidflow.storage.adoption import AdoptionError, partition_of
from acidflow.storage.fs import TableFS, join
from acidflow.tableops.adopt import PLACEHOLDER_NAME, TableOpsError, with_location_rule


@dataclass
class OriginalFile:
    """One file of the plain table.

    Attributes:
        path: relative to the table location; partition: its partition spec or None;
        bucket_id: from the name (``None`` until renamed); rows: ORC row count (0 = empty);
        new_name: Hive's name it gets with ``rename`` (None = keeps its name).
    """

    path: str
    partition: str | None
    bucket_id: int | None
    rows: int
    new_name: str | None = None


@dataclass
class ConvertPlan:
    """What :func:`check_convertible` found: the table's original files."""

    table: str
    location: str
    files: list[OriginalFile] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows over all files."""
        return sum(f.rows for f in self.files)

    @property
    def renames(self) -> list[OriginalFile]:
        """Files that get a new name."""
        return [f for f in self.files if f.new_name is not None]


def check_file_schema(table: TableDef, path: str, info: acid_files.FileInfo) -> None:
    """The file's columns against the declared ones (module doc).

    Raises:
        TableOpsError: ACID schema, more columns, another name or type (names the file).
    """
    if info.is_acid:
        raise TableOpsError(
            f"table {table.name}: {path} is an ACID event file, not a plain ORC "
            "file; the table is already transactional (use acidflow table adopt)"
        )
    declared = table.columns
    fields = list(info.schema)
    if len(fields) > len(declared):
        raise TableOpsError(
            f"table {table.name}: {path} has {len(fields)} columns "
            f"{[f.name for f in fields]}, the table declares {len(declared)} "
            f"{table.column_names()}"
        )
    positional = all(PLACEHOLDER_NAME.match(f.name) for f in fields)
    for f, col in zip(fields, declared):
        if not positional and f.name.lower() != col.name:
            raise TableOpsError(
                f"table {table.name}: {path} has column {f.name!r} where the "
                f"table declares {col.name!r}"
            )
        try:
            got = hive_type_from_arrow(f.type)
            want = hive_type_from_arrow(arrow_type(col.hive_type))
        except HiveTypeError as exc:
            raise TableOpsError(f"table {table.name}: {path} column {f.name!r}: {exc}") from exc
        if got != want:
            raise TableOpsError(
                f"table {table.name}: {path} column {f.name!r} is {got}, the "
                f"table declares {col.name} {col.hive_type}"
            )


def check_convertible(table: TableDef, location: str, *, rename: bool = False) -> ConvertPlan:
    """Check a plain ORC table directory (module doc) and plan its renames.

    Args:
        table: the declared definition (columns, partition columns, buckets).
        location: the table directory.
        rename: give files with non-Hive names Hive's original names (unbucketed only).
    Returns:
        :class:`ConvertPlan`.
    Raises:
        TableOpsError: what the module doc lists, naming the file or directory.
    """
    tfs = TableFS(location)
    if not tfs.exists(location) or not tfs.isdir(location):
        raise TableOpsError(f"table {table.name}: location {location} is not a directory")
    pcols = table.partition_column_names()
    depth = len(pcols)
    plan = ConvertPlan(table.name, location)
    taken: dict[str, set[str]] = {}
    for entry in tfs.list_recursive(location):
        comps = entry.path.split("/")
        if any(is_hidden(c) for c in comps):
            continue
        for comp in comps[:-1] if not entry.is_dir else comps:
            if parse_base(comp) is not None or parse_delta(comp) is not None:
                raise TableOpsError(
                    f"table {table.name}: {location}/{entry.path} is in an ACID directory "
                    f"({comp}): the table is already transactional (use acidflow table adopt)"
                )
        if entry.is_dir:
            continue
        if len(comps) <= depth:
            raise TableOpsError(
                f"table {table.name}: data file {location}/{entry.path} lies "
                f"above the partition directories ({', '.join(pcols)})"
            )
        try:
            spec = partition_of(table.name, comps[:depth], pcols, entry.path)
        except AdoptionError as exc:
            raise TableOpsError(str(exc)) from exc
        name = comps[-1]
        parsed = parse_original_file(name)
        taken.setdefault(posixpath.dirname(entry.path), set()).add(name)
        full = join(location, entry.path)
        if parsed is None and not rename:
            raise TableOpsError(
                f"Unexpected data file name format. Cannot convert {table.name} to a "
                f"transactional table. File: {full} (Hive's original files are named "
                "<bucket>_0[_copy_<n>]; --rename-files renames them)"
            )
        if parsed is None and table.num_buckets > 0:
            raise TableOpsError(
                f"table {table.name}: {full} does not name its bucket (<bucket>_0) and the "
                f"table has {table.num_buckets} buckets: rows cannot be renamed into a bucket"
            )
        if parsed is not None and table.num_buckets > 0 and parsed[0] >= table.num_buckets:
            raise TableOpsError(
                f"table {table.name}: {full} names bucket {parsed[0]}, the "
                f"table has {table.num_buckets} buckets"
            )
        rows = 0
        if entry.size > 0:
            try:
                info = acid_files.file_info(tfs, full)
            except acid_files.AcidFileError as exc:
                raise TableOpsError(
                    f"table {table.name}: {full} is not an ORC file ({exc}); "
                    "Hive's ORC input format cannot read it"
                ) from exc
            check_file_schema(table, full, info)
            rows = info.rows
        plan.files.append(OriginalFile(entry.path, spec, parsed[0] if parsed else None, rows))
    _plan_renames(plan, taken)
    if plan.renames and not tfs.renames_atomically:
        first = plan.renames[0]
        raise TableOpsError(
            f"table {table.name}: {location} is on {tfs.protocol}://, which has no rename: "
            f"--rename-files cannot give {len(plan.renames)} file(s) Hive's names (first: "
            f"{join(location, first.path)} -> {first.new_name}). Rewrite them under Hive's "
            "names <bucket>_0[_copy_<n>] (e.g. with a copy tool), then convert"
        )
    return plan


def _plan_renames(plan: ConvertPlan, taken: dict[str, set[str]]) -> None:
    """Give each unnamed file the next free ``000000_0[_copy_<n>]`` name of its directory, in
    path order (so the synthetic rowIds follow the old file order)."""
    copies: dict[str, int] = {}
    for f in sorted(plan.files, key=lambda f: f.path):
        if f.bucket_id is not None:
            continue
        d = posixpath.dirname(f.path)
        used = taken.setdefault(d, set())
        n = copies.get(d, 0)
        while format_original_file(0, n) in used:
            n += 1
        f.new_name = format_original_file(0, n)
        f.bucket_id = 0
        used.add(f.new_name)
        copies[d] = n + 1


def apply_renames(plan: ConvertPlan) -> None:
    """Rename the planned files in place (no overwrite: a name taken meanwhile fails).
    Only on storage that renames (:func:`check_convertible` refuses object stores).

    Raises:
        acidflow.storage.fs.DirectoryClaimedError: a new name was taken meanwhile.
    """
    tfs = TableFS(plan.location)
    for f in plan.renames:
        assert f.new_name is not None
        src = join(plan.location, f.path)
        dst = (
            join(plan.location, posixpath.dirname(f.path), f.new_name)
            if posixpath.dirname(f.path)
            else join(plan.location, f.new_name)
        )
        tfs.rename_exclusive(src, dst)
        f.path = posixpath.join(posixpath.dirname(f.path), f.new_name)
        f.new_name = None


def convert_table(
    catalog: Catalog, table: TableDef, *, rename: bool = False
) -> tuple[TableDef, ConvertPlan]:
    """Check (:func:`check_convertible`), rename if asked, then register the table with an
    empty write-id history (``Catalog.adopt_table`` with high watermark 0: the next write id is
    1, as after Hive's conversion).

    Returns:
        The stored definition and the plan (files as they are now named).
    Raises:
        TableOpsError: a check failed (nothing renamed or recorded);
        what :meth:`Catalog.adopt_table` raises (TableExistsError ...).
    """
    table = with_location_rule(table, catalog)
    table.validate()
    plan = check_convertible(table, table.location, rename=rename)
    if catalog.table_exists(table.name):  # before renaming anything
        raise TableExistsError(table.name)
    apply_renames(plan)
    stored = catalog.adopt_table(table, ValidWriteIdList(table.name, 0))
    return stored, plan
