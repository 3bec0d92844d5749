"""acidflow.sources.postgres.pull against a real PostgreSQL 15 with wal2json (private cluster, no mocks).

Every test creates its own database with two slots made before any write: ``main`` (pulled)
and ``ref`` (only peeked, never advanced). The reference for "nothing lost, nothing doubled"
is a fresh ``pg_logical_slot_peek_changes`` of ``ref`` with the same options.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from acidflow.sources.postgres import pull as P
from acidflow.sources.postgres.connection import connect
from acidflow.sources.postgres.lsn import format_lsn, parse_lsn

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
_db_ids = itertools.count()


@pytest.fixture(scope="module")
def pg():
    from tests.support.postgres import LOGICAL_SETTINGS, PostgresCluster, require_wal2json

    require_wal2json()
    with PostgresCluster(settings=LOGICAL_SETTINGS) as cluster:
        yield cluster


@pytest.fixture
def db(pg):
    """A fresh database with table t and slots main + ref; returns (name, libpq URL)."""
    name = f"cdc{next(_db_ids)}"
    pg.create_database(name)
    url = pg.libpq_url(name)
    conn = connect(url)
    P.ensure_slot(conn, "main")
    P.ensure_slot(conn, "ref")
    conn.close()
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text, c char(5), n numeric(10,2))", name)
    yield name, url
    pg.drop_database(name)


def workload(pg, dbname: str, start: int, n_txn: int = 12) -> None:
    """Single-row and multi-row transactions with inserts, updates, key changes and deletes."""
    for i in range(start, start + n_txn):
        pg.execute(f"INSERT INTO t VALUES ({i}, 'v{i}', 'c', {i}.50)", dbname)
        if i % 3 == 0:
            pg.execute(f"UPDATE t SET v = 'u{i}', id = id + 100000 WHERE id = {i}", dbname)
        if i % 4 == 0:
            pg.execute(f"DELETE FROM t WHERE id = {i}", dbname)
    # one transaction bigger than a peek chunk: never split across files
    pg.execute(
        f"INSERT INTO t SELECT g, 'big', NULL, NULL FROM generate_series("
        f"{start + 50000}, {start + 50039}) g",
        dbname,
    )


def reference_lines(pg, dbname: str) -> list[str]:
    opts = ", ".join(f"'{k}', '{v}'" for k, v in P.WAL2JSON_OPTIONS)
    rows = pg.execute(
        f"SELECT lsn::text, xid::text, data FROM "
        f"pg_logical_slot_peek_changes('ref', NULL, NULL, {opts})",
        dbname,
    )
    return [ln for u in P.split_transactions(rows, slot="ref") for ln in u.lines]


def landed_lines(landing: Path) -> list[str]:
    return [ln for p, _, _ in P.landing_files(landing) for ln in P.read_landing_lines(p)]


def check_files(landing: Path) -> None:
    """Whole transactions per file; names in LSN order; ranges match contents, no overlap."""
    files = P.landing_files(landing)
    assert [p.name for p, _, _ in files] == sorted(p.name for p in landing.glob("wal2json_*"))
    prev = 0
    for path, first, last in files:
        recs = [json.loads(s) for s in P.read_landing_lines(path)]
        assert recs[0]["action"] == "B" and recs[-1]["action"] == "C", path.name
        assert parse_lsn(recs[0]["lsn"]) == first and parse_lsn(recs[-1]["nextlsn"]) == last
        assert first >= prev
        prev = last
        depth = 0
        for r in recs:
            depth += {"B": 1, "C": -1}.get(r["action"], 0)
            assert depth in (0, 1), path.name
            if r["action"] not in "BC":
                assert depth == 1
        assert depth == 0


def test_pull_lands_whole_transactions_in_lsn_order(pg, db, tmp_path):
    name, url = db
    workload(pg, name, 1)
    pg.execute("SELECT pg_logical_emit_message(false, 'acidflow', 'not landed')", name)
    landing = tmp_path / "landing"
    files = P.pull(url, "main", landing, max_changes_per_file=10)
    assert len(files) >= 5
    check_files(landing)
    assert [f.path for f in files] == [p for p, _, _ in P.landing_files(landing)]
    big = [f for f in files if f.changes >= 40]
    assert len(big) == 1 and big[0].changes + 2 * big[0].transactions > 10  # not split
    assert landed_lines(landing) == reference_lines(pg, name)
    conn = connect(url)
    try:
        assert P.slot_info(conn, "main")["confirmed_flush_lsn"] == files[-1].last_lsn
    finally:
        conn.close()
    assert P.pull(url, "main", landing) == []
    # more changes: the next pull continues exactly where the last file ended
    workload(pg, name, 100, n_txn=3)
    more = P.pull(url, "main", landing)
    assert more and more[0].first_lsn >= files[-1].last_lsn
    assert landed_lines(landing) == reference_lines(pg, name)
    assert not list(landing.glob(".tmp-*"))
    records = [json.loads(s) for s in landed_lines(landing)]
    acts = {r["action"] for r in records}
    assert {"B", "C", "I", "U", "D"} <= acts and "M" not in acts
    u = next(r for r in records if r["action"] == "U")
    assert {"columns", "identity", "pk", "lsn", "timestamp", "xid"} <= set(u)
    assert u["pk"] == [{"name": "id", "type": "integer"}]


def _pull_subprocess(url: str, landing: Path, crash_after: int | None):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if crash_after:
        env[P.CRASH_HOOK_ENV] = str(crash_after)
    code = (
        "import sys; from acidflow.sources.postgres.pull import pull; "
        "pull(sys.argv[1], 'main', sys.argv[2], max_changes_per_file=10)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, url, str(landing)],
        env=env,
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_killed_between_landing_and_advance_loses_and_doubles_nothing(pg, db, tmp_path):
    name, url = db
    landing = tmp_path / "landing"
    workload(pg, name, 1)
    proc = _pull_subprocess(url, landing, crash_after=2)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    files = P.landing_files(landing)
    assert len(files) == 2  # killed right after the 2nd file was renamed into place
    conn = connect(url)
    try:
        slot_at = P.slot_info(conn, "main")["confirmed_flush_lsn"]
    finally:
        conn.close()
    assert slot_at == files[0][2] < files[1][2]  # advanced past file 1, not past file 2
    # the applier archives what it applied: the landed LSN survives in .pull.landed_lsn
    archive = tmp_path / "archive"
    archive.mkdir()
    for p, _, _ in files:
        p.rename(archive / p.name)
    # a half-written temp file from some other crash is cleaned up too
    (landing / f"{P.TEMP_PREFIX}999{P.LANDING_SUFFIX}").write_bytes(b"partial")
    workload(pg, name, 200, n_txn=4)  # changes keep coming meanwhile
    # kill once more on the first file of the next run, then finish
    proc = _pull_subprocess(url, landing, crash_after=1)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    proc = _pull_subprocess(url, landing, crash_after=None)
    assert proc.returncode == 0, proc.stderr
    check_files(landing)
    check_files(archive)
    lines = landed_lines(archive) + landed_lines(landing)
    assert lines == reference_lines(pg, name)  # exact: nothing lost, nothing doubled
    commits = [json.loads(s)["lsn"] for s in lines if s.startswith('{"action":"C"')]
    assert len(commits) == len(set(commits))
    assert not list(landing.glob(".tmp-*"))


def test_errors_name_the_slot_and_reason(pg, db, tmp_path):
    name, url = db
    with pytest.raises(P.PullError, match="'nope' does not exist"):
        P.pull(url, "nope", tmp_path)
    pg.execute("SELECT pg_create_logical_replication_slot('td', 'test_decoding')", name)
    with pytest.raises(P.PullError, match="plugin 'test_decoding'"):
        P.pull(url, "td", tmp_path)
    pg.execute("SELECT pg_drop_replication_slot('td')", name)
    with pytest.raises(P.PullError, match="belongs to database"):
        P.pull(pg.libpq_url("postgres"), "main", tmp_path)
    with pytest.raises(P.PullError, match="cannot connect"):
        P.pull(f"postgresql://postgres@127.0.0.1:{pg.port}/no_such_db", "main", tmp_path)


def test_cli_pull(pg, db, tmp_path):
    import typer
    from typer.testing import CliRunner

    from acidflow.cli import pull as cli_pull

    app = typer.Typer()
    cdc = typer.Typer()
    app.add_typer(cdc, name="cdc")
    cli_pull.register(cdc)
    name, url = db
    workload(pg, name, 1, n_txn=4)
    landing = tmp_path / "landing"
    runner = CliRunner()
    res = runner.invoke(
        app, ["cdc", "pull", "--dsn", url, "--slot", "cli", "--landing", str(landing)]
    )
    assert res.exit_code == 2 and "does not exist" in res.output
    res = runner.invoke(
        app,
        ["cdc", "pull", "--dsn", url, "--slot", "cli", "--landing", str(landing), "--create-slot"],
    )
    assert res.exit_code == 0, res.output
    assert "nothing to pull" in res.output  # a new slot starts now
    workload(pg, name, 300, n_txn=4)
    res = runner.invoke(
        app,
        [
            "cdc",
            "pull",
            "--dsn",
            url,
            "--slot",
            "cli",
            "--landing",
            str(landing),
            "--max-changes",
            "10",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = [json.loads(s) for s in res.output.splitlines()]
    assert len(out) >= 2 and all(Path(o["file"]).is_file() for o in out)
    assert out[-1]["last_lsn"] == format_lsn(P.highest_landed_lsn(landing))
