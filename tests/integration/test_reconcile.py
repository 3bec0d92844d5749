"""acidflow.quality.reconcile on real data: a PostgreSQL 15 source table (private cluster) and an
acidflow table written by the engine (Spark, real ORC files, SQLite catalog); the acidflow side is
read both with pyarrow (spark=None) and in Spark; sources both live (DSN) and saved (CSV.gz from
COPY + manifest.json); the CLI too."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import json

import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.engine.transaction import Transaction
from acidflow.quality import reconcile as R
from acidflow.sources.postgres import snapshot as pgsource
from acidflow.sources.postgres.connection import connect
from acidflow.sources.postgres.snapshot import PostgresSource, SavedSource

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.spark]

D = decimal.Decimal
UTC = dt.timezone.utc

PG_DDL = """
CREATE TABLE public.acct (aid int PRIMARY KEY, filler char(10), amount numeric(10,2),
                          ts timestamptz, note text, flag boolean);
CREATE TABLE public.hist (tid int, delta int, mtime timestamp);
"""
#: (aid, filler, amount, ts, note, flag) -- PostgreSQL literals
PG_ROWS = [
    (1, "'ab'", "1.50", "'2024-01-02 03:04:05.123456+02'", "'x'", "true"),
    (2, "NULL", "NULL", "NULL", "''", "NULL"),
    (3, "'  lead'", "100", "'2024-06-30 23:59:59+00'", "NULL", "false"),
    (4, "'d'", "-0.01", "'1999-12-31 23:00:00-01'", "'tab\tand \"quote\", comma'", "true"),
]
#: the same rows as acidflow stores them after CDC: char(n) unpadded or padded, decimal scale 2,
#: timestamps as UTC wall-clock, plus a _cdc_ bookkeeping column
ACID_ROWS = [
    (1, "ab", D("1.50"), dt.datetime(2024, 1, 2, 1, 4, 5, 123456), "x", True, "0/1"),
    (2, None, None, None, "", None, "0/2"),
    (3, "  lead    ", D("100.00"), dt.datetime(2024, 6, 30, 23, 59, 59), None, False, "0/3"),
    (4, "d", D("-0.01"), dt.datetime(2000, 1, 1, 0, 0, 0), 'tab\tand "quote", comma', True, "0/4"),
]
HIST = [(1, 5, dt.datetime(2024, 1, 1)), (1, 5, dt.datetime(2024, 1, 1)), (2, -3, None)]


@pytest.fixture(scope="module")
def pg():
    from tests.support.postgres import PostgresCluster, require_postgres

    require_postgres()
    with PostgresCluster(dbname="shop") as cluster:
        for stmt in PG_DDL.strip().split(";"):
            if stmt.strip():
                cluster.execute(stmt, "shop")
        values = ", ".join("(" + ", ".join(str(v) for v in r) + ")" for r in PG_ROWS)
        cluster.execute(f"INSERT INTO acct VALUES {values}", "shop")
        cluster.execute(
            "INSERT INTO hist VALUES (1, 5, '2024-01-01'), (1, 5, '2024-01-01'), (2, -3, NULL)",
            "shop",
        )
        yield cluster


@pytest.fixture
def catalog(warehouse, spark):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    cat.create_table(
        TableDef(
            name="shop.acct",
            columns=[
                Column("aid", "int"),
                Column("filler", "char(10)"),
                Column("amount", "decimal(10,2)"),
                Column("ts", "timestamp"),
                Column("note", "string"),
                Column("flag", "boolean"),
                Column("_cdc_lsn", "string"),
            ],
            primary_key=["aid"],
        )
    )
    cat.create_table(
        TableDef(
            name="shop.hist",
            columns=[Column("tid", "int"), Column("delta", "int"), Column("mtime", "timestamp")],
        )
    )
    schema = (
        "aid int, filler string, amount decimal(10,2), ts timestamp_ntz, note string, "
        "flag boolean, _cdc_lsn string"
    )
    with Transaction(cat, heartbeat_s=0) as txn:
        txn.insert("shop.acct", spark.createDataFrame(ACID_ROWS, schema))
        txn.insert(
            "shop.hist", spark.createDataFrame(HIST, "tid int, delta int, mtime timestamp_ntz")
        )
    return cat


def test_equal_data_matches_live_and_saved_pyarrow_and_spark(pg, catalog, spark, tmp_path):
    url = pg.libpq_url("shop")
    for sp in (None, spark):
        r = R.reconcile(sp, catalog, "shop.acct", PostgresSource(url, "public.acct"))
        assert r.matches, r
        assert (r.source_rows, r.table_rows) == (4, 4)
        assert r.source_checksum == r.table_checksum
        assert r.key_columns == ["aid"] and "_cdc_lsn" in r.ignored_columns
        assert "_cdc_lsn" not in r.columns
        h = R.reconcile(sp, catalog, "shop.hist", PostgresSource(url, "hist"))
        assert h.matches and h.source_rows == 3 and h.key_columns == []

    # saved contents: CSV.gz from COPY ... WITH CSV HEADER plus a manifest with types and keys
    conn = connect(url)
    tables = []
    try:
        for name in ("public.acct", "public.hist"):
            st = pgsource.describe(conn, name)
            with gzip.open(tmp_path / f"{name.split('.')[1]}.csv.gz", "wb") as fh:
                pgsource.copy_csv(conn, st, fh)
            tables.append({**st.to_json(), "csv": f"{name.split('.')[1]}.csv.gz"})
    finally:
        conn.close()
    (tmp_path / "manifest.json").write_text(json.dumps({"database": "shop", "tables": tables}))
    saved = SavedSource.from_dir(tmp_path, "public.acct")
    assert saved.primary_key == ["aid"] and dict(saved.columns)["filler"] == "character(10)"
    r = R.reconcile(None, catalog, "shop.acct", saved)
    live = R.reconcile(None, catalog, "shop.acct", PostgresSource(url, "acct"))
    assert r.matches and r.source_checksum == live.source_checksum
    assert R.reconcile(spark, catalog, "shop.hist", SavedSource.from_dir(tmp_path, "hist")).matches


def test_differences_are_found_and_keys_reported(pg, catalog, spark):
    db = "shop_changed"
    pg.create_database(db, template="shop")
    url = pg.libpq_url(db)
    pg.execute("UPDATE acct SET filler = 'ab ' WHERE aid = 1", db)  # trailing blank: still equal
    pg.execute("UPDATE acct SET amount = 1.51 WHERE aid = 3", db)
    pg.execute("UPDATE acct SET note = NULL WHERE aid = 2", db)  # '' -> NULL is a difference
    pg.execute("DELETE FROM acct WHERE aid = 4", db)
    pg.execute("INSERT INTO acct (aid) VALUES (9)", db)
    pg.execute(
        "DELETE FROM hist WHERE tid = 1 AND ctid IN (SELECT ctid FROM hist WHERE tid = 1 LIMIT 1)",
        db,
    )
    for sp in (None, spark):
        r = R.reconcile(sp, catalog, "shop.acct", PostgresSource(url, "acct"), max_keys=3)
        assert not r.matches and r.source_checksum != r.table_checksum
        assert (r.source_rows, r.table_rows) == (4, 4)
        assert r.differing_keys == 4
        got = [(k.key, k.kind) for k in r.first_differing_keys]
        assert got == [
            ({"aid": 2}, "values_differ"),
            ({"aid": 3}, "values_differ"),
            ({"aid": 4}, "only_in_table"),
        ]
        k3 = r.first_differing_keys[1]
        assert k3.source_values["amount"] == D("1.51") and k3.table_values["amount"] == D("100")
        assert r.first_differing_keys[0].source_values["note"] is None
        assert r.first_differing_keys[0].table_values["note"] == ""
        assert r.first_differing_keys[2].source_values is None
        h = R.reconcile(sp, catalog, "shop.hist", PostgresSource(url, "hist"))
        assert not h.matches and (h.source_rows, h.table_rows) == (2, 3)
        assert [(k.key, k.kind, k.source_rows, k.table_rows) for k in h.first_differing_keys] == [
            ({"tid": 1, "delta": 5, "mtime": 1704067200000000}, "values_differ", 1, 2)
        ]
    pg.drop_database(db)


def test_missing_column_is_an_error(pg, catalog):
    db = "shop_wider"
    pg.create_database(db, template="shop")
    pg.execute("ALTER TABLE acct ADD COLUMN extra int", db)
    with pytest.raises(R.ReconcileError, match="column 'extra' of source .* not in acidflow"):
        R.reconcile(None, catalog, "shop.acct", PostgresSource(pg.libpq_url(db), "acct"))
    pg.drop_database(db)


def test_cli_reconcile(pg, catalog, monkeypatch, tmp_path):
    import typer
    from typer.testing import CliRunner

    from acidflow.cli import reconcile as cli_reconcile

    app = typer.Typer()
    app.command("noop")(lambda: None)
    cli_reconcile.register(app)
    runner = CliRunner()
    url = pg.libpq_url("shop")
    res = runner.invoke(app, ["reconcile", "--dsn", url])  # every public table -> shop.<t>
    assert res.exit_code == 0, res.output
    assert "shop.acct" in res.output and "shop.hist" in res.output and "match" in res.output
    res = runner.invoke(app, ["reconcile", "--dsn", url, "--json", "shop.acct=public.acct"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.splitlines()[0])["matches"] is True
    db = "shop_cli"
    pg.create_database(db, template="shop")
    pg.execute("DELETE FROM acct WHERE aid = 1", db)
    res = runner.invoke(
        app, ["reconcile", "--dsn", pg.libpq_url(db), "--db", "shop", "acct", "hist"]
    )
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "shop.acct: 1 differing keys (by aid)" in text and '{"aid": 1} only_in_table' in text
    res = runner.invoke(app, ["reconcile", "--dsn", url, "shop.nope"])
    assert res.exit_code == 2
    pg.drop_database(db)
