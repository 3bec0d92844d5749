"""Hive 3.1.3's own ACID reader (``tests/compat/hive31.py``) reads a table after acidflow's
schema changes exactly as acidflow does, ROW__IDs included: renamed and widened columns over old
files (Hive's ORC ``SchemaEvolution`` by position with ``ConvertTreeReaderFactory``), the base
a reorder / drop rewrite writes, and a major compaction after the widening -- on a partitioned,
bucketed table and on an unpartitioned, unbucketed one."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from acidflow.catalog import Column, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.tableops.schema import alter_table
from tests.compat.hive31 import Hive31Oracle, require_hive31_tools, same_as_acidflow

pytestmark = [pytest.mark.slow]

ARTIFACTS = require_hive31_tools()
CFG = CompactorConfig(heartbeat_s=0.5)


@pytest.fixture(scope="module")
def hive31():
    with Hive31Oracle(ARTIFACTS) as oracle:
        yield oracle


def rows(ids, tag: str, partitioned: bool) -> pa.Table:
    data = {
        "id": pa.array(ids, pa.int32()),
        "qty": pa.array([i * 1_000 + len(tag) for i in ids], pa.int32()),
        "price": pa.array([decimal.Decimal(i * 12345) / 100 for i in ids], pa.decimal128(8, 2)),
        "note": pa.array([f"{tag}-{i}" for i in ids], pa.string()),
        "score": pa.array([None if i % 7 == 0 else i / 3 for i in ids], pa.float32()),
    }
    if partitioned:
        data["ds"] = pa.array([f"2024-01-0{1 + i % 3}" for i in ids], pa.string())
    return pa.table(data)


@pytest.mark.parametrize(
    "partitioned,buckets", [(True, 4), (False, 0)], ids=["partitioned-bucketed", "flat-unbucketed"]
)
def test_hive_reads_the_evolved_table_like_acidflow(catalog, hive31, partitioned, buckets):
    name = "db.hevo"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("id", "int"),
                Column("qty", "int"),
                Column("price", "decimal(8,2)"),
                Column("note", "varchar(12)"),
                Column("score", "float"),
            ],
            partition_columns=[Column("ds", "string")] if partitioned else [],
            primary_key=["id"],
            num_buckets=buckets,
        )
    )
    with Transaction(catalog, heartbeat_s=0) as txn:  # w1
        txn.upsert(name, rows(list(range(300)), "a", partitioned))
    with Transaction(catalog, heartbeat_s=0) as txn:  # w2
        txn.upsert(name, rows(list(range(0, 400, 5)), "bb", partitioned))
    same_as_acidflow(hive31, catalog, name)

    alter_table(catalog, name, rename_column=("qty", "quantity"))  # w3
    alter_table(catalog, name, change_type=("quantity", "bigint"))  # w4
    alter_table(catalog, name, change_type=("price", "decimal(14,3)"))  # w5
    alter_table(catalog, name, change_type=("note", "string"))  # w6
    alter_table(catalog, name, change_type=("score", "double"))  # w7
    same_as_acidflow(hive31, catalog, name)

    new = rows([3, 1000], "c", partitioned)
    new = new.set_column(1, "quantity", pa.array([2**40, -(2**35)], pa.int64()))
    new = new.set_column(
        2, "price", pa.array([decimal.Decimal("12345678901.234")] * 2, pa.decimal128(14, 3))
    )
    new = new.set_column(4, "score", pa.array([1e300, 0.1], pa.float64()))
    with Transaction(catalog, heartbeat_s=0) as txn:  # w8
        txn.upsert(name, new)
    same_as_acidflow(hive31, catalog, name)

    for part in ["ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-03"] if partitioned else [None]:
        info = initiator.request_compaction(catalog, name, part, "major")
        out = worker.run_worker(None, catalog, cq_id=info.id, config=CFG)
        assert out is not None and out.state == "ready for cleaning", out and out.report
    same_as_acidflow(hive31, catalog, name)

    alter_table(
        catalog, name, reorder=["note", "id", "score", "quantity", "price"], rewrite=True
    )  # w9
    same_as_acidflow(hive31, catalog, name)
    alter_table(catalog, name, drop_columns=["score"], rewrite=True)  # w10
    same_as_acidflow(hive31, catalog, name)
