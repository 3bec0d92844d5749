"""The private PostgreSQL cluster of the tests: :mod:`devservers.postgres` (moved there so the
demos can start one too), re-exported under its old name, plus the pytest skips."""

from __future__ import annotations

import time
from typing import Any

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
    "drop_replication_slot",
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


def drop_replication_slot(cur: Any, slot: str, timeout_s: float = 30.0) -> None:
    """Drop the logical replication slot ``slot`` (if it exists) with the cursor ``cur`` of an
    autocommit connection, first waiting up to ``timeout_s`` seconds for its consumer (a deleted
    Debezium connector) to let go of it: PostgreSQL refuses to drop an active slot."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        row = cur.fetchone()
        if row is None or not row[0]:
            break
        time.sleep(0.25)
    cur.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    )
