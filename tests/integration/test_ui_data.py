"""The "ACID tables" page without Airflow: its data layer against a real SQLite catalog and real
ACID files (``tests.support.ui_warehouse``), the HTML it renders, and its FastAPI app with a
stub authenticator (the real Airflow JWT check runs in ``tests/e2e/test_ui_plugin.py``)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from acidflow_ui import render  # the plugins folder is on pytest's pythonpath (pyproject)
from acidflow_ui.data import (
    AcidUiData,
    CatalogNotReadyError,
    TxnRow,
    recent_transactions,
    to_jsonable,
)
from tests.support import ui_warehouse as uw


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from acidflow.catalog import SqlCatalog

    wh = tmp_path_factory.mktemp("ui") / "warehouse"
    wh.mkdir()
    cat = SqlCatalog(f"sqlite:///{wh / '_acidflow_catalog.db'}", warehouse=str(wh))
    ids = uw.build(cat)
    yield cat, ids
    cat.close()


@pytest.fixture(scope="module")
def ui(built):
    return AcidUiData(built[0])


def test_tables_view(ui, built):
    _, ids = built
    by_name = {t.name: t for t in ui.tables()}
    assert sorted(by_name) == [uw.CUSTOMERS, uw.ORDERS]
    for name, exp in uw.EXPECTED.items():
        t = by_name[name]
        assert t.error is None
        assert t.high_watermark == exp["high_watermark"]
        assert t.open_write_ids == exp["open_write_ids"]
        assert t.aborted_write_ids == exp["aborted_write_ids"]
        assert (t.deltas, t.delete_deltas) == (exp["deltas"], exp["delete_deltas"])
    orders = by_name[uw.ORDERS]
    assert orders.open_txn_ids == [ids["open_txn"]] and orders.open_txns == 1
    assert orders.base_bytes > 0 and orders.delta_bytes > 0
    assert orders.last_compaction.id == ids["done_compaction"]
    assert (orders.last_compaction.type, orders.last_compaction.state) == ("major", "succeeded")
    assert orders.last_compaction.ended_at is not None
    assert orders.queued_compaction.id == ids["queued_compaction"]
    assert orders.queued_compaction.state == "initiated"
    cust = by_name[uw.CUSTOMERS]
    assert cust.partitions == 2 and cust.base_bytes == 0 and cust.last_compaction is None


def test_show_compactions_transactions_locks(ui, built):
    _, ids = built
    comps = {c.id: c for c in ui.compactions()}
    done, queued = comps[ids["done_compaction"]], comps[ids["queued_compaction"]]
    assert (done.table, done.partition, done.type, done.worker_id) == (
        uw.ORDERS,
        None,
        "major",
        "test-worker-1",
    )
    assert done.duration_s == pytest.approx((done.ended_at - done.started_at).total_seconds())
    assert done.highest_write_id == 3 and not done.running
    assert queued.started_at is None and queued.duration_s is None
    txns = {t.txn_id: t for t in ui.transactions()}
    assert set(txns) == {ids["open_txn"], ids["aborted_txn"]}
    assert txns[ids["open_txn"]].write_ids == {uw.ORDERS: 6}
    assert txns[ids["aborted_txn"]].abort_reason == "test abort"
    (lock,) = ui.locks()
    assert (lock.lock_id, lock.txn_id, lock.table, lock.lock_type, lock.state) == (
        ids["lock_id"],
        ids["open_txn"],
        uw.ORDERS,
        "shared_write",
        "acquired",
    )


def test_recently_aborted_window():
    now = datetime(2024, 1, 2, tzinfo=timezone.utc)

    def t(i, state, ended):
        return TxnRow(i, state, now, now, ended, None, None, None, None, {})

    rows = [
        t(3, "aborted", now - timedelta(hours=30)),
        t(1, "open", None),
        t(2, "aborted", now - timedelta(hours=1)),
        t(4, "committed", now),
    ]
    assert [r.txn_id for r in recent_transactions(rows, now=now)] == [1, 2]
    assert [r.txn_id for r in recent_transactions(rows, now=now, aborted_window=None)] == [1, 2, 3]


def test_table_detail(ui):
    d = ui.table("SALES.orders")
    assert d.summary.name == uw.ORDERS
    got = {c.write_id: (c.rows_inserted, c.rows_updated, c.rows_deleted) for c in d.commits}
    assert got == uw.EXPECTED[uw.ORDERS]["commits"]
    first = d.commits[0]
    assert first.batch_id == uw.BATCH_ID and first.operations == ["insert"]
    assert first.files == 1 and first.bytes > 0
    assert all(c.batch_id is None for c in d.commits[1:])
    (p,) = d.partitions
    assert p.base == uw.EXPECTED[uw.ORDERS]["base"]
    assert p.deltas == ["delta_0000004_0000004_0000"] and p.delete_deltas == []
    assert p.aborted == ["delta_0000005_0000005_0000"]
    assert [w[2] for w in d.write_ids] == ["committed"] * 4 + ["aborted", "open"]
    json.dumps(to_jsonable(d))  # JSON-able
    cust = ui.table(uw.CUSTOMERS)
    assert [p.partition for p in cust.partitions] == ["ds=2024-01-01", "ds=2024-01-02"]
    assert cust.partitions[0].delete_deltas == ["delete_delta_0000003_0000003_0000"]


def test_unknown_table_and_unmigrated_catalog(ui, tmp_path):
    from acidflow.catalog import NoSuchTableError, SqlCatalog

    with pytest.raises(NoSuchTableError):
        ui.table("sales.nope")
    empty = AcidUiData(
        SqlCatalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path), migrate=False)
    )
    with pytest.raises(CatalogNotReadyError):
        empty.check_ready()


def test_html_escapes_and_chart(ui):
    ov = ui.overview()
    html = render.overview_page(ov, "/acidflow", "<admin>")
    assert "&lt;admin&gt;" in html and "<admin>" not in html
    assert 'href="/acidflow/tables/sales.orders"' in html
    assert "ready for cleaning" not in html or "s-ready-for-cleaning" in html
    for word in ("SHOW COMPACTIONS", "SHOW LOCKS", "high watermark", "delete deltas"):
        assert word in html
    page = render.table_page(ui.table(uw.ORDERS), "/acidflow")
    assert page.count("<svg") == 1 and 'id="rows-chart"' in page
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert uw.BATCH_ID[:16] in page
    assert render.rows_chart([]).count("no commits") == 1
    assert render.fmt_bytes(1536) == "1.5 KiB" and render.fmt_duration(125) == "2 min 5 s"


class StubAuth:
    """Accepts the token ``good`` (user ``alice``) and ``viewer-no`` (not authorized)."""

    async def user_from_token(self, token):
        if token not in ("good", "viewer-no"):
            raise ValueError("bad token")
        return token

    def is_authorized(self, user):
        return user == "good"

    def user_name(self, user):
        return "alice"

    def login_url(self, next_url):
        return "/auth/login?next=" + next_url


@pytest.fixture(scope="module")
def client(ui):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from acidflow_ui.app import create_app

    root = FastAPI()
    root.mount("/acidflow", create_app(lambda: ui, StubAuth()))
    with TestClient(root) as c:
        yield c


def test_app_refuses_without_valid_token(client):
    for path in (
        "/acidflow/",
        "/acidflow/tables/sales.orders",
        "/acidflow/api/overview",
        "/acidflow/api/tables",
        "/acidflow/api/locks",
        "/acidflow/api/compactions",
        "/acidflow/api/transactions",
        "/acidflow/api/tables/sales.orders",
    ):
        r = client.get(path, follow_redirects=False)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith("Bearer")
        r = client.get(path, headers={"Authorization": "Bearer nope"})
        assert r.status_code == 401, path
        r = client.get(path, headers={"Authorization": "Bearer viewer-no"})
        assert r.status_code == 403, path
        r = client.get(path, cookies={"_token": "nope"})
        assert r.status_code == 401, path
    r = client.get("/acidflow/", headers={"Accept": "text/html"}, follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == "/auth/login?next=/acidflow/"
    assert (
        client.get("/acidflow/login", params={"token": "nope"}, follow_redirects=False).status_code
        == 401
    )


def test_app_pages_with_token(client):
    auth = {"Authorization": "Bearer good"}
    r = client.get("/acidflow/", headers=auth)
    assert r.status_code == 200 and "sales.orders" in r.text and "alice" in r.text
    assert r.headers["cache-control"] == "no-store"
    r = client.get("/acidflow/tables/sales.orders", headers=auth)
    assert r.status_code == 200 and 'id="rows-chart"' in r.text
    assert client.get("/acidflow/tables/sales.nope", headers=auth).status_code == 404
    assert client.get("/acidflow/api/tables/nope.nope", headers=auth).status_code == 404
    tables = client.get("/acidflow/api/tables", headers=auth).json()
    assert {t["name"]: t["high_watermark"] for t in tables} == {uw.ORDERS: 6, uw.CUSTOMERS: 3}
    # Airflow's own session cookie works, and so does /login's cookie
    assert client.get("/acidflow/api/locks", cookies={"_token": "good"}).status_code == 200
    r = client.get("/acidflow/login", params={"token": "good"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/acidflow/"
    cookie = r.headers["set-cookie"]
    # next: only a page of this app, as the browser resolves it
    for next_url, expected in (
        ("/acidflow/tables/sales.orders?x=1", "/acidflow/tables/sales.orders?x=1"),
        ("/acidflow/../admin", "/acidflow/"),
        ("/acidflow/%2e%2e/admin", "/acidflow/"),
        ("/acidflow/%2E%2E%2Fadmin", "/acidflow/"),
        ("/acidflow/./x", "/acidflow/"),
        ("/acidflow//evil.example", "/acidflow/"),
        ("/acidflow/%2F%2Fevil.example", "/acidflow/"),
        ("/acidflow/\\evil.example", "/acidflow/"),
        ("https://evil.example/acidflow/", "/acidflow/"),
        ("/other/", "/acidflow/"),
        ("/acidflow/x\r\nSet-Cookie: a=b", "/acidflow/"),
    ):
        got = client.get(
            "/acidflow/login", params={"token": "good", "next": next_url}, follow_redirects=False
        )
        assert (got.status_code, got.headers["location"]) == (303, expected), next_url
    assert "acidflow_token=good" in cookie and "HttpOnly" in cookie and "Path=/acidflow" in cookie
    client.cookies.set("acidflow_token", "good")
    try:
        assert client.get("/acidflow/").status_code == 200
    finally:
        client.cookies.clear()
