"""acidflow on a real Hive 3.1.3 metastore (``thrift://`` catalog): writes through ``Transaction``
with Spark, then Hive's view over a raw thrift client - the table with Hive's storage descriptor,
its partitions, the write-id high watermark, the commit - and the faults: a Hive transaction
concurrent with acidflow's write gets its own write id, a transaction the metastore's housekeeper
aborted is refused at commit, Hive's own write-set check refuses a conflicting commit, an
unreachable URL is named before anything is written, a non-transactional table is refused, and
compaction waits for an open Hive transaction."""

from __future__ import annotations

import decimal
import socket
import time
from pathlib import Path

import pytest
from pymetastore.hive_metastore.ttypes import (
    AbortTxnRequest,
    AddDynamicPartitions,
    AllocateTableWriteIdsRequest,
    CommitTxnRequest,
    Database,
    DataOperationType,
    GetValidWriteIdsRequest,
    OpenTxnRequest,
)

from acidflow.catalog import (
    CatalogError,
    Column,
    HiveMetastoreCatalog,
    TableDef,
    TxnAbortedError,
    WriteConflictError,
    load_catalog,
)
from acidflow.catalog.hms.client import (
    MetastoreUnreachableError,
    hms_client,
    to_valid_write_ids,
    valid_txn_list,
)
from acidflow.catalog.hms.tables import NotAnAcidTableError
from acidflow.compactor import cleaner, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine.transaction import Transaction
from acidflow.format.layout import ValidWriteIdList
from acidflow.read import table as reads
from acidflow.storage.adoption import AdoptionError
from devservers.hms import _ALWAYS_TASKS, start_metastore
from tests.support import acidtables as at
from tests.support.hms import require_hive_artifacts, reset_metastore, transactional_orc_table

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ARTIFACTS = require_hive_artifacts()
SCHEMA = "id bigint, name string, amount decimal(10,2), ds string"


@pytest.fixture
def hms(hive_metastore):
    """The session metastore, emptied for this test."""
    reset_metastore(hive_metastore.url)
    return hive_metastore


@pytest.fixture
def catalog(hms, tmp_path):
    cat = load_catalog(hms.url, warehouse=str(tmp_path / "warehouse"))
    yield cat
    cat.close()


def orders() -> TableDef:
    return TableDef(
        name="shop.orders",
        columns=[
            Column("id", "bigint"),
            Column("name", "string"),
            Column("amount", "decimal(10,2)"),
        ],
        partition_columns=[Column("ds", "string")],
        primary_key=["id"],
        num_buckets=2,
    )


def _rows(*items):
    return [(i, n, decimal.Decimal(a), ds) for i, n, a, ds in items]


def _hive_ids(client, table: str, reader: int | None = None) -> ValidWriteIdList:
    txns = valid_txn_list(client.get_open_txns(), reader)
    (ids,) = client.get_valid_write_ids(
        GetValidWriteIdsRequest(fullTableNames=[table], validTxnList=txns)
    ).tblValidWriteIds
    return to_valid_write_ids(ids)


def _visible(catalog, name="shop.orders"):
    return sorted(
        (r["id"], r["name"], r["amount"], r["ds"])
        for r in reads.read_table(None, catalog, name).to_pylist()
    )


def test_upsert_is_what_hive_sees(spark, catalog, hms):
    """Insert then upsert through Transaction on a thrift:// catalog; over raw thrift Hive sees
    the transactional ORC table with acidflow's key, both partitions, write-id high watermark
    2 with no exceptions, and no open transaction; acidflow's commit records name the
    metastore's txn ids."""
    assert isinstance(catalog, HiveMetastoreCatalog)
    catalog.create_table(orders())
    with Transaction(catalog, spark=spark) as txn:
        txn.insert(
            "shop.orders",
            spark.createDataFrame(
                _rows(
                    (1, "a", "1.50", "2024-01-01"),
                    (2, "b", "2.50", "2024-01-01"),
                    (3, "c", "3.50", "2024-01-02"),
                ),
                SCHEMA,
            ),
        )
    first = txn.txn_id
    with Transaction(catalog, spark=spark) as txn:
        txn.upsert(
            "shop.orders",
            spark.createDataFrame(
                _rows((2, "B", "20.00", "2024-01-01"), (4, "d", "4.00", "2024-01-02")), SCHEMA
            ),
        )
    second = txn.txn_id
    assert _visible(catalog) == [
        (1, "a", decimal.Decimal("1.50"), "2024-01-01"),
        (2, "B", decimal.Decimal("20.00"), "2024-01-01"),
        (3, "c", decimal.Decimal("3.50"), "2024-01-02"),
        (4, "d", decimal.Decimal("4.00"), "2024-01-02"),
    ]

    with hms_client(hms.url) as client:
        table = client.get_table("shop", "orders")
        assert table.parameters["transactional"] == "true"
        assert table.parameters["bucketing_version"] == "2"
        assert table.parameters["acidflow.primary_key"] == "id"
        assert table.sd.serdeInfo.serializationLib == "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
        assert (table.sd.numBuckets, table.sd.bucketCols) == (2, ["id"])
        assert [(c.name, c.type) for c in table.sd.cols] == [
            ("id", "bigint"),
            ("name", "string"),
            ("amount", "decimal(10,2)"),
        ]
        assert [(c.name, c.type) for c in table.partitionKeys] == [("ds", "string")]
        assert (
            Path(table.sd.location.removeprefix("file:")).resolve()
            == Path(catalog.get_table("shop.orders").location).resolve()
        )
        assert sorted(client.get_partition_names("shop", "orders", -1)) == [
            "ds=2024-01-01",
            "ds=2024-01-02",
        ]
        part = client.get_partition_by_name("shop", "orders", "ds=2024-01-02")
        assert part.sd.location.endswith("/shop.db/orders/ds=2024-01-02")
        seen = _hive_ids(client, "shop.orders")
        assert (seen.high_watermark, seen.invalid_write_ids) == (2, ())
        assert not {first, second} & set(client.get_open_txns().open_txns)
    recs = catalog.commit_records("shop.orders")
    assert [(r.write_id, r.txn_id) for r in recs] == [(1, first), (2, second)]
    assert catalog.describe() == [
        f"Hive metastore {hms.url} sees:",
        "  shop.orders: write-id high watermark 2, open [], aborted [], 2 partitions",
    ]
    assert recs[1].stats["rows_inserted"] >= 1


def test_hive_transaction_concurrent_with_acidflow_gets_its_own_write_id(spark, catalog, hms):
    """A Hive-side transaction (raw open_txns + allocate) holds write id 1 while acidflow
    writes: acidflow gets write id 2 (write ids come from the metastore, never reused), its
    snapshot has Hive's write id as open, and after Hive aborts it is aborted for acidflow."""
    catalog.create_table(orders())
    with hms_client(hms.url) as client:
        (hive_txn,) = client.open_txns(
            OpenTxnRequest(num_txns=1, user="hive", hostname="hive-host")
        ).txn_ids
        (alloc,) = client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="shop", tableName="orders", txnIds=[hive_txn])
        ).txnToWriteIds
        assert alloc.writeId == 1
        with Transaction(catalog, spark=spark) as txn:
            txn.insert(
                "shop.orders", spark.createDataFrame(_rows((1, "a", "1.00", "2024-01-01")), SCHEMA)
            )
        assert txn.write_id("shop.orders") == 2
        snap = catalog.valid_write_ids("shop.orders")
        assert (snap.high_watermark, snap.open_write_ids, snap.aborted_write_ids) == (2, (1,), ())
        assert _visible(catalog) == [(1, "a", decimal.Decimal("1.00"), "2024-01-01")]
        client.abort_txn(AbortTxnRequest(txnid=hive_txn))
    snap = catalog.valid_write_ids("shop.orders")
    assert (snap.high_watermark, snap.open_write_ids, snap.aborted_write_ids) == (2, (), (1,))
    assert catalog.write_id_states("shop.orders") == [(2, txn.txn_id, "committed")]


def test_initiator_is_offered_the_writes_hive_made(catalog, hms):
    """Write ids Hive allocated and committed (acidflow's side has no record of them) make the
    table's partitions compaction candidates up to the metastore's high watermark; acidflow's
    own writes stay candidates as on SQL."""
    catalog.create_table(orders())  # partitioned by ds
    flat = TableDef(name="shop.flat", columns=[Column("id", "bigint")])
    catalog.create_table(flat)
    assert [c for c in catalog.compaction_candidates() if c[0].startswith("shop.")] == []
    txn = catalog.open_transaction()
    catalog.allocate_write_id(txn, "shop.orders")
    catalog.add_component(txn, "shop.orders", "ds=2024-01-01", "insert")
    catalog.commit_transaction(txn)
    assert catalog.compaction_candidates() == [("shop.orders", "ds=2024-01-01", 1)]
    with hms_client(hms.url) as client:
        for name in ("orders", "flat", "flat"):
            (hive_txn,) = client.open_txns(
                OpenTxnRequest(num_txns=1, user="hive", hostname="hive-host")
            ).txn_ids
            client.allocate_table_write_ids(
                AllocateTableWriteIdsRequest(dbName="shop", tableName=name, txnIds=[hive_txn])
            )
            client.commit_txn(CommitTxnRequest(txnid=hive_txn))
    assert catalog.compaction_candidates() == [
        ("shop.flat", None, 2),
        ("shop.orders", "ds=2024-01-01", 2),
    ]


def test_hive_write_set_conflict_refuses_acidflow_commit(catalog, hms):
    """Hive's own commit-time write-set check covers acidflow's components: a Hive UPDATE of
    partition ds=1 committed after acidflow's transaction opened makes acidflow's UPDATE of the
    same partition fail with WriteConflictError naming Hive's transaction; it is aborted in both
    and its write id is aborted in every later snapshot."""
    catalog.create_table(orders())
    txn = catalog.open_transaction()
    mine = catalog.allocate_write_id(txn, "shop.orders")
    with hms_client(hms.url) as client:
        (hive_txn,) = client.open_txns(
            OpenTxnRequest(num_txns=1, user="hive", hostname="hive-host")
        ).txn_ids
        (alloc,) = client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="shop", tableName="orders", txnIds=[hive_txn])
        ).txnToWriteIds
        catalog.add_component(txn, "shop.orders", "ds=1", "update")  # creates the partition
        client.add_dynamic_partitions(
            AddDynamicPartitions(
                txnid=hive_txn,
                writeid=alloc.writeId,
                dbname="shop",
                tablename="orders",
                partitionnames=["ds=1"],
                operationType=DataOperationType.UPDATE,
            )
        )
        client.commit_txn(CommitTxnRequest(txnid=hive_txn))
        with pytest.raises(WriteConflictError) as info:
            catalog.commit_transaction(txn)
        assert info.value.other_txn_id == hive_txn and info.value.table == "shop.orders"
        assert info.value.partition == "ds=1"
        seen = _hive_ids(client, "shop.orders")
    assert catalog.get_transaction(txn).state == "aborted"
    assert mine in seen.aborted_write_ids
    assert mine in catalog.valid_write_ids("shop.orders").aborted_write_ids


def test_side_record_is_reconciled_from_the_metastore(catalog, hms):
    """A process that died after the metastore's commit_txn but before its side transaction
    committed (simulated: commit_txn over raw thrift) leaves the side record open; the next
    read commits it on the side (commit record, write id committed). A transaction the
    metastore aborted behind acidflow's back is mirrored as aborted."""
    catalog.create_table(orders())
    done, dead = catalog.open_transaction(), catalog.open_transaction()
    w_done = catalog.allocate_write_id(done, "shop.orders")
    w_dead = catalog.allocate_write_id(dead, "shop.orders")
    catalog.add_component(done, "shop.orders", "ds=1", "insert")
    catalog.add_component(dead, "shop.orders", "ds=2", "insert")
    with hms_client(hms.url) as client:
        client.commit_txn(CommitTxnRequest(txnid=done))
        client.abort_txn(AbortTxnRequest(txnid=dead))
    states = {t.txn_id: t.state for t in catalog.list_transactions()}
    assert (states[done], states[dead]) == ("committed", "aborted")
    assert [(r.write_id, r.txn_id) for r in catalog.commit_records("shop.orders")] == [
        (w_done, done)
    ]
    assert catalog.write_id_states("shop.orders") == [
        (w_done, done, "committed"),
        (w_dead, dead, "aborted"),
    ]
    snap = catalog.valid_write_ids("shop.orders")
    assert (snap.high_watermark, snap.open_write_ids, snap.aborted_write_ids) == (2, (), (w_dead,))


def test_housekeeper_reports_only_the_transactions_it_aborted(catalog, hms):
    """``abort_timed_out_transactions`` returns the ids it aborted: a side record the
    metastore committed is committed by the same pass, but not reported as aborted."""
    catalog.create_table(orders())
    done, dead = catalog.open_transaction(), catalog.open_transaction()
    catalog.allocate_write_id(done, "shop.orders")
    catalog.allocate_write_id(dead, "shop.orders")
    catalog.add_component(done, "shop.orders", "ds=1", "insert")
    catalog.add_component(dead, "shop.orders", "ds=2", "insert")
    with hms_client(hms.url) as client:
        client.commit_txn(CommitTxnRequest(txnid=done))
        client.abort_txn(AbortTxnRequest(txnid=dead))
    assert catalog.abort_timed_out_transactions() == [dead]
    assert catalog.side.get_transaction(done).state == "committed"


def test_unreachable_metastore_is_named_before_any_file(tmp_path):
    """A thrift URL nobody answers: the constructor fails naming the URL, and nothing (no
    side catalog, no warehouse marker) is written."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    dead = sock.getsockname()[1]
    sock.close()
    with pytest.raises(MetastoreUnreachableError, match=f"thrift://127.0.0.1:{dead}"):
        load_catalog(f"thrift://127.0.0.1:{dead}", warehouse=str(tmp_path / "wh"))
    assert not (tmp_path / "wh").exists()


def test_non_transactional_or_non_orc_table_is_refused(catalog, hms, tmp_path):
    """A table the metastore knows as non-transactional is refused with its name and reason
    (get_table, allocate_write_id, adopt), and so is an insert-only one."""
    with hms_client(hms.url) as client:
        client.create_database(
            Database(
                name="legacy",
                description=None,
                parameters={},
                locationUri=(tmp_path / "legacy.db").as_uri(),
            )
        )
        plain = transactional_orc_table("legacy", "plain", (tmp_path / "legacy.db/plain").as_uri())
        plain.parameters = {"bucketing_version": "2"}
        client.create_table(plain)
        mm = transactional_orc_table("legacy", "mm", (tmp_path / "legacy.db/mm").as_uri())
        mm.parameters = {"transactional": "true", "transactional_properties": "insert_only"}
        client.create_table(mm)
    with pytest.raises(NotAnAcidTableError, match=r"legacy\.plain.*not transactional"):
        catalog.get_table("legacy.plain")
    txn = catalog.open_transaction()
    with pytest.raises(NotAnAcidTableError, match=r"legacy\.plain"):
        catalog.allocate_write_id(txn, "legacy.plain")
    catalog.abort_transaction(txn)
    with pytest.raises(NotAnAcidTableError, match=r"legacy\.mm.*insert_only"):
        catalog.get_table("legacy.mm")
    assert catalog.list_tables("legacy") == []
    td = TableDef(name="legacy.plain", columns=[Column("id", "bigint")])
    with pytest.raises(NotAnAcidTableError, match=r"legacy\.plain"):
        catalog.adopt_table(td, ValidWriteIdList("legacy.plain", 0))


def test_hive_made_table_is_registered_on_first_use(catalog, hms, tmp_path):
    """A transactional ORC table Hive created (raw thrift) is usable at once: get_table
    mirrors it on the side, and acidflow's write takes the metastore's next write id."""
    with hms_client(hms.url) as client:
        client.create_database(
            Database(
                name="hv",
                description=None,
                parameters={},
                locationUri=(tmp_path / "hv.db").as_uri(),
            )
        )
        client.create_table(transactional_orc_table("hv", "t", (tmp_path / "hv.db/t").as_uri()))
        (hive_txn,) = client.open_txns(
            OpenTxnRequest(num_txns=1, user="hive", hostname="h")
        ).txn_ids
        client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="hv", tableName="t", txnIds=[hive_txn])
        )
        client.commit_txn(CommitTxnRequest(txnid=hive_txn))
    td = catalog.get_table("hv.t")
    assert (td.num_buckets, td.bucket_columns, td.external) == (2, ["id"], True)
    assert [c.name for c in td.columns] == ["id", "name", "amount"]
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, "hv.t") == 2
    catalog.commit_transaction(txn)
    assert catalog.valid_write_ids("hv.t").high_watermark == 2


def test_adopt_seeds_the_write_id_history(catalog, hms):
    """adopt_table of a table the metastore does not have: created there and its write-id
    state seeded (repl_tbl_writeid_state): Hive's snapshot has hwm 5 with 2 and 4 aborted,
    and acidflow's next write id is 6. Adopting a table the metastore has keeps its ids and
    refuses a history that disagrees."""
    td = TableDef(name="adopt.t", columns=[Column("id", "bigint")], primary_key=["id"])
    (Path(catalog.warehouse) / "adopt.db" / "t").mkdir(parents=True)  # the table's directory
    adopted = catalog.adopt_table(td, ValidWriteIdList("adopt.t", 5, [4], [2]))
    assert adopted.name == "adopt.t"
    with hms_client(hms.url) as client:
        seen = _hive_ids(client, "adopt.t")
    assert seen.high_watermark == 5 and set(seen.invalid_write_ids) == {2, 4}
    assert set(seen.aborted_write_ids) == {2, 4}
    snap = catalog.valid_write_ids("adopt.t")
    assert (snap.high_watermark, snap.open_write_ids, snap.aborted_write_ids) == (5, (), (2, 4))
    txn = catalog.open_transaction()
    assert catalog.allocate_write_id(txn, "adopt.t") == 6
    catalog.commit_transaction(txn)
    # the metastore has it now: the same history plus write id 6 is accepted, another refused
    again = catalog.adopt_table(td, ValidWriteIdList("adopt.t", 6, [], [2, 4]))
    assert again.primary_key == ["id"]
    with pytest.raises(Exception, match="disagrees"):
        catalog.adopt_table(td, ValidWriteIdList("adopt.t", 9, [], []))


def test_adopt_replays_long_histories_in_batches_and_refuses_huge_ones(catalog, hms, tmp_path):
    """A history longer than one open_txns batch (Hive's metastore.txn.max.open.batch, 1000)
    is replayed in batches; one above the replay limit is refused, naming the metastore, before
    anything is created; a directory above the high watermark is refused as on SQL."""
    td = TableDef(name="adopt.long", columns=[Column("id", "bigint")])
    (Path(catalog.warehouse) / "adopt.db" / "long").mkdir(parents=True)
    catalog.adopt_table(td, ValidWriteIdList("adopt.long", 2500, [], [1700]))
    snap = catalog.valid_write_ids("adopt.long")
    assert (snap.high_watermark, snap.aborted_write_ids) == (2500, (1700,))
    with hms_client(hms.url) as client:
        seen = _hive_ids(client, "adopt.long")
    assert seen.high_watermark == 2500 and list(seen.aborted_write_ids) == [1700]
    huge = TableDef(name="adopt.huge", columns=[Column("id", "bigint")])
    with pytest.raises(CatalogError, match=f"10000.*{hms.url}"):
        catalog.adopt_table(huge, ValidWriteIdList("adopt.huge", 10_000_001))
    assert not catalog.table_exists("adopt.huge")
    root = tmp_path / "above"
    (root / "delta_0000009_0000009_0000").mkdir(parents=True)
    (root / "delta_0000009_0000009_0000" / "bucket_00000").write_bytes(b"orc")
    with pytest.raises(AdoptionError, match="delta_0000009_0000009_0000"):
        catalog.adopt_table(
            TableDef(
                name="adopt.above",
                columns=[Column("id", "bigint")],
                location=str(root),
                external=True,
            ),
            ValidWriteIdList("adopt.above", 5),
        )
    assert not catalog.table_exists("adopt.above")


def test_compaction_waits_for_an_open_hive_transaction(spark, catalog, hms):
    """acidflow's initiator/worker/cleaner on the metastore catalog: the compaction's own
    transaction is the metastore's, and the cleaner leaves the old deltas while a Hive
    transaction that opened before the compaction committed is open, then cleans."""
    catalog.create_table(
        TableDef(name="db.t", columns=[Column("id", "int"), Column("name", "string")])
    )
    at.write(catalog, "db.t", {0: [(1, "a"), (2, "b")]})
    at.write(catalog, "db.t", {0: [(3, "c")]})
    before = at.rows(catalog, "db.t")
    with hms_client(hms.url) as client:
        (hive_reader,) = client.open_txns(
            OpenTxnRequest(num_txns=1, user="hive", hostname="h")
        ).txn_ids
        info = initiator.request_compaction(catalog, "db.t", None, "major")
        out = worker.run_worker(
            spark, catalog, cq_id=info.id, config=CompactorConfig(heartbeat_s=0.5)
        )
        assert out.state == "ready for cleaning", out.report
        entry = catalog.get_compaction(info.id)
        assert entry.txn_id > hive_reader and entry.commit_id > entry.txn_id
        assert entry.txn_id not in client.get_open_txns().open_txns  # committed in Hive
        loc = Path(catalog.get_table("db.t").location)
        assert catalog.blocking_readers("db.t", entry.commit_id)["txns"] == [hive_reader]
        cleaner.run_cleaner(catalog)
        assert catalog.get_compaction(info.id).state == "ready for cleaning"
        assert {"delta_0000001_0000001_0000", "delta_0000002_0000002_0000"} <= {
            p.name for p in loc.iterdir()
        }
        client.commit_txn(CommitTxnRequest(txnid=hive_reader))
    cleaner.run_cleaner(catalog)
    assert catalog.get_compaction(info.id).state == "succeeded"
    assert sorted(p.name for p in loc.iterdir()) == ["base_0000002"]
    assert at.rows(catalog, "db.t") == before


def _aborted_in_hive(client, txn: int) -> bool:
    resp = client.get_open_txns()
    bits = int.from_bytes(resp.abortedBits or b"", "little")
    return any(t == txn and bits >> i & 1 for i, t in enumerate(resp.open_txns))


@pytest.fixture(scope="module")
def quick_timeout_metastore(tmp_path_factory):
    """A second metastore whose housekeeper (AcidHouseKeeperService) aborts transactions
    without heartbeat after 3 s."""
    hms = start_metastore(
        tmp_path_factory.mktemp("hms-timeout"),
        artifacts=ARTIFACTS,
        extra_conf={
            "metastore.task.threads.always": ",".join(
                (*_ALWAYS_TASKS, "org.apache.hadoop.hive.metastore.txn.AcidHouseKeeperService")
            ),
            "metastore.txn.timeout": "3s",
            "metastore.timedout.txn.reaper.start": "1s",
            "metastore.timedout.txn.reaper.interval": "1s",
        },
    )
    try:
        yield hms
    finally:
        hms.stop()


def test_transaction_aborted_by_the_metastore_is_refused_at_commit(
    quick_timeout_metastore, tmp_path
):
    """A transaction that stops heartbeating is aborted by the metastore's housekeeper: its
    commit is refused with TxnAbortedError, the side mirrors the abort, its write id is
    aborted (its files are left for the cleaner as aborted) and is never reused."""
    cat = load_catalog(quick_timeout_metastore.url, warehouse=str(tmp_path / "wh"))
    try:
        cat.create_table(TableDef(name="db.t", columns=[Column("id", "int")]))
        txn = cat.open_transaction()
        wid = cat.allocate_write_id(txn, "db.t")
        cat.add_component(txn, "db.t", None, "insert")
        deadline = time.monotonic() + 60
        with hms_client(quick_timeout_metastore.url) as client:
            while not _aborted_in_hive(client, txn):
                assert time.monotonic() < deadline, "the housekeeper did not abort the txn"
                time.sleep(1)
        with pytest.raises(TxnAbortedError) as info:
            cat.commit_transaction(txn)
        assert info.value.txn_id == txn
        assert cat.get_transaction(txn).state == "aborted"
        assert cat.valid_write_ids("db.t").aborted_write_ids == (wid,)
        assert cat.aborted_write_ids("db.t", None) == [wid]
        nxt = cat.open_transaction()
        assert cat.allocate_write_id(nxt, "db.t") == wid + 1
        cat.abort_transaction(nxt)
    finally:
        cat.close()
