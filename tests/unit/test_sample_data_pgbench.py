"""include/sample_data/pgbench is consistent: the landing files hold whole transactions in LSN
order, the keyed tables' changes carry ``pk``, and replaying every change in order (a simple
reference replay, independent of acidflow.sources.wal2json) gives exactly the saved source contents."""

from __future__ import annotations

import collections
import decimal
import json
from pathlib import Path

import pytest

from acidflow.quality import digest as G
from acidflow.quality import reconcile as R
from acidflow.sources.postgres import equality as E
from acidflow.sources.postgres.lsn import parse_lsn
from acidflow.sources.postgres.pull import landing_files, read_landing_lines

SAMPLE = Path(__file__).resolve().parents[2] / "include" / "sample_data" / "pgbench"


@pytest.fixture(scope="module")
def manifest():
    p = SAMPLE / "manifest.json"
    if not p.is_file():
        pytest.skip("no sample data (make sample-data)")
    return json.loads(p.read_text())


def test_landing_files_whole_transactions_in_lsn_order(manifest):
    files = landing_files(SAMPLE / "landing")
    assert len(files) >= 3
    assert [f[0].name for f in files] == sorted(f[0].name for f in files)
    assert [f"landing/{f[0].name}" for f in files] == [f["file"] for f in manifest["landing_files"]]
    prev_end = 0
    keyed = {t["name"] for t in manifest["tables"] if t["primary_key"]}
    for path, first, last in files:
        assert first >= prev_end, f"{path.name} overlaps the previous file"
        prev_end = last
        lines = [json.loads(s) for s in read_landing_lines(path)]
        assert lines[0]["action"] == "B" and lines[-1]["action"] == "C"
        assert parse_lsn(lines[0]["lsn"]) == first and parse_lsn(lines[-1]["nextlsn"]) == last
        open_xid = None
        for rec in lines:
            if rec["action"] == "B":
                assert open_xid is None
                open_xid = rec["xid"]
            elif rec["action"] == "C":
                assert rec["xid"] == open_xid
                open_xid = None
            else:
                assert rec["xid"] == open_xid, f"{path.name}: change outside its transaction"
                if rec["action"] in "IUD" and f"{rec['schema']}.{rec['table']}" in keyed:
                    assert rec["pk"], f"{path.name}: no pk on {rec}"
        assert open_xid is None


def _replay(manifest):
    tables = {t["name"]: t for t in manifest["tables"]}
    state = {
        name: ({} if t["primary_key"] else collections.Counter()) for name, t in tables.items()
    }

    def row_of(items, t):
        kinds = {c["name"]: E.kind_of_pg_type(c["type"]) for c in t["columns"]}
        vals = {c["name"]: E.canonical_value(c["value"], kinds[c["name"]]) for c in items}
        return tuple(vals[c["name"]] for c in t["columns"])

    def key_of(row, t):
        names = [c["name"] for c in t["columns"]]
        return tuple(row[names.index(k)] for k in t["primary_key"])

    counts = collections.Counter()
    for path, _, _ in landing_files(SAMPLE / "landing"):
        for line in read_landing_lines(path):
            rec = json.loads(line, parse_float=decimal.Decimal)
            act = rec["action"]
            if act in "BCM":
                continue
            name = f"{rec['schema']}.{rec['table']}"
            t, st = tables[name], state[name]
            counts[f"{name}:{act}"] += 1
            if act == "T":
                st.clear()
                continue
            new = row_of(rec["columns"], t) if act in "IU" else None
            if t["primary_key"]:
                if act in "UD":
                    ident = {
                        c["name"]: E.canonical_value(c["value"], E.kind_of_pg_type(c["type"]))
                        for c in rec.get("identity") or []
                    }
                    old_key = tuple(ident[k] for k in t["primary_key"]) if ident else key_of(new, t)
                    assert st.pop(old_key, None) is not None, f"{act} of a missing key {old_key}"
                if new is not None:
                    st[key_of(new, t)] = new
            else:
                if act in "UD":
                    old = row_of(rec["identity"], t)
                    assert st[old] > 0, f"{act} of a missing row {old}"
                    st[old] -= 1
                if new is not None:
                    st[new] += 1
    return tables, state, counts


def test_replay_gives_the_saved_source_contents(manifest):
    tables, state, counts = _replay(manifest)
    assert dict(counts) == manifest["record_totals"]
    for name, t in tables.items():
        spec = R.ScanSpec(
            tuple(c["name"] for c in t["columns"]),
            tuple(E.kind_of_pg_type(c["type"]) for c in t["columns"]),
            (),
            E.canonical_value,
        )
        src = R.scan_digest(R.csv_batches(SAMPLE / t["csv"]), spec)
        rows = list(state[name].values()) if t["primary_key"] else list(state[name].elements())
        replayed = G.Digest()
        for r in rows:
            replayed.add(G.row_hash(r))
        assert src.rows == t["rows"]
        assert (replayed.rows, replayed.checksum) == (src.rows, src.checksum), name
