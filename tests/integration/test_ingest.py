"""Batch ingest of CSV, JSON lines and Parquet per data interval: append, insert overwrite of a
partition, idempotent reruns, quarantined bad rows."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.ingest import ingest
from acidflow.quarantine import QuarantineThresholdError
from acidflow.read.table import read_table

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(warehouse):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    cat.create_table(
        TableDef(
            name="sales.orders",
            columns=[
                Column("id", "bigint"),
                Column("amount", "decimal(10,2)"),
                Column("city", "string"),
            ],
            partition_columns=[Column("ds", "string")],
            primary_key=["id"],
        )
    )
    return cat


def snapshot(spark, catalog):
    return sorted(
        (r["ds"], r["id"], str(r["amount"]), r["city"])
        for r in read_table(spark, catalog, "sales.orders").collect()
    )


def test_csv_append_is_idempotent_and_bad_rows_quarantined(spark, catalog, tmp_path):
    d1 = tmp_path / "land" / "2024-01-01"
    d1.mkdir(parents=True)
    lines = ["id,amount,city"] + [f"{i},{i}.50,c{i % 3}" for i in range(1, 201)] + ["x,1,bad"]
    (d1 / "a.csv").write_text("\n".join(lines) + "\n")
    r = ingest(
        spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01", partition={"ds": "2024-01-01"}
    )
    assert (r.status, r.rows, r.quarantined) == ("applied", 200, 1)
    q = [json.loads(x) for x in open(r.quarantine_file)]
    assert q[0]["raw"] == "x,1,bad" and q[0]["source"].endswith("a.csv")
    assert "does not parse" in q[0]["reason"]
    first = snapshot(spark, catalog)
    assert len(first) == 200 and first[0] == ("2024-01-01", 1, "1.50", "c1")
    again = ingest(
        spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01", partition={"ds": "2024-01-01"}
    )
    assert again.status == "skipped" and again.txn_id == r.txn_id and again.note == ""
    # a file that arrived late is applied by a rerun, as a follow-up batch (this used to be
    # skipped with a note)
    (d1 / "b.csv").write_text("id,amount,city\n999,1,z\n")
    late = ingest(
        spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01", partition={"ds": "2024-01-01"}
    )
    assert (late.status, late.rows, late.batch_id) == ("applied", 1, r.batch_id + ":+1")
    first = sorted(first + [("2024-01-01", 999, "1.00", "z")])
    assert snapshot(spark, catalog) == first
    # a file applied before and changed since is not applied again (its rows would double)
    (d1 / "a.csv").write_text("\n".join(lines[:50]) + "\n")
    changed = ingest(
        spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01", partition={"ds": "2024-01-01"}
    )
    assert changed.status == "skipped" and "overwrite" in changed.note
    assert str(d1 / "a.csv") in changed.note
    assert snapshot(spark, catalog) == first


def test_overwrite_partition_jsonl_and_parquet(spark, catalog, tmp_path):
    j = tmp_path / "j"
    j.mkdir()
    (j / "part-1.jsonl").write_text(
        "".join(json.dumps({"id": i, "amount": "1.00", "city": "o"}) + "\n" for i in range(10))
    )
    ingest(
        spark,
        catalog,
        "sales.orders",
        str(j),
        "jsonl",
        "2024-01-02",
        mode="overwrite",
        partition={"ds": "2024-01-02"},
    )
    p = tmp_path / "p"
    p.mkdir()
    pq.write_table(
        pa.table(
            {
                "id": pa.array([100, 101], pa.int64()),
                "amount": pa.array(["2.5", "3.5"]).cast(pa.decimal128(10, 2)),
                "city": ["x", "y"],
            }
        ),
        p / "f.parquet",
    )
    r = ingest(
        spark,
        catalog,
        "sales.orders",
        str(p),
        "parquet",
        "2024-01-02/v2",
        mode="overwrite",
        partition={"ds": "2024-01-02"},
    )
    assert r.rows == 2
    assert snapshot(spark, catalog) == [
        ("2024-01-02", 100, "2.50", "x"),
        ("2024-01-02", 101, "3.50", "y"),
    ]
    assert (
        ingest(
            spark,
            catalog,
            "sales.orders",
            str(p),
            "parquet",
            "2024-01-02/v2",
            mode="overwrite",
            partition={"ds": "2024-01-02"},
        ).status
        == "skipped"
    )


def test_too_many_bad_rows_abort(spark, catalog, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "a.csv").write_text("id,amount,city\n1,1,a\nnope,1,b\n,2,c\n")
    with pytest.raises(QuarantineThresholdError, match="2 of 3 records are bad"):
        ingest(
            spark,
            catalog,
            "sales.orders",
            str(d),
            "csv",
            "2024-01-03",
            partition={"ds": "2024-01-03"},
        )
    assert snapshot(spark, catalog) == []
    r = ingest(
        spark,
        catalog,
        "sales.orders",
        str(d),
        "csv",
        "2024-01-03",
        partition={"ds": "2024-01-03"},
        quarantine_threshold=0.9,
    )
    assert (r.status, r.rows, r.quarantined) == ("applied", 1, 2)


def _csv(path, ids, city="c"):
    path.write_text("id,amount,city\n" + "".join(f"{i},{i}.25,{city}{i}\n" for i in ids))


def test_unreadable_files_are_quarantined_whole_and_later_files_load(spark, catalog, tmp_path):
    """A binary file, a truncated .gz and a file that is not UTF-8 in a landing directory are each
    quarantined as a whole (file, line/offset, reason), counted in the report, and the files after
    them are loaded; the CLI names them instead of stopping with "Aborted."."""
    import gzip

    from typer.testing import CliRunner

    from acidflow.cli import app

    d = tmp_path / "land"
    d.mkdir()
    _csv(d / "a.csv", range(1, 101))
    (d / "b.csv").write_bytes(b"id,amount,city\n1,2,x\n\x00\x01\x02\xff\xfe garbage" * 20)
    whole = gzip.compress(
        ("id,amount,city\n" + "".join(f"{i},1,g\n" for i in range(500, 900))).encode()
    )
    (d / "c.csv.gz").write_bytes(whole[: len(whole) // 2])
    (d / "d.csv").write_bytes("id,amount,city\n300,1,Zürich\n".encode("latin-1"))
    (d / "e.csv").write_text("")  # empty: no header, no rows, not poison
    _csv(d / "f.csv", range(101, 151))
    r = ingest(
        spark, catalog, "sales.orders", str(d), "csv", "2024-02-01", partition={"ds": "2024-02-01"}
    )
    assert (r.status, r.rows, r.files_quarantined, r.quarantined) == ("applied", 150, 3, 3)
    assert sorted(x[1] for x in snapshot(spark, catalog)) == list(range(1, 151))
    q = {json.loads(x)["source"]: json.loads(x) for x in open(r.quarantine_file)}
    by_name = {k.rsplit("/", 1)[1].split(":")[0]: v for k, v in q.items()}
    assert set(by_name) == {"b.csv", "c.csv.gz", "d.csv"}
    assert f"{d / 'b.csv'}:3" in q and f"{d / 'd.csv'}:2" in q
    assert "binary content: NUL byte at byte offset 21 (line 3)" in by_name["b.csv"]["reason"]
    assert "truncated gzip stream" in by_name["c.csv.gz"]["reason"]
    assert "not UTF-8 text: byte 0xfc" in by_name["d.csv"]["reason"]
    assert by_name["b.csv"]["raw"].startswith("<whole file quarantined: ")
    assert all(v["table"] == "sales.orders" for v in q.values())
    unreadable = {f["path"].rsplit("/", 1)[1] for f in r.files if f.get("unreadable")}
    assert unreadable == {"b.csv", "c.csv.gz", "d.csv"}

    # the CLI names the files (on the old code: "Aborted." and nothing loaded)
    d2 = tmp_path / "land2"
    d2.mkdir()
    (d2 / "a.csv.gz").write_bytes(whole[: len(whole) // 3])
    _csv(d2 / "b.csv", range(200, 210))
    res = CliRunner().invoke(
        app,
        [
            "ingest",
            "--table",
            "sales.orders",
            "--path",
            str(d2),
            "--input-format",
            "csv",
            "--data-interval",
            "2024-02-02",
            "--partition",
            "ds=2024-02-02",
        ],
        env={"COLUMNS": "300"},
    )
    assert res.exit_code == 0, (res.output, res.exception)
    assert "Aborted" not in res.output
    assert "quarantined unreadable file" in res.output and "a.csv.gz" in res.output
    assert sorted(x[1] for x in snapshot(spark, catalog) if x[0] == "2024-02-02") == list(
        range(200, 210)
    )


def test_rerun_loads_a_quarantined_file_once_it_is_fixed(spark, catalog, tmp_path):
    """An append/upsert batch with a truncated ``.gz`` (a copy in progress) quarantines that file
    and commits the rest; once the file is whole, a rerun of the same (table, interval) applies just
    that file as a follow-up batch ``<batch id>:+1`` (on the old code the rerun was skipped and its
    rows were never loaded), a further rerun is a no-op, a rerun racing an open follow-up is refused
    by the batch ledger, and nothing is applied twice. Upsert reruns the same way."""
    import gzip

    from acidflow.catalog.errors import BatchInProgressError
    from acidflow.engine.transaction import Transaction

    d = tmp_path / "land"
    d.mkdir()
    _csv(d / "a.csv", range(1, 51))
    whole = gzip.compress(
        ("id,amount,city\n" + "".join(f"{i},{i}.25,g{i}\n" for i in range(100, 150))).encode()
    )
    (d / "b.csv.gz").write_bytes(whole[: len(whole) // 2])  # still being copied
    kw = dict(partition={"ds": "2024-05-01"})
    r = ingest(spark, catalog, "sales.orders", str(d), "csv", "2024-05-01", **kw)
    assert (r.status, r.rows, r.files_quarantined) == ("applied", 50, 1)
    assert r.batch_id == "ingest:sales.orders:2024-05-01"
    assert [x[1] for x in snapshot(spark, catalog)] == list(range(1, 51))
    stored = catalog.get_batch(r.batch_id).details["files"]
    assert {f["path"].rsplit("/", 1)[1]: bool(f.get("unreadable")) for f in stored} == {
        "a.csv": False,
        "b.csv.gz": True,
    }

    (d / "b.csv.gz").write_bytes(whole)  # the copy finished
    # another run holding the follow-up id (open): this rerun is refused, nothing applied
    with pytest.raises(BatchInProgressError):
        with Transaction(catalog, heartbeat_s=0) as other:
            catalog.register_batch(other.txn_id, r.batch_id + ":+1", "ingest")
            ingest(spark, catalog, "sales.orders", str(d), "csv", "2024-05-01", **kw)
    assert [x[1] for x in snapshot(spark, catalog)] == list(range(1, 51))

    fixed = ingest(spark, catalog, "sales.orders", str(d), "csv", "2024-05-01", **kw)
    assert (fixed.status, fixed.rows, fixed.files_quarantined) == ("applied", 50, 0)
    assert fixed.batch_id == r.batch_id + ":+1" and "follow-up of" in fixed.note
    assert [f["path"].rsplit("/", 1)[1] for f in fixed.files] == ["b.csv.gz"]
    rows = snapshot(spark, catalog)
    assert [x[1] for x in rows] == list(range(1, 51)) + list(range(100, 150))
    assert catalog.get_batch(fixed.batch_id).state == "committed"

    again = ingest(spark, catalog, "sales.orders", str(d), "csv", "2024-05-01", **kw)
    assert (again.status, again.batch_id, again.note) == ("skipped", r.batch_id, "")
    assert snapshot(spark, catalog) == rows
    assert catalog.get_batch(r.batch_id + ":+2") is None

    # upsert: the same rerun rule (the follow-up updates nothing that was applied before)
    u = tmp_path / "up"
    u.mkdir()
    _csv(u / "a.csv", range(1, 11), city="u")  # keys 1..10 exist: updated
    (u / "b.csv.gz").write_bytes(whole[: len(whole) // 3])
    kw2 = dict(partition={"ds": "2024-05-01"}, mode="upsert")
    up = ingest(spark, catalog, "sales.orders", str(u), "csv", "2024-05-02", **kw2)
    assert (up.status, up.rows, up.rows_updated, up.files_quarantined) == ("applied", 10, 10, 1)
    (u / "b.csv.gz").write_bytes(gzip.compress(b"id,amount,city\n200,2.00,new\n5,5.00,b\n"))
    up2 = ingest(spark, catalog, "sales.orders", str(u), "csv", "2024-05-02", **kw2)
    assert (up2.status, up2.rows, up2.rows_updated) == ("applied", 2, 1)
    assert up2.batch_id == "ingest:sales.orders:2024-05-02:+1"
    assert (
        ingest(spark, catalog, "sales.orders", str(u), "csv", "2024-05-02", **kw2).status
        == "skipped"
    )
    final = {x[1]: x[3] for x in snapshot(spark, catalog)}
    assert len(final) == 101 and final[5] == "b" and final[6] == "u6" and final[200] == "new"


def test_unreadable_jsonl_and_parquet_and_a_batch_of_only_poison(spark, catalog, tmp_path):
    """JSON lines (binary, truncated .gz) and Parquet (garbage, truncated) files are quarantined
    whole; when no file is readable the batch fails naming every file, nothing is applied, and the
    interval loads once the files are fixed."""
    import gzip

    from acidflow.ingest import LandingFileError

    j = tmp_path / "j"
    j.mkdir()
    (j / "a.jsonl").write_text(
        "".join(json.dumps({"id": i, "amount": "1.00", "city": "o"}) + "\n" for i in range(10, 15))
    )
    (j / "b.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (j / "c.jsonl.gz").write_bytes(gzip.compress(b'{"id": 9}\n' * 1000)[:30])
    r = ingest(
        spark,
        catalog,
        "sales.orders",
        str(j),
        "jsonl",
        "2024-03-01",
        partition={"ds": "2024-03-01"},
    )
    assert (r.rows, r.files_quarantined) == (5, 2)

    p = tmp_path / "p"
    p.mkdir()
    good = p / "a.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "amount": pa.array(["2.5", "3.5"]).cast(pa.decimal128(10, 2)),
                "city": ["x", "y"],
            }
        ),
        good,
    )
    (p / "b.parquet").write_bytes(good.read_bytes()[:-30])
    (p / "c.parquet").write_bytes(b"id,amount\n1,2\n")
    r = ingest(
        spark,
        catalog,
        "sales.orders",
        str(p),
        "parquet",
        "2024-03-02",
        partition={"ds": "2024-03-02"},
    )
    assert (r.rows, r.files_quarantined) == (2, 2)
    reasons = [json.loads(x)["reason"] for x in open(r.quarantine_file)]
    assert any("truncated Parquet file" in x for x in reasons)
    assert any("not a Parquet file" in x for x in reasons)

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.parquet").write_bytes(b"PAR1 but nothing else")
    with pytest.raises(LandingFileError, match=r"x\.parquet: truncated Parquet file"):
        ingest(
            spark,
            catalog,
            "sales.orders",
            str(bad),
            "parquet",
            "2024-03-03",
            partition={"ds": "2024-03-03"},
        )
    assert [x for x in snapshot(spark, catalog) if x[0] == "2024-03-03"] == []
    pq.write_table(
        pa.table(
            {
                "id": pa.array([3, 4], pa.int64()),
                "amount": pa.array(["1", "2"]).cast(pa.decimal128(10, 2)),
                "city": ["z", "w"],
            }
        ),
        bad / "x.parquet",
    )
    r = ingest(
        spark,
        catalog,
        "sales.orders",
        str(bad),
        "parquet",
        "2024-03-03",
        partition={"ds": "2024-03-03"},
    )
    assert (r.status, r.rows, r.files_quarantined) == ("applied", 2, 0)


def test_append_of_existing_keys_is_refused_unless_upsert(spark, catalog, tmp_path):
    """``ingest --mode append`` of the same keyed file under two intervals no longer doubles the
    keys: the second append is refused naming the table and the keys (nothing applied), a rerun of
    the first interval stays a no-op, and ``mode="upsert"`` / ``--upsert`` updates the existing keys
    instead."""
    from typer.testing import CliRunner

    from acidflow.cli import app
    from acidflow.compactor.fsck import fsck_table
    from acidflow.ingest import ExistingKeysError

    d = tmp_path / "k"
    d.mkdir()
    _csv(d / "a.csv", range(1, 21))
    first = ingest(
        spark, catalog, "sales.orders", str(d), "csv", "2024-04-01", partition={"ds": "2024-04-01"}
    )
    assert first.rows == 20
    before = snapshot(spark, catalog)
    with pytest.raises(ExistingKeysError) as e:
        ingest(
            spark,
            catalog,
            "sales.orders",
            str(d),
            "csv",
            "2024-04-02",
            partition={"ds": "2024-04-01"},
        )
    msg = str(e.value)
    assert "ingest append into sales.orders: 20 primary key value(s) already in the table" in msg
    assert "{'id': 1}" in msg and "{'id': 10}" in msg and "{'id': 11}" not in msg
    assert "--upsert" in msg
    assert snapshot(spark, catalog) == before
    assert (
        ingest(
            spark,
            catalog,
            "sales.orders",
            str(d),
            "csv",
            "2024-04-01",
            partition={"ds": "2024-04-01"},
        ).status
        == "skipped"
    )

    rep = tmp_path / "rep"
    rep.mkdir()
    _csv(rep / "a.csv", [500, 501])
    _csv(rep / "b.csv", [501, 502])
    with pytest.raises(ExistingKeysError, match=r"1 repeated within the batch.*\{'id': 501\}"):
        ingest(
            spark,
            catalog,
            "sales.orders",
            str(rep),
            "csv",
            "2024-04-03",
            partition={"ds": "2024-04-01"},
        )

    _csv(d / "a.csv", range(15, 25), city="n")  # keys 15..20 exist, 21..24 are new
    up = ingest(
        spark,
        catalog,
        "sales.orders",
        str(d),
        "csv",
        "2024-04-04",
        partition={"ds": "2024-04-01"},
        mode="upsert",
    )
    assert (up.status, up.rows, up.rows_updated) == ("applied", 10, 6)
    rows = snapshot(spark, catalog)
    assert [x[1] for x in rows] == list(range(1, 25))
    assert {x[1]: x[3] for x in rows}[15] == "n15"

    _csv(d / "a.csv", [24, 25], city="cli")
    res = CliRunner().invoke(
        app,
        [
            "ingest",
            "--table",
            "sales.orders",
            "--path",
            str(d),
            "--input-format",
            "csv",
            "--data-interval",
            "2024-04-05",
            "--partition",
            "ds=2024-04-01",
            "--upsert",
        ],
        env={"COLUMNS": "300"},
    )
    assert res.exit_code == 0, (res.output, res.exception)
    assert "(upsert) rows=2 updated=1" in res.output
    rows = snapshot(spark, catalog)
    assert [x[1] for x in rows] == list(range(1, 26))
    assert not [f for f in fsck_table(catalog, "sales.orders") if f.kind == "duplicate_key"]
