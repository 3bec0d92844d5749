"""Tables on object storage: the warehouse on a real S3 server (moto in server mode on
127.0.0.1, ``tests/support/s3.py``), the SQLite catalog local. Writes through the Transaction
API, exclusive creation by conditional PUT, a writer that dies before its commit, minor and
major compaction published through the compaction's transaction (``_v<T>`` directories, no
rename), the cleaner, the CDC demo reconciled exactly, and Spark reading a landing file through
S3A."""

from __future__ import annotations

import io
import json
import threading
import time
from collections import Counter

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.quarantine import write_quarantine
from acidflow.read import table as reads
from acidflow.sources.records import BadRecord
from acidflow.spark import hadoop_aws_jars
from acidflow.storage.fs import DirectoryClaimedError, TableFS, new_claim
from acidflow.tableops.adopt import TableOpsError
from acidflow.tableops.convert import check_convertible
from tests.support.s3 import point_spark_at

CFG = CompactorConfig(heartbeat_s=0.5, target_file_bytes=0)
COLS = [Column("k", "int"), Column("v", "string")]


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The AWS environment of the session's S3 server, applied for one test; a fresh bucket."""
    import s3fs

    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_server.make_bucket()
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def catalog(s3_env, tmp_path, monkeypatch):
    wh = f"s3://{s3_env}/wh"
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", wh)
    monkeypatch.setenv("ACIDFLOW_CATALOG_URL", url)
    cat = SqlCatalog(url, warehouse=wh, txn_timeout_s=2)
    yield cat
    cat.close()


@pytest.fixture
def s3_spark(spark, s3_server):
    point_spark_at(spark, s3_server.env)
    return spark


def rows(catalog, name) -> dict[int, str]:
    return {r["k"]: r["v"] for r in reads.read_table(None, catalog, name).to_pylist()}


def names(tfs: TableFS, location: str) -> list[str]:
    return sorted(n for n, _ in tfs.list_dir(location))


def test_exclusive_create_and_claim_race_one_winner(s3_env):
    tfs = TableFS(f"s3://{s3_env}/wh")
    assert not tfs.renames_atomically
    target = f"s3://{s3_env}/wh/t/_marker"
    outcomes: list[str] = []

    def create(i: int) -> None:
        try:
            TableFS(target).create_exclusive(target, f"writer {i}".encode())
            outcomes.append(f"won {i}")
        except FileExistsError:
            outcomes.append("exists")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("exists") == 5
    assert tfs.read_bytes(target) == f"writer {winners[0].split()[1]}".encode()

    d = f"s3://{s3_env}/wh/t/delta_0000001_0000001_0000"
    claims = [new_claim(write_id=1, n=i) for i in range(4)]
    got: list[object] = []

    def claim(c: str) -> None:
        try:
            got.append(TableFS(d).claim_dir(d, c))
        except DirectoryClaimedError as exc:
            got.append(exc)

    threads = [threading.Thread(target=claim, args=(c,)) for c in claims]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert got.count(True) == 1 and sum(isinstance(g, DirectoryClaimedError) for g in got) == 3
    with pytest.raises(NotImplementedError, match="no atomic rename"):
        tfs.rename_exclusive(d, d + "_x")


def test_quarantine_is_one_put_and_convert_refuses_renames_on_s3(s3_env):
    wh = f"s3://{s3_env}/wh"
    path = write_quarantine(wh, "cdc", "batch 1", [BadRecord("f.json:3", "no key", "{}", "s.t")])
    tfs = TableFS(wh)
    assert tfs.list_dir(f"{wh}/_quarantine/cdc") == [("batch_1.jsonl", False)]  # no temp file
    assert json.loads(tfs.read_bytes(path))["reason"] == "no key"

    buf = io.BytesIO()
    paorc.write_table(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}), buf)
    loc = f"{wh}/plain"
    tfs.put_atomic(f"{loc}/part-00000-abc.c000.orc", buf.getvalue())
    tdef = TableDef(name="db.plain", columns=COLS, location=loc)
    with pytest.raises(TableOpsError, match=r"s3://, which has no rename.*part-00000"):
        check_convertible(tdef, loc, rename=True)
    assert names(tfs, loc) == ["part-00000-abc.c000.orc"]  # nothing renamed


@pytest.mark.spark
@pytest.mark.slow
def test_writes_crash_compaction_and_cleaner_on_s3(s3_spark, catalog, s3_env):
    spark = s3_spark
    catalog.create_table(TableDef(name="db.t", columns=COLS, primary_key=["k"], num_buckets=2))
    loc = catalog.get_table("db.t").location
    assert loc.startswith(f"s3://{s3_env}/wh/")
    tfs = TableFS(loc)
    expect = {i: "a" for i in range(20)}
    with Transaction(catalog) as txn:
        txn.insert(
            "db.t", spark.createDataFrame([(k, v) for k, v in expect.items()], "k int, v string")
        )
    with Transaction(catalog) as txn:
        txn.upsert(
            "db.t", spark.createDataFrame([(i, "u") for i in range(15, 25)], "k int, v string")
        )
    expect.update({i: "u" for i in range(15, 25)})
    with Transaction(catalog) as txn:
        txn.delete("db.t", spark.createDataFrame([(i,) for i in (0, 1, 16)], "k int"))
    for k in (0, 1, 16):
        expect.pop(k)
    assert rows(catalog, "db.t") == expect

    # a writer that dies before its commit: its files are under an open write id, invisible
    dead = Transaction(catalog, heartbeat_s=0)
    dead.begin()
    dead.upsert("db.t", spark.createDataFrame([(i, "dead") for i in range(5)], "k int, v string"))
    dead_dirs = [n for n in names(tfs, loc) if "_0000004_0000004_" in n]
    assert dead_dirs == ["delete_delta_0000004_0000004_0000", "delta_0000004_0000004_0000"]
    assert rows(catalog, "db.t") == expect
    time.sleep(2.5)  # silent longer than txn_timeout_s: the housekeeper aborts it
    assert dead.txn_id in catalog.abort_timed_out_transactions()
    assert rows(catalog, "db.t") == expect

    # minor compaction: written under delta_*_v<T>, invisible until the compaction commits
    seen_during: list[dict] = []
    info = initiator.request_compaction(catalog, "db.t", None, "minor")
    out = worker.run_worker(
        spark,
        catalog,
        cq_id=info.id,
        config=CFG,
        tamper=lambda d: seen_during.append(rows(catalog, "db.t")),
    )
    assert out.state == "ready for cleaning", out.report
    txn_id = catalog.get_compaction(info.id).txn_id
    assert seen_during == [expect]
    listed = names(tfs, loc)
    assert f"delta_0000001_0000003_v{txn_id:07d}" in listed
    assert f"delete_delta_0000001_0000003_v{txn_id:07d}" in listed
    assert not any(n.startswith(".") for n in listed)  # nothing staged, nothing renamed
    assert rows(catalog, "db.t") == expect

    # the cleaner: the minor's inputs and the dead writer's aborted delta are deleted
    rep = cleaner.run_cleaner(catalog)
    assert set(dead_dirs) <= set(rep.cleaned[info.id] + sum(rep.aborted.values(), []))
    assert names(tfs, loc) == sorted(
        [f"delete_delta_0000001_0000003_v{txn_id:07d}", f"delta_0000001_0000003_v{txn_id:07d}"]
    )
    assert rows(catalog, "db.t") == expect

    # major compaction, then the cleaner: one base_3_v<T> left
    with Transaction(catalog) as txn:
        txn.upsert("db.t", spark.createDataFrame([(2, "m")], "k int, v string"))
    expect[2] = "m"
    info = initiator.request_compaction(catalog, "db.t", None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out.state == "ready for cleaning", out.report
    major_txn = catalog.get_compaction(info.id).txn_id
    assert rows(catalog, "db.t") == expect
    cleaner.run_cleaner(catalog)
    assert names(tfs, loc) == [f"base_0000005_v{major_txn:07d}"]
    assert rows(catalog, "db.t") == expect


@pytest.mark.spark
@pytest.mark.slow
def test_failed_compaction_output_is_never_visible_and_is_cleaned(s3_spark, catalog):
    spark = s3_spark
    catalog.create_table(TableDef(name="db.f", columns=COLS, primary_key=["k"]))
    for batch in range(3):
        with Transaction(catalog) as txn:
            txn.upsert(
                "db.f",
                spark.createDataFrame(
                    [(i, f"b{batch}") for i in range(batch, batch + 5)], "k int, v string"
                ),
            )
    expect = rows(catalog, "db.f")
    loc = catalog.get_table("db.f").location
    tfs = TableFS(loc)
    info = initiator.request_compaction(catalog, "db.f", None, "major")

    def crash(_pdir: str) -> None:  # the worker dies after writing its output
        raise RuntimeError("worker killed")

    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG, tamper=crash)
    assert out.state == "failed"
    txn_id = catalog.get_compaction(info.id).txn_id
    assert catalog.get_transaction(txn_id).state == "aborted"
    leftover = f"base_0000003_v{txn_id:07d}"
    assert leftover in names(tfs, loc)  # left behind, but under an aborted transaction
    assert rows(catalog, "db.f") == expect
    rep = cleaner.run_cleaner(catalog)
    assert leftover in sum(rep.aborted.values(), [])
    assert leftover not in names(tfs, loc)
    assert rows(catalog, "db.f") == expect


@pytest.mark.spark
@pytest.mark.slow
def test_cdc_demo_on_s3_reconciles_exactly(s3_spark, catalog):
    from acidflow.demo.pgbench import run_demo

    summary = run_demo(s3_spark, catalog)
    assert summary.ok, summary.tables
    assert summary.tables["pgbench.pgbench_accounts"]["rows"] == 100133
    tdef = catalog.get_table("pgbench.pgbench_accounts")
    assert tdef.location.startswith("s3://")
    assert any(n.startswith("delta_") for n in names(TableFS(tdef.location), tdef.location))


@pytest.mark.spark
def test_spark_reads_a_landing_file_from_s3(s3_spark, s3_env):
    if not hadoop_aws_jars():
        pytest.skip("the S3A jars are not fetched (make hadoop-aws)")
    path = f"s3://{s3_env}/landing/orders.csv"
    TableFS(path).put_atomic(path, b"id,amount\n1,2.5\n2,4.0\n3,1.5\n")
    for url in (path, path.replace("s3://", "s3a://")):
        df = s3_spark.read.csv(url, header=True, inferSchema=True)
        assert Counter(tuple(r) for r in df.collect()) == Counter([(1, 2.5), (2, 4.0), (3, 1.5)])
