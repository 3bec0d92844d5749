"""A thrift client for a Hive 3.1 metastore and the conversions of its transactional answers.

The client is ``pymetastore``'s generated ``ThriftHiveMetastore.Client`` (Hive's
``hive_metastore.thrift``, ACID calls included: ``open_txns``, ``commit_txn``,
``allocate_table_write_ids``, ``get_valid_write_ids``, ``lock`` ...) over a buffered socket
transport and the binary protocol, as Hive's own ``HiveMetaStoreClient`` talks to a metastore
without SASL (``hive.metastore.sasl.enabled=false``), or over SASL/GSSAPI (Kerberos) when the
settings say so (:mod:`acidflow.catalog.hms.security`, ``ACIDFLOW_HMS_*``).

Shapes: a metastore URL is ``thrift://host:port``; Hive's ``ValidTxnList`` string is
``<hwm>:<minOpenTxn>:<open ids>:<aborted ids>`` (``ValidReadTxnList.writeToString``).
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any
from urllib.parse import urlparse

from pymetastore.hive_metastore import ThriftHiveMetastore
from pymetastore.hive_metastore.ttypes import (
    GetOpenTxnsResponse,
    MetaException,
    TableValidWriteIds,
)
from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport

from acidflow.catalog.errors import CatalogError
from acidflow.catalog.hms.security import open_transport
from acidflow.config import MetastoreSecurity, load_metastore_security
from acidflow.format.writeids import ValidWriteIdList

#: Java's Long.MAX_VALUE: ValidReadTxnList's minOpenTxn when no transaction is open.
NO_OPEN_TXN = 9223372036854775807

#: Hive's ORC serde and input/output formats of a transactional ORC table.
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
ORC_INPUT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"

#: The generated thrift client class (one connection; not thread-safe).
HmsClient = ThriftHiveMetastore.Client


class MetastoreUnreachableError(CatalogError):
    """The metastore at a URL does not answer (names the URL and the socket error)."""


class MetastoreError(CatalogError):
    """The metastore refused a call with a ``MetaException`` (names the URL, the call and
    Hive's message). Thrift's exception objects are immutable (``__traceback__`` cannot be
    set), so they are converted before they travel through context managers."""


def parse_metastore_url(url: str) -> tuple[str, int]:
    """``(host, port)`` of ``thrift://host:port``.

    Raises:
        CatalogError: not a ``thrift://host:port`` URL (names it).
    """
    parsed = urlparse(url)
    if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
        raise CatalogError(f"not a Hive metastore URL (thrift://host:port): {url!r}")
    return parsed.hostname, parsed.port


class hms_client:  # noqa: N801 - used like a function: ``with hms_client(url) as client``
    """A connected thrift client for ``thrift://host:port``, closed on exit.

    A class rather than a ``contextlib`` generator on purpose: thrift's generated exceptions
    (``MetaException``, ``NoSuchObjectException`` ...) are immutable, and ``contextlib`` sets
    ``__traceback__`` on an exception that passes through it, which turns Hive's error into
    ``TypeError: can't modify immutable instance``. Here exceptions pass through untouched.

    Args:
        url: the metastore URL (Hive ``hive.metastore.uris``, one URI).
        timeout_ms: socket timeout of every call, in milliseconds.
        security: SASL/Kerberos settings; default :func:`acidflow.config
            .load_metastore_security` (the ``ACIDFLOW_HMS_*`` environment).
    Raises:
        MetastoreUnreachableError: on enter, the connection is refused or times out (names
            the URL).
        MetastoreAuthError: on enter, Kerberos authentication failed (names the URL, the
            principals and the reason).
        CatalogError: not a thrift URL.
    """

    def __init__(
        self, url: str, timeout_ms: int = 60_000, security: MetastoreSecurity | None = None
    ) -> None:
        self.host, self.port = parse_metastore_url(url)
        self.url = url
        self.timeout_ms = timeout_ms
        self.security = security or load_metastore_security()
        self._transport: Any = None

    def __enter__(self) -> Any:
        self._transport = connect_transport(self.url, self.timeout_ms, self.security)
        return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(self._transport))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._transport is not None:
            self._transport.close()


def connect_transport(url: str, timeout_ms: int, security: MetastoreSecurity) -> Any:
    """An open thrift transport to the metastore at ``url``: a plain buffered socket, or the
    SASL/GSSAPI one when ``security.sasl``; with ``security.proxy_user`` one acting as that
    user (:func:`acidflow.catalog.hms.security.open_transport`).

    Raises:
        MetastoreUnreachableError: the socket cannot be opened (names the URL).
        MetastoreAuthError: Kerberos authentication failed.
        CatalogError: not a thrift URL.
    """
    host, port = parse_metastore_url(url)
    try:
        return open_transport(url, host, port, timeout_ms, security)
    except TTransport.TTransportException as exc:
        raise MetastoreUnreachableError(f"Hive metastore {url} is unreachable: {exc}") from exc


def valid_txn_list(open_txns: GetOpenTxnsResponse, current_txn: int | None = None) -> str:
    """Hive's ``ValidReadTxnList.writeToString()`` of a ``get_open_txns`` answer, as the
    transaction ``current_txn`` sees it (its own id left out, as ``TxnUtils
    .createValidReadTxnList`` does): ``<hwm>:<minOpenTxn>:<open ids>:<aborted ids>``, with
    ``abortedBits`` a Java ``BitSet.toByteArray()`` over ``open_txns`` (bit set = aborted)."""
    bits = int.from_bytes(open_txns.abortedBits or b"", "little")
    opened: list[int] = []
    aborted: list[int] = []
    for i, txn in enumerate(open_txns.open_txns):
        if txn == current_txn:
            continue
        (aborted if bits >> i & 1 else opened).append(txn)
    min_open = min(opened) if opened else NO_OPEN_TXN
    return (
        f"{open_txns.txn_high_water_mark}:{min_open}:{','.join(map(str, opened))}:"
        f"{','.join(map(str, aborted))}"
    )


def aborted_write_ids(invalid: list[int], aborted_bits: bytes | None) -> list[int]:
    """The aborted ones among a ``TableValidWriteIds.invalidWriteIds`` (``abortedBits``: a Java
    BitSet over that list, bit set = aborted, clear = open)."""
    bits = int.from_bytes(aborted_bits or b"", "little")
    return [w for i, w in enumerate(invalid) if bits >> i & 1]


def to_valid_write_ids(ids: TableValidWriteIds) -> ValidWriteIdList:
    """acidflow's ``ValidWriteIdList`` of one table's ``get_valid_write_ids`` answer (Hive
    ``TxnUtils.createValidReaderWriteIdList``): high watermark, open and aborted exceptions
    split by ``abortedBits``, ``minOpenWriteId``."""
    invalid = list(ids.invalidWriteIds or [])
    aborted = aborted_write_ids(invalid, ids.abortedBits)
    aborted_set = set(aborted)
    opened = [w for w in invalid if w not in aborted_set]
    return ValidWriteIdList(
        ids.fullTableName, ids.writeIdHighWaterMark, opened, aborted, ids.minOpenWriteId
    )


class MetastoreConnection:
    """One thrift connection to a metastore, shared by the methods of one catalog object.

    The generated client is not thread-safe: every call runs under a lock. A broken socket
    (the metastore restarted, an idle connection dropped) is reopened once and the call retried;
    thrift exceptions declared by the IDL (``NoSuchTxnException``, ``MetaException`` ...) pass
    through. Open it per process (a socket does not survive ``fork``).

    Args:
        url: ``thrift://host:port`` (Hive ``hive.metastore.uris``, one URI).
        timeout_ms: socket timeout of every call, in milliseconds.
        security: SASL/Kerberos settings; default the ``ACIDFLOW_HMS_*`` environment.
    Raises:
        MetastoreUnreachableError: at construction or on a call whose reconnect fails (names
            the URL).
        MetastoreAuthError: Kerberos authentication failed (at construction or reconnect).
    """

    def __init__(
        self, url: str, timeout_ms: int = 60_000, security: MetastoreSecurity | None = None
    ) -> None:
        self.url = url
        self.host, self.port = parse_metastore_url(url)
        self.timeout_ms = timeout_ms
        self.security = security or load_metastore_security()
        self._lock = threading.RLock()
        self._transport: Any = None
        self._client: Any = None
        self._connect()

    def _connect(self) -> None:
        transport = connect_transport(self.url, self.timeout_ms, self.security)
        self._transport = transport
        self._client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))

    def call(self, method: str, *args: Any) -> Any:
        """``client.<method>(*args)`` under the lock; reconnect once on a broken socket.

        Raises:
            MetastoreUnreachableError: the metastore cannot be reached again (names the URL).
            MetastoreError: a ``MetaException`` (names the URL, the call, Hive's message).
            the other thrift exceptions of the call (``TxnAbortedException`` ...).
        """
        with self._lock:
            for attempt in (0, 1):
                try:
                    if self._client is None:
                        self._connect()
                    return getattr(self._client, method)(*args)
                except MetaException as exc:
                    raise MetastoreError(
                        f"Hive metastore {self.url}: {method} failed: {exc.message}"
                    ) from None
                except (TTransport.TTransportException, OSError, EOFError) as exc:
                    self.close()
                    if attempt:
                        raise MetastoreUnreachableError(
                            f"Hive metastore {self.url}: {method} failed: {exc}"
                        ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the socket (the next call reconnects)."""
        with self._lock:
            if self._transport is not None:
                try:
                    self._transport.close()
                finally:
                    self._transport = None
                    self._client = None
