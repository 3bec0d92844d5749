"""Authentication of the "ACID tables" endpoints with Airflow's own JWTs.

Airflow does not protect plugin FastAPI apps, so every route of :mod:`acidflow_ui.app`
depends on :func:`require_user`. A request is authenticated by the first credential that
Airflow's auth manager accepts, in this order:

1. ``Authorization: Bearer <jwt>`` (a token from ``POST /auth/token``); when this header is
   present it is the only credential considered (an explicit credential wins, as in Airflow);
2. the ``_token`` cookie the Airflow UI sets after login (so the page works inside the Airflow UI);
3. the ``acidflow_token`` cookie set by ``GET <prefix>/login?token=<jwt>`` (scripts, headless
   browsers), scoped to the plugin's URL prefix, HttpOnly.

Tokens are validated with ``get_auth_manager().get_user_from_token`` (signature, expiry,
audience, revocation), the same call Airflow's REST API makes; the user must then be allowed to
view plugins (``is_authorized_view(AccessView.PLUGINS)``). No passwords are handled here.

Airflow is imported only when a request is checked, so the module imports without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import Request

#: Our cookie (set by ``/login``), distinct from Airflow's ``_token``.
COOKIE_NAME = "acidflow_token"
#: Airflow's session cookie (``airflow.api_fastapi.auth.managers.base_auth_manager``).
AIRFLOW_COOKIE_NAME = "_token"


class AuthError(Exception):
    """A request is refused.

    Attributes:
        status: 401 (no or invalid credentials) or 403 (valid user, not allowed).
        reason: short text for the response.
        explicit: the refused credential was an ``Authorization`` header (never redirect).
    """

    def __init__(self, status: int, reason: str, explicit: bool = False) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.explicit = explicit


@dataclass(frozen=True)
class AuthenticatedUser:
    """Who the request belongs to: ``name`` for display, ``user`` the auth manager's object."""

    name: str
    user: Any


class Authenticator(Protocol):
    """What the app needs from an auth backend (Airflow's, or a stub in tests)."""

    async def user_from_token(self, token: str) -> Any:
        """The user of a valid token; raises any exception for an invalid one."""

    def is_authorized(self, user: Any) -> bool:
        """May ``user`` see the page?"""

    def user_name(self, user: Any) -> str:
        """Display name."""

    def login_url(self, next_url: str) -> str | None:
        """Where a browser without a valid session logs in (``None``: answer 401)."""


def _auth_manager() -> Any:
    """The running Airflow's auth manager (``airflow.api_fastapi.app.get_auth_manager()``)."""
    # deferred: airflow only when a request is checked; the module imports without it
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager()


class AirflowAuthenticator:
    """:class:`Authenticator` backed by the running Airflow's auth manager."""

    async def user_from_token(self, token: str) -> Any:
        """Validate an Airflow JWT (raises ``jwt.InvalidTokenError`` and subclasses such as
        ``ExpiredSignatureError``)."""
        return await _auth_manager().get_user_from_token(token)

    def is_authorized(self, user: Any) -> bool:
        """``is_authorized_view(access_view=AccessView.PLUGINS)``."""
        # deferred: same reason as _auth_manager (Airflow imported only when a request is checked)
        from airflow.api_fastapi.auth.managers.models.resource_details import AccessView

        return bool(_auth_manager().is_authorized_view(access_view=AccessView.PLUGINS, user=user))

    def user_name(self, user: Any) -> str:
        """``user.get_name()``."""
        try:
            return str(user.get_name())
        except Exception:  # noqa: BLE001 - display only
            return "?"

    def login_url(self, next_url: str) -> str | None:
        """The auth manager's login page with ``next`` pointing back here."""
        try:
            return _auth_manager().get_url_login(next_url=next_url)
        except Exception:  # noqa: BLE001 - fall back to a plain 401
            return None


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header, ``""`` for a malformed one, ``None``
    when the header is absent."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def authenticate(request: Request, auth: Authenticator) -> AuthenticatedUser:
    """Check the request's credentials (module doc for the order).

    Returns:
        The :class:`AuthenticatedUser`.
    Raises:
        AuthError: 401 without a valid credential, 403 when the user may not view the page.
    """
    explicit = bearer_token(request)
    if explicit is not None:
        candidates = [explicit] if explicit else []
        if not candidates:
            raise AuthError(
                401, "malformed Authorization header (expected 'Bearer <token>')", explicit=True
            )
    else:
        candidates = [
            t
            for t in (request.cookies.get(AIRFLOW_COOKIE_NAME), request.cookies.get(COOKIE_NAME))
            if t
        ]
    if not candidates:
        raise AuthError(401, "not authenticated")
    user = None
    for token in candidates:
        try:
            user = await auth.user_from_token(token)
            break
        except Exception:  # noqa: BLE001 - invalid, expired, revoked: try the next one
            continue
    if user is None:
        raise AuthError(401, "invalid or expired token", explicit=explicit is not None)
    if not auth.is_authorized(user):
        raise AuthError(403, "this user may not view plugin pages", explicit=explicit is not None)
    return AuthenticatedUser(auth.user_name(user), user)
