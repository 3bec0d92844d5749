"""The canonical change frame and the merge rules of a CDC batch (pure: no Spark, no I/O).

:func:`fold` turns the changes of one table in one batch, plus the stored versions of the keys
they touch, into a :class:`MergePlan`: the stored row versions to delete (by ROW__ID) and the
new row versions to insert -- Hive's split-update (docs/hive-acid-format.md §5) -- with the
statistics the commit record keeps. The rules, in the order they apply:

1. **Late events.** An event whose ordering value is not newer than the stored version of its
   key (``position <= stored _cdc_position``, :func:`acidflow.engine.ordering.is_late`, the rule
   ``Transaction.upsert(ordering_field=...)`` shares) is ignored and counted
   (``ignored_late``): late events never overwrite newer rows.
2. **Latest event per key.** The remaining events of a key are applied in ordering-value order
   (ties keep input order): an update fills only the columns it carries (absent or
   ``_isMissing`` columns keep their current value), an insert sets every column, a delete
   removes the key.
3. **Policies** (:class:`Policies`) for events that contradict the table: update of a missing
   key (``insert`` it, default; or ``quarantine``), insert of an existing key (``update`` it,
   default; or ``quarantine``), delete of a missing key (``count`` it, default; or
   ``quarantine``).
4. **Net effect.** Per key only the final state is written: stored + final row -> one update
   (delete event + insert event), stored + deleted -> one delete event, new + final row -> one
   insert event, new + deleted -> nothing.

A change whose key has a NULL in a key column is quarantined with the reason
:func:`acidflow.format.keys.null_key_reason` (the NULL-key rule, as ``acidflow ingest`` does).

An update whose before image carries a different key than its after image (a key change) is a
delete of the old key plus an insert of the new one. Keyless tables (no primary key) take
inserts; their updates and deletes need the whole old row (replica identity FULL) and are
matched on every column (:func:`fold_keyless`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from acidflow.engine import ordering
from acidflow.errors import AcidflowError
from acidflow.format import keys
from acidflow.format import types as htypes
from acidflow.format.hivetypes import CharType, DecimalType, PrimitiveType, VarcharType
from acidflow.sources.records import BadRecord, Change

#: the bookkeeping column holding the ordering value of the event that wrote the row version
POSITION_COLUMN = "_cdc_position"

UPDATE_MISSING = ("insert", "quarantine")
INSERT_EXISTING = ("update", "quarantine")
DELETE_MISSING = ("count", "quarantine")


@dataclass(frozen=True)
class Policies:
    """What to do with events that contradict the stored table.

    Attributes:
        update_missing: update of a key that is not stored: ``"insert"`` (default; columns the
            update does not carry become NULL) or ``"quarantine"``.
        insert_existing: insert of a key that is stored: ``"update"`` (default) or
            ``"quarantine"``.
        delete_missing: delete of a key that is not stored: ``"count"`` (default; counted as
            ``deletes_of_missing``) or ``"quarantine"``.
    Raises:
        ValueError: unknown policy value.
    """

    update_missing: str = "insert"
    insert_existing: str = "update"
    delete_missing: str = "count"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("update_missing", UPDATE_MISSING),
            ("insert_existing", INSERT_EXISTING),
            ("delete_missing", DELETE_MISSING),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"policy {name} must be one of {', '.join(allowed)}, "
                    f"got {getattr(self, name)!r}"
                )


@dataclass
class StoredRow:
    """The visible version of a key at the writer's snapshot.

    Attributes:
        row: ``{column: value}`` of every table column (partition columns included).
        row_id: ``(originalTransaction, bucket property, rowId)`` -- its ROW__ID.
        position: its ``_cdc_position`` (``None`` for rows written outside CDC).
    """

    row: dict[str, Any]
    row_id: tuple[int, int, int]
    position: str | None


@dataclass
class MergePlan:
    """What one batch does to one table.

    Attributes:
        deletes: stored versions to delete: ``(row, ROW__ID)`` (the row gives the partition).
        inserts: new row versions (every column, ``_cdc_position`` set).
        stats: ``rows_inserted``, ``rows_updated``, ``rows_deleted``, ``ignored_late``,
            ``deletes_of_missing``, ``updates_of_missing``, ``inserts_of_existing``,
            ``quarantined``, ``events``.
        bad: events quarantined by the coercion or the policies.
        tombstones: ``[(key tuple, position)]`` of keys whose final state is deleted (the
            catalog keeps them so later-arriving older events cannot resurrect the key).
    """

    deletes: list[tuple[dict[str, Any], tuple[int, int, int]]] = field(default_factory=list)
    inserts: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, int] = field(
        default_factory=lambda: {
            "events": 0,
            "rows_inserted": 0,
            "rows_updated": 0,
            "rows_deleted": 0,
            "ignored_late": 0,
            "deletes_of_missing": 0,
            "updates_of_missing": 0,
            "inserts_of_existing": 0,
            "quarantined": 0,
        }
    )
    bad: list[BadRecord] = field(default_factory=list)
    tombstones: list[tuple[tuple, str]] = field(default_factory=list)


# ----------------------------------------------------------------------------- coercion


class CoercionError(AcidflowError, ValueError):
    """A value does not fit its column's Hive type (message = quarantine reason)."""


_INT_RANGE = {"tinyint": 7, "smallint": 15, "int": 31, "bigint": 63}


def _parse_timestamp(text: str) -> datetime:
    t = text.strip().replace("T", " ", 1)
    if len(t) >= 11 and t[10] == ":":  # GoldenGate 2024-01-02:03:04:05
        t = t[:10] + " " + t[11:]
    # PostgreSQL writes offsets as +00 / +05:30; fromisoformat wants +HH:MM
    if len(t) > 19 and t[-3] in "+-" and t[-2:].isdigit():
        t = t + ":00"
    try:
        ts = datetime.fromisoformat(t)
    except ValueError as e:
        raise CoercionError(f"not a timestamp: {text!r}") from e
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts


def coerce(value: Any, hive_type: str) -> Any:
    """Convert a change-record value to the Python value of a Hive-typed column.

    Integers (range-checked), float/double, decimal(p,s) (rounded half-even to s digits, at most
    p-s integer digits), boolean (``true/false/t/f/1/0``), string/varchar/char (JSON objects and
    arrays as JSON text; varchar/char longer than n rejected), date (``YYYY-MM-DD``, the date of
    a timestamp), timestamp (ISO or PostgreSQL text, GoldenGate ``YYYY-MM-DD:HH:MM:SS``; with an
    offset converted to UTC), binary (bytes, or PostgreSQL ``\\x..`` hex). ``None`` stays None.

    Raises:
        CoercionError: the value does not fit, with the reason.
    """
    if value is None:
        return None
    vt = type(value)  # fast paths for the commonest cases (exact types: bool is not int)
    if vt is str and hive_type == "string":
        return value
    if vt is int and hive_type in _INT_RANGE:
        bits = _INT_RANGE[hive_type]
        if -(1 << bits) <= value < (1 << bits):
            return value
    node = htypes.mapped(hive_type)  # the typed form; HiveTypeError for unmapped types
    try:
        if isinstance(node, PrimitiveType):
            name = node.name
            if name in _INT_RANGE:
                if isinstance(value, bool):
                    raise CoercionError(f"boolean {value!r} for {name}")
                if isinstance(value, (float, Decimal)) and value != int(value):
                    raise CoercionError(f"fraction {value!r} for {name}")
                v = int(value)
                bits = _INT_RANGE[name]
                if not -(1 << bits) <= v < (1 << bits):
                    raise CoercionError(f"{v} out of range for {name}")
                return v
            if name in ("float", "double"):
                if isinstance(value, bool):
                    raise CoercionError(f"boolean {value!r} for {name}")
                return float(value)
            if name == "boolean":
                if isinstance(value, bool):
                    return value
                text = str(value).strip().lower()
                if text in ("true", "t", "1", "yes", "y"):
                    return True
                if text in ("false", "f", "0", "no", "n"):
                    return False
                raise CoercionError(f"not a boolean: {value!r}")
            if name == "string":
                return _text(value)
            if name == "date":
                if isinstance(value, datetime):
                    return value.date()
                if isinstance(value, date):
                    return value
                text = str(value).strip()
                if len(text) > 10:
                    return _parse_timestamp(text).date()
                return date.fromisoformat(text)
            if name == "timestamp":
                if isinstance(value, datetime):
                    return (
                        value.astimezone(timezone.utc).replace(tzinfo=None)
                        if value.tzinfo
                        else value
                    )
                if isinstance(value, date):
                    return datetime(value.year, value.month, value.day)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    # Debezium's schemaless JSON: an epoch count whose unit (ms, us, ns) only
                    # its schema says (io.debezium.time.Timestamp / MicroTimestamp / ...)
                    raise CoercionError(
                        f"not a timestamp: the number {value!r} (an epoch count of unknown "
                        "unit: Debezium's JsonConverter without schemas; set "
                        "value.converter.schemas.enable=true or use Avro)"
                    )
                return _parse_timestamp(str(value))
            if name == "binary":
                if isinstance(value, (bytes, bytearray)):
                    return bytes(value)
                text = str(value)
                if text.startswith("\\x"):
                    return bytes.fromhex(text[2:])
                return text.encode("utf-8")
            raise CoercionError(f"unsupported column type {hive_type}")
        if isinstance(node, DecimalType):
            p, s = node.precision, node.scale
            if isinstance(value, bool):
                raise CoercionError(f"boolean {value!r} for {hive_type}")
            d = Decimal(str(value)).quantize(Decimal(1).scaleb(-s))
            if d.adjusted() >= p - s:
                raise CoercionError(f"{value!r} does not fit {hive_type}")
            return d
        if isinstance(node, (VarcharType, CharType)):
            text = _text(value)
            if isinstance(node, CharType):
                text = text.rstrip(" ")
            if len(text) > node.length:
                raise CoercionError(f"{len(text)} characters do not fit {hive_type}")
            return text
        # complex types: accept JSON-shaped values as they are
        return value
    except CoercionError:
        raise
    except (ValueError, TypeError, InvalidOperation, OverflowError) as e:
        raise CoercionError(f"{value!r} is not a valid {hive_type}: {e}") from e


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def coerce_image(image: dict[str, Any] | None, types: dict[str, str]) -> dict[str, Any] | None:
    """Coerce every known column of an image; unknown columns are dropped (schema drift is
    decided before, see :func:`new_columns`).

    Raises:
        CoercionError: naming the column.
    """
    if image is None:
        return None
    out = {}
    for name, value in image.items():
        t = types.get(name)
        if t is None:
            continue
        try:
            out[name] = coerce(value, t)
        except CoercionError as e:
            raise CoercionError(f"column {name}: {e}") from None
    return out


def after_last_truncate(changes: list[Change]) -> tuple[list[Change], bool]:
    """The changes after the table's last TRUNCATE (in ordering-value order) and whether there
    was one: a truncate makes every earlier change and every stored row irrelevant."""
    truncates = [c for c in changes if c.op == "T"]
    if not truncates:
        return changes, False
    last = max(truncates, key=lambda c: (c.position, c.seq))
    return [
        c for c in changes if c.op != "T" and (c.position, c.seq) > (last.position, last.seq)
    ], True


def new_columns(changes: list[Change], known: set[str]) -> list[str]:
    """Columns present in the changes' images but not in ``known``, in first-seen order."""
    images = [img for ch in changes for img in (ch.after, ch.before) if img]
    if set().union(*images) <= known | {POSITION_COLUMN}:  # the common case, at C speed
        return []
    seen: dict[str, None] = {}
    for ch in changes:
        for img in (ch.after, ch.before):
            for name in img or ():
                if name not in known and name != POSITION_COLUMN:
                    seen.setdefault(name, None)
    return list(seen)


# ----------------------------------------------------------------------------- fold


def _key(image: dict[str, Any] | None, key_cols: list[str]) -> tuple | None:
    if image is None or any(k not in image for k in key_cols):
        return None
    return tuple(image[k] for k in key_cols)


def bad_record(ch: Change, reason: str) -> BadRecord:
    """The change as a quarantine record (its canonical fields as JSON) with ``reason``."""
    return BadRecord(
        ch.source,
        reason,
        json.dumps(
            {
                "table": ch.table,
                "op": ch.op,
                "position": ch.position,
                "before": ch.before,
                "after": ch.after,
            },
            default=str,
            sort_keys=True,
        ),
        ch.table,
    )


@dataclass
class _Event:
    op: str
    key: tuple
    position: str
    seq: int
    row: dict[str, Any] | None
    missing: frozenset[str]
    change: Change


def normalize_events(
    changes: list[Change], types: dict[str, str], key_cols: list[str], plan: MergePlan
) -> list[_Event]:
    """Coerce images to the table's types and split key changes; bad events go to
    ``plan.bad``. Returns the events of keyed tables with their keys."""
    events: list[_Event] = []
    for ch in changes:
        plan.stats["events"] += 1
        try:
            after = coerce_image(ch.after, types)
            before = coerce_image(ch.before, types)
        except CoercionError as e:
            plan.bad.append(bad_record(ch, str(e)))
            continue
        new_key = _key(after, key_cols)
        old_key = _key(before, key_cols)
        if ch.op in ("I", "U") and new_key is None:
            missing = [k for k in key_cols if k not in (after or {})]
            plan.bad.append(
                bad_record(ch, f"primary key column(s) {missing} missing in the after image")
            )
            continue
        if ch.op == "D" and old_key is None:
            plan.bad.append(bad_record(ch, "delete without the primary key in its before image"))
            continue
        key = new_key if ch.op in ("I", "U") else old_key
        assert key is not None  # I/U without a new key and D without an old one were refused
        if any(v is None for v in key):
            nulls = [c for c, v in zip(key_cols, key) if v is None]
            plan.bad.append(bad_record(ch, keys.null_key_reason(nulls)))  # the NULL-key rule
            continue
        if ch.op == "U" and old_key is not None and old_key != new_key:
            assert new_key is not None
            events.append(_Event("D", old_key, ch.position, ch.seq, None, frozenset(), ch))
            events.append(_Event("K", new_key, ch.position, ch.seq, after, ch.missing, ch))
            continue
        events.append(_Event(ch.op, key, ch.position, ch.seq, after, ch.missing, ch))
    return events


def keys_needing_stored_rows(events: list[_Event], names: list[str]) -> set[tuple]:
    """Keys whose fold reads stored column values: an update (``U``) whose after image lacks
    some table column (absent, or flagged missing as GoldenGate's ``_isMissing``) keeps the
    stored value of that column. Every other event replaces or deletes the whole row, so for
    its key the stored ROW__ID and ``_cdc_position`` suffice."""
    wanted = [n for n in names if n != POSITION_COLUMN]
    out = set()
    for ev in events:
        if ev.op == "U" and (ev.missing or any(n not in (ev.row or {}) for n in wanted)):
            out.add(ev.key)
    return out


def fold(
    changes: list[Change],
    stored: dict[tuple, StoredRow],
    columns: list[tuple[str, str]],
    key_cols: list[str],
    policies: Policies = Policies(),
    tombstones: dict[tuple, str] | None = None,
) -> MergePlan:
    """Merge one batch's changes of a keyed table with the stored versions of their keys.

    Args:
        changes: the table's changes (source names already mapped, any order).
        stored: ``{key tuple: StoredRow}`` for the keys the changes touch (keys absent here are
            not stored). Key tuples hold values as :func:`coerce` returns them.
        columns: ``[(name, hive type)]`` of the table (data then partition columns), including
            ``_cdc_position``.
        key_cols: primary key column names.
        policies: see :class:`Policies`.
        tombstones: ``{key tuple: position of its last delete}`` for keys that are not stored
            because an earlier batch deleted them; events not newer are late.
    Returns:
        :class:`MergePlan`.
    """
    plan = MergePlan()
    events = normalize_events(changes, dict(columns), key_cols, plan)
    return fold_events(events, stored, [c for c, _ in columns], policies, plan, tombstones)


def fold_events(
    events: list[_Event],
    stored: dict[tuple, StoredRow],
    names: list[str],
    policies: Policies,
    plan: MergePlan,
    tombstones: dict[tuple, str] | None = None,
) -> MergePlan:
    """:func:`fold` on events already normalised by :func:`normalize_events` (so the caller
    can look up the stored versions of exactly their keys in between)."""
    by_key: dict[tuple, list[_Event]] = {}
    for ev in events:
        by_key.setdefault(ev.key, []).append(ev)
    st = plan.stats
    for key, evs in by_key.items():
        evs.sort(key=lambda e: (e.position, e.seq, e.op != "D"))
        old = stored.get(key)
        cur = dict(old.row) if old else None
        floor = old.position if old is not None else (tombstones or {}).get(key)
        changed, last, last_op = False, None, None
        for ev in evs:
            if floor is not None and ordering.is_late(ev.position, floor):
                st["ignored_late"] += 1
                continue
            if ev.op == "D":
                if cur is None:
                    if policies.delete_missing == "quarantine":
                        plan.bad.append(bad_record(ev.change, "delete of a key that is not stored"))
                        continue
                    st["deletes_of_missing"] += 1
                cur = None
            elif ev.op in ("I", "K"):
                row = ev.row or {}  # I, K and U events carry the after image
                if cur is not None and ev.op == "I":
                    if policies.insert_existing == "quarantine":
                        plan.bad.append(
                            bad_record(ev.change, "insert of a key that is already stored")
                        )
                        continue
                    st["inserts_of_existing"] += 1
                cur = {n: row.get(n) for n in names}
            else:  # U
                row = ev.row or {}
                if cur is None:
                    if policies.update_missing == "quarantine":
                        plan.bad.append(bad_record(ev.change, "update of a key that is not stored"))
                        continue
                    st["updates_of_missing"] += 1
                    cur = {n: row.get(n) for n in names}
                else:
                    cur = {
                        n: (row[n] if n in row and n not in ev.missing else cur.get(n))
                        for n in names
                    }
            changed, last, last_op = True, ev.position, ev.op
        if not changed:
            continue
        if cur is None and last_op == "D":
            assert last is not None  # set with last_op
            plan.tombstones.append((key, last))
        if cur is not None:
            cur[POSITION_COLUMN] = last
        if old is not None:
            plan.deletes.append((old.row, old.row_id))
            if cur is None:
                st["rows_deleted"] += 1
            else:
                st["rows_updated"] += 1
                plan.inserts.append(cur)
        elif cur is not None:
            st["rows_inserted"] += 1
            plan.inserts.append(cur)
    st["quarantined"] = len(plan.bad)
    return plan


def fold_keyless(
    changes: list[Change],
    columns: list[tuple[str, str]],
    match: Callable[[dict[str, Any], set[Any]], Any],
) -> MergePlan:
    """Merge one batch's changes of a keyless table (no primary key, e.g. ``pgbench_history``).

    Inserts are appended. An update or delete must carry the whole old row (PostgreSQL
    ``REPLICA IDENTITY FULL``); it changes one row equal to it in every column: first a row
    inserted earlier in the same batch, else a stored row found by
    ``match(before_row, taken_row_ids) -> (row, ROW__ID) | None`` (the caller's lookup, which
    must skip ROW__IDs already taken), else a delete is counted as a delete of a missing row and
    an update is quarantined. Events are applied in ordering-value order; there is no late-event
    check (no key to compare), so idempotence rests on the batch id.

    Returns:
        :class:`MergePlan`.
    """
    plan = MergePlan()
    types = dict(columns)
    names = [c for c, _ in columns if c != POSITION_COLUMN]
    st = plan.stats
    taken: set[tuple[int, int, int]] = set()
    for ch in sorted(changes, key=lambda c: (c.position, c.seq)):
        st["events"] += 1
        try:
            after = coerce_image(ch.after, types)
            before = coerce_image(ch.before, types)
        except CoercionError as e:
            plan.bad.append(bad_record(ch, str(e)))
            continue
        if ch.op == "I":
            assert after is not None  # the sources give every insert its after image
            row = {n: after.get(n) for n in names}
            row[POSITION_COLUMN] = ch.position
            plan.inserts.append(row)
            st["rows_inserted"] += 1
            continue
        if before is None or any(n not in before for n in names):
            plan.bad.append(
                bad_record(
                    ch,
                    "update/delete on a table without a primary key needs "
                    "the whole old row (REPLICA IDENTITY FULL)",
                )
            )
            continue
        new_row: dict[str, Any] | None = None
        if ch.op == "U":
            assert after is not None  # the sources give every update its after image
            new_row = {
                n: (after[n] if n in after and n not in ch.missing else before.get(n))
                for n in names
            }
            new_row[POSITION_COLUMN] = ch.position
        pending = _pending_insert(plan, before, names)
        if pending is not None:  # a row inserted earlier in this batch
            if ch.op == "D":
                del plan.inserts[pending]
                st["rows_inserted"] -= 1
            else:
                assert new_row is not None
                plan.inserts[pending] = new_row
            continue
        found = match(before, taken)
        if found is None:
            if ch.op == "D":
                st["deletes_of_missing"] += 1
            else:
                plan.bad.append(bad_record(ch, "update of a row that is not stored"))
            continue
        taken.add(found[1])
        plan.deletes.append(found)
        if ch.op == "D":
            st["rows_deleted"] += 1
        else:
            assert new_row is not None
            plan.inserts.append(new_row)
            st["rows_updated"] += 1
    st["quarantined"] = len(plan.bad)
    return plan


def _pending_insert(plan: MergePlan, before: dict[str, Any], names: list[str]) -> int | None:
    """Index of a not-yet-written insert equal to ``before`` in every column, or None."""
    for i, row in enumerate(plan.inserts):
        if all(row.get(n) == before.get(n) for n in names):
            return i
    return None
