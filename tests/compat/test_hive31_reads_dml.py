"""Tables changed by predicate UPDATE, DELETE and MERGE (``acidflow.engine.statements.dml`` /
``acidflow.engine.statements.merge``) read by Hive 3.1.3's own ACID reader (``tests/compat/hive31.py``)
under the catalog's ValidWriteIdList: exactly acidflow's snapshot, ROW__IDs included -- after
each statement, at an older write id, and after a major compaction and clean. Bucketed keyed,
partitioned unkeyed."""

from __future__ import annotations

import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = require_hive31_tools()
CFG = CompactorConfig(heartbeat_s=0.5)
SCHEMA = "id int, v string, amt bigint, region string"


@pytest.fixture(scope="module")
def hive31():
    with Hive31Oracle(ARTIFACTS) as oracle:
        yield oracle


def major(spark, catalog, name: str, partition: str | None = None) -> None:
    info = initiator.request_compaction(catalog, name, partition, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=CFG)
    assert out is not None and out.state == "ready for cleaning", out and out.report
    cleaner.run_cleaner(catalog)


@pytest.mark.parametrize("layout", ["keyed-bucketed", "unkeyed-partitioned"])
def test_hive_reads_what_update_delete_and_merge_wrote(spark, catalog, hive31, layout):
    name = "db.dml"
    if layout == "keyed-bucketed":
        catalog.create_table(
            TableDef(
                name=name,
                columns=[
                    Column("id", "int"),
                    Column("v", "string"),
                    Column("amt", "bigint"),
                    Column("region", "string"),
                ],
                primary_key=["id"],
                num_buckets=4,
            )
        )
        on = ["id"]
    else:
        catalog.create_table(
            TableDef(
                name=name,
                columns=[Column("id", "int"), Column("v", "string"), Column("amt", "bigint")],
                partition_columns=[Column("region", "string")],
            )
        )
        on = "t.id = s.id AND t.region = s.region"
    rows = [(i, f"v{i}", i, "eu" if i % 3 else "us") for i in range(300)]
    with Transaction(catalog) as txn:  # w1
        txn.insert(name, spark.createDataFrame(rows, SCHEMA))
    with Transaction(catalog) as txn:  # w2
        assert (
            txn.update(
                name, "amt % 4 = 0", set={"v": "concat(v, '-u')", "amt": "amt + 1000"}
            ).rows_updated
            == 75
        )
    same_as_acidflow(hive31, catalog, name)
    with Transaction(catalog) as txn:  # w3
        assert txn.delete(name, where="id % 7 = 0").rows_deleted == 43
        txn.update(name, "id < 20", set={"v": "'again'"})  # statement 1, sees statement 0
    same_as_acidflow(hive31, catalog, name)
    src = spark.createDataFrame(
        [(i, f"m{i}", -i, "eu" if i % 3 else "us") for i in range(250, 330, 2)], SCHEMA
    )
    with Transaction(catalog) as txn:  # w4
        res = (
            txn.merge(name, src, on=on)
            .when_matched_delete(condition="s.id % 10 = 0")
            .when_matched_update(set={"v": "s.v", "amt": "s.amt"})
            .when_not_matched_insert()
            .execute()
        )
    # 250..298 without the multiples of 7 deleted in w3 match; 300..328 and those 4 do not
    assert (res.rows_inserted, res.rows_updated, res.rows_deleted) == (19, 17, 4)
    hive = same_as_acidflow(hive31, catalog, name)
    assert {r.write_id for r in hive} == {1, 2, 3, 4}
    same_as_acidflow(hive31, catalog, name, as_of_write_id=2)
    same_as_acidflow(hive31, catalog, name, as_of_write_id=3)
    if layout == "keyed-bucketed":
        major(spark, catalog, name)
    else:
        for p in ("region=eu", "region=us"):
            major(spark, catalog, name, p)
    same_as_acidflow(hive31, catalog, name)
