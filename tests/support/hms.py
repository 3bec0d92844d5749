"""Test helpers for the Hive 3.1.3 metastore (issue 11): artifacts or skip, a thrift client,
Hive's ``ValidTxnList`` string, the transactional ORC table of Hive's storage descriptor.

The metastore itself is started by ``acidflow.cli.hms.start_metastore`` (one per test session:
the ``hive_metastore`` fixture in ``tests/conftest.py``). The thrift client is ``pymetastore``'s
generated ``ThriftHiveMetastore.Client`` (the Hive metastore IDL, ACID calls included), over a
buffered socket transport and the binary protocol, as Hive's own ``HiveMetaStoreClient`` talks
to a metastore without SASL.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlparse

import pytest
from pymetastore.hive_metastore import ThriftHiveMetastore
from pymetastore.hive_metastore.ttypes import (
    FieldSchema,
    GetOpenTxnsResponse,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from acidflow.cli.hms import HiveArtifacts, HiveArtifactsMissing

ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
ORC_INPUT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
#: Java's Long.MAX_VALUE: ValidReadTxnList's minOpenTxn when no transaction is open.
NO_OPEN_TXN = 9223372036854775807


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


@contextmanager
def hms_client(url: str, timeout_ms: int = 60_000) -> Iterator[ThriftHiveMetastore.Client]:
    """A connected thrift client for ``thrift://host:port``; closed on exit."""
    parsed = urlparse(url)
    assert parsed.scheme == "thrift" and parsed.hostname and parsed.port, url
    sock = TSocket.TSocket(parsed.hostname, parsed.port)
    sock.setTimeout(timeout_ms)
    transport = TTransport.TBufferedTransport(sock)
    client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    try:
        yield client
    finally:
        transport.close()


def valid_txn_list(open_txns: GetOpenTxnsResponse, current_txn: int | None = None) -> str:
    """Hive's ``ValidReadTxnList.writeToString()`` of a ``get_open_txns`` answer, as the
    transaction ``current_txn`` sees it (its own id left out, as ``TxnUtils
    .createValidReadTxnList`` does): ``<hwm>:<minOpenTxn>:<open ids>:<aborted ids>``, with
    ``abortedBits`` a Java ``BitSet.toByteArray()`` over ``open_txns`` (bit set = aborted)."""
    bits = int.from_bytes(open_txns.abortedBits or b"", "little")
    opened, aborted = [], []
    for i, txn in enumerate(open_txns.open_txns):
        if txn == current_txn:
            continue
        (aborted if bits >> i & 1 else opened).append(txn)
    min_open = min(opened) if opened else NO_OPEN_TXN
    return (f"{open_txns.txn_high_water_mark}:{min_open}:{','.join(map(str, opened))}:"
            f"{','.join(map(str, aborted))}")


def aborted_write_ids(invalid: list[int], aborted_bits: bytes | None) -> list[int]:
    """The aborted ones among a ``TableValidWriteIds.invalidWriteIds`` (``abortedBits``: a Java
    BitSet over that list, bit set = aborted, clear = open)."""
    bits = int.from_bytes(aborted_bits or b"", "little")
    return [w for i, w in enumerate(invalid) if bits >> i & 1]


def transactional_orc_table(db: str, name: str, location: str, *, key: str = "id",
                            buckets: int = 2) -> Table:
    """A Hive 3 full-ACID table as Hive's ``CREATE TABLE ... CLUSTERED BY (key) INTO n BUCKETS
    STORED AS ORC TBLPROPERTIES ('transactional'='true')`` registers it: managed, ORC serde and
    input/output formats, bucketed by ``key``, ``bucketing_version=2``."""
    cols = [FieldSchema(key, "bigint", None), FieldSchema("name", "string", None),
            FieldSchema("amount", "decimal(12,2)", None)]
    sd = StorageDescriptor(
        cols=cols, location=location, inputFormat=ORC_INPUT, outputFormat=ORC_OUTPUT,
        compressed=False, numBuckets=buckets,
        serdeInfo=SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={}),
        bucketCols=[key], sortCols=[], parameters={})
    return Table(tableName=name, dbName=db, owner="acidflow", sd=sd, partitionKeys=[],
                 parameters={"transactional": "true", "bucketing_version": "2"},
                 tableType="MANAGED_TABLE")
