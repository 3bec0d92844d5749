"""Connections to a PostgreSQL source database (psycopg2), shared by the slot pull and the source
snapshots, and the error both raise."""

from __future__ import annotations

import re
from typing import Any

from acidflow._extras import require
from acidflow.errors import AcidflowError


class PullError(AcidflowError, RuntimeError):
    """A PostgreSQL source operation cannot proceed: cannot connect, missing slot, wrong plugin,
    malformed slot output, busy landing directory ... The message names the slot, file or LSN
    and the reason (never the password)."""


def libpq_dsn(dsn: str) -> str:
    """A libpq connection string or URL for psycopg2; SQLAlchemy URLs
    (``postgresql+psycopg2://...``) lose their ``+driver``."""
    return re.sub(r"^postgres(?:ql)?\+[A-Za-z0-9_]+://", "postgresql://", dsn.strip())


def connect(dsn: str) -> Any:
    """psycopg2 connection (autocommit) to ``dsn`` (libpq string, URL or SQLAlchemy URL).

    Raises:
        PullError: cannot connect (the reason from libpq, without the password).
    """
    require("psycopg2", "postgres", "a PostgreSQL source")
    import psycopg2  # deferred: optional driver, needed only when a PostgreSQL source is used

    try:
        conn = psycopg2.connect(libpq_dsn(dsn))
    except psycopg2.OperationalError as exc:
        raise PullError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from exc
    conn.autocommit = True
    return conn
