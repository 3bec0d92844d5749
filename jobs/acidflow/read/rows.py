"""The shape of the rows a snapshot read yields, shared by every reader of event files (the
Hive 3 reader of :mod:`acidflow.read.snapshot`, the ACID v1 merge of :mod:`acidflow.read.acidv1`):
the virtual columns ``ROW__ID`` and ``INPUT__FILE__NAME`` (Hive ``VirtualColumn``), the output
schema, which write ids a snapshot sees, how a file's columns map onto the table's, and the
partition columns' values.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.format import partitions as parts
from acidflow.format import types as htypes
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.orc import files as acid_files
from acidflow.format.schemaevolution import read_as

ROW_ID = "ROW__ID"
INPUT_FILE_NAME = "INPUT__FILE__NAME"
ROW_ID_TYPE = pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())])


def output_schema(
    columns: list[tuple[str, str]],
    partition_columns: list[tuple[str, str]],
    row_id: bool = False,
    file_name: bool = False,
    project: list[str] | None = None,
) -> pa.Schema:
    """Arrow schema of a snapshot read's rows: the table ``columns`` (``[(name, hive_type)]``,
    restricted to ``project`` when given, in table order), the partition columns, then
    ``ROW__ID struct<writeid:bigint,bucketid:int,rowid:bigint>`` and ``INPUT__FILE__NAME
    string`` when asked (Hive types mapped by :func:`acidflow.format.types.arrow_type`)."""
    fields = [
        pa.field(n, htypes.arrow_type(t)) for n, t in columns if project is None or n in project
    ]
    fields += [pa.field(n, htypes.arrow_type(t)) for n, t in partition_columns]
    if row_id:
        fields.append(pa.field(ROW_ID, ROW_ID_TYPE))
    if file_name:
        fields.append(pa.field(INPUT_FILE_NAME, pa.string()))
    return pa.schema(fields)


def valid_mask(write_ids: pa.Array, valid: ValidWriteIdList) -> pa.Array:
    """Which write ids a ValidWriteIdList sees, element by element.

    Hive's ``ValidReaderWriteIdList.isWriteIdValid``: a write id is valid when it is at most the
    high watermark and is not one of the open or aborted exceptions.

    Args:
        write_ids: int64 write ids (an event file's ``currentTransaction`` column).
        valid: the snapshot's ValidWriteIdList.
    Returns:
        A boolean Arrow array of the same length (NULL where the write id is NULL).
    """
    mask = pc.less_equal(write_ids, pa.scalar(valid.high_watermark, pa.int64()))
    exceptions = list(valid.open_write_ids) + list(valid.aborted_write_ids)
    if exceptions:
        mask = pc.and_(mask, pc.invert(pc.is_in(write_ids, pa.array(exceptions, pa.int64()))))
    return mask


def map_columns(file_names: list[str], table_cols: list[str], positional: bool) -> list[int | None]:
    """For each table column, the index of its source column in the file (None = missing, read
    as NULL: a column added after the file was written). ACID files map by position (ORC
    ``SchemaEvolution`` does positional evolution for ACID files); original files by name
    (case-insensitive) when every name is found, else by position."""
    if not positional:
        lower = {n.lower(): i for i, n in enumerate(file_names)}
        if all(c.lower() in lower for c in table_cols):
            return [lower[c.lower()] for c in table_cols]
    return [i if i < len(file_names) else None for i in range(len(table_cols))]


def partition_arrays(plan_pcols: list[tuple[str, str]], ppath: str, n: int) -> list[pa.Array]:
    """Partition columns of ``n`` rows of the partition at ``ppath`` (relative path, '' when
    unpartitioned): each the path's value (Hive's unescaping, ``__HIVE_DEFAULT_PARTITION__`` ->
    NULL) cast from string to the column's Arrow type."""
    if not plan_pcols:
        return []
    values = dict(parts.parse_partition_path(ppath)) if ppath else {}
    out = []
    for name, hive_type in plan_pcols:
        target = htypes.arrow_type(hive_type)
        v = values.get(name)
        out.append(pa.array([v] * n, pa.string()).cast(target))
    return out


def table_column(data: list[pa.Array], src: int | None, target: pa.DataType, n: int) -> pa.Array:
    """A data column of a batch as the table's type: ``data[src]`` with its timestamps
    normalised (:func:`acidflow.format.orc.files.normalize_timestamps`) and Hive's type
    conversions applied (:func:`acidflow.format.schemaevolution.read_as`,
    ``ConvertTreeReaderFactory``); ``n`` NULLs when the file lacks the column (``src`` None or
    past the file's columns: a column added after the file was written)."""
    if src is None or src >= len(data):
        return pa.nulls(n, target)
    return read_as(acid_files.normalize_timestamps(data[src]), target)
