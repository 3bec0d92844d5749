"""Trino 476 on the session's Hive 3.1.3 metastore, both directions.

- Trino writes a Hive 3 transactional ORC table (CREATE ... transactional=true, INSERT, DELETE,
  UPDATE, a failed INSERT) and acidflow reads it as Hive would: the write ids from the
  metastore (``get_valid_write_ids``), the files through acidflow's snapshot reader; the rows
  equal Trino's SELECT, now and at an earlier write id.
- acidflow writes a table through its own catalog (Spark inserts, split-update upserts, a
  delete, an aborted transaction, a major compaction and its cleaner), the table is registered
  in the metastore with its write-id history (``tests.support.trino.register_in_metastore``:
  by hand until the thrift:// catalog backend does it), and Trino's SELECT returns exactly
  acidflow's snapshot after every step.
- acidflow on the ``thrift://`` catalog (HiveMetastoreCatalog) and Trino write the same
  partitioned table through one metastore: Trino's write id is never reused, acidflow's
  split-update finds Trino's row, its major compaction folds Trino's delta into a base.

One Trino server per test session (``trino_server`` fixture). Without ``make trino-server`` or
the Hive artifacts the module skips (fails when ``CI=true``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import time
from pathlib import Path
from typing import Any

import pytest

from acidflow.catalog import Column, TableDef, load_catalog
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read import table as reads
from devservers.trino import TrinoMissing, TrinoQueryError, locate_trino
from tests.support.hms import require_hive_artifacts
from tests.support.trino import (
    local_path,
    metastore_write_ids,
    read_hive_table,
    register_in_metastore,
    require_trino,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]

require_hive_artifacts()
require_trino()

COLS = "id, name, CAST(amount AS varchar), CAST(day AS varchar)"


def _norm(value: Any) -> Any:
    """acidflow's Python values in the form Trino's REST protocol gives them."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _rows(table: Any) -> list[list[Any]]:
    return sorted(
        [[_norm(r[c]) for c in ("id", "name", "amount", "day")] for r in table.to_pylist()]
    )


def _trino_rows(trino: Any, full: str) -> list[list[Any]]:
    return sorted(trino.execute(f"SELECT {COLS} FROM hive.{full}"))


def _files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


def _dirs(path: str) -> list[str]:
    return sorted(p.name for p in Path(path).iterdir() if not p.name.startswith("."))


def test_trino_writes_acidflow_reads(trino_server, hive_metastore):
    q = trino_server.execute
    url = hive_metastore.url
    q("CREATE SCHEMA hive.trino_w")
    q(
        "CREATE TABLE hive.trino_w.orders (id bigint, name varchar, amount decimal(12,2), day date)"
        " WITH (format = 'ORC', transactional = true)"
    )
    assert q(
        "INSERT INTO hive.trino_w.orders VALUES (1, 'a', 1.50, DATE '2024-01-01'),"
        " (2, 'b', 2.00, DATE '2024-01-02'), (3, 'c', 3.25, DATE '2024-01-03')"
    ) == [[3]]
    assert q(
        "INSERT INTO hive.trino_w.orders VALUES (4, 'd', 4.00, DATE '2024-01-04'),"
        " (5, NULL, NULL, NULL)"
    ) == [[2]]
    after_w2 = _trino_rows(trino_server, "trino_w.orders")
    assert q("DELETE FROM hive.trino_w.orders WHERE id IN (2, 5)") == [[2]]
    assert q(
        "UPDATE hive.trino_w.orders SET amount = amount + 10, name = 'u' || name WHERE id = 3"
    ) == [[1]]
    # a failing INSERT (write id 5)
    with pytest.raises(TrinoQueryError) as failed:
        q(
            "INSERT INTO hive.trino_w.orders SELECT id + 100, name, amount, day"
            " FROM hive.trino_w.orders WHERE 10 / (id - 1) > 0"
        )
    assert failed.value.error_name == "DIVISION_BY_ZERO"
    trino_now = _trino_rows(trino_server, "trino_w.orders")
    assert trino_now == [
        [1, "a", "1.50", "2024-01-01"],
        [3, "uc", "13.25", "2024-01-03"],
        [4, "d", "4.00", "2024-01-04"],
    ]

    # The failed INSERT's transaction is not left aborted in the metastore (docs/trino.md):
    # write id 5 is neither open nor aborted, i.e. it reads as committed, and Trino deletes the
    # failed INSERT's files in delta_0000005_0000005_0000 itself (asynchronously: wait).
    valid = metastore_write_ids(url, "trino_w.orders")
    assert valid.high_watermark == 5
    assert not list(valid.aborted_write_ids) and not list(valid.open_write_ids)
    failed_dir = Path(
        hive_metastore.warehouse, "trino_w.db", "orders", "delta_0000005_0000005_0000"
    )
    deadline = time.monotonic() + 60
    while _files(failed_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _files(failed_dir) == []  # gone, or an empty directory left behind

    ours = read_hive_table(url, "trino_w", "orders", row_id=True)
    assert _rows(ours) == trino_now
    # split-update: the updated row is a new insert event of write id 4, the others keep theirs
    write_of = {r["id"]: r["ROW__ID"]["writeid"] for r in ours.to_pylist()}
    assert write_of == {1: 1, 3: 4, 4: 2}
    location = trino_server.execute(
        "SELECT DISTINCT regexp_replace(\"$path\", '/[^/]*/[^/]*$', '') FROM hive.trino_w.orders"
    )
    path = local_path(location[0][0])
    names = _dirs(path)
    for want in (
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delete_delta_0000003_0000003_0000",
        "delete_delta_0000004_0000004_0000",
        "delta_0000004_0000004_0000",
    ):
        assert want in names, names
    # the snapshot at write id 2 is what Trino read after its second INSERT
    at2 = read_hive_table(url, "trino_w", "orders", valid=ValidWriteIdList("trino_w.orders", 2))
    assert _rows(at2) == after_w2


def _row(i: int, tag: str = "n") -> tuple:
    return (i, f"{tag}{i}", decimal.Decimal(i * 125) / 100, dt.date(2024, 1, 1) + dt.timedelta(i))


SCHEMA = "id bigint, name string, amount decimal(12,2), day date"


def test_trino_reads_acidflow_table(trino_server, hive_metastore, catalog, spark):
    url = hive_metastore.url
    name = "af_trino.accounts"
    catalog.create_table(
        TableDef(
            name=name,
            columns=[
                Column("id", "bigint"),
                Column("name", "string"),
                Column("amount", "decimal(12,2)"),
                Column("day", "date"),
            ],
            primary_key=["id"],
            num_buckets=2,
        )
    )

    def check(expect_rows: int) -> list[list[Any]]:
        ours = _rows(reads.read_table(None, catalog, name))
        assert len(ours) == expect_rows
        assert _trino_rows(trino_server, name) == ours
        return ours

    with Transaction(catalog, spark=spark) as txn:  # w1
        txn.insert(name, spark.createDataFrame([_row(i) for i in range(1, 11)], SCHEMA))
    valid = register_in_metastore(url, catalog, name)
    assert valid.high_watermark == 1
    check(10)

    with Transaction(catalog, spark=spark) as txn:  # w2
        txn.upsert(name, spark.createDataFrame([_row(3, "u"), _row(7, "u"), _row(11)], SCHEMA))
    with Transaction(catalog, spark=spark) as txn:  # w3
        txn.delete(name, spark.createDataFrame([(4,), (11,)], "id bigint"))
    with pytest.raises(RuntimeError, match="abort this one"):  # w4
        with Transaction(catalog, spark=spark) as txn:
            txn.insert(name, spark.createDataFrame([_row(50, "x")], SCHEMA))
            raise RuntimeError("abort this one")
    valid = register_in_metastore(url, catalog, name)
    assert valid.high_watermark == 4 and list(valid.aborted_write_ids) == [4]
    ours = check(9)
    assert [3, "u3", "3.75", "2024-01-04"] in ours and not any(r[0] in (4, 11, 50) for r in ours)
    location = catalog.get_table(name).location
    assert "delete_delta_0000003_0000003_0000" in _dirs(location)

    # acidflow's minor compaction: delta_0000001_0000003 + delete_delta_0000001_0000003 (the
    # aborted write 4 is dropped, not covered), read by Trino before and after the cleaner
    config = CompactorConfig(heartbeat_s=0.5)
    info = initiator.request_compaction(catalog, name, None, "minor")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=config)
    assert out.state == "ready for cleaning", out.report
    assert check(9) == ours
    cleaner.run_cleaner(catalog)
    assert _dirs(location) == ["delete_delta_0000001_0000003", "delta_0000001_0000003"]
    assert check(9) == ours

    # acidflow's major compaction: Trino reads the new base alone, before and after the cleaner
    info = initiator.request_compaction(catalog, name, None, "major")
    out = worker.run_worker(spark, catalog, cq_id=info.id, config=config)
    assert out.state == "ready for cleaning", out.report
    base = [n for n in _dirs(location) if n.startswith("base_")]
    assert len(base) == 1
    paths = trino_server.execute(f'SELECT DISTINCT "$path" FROM hive.{name}')
    assert paths and all(f"/{base[0]}/bucket_" in p[0] for p in paths), paths
    ours_compacted = check(9)
    assert ours_compacted == ours
    cleaner.run_cleaner(catalog)
    assert _dirs(location) == base
    assert check(9) == ours

    # a write after the compaction: base + a new delta, mirrored as write id 5
    with Transaction(catalog, spark=spark) as txn:  # w5
        txn.upsert(name, spark.createDataFrame([_row(1, "v"), _row(12)], SCHEMA))
    assert register_in_metastore(url, catalog, name).high_watermark == 5
    after = check(10)
    assert [1, "v1", "1.25", "2024-01-02"] in after and [12, "n12", "15.00", "2024-01-13"] in after
    # Trino's metadata matches acidflow's definition
    # Trino writes into acidflow's table through the metastore (write id 6): acidflow's reader
    # sees that row with the metastore's snapshot, and the by-hand registration refuses to go
    # on, since acidflow's own catalog would allocate write id 6 again (adopting the table's
    # metastore history is the thrift:// catalog backend's job)
    assert trino_server.execute(
        f"INSERT INTO hive.{name} VALUES (13, 'trino', 1.00, DATE '2024-02-01')"
    ) == [[1]]
    mixed = _rows(read_hive_table(url, "af_trino", "accounts"))
    assert mixed == sorted(after + [[13, "trino", "1.00", "2024-02-01"]])
    assert mixed == _trino_rows(trino_server, name)
    with pytest.raises(ValueError, match=r"high watermark 6 is above acidflow's 5: write ids 6"):
        register_in_metastore(url, catalog, name)
    ddl = trino_server.execute(f"SHOW CREATE TABLE hive.{name}")[0][0]
    assert "transactional = true" in ddl and "bucket_count = 2" in ddl, ddl
    assert "bucketed_by = ARRAY['id']" in ddl and "format = 'ORC'" in ddl, ddl
    cols = trino_server.execute(f"DESCRIBE hive.{name}")
    assert [(c[0], c[1]) for c in cols] == [
        ("id", "bigint"),
        ("name", "varchar"),
        ("amount", "decimal(12,2)"),
        ("day", "date"),
    ]


def test_trino_and_acidflow_share_the_metastore_catalog(
    trino_server, hive_metastore, spark, tmp_path
):
    """acidflow on the ``thrift://`` catalog (HiveMetastoreCatalog) and Trino write one
    partitioned, bucketed table through the same metastore: every write id comes from the
    metastore (Trino's included, never reused by acidflow), acidflow's split-update finds the row
    Trino wrote, its major compaction folds Trino's delta into a base, and after each step
    Trino's SELECT equals acidflow's snapshot."""
    name = "af_thrift.orders"
    cat = load_catalog(hive_metastore.url, warehouse=str(tmp_path / "warehouse"))
    try:
        cat.create_table(
            TableDef(
                name=name,
                columns=[
                    Column("id", "bigint"),
                    Column("name", "string"),
                    Column("amount", "decimal(12,2)"),
                    Column("day", "date"),
                ],
                partition_columns=[Column("region", "string")],
                primary_key=["id"],
                num_buckets=2,
            )
        )
        schema = SCHEMA + ", region string"

        def check(expect_rows: int) -> list[list[Any]]:
            table = reads.read_table(None, cat, name)
            ours = sorted(
                [
                    [_norm(r[c]) for c in ("id", "name", "amount", "day", "region")]
                    for r in table.to_pylist()
                ]
            )
            assert len(ours) == expect_rows
            theirs = sorted(trino_server.execute(f"SELECT {COLS}, region FROM hive.{name}"))
            assert theirs == ours
            return ours

        with Transaction(cat, spark=spark) as txn:  # w1
            txn.insert(
                name,
                spark.createDataFrame(
                    [_row(i) + ("eu" if i % 2 else "us",) for i in range(1, 9)], schema
                ),
            )
        check(8)
        assert sorted(
            trino_server.execute('SELECT region FROM hive.af_thrift."orders$partitions"')
        ) == [["eu"], ["us"]]

        assert trino_server.execute(  # w2: Trino
            f"INSERT INTO hive.{name} VALUES (20, 'trino', 2.00, DATE '2024-03-01', 'eu')"
        ) == [[1]]
        check(9)
        assert cat.valid_write_ids(name).high_watermark == 2  # Trino's write id
        with Transaction(cat, spark=spark) as txn:  # w3
            txn.upsert(
                name,
                spark.createDataFrame([_row(20, "af") + ("eu",), _row(3, "u") + ("eu",)], schema),
            )
        with Transaction(cat, spark=spark) as txn:  # w4
            txn.delete(name, spark.createDataFrame([(2, "us")], "id bigint, region string"))
        ours = check(8)
        assert [20, "af20", "25.00", "2024-01-21", "eu"] in ours
        assert not any(r[0] == 2 for r in ours)
        valid = cat.valid_write_ids(name)
        assert valid.high_watermark == 4 and not valid.invalid_write_ids

        # acidflow's major compaction of the partition Trino wrote into, then its cleaner
        config = CompactorConfig(heartbeat_s=0.5)
        info = initiator.request_compaction(cat, name, "region=eu", "major")
        out = worker.run_worker(spark, cat, cq_id=info.id, config=config)
        assert out.state == "ready for cleaning", out.report
        cleaner.run_cleaner(cat, reader_timeout_s=0)
        location = Path(cat.get_table(name).location)
        assert [
            p.name for p in sorted((location / "region=eu").iterdir()) if not p.name.startswith(".")
        ] == ["base_0000003"]  # w3: eu's last write
        assert check(8) == ours
    finally:
        cat.close()


def test_trino_errors_are_named(trino_server, tmp_path):
    with pytest.raises(TrinoQueryError) as err:
        trino_server.execute("SELECT * FROM hive.no_such_schema.t")
    assert err.value.error_name == "SCHEMA_NOT_FOUND" and "no_such_schema" in str(err.value)
    with pytest.raises(TrinoMissing, match=str(tmp_path)):
        locate_trino(tmp_path)
