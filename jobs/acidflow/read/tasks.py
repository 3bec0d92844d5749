"""The plan of a snapshot read as data: :class:`ReadPlan` of :class:`ReadTask` s, each the
insert-side :class:`DataFile` s of one (partition, bucket) -- or one split of it
(:mod:`acidflow.read.splits`) -- and the delete delta files that apply (Hive's ``OrcSplit`` with
its delete deltas, ``VectorizedOrcAcidRowBatchReader``). Made by
:func:`acidflow.read.snapshot.plan_read`, run by :func:`acidflow.read.snapshot.read_task`; JSON
round-trips so a task travels to a Spark executor.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import pyarrow as pa

from acidflow.format.filerecords import FileRecord
from acidflow.format.layout import AcidState, ValidWriteIdList
from acidflow.read.rows import output_schema

#: a ROW__ID key ``[originalTransaction, bucket property, rowId]``
Key = list[int]
#: an inclusive key range ``[low, high]``; ``None`` = unbounded on that side
KeyRange = list["Key | None"]


@dataclass
class DataFile:
    """An insert-side file of a read task.

    Attributes:
        path: full path.
        kind: ``base``, ``delta`` (insert delta) or ``original`` (pre-ACID layout file).
        bucket_id: bucket (or writer) id from the file name.
        write_id: synthetic write id for original files (0 at the partition root).
        statement_id: statement id for the synthetic bucket property of original files.
        row_offset: synthetic rowId of the first row read (original files): the rows of the
            earlier original files of the same bucket, plus those of the file's stripes before
            ``stripes`` for a split.
        size: bytes, from the listing (0 = unknown).
        stripes: ``[first, end)`` stripe numbers a split reads (``acidflow.read.splits``);
            None = the whole file.
    """

    path: str
    kind: str
    bucket_id: int
    write_id: int = 0
    statement_id: int = 0
    row_offset: int = 0
    size: int = 0
    stripes: list[int] | None = None


@dataclass
class ReadTask:
    """Work of one reader: insert-side files of one (partition, bucket) and the delete delta
    files that apply to them. ``partition`` is the relative partition path ('' if none).

    A split (``acidflow.read.splits``) reads part of a bucket: stripe ranges
    (``DataFile.stripes``) and ``key_ranges``, the inclusive ROW__ID key ranges
    ``[[owid, bucket, rowId] | None, ... | None]`` its rows lie in: only delete events in them
    are loaded. None = every delete event of the delete files (a whole bucket).
    """

    partition: str
    bucket_id: int
    data_files: list[DataFile] = field(default_factory=list)
    delete_files: list[str] = field(default_factory=list)
    key_ranges: list[KeyRange] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ReadTask":
        d = json.loads(text)
        d["data_files"] = [DataFile(**f) for f in d["data_files"]]
        return cls(**d)


@dataclass
class ReadPlan:
    """Everything needed to read a snapshot.

    Attributes:
        table_dir: table root.
        columns: table columns ``[(name, hive_type)]``.
        partition_columns: ``[(name, hive_type)]`` (empty when unpartitioned).
        valid_write_ids: the snapshot.
        tasks: the read tasks.
        states: ``AcidState`` per partition path ('' when unpartitioned).
        lost: records of files the snapshot would read that a repair acknowledged lost (left
            out of the tasks: their rows are gone).
    """

    table_dir: str
    columns: list[tuple[str, str]]
    partition_columns: list[tuple[str, str]]
    valid_write_ids: ValidWriteIdList
    tasks: list[ReadTask]
    states: dict[str, AcidState]
    lost: list[FileRecord] = field(default_factory=list)

    def output_schema(
        self, row_id: bool = False, file_name: bool = False, project: list[str] | None = None
    ) -> pa.Schema:
        """Arrow schema of the rows :func:`read_task` yields (data columns restricted to
        ``project`` when given, in table order): :func:`acidflow.read.rows.output_schema`."""
        return output_schema(self.columns, self.partition_columns, row_id, file_name, project)
