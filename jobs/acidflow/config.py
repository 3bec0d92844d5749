"""Configuration: environment first, files second, code defaults last.

Keys (environment variables):

* ``ACIDFLOW_WAREHOUSE`` -- table root: a local path or an fsspec URL (``file:///...``,
  ``s3://...``). Default ``./warehouse`` under the current directory.
* ``ACIDFLOW_CATALOG_URL`` -- SQLAlchemy URL of the transaction catalog. Default: a SQLite
  file ``_acidflow_catalog.db`` inside the warehouse (hidden from ACID listings by its ``_``).
* ``ACIDFLOW_TXN_TIMEOUT`` -- seconds without heartbeat before the housekeeper aborts a
  transaction (Hive ``hive.txn.timeout``, default 300).

Object storage (a warehouse ``s3://bucket/prefix``): acidflow adds no S3 keys of its own. The
endpoint, credentials and region are the standard AWS environment that botocore (hence s3fs,
in the driver and in Spark's Python tasks) reads and that ``acidflow.spark`` hands to Hadoop's
S3A for Spark: ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``; a custom endpoint such as
MinIO is used with path-style addressing by S3A), ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``,
``AWS_PROFILE``. ``ACIDFLOW_HADOOP_AWS_JARS`` -- folder of the S3A jars for Spark (default
``.cache/hadoop-aws`` of the repository, filled by ``make hadoop-aws``).

Secured Hive metastore (a ``thrift://`` catalog; :class:`MetastoreSecurity`, read by
:func:`load_metastore_security`; the Kerberos realm itself comes from ``/etc/krb5.conf`` or
``KRB5_CONFIG``):

* ``ACIDFLOW_HMS_SASL_ENABLED`` -- ``true`` for SASL/Kerberos (Hive
  ``hive.metastore.sasl.enabled``). Default ``false`` (a plain socket).
* ``ACIDFLOW_HMS_KERBEROS_PRINCIPAL`` -- the metastore's service principal (Hive
  ``hive.metastore.kerberos.principal``, e.g. ``hive/_HOST@EXAMPLE.COM``; ``_HOST`` becomes
  the metastore URL's host).
* ``ACIDFLOW_HMS_CLIENT_PRINCIPAL`` / ``ACIDFLOW_HMS_CLIENT_KEYTAB`` -- log in as this
  principal from this keytab (as Hive's ``hive.metastore.client.kerberos.principal`` /
  ``.keytab``); without them the existing ticket cache (``kinit``) is used.
* ``ACIDFLOW_HMS_CCACHE`` -- the credential cache: the keytab login's target (default a private
  in-memory ``MEMORY:`` cache of the process), or the ticket cache to read when there is no
  keytab (default ``KRB5CCNAME``'s / MIT's default).
* ``ACIDFLOW_HMS_PROXY_USER`` -- impersonate this user (doAs): the authenticated principal asks
  the metastore for a delegation token owned by the user (allowed by the metastore's
  ``hadoop.proxyuser.<principal's short name>.hosts`` / ``.groups``) and then talks as the user
  over SASL ``DIGEST-MD5``.

Hive's compaction queue (a ``thrift://`` catalog; :func:`load_metastore_db`;
docs/hms-catalog.md "Compaction"):

* ``ACIDFLOW_HMS_METASTORE_DB`` -- SQLAlchemy URL of the metastore's backing database (its
  ``COMPACTION_QUEUE``); the thrift URL's ``?metastore_db=`` query parameter overrides it. With
  it acidflow runs the compactions Hive users request and lists its own in ``SHOW
  COMPACTIONS``; without it Hive's requests are reported as waiting.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TXN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Settings:
    """Resolved settings.

    Attributes:
        warehouse: table root (local absolute path or fsspec URL).
        catalog_url: SQLAlchemy URL of the catalog database.
        txn_timeout_s: heartbeat timeout in seconds (Hive ``hive.txn.timeout``).
    """

    warehouse: str
    catalog_url: str
    txn_timeout_s: int = DEFAULT_TXN_TIMEOUT_S


def load_settings(warehouse: str | None = None, catalog_url: str | None = None) -> Settings:
    """Resolve settings from arguments, then the environment, then defaults.

    Args:
        warehouse: overrides ``ACIDFLOW_WAREHOUSE``.
        catalog_url: overrides ``ACIDFLOW_CATALOG_URL``.
    Returns:
        A :class:`Settings`; a local warehouse path is made absolute (not created).
    """
    wh = warehouse or os.environ.get("ACIDFLOW_WAREHOUSE") or "warehouse"
    if "://" not in wh:
        wh = str(Path(wh).absolute())
    url = catalog_url or os.environ.get("ACIDFLOW_CATALOG_URL")
    if not url:
        if "://" in wh and not wh.startswith("file://"):
            raise ValueError(
                "ACIDFLOW_CATALOG_URL must be set when the warehouse is not local "
                f"(warehouse={wh!r})"
            )
        local = wh[len("file://") :] if wh.startswith("file://") else wh
        url = f"sqlite:///{Path(local) / '_acidflow_catalog.db'}"
    timeout = int(os.environ.get("ACIDFLOW_TXN_TIMEOUT", DEFAULT_TXN_TIMEOUT_S))
    return Settings(warehouse=wh, catalog_url=url, txn_timeout_s=timeout)


_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class MetastoreSecurity:
    """How to authenticate to a Hive metastore (module doc: the ``ACIDFLOW_HMS_*`` keys).

    Attributes:
        sasl: SASL/Kerberos on (Hive ``hive.metastore.sasl.enabled``).
        service_principal: the metastore's principal, ``_HOST`` allowed (Hive
            ``hive.metastore.kerberos.principal``).
        client_principal: the principal to log in as from ``keytab``.
        keytab: the client keytab (a keytab login), or ``None`` (the ticket cache).
        ccache: the credential cache (``FILE:/path``, ``MEMORY:name`` ...), or ``None``.
        proxy_user: the user to impersonate (doAs), or ``None``.
    """

    sasl: bool = False
    service_principal: str | None = None
    client_principal: str | None = None
    keytab: str | None = None
    ccache: str | None = None
    proxy_user: str | None = None

    def credential_cache(self) -> str:
        """Where a keytab login puts its ticket: ``ccache``, else an in-memory cache private
        to this process and login (``MEMORY:acidflow-<hash of principal and keytab>``)."""
        if self.ccache:
            return self.ccache
        digest = hashlib.sha256(f"{self.client_principal}\0{self.keytab}".encode()).hexdigest()
        return f"MEMORY:acidflow-{digest[:16]}"


def load_metastore_security(environ: Mapping[str, str] | None = None) -> MetastoreSecurity:
    """The metastore authentication settings from ``environ`` (default ``os.environ``).

    Args:
        environ: the variables to read (``ACIDFLOW_HMS_*``, module doc).
    Returns:
        A :class:`MetastoreSecurity`; ``sasl`` false unless ``ACIDFLOW_HMS_SASL_ENABLED`` is
        ``true`` / ``1`` / ``yes`` / ``on``.
    """
    env = os.environ if environ is None else environ

    def get(key: str) -> str | None:
        return (env.get(key) or "").strip() or None

    return MetastoreSecurity(
        sasl=(get("ACIDFLOW_HMS_SASL_ENABLED") or "false").lower() in _TRUE,
        service_principal=get("ACIDFLOW_HMS_KERBEROS_PRINCIPAL"),
        client_principal=get("ACIDFLOW_HMS_CLIENT_PRINCIPAL"),
        keytab=get("ACIDFLOW_HMS_CLIENT_KEYTAB"),
        ccache=get("ACIDFLOW_HMS_CCACHE"),
        proxy_user=get("ACIDFLOW_HMS_PROXY_USER"),
    )


def load_metastore_db(environ: Mapping[str, str] | None = None) -> str | None:
    """``ACIDFLOW_HMS_METASTORE_DB`` from ``environ`` (default ``os.environ``): the Hive
    metastore's backing database as a SQLAlchemy URL (Hive's
    ``javax.jdo.option.ConnectionURL`` database, whose ``COMPACTION_QUEUE`` Hive 3.1's worker
    uses), or ``None`` when unset or blank."""
    env = os.environ if environ is None else environ
    return (env.get("ACIDFLOW_HMS_METASTORE_DB") or "").strip() or None
