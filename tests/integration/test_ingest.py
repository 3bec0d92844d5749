"""Batch ingest of CSV, JSON lines and Parquet per data interval: append, insert overwrite of a
partition, idempotent reruns, quarantined bad rows."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.quarantine import QuarantineThresholdError
from acidflow.ingest import ingest
from acidflow.reads import read_table

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog(warehouse):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    cat.create_table(TableDef(name="sales.orders", columns=[
        Column("id", "bigint"), Column("amount", "decimal(10,2)"), Column("city", "string")],
        partition_columns=[Column("ds", "string")], primary_key=["id"]))
    return cat


def snapshot(spark, catalog):
    return sorted((r["ds"], r["id"], str(r["amount"]), r["city"])
                  for r in read_table(spark, catalog, "sales.orders").collect())


def test_csv_append_is_idempotent_and_bad_rows_quarantined(spark, catalog, tmp_path):
    d1 = tmp_path / "land" / "2024-01-01"
    d1.mkdir(parents=True)
    lines = ["id,amount,city"] + [f"{i},{i}.50,c{i % 3}" for i in range(1, 201)] + ["x,1,bad"]
    (d1 / "a.csv").write_text("\n".join(lines) + "\n")
    r = ingest(spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01",
               partition={"ds": "2024-01-01"})
    assert (r.status, r.rows, r.quarantined) == ("applied", 200, 1)
    q = [json.loads(x) for x in open(r.quarantine_file)]
    assert q[0]["raw"] == "x,1,bad" and q[0]["source"].endswith("a.csv")
    assert "does not parse" in q[0]["reason"]
    first = snapshot(spark, catalog)
    assert len(first) == 200 and first[0] == ("2024-01-01", 1, "1.50", "c1")
    again = ingest(spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01",
                   partition={"ds": "2024-01-01"})
    assert again.status == "skipped" and again.txn_id == r.txn_id and again.note == ""
    (d1 / "b.csv").write_text("id,amount,city\n999,1,z\n")
    late = ingest(spark, catalog, "sales.orders", str(d1), "csv", "2024-01-01",
                  partition={"ds": "2024-01-01"})
    assert late.status == "skipped" and "overwrite" in late.note
    assert snapshot(spark, catalog) == first


def test_overwrite_partition_jsonl_and_parquet(spark, catalog, tmp_path):
    j = tmp_path / "j"
    j.mkdir()
    (j / "part-1.jsonl").write_text("".join(json.dumps({"id": i, "amount": "1.00", "city": "o"}) + "\n"
                                            for i in range(10)))
    ingest(spark, catalog, "sales.orders", str(j), "jsonl", "2024-01-02", mode="overwrite",
           partition={"ds": "2024-01-02"})
    p = tmp_path / "p"
    p.mkdir()
    pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64()),
                             "amount": pa.array(["2.5", "3.5"]).cast(pa.decimal128(10, 2)),
                             "city": ["x", "y"]}), p / "f.parquet")
    r = ingest(spark, catalog, "sales.orders", str(p), "parquet", "2024-01-02/v2", mode="overwrite",
               partition={"ds": "2024-01-02"})
    assert r.rows == 2
    assert snapshot(spark, catalog) == [("2024-01-02", 100, "2.50", "x"), ("2024-01-02", 101, "3.50", "y")]
    assert ingest(spark, catalog, "sales.orders", str(p), "parquet", "2024-01-02/v2",
                  mode="overwrite", partition={"ds": "2024-01-02"}).status == "skipped"


def test_too_many_bad_rows_abort(spark, catalog, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "a.csv").write_text("id,amount,city\n1,1,a\nnope,1,b\n,2,c\n")
    with pytest.raises(QuarantineThresholdError, match="2 of 3 records are bad"):
        ingest(spark, catalog, "sales.orders", str(d), "csv", "2024-01-03",
               partition={"ds": "2024-01-03"})
    assert snapshot(spark, catalog) == []
    r = ingest(spark, catalog, "sales.orders", str(d), "csv", "2024-01-03",
               partition={"ds": "2024-01-03"}, quarantine_threshold=0.9)
    assert (r.status, r.rows, r.quarantined) == ("applied", 1, 2)
