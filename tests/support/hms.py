"""Test helpers for the Hive 3.1.3 metastore: artifacts or skip, and a hand-made transactional ORC
table with Hive's storage descriptor.

The metastore itself is started by ``devservers.hms.start_metastore`` (one per test session:
the ``hive_metastore`` fixture in ``tests/conftest.py``); the thrift client and the
``ValidTxnList`` helpers are :mod:`acidflow.catalog.hms.client`'s.
"""

from __future__ import annotations

import os

import pytest
from pymetastore.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor, Table

from acidflow.catalog.hms.client import ORC_INPUT, ORC_OUTPUT, ORC_SERDE
from devservers.hms import HiveArtifacts, HiveArtifactsMissing


def require_hive_artifacts() -> HiveArtifacts:
    """The ``make hive-jars`` artifacts; without them: a module-level skip, or a failure when
    ``CI=true`` (CI must run the metastore tests, not skip them)."""
    try:
        return HiveArtifacts.locate()
    except HiveArtifactsMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc), allow_module_level=True)
        raise  # unreachable: pytest.skip raises


def transactional_orc_table(
    db: str, name: str, location: str, *, key: str = "id", buckets: int = 2
) -> Table:
    """A Hive 3 full-ACID table as Hive's ``CREATE TABLE ... CLUSTERED BY (key) INTO n BUCKETS
    STORED AS ORC TBLPROPERTIES ('transactional'='true')`` registers it: managed, ORC serde and
    input/output formats, bucketed by ``key``, ``bucketing_version=2``."""
    cols = [
        FieldSchema(key, "bigint", None),
        FieldSchema("name", "string", None),
        FieldSchema("amount", "decimal(12,2)", None),
    ]
    sd = StorageDescriptor(
        cols=cols,
        location=location,
        inputFormat=ORC_INPUT,
        outputFormat=ORC_OUTPUT,
        compressed=False,
        numBuckets=buckets,
        serdeInfo=SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={}),
        bucketCols=[key],
        sortCols=[],
        parameters={},
    )
    return Table(
        tableName=name,
        dbName=db,
        owner="acidflow",
        sd=sd,
        partitionKeys=[],
        parameters={"transactional": "true", "bucketing_version": "2"},
        tableType="MANAGED_TABLE",
    )


def reset_metastore(url: str, security=None) -> None:
    """Give the next test an empty metastore name space, cheaply (no restart): abort every
    open transaction, drop every database but ``default`` (cascade) and every table of
    ``default``. Dropping a table also removes its write-id state (Hive's
    ``AcidEventListener`` -> ``TxnHandler.cleanupRecords``), so a table made again starts at
    write id 1; transaction ids keep growing (one global sequence, as in Hive). ``security``:
    the connection's SASL/Kerberos settings (a secured metastore), default the environment's."""
    from pymetastore.hive_metastore.ttypes import AbortTxnsRequest

    from acidflow.catalog.hms.client import hms_client

    with hms_client(url, security=security) as client:
        resp = client.get_open_txns()
        bits = int.from_bytes(resp.abortedBits or b"", "little")
        opened = [t for i, t in enumerate(resp.open_txns) if not bits >> i & 1]
        if opened:
            client.abort_txns(AbortTxnsRequest(txn_ids=opened))
        for db in client.get_all_databases():
            if db != "default":
                client.drop_database(db, False, True)
        for tbl in client.get_all_tables("default"):
            client.drop_table("default", tbl, False)
