"""The pure rules of row filters: the typed form (``acidflow.read.predicates``), the ORC
statistics checks (``acidflow.format.orc.orcpredicate``) and the translation of Spark's pushed
filters (``acidflow.datasource.pushdown``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull, Not, StringStartsWith

from acidflow.datasource.pushdown import pushed_predicates, to_predicate
from acidflow.format.orc import orcindex
from acidflow.format.orc.orcindex import ColumnStats, OrcType
from acidflow.format.orc.orcpredicate import domain_value, lossless_domain, stats_may_match
from acidflow.read import predicates as P

COLS = [("k", "int"), ("s", "string"), ("d", "decimal(10,2)"), ("day", "date")]
PCOLS = [("p", "int"), ("region", "string")]


def test_parse_where_checks_columns_ops_and_values():
    got = P.parse_where([("K", "=", 1), ("s", "IN", ["a", None]), ("p", "is null")], COLS, PCOLS)
    assert got == [
        P.Predicate("k", "=", 1),
        P.Predicate("s", "in", ("a",)),
        P.Predicate("p", "is null"),
    ]
    for bad in ([("nope", "=", 1)], [("k", "~", 1)], [("k", "=", None)], [("s", "<", 3)], [("k",)]):
        with pytest.raises(P.PredicateError):
            P.parse_where(bad, COLS, PCOLS, table="db.t")
    assert issubclass(P.PredicateError, ValueError)


def test_row_mask_is_sql_where():
    col = pa.array([1, None, 3, 5], pa.int32())
    mask = lambda op, v=None: P.row_mask({"k": col}, [P.Predicate("k", op, v)], 4).to_pylist()  # noqa: E731
    assert mask("=", 3) == [False, False, True, False]
    assert mask("!=", 3) == [True, False, False, True]
    assert mask("in", (1, 5)) == [True, False, False, True]
    assert mask("in", ()) == [False] * 4
    assert mask("is null") == [False, True, False, False]
    assert mask(">=", 3) == [False, False, True, True]


def test_partition_values_are_typed_per_hive_type():
    where = P.parse_where([("p", ">", 9)], COLS, PCOLS)
    assert P.partition_matches(where, PCOLS, "p=10/region=eu")
    assert not P.partition_matches(where, PCOLS, "p=9/region=eu")
    nulls = P.parse_where([("region", "is null")], COLS, PCOLS)
    assert P.partition_matches(nulls, PCOLS, "p=1/region=__HIVE_DEFAULT_PARTITION__")
    assert not P.partition_matches(nulls, PCOLS, "p=1/region=eu")


def test_stats_checks():
    s = ColumnStats(values=10, has_null=False, minimum=10, maximum=20)
    assert stats_may_match(s, "=", [10]) and not stats_may_match(s, "=", [21])
    assert not stats_may_match(s, "<", [10]) and stats_may_match(s, "<=", [10])
    assert not stats_may_match(s, ">", [20]) and stats_may_match(s, ">=", [20])
    assert stats_may_match(s, "in", [1, 15]) and not stats_may_match(s, "in", [1, 25])
    assert not stats_may_match(s, "is null", []) and stats_may_match(s, "is not null", [])
    one = ColumnStats(values=3, has_null=False, minimum=7, maximum=7)
    assert not stats_may_match(one, "!=", [7]) and stats_may_match(one, "!=", [8])
    cut = ColumnStats(values=3, has_null=False, minimum=b"a", maximum=b"a", truncated=True)
    assert stats_may_match(cut, "!=", [b"a"])
    only_nulls = ColumnStats(values=0, has_null=True)
    assert stats_may_match(only_nulls, "is null", []) and not stats_may_match(only_nulls, "=", [1])
    assert stats_may_match(None, "=", [1])


def test_lossless_domains_and_values():
    assert lossless_domain(OrcType(orcindex.INT), "bigint") == orcindex.INTEGER
    assert lossless_domain(OrcType(orcindex.LONG), "int") is None  # narrower: values change
    assert lossless_domain(OrcType(orcindex.STRING), "string") == orcindex.TEXT
    assert lossless_domain(OrcType(orcindex.STRING), "varchar(3)") is None  # truncates
    dec = OrcType(orcindex.DECIMAL, precision=8, scale=2)
    assert lossless_domain(dec, "decimal(12,4)") == orcindex.DEC
    assert lossless_domain(dec, "decimal(12,1)") is None  # rounds
    assert lossless_domain(OrcType(orcindex.INT), "string") is None
    assert domain_value(orcindex.DAYS, dt.date(1970, 1, 11)) == 10
    assert domain_value(orcindex.DAYS, dt.datetime(1970, 1, 11)) is None
    assert domain_value(orcindex.INTEGER, True) is None
    assert domain_value(orcindex.DEC, 3) == Decimal(3)


def test_spark_filters_translated_and_split():
    assert to_predicate(EqualTo(("k",), 1)) == P.Predicate("k", "=", 1)
    assert to_predicate(Not(EqualTo(("k",), 1))) == P.Predicate("k", "!=", 1)
    assert to_predicate(Not(GreaterThan(("k",), 1))) is None
    assert to_predicate(StringStartsWith(("s",), "a")) is None
    assert to_predicate(EqualTo(("a", "b"), 1)) is None
    cols = [*COLS, ("x", "double")]
    fs = [
        EqualTo(("p",), 2),
        In(("k",), (1, 2)),
        GreaterThan(("x",), 1.5),
        IsNull(("s",)),
        StringStartsWith(("s",), "a"),
        EqualTo(("s",), 3),
    ]
    pushed, rest = pushed_predicates(fs, cols, PCOLS)
    assert [p.column for p in pushed] == ["p", "k", "x", "s"]
    assert rest == [fs[2], fs[4], fs[5]]  # double: Spark re-checks; not pushable forms


# ----------------------------------------------------------------------------- text form

TEXT_COLS = [("id", "bigint"), ("name", "string"), ("amount", "decimal(10,2)"),
             ("day", "date"), ("at", "timestamp"), ("ok", "boolean")]  # fmt: skip


def test_where_from_text_types_each_literal_as_its_column():
    got = P.where_from_text(
        [
            "id in (1, 2,3)",
            "name = 'it''s, here'",
            "amount >= 10.50",
            "day < 2024-01-31",
            "`at` <> '2024-01-31 10:00:00'",
            "ok = true",
            "NAME is not null",
            "region IS NULL",
        ],
        TEXT_COLS,
        [("region", "string")],
        table="s.t",
    )
    assert got == [
        P.Predicate("id", "in", (1, 2, 3)),
        P.Predicate("name", "=", "it's, here"),
        P.Predicate("amount", ">=", Decimal("10.50")),
        P.Predicate("day", "<", dt.date(2024, 1, 31)),
        P.Predicate("at", "!=", dt.datetime(2024, 1, 31, 10, 0)),
        P.Predicate("ok", "=", True),
        P.Predicate("name", "is not null"),
        P.Predicate("region", "is null"),
    ]


@pytest.mark.parametrize(
    "text, says",
    [
        ("id", "cannot read the filter"),
        ("id = abc", "id (bigint)"),
        ("nope = 1", "no column 'nope'"),
        ("id in 1, 2", "list in parentheses"),
        ("id = null", "never true"),
        ("day = 2024-13-01", "day (date)"),
    ],
)
def test_where_from_text_errors_name_the_table_column_and_text(text, says):
    with pytest.raises(P.PredicateError, match="s.t") as info:
        P.where_from_text([text], TEXT_COLS, table="s.t")
    assert says in str(info.value)
