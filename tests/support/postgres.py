"""The private PostgreSQL cluster of the tests: :mod:`devservers.postgres` (moved there so the
demos can start one too), re-exported under its old name, plus the pytest skips."""

from __future__ import annotations

from devservers.postgres import (
    DEFAULT_BINDIR,
    FAST_SETTINGS,
    LOGICAL_SETTINGS,
    OS_USER,
    SUPERUSER,
    PostgresCluster,
    _conf_value,
    bindir,
    create_database,
    drop_database,
    free_port,
    quote_ident,
    unavailable_reason,
    wal2json_unavailable_reason,
)

__all__ = [
    "DEFAULT_BINDIR",
    "FAST_SETTINGS",
    "LOGICAL_SETTINGS",
    "OS_USER",
    "SUPERUSER",
    "PostgresCluster",
    "_conf_value",
    "bindir",
    "create_database",
    "drop_database",
    "free_port",
    "quote_ident",
    "require_postgres",
    "require_wal2json",
    "unavailable_reason",
    "wal2json_unavailable_reason",
]


def require_wal2json() -> None:
    """``pytest.skip`` with the reason when wal2json (or PostgreSQL) is not available."""
    reason = wal2json_unavailable_reason()
    if reason:
        import pytest

        pytest.skip(reason)


def require_postgres() -> None:
    """``pytest.skip`` with the reason when a private cluster cannot be started."""
    reason = unavailable_reason()
    if reason:
        import pytest

        pytest.skip(reason)
