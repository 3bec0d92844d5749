"""The FastAPI app of the "ACID tables" page (mounted by Airflow under ``/acidflow``).

Routes (all read-only, all authenticated, see :mod:`acidflow_ui.auth`):

=============================  ===============================================================
``GET /``                      tables, SHOW COMPACTIONS, transactions, locks (HTML)
``GET /tables/{name}``         a table: AcidState, rows-per-commit chart, commit history (HTML)
``GET /api/overview``          the main page's data as JSON (also ``/api/tables``,
                               ``/api/tables/{name}``, ``/api/compactions``,
                               ``/api/transactions``, ``/api/locks``)
``GET /login?token=<jwt>``     checks an Airflow JWT, stores it in an HttpOnly cookie scoped to
                               the prefix, redirects to ``/`` (or ``next``, a page of this app)
=============================  ===============================================================

Unauthenticated requests get 401 (JSON, ``WWW-Authenticate: Bearer``); a browser asking for an
HTML page without a valid session is redirected to Airflow's login page instead. A user the auth
manager does not allow to view plugins gets 403.

The catalog is opened once per process, lazily, from ``ACIDFLOW_CATALOG_URL`` /
``ACIDFLOW_WAREHOUSE`` (never migrated from here).
"""

from __future__ import annotations

import threading
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from acidflow.catalog import NoSuchTableError

from . import render
from .auth import COOKIE_NAME, AirflowAuthenticator, AuthenticatedUser, Authenticator, AuthError
from .auth import authenticate as _authenticate
from .data import AcidUiData, CatalogNotReadyError, to_jsonable

NO_STORE = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def safe_next(next_url: str, base: str) -> str | None:
    """``next_url`` when it is a page of this app (a path under ``base + "/"``, as the browser
    will resolve it), else None: no scheme or host, no backslash, no ``.``/``..`` segment
    (plain or percent-encoded, which browsers resolve before requesting), no control
    character, and the decoded path still under the prefix. The login redirect goes only there
    (no open redirect, and no redirect to another page of the same site).

    Example: ``safe_next("/acidflow/tables/db.t?x=1", "/acidflow")`` -> the same string;
    ``safe_next("/acidflow/../admin", "/acidflow")`` -> None.
    """
    prefix = f"{base}/"
    if not next_url.startswith(prefix) or "\\" in next_url:
        return None
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in next_url):
        return None
    parts = urlsplit(next_url)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    if "//" in path or "\\" in path or not path.startswith(prefix):
        return None
    if any(seg in (".", "..") for seg in path.split("/")):
        return None
    return next_url


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _wants_html(request: Request) -> bool:
    return (
        request.method == "GET"
        and not request.url.path.startswith(_base(request) + "/api/")
        and "text/html" in request.headers.get("accept", "")
    )


def create_app(
    data_factory: Callable[[], AcidUiData] | None = None, authenticator: Authenticator | None = None
) -> FastAPI:
    """Build the app.

    Args:
        data_factory: returns the :class:`AcidUiData` to read from; called once, on the first
            authenticated request (default :meth:`AcidUiData.from_settings`).
        authenticator: default :class:`AirflowAuthenticator` (Airflow's auth manager).
    Returns:
        A FastAPI app with no docs routes (``/docs`` would be unauthenticated).
    """
    auth = authenticator or AirflowAuthenticator()
    factory = data_factory or AcidUiData.from_settings
    state: dict[str, Any] = {}
    lock = threading.Lock()

    def data() -> AcidUiData:
        with lock:
            if "data" not in state:
                state["data"] = factory()
            return state["data"]

    app = FastAPI(title="acidflow ACID tables", docs_url=None, redoc_url=None, openapi_url=None)

    async def require_user(request: Request) -> AuthenticatedUser:
        return await _authenticate(request, auth)

    @app.exception_handler(AuthError)
    async def _refused(request: Request, exc: AuthError) -> Response:
        if exc.status == 401 and not exc.explicit and _wants_html(request):
            here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            login = auth.login_url(here)
            if login:
                return RedirectResponse(login, status_code=302, headers=NO_STORE)
        headers = dict(NO_STORE)
        if exc.status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="airflow"'
        return JSONResponse({"detail": exc.reason}, status_code=exc.status, headers=headers)

    @app.exception_handler(CatalogNotReadyError)
    async def _not_ready(request: Request, exc: CatalogNotReadyError) -> Response:
        if request.url.path.startswith(_base(request) + "/api/"):
            return JSONResponse({"detail": str(exc)}, status_code=503, headers=NO_STORE)
        return HTMLResponse(
            render.message_page("Catalog not ready", str(exc), _base(request)),
            status_code=503,
            headers=NO_STORE,
        )

    def ready() -> AcidUiData:
        d = data()
        d.check_ready()
        return d

    def not_found(request: Request, name: str, exc: Exception, as_json: bool) -> Response:
        if as_json:
            return JSONResponse({"detail": str(exc)}, status_code=404, headers=NO_STORE)
        return HTMLResponse(
            render.message_page(f"No table {name}", str(exc), _base(request)),
            status_code=404,
            headers=NO_STORE,
        )

    # -- HTML ----------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def index(request: Request, user: AuthenticatedUser = Depends(require_user)) -> Response:
        d = ready()
        window = d.aborted_window
        note = f" (last {window.total_seconds() / 3600:g} h)" if window else ""
        return HTMLResponse(
            render.overview_page(d.overview(), _base(request), user.name, note), headers=NO_STORE
        )

    @app.get("/tables/{name}", response_class=HTMLResponse)
    def table_page(
        name: str, request: Request, user: AuthenticatedUser = Depends(require_user)
    ) -> Response:
        d = ready()
        try:
            detail = d.table(name)
        except (NoSuchTableError, ValueError) as exc:
            return not_found(request, name, exc, as_json=False)
        return HTMLResponse(render.table_page(detail, _base(request), user.name), headers=NO_STORE)

    # -- JSON ----------------------------------------------------------------------------
    def js(value: Any) -> JSONResponse:
        return JSONResponse(to_jsonable(value), headers=NO_STORE)

    @app.get("/api/overview")
    def api_overview(user: AuthenticatedUser = Depends(require_user)) -> Response:
        return js(ready().overview())

    @app.get("/api/tables")
    def api_tables(user: AuthenticatedUser = Depends(require_user)) -> Response:
        return js(ready().tables())

    @app.get("/api/tables/{name}")
    def api_table(
        name: str, request: Request, user: AuthenticatedUser = Depends(require_user)
    ) -> Response:
        try:
            return js(ready().table(name))
        except (NoSuchTableError, ValueError) as exc:
            return not_found(request, name, exc, as_json=True)

    @app.get("/api/compactions")
    def api_compactions(user: AuthenticatedUser = Depends(require_user)) -> Response:
        return js(ready().compactions())

    @app.get("/api/transactions")
    def api_transactions(user: AuthenticatedUser = Depends(require_user)) -> Response:
        return js(ready().transactions())

    @app.get("/api/locks")
    def api_locks(user: AuthenticatedUser = Depends(require_user)) -> Response:
        return js(ready().locks())

    # -- session -------------------------------------------------------------------------
    @app.get("/login")
    async def login(request: Request, token: str = "", next: str = "") -> Response:
        """Exchange an Airflow JWT for an HttpOnly cookie (the JWT itself, scoped to the
        prefix) and redirect to ``next`` (a path under the prefix; default the main page);
        401 for a missing or invalid token."""
        if not token:
            raise AuthError(401, "missing token parameter", explicit=True)
        try:
            user = await auth.user_from_token(token)
        except Exception:  # noqa: BLE001 - invalid / expired / revoked
            raise AuthError(401, "invalid or expired token", explicit=True) from None
        if not auth.is_authorized(user):
            raise AuthError(403, "this user may not view plugin pages", explicit=True)
        base = _base(request)
        target = safe_next(next, base) or f"{base}/"
        resp = RedirectResponse(target, status_code=303, headers=NO_STORE)
        resp.set_cookie(
            COOKIE_NAME,
            token,
            path=base or "/",
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return resp

    return app
