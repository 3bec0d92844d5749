"""Change files parsed straight into columns (``acidflow.sources.fastparse``) against the
reference parser (``acidflow.sources.formats.parse_lines``) and the columnar fold's frame of its
changes (``acidflow.cdc.columnar.event_frame``): same tables, positions, changes, frames,
folds and bad records, for every format, the sample data and the quarantine cases (no Spark).
"""

from __future__ import annotations

import gc
import gzip
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidflow.cdc import changes as chg
from acidflow.cdc import columnar
from acidflow.cdc.apply import CdcOptions, parse_file
from acidflow.read.snapshot import ROW_ID
from acidflow.sources import columns as cols_mod
from acidflow.sources import fastparse
from acidflow.sources.columns import ColumnStream
from acidflow.sources.formats import parse_lines
from acidflow.sources.kafka import KafkaRecord, decode_records
from acidflow.sources.records import IncompleteTransactionError

REPO = Path(__file__).resolve().parents[2]
SAMPLE = sorted((REPO / "include/sample_data/pgbench/landing").glob("wal2json_*.jsonl.gz"))
QUARANTINE = chg.Policies("quarantine", "quarantine", "quarantine")
ALL = ("goldengate", "debezium", "wal2json")


def _frames_equal(a: columnar.EventFrame | None, b: columnar.EventFrame | None) -> None:
    assert (a is None) == (b is None)
    if a is None or b is None:
        return
    assert a.ops == b.ops and a.positions == b.positions and a.seqs == b.seqs
    assert a.rows.equals(b.rows) and a.keys.equals(b.keys)
    assert a.rows.to_pylist() == b.rows.to_pylist()
    assert a.row_of.tolist() == b.row_of.tolist()
    assert [a.changes[i] for i in range(len(a.ops))] == list(b.changes)


def _fold(frame: columnar.EventFrame, key: list[str], policies: chg.Policies) -> Any:
    """The fold against every other key stored (at the batch's middle position: late events)
    and a tombstone for the first key not stored."""
    groups = columnar.key_groups(frame)
    stored = groups.keys.take(pa.array(range(0, groups.keys.num_rows, 2), pa.int64()))
    n = stored.num_rows
    middle = sorted(frame.positions)[len(frame.positions) // 2]
    rid = pa.StructArray.from_arrays(
        [
            pa.array([1] * n, pa.int64()),
            pa.array([0] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
        ],
        ["writeid", "bucketid", "rowid"],
    )
    found = stored.append_column(chg.POSITION_COLUMN, pa.array([middle] * n, pa.string()))
    found = found.append_column(ROW_ID, rid)
    plan = columnar.fold_frame(
        frame, groups, found, lambda keys: {keys[0]: middle}, key, [], policies
    )
    assert plan is not None
    return (
        plan.plan.stats,
        plan.plan.bad,
        plan.plan.tombstones,
        plan.inserts.to_pylist(),
        plan.deletes.to_pylist(),
    )


def check(
    fmt: str,
    lines: list[str],
    *,
    taken: bool = True,
    columns: dict[str, list[tuple[str, str]]] | None = None,
) -> ColumnStream | None:
    """The columnar parse of ``lines`` equals the reference parse (or is None: ``taken``
    False), and so do the frames and folds of every table (``columns``: the table's Hive
    columns, default the stream's own)."""
    ref = parse_lines(fmt, lines, "f.jsonl")
    fast = fastparse.parse_columns(fmt, lines, "f.jsonl", ALL)
    assert (fast is not None) == taken
    if fast is None:
        return None
    assert ref.bad == [] and fast.bad == []
    assert fast.tables == ref.tables
    assert (fast.first_position, fast.last_position, fast.ignored) == (
        ref.first_position,
        ref.last_position,
        ref.ignored,
    )
    assert fast.count == len(ref.changes)
    mine = [tc.change(i) for tc in fast.frames.values() for i in range(len(tc.ops))]
    assert sorted(mine, key=lambda c: c.seq) == ref.changes
    for t, tc in fast.frames.items():
        src = ref.tables[t]
        cols = (columns or {}).get(t) or [*src.columns.items(), (chg.POSITION_COLUMN, "string")]
        key = list(src.primary_key) or [cols[0][0]]
        theirs = [c for c in ref.changes if c.table == t]
        assert sorted(tc.image_names()) == sorted(chg.new_columns(theirs, set()))
        a = columnar.column_frame(tc, cols, key)
        b = columnar.event_frame(theirs, cols, key)
        _frames_equal(a, b)
        if a is not None and b is not None:
            for policies in (chg.Policies(), QUARANTINE):
                assert _fold(a, key, policies) == _fold(b, key, policies)
    # nothing above parsed the file again; a reader of ``changes`` gets the reference's
    assert fast._materialized is None and fast.change_count() == len(ref.changes)
    assert fast.changes == ref.changes
    return fast


# ----------------------------------------------------------------------------- fixtures


def gg(op: str, i: int, **extra: Any) -> str:
    rec: dict[str, Any] = {
        "table": "QA.CUST",
        "op_type": op,
        "op_ts": f"2024-01-02 03:04:{i % 60:02d}.{i:06d}",
        "current_ts": "x",
        "pos": f"{i:020d}",
        "primary_keys": ["ID"],
        "before": None if op == "I" else {"ID": i % 7},
        "after": None
        if op == "D"
        else {
            "ID": i % 7,
            "NAME": f'n\u00fc"\\{i}',
            "AMT": Decimal(f"{i}.25"),
            "DAY": "2024-03-01",
        },
    }
    rec.update(extra)
    return (
        json.dumps(rec, default=str).replace('"AMT": "', '"AMT": ').replace('", "DAY"', ', "DAY"')
    )


GG = [gg("IUD"[i % 3], i) for i in range(30)]
GG_COLUMNS = {
    "qa.cust": [
        ("id", "bigint"),
        ("name", "string"),
        ("amt", "decimal(10,2)"),
        ("day", "date"),
        (chg.POSITION_COLUMN, "string"),
    ]
}

SCHEMA = {
    "type": "struct",
    "fields": [
        {
            "field": "after",
            "fields": [
                {"field": "id", "type": "int64"},
                {
                    "field": "amount",
                    "type": "bytes",
                    "name": "org.apache.kafka.connect.data.Decimal",
                    "parameters": {"scale": "2", "connect.decimal.precision": "10"},
                },
                {"field": "day", "type": "int32", "name": "io.debezium.time.Date"},
                {"field": "ts", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
            ],
        }
    ],
}


def dbz(op: str, i: int, *, schema: bool = True, txid: str | None = None) -> str:
    payload: dict[str, Any] = {
        "op": op,
        "before": None if op in "cr" else {"id": i % 5},
        "after": None
        if op == "d"
        else {"id": i % 5, "amount": "MDk=", "day": 19000 + i, "ts": 1_700_000_000_000_000 + i},
        "source": {"schema": "public", "table": "orders", "lsn": 1000 + i},
        "ts_ms": i,
    }
    if txid:
        payload["transaction"] = {"id": txid}
    if not schema:
        payload["after"] = payload["after"] and {"id": i % 5, "Name": f"x{i}", "v": 1.5}
        payload["source"] = {"db": "shop", "table": "items", "file": "bin.1", "pos": i}
        return json.dumps({"key": {"id": i % 5}, "value": payload})
    return json.dumps({"schema": SCHEMA, "payload": payload})


DBZ = (
    [json.dumps({"status": "BEGIN", "id": "571:100"})]
    + [dbz("curd"[i % 4], i, txid=f"571:{100 + i}") for i in range(12)]
    + [json.dumps({"status": "END", "id": "571:999", "event_count": 12})]
    + [""]
    + [dbz("cud"[i % 3], i, schema=False) for i in range(9)]
    + [json.dumps({"key": {"id": 1}, "value": None})]
    + [json.dumps({"schema": {}, "payload": {"status": "BEGIN", "id": "9"}})]
    + [json.dumps({"schema": {}, "payload": {"status": "END", "id": "9"}})]
)


def w2j_v2(xid: int, lsn: int, ops: str) -> list[str]:
    out = [json.dumps({"action": "B", "xid": xid, "lsn": f"0/{lsn:X}"})]
    for j, op in enumerate(ops):
        rec: dict[str, Any] = {
            "action": op,
            "lsn": f"0/{lsn + j + 1:X}",
            "schema": "public",
            "table": "acct",
            "pk": [{"name": "aid", "type": "integer"}],
        }
        if op in "IU":
            rec["columns"] = [
                {"name": "aid", "type": "integer", "value": j % 4},
                {"name": "bal", "type": "numeric(12,2)", "value": Decimal(f"{j}.5")},
                {"name": "note", "type": "text", "value": "\u2603\n\t" if j % 2 else None},
                {
                    "name": "at",
                    "type": "timestamp without time zone",
                    "value": "2024-01-02 03:04:05",
                },
            ]
        if op in "UD":
            rec["identity"] = [{"name": "aid", "type": "integer", "value": j % 4}]
        out.append(
            json.dumps(rec, default=str).replace('"value": "' + f"{j}.5" + '"', f'"value": {j}.5')
        )
    out.append(json.dumps({"action": "M", "lsn": f"0/{lsn:X}", "prefix": "p", "content": "c"}))
    out.append(
        json.dumps(
            {"action": "C", "xid": xid, "lsn": f"0/{lsn + 99:X}", "nextlsn": f"0/{lsn + 100:X}"}
        )
    )
    return out


W2J_V2 = w2j_v2(7, 0x1000, "IIUDIU") + w2j_v2(8, 0x2000, "UDI")


def w2j_v1(xid: int, nextlsn: int) -> str:
    return json.dumps(
        {
            "xid": xid,
            "nextlsn": f"0/{nextlsn:X}",
            "change": [
                {
                    "kind": "insert",
                    "schema": "public",
                    "table": "t1",
                    "columnnames": ["id", "v"],
                    "columntypes": ["integer", "character varying(10)"],
                    "columnvalues": [xid, f"v{xid}"],
                    "pk": {"pknames": ["id"], "pktypes": ["integer"]},
                },
                {"kind": "message", "prefix": "x"},
                {
                    "kind": "update",
                    "schema": "public",
                    "table": "t1",
                    "columnnames": ["id", "v"],
                    "columntypes": ["integer", "character varying(10)"],
                    "columnvalues": [xid, "w"],
                    "oldkeys": {"keynames": ["id"], "keytypes": ["integer"], "keyvalues": [xid]},
                },
                {
                    "kind": "delete",
                    "table": "t2",
                    "oldkeys": {"keynames": ["k"], "keytypes": ["text"], "keyvalues": ["a"]},
                },
            ],
        }
    )


W2J_V1 = [w2j_v1(i, 0x3000 + 16 * i) for i in range(1, 6)]


# ----------------------------------------------------------------------------- the formats


def test_goldengate_columns_equal_the_reference():
    fast = check("goldengate", GG, columns=GG_COLUMNS)
    assert fast is not None and list(fast.frames) == ["qa.cust"]
    check("goldengate", GG[:10] + ["", "  "] + GG[10:])  # blank lines keep the line numbers
    ts = gg("U", 3, op_ts="2024-01-02:03:04:05.12")  # a GoldenGate timestamp not canonical
    check("goldengate", [*GG, ts], columns=GG_COLUMNS)


def test_goldengate_transaction_indicators_go_to_the_reference():
    lines = [gg("I", i, txind="W", xid=str(i)) for i in range(4)]
    assert fastparse.parse_columns("goldengate", lines, "f") is None
    stream = parse_file(CdcOptions(fmt="goldengate"), lines, "f")
    assert stream.changes == parse_lines("goldengate", lines, "f").changes


def test_debezium_columns_equal_the_reference():
    fast = check("debezium", DBZ)
    assert fast is not None and set(fast.frames) == {"public.orders", "shop.items"}
    assert fast.tables["public.orders"].columns["amount"] == "decimal(10,2)"


def test_wal2json_v2_and_v1_columns_equal_the_reference():
    fast = check("wal2json", W2J_V2)
    assert fast is not None and fast.ignored == 2
    assert fast.first_position == "0000000000001000"
    fast = check("wal2json", W2J_V1)
    assert fast is not None and set(fast.frames) == {"public.t1", "public.t2"}
    # changes outside a transaction: ordered by their own LSN
    check(
        "wal2json", [line for line in W2J_V2 if '"action": "B"' not in line and '"C"' not in line]
    )


@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: p.name)
def test_sample_data_equal_the_reference(path):
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    ref = parse_lines("wal2json", lines, "f.jsonl")
    truncates = any(c.op == "T" for c in ref.changes)
    check("wal2json", lines, taken=bool(ref.changes) and not truncates)


def test_bench_generator_batch_equals_the_reference(tmp_path):
    bench_generate = pytest.importorskip("bench.generate")
    state = bench_generate.State.initial(500, 1000)
    events = bench_generate.plan_batch(state, 300, np.random.default_rng(3))
    bench_generate.write_batch(state, events, 1, tmp_path / "b.jsonl")
    cols = [
        ("id", "bigint"),
        ("name", "string"),
        ("age", "int"),
        ("city", "string"),
        ("updated_at", "timestamp"),
        ("payload", "string"),
        (chg.POSITION_COLUMN, "string"),
    ]
    lines = (tmp_path / "b.jsonl").read_text().splitlines()
    check("goldengate", lines, columns={"bench.items": cols})


# ----------------------------------------------------------------------------- quarantine

BAD_LINES = {
    "goldengate": [
        "{not json",
        '{"table": "QA.CUST", "op_type": "X", "op_ts": "2024-01-02 03:04:05", "pos": "1"}',
        '{"table": "nodot", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1", "after": {}}',
        '{"table": 5, "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1", "after": {}}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "yesterday", "pos": "1", "after": {"ID": 1}}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "after": {"ID": 1}}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1"}',
        '{"table": "QA.CUST", "op_type": "D", "op_ts": "2024-01-02 03:04:05", "pos": "1"}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1", '
        '"after": [1]}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1", '
        '"after": {"ID": NaN}}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1", '
        '"primary_keys": "ID", "after": {"ID": 1}}',
        '{"table": "QA.CUST", "op_type": "U", "op_ts": "2024-01-02 03:04:05", "pos": "1", '
        '"after": {"ID": 1, "NAME": null, "NAME_isMissing": true}}',
        '{"table": "QA.CUST", "op_type": "I", "op_ts": "2024-01-02 03:04:05", "pos": "1", '
        '"after": {"ID": 1, "id": 2}}',
        "[1, 2]",
    ],
    "debezium": [
        "{not json",
        '{"op": "x", "source": {"table": "t"}, "ts_ms": 1}',
        '{"op": "c", "after": {"id": 1}, "source": {"table": "t"}}',
        '{"op": "c", "after": {"id": 1}, "ts_ms": 1}',
        '{"op": "d", "after": null, "source": {"table": "t"}, "ts_ms": 1}',
        '{"op": "t", "source": {"table": "orders", "schema": "public"}, "ts_ms": 1}',
        '{"key": {"id": 1}, "value": 5}',
        '{"schema": {}, "payload": [1]}',
        '{"op": "c", "after": {"id": NaN}, "source": {"table": "t"}, "ts_ms": 1}',
        '{"op": "c", "after": "x", "source": {"table": "t"}, "ts_ms": 1}',
        json.dumps(
            {
                "schema": SCHEMA,
                "payload": {
                    "op": "c",
                    "after": {"id": 1, "amount": "not base64!", "day": 1, "ts": 1},
                    "source": {"schema": "public", "table": "orders", "lsn": 5},
                },
            }
        ),
        "7",
    ],
    "wal2json": [
        "{not json",
        '{"action": "X"}',
        '{"no": "action"}',
        '{"action": "I", "lsn": "0/10", "table": "t"}',
        '{"action": "I", "lsn": "zz", "table": "t", "columns": []}',
        '{"action": "I", "lsn": "0/10", "columns": [{"name": "a", "value": 1}]}',
        '{"action": "D", "lsn": "0/10", "table": "t"}',
        '{"action": "I", "lsn": "0/10", "table": "t", "columns": [{"value": 1}]}',
        '{"action": "I", "lsn": "0/10", "table": "t", "columns": [{"name": "a", "value": NaN}]}',
        '{"action": "T", "lsn": "0/10", "schema": "public", "table": "acct"}',
        '{"xid": 1, "nextlsn": "0/20", "change": [{"kind": "weird", "table": "t"}]}',
        '{"xid": 1, "nextlsn": "0/20", "change": [{"kind": "truncate", "table": "t"}]}',
        '{"xid": 1, "change": [{"kind": "insert", "table": "t", "columnnames": ["a"], '
        '"columnvalues": [1]}]}',
        '{"xid": 1, "nextlsn": "0/20", "change": [7]}',
    ],
}
GOOD = {"goldengate": GG, "debezium": DBZ, "wal2json": W2J_V2}


@pytest.mark.parametrize(
    "fmt,bad",
    [(fmt, bad) for fmt, lines in BAD_LINES.items() for bad in lines],
    ids=lambda v: v if len(str(v)) < 20 else str(v)[:40],
)
def test_records_the_columns_cannot_take_go_to_the_reference(fmt, bad):
    """A record the reference parser quarantines (or reads with rules the columns do not
    have) makes the file go the reference parser: the same bad records, file, line and reason."""
    good = GOOD[fmt]
    lines = [*good[:3], bad, *good[3:]] if fmt != "wal2json" else [bad, *good]
    ref = parse_lines(fmt, lines, "f.jsonl")
    assert fastparse.parse_columns(fmt, lines, "f.jsonl", ALL) is None
    stream = parse_file(CdcOptions(fmt=fmt), lines, "f.jsonl")
    assert not isinstance(stream, ColumnStream)
    assert stream.bad == ref.bad and stream.changes == ref.changes


@pytest.mark.parametrize("fmt", ["goldengate", "debezium", "wal2json"])
def test_cut_files_raise_the_reference_error(fmt):
    good = GOOD[fmt]
    cut = [*good, good[1][: len(good[1]) // 2]]
    with pytest.raises(IncompleteTransactionError) as ref:
        parse_lines(fmt, cut, "f.jsonl")
    with pytest.raises(IncompleteTransactionError) as got:
        parse_file(CdcOptions(fmt=fmt), cut, "f.jsonl")
    assert str(got.value) == str(ref.value)
    if fmt != "goldengate":  # an open transaction at the end of the file
        opened = good[: len(good) // 2]
        assert fastparse.parse_columns(fmt, opened, "f.jsonl", ALL) is None


def test_values_that_do_not_coerce_send_the_table_to_the_row_path():
    lines = [*GG, gg("I", 40).replace('"DAY": "2024-03-01"', '"DAY": "2024-02-30"')]
    fast = check("goldengate", lines, columns=GG_COLUMNS)
    assert fast is not None
    tc = fast.frames["qa.cust"]
    assert columnar.column_frame(tc, GG_COLUMNS["qa.cust"], ["id"]) is None


def test_parse_file_takes_the_columns_behind_the_columnar_switch(monkeypatch):
    assert isinstance(parse_file(CdcOptions(fmt="goldengate"), GG, "f"), ColumnStream)
    stream = parse_file(CdcOptions(fmt="goldengate", columnar=False), GG, "f")
    assert not isinstance(stream, ColumnStream)
    assert stream.changes == parse_lines("goldengate", GG, "f").changes
    assert isinstance(parse_file(CdcOptions(fmt="wal2json"), W2J_V2, "f"), ColumnStream)
    monkeypatch.setattr(fastparse, "FORMATS", ("goldengate",))
    assert not isinstance(parse_file(CdcOptions(fmt="wal2json"), W2J_V2, "f"), ColumnStream)
    monkeypatch.setattr(cols_mod, "ENABLED", False)
    assert not isinstance(parse_file(CdcOptions(fmt="goldengate"), GG, "f"), ColumnStream)


# ----------------------------------------------------------------------------- property

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
HIVE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": TEXT,
    "bigint": st.integers(-(1 << 63), (1 << 63) - 1) | st.integers(-(1 << 70), 1 << 70),
    "int": st.integers(-(1 << 31), (1 << 31) - 1) | st.integers(-(1 << 40), 1 << 40),
    "decimal(12,3)": st.decimals(-(10**9), 10**9, places=4, allow_nan=False).map(str)
    | st.decimals(-(10**9), 10**9, places=2, allow_nan=False),
    "double": st.floats(allow_nan=True, allow_infinity=False) | st.integers(-5, 5),
    "date": st.dates().map(str) | TEXT,
    "timestamp": st.datetimes().map(lambda d: d.isoformat(sep=" "))
    | st.just("2024-01-02:03:04:05"),
    "boolean": st.booleans(),
}
TYPES = list(HIVE_VALUES)
ROW = st.fixed_dictionaries({t: st.none() | HIVE_VALUES[t] for t in TYPES})
EVENTS = st.lists(
    st.tuples(st.sampled_from("IUD"), st.integers(0, 6), ROW), min_size=1, max_size=12
)


def _json_value(v: Any) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, Decimal):
        return str(v)
    return json.dumps(v)


def _image(cols: dict[str, Any], upper: bool = False) -> str:
    return (
        "{"
        + ", ".join(
            f"{json.dumps(k.upper() if upper else k)}: {_json_value(v)}" for k, v in cols.items()
        )
        + "}"
    )


def _lines(fmt: str, events: list[tuple[str, int, dict[str, Any]]]) -> list[str]:
    out = []
    for i, (op, key, row) in enumerate(events):
        after = {"k": key, **{f"c_{t[:4]}": v for t, v in row.items()}}
        before = {"k": key}
        if fmt == "goldengate":
            out.append(
                f'{{"table": "S.T", "op_type": "{op}", "op_ts": "2024-01-01 00:00:00.{i:06d}", '
                f'"pos": "{i:08d}", "primary_keys": ["K"], '
                f'"before": {"null" if op == "I" else _image(before, True)}, '
                f'"after": {"null" if op == "D" else _image(after, True)}}}'
            )
        elif fmt == "debezium":
            dop = {"I": "c", "U": "u", "D": "d"}[op]
            out.append(
                f'{{"key": {{"k": {key}}}, "value": {{"op": "{dop}", '
                f'"before": {"null" if op == "I" else _image(before)}, '
                f'"after": {"null" if op == "D" else _image(after)}, '
                f'"source": {{"schema": "s", "table": "t", "lsn": {100 + i}}}}}}}'
            )
        else:
            columns = ", ".join(
                f'{{"name": {json.dumps(n)}, "type": "text", "value": {_json_value(v)}}}'
                for n, v in after.items()
            )
            ident = f'[{{"name": "k", "type": "integer", "value": {key}}}]'
            out.append(
                f'{{"action": "{op}", "lsn": "0/{16 + i:X}", "schema": "s", "table": "t", '
                f'"pk": [{{"name": "k", "type": "integer"}}], '
                + (f'"columns": [{columns}], ' if op != "D" else "")
                + f'"identity": {ident}}}'
            )
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(["goldengate", "debezium", "wal2json"]), events=EVENTS)
def test_hypothesis_random_values_of_every_hive_type(fmt, events):
    lines = _lines(fmt, events)
    cols = [("k", "bigint"), *((f"c_{t[:4]}", t) for t in TYPES), (chg.POSITION_COLUMN, "string")]
    nan = any(isinstance(v, float) and math.isnan(v) for _, _, row in events for v in row.values())
    ref = parse_lines(fmt, lines, "f.jsonl")
    fast = fastparse.parse_columns(fmt, lines, "f.jsonl", ALL)
    if fast is None:  # the reference takes it: NaN (msgspec refuses it), a bad record
        assert nan or ref.bad
        return
    check(fmt, lines, columns={"s.t": cols})


# ----------------------------------------------------------------------------- Kafka values

TOPIC = "acf.public.orders"
TXT = "acf.transaction"


def check_kafka(
    records: list[KafkaRecord], *, taken: bool | None = True, fmt: str = "debezium", **kw: Any
) -> None:
    """``decode_records(columns=True)`` equals the record-by-record decoder: offsets, carried
    records, transactions, tables, positions, bad records, changes and frames. ``taken``:
    whether the column decoder must take the records (None: either; the outcome is checked)."""
    ref = decode_records(fmt, records, **kw)
    got = decode_records(fmt, records, columns=True, **kw)
    if taken is not None:
        assert isinstance(got.stream, ColumnStream) == taken
    assert (got.end_offsets, got.carried, got.transactions, got.waiting) == (
        ref.end_offsets,
        ref.carried,
        ref.transactions,
        ref.waiting,
    )
    fast, slow = got.stream, ref.stream
    assert fast.bad == slow.bad and fast.tables == slow.tables
    assert (fast.first_position, fast.last_position) == (slow.first_position, slow.last_position)
    if isinstance(fast, ColumnStream):
        mine = [tc.change(i) for tc in fast.frames.values() for i in range(len(tc.ops))]
        assert sorted(mine, key=lambda c: c.seq) == slow.changes
        for t, tc in fast.frames.items():
            src = slow.tables[t]
            cols = [*src.columns.items(), (chg.POSITION_COLUMN, "string")]
            key = list(src.primary_key) or [cols[0][0]]
            theirs = [c for c in slow.changes if c.table == t]
            _frames_equal(
                columnar.column_frame(tc, cols, key), columnar.event_frame(theirs, cols, key)
            )
    if isinstance(fast, ColumnStream):
        assert fast._materialized is None and fast.change_count() == len(slow.changes)
    assert fast.changes == slow.changes


def _kafka_value(line: str) -> tuple[bytes | None, bytes | None]:
    rec = json.loads(line)
    if "value" in rec:
        return (
            None if rec["value"] is None else json.dumps(rec["value"]).encode(),
            json.dumps(rec.get("key")).encode(),
        )
    return line.encode(), None


def _kafka_records(lines: list[str], partitions: int = 2, topic: str = TOPIC) -> list[KafkaRecord]:
    out = []
    for i, line in enumerate(lines):
        value, key = _kafka_value(line)
        out.append(KafkaRecord(topic, i % partitions, i // partitions, key, value))
    return out


def _ends(records: list[KafkaRecord], cut: int = 0) -> dict[str, dict[str, int]]:
    """Every record's partition read to its end; partition 0 ``cut`` records short."""
    end: dict[str, dict[str, int]] = {}
    for r in records:
        part = end.setdefault(r.topic, {})
        part[str(r.partition)] = max(part.get(str(r.partition), 0), r.offset + 1)
    for part in end.values():
        part["0"] = max(0, part.get("0", 0) - cut)
    return end


GG_TOPIC = "ogg.QA.CUST"


def test_kafka_goldengate_values_equal_the_record_decoder():
    """GoldenGate JSON values into columns as the record decoder reads them: in any order,
    a range cut short (the rest carried), a record without a table (the topic's), ``txind``
    (ignored on Kafka), a tombstone; a value that is not an envelope sends the range to the
    record decoder with the same outcome."""
    records = _kafka_records(GG, topic=GG_TOPIC)
    check_kafka(records, fmt="goldengate", end_offsets=_ends(records))
    check_kafka(list(reversed(records)), fmt="goldengate", end_offsets=_ends(records))
    check_kafka(records, fmt="goldengate", end_offsets=_ends(records, cut=4))
    bare = [json.loads(line) for line in GG[:6]]
    for i, rec in enumerate(bare):
        if i % 2:
            del rec["table"]
        rec["txind"] = "MIDDLE"
    odd = _kafka_records([json.dumps(r, default=str) for r in bare], 1, GG_TOPIC)
    odd.append(KafkaRecord(GG_TOPIC, 0, len(odd), None, None))
    got = decode_records("goldengate", odd, end_offsets=_ends(odd), columns=True)
    assert isinstance(got.stream, ColumnStream) and not got.stream.bad
    assert [c.source for c in got.stream.changes] == [f"{GG_TOPIC}/0:{i}" for i in range(6)]
    check_kafka(odd, fmt="goldengate", end_offsets=_ends(odd))
    bad = [*records, KafkaRecord(GG_TOPIC, 0, 15, None, b'{"table": "QA.CUST"')]
    check_kafka(bad, taken=False, fmt="goldengate", end_offsets=_ends(bad))
    # topics with an empty name part: the table the reference makes of them has no dot (a
    # bad record), or drops the empty part
    for topic in ("QA..CUST", ".CUST", "CUST.", "ogg..QA.CUST"):
        named = _kafka_records([json.dumps(r, default=str) for r in bare], 1, topic)
        check_kafka(named, taken=None, fmt="goldengate", end_offsets=_ends(named))


def test_kafka_goldengate_column_decode_follows_the_fastparse_switch(monkeypatch):
    records = _kafka_records(GG, topic=GG_TOPIC)
    monkeypatch.setattr(cols_mod, "ENABLED", False)
    got = decode_records("goldengate", records, end_offsets=_ends(records), columns=True)
    assert not isinstance(got.stream, ColumnStream) and len(got.stream.changes) == len(GG)


def test_kafka_debezium_values_equal_the_record_decoder():
    data = [line for line in DBZ if line and '"status"' not in line]
    records = _kafka_records(data)
    end = {TOPIC: {"0": (len(data) + 1) // 2, "1": len(data) // 2}}
    check_kafka(records, end_offsets=end)
    check_kafka(list(reversed(records)), end_offsets=end)  # any order
    # a value without a table takes it from the topic
    bare = json.dumps({"op": "c", "after": {"id": 1}, "source": {"lsn": 5}})
    check_kafka(_kafka_records([bare], 1), end_offsets={TOPIC: {"0": 1}})


def test_kafka_transactions_whole_or_carried_as_the_record_decoder():
    events = [dbz("cu"[i % 2], i, txid=f"{500 + i // 3}:{1000 + i}") for i in range(12)]
    records = _kafka_records(events)
    markers = []
    for n, tx in enumerate(range(500, 504)):
        markers.append(json.dumps({"status": "BEGIN", "id": f"{tx}:1"}))
        if tx < 503:  # the last transaction has not ended: its records are carried
            end = {"status": "END", "id": f"{tx}:2", "event_count": 3}
            end["data_collections"] = [{"data_collection": "public.orders", "event_count": 3}]
            markers.append(json.dumps(end))
    txn = [KafkaRecord(TXT, 0, i, None, m.encode()) for i, m in enumerate(markers)]
    end = {TOPIC: {"0": 6, "1": 6}, TXT: {"0": len(markers)}}
    check_kafka(records + txn, end_offsets=end, transaction_topic=TXT)
    bad = KafkaRecord(TOPIC, 0, 6, None, b"{not json")
    check_kafka(
        [*records, bad, *txn],
        taken=False,
        end_offsets={**end, TOPIC: {"0": 7, "1": 6}},
        transaction_topic=TXT,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(["debezium", "goldengate"]),
    events=EVENTS,
    partitions=st.integers(1, 3),
    cut=st.integers(0, 4),
)
def test_hypothesis_kafka_values_of_every_hive_type(fmt, events, partitions, cut):
    records = _kafka_records(_lines(fmt, events), partitions)
    end = _ends(records, cut)
    nan = any(isinstance(v, float) and math.isnan(v) for _, _, row in events for v in row.values())
    ref = decode_records(fmt, records, end_offsets=end)
    # msgspec refuses NaN, so a NaN the column decoder meets makes it decline; whether it meets
    # one depends on the records the end offsets cut and on the images it decodes (a delete's
    # before image only for its key): with a NaN either answer is right, the outcome must match
    check_kafka(
        records,
        fmt=fmt,
        end_offsets=end,
        taken=False if ref.stream.bad else (None if nan else True),
    )


def test_the_garbage_collector_is_paused_during_the_parse_only():
    seen = []
    real = fastparse._PARSERS["goldengate"]

    def spy(*a: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*a)

    assert gc.isenabled()
    fastparse._PARSERS["goldengate"] = spy
    try:
        assert fastparse.parse_columns("goldengate", GG, "f") is not None
        assert fastparse.parse_columns("goldengate", [*GG, "{not json"], "f") is None
    finally:
        fastparse._PARSERS["goldengate"] = real
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:  # left off when it was off
        fastparse.parse_columns("goldengate", GG, "f")
        assert not gc.isenabled()
    finally:
        gc.enable()
