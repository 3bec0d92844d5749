"""Validation on real Spark, real ORC files and a real catalog: the GX gate on staged ingest and
CDC batches (a failure aborts the transaction and names its report), ``validate`` after commit
on a good table and on tampered files, and the ``validate`` spark-submit subcommand."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyorc
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.cdc.apply import CdcOptions, apply_file
from acidflow.engine.transaction import Transaction
from acidflow.format.orc import files as acid_files
from acidflow.ingest import ingest
from acidflow.quality.gx import QualityGateError
from acidflow.read.table import read_table
from acidflow.storage.fs import TableFS
from acidflow.validation import validate

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def catalog(warehouse):
    return SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))


def suite(d: Path, name: str, expectations: list) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{name}.json"
    p.write_text(json.dumps({"name": name, "expectations": expectations}))
    return d


def between(col, lo, hi, **meta):
    e = {
        "type": "expect_column_values_to_be_between",
        "kwargs": {"column": col, "min_value": lo, "max_value": hi},
    }
    return {**e, "meta": meta} if meta else e


def not_null(col):
    return {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": col}}


def unique(col):
    return {"type": "expect_column_values_to_be_unique", "kwargs": {"column": col}}


def visible(catalog, name):
    return sorted(tuple(r.values()) for r in read_table(None, catalog, name).to_pylist())


# ----------------------------------------------------------------------------- ingest gate


def test_ingest_gate_passes_then_fails_without_applying(spark, catalog, tmp_path):
    catalog.create_table(
        TableDef(
            name="sales.orders",
            columns=[Column("id", "bigint"), Column("amount", "int"), Column("city", "string")],
            primary_key=["id"],
            num_buckets=2,
        )
    )
    sd = suite(
        tmp_path / "suites",
        "sales.orders",
        [
            not_null("id"),
            unique("id"),
            between("amount", 0, 1000),
            not_null("city"),
            {
                "type": "expect_table_row_count_to_be_between",
                "kwargs": {"max_value": 3},
                "meta": {"acidflow_scope": "snapshot"},
            },
        ],
    )
    good = tmp_path / "land" / "d1"
    good.mkdir(parents=True)
    (good / "a.csv").write_text(
        "id,amount,city\n" + "".join(f"{i},{i * 10},c{i}\n" for i in range(1, 6))
    )
    r = ingest(spark, catalog, "sales.orders", str(good), "csv", "d1", suite_dir=str(sd))
    assert (r.status, r.rows) == ("applied", 5)  # the snapshot-only row count is not checked
    reports = list(
        (Path(catalog.warehouse) / "_quality" / "sales.orders").glob("*-staged-*/report.json")
    )
    assert len(reports) == 1 and json.loads(reports[0].read_text())["success"] is True
    before = visible(catalog, "sales.orders")

    bad = tmp_path / "land" / "d2"
    bad.mkdir(parents=True)
    (bad / "b.csv").write_text("id,amount,city\n10,5,x\n11,5000,y\n12,7,\n13,-1,z\n")
    with pytest.raises(QualityGateError) as ei:
        ingest(spark, catalog, "sales.orders", str(bad), "csv", "d2", suite_dir=str(sd))
    err = ei.value
    assert err.table == "sales.orders" and f"report: {err.report_path}" in str(err)
    assert "expect_column_values_to_be_between(amount): 2 unexpected" in str(err)
    doc = json.loads(Path(err.report_path).read_text())
    assert doc["success"] is False and doc["scope"] == "staged"
    failed = {e["type"] + ":" + e["column"]: e for e in doc["expectations"] if not e["success"]}
    assert set(failed) == {
        "expect_column_values_to_be_between:amount",
        "expect_column_values_to_not_be_null:city",
    }
    assert sorted(failed["expect_column_values_to_be_between:amount"]["unexpected_values"]) == [
        -1,
        5000,
    ]
    assert failed["expect_column_values_to_not_be_null:city"]["unexpected_count"] == 1
    assert Path(err.report_path).with_name("report.html").read_text().lstrip().startswith("<")
    # nothing applied: same rows, batch not committed, no commit record, landing file untouched
    assert visible(catalog, "sales.orders") == before
    assert catalog.get_batch("ingest:sales.orders:d2").state != "committed"
    assert len(catalog.commit_records("sales.orders")) == 1
    assert (bad / "b.csv").exists()
    # the gate off (or the data fixed), the same interval applies: it was never marked applied
    r2 = ingest(spark, catalog, "sales.orders", str(bad), "csv", "d2", quality_gate=False)
    assert (r2.status, r2.rows) == ("applied", 4)


# ----------------------------------------------------------------------------- CDC gate


def _cdc_file(path: Path, lsn_begin: str, lsn_commit: str, changes) -> Path:
    lines = [{"action": "B", "xid": 1, "lsn": lsn_begin}]
    for action, ident, bal in changes:
        cols = [
            {"name": "id", "type": "integer", "value": ident},
            {"name": "bal", "type": "integer", "value": bal},
        ]
        rec = {
            "action": action,
            "schema": "public",
            "table": "acc",
            "pk": [{"name": "id", "type": "integer"}],
        }
        rec.update({"identity": cols[:1]} if action == "D" else {"columns": cols})
        lines.append(rec)
    lines.append({"action": "C", "xid": 1, "lsn": lsn_commit, "nextlsn": lsn_commit})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(("\n".join(json.dumps(x) for x in lines) + "\n").encode()))
    return path


def test_cdc_gate_and_validate_after_commit(spark, catalog, tmp_path):
    sd = suite(
        tmp_path / "suites",
        "src.acc",
        [
            not_null("id"),
            unique("id"),
            between("bal", -100, 100),
            {
                "type": "expect_table_row_count_to_be_between",
                "kwargs": {"min_value": 1, "max_value": 100},
                "meta": {"acidflow_scope": "snapshot"},
            },
        ],
    )
    opts = CdcOptions(
        fmt="wal2json", target_db="src", auto_create=True, num_buckets=2, suite_dir=str(sd)
    )
    b1 = _cdc_file(
        tmp_path / "l" / "b1.jsonl.gz",
        "0/100",
        "0/1F0",
        [("I", i, i) for i in range(1, 9)] + [("U", 3, 33), ("D", 4, None)],
    )
    r1 = apply_file(spark, catalog, str(b1), opts)
    assert r1.status == "applied" and r1.tables["src.acc"]["rows_inserted"] == 7
    before = visible(catalog, "src.acc")

    # an update to an out-of-range balance and an insert: the gate sees the plan's insert rows
    b2 = _cdc_file(
        tmp_path / "l" / "b2.jsonl.gz",
        "0/200",
        "0/2F0",
        [("U", 2, 999), ("I", 20, 5), ("D", 5, None)],
    )
    with pytest.raises(QualityGateError) as ei:
        apply_file(spark, catalog, str(b2), opts)
    assert "src.acc" in str(ei.value) and ei.value.report_path in str(ei.value)
    doc = json.loads(Path(ei.value.report_path).read_text())
    bad = [e for e in doc["expectations"] if not e["success"]]
    assert [
        (e["type"], e["column"], e["unexpected_count"], e["unexpected_values"]) for e in bad
    ] == [("expect_column_values_to_be_between", "bal", 1, [999])]
    assert doc["engine"] == "pandas"
    assert visible(catalog, "src.acc") == before  # nothing of the batch visible
    assert catalog.get_batch("wal2json:0000000000000200-00000000000002F0").state != "committed"

    # after commit: the suite on the snapshot (row count included) plus the ACID invariants
    rep = validate(spark, catalog, "src.acc", suite_dir=str(sd))
    s = rep.summary()
    assert rep.success, s
    assert s["expectations"] == 4 and s["invariant_errors"] == [] and s["failed_expectations"] == []
    assert rep.expectations.engine == "spark"
    assert Path(rep.report_path).name == "validation.json"
    full = json.loads(Path(rep.report_path).read_text())
    assert full["success"] is True and full["gx"]["scope"] == "snapshot"
    assert (Path(rep.report_path).parent / "report.html").exists()


# ----------------------------------------------------------------------------- tampered files


@pytest.fixture
def tampered(spark, catalog):
    """Table db.t (2 buckets): an insert, then a delete whose delete-delta file is moved to the
    other bucket's name, and a delta whose file is rewritten unsorted without key index."""
    catalog.create_table(
        TableDef(
            name="db.t",
            columns=[Column("id", "int"), Column("v", "string")],
            primary_key=["id"],
            num_buckets=2,
        )
    )
    catalog.create_table(
        TableDef(name="db.ok", columns=[Column("id", "int")], primary_key=["id"], num_buckets=2)
    )
    with Transaction(catalog) as txn:
        txn.insert(
            "db.t", spark.createDataFrame([(i, f"v{i}") for i in range(40)], "id int, v string")
        )
        txn.insert("db.ok", spark.createDataFrame([(i,) for i in range(10)], "id int"))
    with Transaction(catalog) as txn:
        txn.delete("db.t", spark.createDataFrame([(1,)], "id int"))
    with Transaction(catalog) as txn:
        txn.insert(
            "db.t", spark.createDataFrame([(100 + i, "w") for i in range(6)], "id int, v string")
        )
    loc = catalog.get_table("db.t").location
    tfs = TableFS(loc)
    [ddir] = [p for p in os.listdir(loc) if p.startswith("delete_delta_")]
    [dfile] = [f for f in os.listdir(Path(loc) / ddir) if f.startswith("bucket_")]
    other = "bucket_00001" if dfile == "bucket_00000" else "bucket_00000"
    os.rename(Path(loc) / ddir / dfile, Path(loc) / ddir / other)
    [last] = sorted(p for p in os.listdir(loc) if p.startswith("delta_"))[-1:]
    victim = max(
        (f for f in os.listdir(Path(loc) / last) if f.startswith("bucket_")),
        key=lambda f: acid_files.file_info(tfs, str(Path(loc) / last / f)).rows,
    )
    path = str(Path(loc) / last / victim)
    events = acid_files.read_events(tfs, path).to_pylist()
    assert len(events) >= 2
    rows = [
        (
            e["operation"],
            e["originalTransaction"],
            e["bucket"],
            e["rowId"],
            e["currentTransaction"],
            (e["id"], e["v"]),
        )
        for e in reversed(events)
    ]
    with open(path, "wb") as fh:  # pyorc straight: no hive.acid.* metadata, reversed order
        with pyorc.Writer(fh, acid_files.event_schema([("id", "int"), ("v", "string")])) as w:
            w.writerows(rows)
    return {"delete_file": f"{ddir}/{other}", "unsorted": f"{last}/{victim}"}


def test_validate_finds_tampered_files(spark, catalog, tampered):
    rep = validate(None, catalog, "db.t", suite_dir=str(Path(catalog.warehouse) / "no-suites"))
    assert not rep.success and rep.expectations is None
    kinds = {(f.kind, f.path) for f in rep.errors}
    assert ("wrong_bucket_file", tampered["delete_file"]) in kinds
    assert ("unsorted_events", tampered["unsorted"]) in kinds
    # fsck's finding, reused: the rewritten file no longer has its recorded size (the catalog
    # records every committed file), which fsck reports before looking inside it
    assert ("size_mismatch", tampered["unsorted"]) in kinds
    lines = rep.summary()["invariant_errors"]
    assert any(
        line.startswith(f"wrong_bucket_file {tampered['delete_file']}: events of another bucket")
        for line in lines
    ), lines
    assert json.loads(Path(rep.report_path).read_text())["success"] is False


def test_entry_validate_subprocess(catalog, tampered, tmp_path):
    sd = suite(tmp_path / "suites", "db.ok", [not_null("id"), unique("id"), between("id", 0, 9)])
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ACIDFLOW_WAREHOUSE": catalog.warehouse,
        "ACIDFLOW_CATALOG_URL": f"sqlite:///{Path(catalog.warehouse) / '_acidflow_catalog.db'}",
    }
    p = subprocess.run(
        [
            sys.executable,
            str(REPO / "jobs" / "submit.py"),
            "validate",
            "--table",
            "db.ok",
            "--table",
            "db.t",
            "--suite-dir",
            str(sd),
            "--engine",
            "pandas",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["success"] is False
    ok, bad = out["tables"]
    assert ok["table"] == "db.ok" and ok["success"] and ok["expectations"] == 3, ok
    assert bad["table"] == "db.t" and not bad["success"]
    assert any(e.startswith("wrong_bucket_file") for e in bad["invariant_errors"])


def test_cli_validate_json(catalog, tampered, tmp_path):
    from typer.testing import CliRunner

    from acidflow.cli import app

    sd = suite(tmp_path / "suites", "db.ok", [between("id", 0, 5)])
    res = CliRunner().invoke(app, ["validate", "db.ok", "db.t", "--suite-dir", str(sd), "--json"])
    assert res.exit_code == 1, res.output
    out = json.loads(res.output.strip().splitlines()[-1])
    ok, bad = out["tables"]
    [line] = ok["failed_expectations"]
    assert line.startswith("expect_column_values_to_be_between(id): 4 unexpected, e.g. [")
    assert Path(ok["report"]).exists() and not bad["success"]
