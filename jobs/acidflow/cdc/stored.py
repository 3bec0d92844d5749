"""What a CDC batch reads of its table before it writes: the stored versions (with ROW__ID
and ``_cdc_position``) of the keys it touches, the committed delete positions (tombstones) of
keys no longer stored, and for keyless tables the stored rows equal to some before image.

Reads go through :mod:`acidflow.engine.lookup` (the transaction's snapshot, narrowed to the
partitions and buckets the keys can touch, the key filter and projection inside the ORC
readers, stripes the key index excludes skipped); the results come back as Arrow
(:func:`lookup_found`, the columnar path) or as ``changes.StoredRow`` per key
(:func:`lookup_stored`, the row path). Used by :mod:`acidflow.cdc.apply` only.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pyarrow as pa

from acidflow.catalog import TableDef
from acidflow.cdc import changes as chg
from acidflow.engine import lookup
from acidflow.format import types as htypes
from acidflow.format.keys import key_json  # the catalog's tombstone key (one rule)
from acidflow.read.snapshot import ROW_ID


def all_columns(table: TableDef) -> list[tuple[str, str]]:
    return [(c.name, c.hive_type) for c in table.columns + table.partition_columns]


def tombstones(catalog: Any, table: TableDef, keys: list[tuple]) -> dict[tuple, str]:
    """Committed CDC delete positions of ``keys`` (keys not stored in the table)."""
    if not keys:
        return {}
    by_json = {key_json(k): k for k in keys}
    return {by_json[j]: pos for j, pos in catalog.tombstones(table.name, list(by_json)).items()}


def arrow_rows(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> pa.Table:
    """Row dicts as an Arrow table of the columns' Hive types (absent keys are NULL)."""
    schema = htypes.arrow_schema(columns)
    return pa.Table.from_arrays(
        [pa.array([r.get(c) for r in rows], type=f.type) for (c, _), f in zip(columns, schema)],
        schema=schema,
    )


def lookup_stored(
    spark: Any,
    catalog: Any,
    txn: Any,
    table: TableDef,
    keys: list[tuple],
    full_keys: set[tuple] | None = None,
    min_position: str | None = None,
) -> dict[tuple, chg.StoredRow]:
    """The visible versions (at the transaction's snapshot) of ``keys``, read only from the
    buckets (and partitions) the keys hash to, with the key filter and column projection done
    inside the ORC readers (``acidflow.read.snapshot.read_task``): a batch reads the key, position
    and ROW__ID columns of the buckets it touches, not whole rows.

    Args:
        keys: key tuples (values as :func:`acidflow.cdc.changes.coerce` returns them).
        full_keys: keys whose whole stored row is needed (partial updates keep stored values);
            None = all of them. For the others ``StoredRow.row`` holds only the key, partition
            and ``_cdc_position`` columns.
        min_position: the batch's oldest event position. In the files whose ORC statistics
            show every stored ``_cdc_position`` below it no event can be late against a stored
            row: their position column (the widest column of the lookup) is not read and
            their rows' ``StoredRow.position`` is None, which the late-event rule takes as
            older than any event (as a NULL position). Only the files that may hold a
            position as new as the batch's oldest event -- usually a few recent deltas, never
            a base compacted before the batch -- have their positions read
            (``lookup.split_by_column_bound``).
    Returns:
        ``{key tuple: StoredRow}``.
    """
    if not keys:
        return {}
    key_cols = list(table.primary_key)
    types = dict(all_columns(table))
    full = set(keys) if full_keys is None else set(full_keys) & set(keys)
    out: dict[tuple, chg.StoredRow] = {}
    for subset, project in (
        ([k for k in keys if k not in full], slim_project(table)),
        ([k for k in keys if k in full], None),
    ):
        if not subset:
            continue
        keys_tbl = arrow_rows(
            [dict(zip(key_cols, k)) for k in subset], [(k, types[k]) for k in key_cols]
        )
        found = lookup_found(spark, catalog, txn, table, keys_tbl, project, min_position)
        wanted = set(subset)
        for key, stored in stored_rows(found, key_cols, types):
            if key in wanted:  # partition key columns are matched here
                out[key] = stored
    return out


def slim_project(table: TableDef) -> list[str]:
    """The lookup's columns when no stored value is kept: key columns and ``_cdc_position``
    (the reader adds the partition columns and ROW__ID)."""
    data_cols = [c.name for c in table.columns]
    return list(
        dict.fromkeys(
            [k for k in table.primary_key if k in data_cols]
            + [c for c in (chg.POSITION_COLUMN,) if c in data_cols]
        )
    )


def lookup_found(
    spark: Any,
    catalog: Any,
    txn: Any,
    table: TableDef,
    keys_tbl: pa.Table,
    project: list[str] | None,
    min_position: str | None,
) -> pa.Table:
    """The stored rows (Arrow, with ROW__ID and the partition columns) whose data key columns
    match a row of ``keys_tbl`` (the key columns, Arrow types of ``types.arrow_schema``), read
    as :func:`lookup_stored` describes (``project`` None = every column). Partition key
    columns are not matched here: the caller matches them. ``_cdc_position`` is NULL (or
    absent) where it was not read."""
    data_cols = [c.name for c in table.columns]
    data_keys = keys_tbl.select([k for k in table.primary_key if k in data_cols])
    partitions, buckets = lookup.key_scope_arrow(table, keys_tbl)
    current = lookup.plan_current(catalog, table, txn, partitions=partitions, buckets=buckets)
    if project is not None and chg.POSITION_COLUMN in project and min_position is not None:
        older, rest = lookup.split_by_column_bound(current, chg.POSITION_COLUMN, min_position)
        parts_found = (
            [
                lookup.lookup_rows(
                    spark,
                    older,
                    data_keys,
                    project=[c for c in project if c != chg.POSITION_COLUMN],
                )
            ]
            if older.plan.tasks
            else []
        )
        if rest.plan.tasks:
            parts_found.append(lookup.lookup_rows(spark, rest, data_keys, project=project))
        return (
            pa.concat_tables(parts_found, promote_options="default")
            if parts_found
            else lookup.lookup_rows(spark, current, data_keys, project=project)
        )
    return lookup.lookup_rows(spark, current, data_keys, project=project)


def stored_rows(
    found: pa.Table, key_cols: list[str], types: dict[str, str]
) -> Iterator[tuple[tuple[Any, ...], chg.StoredRow]]:
    """``(key tuple, StoredRow)`` per row of a lookup result (columnar conversion: Arrow's
    row-wise ``to_pylist`` is several times slower on the ROW__ID struct)."""
    values = {c: found.column(c).to_pylist() for c in types if c in found.column_names}
    rid = found.column(ROW_ID).combine_chunks()
    wids, bids, rids = (rid.field(f).to_pylist() for f in ("writeid", "bucketid", "rowid"))
    absent = [c for c in types if c not in values]
    keys = list(zip(*(values[k] for k in key_cols)))
    for i, key in enumerate(keys):
        row = {c: v[i] for c, v in values.items()}
        for c in absent:
            row[c] = None
        yield key, chg.StoredRow(row, (wids[i], bids[i], rids[i]), row.get(chg.POSITION_COLUMN))


#: ``match(before image, ROW__IDs already taken)`` -> ``(stored row, ROW__ID)`` or None
Matcher = Callable[[dict[str, Any], set[Any]], "tuple[dict[str, Any], Any] | None"]


def keyless_candidates(
    spark: Any,
    catalog: Any,
    txn: Any,
    table: TableDef,
    changes_: list[chg.Change],
    columns: list[tuple[str, str]],
) -> Matcher:
    """A ``match(before, taken)`` function over the stored rows equal to some before image of
    an update/delete (keyless tables match on every column)."""
    befores = [c.before for c in changes_ if c.op in ("U", "D") and c.before]
    if not befores:
        return lambda before, taken: None
    names = [c for c, _ in columns if c != chg.POSITION_COLUMN]
    types = dict(columns)
    try:
        coerced = [chg.coerce_image(b, types) for b in befores]
    except chg.CoercionError:
        coerced = []
    rows: list[dict[str, Any]] = [r for r in coerced if r is not None]
    rows = [r for r in rows if r is not None and all(n in r for n in names)]
    if not rows:
        return lambda before, taken: None
    from pyspark.sql import (
        functions as F,  # deferred: pyspark is heavy; the CLI imports this
    )

    cand_df = spark.createDataFrame(arrow_rows(rows, [(n, types[n]) for n in names]))
    current = lookup.current_rows(spark, catalog, table, txn)
    cond = None
    for n in names:
        term = current[n].eqNullSafe(cand_df[n])
        cond = term if cond is None else cond & term
    found = (
        current.join(cand_df.distinct(), on=cond, how="left_semi")
        .select(*[F.col(n) for n in names], chg.POSITION_COLUMN, ROW_ID)
        .toArrow()
    )
    stored = [s for _, s in stored_rows(found, names, types)]

    def match(before: dict[str, Any], taken: set[Any]) -> tuple[dict[str, Any], Any] | None:
        for s in stored:
            if s.row_id not in taken and all(s.row.get(n) == before.get(n) for n in names):
                return s.row, s.row_id
        return None

    return match
