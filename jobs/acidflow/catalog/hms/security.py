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

Security layer: ``hadoop.rpc.protection=authentication`` (Hadoop's default, QOP ``auth``) only;
a metastore that offers only ``integrity`` / ``privacy`` is refused with a clear error.

Settings: :class:`acidflow.config.MetastoreSecurity` (``ACIDFLOW_HMS_*``, docs/configuration.md).
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Any

import gssapi
import gssapi.exceptions
from thrift.transport import TSocket, TTransport
from thrift_sasl import TSaslClientTransport

from acidflow.catalog.errors import CatalogError
from acidflow.config import MetastoreSecurity

__all__ = [
    "GssapiSaslClient",
    "MetastoreAuthError",
    "client_credentials",
    "open_transport",
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
    store: dict[str, str] = {}
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


class GssapiSaslClient:
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

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        """No security layer: the data as is."""
        return True, data

    def decode(self, data: bytes) -> tuple[bool, bytes]:
        """No security layer: the data as is."""
        return True, data

    def getError(self) -> str:  # noqa: N802 - the name thrift_sasl calls
        """The last failure's reason."""
        return self._error

    def dispose(self) -> None:
        """Nothing to free (the context goes with the object)."""


def open_transport(
    url: str, host: str, port: int, timeout_ms: int, security: MetastoreSecurity
) -> Any:
    """An open thrift transport to the metastore: buffered plain socket, or, with
    ``security.sasl``, the SASL/GSSAPI one (module doc).

    Args:
        url: the metastore URL (messages).
        host: its host (also what replaces ``_HOST`` in the service principal).
        port: its port.
        timeout_ms: socket timeout of every call.
        security: the settings.
    Returns:
        The open transport (``TBufferedTransport`` or ``TSaslClientTransport``).
    Raises:
        MetastoreAuthError: Kerberos credentials or the SASL handshake failed (names the URL,
            principals and reason).
        TTransport.TTransportException: the socket could not be opened (the caller maps it).
    """
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_ms)
    if not security.sasl:
        transport = TTransport.TBufferedTransport(sock)
        transport.open()
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
    sasl = GssapiSaslClient(service, creds)
    sock.open()  # an unreachable metastore raises here, before any SASL
    transport = TSaslClientTransport(lambda: sasl, "GSSAPI", sock)
    try:
        transport.open()
    except TTransport.TTransportException as exc:
        sock.close()
        reason = sasl.getError() or exc.message or str(exc)
        raise MetastoreAuthError(
            f"Hive metastore {url}: Kerberos (SASL GSSAPI) authentication of {who} to service"
            f" principal {service} failed: {reason}"
        ) from None
    except (EOFError, OSError) as exc:
        sock.close()
        raise MetastoreAuthError(
            f"Hive metastore {url}: the SASL GSSAPI handshake of {who} with {service} was cut"
            f" off ({exc!r}): is the metastore secured (hive.metastore.sasl.enabled=true)?"
        ) from None
    return transport
