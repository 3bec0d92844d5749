"""acidflow on a Kerberos-secured Hive 3.1.3 metastore (``hive.metastore.sasl.enabled=true``,
``hadoop.security.authentication=kerberos``) with a real MIT KDC: the plain socket is refused,
the SASL/GSSAPI client logs in from a keytab into a private credential cache or uses an
existing ticket cache, the ``ACIDFLOW_HMS_*`` settings drive ``load_catalog``, a Spark write
commits through it, the failures name the URL, the principals and the reason, and a proxy user
(doAs) acts through a delegation token when ``hadoop.proxyuser.*`` allows it.

The catalog behaviour itself (tables, write ids, locks, commits, snapshots) over the secured
metastore: ``tests/catalog/test_kerberos_backend.py``."""

from __future__ import annotations

import decimal
import os
import subprocess
import time
from dataclasses import replace

import pytest
from pymetastore.hive_metastore.ttypes import Database

from acidflow.catalog import Column, HiveMetastoreCatalog, TableDef, load_catalog
from acidflow.catalog.hms.client import hms_client
from acidflow.catalog.hms.security import MetastoreAuthError, service_principal
from acidflow.config import MetastoreSecurity, load_metastore_security
from acidflow.engine.transaction import Transaction
from acidflow.read import table as reads
from tests.support.hms import require_hive_artifacts, reset_metastore
from tests.support.kerberos import SERVICE_PRINCIPAL

pytestmark = pytest.mark.slow

ARTIFACTS = require_hive_artifacts()


@pytest.fixture
def secured(kerberos_metastore):
    """The session's secured metastore, emptied for this test."""
    reset_metastore(kerberos_metastore.url, kerberos_metastore.security())
    return kerberos_metastore


def orders() -> TableDef:
    return TableDef(
        name="shop.orders",
        columns=[
            Column("id", "bigint"),
            Column("name", "string"),
            Column("amount", "decimal(10,2)"),
        ],
        primary_key=["id"],
        num_buckets=2,
    )


def _token_requests(server) -> list[str]:
    """The metastore's audit lines of delegation tokens asked for by acidflow's principal."""
    log = getattr(server, "hms", server).log
    return [
        ln
        for ln in log.read_text(errors="replace").splitlines()
        if "HiveMetaStore.audit: ugi=acidflow@" in ln and "cmd=get_delegation_token" in ln
    ]


def _audit(server, text: str) -> list[str]:
    """The metastore's audit lines (``HiveMetaStore.audit: ugi=<user> ... cmd=...``) with
    ``text``, after the log caught up (``server``: a metastore, or the secured fixture)."""
    log = getattr(server, "hms", server).log
    deadline = time.monotonic() + 10
    while True:
        lines = [
            ln
            for ln in log.read_text(errors="replace").splitlines()
            if "HiveMetaStore.audit" in ln and text in ln
        ]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.2)


def _klist(secured, ccache) -> str:
    return subprocess.run(
        [secured.kdc.tools["klist"], "-c", ccache],
        capture_output=True,
        text=True,
        env=dict(os.environ, **secured.kdc.env()),
        check=False,
    ).stdout


def test_service_principal_replaces_host_as_hive():
    """``_HOST`` becomes the metastore URL's host, lower-cased (Hadoop
    ``SecurityUtil.getServerPrincipal``); an explicit host is kept."""
    assert (
        service_principal("hive/_HOST@EXAMPLE.COM", "HMS-1.Example.COM")
        == "hive/hms-1.example.com@EXAMPLE.COM"
    )
    assert service_principal("hive/meta.example.com@R", "other") == "hive/meta.example.com@R"


def test_plain_socket_is_refused_by_the_secured_metastore(secured):
    """Without SASL (the client acidflow had) the secured metastore drops the connection."""
    with pytest.raises(Exception) as info:
        with hms_client(secured.url, security=MetastoreSecurity()) as client:
            client.get_all_databases()
    assert not isinstance(info.value, MetastoreAuthError)


def test_keytab_login_into_a_private_cache(secured, tmp_path, monkeypatch):
    """A keytab login: the catalog creates a table, commits a transaction with a write id and
    reads its snapshot back; the tickets (the TGT and ``hive/localhost``) are in the private
    FILE cache named by the settings, and the user's ``KRB5CCNAME`` is untouched."""
    user_cache = tmp_path / "user-krb5cc"
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{user_cache}")
    private = tmp_path / "acidflow-krb5cc"
    cat = HiveMetastoreCatalog(
        secured.url, warehouse=str(tmp_path / "wh"), security=secured.security(private)
    )
    try:
        cat.create_table(orders())
        txn = cat.open_transaction()
        write_id = cat.allocate_write_id(txn, "shop.orders")
        cat.commit_transaction(txn)
        assert write_id == 1
        assert cat.valid_write_ids("shop.orders").high_watermark == 1
    finally:
        cat.close()
    tickets = _klist(secured, f"FILE:{private}")
    assert "Default principal: acidflow@ACIDFLOW.TEST" in tickets
    assert "hive/localhost@ACIDFLOW.TEST" in tickets
    assert not user_cache.exists()
    assert _audit(secured, "ugi=acidflow@ACIDFLOW.TEST\tip=127.0.0.1\tcmd=create_table")


def test_existing_ticket_cache(secured, tmp_path, monkeypatch):
    """No keytab: the ticket of a ``kinit`` is used, from the cache the settings name or from
    ``KRB5CCNAME``."""
    cache = tmp_path / "krb5cc"
    secured.kdc.kinit(secured.client_principal, secured.keytab, cache)
    ticket_only = secured.security(cache, client_principal=None, keytab=None)
    with hms_client(secured.url, security=ticket_only) as client:
        assert "default" in client.get_all_databases()
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{cache}")
    with hms_client(secured.url, security=replace(ticket_only, ccache=None)) as client:
        assert "default" in client.get_all_databases()


def test_settings_from_the_environment(secured, tmp_path, monkeypatch):
    """``ACIDFLOW_HMS_*`` drive ``load_catalog(thrift://...)``: keytab login into the default
    in-memory cache."""
    monkeypatch.setenv("ACIDFLOW_HMS_SASL_ENABLED", "true")
    monkeypatch.setenv("ACIDFLOW_HMS_KERBEROS_PRINCIPAL", SERVICE_PRINCIPAL)
    monkeypatch.setenv("ACIDFLOW_HMS_CLIENT_PRINCIPAL", secured.client_principal)
    monkeypatch.setenv("ACIDFLOW_HMS_CLIENT_KEYTAB", str(secured.keytab))
    monkeypatch.delenv("ACIDFLOW_HMS_CCACHE", raising=False)
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty'}")
    settings = load_metastore_security()
    assert settings.sasl and settings.credential_cache().startswith("MEMORY:acidflow-")
    cat = load_catalog(secured.url, warehouse=str(tmp_path / "wh"))
    try:
        assert isinstance(cat, HiveMetastoreCatalog)
        cat.create_table(orders())
        assert [t.name for t in cat.list_tables()] == ["shop.orders"]
    finally:
        cat.close()


@pytest.mark.spark
def test_spark_write_over_kerberos(spark, secured, tmp_path):
    """A ``Transaction`` insert and upsert with Spark on the secured catalog, read back."""
    cat = HiveMetastoreCatalog(
        secured.url, warehouse=str(tmp_path / "wh"), security=secured.security(tmp_path / "cc")
    )
    schema = "id bigint, name string, amount decimal(10,2)"
    try:
        cat.create_table(orders())
        with Transaction(cat, spark=spark) as txn:
            txn.insert(
                "shop.orders",
                spark.createDataFrame(
                    [(1, "a", decimal.Decimal("1.50")), (2, "b", decimal.Decimal("2.50"))],
                    schema,
                ),
            )
        with Transaction(cat, spark=spark) as txn:
            txn.upsert(
                "shop.orders",
                spark.createDataFrame([(2, "B", decimal.Decimal("20.00"))], schema),
            )
        rows = sorted(
            (r["id"], r["name"]) for r in reads.read_table(None, cat, "shop.orders").to_pylist()
        )
        assert rows == [(1, "a"), (2, "B")]
        assert cat.valid_write_ids("shop.orders").high_watermark == 2
    finally:
        cat.close()


def test_no_ticket_is_named(secured, tmp_path):
    """No keytab and an empty ticket cache: the error names the URL and says no ticket."""
    empty = secured.security(tmp_path / "none", client_principal=None, keytab=None)
    with pytest.raises(MetastoreAuthError) as info:
        with hms_client(secured.url, security=empty):
            pass
    msg = str(info.value)
    assert secured.url in msg and "no valid ticket" in msg and str(tmp_path / "none") in msg


def test_missing_keytab_is_named(secured, tmp_path):
    gone = secured.security(tmp_path / "cc", keytab=str(tmp_path / "missing.keytab"))
    with pytest.raises(MetastoreAuthError) as info:
        HiveMetastoreCatalog(secured.url, warehouse=str(tmp_path / "wh"), security=gone)
    msg = str(info.value)
    assert secured.url in msg and "acidflow@ACIDFLOW.TEST" in msg
    assert "missing.keytab is missing or unreadable" in msg


def test_stale_keytab_is_refused(secured, tmp_path):
    """A keytab whose key the KDC no longer has (the principal was re-keyed after export)."""
    kdc = secured.kdc
    who = kdc.add_principal(f"stale{tmp_path.name[-6:]}".replace("-", ""))
    keytab = kdc.keytab(who, tmp_path / "stale.keytab")
    kdc.kadmin(f"cpw -randkey {who}")
    bad = secured.security(tmp_path / "cc", client_principal=who, keytab=str(keytab))
    with pytest.raises(MetastoreAuthError) as info:
        with hms_client(secured.url, security=bad):
            pass
    msg = str(info.value)
    assert secured.url in msg and who in msg and str(keytab) in msg


def test_keytab_of_another_principal_is_refused(secured, tmp_path):
    bad = secured.security(tmp_path / "cc", client_principal="nobody@ACIDFLOW.TEST")
    with pytest.raises(MetastoreAuthError) as info:
        with hms_client(secured.url, security=bad):
            pass
    assert "nobody@ACIDFLOW.TEST" in str(info.value) and str(secured.keytab) in str(info.value)


def test_wrong_service_principal_is_named(secured, tmp_path):
    bad = secured.security(tmp_path / "cc", service_principal="metastore/_HOST@ACIDFLOW.TEST")
    with pytest.raises(MetastoreAuthError) as info:
        with hms_client(secured.url, security=bad):
            pass
    msg = str(info.value)
    assert "metastore/localhost@ACIDFLOW.TEST" in msg and "not found in Kerberos database" in msg


def test_proxy_user_acts_through_a_delegation_token(secured, tmp_path):
    """doAs: ``acidflow`` (granted ``hadoop.proxyuser.acidflow.*``) acts as ``bob``; the
    metastore runs the calls as bob (its audit log), the catalog works as usual."""
    as_bob = secured.security(tmp_path / "cc", proxy_user="bob")
    tokens_before = len(_token_requests(secured))
    with hms_client(secured.url, security=as_bob) as client:
        client.create_database(
            Database(
                name="bobdb",
                description="",
                locationUri=(tmp_path / "bobdb").as_uri(),
                parameters={},
            )
        )
    assert _audit(secured, "ugi=bob\tip=127.0.0.1\tcmd=create_database: Database(name:bobdb")
    cat = HiveMetastoreCatalog(secured.url, warehouse=str(tmp_path / "wh"), security=as_bob)
    try:
        cat.create_table(orders())
        txn = cat.open_transaction()
        cat.allocate_write_id(txn, "shop.orders")
        cat.commit_transaction(txn)
    finally:
        cat.close()
    assert _audit(secured, "ugi=bob\tip=127.0.0.1\tcmd=create_table: Table(tableName:orders")
    # one delegation token for both connections (not one per connection: the metastore keeps
    # each in its token store until its maximum lifetime)
    assert len(_token_requests(secured)) - tokens_before == 1


def test_proxy_user_without_a_grant_is_refused(secured, tmp_path):
    """A principal without ``hadoop.proxyuser.<name>.*`` may not impersonate."""
    kdc = secured.kdc
    carol = kdc.add_principal(f"carol{tmp_path.name[-6:]}".replace("-", ""))
    keytab = kdc.keytab(carol, tmp_path / "carol.keytab")
    bad = secured.security(
        tmp_path / "cc", client_principal=carol, keytab=str(keytab), proxy_user="bob"
    )
    with pytest.raises(MetastoreAuthError) as info:
        with hms_client(secured.url, security=bad):
            pass
    msg = str(info.value)
    assert secured.url in msg and carol in msg and "'bob'" in msg
    assert "not allowed to impersonate" in msg


def test_proxy_user_on_an_unsecured_metastore_is_set_ugi(hive_metastore, tmp_path):
    """Without SASL the doAs is Hive's ``set_ugi`` (``hive.metastore.execute.setugi=true``, the
    default): the plain metastore runs the calls as the user."""
    reset_metastore(hive_metastore.url, MetastoreSecurity())
    with hms_client(hive_metastore.url, security=MetastoreSecurity(proxy_user="dora")) as client:
        client.create_database(
            Database(
                name="doradb",
                description="",
                locationUri=(tmp_path / "doradb").as_uri(),
                parameters={},
            )
        )
    assert _audit(
        hive_metastore,
        "ugi=dora\tip=127.0.0.1\tcmd=source:127.0.0.1 create_database: Database(name:doradb",
    )
