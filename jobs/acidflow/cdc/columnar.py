"""The columnar fast path of a keyed table's CDC batch (pure: no Spark, no catalog, no I/O).

The row path (:func:`acidflow.cdc.changes.normalize_events` then
:func:`acidflow.cdc.changes.fold_events`) is the one definition of the merge rules; this module
computes the same :class:`acidflow.cdc.changes.MergePlan` statistics, bad records and tombstones
with Arrow columns instead of row dicts, for the batches where the rules reduce to whole-row
replacement, and says "no" (returns None) for every other batch, which then goes the row path.

**Which batches take it** (:func:`event_frame`; one pass over the changes, never wrong: any
doubt means the row path). A keyed table, no TRUNCATE in the batch (the caller checks), and
every change of the table is

* an ``I``, ``U`` or ``D`` with no ``missing`` columns (GoldenGate ``_isMissing``, wal2json
  unchanged TOAST values): nothing is kept from a stored row;
* an ``I``/``U`` whose after image carries every key column, none NULL; a ``U``'s after image
  carries every table column (a complete image: partial updates need the stored values);
* a ``D`` whose before image carries every key column, none NULL;
* not a key change: a ``U`` whose before image carries the key has the same raw key values as
  its after image;
* coercible: every value of its images converts to its column's Hive type
  (:func:`coerce_column`, which agrees with :func:`acidflow.cdc.changes.coerce` value for value;
  a value that does not convert is a bad record of the row path, so the batch goes there).

Changes parsed straight into columns (``acidflow.sources.fastparse``: no ``Change`` per event)
are taken by :func:`column_frame`, which checks the same conditions on the columns and gives the
same frame (or the same "no").

Key columns of type float/double (NaN, -0.0) are left to the row path. All three policies
(:class:`acidflow.cdc.changes.Policies`), default or not, are honoured here.

**The fold** (:func:`fold_frame`): events sorted by (key, position, input order); per key the
late-event rule (:func:`acidflow.engine.ordering.is_late`, one home) against the stored row's
``_cdc_position`` (NULL -- a row written outside CDC or one whose position the lookup did not
read -- is older than every event) or the key's tombstone; the remaining events replay the
row path's state machine (policies included) on op codes only; the latest surviving ``I``/``U``
event's coerced after image is the new row version. Keys are visited in first-seen order, as
the row path's ``dict`` does, so inserts, deletes, bad records and tombstones come out in the
same order (the same ROW__IDs are assigned).

Environment: ``ACIDFLOW_CDC_COLUMNAR=0`` forces the row path (as ``CdcOptions(columnar=False)``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import and_, attrgetter, eq, is_not, not_
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidflow.cdc import changes as chg
from acidflow.engine import ordering
from acidflow.format import types as htypes
from acidflow.read.snapshot import ROW_ID
from acidflow.sources.columns import ABSENT, EventChanges, TableColumns
from acidflow.sources.records import Change

#: ``ACIDFLOW_CDC_COLUMNAR=0`` sends every batch the row path (equivalence tests, triage).
ENABLED = os.environ.get("ACIDFLOW_CDC_COLUMNAR", "1") not in ("0", "false", "no")

_NONE = type(None)
_STR_TYPES = {str, _NONE}
_INT_TYPES = {int, _NONE}
_INT_ARROW = {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64()}
# Hive timestamp / date text Arrow's ISO-8601 cast reads exactly as ``coerce`` does; anything
# else (GoldenGate's ``:`` separator, offsets, 7+ fraction digits, blanks) goes value by value
_TS_TEXT = (
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[ T]([01]\d|2[0-3]):[0-5]\d:[0-5]\d"
    r"(\.\d{1,6})?$"
)
_DATE_TEXT = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"
_NO_KEY_TYPES = ("float", "double")


@dataclass
class EventFrame:
    """The coerced events of one table's batch (one per change, in input order).

    Attributes:
        changes: the changes (``changes[i]`` is event i: bad records are made from it; for a
            frame of columns, :class:`acidflow.sources.columns.EventChanges` makes each when
            asked for).
        ops: op code per event (``I``/``U``/``D``).
        positions: ordering value per event.
        seqs: ``Change.seq`` per event (input order).
        rows: the after images of the ``I``/``U`` events (in input order), every table column
            (``columns`` order, Hive-typed Arrow arrays; NULL for columns an insert does not
            carry).
        keys: the key columns per event (from the after image for ``I``/``U``, the before
            image for ``D``), Arrow arrays of the key columns' types.
        row_of: event index -> its row in ``rows`` (-1 for ``D`` events).
    """

    changes: Sequence[Change]
    ops: list[str]
    positions: list[str]
    seqs: list[int]
    rows: pa.Table
    keys: pa.Table
    row_of: np.ndarray


@dataclass
class ColumnarPlan:
    """A :class:`acidflow.cdc.changes.MergePlan` whose row versions are Arrow tables.

    Attributes:
        plan: statistics, bad records and tombstones (``inserts``/``deletes`` left empty).
        inserts: new row versions, the table's columns and Arrow types
            (``acidflow.format.types.arrow_schema``), ``_cdc_position`` set.
        deletes: stored versions to delete: the partition columns, ``owid`` (bigint),
            ``bprop`` (int), ``rowid`` (bigint) -- ``Transaction.apply_row_changes``' shape.
    """

    plan: chg.MergePlan
    inserts: pa.Table
    deletes: pa.Table


def enabled(option: bool) -> bool:
    """Whether a batch may take the fast path (the option and ``ACIDFLOW_CDC_COLUMNAR``)."""
    return option and ENABLED


# ----------------------------------------------------------------------------- coercion


def coerce_column(values: list[Any], hive_type: str) -> pa.Array:
    """The Arrow array (``acidflow.format.types.arrow_type(hive_type)``) of ``values`` coerced
    to ``hive_type``: the values :func:`acidflow.cdc.changes.coerce` returns, value for value.
    Strings, integers, ISO timestamps and dates are converted by Arrow (after checks that
    ``coerce`` would return the same), everything else through ``coerce`` itself.

    Raises:
        acidflow.cdc.changes.CoercionError: a value ``coerce`` refuses.
    """
    arrow_type = htypes.arrow_type(hive_type)
    kinds = set(map(type, values))
    fast: pa.Array | None = None
    if hive_type == "string" and kinds <= _STR_TYPES:
        fast = pa.array(values, pa.string())
    elif hive_type in _INT_ARROW and kinds <= _INT_TYPES:
        try:
            fast = pa.array(values, pa.int64()).cast(arrow_type)  # range-checked cast
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            fast = None  # out of range: coerce names the value
    elif hive_type in ("timestamp", "date") and kinds <= _STR_TYPES:
        text = pa.array(values, pa.string())
        pattern = _TS_TEXT if hive_type == "timestamp" else _DATE_TEXT
        ok = (
            pc.all(pc.match_substring_regex(text, pattern)).as_py() is not False
            and not pc.any(pc.starts_with(text, "0000")).as_py()
        )
        if ok:
            try:
                fast = text.cast(arrow_type)
            except pa.ArrowInvalid:  # e.g. February 30: coerce names the value
                fast = None
    if fast is not None:
        return fast
    return pa.array([chg.coerce(v, hive_type) for v in values], arrow_type)


def _column(images: list[dict[str, Any]], name: str) -> list[Any]:
    return list(map(dict.get, images, repeat(name)))


_ABSENT = object()
_KEYS_GE: Callable[[Any, Any], bool] = type({}.keys()).__ge__


def _complete(afters: list[dict[str, Any]], names: frozenset[str]) -> bool:
    """Every image carries every column of ``names``."""
    return all(map(_KEYS_GE, map(dict.keys, afters), repeat(names)))


def event_frame(
    changes: list[Change], columns: list[tuple[str, str]], key_cols: list[str]
) -> EventFrame | None:
    """The batch's events as columns, or None when the batch must go the row path (see the
    module docstring for the exact conditions)."""
    types = dict(columns)
    if not key_cols or any(types.get(k) in _NO_KEY_TYPES or k not in types for k in key_cols):
        return None
    ops = list(map(attrgetter("op"), changes))
    if any(map(attrgetter("missing"), changes)) or not set(ops) <= {"I", "U", "D"}:
        return None
    afters_all = list(map(attrgetter("after"), changes))
    befores_all = list(map(attrgetter("before"), changes))
    is_delete = list(map(eq, ops, repeat("D")))
    is_write = list(map(not_, is_delete))
    afters = list(compress(afters_all, is_write))
    del_befores = list(compress(befores_all, is_delete))
    if None in afters or None in del_befores:
        return None
    data_names = [c for c, _ in columns if c != chg.POSITION_COLUMN]
    is_update = list(map(eq, ops, repeat("U")))
    if not _complete(list(compress(afters_all, is_update)), frozenset(data_names)):
        return None
    with_before = list(map(and_, is_update, map(is_not, befores_all, repeat(None))))
    u_befores = list(compress(befores_all, with_before))
    u_afters = list(compress(afters_all, with_before))
    for k in key_cols:  # a key change (or a key the row path might see as one): row path
        old = list(map(dict.get, u_befores, repeat(k), repeat(_ABSENT)))
        new = list(map(dict.get, u_afters, repeat(k)))
        if old != new and any(o is not _ABSENT and o != n for o, n in zip(old, new)):
            return None
    try:
        rows = {n: coerce_column(_column(afters, n), types[n]) for n in data_names}
        del_keys = {k: coerce_column(_column(del_befores, k), types[k]) for k in key_cols}
        befores = [b for b in befores_all if b]
        for n in set().union(*befores) & set(types):  # the row path quarantines these errors
            coerce_column(_column(befores, n), types[n])
    except chg.CoercionError:
        return None
    return _assemble(
        list(changes),
        ops,
        list(map(attrgetter("position"), changes)),
        list(map(attrgetter("seq"), changes)),
        columns,
        key_cols,
        rows,
        del_keys,
        is_write,
        is_delete,
    )


def column_frame(
    tc: TableColumns, columns: list[tuple[str, str]], key_cols: list[str]
) -> EventFrame | None:
    """:func:`event_frame` of a table's changes held as columns
    (``acidflow.sources.fastparse.parse_columns``): the same conditions (module docstring) on
    the same values, the same frame or the same None; no :class:`Change` is made (``changes``
    makes one when a bad record needs it)."""
    types = dict(columns)
    if not key_cols or any(types.get(k) in _NO_KEY_TYPES or k not in types for k in key_cols):
        return None
    ops = tc.ops
    if not set(ops) <= {"I", "U", "D"}:
        return None
    after, before = tc.after, tc.before
    is_delete = list(map(eq, ops, repeat("D")))
    is_write = list(map(not_, is_delete))
    if not all(compress(after.present, is_write)) or not all(compress(before.present, is_delete)):
        return None
    data_names = [c for c, _ in columns if c != chg.POSITION_COLUMN]
    is_update = list(map(eq, ops, repeat("U")))
    if any(is_update):  # complete after images
        for n in data_names:
            col = after.values.get(n)
            if col is None or any(v is ABSENT for v in compress(col, is_update)):
                return None
    with_before = list(map(and_, is_update, before.present))
    absent = [ABSENT] * len(ops)
    for k in key_cols:  # a key change (or a key the row path might see as one): row path
        old = list(compress(before.values.get(k, absent), with_before))
        new = [
            None if v is ABSENT else v for v in compress(after.values.get(k, absent), with_before)
        ]
        if old != new and any(o is not ABSENT and o != n for o, n in zip(old, new)):
            return None
    nonempty = [False] * len(ops)
    for col in before.values.values():
        nonempty = [e or v is not ABSENT for e, v in zip(nonempty, col)]

    def values(img: Any, name: str, mask: list[bool]) -> list[Any]:
        col = img.values.get(name)
        if col is None:
            return [None] * sum(mask)
        return [None if v is ABSENT else v for v in compress(col, mask)]

    try:
        rows = {n: coerce_column(values(after, n, is_write), types[n]) for n in data_names}
        del_keys = {k: coerce_column(values(before, k, is_delete), types[k]) for k in key_cols}
        for n in before.values.keys() & types.keys():  # the row path quarantines these errors
            if any(v is not ABSENT for v in before.values[n]):
                coerce_column(values(before, n, nonempty), types[n])
    except chg.CoercionError:
        return None
    return _assemble(
        EventChanges(tc),
        ops,
        tc.positions,
        tc.seqs,
        columns,
        key_cols,
        rows,
        del_keys,
        is_write,
        is_delete,
    )


def _assemble(
    changes: Sequence[Change],
    ops: list[str],
    positions: list[str],
    seqs: list[int],
    columns: list[tuple[str, str]],
    key_cols: list[str],
    rows: dict[str, pa.Array],
    del_keys: dict[str, pa.Array],
    is_write: list[bool],
    is_delete: list[bool],
) -> EventFrame | None:
    """The :class:`EventFrame` of coerced write rows and delete keys (None: a NULL key)."""
    if any(rows[k].null_count or del_keys[k].null_count for k in key_cols):
        return None
    n_writes = sum(is_write)
    schema = htypes.arrow_schema(columns)
    table = pa.Table.from_arrays(
        [rows[f.name] if f.name in rows else pa.nulls(n_writes, f.type) for f in schema],
        schema=schema,
    )
    # events in input order: writes then deletes, put back in place by one take
    writes = np.flatnonzero(np.array(is_write, dtype=bool))
    deletes = np.flatnonzero(np.array(is_delete, dtype=bool))
    where = np.empty(len(ops), dtype=np.int64)
    where[writes] = np.arange(len(writes))
    where[deletes] = np.arange(len(writes), len(ops))
    keys = pa.table(
        {k: pa.concat_arrays([rows[k], del_keys[k]]).take(pa.array(where)) for k in key_cols}
    )
    row_of = np.full(len(ops), -1, dtype=np.int64)
    row_of[writes] = np.arange(len(writes))
    return EventFrame(changes, ops, positions, seqs, table, keys, row_of)


# ----------------------------------------------------------------------------- fold


@dataclass
class KeyGroups:
    """The distinct keys of an :class:`EventFrame`, each with its events in fold order.

    Attributes:
        keys: one row per distinct key (key columns), in first-seen order.
        order: event indexes sorted by (key, position, ``Change.seq``) -- the row path's order
            (``seq`` ascends with the input order; equal (position, seq) pairs keep it).
        starts, ends: ``order[starts[g]:ends[g]]`` are key g's events.
    """

    keys: pa.Table
    order: list[int]
    starts: list[int]
    ends: list[int]


def key_groups(frame: EventFrame) -> KeyGroups:
    """Group the frame's events by key (see :class:`KeyGroups`)."""
    n = len(frame.ops)
    if n == 0:
        return KeyGroups(frame.keys, [], [], [])
    sortable = frame.keys.append_column(
        "_pos", pa.array(frame.positions, pa.string())
    ).append_column("_seq", pa.array(frame.seqs, pa.int64()))
    order = pc.sort_indices(sortable, [(c, "ascending") for c in sortable.column_names])
    ordered = frame.keys.take(order)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for name in ordered.column_names:
        col = ordered.column(name).combine_chunks()
        same = pc.equal(col.slice(1), col.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        new[1:] |= ~same
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    order_np = order.to_numpy()
    first_seen = np.minimum.reduceat(order_np, starts)
    by_seen = np.argsort(first_seen, kind="stable")
    return KeyGroups(
        ordered.take(pa.array(starts[by_seen])),
        order_np.tolist(),
        starts[by_seen].tolist(),
        ends[by_seen].tolist(),
    )


def _stored_match(groups: KeyGroups, found: pa.Table, key_cols: list[str]) -> list[int] | None:
    """Row of ``found`` per key group (-1: not stored); None when a key is stored twice
    (the row path keeps the last one: left to it)."""
    n_groups = groups.keys.num_rows
    match = np.full(n_groups, -1, dtype=np.int64)
    if found.num_rows == 0:
        return match.tolist()
    left = groups.keys.select(key_cols).append_column(
        "_g", pa.array(np.arange(n_groups, dtype=np.int64))
    )
    right = pa.table(
        {k: found.column(k).cast(groups.keys.schema.field(k).type) for k in key_cols}
    ).append_column("_f", pa.array(np.arange(found.num_rows, dtype=np.int64)))
    joined = left.join(right, key_cols, join_type="inner", use_threads=False)
    g = joined.column("_g").to_numpy()
    if len(np.unique(g)) != len(g):
        return None
    match[g] = joined.column("_f").to_numpy()
    return match.tolist()


def key_tuples(keys: pa.Table, key_cols: list[str]) -> list[tuple]:
    """Key tuples (Python values as :func:`acidflow.cdc.changes.coerce` gives them)."""
    return list(zip(*(keys.column(k).to_pylist() for k in key_cols)))


def fold_frame(
    frame: EventFrame,
    groups: KeyGroups,
    found: pa.Table,
    tombstones: Callable[[list[tuple]], dict[tuple, str]],
    key_cols: list[str],
    partition_columns: list[tuple[str, str]],
    policies: chg.Policies,
) -> ColumnarPlan | None:
    """:func:`acidflow.cdc.changes.fold_events` on an :class:`EventFrame`.

    Args:
        found: the stored versions of the groups' keys (key columns, partition columns,
            ``_cdc_position`` -- absent or NULL where not read -- and ROW__ID), as
            ``acidflow.cdc.stored.lookup_found`` returns them.
        tombstones: ``f(key tuples not stored) -> {key tuple: position of its last delete}``.
    Returns:
        :class:`ColumnarPlan`; None when ``found`` holds a key twice (row path).
    """
    match = _stored_match(groups, found, key_cols)
    if match is None:
        return None
    stored_pos = (
        found.column(chg.POSITION_COLUMN).to_pylist()
        if chg.POSITION_COLUMN in found.column_names
        else [None] * found.num_rows
    )
    missing_groups = [g for g, f in enumerate(match) if f < 0]
    missing_keys = (
        key_tuples(groups.keys.take(pa.array(missing_groups, pa.int64())), key_cols)
        if missing_groups
        else []
    )
    tomb_by_key = tombstones(missing_keys) if missing_keys else {}
    floor_of: dict[int, str] = {
        g: tomb_by_key[k] for g, k in zip(missing_groups, missing_keys) if k in tomb_by_key
    }
    plan = chg.MergePlan()
    st = plan.stats
    st["events"] = len(frame.ops)
    ops, positions, order, changes = frame.ops, frame.positions, groups.order, frame.changes
    upd_missing = policies.update_missing == "quarantine"
    ins_existing = policies.insert_existing == "quarantine"
    del_missing = policies.delete_missing == "quarantine"
    is_late = ordering.is_late
    insert_events: list[int] = []
    insert_positions: list[str] = []
    delete_rows: list[int] = []
    tomb_groups: list[tuple[int, str]] = []
    late = deletes_missing = updates_missing = inserts_existing = 0
    for g, (s, e) in enumerate(zip(groups.starts, groups.ends)):
        f = match[g]
        exists = f >= 0
        floor = stored_pos[f] if exists else floor_of.get(g)
        changed, last, final = False, "", -1
        for j in range(s, e):
            i = order[j]
            pos = positions[i]
            if floor is not None and is_late(pos, floor):
                late += 1
                continue
            op = ops[i]
            if op == "D":
                if not exists:
                    if del_missing:
                        plan.bad.append(
                            chg.bad_record(changes[i], "delete of a key that is not stored")
                        )
                        continue
                    deletes_missing += 1
                exists, final = False, -1
            elif op == "I":
                if exists:
                    if ins_existing:
                        plan.bad.append(
                            chg.bad_record(changes[i], "insert of a key that is already stored")
                        )
                        continue
                    inserts_existing += 1
                exists, final = True, i
            else:  # U with a complete after image: the image is the row
                if not exists:
                    if upd_missing:
                        plan.bad.append(
                            chg.bad_record(changes[i], "update of a key that is not stored")
                        )
                        continue
                    updates_missing += 1
                exists, final = True, i
            changed, last = True, pos
        if not changed:
            continue
        if final < 0:
            tomb_groups.append((g, last))
        else:
            insert_events.append(final)
            insert_positions.append(last)
        if f >= 0:
            delete_rows.append(f)
            if final < 0:
                st["rows_deleted"] += 1
            else:
                st["rows_updated"] += 1
        elif final >= 0:  # a key not stored and deleted in the end leaves no row version
            st["rows_inserted"] += 1
    st.update(
        ignored_late=late,
        deletes_of_missing=deletes_missing,
        updates_of_missing=updates_missing,
        inserts_of_existing=inserts_existing,
        quarantined=len(plan.bad),
    )
    if tomb_groups:
        tkeys = key_tuples(
            groups.keys.take(pa.array([g for g, _ in tomb_groups], pa.int64())), key_cols
        )
        plan.tombstones = [(k, pos) for k, (_, pos) in zip(tkeys, tomb_groups)]
    inserts = frame.rows.take(pa.array(frame.row_of[np.array(insert_events, dtype=np.int64)]))
    pos_index = inserts.schema.get_field_index(chg.POSITION_COLUMN)
    if pos_index >= 0:
        inserts = inserts.set_column(
            pos_index, inserts.schema.field(pos_index), pa.array(insert_positions, pa.string())
        )
    return ColumnarPlan(plan, inserts, delete_events(found, delete_rows, partition_columns))


def delete_events(
    found: pa.Table, rows: list[int], partition_columns: list[tuple[str, str]]
) -> pa.Table:
    """The delete-event table of ``Transaction.apply_row_changes`` (partition columns,
    ``owid``, ``bprop``, ``rowid``) for rows ``rows`` of a lookup result."""
    taken = found.take(pa.array(rows, pa.int64()))
    rid = taken.column(ROW_ID).combine_chunks()
    schema = htypes.arrow_schema(
        partition_columns + [("owid", "bigint"), ("bprop", "int"), ("rowid", "bigint")]
    )
    arrays = [taken.column(p).cast(schema.field(p).type) for p, _ in partition_columns]
    arrays += [
        rid.field("writeid").cast(pa.int64()),
        rid.field("bucketid").cast(pa.int32()),
        rid.field("rowid").cast(pa.int64()),
    ]
    return pa.Table.from_arrays(arrays, schema=schema)
