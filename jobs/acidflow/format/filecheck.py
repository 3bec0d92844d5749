"""The data-file rule: what the catalog recorded of a snapshot's files against what the listing
shows (pure: no I/O, no catalog).

Every committed write records its event files (partition, ``<dir>/<file>``, write id, size in
bytes, event count): the writer's statements, a compaction's output, a restore, an ``alter
--rewrite``. Hive keeps no such record; without it a lost bucket file is a silent loss of rows
(a missing delete-delta file even resurrects deleted rows), and a compaction would make the
loss permanent. :func:`check_files` compares the records of one partition with its listing
(``DirEntry`` sizes come with the listing ``getAcidState`` already makes, no extra stat):

* ``missing_file`` -- a recorded file of a directory the snapshot reads is not listed, or a
  recorded directory is gone and nothing the snapshot reads (a base, a wider delta of the same
  kind) covers its write ids;
* ``size_mismatch`` -- a recorded file is listed with another size (truncated or rewritten);
* ``unexpected_file`` -- a bucket file in a directory the snapshot reads that has records, but
  not for this file (a stray writer attempt, a copy): the readers would read it.

A directory without any record is *unknown* (adopted or converted files, a table written
before file records existed, a compaction published by a worker that died before recording):
never a finding. A record acknowledged lost (``fsck`` repair, :attr:`FileRecord.lost`) is no
finding either; the read skips the file (:attr:`FileCheck.skip`) and the loss is reported.

Readers (``acidflow.read.snapshot.plan_read``), fsck and the compactor call the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from acidflow.format.filerecords import FileRecord
from acidflow.format.layout import (
    AcidState,
    DirEntry,
    RangeResponse,
    ValidWriteIdList,
    is_hidden,
    parse_base,
    parse_bucket_file,
    parse_delta,
)
from acidflow.format.orc.files import AcidFileError

__all__ = [
    "MISSING",
    "SIZE_MISMATCH",
    "UNEXPECTED",
    "DataFileError",
    "MissingDataFileError",
    "DataFileMismatchError",
    "FileRecord",
    "FileProblem",
    "FileCheck",
    "check_files",
    "raise_for",
]

MISSING = "missing_file"
SIZE_MISMATCH = "size_mismatch"
UNEXPECTED = "unexpected_file"


@dataclass(frozen=True)
class FileProblem:
    """One difference between the records and the listing.

    Attributes:
        kind: :data:`MISSING`, :data:`SIZE_MISMATCH` or :data:`UNEXPECTED`.
        partition, path: the file (path relative to the partition directory).
        write_id: the write id that owns it (the record's, else the directory name's highest).
        recorded_size, listed_size: bytes per record / per listing (None when absent).
        rows: events the record counts (None for an unexpected file).
    """

    kind: str
    partition: str
    path: str
    write_id: int | None
    recorded_size: int | None = None
    listed_size: int | None = None
    rows: int | None = None

    def describe(self) -> str:
        """A sentence naming the file, its write id and what differs."""
        where = f"{self.partition}/{self.path}" if self.partition else self.path
        wid = f"write id {self.write_id}" if self.write_id is not None else "unknown write id"
        if self.kind == MISSING:
            return (
                f"{where} ({wid}, {self.rows} recorded events, {self.recorded_size} bytes) "
                "is missing"
            )
        if self.kind == SIZE_MISMATCH:
            return (
                f"{where} ({wid}) is {self.listed_size} bytes, recorded "
                f"{self.recorded_size} bytes (truncated or rewritten)"
            )
        return (
            f"{where} ({wid}, {self.listed_size} bytes) is not recorded by the write that "
            "made its directory"
        )


@dataclass
class FileCheck:
    """What :func:`check_files` found in one partition.

    Attributes:
        problems: the differences (:class:`FileProblem`).
        lost: records acknowledged lost that the snapshot would read (reported, skipped).
        checked: recorded files compared.
    """

    problems: list[FileProblem] = field(default_factory=list)
    lost: list[FileRecord] = field(default_factory=list)
    checked: int = 0

    @property
    def skip(self) -> set[str]:
        """Paths (relative to the partition) a reader leaves out: the acknowledged-lost files."""
        return {r.path for r in self.lost}

    @property
    def failures(self) -> list[FileProblem]:
        """The problems that make a read wrong: missing files and size mismatches."""
        return [p for p in self.problems if p.kind != UNEXPECTED]


class DataFileError(AcidFileError):
    """A file of a table's snapshot differs from the catalog's record of it.

    Attributes:
        table: ``db.table`` (or the table directory). problems: every difference found.
    """

    def __init__(self, table: str, problems: Sequence[FileProblem]):
        self.table = table
        self.problems = list(problems)
        first = self.problems[0]
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(
            f"table {table}: {first.describe()}{more}; reading would silently lose or "
            "resurrect rows. Run `acidflow fsck` to list every damaged file; restore the "
            "file(s), or acknowledge the loss with fsck's repair"
        )


class MissingDataFileError(DataFileError, FileNotFoundError):
    """A recorded file of the snapshot is missing (first problem: ``missing_file``)."""


class DataFileMismatchError(DataFileError):
    """A recorded file of the snapshot has another size than recorded (truncated)."""


def _range(name: str) -> tuple[int, int, str] | None:
    """``(lo, hi, kind)`` of a base/delta directory name; kind ``base``/``delta``/``delete``."""
    b = parse_base(name)
    if b is not None:
        return (b.write_id, b.write_id, "base")
    d = parse_delta(name)
    if d is not None:
        return (d.min_write_id, d.max_write_id, "delete" if d.is_delete else "delta")
    return None


def _covered(lo: int, hi: int, kind: str, state: AcidState) -> bool:
    """Whether something the snapshot reads holds the write ids ``lo..hi`` of a directory of
    ``kind`` that is gone: the chosen base at or above ``hi``, or a current delta of the same
    kind containing the range."""
    if state.base is not None and state.base.write_id >= hi:
        return True
    if kind == "base":
        return False
    return any(
        d.is_delete == (kind == "delete") and d.min_write_id <= lo and hi <= d.max_write_id
        for d in state.deltas
    )


def check_files(
    partition: str,
    entries: Iterable[DirEntry],
    state: AcidState,
    records: Iterable[FileRecord],
    valid: ValidWriteIdList,
    *,
    dirs: Iterable[str] | None = None,
) -> FileCheck:
    """Compare the records of one partition with its listing (module doc).

    Args:
        partition: the relative partition path ('' unpartitioned); records of other partitions
            are ignored.
        entries: the partition's recursive listing (with sizes).
        state: its ``AcidState`` at ``valid``.
        records: the table's (or partition's) records of committed writes.
        valid: the snapshot; a gone directory is a loss only for write ids it sees.
        dirs: the directories the caller reads (default ``state.current_dirs``; a
            read-optimized read passes the base only, a compaction its inputs).
    Returns:
        A :class:`FileCheck`.
    """
    entries = list(entries)
    current = list(state.current_dirs if dirs is None else dirs)
    listed = {e.path: e.size for e in entries if not e.is_dir}
    present_dirs = {e.path.split("/", 1)[0] for e in entries}
    # the bucket files directly in each directory, in one pass (as ``bucket_files`` picks)
    in_dir: dict[str, list[str]] = {}
    for path in listed:
        top, sep, rest = path.partition("/")
        if sep and "/" not in rest and not is_hidden(rest) and parse_bucket_file(rest):
            in_dir.setdefault(top, []).append(path)
    by_dir: dict[str, list[FileRecord]] = {}
    for r in records:
        if r.partition == partition:
            by_dir.setdefault(r.dir_name, []).append(r)
    out = FileCheck()
    for d in current:
        recs = by_dir.get(d)
        if not recs:
            continue  # unknown: no record of this directory
        rng = _range(d)
        recorded = {r.path for r in recs}
        for r in recs:
            out.checked += 1
            size = listed.get(r.path)
            if r.lost:
                if size is None or size != r.size:
                    out.lost.append(r)
                continue
            if size is None:
                out.problems.append(
                    FileProblem(MISSING, partition, r.path, r.write_id, r.size, None, r.rows)
                )
            elif size != r.size:
                out.problems.append(
                    FileProblem(SIZE_MISMATCH, partition, r.path, r.write_id, r.size, size, r.rows)
                )
        for rel in sorted(in_dir.get(d, [])):
            if rel not in recorded:
                out.problems.append(
                    FileProblem(
                        UNEXPECTED, partition, rel, rng[1] if rng else None, None, listed[rel]
                    )
                )
    # a recorded directory that is gone entirely, and nothing read covers its write ids
    for d, recs in sorted(by_dir.items()):
        if d in present_dirs:
            continue
        rng = _range(d)
        if rng is None:
            continue
        lo, hi, kind = rng
        seen = (
            valid.is_write_id_valid(hi)
            if kind == "base"
            else valid.is_write_id_range_valid(lo, hi) is not RangeResponse.NONE
        )
        if not seen:
            continue
        if _covered(lo, hi, kind, state):
            continue
        for r in recs:
            out.checked += 1
            if r.lost:
                out.lost.append(r)
            else:
                out.problems.append(
                    FileProblem(MISSING, partition, r.path, r.write_id, r.size, None, r.rows)
                )
    return out


def raise_for(table: str, problems: Sequence[FileProblem]) -> None:
    """Raise the error of the first problem that makes a read wrong (missing file ->
    :class:`MissingDataFileError`, size -> :class:`DataFileMismatchError`), naming every such
    problem's count; nothing when there is none (unexpected files are fsck's).

    Raises:
        MissingDataFileError, DataFileMismatchError.
    """
    bad = [p for p in problems if p.kind != UNEXPECTED]
    if not bad:
        return
    if bad[0].kind == MISSING:
        raise MissingDataFileError(table, bad)
    raise DataFileMismatchError(table, bad)
