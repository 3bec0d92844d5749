"""Several processes ('spawn') using one catalog at once, on every backend (on ``hms`` the
processes share the metastore and one SQLite side catalog file).

One spawn per backend keeps the suite fast; the worker runs three phases (see
``_workers.worker``): concurrent migration + create_table, concurrent write id allocation,
concurrent conflicting commits.
"""

from __future__ import annotations

import multiprocessing
from urllib.parse import quote

from acidflow.catalog import load_catalog
from tests.catalog import _workers
from tests.catalog.conftest import plain_table

PROCESSES = 3
ROUNDS = 10


def test_processes_share_one_catalog(backend, empty_url, request, tmp_path):
    if backend == "hms":
        from tests.support.hms import reset_metastore

        hms_url = request.getfixturevalue("hive_metastore").url
        reset_metastore(hms_url)
        empty_url = f"{hms_url}?side={quote(empty_url, safe='')}"
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(
            target=_workers.worker,
            args=(empty_url, str(tmp_path), plain_table().to_dict(), barrier, ROUNDS, out),
        )
        for _ in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
    assert all(r[0] == "ok" for r in results), results
    assert all(p.exitcode == 0 for p in procs)

    # Phase 2: distinct, consecutive write ids; per process increasing with txn order.
    pairs = [pair for _, got, _, _ in results for pair in got]
    write_ids = sorted(w for _, w in pairs)
    assert write_ids == list(range(1, PROCESSES * ROUNDS + 1))
    assert len({t for t, _ in pairs}) == len(pairs)
    for _, got, _, _ in results:
        assert [w for _, w in got] == sorted(w for _, w in got)

    # Phase 3: first committer wins, the others are aborted by the write-set check.
    outcomes = sorted(r[2] for r in results)
    assert outcomes == ["committed"] + ["conflict"] * (PROCESSES - 1), results

    with load_catalog(empty_url, warehouse=str(tmp_path)) as catalog:
        assert [t.name for t in catalog.list_tables()] == ["default.events"]
        recs = catalog.commit_records("default.events")
        assert [r.write_id for r in recs[: len(write_ids)]] == write_ids
        assert len(recs) == len(write_ids) + 1
        states = {r[3]: catalog.get_transaction(r[3]).state for r in results}
        assert sorted(states.values()) == ["aborted"] * (PROCESSES - 1) + ["committed"]
        v = catalog.valid_write_ids("default.events")
        assert v.high_watermark == PROCESSES * (ROUNDS + 1)
        assert len(v.aborted_write_ids) == PROCESSES - 1 and v.open_write_ids == ()
