"""Test helpers for Kerberos: the MIT KDC's programs or skip (fail under ``CI=true``), and the
Kerberos-secured Hive 3.1.3 metastore the ``kerberos_metastore`` fixture starts
(``tests/conftest.py``): SASL/GSSAPI on, service principal ``hive/localhost@ACIDFLOW.TEST``,
a client principal ``acidflow`` with a keytab, and Hadoop's proxy-user grant for it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from acidflow.config import MetastoreSecurity
from devservers.hms import HiveMetastore
from devservers.kdc import Kdc, KerberosToolsMissing, find_kdc_tools

#: The metastore's service principal as a client configures it (Hive's usual ``_HOST`` form;
#: the client's URL host is ``localhost``).
SERVICE_PRINCIPAL = "hive/_HOST@ACIDFLOW.TEST"


def require_kdc_tools() -> None:
    """The MIT Kerberos programs; without them: a skip, or a failure when ``CI=true`` (CI must
    run the Kerberos tests, not skip them)."""
    try:
        find_kdc_tools()
    except KerberosToolsMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


@dataclass
class KerberosMetastore:
    """The secured metastore of the ``kerberos_metastore`` fixture.

    Attributes:
        hms: the metastore (``hms.url`` is ``thrift://127.0.0.1:<port>``).
        kdc: the realm's KDC.
        client_principal: ``acidflow@ACIDFLOW.TEST``, a user with a keytab.
        keytab: its keytab.
    """

    hms: HiveMetastore
    kdc: Kdc
    client_principal: str
    keytab: Path

    @property
    def url(self) -> str:
        """``thrift://localhost:<port>``: ``_HOST`` in the service principal becomes
        ``localhost``, the host of ``hive/localhost``."""
        return f"thrift://localhost:{self.hms.port}"

    def security(self, ccache: Path | None = None, **kwargs: str | None) -> MetastoreSecurity:
        """Settings for a keytab login as the client principal (into ``FILE:<ccache>`` when
        given); ``kwargs`` override fields."""
        fields: dict[str, object] = {
            "sasl": True,
            "service_principal": SERVICE_PRINCIPAL,
            "client_principal": self.client_principal,
            "keytab": str(self.keytab),
            "ccache": f"FILE:{ccache}" if ccache else None,
        }
        fields.update(kwargs)
        return MetastoreSecurity(**fields)  # type: ignore[arg-type]
