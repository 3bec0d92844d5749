"""Change formats -> canonical changes (pure)."""

import json
from datetime import date, datetime
from decimal import Decimal

import pytest

from acidflow.cdc.changes import CoercionError, coerce
from acidflow.sources import formats as F
from acidflow.sources.wal2json import pg_to_hive


def j(**kw):
    return json.dumps(kw)


def wal_txn(begin_lsn, commit_lsn, *changes):
    return (
        [j(action="B", xid=7, lsn=begin_lsn, timestamp="2024-05-01 10:00:00+00")]
        + [json.dumps(c) for c in changes]
        + [
            j(
                action="C",
                xid=7,
                lsn=commit_lsn,
                nextlsn=commit_lsn,
                timestamp="2024-05-01 10:00:00+00",
            )
        ]
    )


ACC_COLS = [
    {"name": "aid", "type": "integer", "value": 1},
    {"name": "abalance", "type": "integer", "value": 10},
    {"name": "filler", "type": "character(84)", "value": "x"},
]


def test_wal2json_transactions_positions_and_types():
    lines = wal_txn(
        "0/16B0000",
        "0/16B0100",
        {
            "action": "I",
            "schema": "public",
            "table": "pgbench_accounts",
            "columns": ACC_COLS,
            "pk": [{"name": "aid", "type": "integer"}],
            "lsn": "0/16B0010",
        },
        {
            "action": "U",
            "schema": "public",
            "table": "pgbench_accounts",
            "columns": ACC_COLS[:2],
            "pk": [{"name": "aid", "type": "integer"}],
            "lsn": "0/16B0020",
        },
    )
    lines += wal_txn(
        "0/16B0200",
        "1/00000300",
        {
            "action": "D",
            "schema": "public",
            "table": "pgbench_accounts",
            "identity": [{"name": "aid", "type": "integer", "value": 1}],
            "pk": [{"name": "aid", "type": "integer"}],
            "lsn": "0/16B0210",
        },
    )
    s = F.parse_lines("wal2json", lines, "f.jsonl")
    assert not s.bad
    assert [c.op for c in s.changes] == ["I", "U", "D"]
    assert [c.position for c in s.changes] == [
        "00000000016B0100.00000000",
        "00000000016B0100.00000001",
        "0000000100000300.00000000",
    ]
    assert s.changes[0].after == {"aid": 1, "abalance": 10, "filler": "x"}
    assert s.changes[2].before == {"aid": 1} and s.changes[2].after is None
    assert "lsn 0/16B0010" in s.changes[0].source and s.changes[0].source.startswith("f.jsonl:2")
    t = s.tables["public.pgbench_accounts"]
    assert t.columns == {"aid": "int", "abalance": "int", "filler": "char(84)"}
    assert t.primary_key == ["aid"]
    assert (s.first_position, s.last_position) == ("00000000016B0000", "0000000100000300")


def test_wal2json_bad_and_unsupported_records_are_reported_not_dropped():
    lines = [
        "{not json",
        j(foo=1),
        j(action="M", prefix="x", content="y"),
        j(action="Z", lsn="0/2"),
    ]
    lines += wal_txn(
        "0/10",
        "0/20",
        {"action": "D", "schema": "public", "table": "t", "lsn": "0/11"},
        {"action": "T", "schema": "public", "table": "t", "lsn": "0/12"},
    )
    s = F.parse_lines("wal2json", lines, "f")
    reasons = [b.reason for b in s.bad]
    assert len(s.bad) == 4 and s.ignored == 1
    assert reasons[0].startswith("not JSON")
    assert "no 'action'" in reasons[1]
    assert "unknown wal2json action" in reasons[2]
    assert "REPLICA IDENTITY" in reasons[3] and s.bad[3].table == "public.t"
    (t,) = s.changes
    assert (t.op, t.table, t.position) == ("T", "public.t", "0000000000000020.00000001")
    assert s.bad[0].raw == "{not json" and s.bad[0].source == "f:1"


def test_pg_type_mapping():
    assert pg_to_hive("numeric(10,2)") == "decimal(10,2)"
    assert pg_to_hive("numeric(50,2)") == "string"
    assert pg_to_hive("character varying(20)") == "varchar(20)"
    assert pg_to_hive("timestamp with time zone") == "timestamp"
    assert pg_to_hive("timestamp(3) without time zone") == "timestamp"
    assert pg_to_hive("bigint") == "bigint" and pg_to_hive("bytea") == "binary"
    assert pg_to_hive("integer[]") == "string" and pg_to_hive("jsonb") == "string"


def test_debezium_envelope_forms_and_positions():
    schema = {
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
    payload = {
        "op": "c",
        "before": None,
        "after": {"id": 5, "amount": "MDk=", "day": 19000, "ts": 1_700_000_000_000_000},
        "source": {"schema": "public", "table": "orders", "lsn": 1234},
        "ts_ms": 1,
    }
    lines = [
        json.dumps({"schema": schema, "payload": payload}),
        json.dumps(
            {
                "key": {"id": 5},
                "value": {
                    "op": "u",
                    "before": None,
                    "after": {"id": 5, "amount": "AQ==", "day": 1, "ts": 0},
                    "source": {"db": "shop", "table": "orders", "file": "bin.000002", "pos": 77},
                },
            }
        ),
        json.dumps({"key": {"id": 5}, "value": None}),
        json.dumps(
            {
                "op": "d",
                "before": {"id": 5},
                "after": None,
                "source": {"schema": "public", "table": "orders"},
                "ts_ms": 99,
            }
        ),
        json.dumps({"op": "x", "source": {"table": "t"}}),
        json.dumps({"op": "u", "after": {"id": 1}, "source": {"table": "orders"}}),
    ]
    s = F.parse_lines("debezium", lines, "d")
    c0, c1, c2 = s.changes
    assert c0.op == "I" and c0.position == f"{1234:020d}"
    assert c0.after["amount"] == Decimal("123.45") and c0.after["day"] == date(2022, 1, 8)
    assert c0.after["ts"] == datetime(2023, 11, 14, 22, 13, 20)
    assert s.tables["public.orders"].columns["amount"] == "decimal(10,2)"
    assert c1.table == "shop.orders" and c1.position == f"bin.000002:{77:020d}"
    assert s.tables["shop.orders"].primary_key == ["id"]
    assert c2.op == "D" and c2.position == f"{99:020d}"
    assert [b.reason.split(" (")[0] for b in s.bad] == [
        "unknown or missing Debezium op 'x'",
        "no ordering value: source.lsn, source.pos or ts_ms required",
    ]


def test_goldengate_images_missing_flags_and_ordering():
    rec = {
        "table": "QA.CUST",
        "op_type": "U",
        "op_ts": "2024-01-02:03:04:05.12",
        "current_ts": "x",
        "pos": "00000000000000001234",
        "primary_keys": ["ID"],
        "before": {"ID": 1, "NAME": "a"},
        "after": {"ID": 1, "NAME": None, "NAME_isMissing": True, "AGE": 3},
    }
    s = F.parse_lines(
        "goldengate", [json.dumps(rec), json.dumps({**rec, "op_type": "D", "before": None})], "g"
    )
    (c,) = s.changes
    assert c.table == "qa.cust" and c.position == "2024-01-02 03:04:05.120000|00000000000000001234"
    assert c.after == {"id": 1, "age": 3} and c.missing == frozenset({"name"})
    assert s.tables["qa.cust"].primary_key == ["id"]
    assert s.bad[0].reason == "op_type D without 'before'"


@pytest.mark.parametrize(
    "value,htype,expected",
    [
        ("12", "int", 12),
        (Decimal("2.50"), "decimal(5,1)", Decimal("2.5")),
        ("2024-01-02 03:04:05.5+02", "timestamp", datetime(2024, 1, 2, 1, 4, 5, 500000)),
        ("2024-01-02:03:04:05", "timestamp", datetime(2024, 1, 2, 3, 4, 5)),
        ("2024-01-02", "date", date(2024, 1, 2)),
        ("t", "boolean", True),
        ("\\x0102", "binary", b"\x01\x02"),
        ({"a": 1}, "string", '{"a":1}'),
        ("ab   ", "char(4)", "ab"),
        (None, "int", None),
    ],
)
def test_coerce(value, htype, expected):
    assert coerce(value, htype) == expected


@pytest.mark.parametrize(
    "value,htype",
    [
        ("x", "int"),
        (2**31, "int"),
        (1.5, "bigint"),
        ("12345", "decimal(5,2)"),
        ("maybe", "boolean"),
        ("toolong", "varchar(3)"),
        ("2024-13-01", "date"),
        (True, "int"),
    ],
)
def test_coerce_rejects(value, htype):
    with pytest.raises(CoercionError):
        coerce(value, htype)


@pytest.mark.parametrize("value", [1790000000001000, 1790000000001.5])
def test_a_number_for_a_timestamp_names_the_schemaless_converter(value):
    """Debezium's schemaless JSON sends timestamps as epoch counts whose unit only the schema
    gives: refused with a reason that says how to fix the connector."""
    with pytest.raises(CoercionError, match="schemas.enable=true"):
        coerce(value, "timestamp")
