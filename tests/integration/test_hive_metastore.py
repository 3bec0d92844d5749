"""Smoke test: a real Hive 3.1.3 metastore (``make hive-jars``, ``devservers.hms``) and the Python
thrift client (``pymetastore``'s generated ``ThriftHiveMetastore.Client``) doing Hive's ACID calls
against it.

Every value asserted comes from the metastore over thrift: the transactional ORC table as Hive
stored it, transaction and write ids, the lock Hive's lock manager granted, the
``ValidWriteIdList`` (``get_valid_write_ids``) of other transactions' snapshots, and the
compaction queue. Without the Hive artifacts the module skips, or fails when ``CI=true``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pymetastore.hive_metastore.ttypes import (
    AbortTxnRequest,
    AllocateTableWriteIdsRequest,
    CheckLockRequest,
    CommitTxnRequest,
    CompactionRequest,
    CompactionType,
    Database,
    DataOperationType,
    GetValidWriteIdsRequest,
    HeartbeatRequest,
    LockComponent,
    LockLevel,
    LockRequest,
    LockState,
    LockType,
    MetaException,
    OpenTxnRequest,
    ShowCompactRequest,
    ShowLocksRequest,
    TxnAbortedException,
)

from acidflow.catalog.hms.client import (
    MetastoreUnreachableError,
    aborted_write_ids,
    hms_client,
    to_valid_write_ids,
    valid_txn_list,
)
from devservers.hms import (
    HiveArtifacts,
    HiveArtifactsMissing,
    MetastoreStartError,
    backing_db,
    site_properties,
    start_metastore,
)
from tests.support.hms import require_hive_artifacts, transactional_orc_table

pytestmark = pytest.mark.slow

ARTIFACTS = require_hive_artifacts()
HOST = socket.gethostname()


def _open_txn(client, user: str = "acidflow") -> int:
    (txn,) = client.open_txns(OpenTxnRequest(num_txns=1, user=user, hostname=HOST)).txn_ids
    return txn


def _write_ids(client, table: str, reader_txn: int):
    """The table's ValidWriteIdList as ``reader_txn`` sees it now (Hive's snapshot)."""
    txns = valid_txn_list(client.get_open_txns(), reader_txn)
    resp = client.get_valid_write_ids(
        GetValidWriteIdsRequest(fullTableNames=[table], validTxnList=txns)
    )
    (ids,) = resp.tblValidWriteIds
    assert ids.fullTableName == table
    return ids, txns


def _create_table(client, hive_metastore, db: str, name: str = "orders") -> str:
    client.create_database(
        Database(
            name=db,
            description=None,
            parameters={},
            locationUri=(hive_metastore.warehouse / f"{db}.db").as_uri(),
        )
    )
    location = (hive_metastore.warehouse / f"{db}.db" / name).as_uri()
    client.create_table(transactional_orc_table(db, name, location))
    return f"{db}.{name}"


def test_metastore_stores_a_transactional_orc_table(hive_metastore):
    """The metastore accepts a Hive 3 full-ACID table with Hive's storage descriptor (its
    TransactionalValidationListener checks the ORC formats with hive-exec's classes) and refuses
    ``transactional=true`` on a text table, as Hive does."""
    assert hive_metastore.url == f"thrift://127.0.0.1:{hive_metastore.port}"
    assert hive_metastore.log.is_file() and hive_metastore.warehouse.is_dir()
    with hms_client(hive_metastore.url) as client:
        _create_table(client, hive_metastore, "smoke_table")
        table = client.get_table("smoke_table", "orders")
        assert table.tableType == "MANAGED_TABLE"
        assert table.parameters["transactional"] == "true"
        assert table.parameters["bucketing_version"] == "2"
        # the metastore fills in Hive's default ACID flavour
        assert table.parameters["transactional_properties"] == "default"
        assert table.sd.numBuckets == 2 and table.sd.bucketCols == ["id"]
        assert table.sd.serdeInfo.serializationLib == "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
        assert table.sd.inputFormat == "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
        assert table.sd.outputFormat == "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
        assert [(c.name, c.type) for c in table.sd.cols] == [
            ("id", "bigint"),
            ("name", "string"),
            ("amount", "decimal(12,2)"),
        ]
        assert table.sd.location.endswith("/smoke_table.db/orders")
        assert client.get_all_tables("smoke_table") == ["orders"]

        text = transactional_orc_table("smoke_table", "as_text", table.sd.location + "_text")
        text.sd.inputFormat = "org.apache.hadoop.mapred.TextInputFormat"
        text.sd.outputFormat = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
        text.sd.serdeInfo.serializationLib = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
        with pytest.raises(MetaException, match="ACID compliant format"):
            client.create_table(text)


def test_commit_path_write_id_lock_and_snapshots(hive_metastore):
    """open_txns, allocate_table_write_ids, a SHARED_WRITE lock (DbTxnManager's lock for an
    UPDATE) checked and heartbeated, another transaction's ValidWriteIdList shows the write id
    open, commit_txn releases the lock and a later snapshot sees the write id below the high
    watermark, while the older snapshot string still excludes it (Hive's snapshot isolation)."""
    with hms_client(hive_metastore.url) as client, hms_client(hive_metastore.url) as other:
        table = _create_table(client, hive_metastore, "smoke_commit")
        writer = _open_txn(client)
        alloc = client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="smoke_commit", tableName="orders", txnIds=[writer])
        )
        assert [(t.txnId, t.writeId) for t in alloc.txnToWriteIds] == [(writer, 1)]

        lock = client.lock(
            LockRequest(
                component=[
                    LockComponent(
                        type=LockType.SHARED_WRITE,
                        level=LockLevel.TABLE,
                        dbname="smoke_commit",
                        tablename="orders",
                        operationType=DataOperationType.UPDATE,
                        isTransactional=True,
                    )
                ],
                txnid=writer,
                user="acidflow",
                hostname=HOST,
            )
        )
        assert lock.state == LockState.ACQUIRED
        assert client.check_lock(CheckLockRequest(lockid=lock.lockid)).state == LockState.ACQUIRED
        client.heartbeat(HeartbeatRequest(lockid=lock.lockid, txnid=writer))
        (shown,) = client.show_locks(
            ShowLocksRequest(dbname="smoke_commit", tablename="orders")
        ).locks
        assert (shown.lockid, shown.txnid, shown.type, shown.state) == (
            lock.lockid,
            writer,
            LockType.SHARED_WRITE,
            LockState.ACQUIRED,
        )

        reader = _open_txn(other, user="reader")
        assert writer in other.get_open_txns().open_txns
        before, before_txns = _write_ids(other, table, reader)
        assert before.writeIdHighWaterMark == 1
        assert before.invalidWriteIds == [1] and before.minOpenWriteId == 1
        assert aborted_write_ids(before.invalidWriteIds, before.abortedBits) == []  # open
        mine = to_valid_write_ids(before)
        assert (
            mine.table_name,
            mine.high_watermark,
            sorted(mine.open_write_ids),
            sorted(mine.aborted_write_ids),
            mine.min_open_write_id,
        ) == (table, 1, [1], [], 1)

        client.commit_txn(CommitTxnRequest(txnid=writer))
        assert (
            client.show_locks(ShowLocksRequest(dbname="smoke_commit", tablename="orders")).locks
            == []
        )
        assert writer not in other.get_open_txns().open_txns

        later = _open_txn(other, user="reader")
        after, _ = _write_ids(other, table, later)
        assert after.writeIdHighWaterMark == 1 and after.invalidWriteIds == []
        assert after.minOpenWriteId is None

        # the reader's snapshot taken before the commit still has write id 1 as open
        (again,) = other.get_valid_write_ids(
            GetValidWriteIdsRequest(fullTableNames=[table], validTxnList=before_txns)
        ).tblValidWriteIds
        assert again.writeIdHighWaterMark == 1 and again.invalidWriteIds == [1]
        for txn in (reader, later):
            other.commit_txn(CommitTxnRequest(txnid=txn))


def test_abort_path_and_write_ids_never_reused(hive_metastore):
    """An aborted transaction's write id shows as aborted in the ValidWriteIdList, its commit
    is refused with TxnAbortedException, and the next allocation gets a new write id."""
    with hms_client(hive_metastore.url) as client:
        table = _create_table(client, hive_metastore, "smoke_abort")
        first = _open_txn(client)
        client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="smoke_abort", tableName="orders", txnIds=[first])
        )
        client.commit_txn(CommitTxnRequest(txnid=first))

        doomed = _open_txn(client)
        (alloc,) = client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="smoke_abort", tableName="orders", txnIds=[doomed])
        ).txnToWriteIds
        assert alloc.writeId == 2
        client.abort_txn(AbortTxnRequest(txnid=doomed))
        with pytest.raises(TxnAbortedException, match=f"txnid:{doomed}"):
            client.commit_txn(CommitTxnRequest(txnid=doomed))

        reader = _open_txn(client, user="reader")
        ids, txns = _write_ids(client, table, reader)
        assert str(doomed) in txns.split(":")[3].split(",")  # aborted in the ValidTxnList
        assert ids.writeIdHighWaterMark == 2
        assert ids.invalidWriteIds == [2]
        assert aborted_write_ids(ids.invalidWriteIds, ids.abortedBits) == [2]
        assert ids.minOpenWriteId is None

        nxt = _open_txn(client)
        (alloc,) = client.allocate_table_write_ids(
            AllocateTableWriteIdsRequest(dbName="smoke_abort", tableName="orders", txnIds=[nxt])
        ).txnToWriteIds
        assert alloc.writeId == 3
        for txn in (nxt, reader):
            client.commit_txn(CommitTxnRequest(txnid=txn))


def test_hive_compactor_is_off(hive_metastore):
    """A compaction request (compact2) is queued and stays 'initiated': no Hive worker picks it
    up (worker threads 0, initiator off), so acidflow's compactor is the one that runs."""
    with hms_client(hive_metastore.url) as client:
        _create_table(client, hive_metastore, "smoke_compact")
        resp = client.compact2(
            CompactionRequest(dbname="smoke_compact", tablename="orders", type=CompactionType.MAJOR)
        )
        assert resp.accepted and resp.state == "initiated"
        time.sleep(3)
        mine = [
            c
            for c in client.show_compact(ShowCompactRequest()).compacts
            if c.dbname == "smoke_compact"
        ]
        assert [(c.id, c.state, c.type, c.workerid) for c in mine] == [
            (resp.id, "initiated", CompactionType.MAJOR, None)
        ]


def test_unreachable_metastore_names_the_url():
    """A metastore URL nobody listens on is refused with the URL in the message."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    dead = port.getsockname()[1]
    port.close()
    with pytest.raises(MetastoreUnreachableError, match=f"thrift://127.0.0.1:{dead}"):
        with hms_client(f"thrift://127.0.0.1:{dead}"):
            pass


def test_missing_artifacts_are_named(tmp_path):
    """An empty cache folder is refused with its name and the fix (make hive-jars)."""
    with pytest.raises(HiveArtifactsMissing, match=r"make hive-jars") as info:
        HiveArtifacts.locate(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_schematool_failure_names_the_database_and_log(tmp_path):
    """A backing database that cannot be reached fails the start with the JDBC URL (password
    masked) and the tail of schematool's log, and starts no server."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    dead = port.getsockname()[1]
    port.close()
    url = f"postgresql+psycopg2://hive:s3cret@127.0.0.1:{dead}/metastore"
    with pytest.raises(MetastoreStartError) as info:
        start_metastore(tmp_path, backing_db_url=url, artifacts=ARTIFACTS, timeout_s=120)
    msg = str(info.value)
    assert f"jdbc:postgresql://127.0.0.1:{dead}/metastore" in msg
    assert "s3cret" not in msg and "schematool.log" in msg
    assert not (tmp_path / "metastore.log").exists()


def test_site_settings_of_a_hive3_acid_metastore(tmp_path):
    """metastore-site.xml carries DbTxnManager, concurrency, Hive's compactor off and the
    warehouse under both keys."""
    props = site_properties(db=backing_db(None, tmp_path), warehouse=tmp_path / "wh", port=9)
    assert props["hive.txn.manager"] == "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"
    assert props["hive.support.concurrency"] == "true"
    assert props["metastore.compactor.initiator.on"] == "false"
    assert props["metastore.compactor.worker.threads"] == "0"
    assert (
        props["metastore.warehouse.dir"]
        == props["hive.metastore.warehouse.dir"]
        == ((tmp_path / "wh").resolve().as_uri())
    )


@pytest.mark.postgres
def test_metastore_on_postgresql(postgres_url, tmp_path):
    """The metastore also runs on the tests' private PostgreSQL (schematool -dbType postgres):
    a transaction committed through it is in Hive's TXNS bookkeeping there."""
    from tests.support.postgres import create_database

    url = create_database(postgres_url, "hive_metastore")
    with start_metastore(tmp_path, backing_db_url=url, artifacts=ARTIFACTS) as hms:
        assert hms.db.db_type == "postgres"
        with hms_client(hms.url) as client:
            table = _create_table(client, hms, "on_pg")
            txn = _open_txn(client)
            client.allocate_table_write_ids(
                AllocateTableWriteIdsRequest(dbName="on_pg", tableName="orders", txnIds=[txn])
            )
            client.commit_txn(CommitTxnRequest(txnid=txn))
            reader = _open_txn(client, user="reader")
            ids, _ = _write_ids(client, table, reader)
            assert ids.writeIdHighWaterMark == 1 and ids.invalidWriteIds == []
    assert not hms.running()


def test_make_hms_prints_the_url_and_stops_on_sigterm(tmp_path):
    """``python -m devservers.hms`` (``make hms``) prints a thrift URL that answers, and
    stops the metastore on SIGTERM."""
    tools = str(Path(__file__).resolve().parents[2] / "tools")  # where devservers lives
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([tools, *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "devservers.hms", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("Hive 3.1.3 metastore: thrift://127.0.0.1:"), first
        url = first.split()[3]
        with hms_client(url) as client:
            assert client.get_all_databases() == ["default"]
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "stopping the metastore" in out
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert Path(tmp_path / "metastore.log").is_file()
