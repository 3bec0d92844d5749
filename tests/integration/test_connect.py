"""acidflow on Spark Connect: the CDC apply job, ``read_table`` and ``format("acid")`` against
a real Connect server (the session-scoped ``spark_connect`` fixture, one per test run), where
``spark.sparkContext`` raises. The CDC and data source tests are those of ``test_cdc_apply``
and ``test_datasource`` run with a Connect session in place of the classic one."""

import pytest

from acidflow import datasource
from acidflow.catalog import SqlCatalog
from acidflow.entry import main as entry_main
from acidflow.read.engine import READER_ENV
from acidflow.read.table import read_table
from acidflow.sparkmode import ConnectUnsupportedError
from tests.integration import test_cdc_apply as cdc
from tests.integration import test_datasource as ds
from tests.integration.test_cdc_apply import merge_path  # noqa: F401 - a fixture used here

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def catalog(warehouse, connect_spark):
    cat = SqlCatalog(f"sqlite:///{warehouse / '_acidflow_catalog.db'}", warehouse=str(warehouse))
    datasource.register(connect_spark)  # the source bound to this test's warehouse
    yield cat
    cat.close()


@pytest.mark.parametrize("merge_path", ["spark"], indirect=True)
def test_cdc_wal2json_batches_on_connect(connect_spark, catalog, tmp_path, merge_path):  # noqa: F811
    cdc.test_wal2json_batches_late_events_drift_and_idempotence(
        connect_spark, catalog, tmp_path, merge_path
    )


def test_cdc_upsert_job_runs_on_connect_without_spark_context(
    spark_connect, connect_spark, catalog, tmp_path
):
    """The spark-submit entry's ``cdc-upsert`` with ``--remote``: on a Connect session, where
    ``sparkContext``, ``_jvm`` and RDDs raise, the job applies its batch; the rows read back
    through ``read_table`` and ``format("acid")`` on the same session."""
    with pytest.raises(Exception, match="JVM_ATTRIBUTE_NOT_SUPPORTED|NOT_IMPLEMENTED"):
        connect_spark.sparkContext  # noqa: B018 - what a job path must never touch
    land = tmp_path / "landing"
    cdc.write(
        land / "b1.json",
        [
            cdc.gg("I", "1", "2024-01-01 00:00:00", {"ID": 1, "NAME": "a"}),
            cdc.gg("I", "2", "2024-01-01 00:00:00", {"ID": 2, "NAME": "b"}),
            cdc.gg("U", "3", "2024-01-01 00:00:01", {"ID": 1, "NAME": "a2"}, {"ID": 1}),
        ],
    )
    argv = ["cdc-upsert", "--input", str(land), "--input-format", "goldengate"]
    argv += ["--target-db", "shop", "--auto-create", "--num-buckets", "2"]
    assert entry_main(["--remote", spark_connect.url, *argv]) == 0
    got = {r["id"]: r["name"] for r in read_table(connect_spark, catalog, "shop.cust").collect()}
    assert got == {1: "a2", 2: "b"}
    via_source = connect_spark.read.format("acid").load("shop.cust").collect()
    assert {r["id"]: r["name"] for r in via_source} == got
    assert [b.state for b in catalog.list_batches("cdc")] == ["committed"]


@pytest.mark.parametrize("name", [ds.PLAIN])
def test_acid_source_reads_and_writes_on_connect(connect_spark, catalog, name):
    ds.test_append_and_overwrite_like_transaction_in_one_commit(connect_spark, catalog, name)
    ds.test_reads_equal_read_table(connect_spark, catalog, name)


def test_engine_reader_is_refused_on_connect_by_name(connect_spark, catalog, monkeypatch):
    """A classic-only feature on a job's session raises an acidflow error naming it."""
    ds.make_table(catalog, ds.PLAIN)
    ds.frame(connect_spark, ds.PLAIN, range(3)).write.format("acid").mode("append").save(ds.PLAIN)
    monkeypatch.setenv(READER_ENV, "engine")
    with pytest.raises(ConnectUnsupportedError, match=f"{READER_ENV}=engine"):
        read_table(connect_spark, catalog, ds.PLAIN).collect()
