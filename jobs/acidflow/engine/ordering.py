"""The late-event rule: which of two versions of one key is newer, by an ordering value.

One home for the rule that CDC merges (``acidflow.cdc.changes``, ordering value = the change's
position, kept in ``_cdc_position``) and ``Transaction.upsert(..., ordering_field=...)`` both
follow -- Hudi's precombine field (``hoodie.datasource.write.precombine.field``) with the
``DefaultHoodieRecordPayload`` check against the stored record:

1. **Against the table.** An incoming version whose ordering value is not greater than the
   stored version's (``incoming <= stored``) is *late*: it is dropped and the stored row stays.
   Equal values count as late, so re-applying the same batch changes nothing (CDC's rule for a
   replayed event).
2. **Within a batch.** Of several versions of one key the one with the greatest ordering value
   wins; among equal values the one that comes last in input order wins (CDC applies equal
   positions in input order, so the last one is the final state).
3. **NULL** is older than every value: an incoming NULL is late against any stored version of
   the key (NULL or not); a stored NULL loses to any incoming non-NULL value; in a batch a NULL
   version wins only when every version of the key is NULL (then the last one, rule 2).

Scalar form :func:`is_late` (CDC and tests), Arrow form :func:`late_mask_arrow` and
:func:`latest_per_key_arrow`, Spark form :func:`late_condition` and :func:`latest_per_key`.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from acidflow.errors import AcidflowError
from acidflow.format import types as htypes
from acidflow.format.hivetypes import CharType, DecimalType, PrimitiveType, VarcharType
from acidflow.format.table import TableDesc

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class OrderingFieldError(AcidflowError, ValueError):
    """The ordering field names no column of the table, or is a column it cannot order by."""


class TableDefault(enum.Enum):
    """Sentinel type of :data:`TABLE_DEFAULT`."""

    TABLE = "table"


#: ``upsert(ordering_field=TABLE_DEFAULT)`` (the default): the table's declared
#: ``ordering_column``, if any. ``ordering_field=None`` turns ordering off.
TABLE_DEFAULT = TableDefault.TABLE

_UNORDERED = ("boolean", "binary")


def resolve_field(table: TableDesc, field: "str | None | TableDefault") -> str | None:
    """The ordering column an upsert into ``table`` uses (its name as the table spells it),
    or None.

    Raises:
        OrderingFieldError: no such column, or a type without an order (complex types,
            boolean, binary), naming the table and the column.
    """
    if field is TABLE_DEFAULT:
        field = getattr(table, "ordering_column", None)
    if field is None:
        return None
    if not isinstance(field, str) or not field.strip():
        raise OrderingFieldError(
            f"upsert into {table.name}: ordering_field must be a column name or None, got {field!r}"
        )
    cols = {c.name.lower(): c for c in [*table.columns, *table.partition_columns]}
    col = cols.get(field.strip().lower())
    if col is None:
        raise OrderingFieldError(
            f"upsert into {table.name}: ordering field {field!r} is not a "
            f"column of the table (columns: {', '.join(cols)})"
        )
    node = htypes.mapped(col.hive_type)
    ok = isinstance(node, (DecimalType, VarcharType, CharType)) or (
        isinstance(node, PrimitiveType) and node.name not in _UNORDERED
    )
    if not ok:
        raise OrderingFieldError(
            f"upsert into {table.name}: ordering field {col.name!r} has "
            f"type {col.hive_type}, which has no order to compare by"
        )
    return col.name


def is_late(incoming: Any, stored: Any) -> bool:
    """True when a version with ordering value ``incoming`` must not replace a stored version
    with ordering value ``stored`` (rules 1 and 3 of the module doc).

    >>> is_late(5, 7), is_late(7, 7), is_late(8, 7), is_late(None, 1), is_late(1, None)
    (True, True, False, True, False)
    """
    if incoming is None:
        return True
    if stored is None:
        return False
    return bool(incoming <= stored)


def newest_index(values: Sequence[Any]) -> int:
    """Index of the version that wins among ``values`` (ordering values of one key in input
    order): the greatest, the last of equal ones, NULL only when all are NULL (rule 2)."""
    best = 0
    for i in range(1, len(values)):
        v, b = values[i], values[best]
        if v is None and b is not None:
            continue
        if b is None or v >= b:
            best = i
    return best


# ----------------------------------------------------------------------------- Arrow


def late_mask_arrow(
    incoming: pa.Array | pa.ChunkedArray,
    stored: pa.Array | pa.ChunkedArray,
    found: pa.Array | pa.ChunkedArray,
) -> pa.Array:
    """Boolean mask (no NULLs) of the incoming rows that are late: ``found`` says the key has a
    stored version, ``stored`` is its ordering value (NULL where none or NULL), ``incoming``
    the batch row's. Arrays of equal length and comparable types."""
    le = pc.fill_null(pc.less_equal(incoming, stored), False)
    late = pc.or_(pc.is_null(incoming), pc.and_(pc.is_valid(stored), le))
    mask = pc.and_(pc.fill_null(found, False), late)
    return mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask


def latest_per_key_arrow(tbl: pa.Table, key: Sequence[str], field: str) -> tuple[pa.Table, int]:
    """Rows of ``tbl`` that win within the batch (rule 2), in input order, and how many rows
    lost (older versions of a key in the same batch)."""
    if tbl.num_rows == 0:
        return tbl, 0
    keys = list(zip(*(tbl.column(k).to_pylist() for k in key)))
    order = tbl.column(field).to_pylist()
    winner: dict[tuple, int] = {}
    for i, k in enumerate(keys):
        w = winner.get(k)
        if w is None:
            winner[k] = i
            continue
        v, b = order[i], order[w]
        if not (v is None and b is not None) and (b is None or v >= b):
            winner[k] = i
    if len(winner) == tbl.num_rows:
        return tbl, 0
    keep = sorted(winner.values())
    return tbl.take(pa.array(keep, pa.int64())), tbl.num_rows - len(keep)


def drop_late_arrow(
    rows: pa.Table, found: pa.Table, key: Sequence[str], field: str
) -> tuple[pa.Table, pa.Table, int]:
    """Rule 1 on an upsert batch (one row per key) and the stored versions of its keys
    (``found``: key columns, ``field``, ROW__ID, ...): returns the batch rows to write, the
    stored versions to delete (those of late keys removed: the stored row stays) and the
    number of late batch rows."""
    if rows.num_rows == 0 or found.num_rows == 0:
        return rows, found, 0
    stored = dict(
        zip(zip(*(found.column(k).to_pylist() for k in key)), found.column(field).to_pylist())
    )
    keys = list(zip(*(rows.column(k).to_pylist() for k in key)))
    has = pa.array([k in stored for k in keys], pa.bool_())
    stored_vals = pa.array([stored.get(k) for k in keys], rows.column(field).type)
    late = late_mask_arrow(rows.column(field), stored_vals, has)
    n_late = pc.sum(late).as_py() or 0
    if not n_late:
        return rows, found, 0
    late_keys = {k for k, flag in zip(keys, late.to_pylist()) if flag}
    keep_found = pa.array(
        [k not in late_keys for k in zip(*(found.column(k).to_pylist() for k in key))], pa.bool_()
    )
    return rows.filter(pc.invert(late)), found.filter(keep_found), int(n_late)


# ----------------------------------------------------------------------------- Spark


def late_condition(incoming: "Column", stored: "Column", found: "Column") -> "Column":
    """Spark form of :func:`late_mask_arrow` (a boolean Column, never NULL)."""
    # deferred: pyspark is imported only by the Spark paths
    from pyspark.sql import functions as F

    return F.coalesce(found, F.lit(False)) & (
        incoming.isNull() | (stored.isNotNull() & F.coalesce(incoming <= stored, F.lit(False)))
    )


def latest_per_key(df: "DataFrame", key: Sequence[str], field: str, seq: str) -> "DataFrame":
    """Spark form of :func:`latest_per_key_arrow`: one row per key, the greatest ``field``
    (NULLs last), ties broken by the greatest ``seq`` (the input order column the caller
    added, e.g. ``monotonically_increasing_id()``). The result keeps ``seq``."""
    # deferred: pyspark is imported only by the Spark paths
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy(*key).orderBy(F.col(field).desc_nulls_last(), F.col(seq).desc())
    return (
        df.withColumn("_acid_rank", F.row_number().over(w))
        .where(F.col("_acid_rank") == 1)
        .drop("_acid_rank")
    )


def drop_late(
    rows: "DataFrame", matched: "DataFrame", key: Sequence[str], field: str
) -> tuple["DataFrame", "DataFrame", int]:
    """Spark form of :func:`drop_late_arrow`: ``rows`` one per key, ``matched`` the stored
    versions (key columns, ``field``, partition columns, ``owid``/``bprop``/``rowid``).
    Returns the rows to write, the stored versions to delete and the
    number of late rows (one Spark job counts them)."""
    # deferred: pyspark is imported only by the Spark paths
    from pyspark.sql import functions as F

    stored = matched.select(
        *key, F.lit(True).alias("_acid_found"), F.col(field).alias("_acid_stored")
    )
    joined = rows.join(stored, on=list(key), how="left")
    late = late_condition(F.col(field), F.col("_acid_stored"), F.col("_acid_found"))
    # not cached: rows and matched are (the caller caches and unpersists them)
    flagged = joined.withColumn("_acid_late", late)
    n_late = flagged.where(F.col("_acid_late")).count()
    fresh = flagged.where(~F.col("_acid_late")).select(*rows.columns)
    current = matched
    if n_late:
        late_keys = flagged.where(F.col("_acid_late")).select(*key)
        current = current.join(late_keys, on=list(key), how="left_anti")
    return fresh, current, n_late
