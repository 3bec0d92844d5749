"""SASL/GSSAPI (Kerberos) transport to a secured Hive metastore, as Hive's own client opens it.

A metastore with ``hive.metastore.sasl.enabled=true`` (and Hadoop's
``hadoop.security.authentication=kerberos``) wraps its thrift port in Hive's
``HadoopThriftAuthBridge.Server``: a thrift ``TSaslServerTransport`` offering ``GSSAPI`` (and
``DIGEST-MD5`` for delegation tokens). Hive's ``HiveMetaStoreClient.open`` then:

* takes the service principal from ``hive.metastore.kerberos.principal`` and replaces
  ``_HOST`` with the host of the metastore URI, lower-cased (Hadoop
  ``SecurityUtil.getServerPrincipal``; an empty host or ``0.0.0.0`` means the local host's
  canonical name);
* authenticates with the Kerberos credentials of the current user (a ticket cache, or a keytab
  login: ``UserGroupInformation.loginUserFromKeytab``);
* opens ``TSaslClientTransport("GSSAPI", authorizationId=null, protocol=<principal's
  service>, serverName=<principal's host>)`` with the QOP of ``hadoop.rpc.protection``.

Here: thrift_sasl's ``TSaslClientTransport`` with :class:`GssapiSaslClient`, a client of the
SASL GSSAPI mechanism (RFC 4752) on MIT Kerberos through ``python-gssapi``. A keytab login goes
through GSSAPI's credential store (``gss_acquire_cred_from`` with ``client_keytab`` and
``ccache``): the ticket lands in a credential cache private to acidflow (by default an in-memory
``MEMORY:`` cache of this process; ``FILE:<path>`` makes it visible to ``klist -c``), never in
the user's ``KRB5CCNAME``. Without a keytab the existing ticket cache is used (``KRB5CCNAME``,
or the one named by the settings). The realm's configuration is MIT's: ``/etc/krb5.conf`` or
``KRB5_CONFIG``.

Proxy user (doAs), as Hive's impersonation over a secured metastore works (HiveServer2, the
compactor): the authenticated principal calls ``get_delegation_token(owner=<user>,
renewer=<principal>)``, which the metastore grants only when Hadoop's ``ProxyUsers`` allows the
principal to impersonate (``hadoop.proxyuser.<principal's short name>.hosts`` / ``.groups`` in
the metastore's ``core-site.xml``); then a new connection authenticates with that token over
SASL ``DIGEST-MD5`` (Hive's ``HadoopThriftAuthBridge.Client`` with ``authMethod=DIGEST``: user
name the base64 token identifier, password the base64 token password, protocol ``null``, server
``default``), and the metastore runs every call as the token's owner (its audit log says
``ugi=<user>``). A SASL ``authorizationId`` is no way to do it: Hive's GSSAPI callback refuses an
authorization id other than the authenticated one. On an unsecured metastore the doAs is Hive's
``set_ugi(user, groups)`` call (honoured when ``hive.metastore.execute.setugi=true``, Hive's
default).

Security layer: ``hadoop.rpc.protection=authentication`` (Hadoop's default, QOP ``auth``) only;
a metastore that offers only ``integrity`` / ``privacy`` is refused with a clear error.

Settings: :class:`acidflow.config.MetastoreSecurity` (``ACIDFLOW_HMS_*``, docs/configuration.md).
"""

from __future__ import annotations

import base64
import os
import socket
import struct
import threading
import time
from typing import Any

import gssapi
import gssapi.exceptions
from puresasl.client import SASLClient
from pymetastore.hive_metastore import ThriftHiveMetastore
from pymetastore.hive_metastore.ttypes import MetaException
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport
from thrift_sasl import TSaslClientTransport

from acidflow.catalog.errors import CatalogError
from acidflow.config import MetastoreSecurity

__all__ = [
    "DigestSaslClient",
    "GssapiSaslClient",
    "MetastoreAuthError",
    "client_credentials",
    "open_transport",
    "parse_delegation_token",
    "service_principal",
]

#: RFC 4752 security layer bits of the server's and the client's 4-byte token.
_LAYER_NONE = 1
_LAYER_INTEGRITY = 2
_LAYER_PRIVACY = 4


class MetastoreAuthError(CatalogError):
    """Kerberos authentication to a secured metastore failed. The message names the metastore
    URL, the client and service principals and the reason (no ticket, keytab unreadable or
    without the principal's key, service principal unknown to the KDC, handshake refused)."""


def service_principal(principal: str, host: str) -> str:
    """Hive's ``hive.metastore.kerberos.principal`` for the metastore at ``host``: ``_HOST``
    replaced by ``host`` lower-cased, as Hadoop's ``SecurityUtil.getServerPrincipal`` does for
    Hive's client (an empty host or ``0.0.0.0`` stands for this machine's canonical name).

    Args:
        principal: ``service/host@REALM``, ``service/_HOST@REALM`` or ``service@REALM``.
        host: the metastore URI's host.
    Returns:
        The principal with no ``_HOST`` left.
    """
    if "/_HOST" not in principal:
        return principal
    if not host or host == "0.0.0.0":
        host = socket.getfqdn()
    return principal.replace("/_HOST", f"/{host.lower()}", 1)


def _reason(exc: gssapi.exceptions.GSSError) -> str:
    return " ".join(str(exc).split())


def client_credentials(security: MetastoreSecurity, url: str) -> gssapi.Credentials:
    """The Kerberos initiator credentials of ``security``: a keytab login into its private
    credential cache (``client_keytab`` + ``ccache`` of GSSAPI's credential store; the ticket is
    obtained here, so a bad keytab fails now), or the existing ticket cache.

    Args:
        security: the settings (:class:`acidflow.config.MetastoreSecurity`).
        url: the metastore URL, for messages.
    Returns:
        Credentials holding a valid ticket-granting ticket.
    Raises:
        MetastoreAuthError: the keytab is missing / unreadable / lacks the principal's key, or
            (no keytab) the ticket cache holds no valid ticket; names URL, principal, reason.
    """
    who = security.client_principal or "(the ticket cache's principal)"
    name = (
        gssapi.Name(security.client_principal, gssapi.NameType.kerberos_principal)
        if security.client_principal
        else None
    )
    store: dict[bytes | str, bytes | str] = {}
    if security.keytab:
        if not security.client_principal:
            raise MetastoreAuthError(
                f"Hive metastore {url}: a client keytab ({security.keytab}) needs a client"
                " principal (ACIDFLOW_HMS_CLIENT_PRINCIPAL)"
            )
        if not os.access(security.keytab, os.R_OK):
            raise MetastoreAuthError(
                f"Hive metastore {url}: cannot log in as {who}: keytab {security.keytab} is"
                " missing or unreadable"
            )
        store["client_keytab"] = security.keytab
        store["ccache"] = security.credential_cache()
    elif security.ccache:
        store["ccache"] = security.ccache
    try:
        creds = gssapi.Credentials(name=name, usage="initiate", store=store or None)
        if creds.lifetime == 0:  # asks the KDC when the cache is empty (keytab login)
            raise gssapi.exceptions.ExpiredCredentialsError(0, 0)
    except gssapi.exceptions.GSSError as exc:
        source = (
            f"keytab {security.keytab}"
            if security.keytab
            else f"ticket cache {security.ccache or os.environ.get('KRB5CCNAME', '(default)')}"
        )
        hint = (
            f" (does the keytab hold {who}'s current key? klist -kt {security.keytab})"
            if security.keytab
            else " (no valid ticket: kinit, or set a client keytab)"
        )
        raise MetastoreAuthError(
            f"Hive metastore {url}: no Kerberos credentials for {who} from {source}:"
            f" {_reason(exc)}{hint}"
        ) from None
    return creds


class _NoLayerSaslClient:
    """What thrift_sasl's ``TSaslClientTransport`` calls besides ``start``/``step``/``dispose``
    for a mechanism without a security layer (Hadoop's ``hadoop.rpc.protection=authentication``,
    QOP ``auth``): data passes as is, and the last failure's reason is kept in ``_error``."""

    _error = ""

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        """No security layer: the data as is."""
        return True, data

    def decode(self, data: bytes) -> tuple[bool, bytes]:
        """No security layer: the data as is."""
        return True, data

    def getError(self) -> str:  # noqa: N802 - the name thrift_sasl calls
        """The last failure's reason."""
        return self._error


class GssapiSaslClient(_NoLayerSaslClient):
    """The client side of the SASL ``GSSAPI`` mechanism (RFC 4752) in the shape thrift_sasl's
    ``TSaslClientTransport`` calls (``start``, ``step``, ``encode``, ``decode``, ``getError``,
    ``dispose``), as Java's ``GssKrb5Client`` talks to Hive's ``GssKrb5Server``: context
    tokens until the context is established (mutual authentication), then the server's wrapped
    4-byte offer of security layers, answered with "no security layer" and no authorization id
    (Hive authorizes only the authenticated principal itself).

    Args:
        service: the metastore's service principal (``_HOST`` already replaced).
        creds: the initiator credentials (:func:`client_credentials`).
    """

    def __init__(self, service: str, creds: gssapi.Credentials) -> None:
        self.service = service
        self._ctx = gssapi.SecurityContext(
            name=gssapi.Name(service, gssapi.NameType.kerberos_principal),
            creds=creds,
            usage="initiate",
            flags=gssapi.RequirementFlag.mutual_authentication
            | gssapi.RequirementFlag.out_of_sequence_detection,
        )
        self._done = False
        self._error = ""

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        """Begin: ``(ok, mechanism, initial context token)``."""
        if mechanism != "GSSAPI":
            self._error = f"unsupported SASL mechanism {mechanism!r}"
            return False, mechanism, b""
        try:
            return True, mechanism, self._ctx.step(None) or b""
        except gssapi.exceptions.GSSError as exc:
            self._error = _reason(exc)
            return False, mechanism, b""

    def step(self, challenge: bytes | str) -> tuple[bool, bytes]:
        """One server challenge: ``(ok, response)``."""
        data = challenge.encode() if isinstance(challenge, str) else challenge
        try:
            if not self._ctx.complete:
                return True, self._ctx.step(data) or b""
            if self._done:
                return True, b""
            offer = self._ctx.unwrap(data).message
            if len(offer) != 4:
                self._error = f"malformed security layer offer ({len(offer)} bytes)"
                return False, b""
            if not offer[0] & _LAYER_NONE:
                self._error = (
                    "the metastore requires a SASL security layer (hadoop.rpc.protection ="
                    " integrity/privacy); acidflow supports authentication only"
                )
                return False, b""
            self._done = True
            answer = struct.pack(">I", _LAYER_NONE << 24)  # no layer, max buffer 0, no authzid
            return True, self._ctx.wrap(answer, False).message
        except gssapi.exceptions.GSSError as exc:
            self._error = _reason(exc)
            return False, b""

    def dispose(self) -> None:
        """Nothing to free (the context goes with the object)."""


def _read_vint(data: bytes, pos: int) -> tuple[int, int]:
    """Hadoop ``WritableUtils.readVInt`` at ``pos``: ``(value, next position)``."""
    first = data[pos] - 256 if data[pos] >= 0x80 else data[pos]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = int.from_bytes(data[pos + 1 : pos + size], "big")
    return (~value if negative else value), pos + size


def parse_delegation_token(token: str) -> tuple[bytes, bytes]:
    """``(identifier, password)`` of a metastore delegation token in Hadoop's URL string form
    (``Token.encodeToUrlString``: URL-safe base64, no padding, of the token's ``Writable``:
    vint-prefixed identifier, vint-prefixed password, kind, service).

    Raises:
        ValueError: not such a token.
    """
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    size, pos = _read_vint(raw, 0)
    identifier = raw[pos : pos + size]
    size, pos = _read_vint(raw, pos + size)
    password = raw[pos : pos + size]
    if not identifier or len(password) != size:
        raise ValueError("not a Hadoop delegation token string")
    return identifier, password


class DigestSaslClient(_NoLayerSaslClient):
    """The SASL ``DIGEST-MD5`` client of a delegation token (pure-sasl's mechanism) in the shape
    thrift_sasl calls, with Hive's names: user name / password the base64 identifier /
    password, digest-uri ``null/default`` (Hive's client and server both pass protocol
    ``null`` and server name ``default``, Hadoop's ``SaslRpcServer.SASL_DEFAULT_REALM``).

    Args:
        identifier: the token's identifier bytes.
        password: the token's password bytes.
    """

    def __init__(self, identifier: bytes, password: bytes) -> None:
        self._sasl = SASLClient(
            "default",
            service="null",
            mechanism="DIGEST-MD5",
            username=base64.b64encode(identifier).decode(),
            password=base64.b64encode(password).decode(),
        )
        self._error = ""

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        """Begin: ``(ok, mechanism, b"")`` (DIGEST-MD5 starts with the server's challenge)."""
        return True, mechanism, self._sasl.process() or b""

    def step(self, challenge: bytes) -> tuple[bool, bytes]:
        """One server challenge: ``(ok, response)``."""
        try:
            return True, self._sasl.process(challenge) or b""
        except Exception as exc:  # noqa: BLE001 - pure-sasl raises plain exceptions
            self._error = str(exc)
            return False, b""

    def dispose(self) -> None:
        """Release pure-sasl's state."""
        self._sasl.dispose()


def _sasl_open(
    url: str, sock: TSocket.TSocket, sasl: Any, mechanism: str, who: str, service: str
) -> Any:
    sock.open()  # an unreachable metastore raises here, before any SASL
    transport = TSaslClientTransport(lambda: sasl, mechanism, sock)
    try:
        transport.open()
    except TTransport.TTransportException as exc:
        sock.close()
        reason = sasl.getError() or exc.message or str(exc)
        raise MetastoreAuthError(
            f"Hive metastore {url}: SASL {mechanism} authentication of {who} to {service}"
            f" failed: {reason}"
        ) from None
    except (EOFError, OSError) as exc:
        sock.close()
        raise MetastoreAuthError(
            f"Hive metastore {url}: the SASL {mechanism} handshake of {who} with {service} was"
            f" cut off ({exc!r}): is the metastore secured (hive.metastore.sasl.enabled=true)?"
        ) from None
    return transport


#: a delegation token taken for a proxy user is reused by this process's connections for this
#: long (Hive's hive.cluster.delegation.token.renew-interval defaults to a day): one token per
#: (metastore, principal, proxy user) instead of one per connection, which the metastore would
#: keep in its token store until their maximum lifetime (7 days by default)
TOKEN_REUSE_SECONDS = 3600.0
_TOKENS: dict[tuple[str, str, str], tuple[str, float]] = {}
_TOKENS_LOCK = threading.Lock()


def _socket(host: str, port: int, timeout_ms: int) -> TSocket.TSocket:
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_ms)
    return sock


def _client(transport: Any) -> Any:
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))


def open_transport(
    url: str, host: str, port: int, timeout_ms: int, security: MetastoreSecurity
) -> Any:
    """An open thrift transport to the metastore: a buffered plain socket, or, with
    ``security.sasl``, the SASL/GSSAPI one; with ``security.proxy_user`` one that acts as that
    user (module doc: Kerberos, delegation token, ``set_ugi``).

    Args:
        url: the metastore URL (messages).
        host: its host (also what replaces ``_HOST`` in the service principal).
        port: its port.
        timeout_ms: socket timeout of every call.
        security: the settings.
    Returns:
        The open transport (``TBufferedTransport`` or ``TSaslClientTransport``).
    Raises:
        MetastoreAuthError: Kerberos credentials, the SASL handshake or the impersonation
            failed (names the URL, the principals and the reason).
        TTransport.TTransportException: the socket could not be opened (the caller maps it).
    """
    if not security.sasl:
        transport = TTransport.TBufferedTransport(_socket(host, port, timeout_ms))
        transport.open()
        if security.proxy_user:
            try:
                _client(transport).set_ugi(security.proxy_user, [])
            except MetaException as exc:
                transport.close()
                raise MetastoreAuthError(
                    f"Hive metastore {url}: set_ugi({security.proxy_user!r}) refused"
                    f" (hive.metastore.execute.setugi): {exc.message}"
                ) from None
        return transport
    if not security.service_principal:
        raise MetastoreAuthError(
            f"Hive metastore {url}: SASL is on (ACIDFLOW_HMS_SASL_ENABLED) but no service"
            " principal is set (ACIDFLOW_HMS_KERBEROS_PRINCIPAL, Hive's"
            " hive.metastore.kerberos.principal)"
        )
    service = service_principal(security.service_principal, host)
    creds = client_credentials(security, url)
    who = str(creds.name)
    gssapi_client = GssapiSaslClient(service, creds)
    if not security.proxy_user:
        return _sasl_open(
            url,
            _socket(host, port, timeout_ms),
            gssapi_client,
            "GSSAPI",
            who,
            f"service principal {service}",
        )
    proxy = security.proxy_user

    def as_proxy(token: str) -> Any:
        try:
            identifier, password = parse_delegation_token(token)
        except ValueError as exc:
            raise MetastoreAuthError(
                f"Hive metastore {url}: the delegation token for {proxy!r} does not parse: {exc}"
            ) from None
        return _sasl_open(
            url,
            _socket(host, port, timeout_ms),
            DigestSaslClient(identifier, password),
            "DIGEST-MD5",
            f"{proxy!r} (delegation token of {who})",
            f"service principal {service}",
        )

    key = (url, who, proxy)
    with _TOKENS_LOCK:
        cached = _TOKENS.get(key)
    if cached is not None and time.monotonic() - cached[1] < TOKEN_REUSE_SECONDS:
        try:
            return as_proxy(cached[0])
        except MetastoreAuthError:  # expired or cancelled meanwhile: take a new one
            with _TOKENS_LOCK:
                _TOKENS.pop(key, None)
    kerberos = _sasl_open(
        url,
        _socket(host, port, timeout_ms),
        gssapi_client,
        "GSSAPI",
        who,
        f"service principal {service}",
    )
    try:
        token = _client(kerberos).get_delegation_token(proxy, who)
    except MetaException as exc:
        raise MetastoreAuthError(
            f"Hive metastore {url}: {who} may not act as {proxy!r} (a delegation token for it"
            f" was refused; the metastore's hadoop.proxyuser.<{who}'s short name>.hosts/.groups"
            f" must allow it): {exc.message}"
        ) from None
    finally:
        kerberos.close()
    with _TOKENS_LOCK:
        _TOKENS[key] = (token, time.monotonic())
    return as_proxy(token)
