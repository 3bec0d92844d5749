"""Replication-slot lag for ``acidflow health`` on a real PostgreSQL 15 (``wal_level=logical``):
a logical slot (the built-in ``test_decoding`` plugin; the lag does not depend on the plugin)
falls behind while writes go on, and catches up when advanced."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from acidflow.cli import app
from acidflow.sources.postgres.connection import PullError, connect
from acidflow.sources.postgres.slotlag import slot_lags

pytestmark = [pytest.mark.postgres]


@pytest.fixture
def slot_db(postgres_url):
    conn = connect(postgres_url)
    with conn.cursor() as cur:
        cur.execute("SELECT pg_create_logical_replication_slot('health_lag', 'test_decoding')")
        cur.execute("CREATE TABLE health_filler (id serial PRIMARY KEY, pad text)")
    yield conn
    with conn.cursor() as cur:
        cur.execute("SELECT pg_drop_replication_slot('health_lag')")
        cur.execute("DROP TABLE health_filler")
    conn.close()


def test_slot_lag_grows_with_writes_and_alerts(slot_db, postgres_url, warehouse):
    start = slot_lags(postgres_url, ["health_lag", "nope"])
    assert start["nope"] is None and 0 <= start["health_lag"] < 1 << 20
    with slot_db.cursor() as cur:
        cur.execute(
            "INSERT INTO health_filler (pad) SELECT repeat('x', 1000) FROM generate_series(1, 3000)"
        )
    grown = slot_lags(postgres_url, ["health_lag"])["health_lag"]
    assert grown > start["health_lag"] + 2_000_000  # ~3 MB of WAL behind the slot

    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "health",
            "--json",
            "--slot-dsn",
            postgres_url,
            "--slot",
            "health_lag,nope",
            "--slot-lag-max",
            str(1 << 20),
        ],
    )
    assert res.exit_code == 1, res.output
    report = json.loads(res.output.splitlines()[-1])
    assert [f["kind"] for f in report["findings"]] == ["slot-lag", "slot-missing"]
    assert report["findings"][0]["details"]["slot"] == "health_lag"

    with slot_db.cursor() as cur:
        cur.execute("SELECT pg_replication_slot_advance('health_lag', pg_current_wal_lsn())")
    res = runner.invoke(
        app,
        [
            "health",
            "--json",
            "--slot-dsn",
            postgres_url,
            "--slot",
            "health_lag",
            "--slot-lag-max",
            str(1 << 20),
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.splitlines()[-1])["slots"]["health_lag"] < 1 << 20


def test_unreachable_source_is_an_error_not_healthy(warehouse):
    with pytest.raises(PullError, match="cannot connect"):
        slot_lags("postgresql://nobody@127.0.0.1:1/x", ["s"])
    res = CliRunner().invoke(app, ["health", "--slot-dsn", "postgresql://nobody@127.0.0.1:1/x"])
    assert res.exit_code == 2 and "replication slots" in res.output
