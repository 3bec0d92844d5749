"""The sidecar key index of a base (``base_N/_acidflow_key_index.parquet``, the record-level
index written by major compaction, ``acidflow.read.keyindex``) in real key lookups: real tables
written through the Transaction API, real compactions, schema changes and restores, a SQLite
catalog. The rule checked everywhere: the lookup through the sidecar returns exactly the rows
and ROW__IDs of the lookup without it -- no key is ever missed -- and it reads no stripe of an
indexed base when only key columns are asked for."""

from __future__ import annotations

import json
import os
import random
import shutil
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor import fsck, initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine import lookup
from acidflow.engine.statements import changes
from acidflow.engine.transaction import Transaction
from acidflow.format import keyindex as rules
from acidflow.format import types as htypes
from acidflow.format.names import is_hidden
from acidflow.read import keyindex
from acidflow.read import table as reads
from acidflow.storage.fs import TableFS
from acidflow.storage.retention import RETAIN_COMMITS, RETAIN_HOURS
from acidflow.tableops import restore as restores
from acidflow.tableops.schema import alter_table

CFG = CompactorConfig(heartbeat_s=0.5, target_file_bytes=0)
N = 3000


class _CountingFS:
    """A TableFS that records the bytes read per opened path."""

    def __init__(self, tfs: TableFS):
        self._tfs = tfs
        self.read: dict[str, int] = {}

    def open(self, path: str, mode: str = "rb") -> Any:
        fh = self._tfs.open(path, mode)
        counts, raw_read = self.read, fh.read

        def read(n: int = -1) -> bytes:
            data = raw_read(n)
            counts[path] = counts.get(path, 0) + len(data)
            return data

        counts.setdefault(path, 0)
        fh.read = read  # type: ignore[method-assign]
        return fh

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tfs, name)


def _table(catalog, name, *, buckets=2, sidecar=True):
    return catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("k", "string"), Column("v", "string"), Column("n", "bigint")],
            primary_key=["k"],
            num_buckets=buckets,
            # opt-in, as Hudi's record-level index
            properties={keyindex.SIDECAR_PROPERTY: "true"} if sidecar else {},
        )
    )


def _rows(ids, tag):
    return pa.table(
        {
            "k": pa.array([f"key-{i * 7919 % 100003:06d}" for i in ids], pa.string()),
            "v": pa.array([f"{tag}{i}" for i in ids], pa.string()),
            "n": pa.array(list(ids), pa.int64()),
        }
    )


def _keys(ids):
    return _rows(ids, "").select(["k"])


def _upsert(catalog, name, rows):
    with Transaction(catalog) as txn:
        txn.upsert(name, rows, stripe_rows=500, compression="none")


def _delete(catalog, name, ids):
    table = catalog.get_table(name)
    with Transaction(catalog) as txn:
        found = lookup.existing_rows_arrow(catalog, table, txn, _keys(ids))
        schema = htypes.arrow_schema([(c.name, c.hive_type) for c in table.columns])
        changes.apply_row_changes(
            txn,
            name,
            schema.empty_table(),
            lookup.row_id_columns(table, found),
            counts={"rows_inserted": 0, "rows_updated": 0, "rows_deleted": found.num_rows},
            operation="delete",
        )


def _compact(catalog, name, kind):
    info = initiator.request_compaction(catalog, name, None, kind)
    assert worker.run_worker(None, catalog, cq_id=info.id, config=CFG).state == (
        "ready for cleaning"
    )


def _lookup(catalog, name, ids, *, sidecar, project=("k",)):
    """(sorted rows found, {path: bytes read}, IndexedLookup) of one lookup."""
    table = catalog.get_table(name)
    cur = lookup.plan_current(catalog, table, None)
    counting = _CountingFS(cur.tfs)
    cur = lookup.CurrentPlan(counting, cur.table_dir, cur.plan)  # type: ignore[arg-type]
    keys = _keys(ids)
    found = lookup.lookup_rows(None, cur, keys, project=list(project), sidecar=sidecar)
    info = keyindex.lookup_indexed(cur.tfs, cur.plan, keys, project=list(project), use=sidecar)
    rows = sorted(found.to_pylist(), key=repr)
    return rows, counting.read, info


def _check(catalog, name, ids, project=("k",)):
    """The sidecar lookup equals the plain one; returns the sidecar lookup's result."""
    with_index = _lookup(catalog, name, ids, sidecar=True, project=project)
    plain = _lookup(catalog, name, ids, sidecar=False, project=project)
    assert with_index[0] == plain[0]
    return with_index


def _base_reads(read):
    return {p: b for p, b in read.items() if "/base_" in p and "/bucket_" in p and b}


def _sidecars(catalog, name):
    loc = catalog.get_table(name).location
    return sorted(
        os.path.join(d, f) for d, _, fs in os.walk(loc) for f in fs if f == rules.INDEX_FILE
    )


def test_a_table_without_the_property_gets_no_sidecar(catalog):
    name = "db.ki_off"
    _table(catalog, name, sidecar=False)
    _upsert(catalog, name, _rows(range(500), "a"))
    _compact(catalog, name, "major")
    assert _sidecars(catalog, name) == []
    rows, _, info = _check(catalog, name, [1, 2, 3, 10**6])
    assert len(rows) == 3 and not info.answered  # the plain lookup, same rows


def test_major_compaction_writes_a_sidecar_that_answers_without_reading_the_base(catalog):
    name = "db.ki"
    _table(catalog, name)
    _upsert(catalog, name, _rows(range(N), "a"))
    _upsert(catalog, name, _rows(range(0, N, 11), "b"))
    _compact(catalog, name, "major")
    (side,) = _sidecars(catalog, name)
    assert is_hidden(os.path.basename(side)) and "/base_" in side
    _upsert(catalog, name, _rows(range(N, N + 300), "c"))  # a delta after the base

    rnd = random.Random(3)
    ids = rnd.sample(range(-100, N + 400), 400)
    rows, read, info = _check(catalog, name, ids)
    want = {i for i in ids if 0 <= i < N + 300}
    assert {r["k"] for r in rows} == {f"key-{i * 7919 % 100003:06d}" for i in want}
    assert len(rows) == len(want)
    # the base's ORC files are not read at all; the delta is
    assert not _base_reads(read) and info.answered and not info.fallbacks
    _, plain_read, _ = _lookup(catalog, name, ids, sidecar=False)
    assert _base_reads(plain_read)
    # another column needed (the upsert's ordering column): only the found keys are read
    rows_v, _, info_v = _check(catalog, name, ids, project=("k", "v"))
    assert len(rows_v) == len(want) and info_v.answered

    # an upsert through the sidecar updates exactly the right rows
    changed = sorted(rnd.sample(range(N), 200))
    _upsert(catalog, name, _rows(changed, "z"))
    table = reads.read_table(None, catalog, name)
    by_n: dict = {}
    for r in table.to_pylist():
        by_n.setdefault(r["n"], []).append(r["v"])
    assert len(by_n) == N + 300 and all(len(v) == 1 for v in by_n.values())
    assert {i for i, v in by_n.items() if v[0].startswith("z")} == set(changed)


def test_deletes_reinserts_minor_compaction_and_schema_change(catalog):
    name = "db.kd"
    _table(catalog, name)
    _upsert(catalog, name, _rows(range(N), "a"))
    _compact(catalog, name, "major")
    assert _sidecars(catalog, name)
    gone = list(range(0, 600, 3))
    _delete(catalog, name, gone)
    again = gone[:20]
    _upsert(catalog, name, _rows(again, "r"))  # deleted, then inserted again
    _upsert(catalog, name, _rows(range(100, 400, 5), "u"))  # updates
    ids = list(range(0, 700)) + [N + 5]
    rows, _, info = _check(catalog, name, ids, project=("k", "v"))
    assert info.answered
    expect = set(range(0, 700)) - (set(gone) - set(again) - set(range(100, 400, 5)))
    assert len(rows) == len(expect)
    assert {r["v"] for r in rows if r["v"].startswith("r")} == {f"r{i}" for i in again}

    _compact(catalog, name, "minor")  # the base (and its sidecar) stays
    rows2, _, info2 = _check(catalog, name, ids)
    assert len(rows2) == len(expect) and info2.answered and not info2.fallbacks

    alter_table(catalog, name, add_columns=[Column("extra", "int")])
    new = _rows(range(N, N + 50), "x").append_column("extra", pa.array([1] * 50, pa.int32()))
    _upsert(catalog, name, new)
    rows3, _, info3 = _check(catalog, name, ids + list(range(N, N + 50)), project=("k", "extra"))
    assert len(rows3) == len(expect) + 50 and info3.answered
    _compact(catalog, name, "major")
    rows4, read4, info4 = _check(catalog, name, ids + list(range(N, N + 50)))
    assert len(rows4) == len(rows3) and info4.answered and not _base_reads(read4)


def test_restore_and_a_base_without_sidecar_fall_back(catalog):
    name = "db.kr"
    _table(catalog, name, buckets=0)
    catalog.set_table_properties(name, {RETAIN_COMMITS: "100", RETAIN_HOURS: "0"})
    _upsert(catalog, name, _rows(range(N), "a"))
    _compact(catalog, name, "major")
    w = catalog.valid_write_ids(name).high_watermark
    _upsert(catalog, name, _rows(range(N, N + 200), "b"))
    _delete(catalog, name, range(0, 100))
    ids = list(range(0, 300)) + list(range(N, N + 200))
    before, _, _ = _check(catalog, name, ids)
    assert len(before) == 400

    restores.restore(catalog, name, w)  # events: the base and its sidecar stay
    rows, _, info = _check(catalog, name, ids)
    assert len(rows) == 300 and info.answered

    # an INSERT OVERWRITE's base (as a Hive-written, adopted one) has no sidecar: fallback
    with Transaction(catalog) as txn:
        txn.insert_overwrite(name, _rows(range(500), "o"))
    rows, read, info = _check(catalog, name, ids)
    assert len(rows) == 300 and not info.answered
    assert list(info.fallbacks.values()) == ["no index"] and _base_reads(read)


def test_stale_missing_corrupt_sidecar_falls_back_and_fsck_rebuilds_it(warehouse):
    from typer.testing import CliRunner

    from acidflow.cli import app

    cat = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    name = "db.ks"
    _table(cat, name)
    _upsert(cat, name, _rows(range(N), "a"))
    _compact(cat, name, "major")
    (side,) = _sidecars(cat, name)
    ids = random.Random(5).sample(range(N + 50), 300)
    good, _, info = _check(cat, name, ids)
    assert info.answered and len(good) == len([i for i in ids if i < N])

    def reindex() -> None:
        res = CliRunner().invoke(app, ["fsck", name, "--rebuild-index", "--json"])
        assert res.exit_code == 0, (res.output, res.exception)
        found = [json.loads(line) for line in res.output.splitlines()]
        rebuilt = [f for f in found if f["path"].endswith(rules.INDEX_FILE)]
        assert (
            len(rebuilt) == 1 and f"sidecar rebuilt: {N} keys of 2 files" in (rebuilt[0]["detail"])
        )

    original = open(side, "rb").read()
    with open(side, "wb") as fh:  # corrupt
        fh.write(original[: len(original) // 2])
    rows, read, info = _check(cat, name, ids)
    assert rows == good and not info.answered and _base_reads(read)
    assert next(iter(info.fallbacks.values())).startswith("unreadable")

    os.remove(side)  # missing
    rows, _, info = _check(cat, name, ids)
    assert rows == good and list(info.fallbacks.values()) == ["no index"]

    reindex()
    rows, read, info = _check(cat, name, ids)
    assert rows == good and info.answered and not _base_reads(read)

    # stale: a sidecar built for other files (recorded sizes differ)
    import pyarrow.parquet as pq

    t = pq.read_table(side)
    cov = rules.Coverage.from_json(t.schema.metadata[rules.COVERAGE_KEY])
    cov.files = {f: (size + 1, n) for f, (size, n) in cov.files.items()}
    pq.write_table(t.replace_schema_metadata({rules.COVERAGE_KEY: cov.to_json()}), side)
    rows, _, info = _check(cat, name, ids)
    assert rows == good and not info.answered
    assert next(iter(info.fallbacks.values())).startswith("stale:")
    reindex()
    assert _check(cat, name, ids)[2].answered

    # invisible to readers and to fsck's file checks
    assert not [f for f in fsck.fsck_table(cat, name) if rules.INDEX_FILE in f.path]
    assert reads.read_table(None, cat, name).num_rows == N
    cat.close()


@pytest.fixture(scope="module")
def indexed_table(tmp_path_factory):
    """A table with a base (and its sidecar), deletes and updates after it: built once."""
    wh = tmp_path_factory.mktemp("sidecar")
    cat = SqlCatalog(f"sqlite:///{wh / '_acidflow_catalog.db'}", warehouse=str(wh))
    _table(cat, "db.kh", buckets=3)
    _upsert(cat, "db.kh", _rows(range(N), "a"))
    with pytest.MonkeyPatch.context() as mp:  # many small row groups: lookups read a few
        mp.setattr(rules, "ROW_GROUP_ROWS", 64)
        _compact(cat, "db.kh", "major")
    _delete(cat, "db.kh", range(0, N, 7))
    _upsert(cat, "db.kh", _rows(range(0, N, 14), "r"))  # half the deleted keys come back
    _upsert(cat, "db.kh", _rows(range(N - 100, N + 100), "u"))
    yield cat
    cat.close()


@settings(max_examples=30, deadline=None)
@given(ids=st.lists(st.integers(-20, N + 120), max_size=60), extra=st.booleans())
def test_random_key_sets_match_the_plain_lookup(indexed_table, ids, extra):
    rows, _, info = _check(indexed_table, "db.kh", ids, project=("k", "v") if extra else ("k",))
    live = {i for i in set(ids) if 0 <= i < N + 100 and (i % 7 or i % 14 == 0 or i >= N - 100)}
    assert len(rows) == len(live)
    assert not ids or info.answered
    # the row groups whose hash range holds no wanted key are not read
    assert info.index_rows <= 64 * len(set(ids))


def test_adopted_hive_table_then_major_compaction(catalog, fixtures_dir, tmp_path):
    """A Hive-written table (deltas and delete deltas, no sidecar) adopted: lookups read it as
    before; acidflow's major compaction gives its base a sidecar that answers the same."""
    from acidflow.tableops import adopt as ops

    loc = tmp_path / "hive" / "nation"
    shutil.copytree(fixtures_dir / "trino-nation-delete-deltas" / "table", loc)
    name = "hive.nation"
    ops.adopt(
        catalog,
        TableDef(
            name=name,
            columns=ops.columns_from_files(name, str(loc)),
            primary_key=["n_nationkey"],
            location=str(loc),
        ),
        ops.history_from_options(name, hwm=4),
    )
    catalog.set_table_properties(name, {keyindex.SIDECAR_PROPERTY: "true"})
    table = catalog.get_table(name)
    everything = reads.read_table(None, catalog, name)
    key_type = everything.schema.field("n_nationkey").type
    stored = everything.column("n_nationkey").to_pylist()
    wanted = sorted(set(stored[::3]))  # the fixture repeats each key (not unique in Hive)
    keys = pa.table({"n_nationkey": pa.array(wanted + [-1, 10**6], key_type)})

    def both():
        cur = lookup.plan_current(catalog, table, None)
        out = []
        for sidecar in (True, False):
            got = lookup.lookup_rows(None, cur, keys, project=["n_nationkey"], sidecar=sidecar)
            out.append(sorted(got.to_pylist(), key=repr))
        assert out[0] == out[1] and len(out[0]) == sum(v in wanted for v in stored)
        return keyindex.lookup_indexed(cur.tfs, cur.plan, keys, project=["n_nationkey"])

    assert not both().answered  # Hive's deltas: no base, no sidecar
    _compact(catalog, name, "major")
    assert _sidecars(catalog, name) and both().answered
