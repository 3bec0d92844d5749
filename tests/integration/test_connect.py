"""acidflow on Spark Connect: the CDC apply job, ``read_table`` and ``format("acid")`` against
a real Connect server (the session-scoped ``spark_connect`` fixture, one per test run), where
``spark.sparkContext`` raises. The CDC and data source tests are those of ``test_cdc_apply``
and ``test_datasource`` run with a Connect session in place of the classic one."""

import pytest

from acidflow import datasource
from acidflow.catalog import SqlCatalog
from acidflow.entry import main as entry_main
from acidflow.read.table import read_table
from acidflow.sparkmode import REMOTE_ENV, ConnectUnsupportedError
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
    spark_connect, connect_spark, catalog, tmp_path, monkeypatch
):
    """The spark-submit entry's ``cdc-upsert`` with ``--remote``: on a Connect session, where
    ``sparkContext``, ``_jvm`` and RDDs raise, the job applies its batch; the rows read back
    through ``read_table`` and ``format("acid")`` on the same session."""
    monkeypatch.setenv(REMOTE_ENV, spark_connect.url)  # what --remote sets; undone after
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

    # the classic-only Kafka source says so by name, before touching Kafka
    kafka = ["cdc-upsert", "--kafka-bootstrap-servers", "127.0.0.1:9", "--kafka-source", "k"]
    kafka += ["--kafka-topics", "t"]
    with pytest.raises(ConnectUnsupportedError, match="Kafka source 'k'.*spark_mode=submit"):
        entry_main(["--remote", spark_connect.url, *kafka, "--input-format", "debezium"])


@pytest.mark.parametrize(
    "body",
    [ds.test_append_and_overwrite_like_transaction_in_one_commit, ds.test_reads_equal_read_table],
    ids=["write", "read"],
)
def test_acid_source_on_connect(connect_spark, catalog, body):
    """``df.write.format("acid")`` appends/overwrites and ``spark.read.format("acid")`` reads
    (equal to ``read_table``) through Connect."""
    body(connect_spark, catalog, ds.PLAIN)
