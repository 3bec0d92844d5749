"""Pure parts of acidflow.quality.reconcile: type normalisation, row hashing, digests, PostgreSQL
CSV reading (NULL vs empty string) and key diffs."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip

import pyarrow as pa
import pytest

from acidflow.quality import digest as G
from acidflow.quality import reconcile as R
from acidflow.sources.postgres import equality as E

D = decimal.Decimal


@pytest.mark.parametrize(
    "pg_type, kind",
    [
        ("integer", "int"),
        ("bigint", "int"),
        ("smallint", "int"),
        ("numeric(10,2)", "decimal"),
        ("numeric", "decimal"),
        ("real", "float4"),
        ("double precision", "float8"),
        ("boolean", "bool"),
        ("character(84)", "char"),
        ("character varying(3)", "text"),
        ("text", "text"),
        ("date", "date"),
        ("timestamp without time zone", "timestamp"),
        ("timestamp(3) with time zone", "timestamp"),
        ("time without time zone", "time"),
        ("bytea", "bytea"),
        ("jsonb", "json"),
        ("uuid", "uuid"),
        ("character varying(3)[]", "array:text"),
        ("interval", "other"),
    ],
)
def test_kind_of_pg_type(pg_type, kind):
    assert E.kind_of_pg_type(pg_type) == kind


def test_kind_of_hive_type():
    assert [
        E.kind_of_hive_type(t)
        for t in (
            "int",
            "bigint",
            "decimal(10,2)",
            "char(5)",
            "varchar(3)",
            "timestamp",
            "array<int>",
            "float",
        )
    ] == ["int", "int", "decimal", "char", "text", "timestamp", "array:int", "float4"]


@pytest.mark.parametrize(
    "kind, source_text, table_value",
    [
        ("int", "42", 42),
        ("decimal", "1.50", D("1.5")),
        ("decimal", "100", D("100.00")),
        ("decimal", "-0.00", D("0")),
        ("float8", "0.1", 0.1),
        ("float4", "1.1", 1.100000023841858),  # float32 in Hive
        ("bool", "t", True),
        ("char", "ab   ", "ab"),
        ("char", "", ""),
        ("text", "ab  ", "ab  "),
        ("date", "2024-02-29", dt.date(2024, 2, 29)),
        ("timestamp", "2026-11-21 11:48:15.631436", dt.datetime(2026, 11, 21, 11, 48, 15, 631436)),
        ("timestamp", "2026-11-21 13:48:15+02", dt.datetime(2026, 11, 21, 11, 48, 15)),
        (
            "timestamp",
            "2026-11-21 11:48:15+00",
            dt.datetime(2026, 11, 21, 11, 48, 15, tzinfo=dt.timezone.utc),
        ),
        ("time", "10:00:00.5", dt.time(10, 0, 0, 500000)),
        ("bytea", "\\x00ff", b"\x00\xff"),
        ("json", '{"b": 1, "a": [1, 2]}', '{"a":[1,2],"b":1}'),
        ("uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("array:text", '{x,"y z",NULL}', ["x", "y z", None]),
        ("array:int", "{1,2}", [1, 2]),
    ],
)
def test_source_text_equals_table_value(kind, source_text, table_value):
    a = E.canonical_value(source_text, kind)
    b = E.canonical_value(table_value, kind)
    assert a == b
    assert G.row_hash([a]) == G.row_hash([b])


def test_null_is_not_empty_and_values_are_not_confused():
    assert G.row_hash([None]) != G.row_hash([""])
    assert G.row_hash(["a", "b"]) != G.row_hash(["ab", ""])
    assert G.row_hash([1]) != G.row_hash(["1"])
    assert G.row_hash([D("1")]) != G.row_hash([1])
    assert E.canonical_value(None, "char") is None
    assert E.canonical_value("ab", "char") != E.canonical_value(" ab", "char")


def test_bad_values_raise():
    with pytest.raises(ValueError):
        E.canonical_value("x", "int")
    with pytest.raises(ValueError):
        E.canonical_value("maybe", "bool")


def test_digest_is_order_independent_and_counts_duplicates():
    rows = [(1, "a"), (2, "b"), (3, None)]
    d1, d2 = G.Digest(), G.Digest()
    for r in rows:
        d1.add(G.row_hash(r))
    for r in reversed(rows):
        d2.add(G.row_hash(r))
    assert (d1.rows, d1.checksum) == (d2.rows, d2.checksum)
    d3 = G.Digest()
    for r in rows + [rows[0]]:
        d3.add(G.row_hash(r))
    assert d3.rows == 4 and d3.checksum != d1.checksum
    assert d1.merge(d2).checksum == (2 * d1.checksum) % 2**64


def test_parse_pg_array():
    assert E.parse_pg_array("{}") == ()
    assert E.parse_pg_array('{a,"b,c","d\\"e",NULL}') == ("a", "b,c", 'd"e', None)
    assert E.parse_pg_array("{{1,2},{3,4}}") == "{{1,2},{3,4}}"


def test_csv_batches_null_vs_empty(tmp_path):
    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b'id,c,t\n1,,""\n2,"x\ny",plain\n3,"a""b",\n')
    (batch,) = list(R.csv_batches(p, ["id", "c", "t"]))
    assert batch.to_pydict() == {
        "id": ["1", "2", "3"],
        "c": [None, "x\ny", 'a"b'],
        "t": ["", "plain", None],
    }
    with pytest.raises(R.ReconcileError, match="does not match"):
        list(R.csv_batches(p, ["id", "c"]))


def test_scan_and_diff_keyed():
    spec = R.ScanSpec(("id", "c"), ("int", "char"), (0,), E.canonical_value)
    src = pa.RecordBatch.from_pydict({"id": ["1", "2", "3"], "c": ["a  ", "b", None]})
    tbl = pa.RecordBatch.from_pydict({"id": [3, 1, 4], "c": [None, "a", "d"]})
    assert R.scan_digest([src], spec) != R.scan_digest([tbl], spec)
    first, total = R.diff_keys(R.scan_keys([src], spec), R.scan_keys([tbl], spec), 10)
    assert total == 2
    assert [(k, kind) for k, kind, _, _ in first] == [
        ((2,), "only_in_source"),
        ((4,), "only_in_table"),
    ]
    tbl2 = pa.RecordBatch.from_pydict({"id": [3, 1, 2], "c": [None, "a", "b "]})
    assert R.scan_digest([src], spec) == R.scan_digest([tbl2], spec)
    tbl3 = pa.RecordBatch.from_pydict({"id": [3, 1, 2], "c": [None, "a", "B"]})
    first, total = R.diff_keys(R.scan_keys([src], spec), R.scan_keys([tbl3], spec), 1)
    assert (total, first) == (1, [((2,), "values_differ", 1, 1)])
    assert R.scan_rows([tbl3], spec, {(2,)}) == {(2,): [(2, "B")]}


def test_scan_and_diff_keyless_duplicates():
    spec = R.ScanSpec(("a",), ("int",), (), E.canonical_value)
    src = pa.RecordBatch.from_pydict({"a": ["1", "1", "2"]})
    tbl = pa.RecordBatch.from_pydict({"a": [1, 2, 2]})
    first, total = R.diff_keys(R.scan_keys([src], spec), R.scan_keys([tbl], spec), 10)
    assert total == 2
    assert first == [((1,), "values_differ", 2, 1), ((2,), "values_differ", 1, 2)]


def test_error_names_column_and_value():
    spec = R.ScanSpec(("id",), ("int",), (0,), E.canonical_value, where="source public.t")
    with pytest.raises(R.ReconcileError, match=r"source public.t: column 'id' \(int\).*'x'"):
        R.scan_digest([pa.RecordBatch.from_pydict({"id": ["1", "x"]})], spec)


def test_name_mapping():
    assert R.source_table_for("pgbench.pgbench_accounts") == "public.pgbench_accounts"
    assert R.acidflow_table_for("public.pgbench_accounts", "pgbench") == "pgbench.pgbench_accounts"
