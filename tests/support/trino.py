"""Test helpers for Trino on the session's Hive 3.1.3 metastore.

- :func:`require_trino`: the ``make trino-server`` folder and a Java 24+ JDK, else a skip (a
  failure when ``CI=true``);
- :func:`session_trino`: the body of the session fixture ``trino_server`` of
  ``tests/conftest.py`` (one Trino per test session, on the ``hive_metastore`` fixture's
  metastore);
- :func:`metastore_write_ids` and :func:`read_hive_table`: acidflow reads a table that another
  engine (Trino) wrote, as Hive would: the table's ``ValidWriteIdList`` from the metastore
  (``get_valid_write_ids`` for a fresh reader), the files through acidflow's snapshot reader
  (``acidflow.read.snapshot.plan_read`` / ``read_arrow``);
- :func:`register_in_metastore`: makes an acidflow table (written through acidflow's own SQL
  catalog) visible to metastore clients. Until the ``thrift://`` catalog backend writes through
  the metastore itself, this is done by hand: ``create_table`` with Hive's storage descriptor
  of a transactional ORC table at the acidflow table's location, then :func:`mirror_write_ids`
  replays acidflow's write-id history in the metastore (per acidflow write id one metastore
  transaction that allocates the table's next write id and commits, or aborts when acidflow's
  write id is aborted), so Hive's and Trino's snapshots cover exactly acidflow's committed
  writes. With the metastore catalog backend this whole function becomes "nothing to do": the
  tests call it through one name so that the swap is one line.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from pymetastore.hive_metastore.ttypes import (
    AbortTxnRequest,
    AllocateTableWriteIdsRequest,
    CommitTxnRequest,
    Database,
    FieldSchema,
    GetValidWriteIdsRequest,
    NoSuchObjectException,
    OpenTxnRequest,
    SerDeInfo,
    StorageDescriptor,
    Table,
)

from acidflow.catalog import TableDef
from acidflow.catalog.base import Catalog
from acidflow.catalog.hms.client import (
    ORC_INPUT,
    ORC_OUTPUT,
    ORC_SERDE,
    hms_client,
    to_valid_write_ids,
    valid_txn_list,
)
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read import snapshot
from acidflow.storage.fs import TableFS
from devservers.trino import TrinoMissing, TrinoServer, locate_trino, start_trino, trino_java_home

HOST = socket.gethostname()


def require_trino() -> Path:
    """The Trino server folder of ``make trino-server`` (and a Java 24+ JDK for it); without
    them: a skip, or a failure when ``CI=true`` (CI must run the Trino tests, not skip them)."""
    try:
        trino_java_home()
        return locate_trino()
    except TrinoMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc), allow_module_level=True)
        raise  # unreachable: pytest.skip raises


@contextmanager
def session_trino(metastore_url: str, workdir: Path) -> Iterator[TrinoServer]:
    """A Trino 476 server (coordinator + worker, ``-Xmx1G``) on 127.0.0.1, its ``hive``
    catalog on ``metastore_url`` (``devservers.trino``), stopped on exit: the body of the
    session fixture ``trino_server`` in ``tests/conftest.py``. Skips without ``make
    trino-server`` (fails when ``CI=true``)."""
    home = require_trino()
    server = start_trino(workdir, metastore_url, trino_home=home)
    try:
        yield server
    finally:
        server.stop()


def metastore_write_ids(metastore_url: str, full_name: str) -> ValidWriteIdList:
    """The table's ``ValidWriteIdList`` as a new Hive reader sees it now: ``get_open_txns``
    -> ``ValidTxnList`` -> ``get_valid_write_ids`` (``full_name`` = ``db.table``)."""
    with hms_client(metastore_url) as client:
        txns = valid_txn_list(client.get_open_txns())
        resp = client.get_valid_write_ids(
            GetValidWriteIdsRequest(fullTableNames=[full_name], validTxnList=txns)
        )
    (ids,) = resp.tblValidWriteIds
    return to_valid_write_ids(ids)


def local_path(location: str) -> str:
    """A metastore ``file:`` location (``file:/a/b`` or ``file:///a/b``) as a local path.

    Raises:
        ValueError: not a ``file:`` location (names it).
    """
    if not location.startswith("file:"):
        raise ValueError(f"not a local file: location: {location!r}")
    return "/" + location[len("file:") :].lstrip("/")


def read_hive_table(
    metastore_url: str,
    db: str,
    name: str,
    *,
    valid: ValidWriteIdList | None = None,
    row_id: bool = False,
) -> pa.Table:
    """acidflow's snapshot of a transactional table registered in the metastore by anyone
    (here Trino): columns and location from ``get_table``, the snapshot from
    :func:`metastore_write_ids` unless ``valid`` is given, the files read in-process by
    ``acidflow.read.snapshot`` (base / deltas / delete deltas, ``getAcidState`` rules).

    Raises:
        ValueError: the table is partitioned (not needed by these tests) or not at a file:
            location.
    """
    with hms_client(metastore_url) as client:
        table = client.get_table(db, name)
    if table.partitionKeys:
        raise ValueError(f"{db}.{name}: partitioned tables are not read by this helper")
    path = local_path(table.sd.location)
    cols = [(f.name, f.type) for f in table.sd.cols]
    valid = valid or metastore_write_ids(metastore_url, f"{db}.{name}")
    tfs = TableFS(path)
    plan = snapshot.plan_read(tfs, path, cols, [], valid, bucketed=(table.sd.numBuckets or 0) > 0)
    return snapshot.read_arrow(tfs, plan, row_id=row_id)


def hive_table(td: TableDef) -> Table:
    """The metastore ``Table`` of an acidflow table, as Hive's ``CREATE TABLE ... CLUSTERED BY
    (...) INTO n BUCKETS STORED AS ORC TBLPROPERTIES ('transactional'='true', ...)`` registers
    it: managed, ORC serde and input/output formats, acidflow's table properties
    (``transactional``, ``transactional_properties``, ``bucketing_version``).

    Raises:
        ValueError: a partitioned table (its partitions would need ``add_partitions``; the
            metastore catalog backend does that).
    """
    if td.partition_columns:
        raise ValueError(
            f"{td.name}: registering partitioned tables by hand is not supported;"
            " the thrift:// catalog backend registers them"
        )
    location = (
        td.location
        if "://" in td.location or td.location.startswith("file:")
        else Path(td.location).resolve().as_uri()
    )
    sd = StorageDescriptor(
        cols=[FieldSchema(c.name, c.hive_type, None) for c in td.columns],
        location=location,
        inputFormat=ORC_INPUT,
        outputFormat=ORC_OUTPUT,
        compressed=False,
        numBuckets=td.num_buckets if td.num_buckets > 0 else -1,
        serdeInfo=SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={}),
        bucketCols=list(td.bucket_columns) if td.num_buckets > 0 else [],
        sortCols=[],
        parameters={},
    )
    params = {k: v for k, v in td.properties.items() if not k.startswith("acidflow.")}
    return Table(
        tableName=td.name.split(".", 1)[1],
        dbName=td.db_name,
        owner="acidflow",
        sd=sd,
        partitionKeys=[],
        parameters=params,
        tableType="MANAGED_TABLE",
    )


def mirror_write_ids(metastore_url: str, catalog: Catalog, name: str) -> ValidWriteIdList:
    """Replay acidflow's write ids of table ``name`` above the metastore's high watermark: per
    write id one metastore transaction (``open_txns``, ``allocate_table_write_ids``, then
    ``commit_txn``, or ``abort_txn`` when acidflow's write id is aborted). Returns the
    metastore's ``ValidWriteIdList`` afterwards.

    Raises:
        ValueError: acidflow has an open write id to mirror (it would be neither visible nor
            aborted), or the metastore is ahead of acidflow or allocated a different write id
            than acidflow's (the histories diverged: someone else wrote the table through the
            metastore; names the write ids).
    """
    ours = catalog.valid_write_ids(name)
    full = catalog.get_table(name).name
    db, table = full.split(".", 1)
    theirs = metastore_write_ids(metastore_url, full)
    if theirs.high_watermark > ours.high_watermark:
        raise ValueError(
            f"{full}: the metastore's high watermark {theirs.high_watermark} is"
            f" above acidflow's {ours.high_watermark}: write ids"
            f" {ours.high_watermark + 1}..{theirs.high_watermark} were allocated"
            " through the metastore (Hive or Trino wrote the table), and acidflow's"
            " catalog would allocate them again"
        )
    aborted = set(ours.aborted_write_ids)
    with hms_client(metastore_url) as client:
        for write_id in range(theirs.high_watermark + 1, ours.high_watermark + 1):
            if write_id in ours.open_write_ids:
                raise ValueError(
                    f"{full}: write id {write_id} is still open in acidflow's"
                    " catalog; commit or abort it before mirroring"
                )
            (txn,) = client.open_txns(
                OpenTxnRequest(num_txns=1, user="acidflow", hostname=HOST)
            ).txn_ids
            resp = client.allocate_table_write_ids(
                AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=[txn])
            )
            (got,) = resp.txnToWriteIds
            if got.writeId != write_id:
                client.abort_txn(AbortTxnRequest(txnid=txn))
                raise ValueError(
                    f"{full}: the metastore allocated write id {got.writeId} where"
                    f" acidflow has {write_id}: the write-id histories diverged"
                )
            if write_id in aborted:
                client.abort_txn(AbortTxnRequest(txnid=txn))
            else:
                client.commit_txn(CommitTxnRequest(txnid=txn))
    return metastore_write_ids(metastore_url, full)


def register_in_metastore(metastore_url: str, catalog: Catalog, name: str) -> ValidWriteIdList:
    """Make acidflow table ``name`` visible to metastore clients (Hive, Trino): create its
    database and table in the metastore when absent (:func:`hive_table`), then
    :func:`mirror_write_ids`. Idempotent: call it again after more acidflow writes. Returns
    the metastore's ``ValidWriteIdList``."""
    td = catalog.get_table(name)
    with hms_client(metastore_url) as client:
        try:
            client.get_database(td.db_name)
        except NoSuchObjectException:
            client.create_database(Database(name=td.db_name, description="acidflow", parameters={}))
        try:
            client.get_table(td.db_name, td.name.split(".", 1)[1])
        except NoSuchObjectException:
            client.create_table(hive_table(td))
    return mirror_write_ids(metastore_url, catalog, name)
