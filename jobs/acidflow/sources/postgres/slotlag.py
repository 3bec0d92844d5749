"""Replication-slot lag of a PostgreSQL source, for the ``acidflow health`` check.

The lag of a logical slot is the WAL the server keeps for it: ``pg_wal_lsn_diff(
pg_current_wal_lsn(), confirmed_flush_lsn)`` in bytes (``pg_replication_slots``). A pull that
keeps up advances ``confirmed_flush_lsn`` (:func:`acidflow.sources.postgres.pull.advance_slot`);
a growing lag means the CDC DAG is not running or failing, and the server's disk fills with WAL.
"""

from __future__ import annotations

from typing import Iterable

from acidflow._extras import require
from acidflow.sources.postgres.connection import PullError, connect


def slot_lags(dsn: str, slots: Iterable[str]) -> dict[str, int | None]:
    """WAL bytes each slot lags behind ``pg_current_wal_lsn()``.

    Args:
        dsn: libpq string or URL of the slot's database (a SQLAlchemy URL works too).
        slots: slot names.
    Returns:
        slot -> lag in bytes (0 when the slot is current); ``None`` for a slot that does not
        exist; a slot that never confirmed a position counts from its ``restart_lsn``.
    Raises:
        PullError: cannot connect or query (the reason, never the password).
    """
    require("psycopg2", "postgres", "a PostgreSQL source")
    import psycopg2  # deferred: optional driver, needed only when a PostgreSQL source is used

    names = list(dict.fromkeys(slots))
    conn = connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), "
                "coalesce(confirmed_flush_lsn, restart_lsn))::bigint "
                "FROM pg_replication_slots WHERE slot_name = ANY(%s)",
                (names,),
            )
            found = {row[0]: max(0, int(row[1] or 0)) for row in cur.fetchall()}
    except psycopg2.Error as exc:
        raise PullError(f"cannot read pg_replication_slots: {str(exc).strip()}") from exc
    finally:
        conn.close()
    return {s: found.get(s) for s in names}
