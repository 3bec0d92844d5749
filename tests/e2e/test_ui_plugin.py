"""End to end: the ``acidflow`` plugin inside a real ``airflow api-server``.

A private ``AIRFLOW_HOME`` (SQLite metadata, simple auth manager, plugins folder = this
repository's ``plugins/``) and a temporary warehouse filled by ``tests.support.ui_warehouse``.
The test logs in with ``POST /auth/token``, checks that the plugin's endpoints refuse requests
without a valid Airflow JWT, that Airflow lists the plugin with its "ACID tables" view, then
opens the page in headless Chromium and keeps a screenshot
(``$ACIDFLOW_TEST_ARTIFACTS`` or ``<repo>/build/test-artifacts``; ``acid_tables.png`` and
``acid_table_orders.png``).

The server runs in its own process group (``setsid``) that is killed at the end, also on failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support import ui_warehouse as uw

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
PASSWORD = "acidflow-e2e-admin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(
    url: str,
    *,
    method: str = "GET",
    headers: dict | None = None,
    data: bytes | None = None,
    timeout: float = 30,
) -> tuple[int, dict, bytes]:
    """(status, headers, body) without following redirects."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _artifacts_dir() -> Path:
    d = Path(os.environ.get("ACIDFLOW_TEST_ARTIFACTS") or REPO / "build" / "test-artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def chromium():
    path = _chromium()
    if path is None:
        pytest.skip(
            "chromium is not installed (`make system-deps` installs the Debian package `chromium`)"
        )
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A running api-server: yields ``(base_url, ids from ui_warehouse.build)``."""
    from acidflow.catalog import SqlCatalog

    root = tmp_path_factory.mktemp("airflow-e2e")
    home, wh, dags = root / "airflow_home", root / "warehouse", root / "dags"
    for d in (home, wh, dags):
        d.mkdir()
    catalog_url = f"sqlite:///{wh / '_acidflow_catalog.db'}"
    cat = SqlCatalog(catalog_url, warehouse=str(wh))
    ids = uw.build(cat)
    cat.close()

    pw_file = home / "simple_auth_manager_passwords.json.generated"
    pw_file.write_text(json.dumps({"admin": PASSWORD}))
    port = _free_port()
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(pw_file),
            "AIRFLOW__API_AUTH__JWT_SECRET": "acidflow-e2e-jwt-secret-0123456789abcdef",
            "AIRFLOW__API__SECRET_KEY": "acidflow-e2e-secret-key",
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "ACIDFLOW_WAREHOUSE": str(wh),
            "ACIDFLOW_CATALOG_URL": catalog_url,
            "PYTHONPATH": os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p]),
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    airflow = str(BIN / "airflow")
    mig = subprocess.run(
        [airflow, "db", "migrate"], env=env, capture_output=True, text=True, timeout=180
    )
    assert mig.returncode == 0, mig.stdout[-2000:] + mig.stderr[-4000:]
    log = open(root / "api-server.log", "wb")
    proc = subprocess.Popen(
        [
            "setsid",
            airflow,
            "api-server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    "api-server exited:\n" + (root / "api-server.log").read_text()[-4000:]
                )
            try:
                status, _, _ = _request(base + "/api/v2/monitor/health", timeout=3)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    "api-server not healthy after 120 s:\n"
                    + (root / "api-server.log").read_text()[-4000:]
                )
            time.sleep(0.5)
        yield base, ids, root
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # setsid: the server's pid is its group id
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def token(server):
    base, _, _ = server
    status, _, body = _request(
        base + "/auth/token",
        method="POST",
        headers={"Content-Type": "application/json"},
        data=json.dumps({"username": "admin", "password": PASSWORD}).encode(),
    )
    assert status == 201, body
    return json.loads(body)["access_token"]


def test_endpoints_refuse_without_valid_token(server, token):
    base, _, _ = server
    for path in (
        "/acidflow/",
        "/acidflow/api/overview",
        "/acidflow/api/tables",
        "/acidflow/tables/sales.orders",
        "/acidflow/api/locks",
    ):
        status, headers, _ = _request(base + path)
        assert status == 401, path
        status, _, _ = _request(base + path, headers={"Authorization": "Bearer not.a.jwt"})
        assert status == 401, path
        # a JWT with the right shape but signed with another key
        forged = token.rsplit(".", 1)[0] + ".c2lnbmF0dXJl"
        status, _, _ = _request(base + path, headers={"Cookie": f"_token={forged}"})
        assert status == 401, path
    status, headers, _ = _request(base + "/acidflow/", headers={"Accept": "text/html"})
    assert status == 302 and headers["location"].startswith("/auth/login?next=")
    status, _, _ = _request(base + "/acidflow/login?token=not.a.jwt")
    assert status == 401


def test_api_with_token_and_plugin_registered(server, token):
    base, ids, _ = server
    auth = {"Authorization": f"Bearer {token}"}
    status, _, body = _request(base + "/acidflow/api/overview", headers=auth)
    assert status == 200, body
    ov = json.loads(body)
    tables = {t["name"]: t for t in ov["tables"]}
    assert tables[uw.ORDERS]["high_watermark"] == 6
    assert tables[uw.ORDERS]["open_write_ids"] == [6]
    assert {c["id"]: c["state"] for c in ov["compactions"]} == {
        ids["done_compaction"]: "succeeded",
        ids["queued_compaction"]: "initiated",
    }
    assert [lk["lock_id"] for lk in ov["locks"]] == [ids["lock_id"]]
    # the Airflow UI's own cookie is accepted too
    status, _, _ = _request(base + "/acidflow/api/locks", headers={"Cookie": f"_token={token}"})
    assert status == 200
    status, _, body = _request(base + "/api/v2/plugins", headers=auth)
    assert status == 200, body
    plugins = {p["name"]: p for p in json.loads(body)["plugins"]}
    views = plugins["acidflow"]["external_views"]
    assert [(v["name"], v["href"], v["url_route"], v["destination"]) for v in views] == [
        ("ACID tables", "/acidflow/", "acid-tables", "nav")
    ]
    assert plugins["acidflow"]["fastapi_apps"][0]["url_prefix"] == "/acidflow"


def _chrome(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        timeout=90,
    )


def test_page_in_headless_chromium(server, token, chromium):
    base, ids, root = server
    out = _artifacts_dir()
    login = f"{base}/acidflow/login?{urllib.parse.urlencode({'token': token})}"

    dom = _chrome(chromium, root / "chrome-dom", "--dump-dom", login)
    assert dom.returncode == 0, dom.stderr[-3000:]
    text = dom.stdout.decode()
    assert "ACID tables" in text and uw.ORDERS in text and uw.CUSTOMERS in text
    row = re.search(r'<tr><td><a href="/acidflow/tables/sales\.orders">.*?</tr>', text, re.S)
    assert row, text[:3000]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    assert cells[1] == "6"  # high watermark
    assert cells[2].startswith("1 ") and "write ids 6" in cells[2]  # open txns
    assert "major" in cells[7] and "succeeded" in cells[7] and "initiated" in cells[7]
    comp = re.search(r'id="compactions-table".*?</table>', text, re.S).group(0)
    assert "test-worker-1" in comp and "MAJOR" in comp and "MINOR" in comp
    assert "ready for cleaning" not in comp  # cleaned: succeeded
    locks = re.search(r'id="locks-table".*?</table>', text, re.S).group(0)
    assert "shared_write" in locks and "acquired" in locks

    shot = out / "acid_tables.png"
    shot.unlink(missing_ok=True)
    res = _chrome(
        chromium, root / "chrome-shot", f"--screenshot={shot}", "--window-size=1400,1000", login
    )
    assert res.returncode == 0 and shot.exists() and shot.stat().st_size > 10_000, res.stderr[
        -3000:
    ]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # a table's page: commit history numbers and the chart
    tlogin = login + "&" + urllib.parse.urlencode({"next": "/acidflow/tables/sales.orders"})
    page = _chrome(chromium, root / "chrome-table", "--dump-dom", tlogin)
    assert page.returncode == 0, page.stderr[-3000:]
    ptext = page.stdout.decode()
    assert 'id="rows-chart"' in ptext and "base_0000003" in ptext
    commits = re.search(r'id="commits-table".*?</table>', ptext, re.S).group(0)
    rows = re.findall(r"<tr><td[^>]*>(\d+)</td>(.*?)</tr>", commits, re.S)
    got = {}
    for wid, rest in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", rest, re.S)
        got[int(wid)] = tuple(int(c.replace(",", "")) for c in cells[4:7])
    assert got == uw.EXPECTED[uw.ORDERS]["commits"]
    assert uw.BATCH_ID[:16] in commits
    tshot = out / "acid_table_orders.png"
    tshot.unlink(missing_ok=True)
    res = _chrome(
        chromium,
        root / "chrome-table-shot",
        f"--screenshot={tshot}",
        "--window-size=1400,1000",
        tlogin,
    )
    assert res.returncode == 0 and tshot.exists(), res.stderr[-3000:]
