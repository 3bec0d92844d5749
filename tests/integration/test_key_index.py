"""The key index in a real key lookup (``snapshot.read_task(keys=..., prune=True)``): real
tables written through the Transaction API (Arrow upserts, small stripes), real compaction and
schema changes, a SQLite catalog. The rule checked everywhere: the lookup with stripe pruning
returns exactly the rows (and ROW__IDs) of the lookup without it -- no key is ever missed --
and for sequential keys it really skips stripes."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine import lookup
from acidflow.engine.transaction import Transaction
from acidflow.read import snapshot
from acidflow.tableops.schema import alter_table

CFG = CompactorConfig(heartbeat_s=0.5, target_file_bytes=0)
STRIPE_ROWS = 1024


# key type -> (Hive type, Arrow type, value of key number i); values grow with i
KEY_TYPES = {
    "int": ("int", pa.int32(), lambda i: i * 7),
    "bigint": ("bigint", pa.int64(), lambda i: 10**12 + i * 7),
    "string": ("string", pa.string(), lambda i: f"k{i * 7:09d}-é"),
    "decimal": ("decimal(12,2)", pa.decimal128(12, 2), lambda i: decimal.Decimal(i * 7) / 100),
    "date": ("date", pa.date32(), lambda i: dt.date(1990, 1, 1) + dt.timedelta(days=i * 7)),
}


def _table(catalog, name, key_type, *, buckets=0):
    hive, _, _ = KEY_TYPES[key_type]
    return catalog.create_table(
        TableDef(
            name=name,
            columns=[Column("k", hive), Column("v", "string"), Column("n", "bigint")],
            primary_key=["k"],
            num_buckets=buckets,
        )
    )


def _rows(key_type, ids, tag):
    _, arrow, f = KEY_TYPES[key_type]
    return pa.table(
        {
            "k": pa.array([f(i) for i in ids], arrow),
            "v": pa.array([f"{tag}{i}" for i in ids], pa.string()),
            "n": pa.array(list(ids), pa.int64()),
        }
    )


def _upsert(catalog, name, rows):
    # uncompressed: the columnar writer cuts a zlib stripe only once a compression block is
    # full, so exact small stripes (many stripes per file) need compression="none"
    with Transaction(catalog) as txn:
        txn.upsert(name, rows, stripe_rows=STRIPE_ROWS, compression="none")


def _lookup(catalog, name, keys, prune):
    """(sorted ``(key, v, ROW__ID)`` found, stripes skipped, stripes read) of one lookup."""
    table = catalog.get_table(name)
    cur = lookup.plan_current(catalog, table, None)
    key_cols = keys.column_names
    verdicts: list = []
    found = []
    plan = cur.plan
    for task in plan.tasks:
        for b in snapshot.read_task(
            cur.tfs,
            task,
            plan.columns,
            plan.partition_columns,
            plan.valid_write_ids,
            row_id=True,
            keys=keys,
            project=key_cols + ["v"],
            prune=prune,
            pruned=verdicts,
        ):
            d = b.to_pydict()
            found += [
                (tuple(d[k][i] for k in key_cols), d["v"][i], tuple(d[snapshot.ROW_ID][i].values()))
                for i in range(b.num_rows)
            ]
    skipped = sum(v.skipped for _, v in verdicts)
    read = sum(len(v.keep) for _, v in verdicts) - skipped
    return sorted(found, key=repr), skipped, read


def _check(catalog, name, keys):
    """Pruned and unpruned lookups agree; returns the pruned lookup's (found, skipped, read)."""
    pruned = _lookup(catalog, name, keys, True)
    full = _lookup(catalog, name, keys, False)
    assert pruned[0] == full[0]
    return pruned


def _keys(key_type, ids, names=("k",)):
    return _rows(key_type, ids, "").select(list(names))


@pytest.mark.parametrize("key_type", sorted(KEY_TYPES))
def test_pruning_never_misses_a_key(catalog, key_type):
    rnd = random.Random(key_type)
    name = f"db.t_{key_type}"
    _table(catalog, name, key_type)
    n = 12 * STRIPE_ROWS
    _upsert(catalog, name, _rows(key_type, range(n), "a"))  # base-like first delta
    updated = rnd.sample(range(n), 300)
    _upsert(catalog, name, _rows(key_type, sorted(updated), "b"))  # split-updates
    _upsert(catalog, name, _rows(key_type, range(n, n + 2000), "c"))  # new keys

    # sequential keys: the newest ids -- stats prune every other stripe
    seq = list(range(n + 1000, n + 2000))
    found, skipped, read = _check(catalog, name, _keys(key_type, seq))
    assert len(found) == len(seq) and {v for _, v, _ in found} == {f"c{i}" for i in seq}
    assert skipped >= 12 and read >= 1
    # random keys, present and absent (between and outside the stored values)
    for _ in range(5):
        ids = rnd.sample(range(-50, n + 2100), 40)
        found, _, _ = _check(catalog, name, _keys(key_type, ids))
        want = {i for i in ids if 0 <= i < n + 2000}
        assert {r[1][1:] for r in found} == {str(i) for i in want}
        assert {r[1][0] for r in found if int(r[1][1:]) in updated} <= {"b"}
    # a single key, one stripe read
    one = next(i for i in range(5000, n) if i not in updated)
    found, skipped, read = _check(catalog, name, _keys(key_type, [one]))
    assert [v for _, v, _ in found] == [f"a{one}"] and read <= 3


def test_composite_key_and_null_keys(catalog):
    catalog.create_table(
        TableDef(
            name="db.c",
            columns=[Column("a", "int"), Column("b", "string"), Column("v", "string")],
            primary_key=["a", "b"],
        )
    )
    n = 8 * STRIPE_ROWS
    rows = pa.table(
        {
            "a": pa.array([i // 3 for i in range(n)], pa.int32()),
            "b": pa.array([f"s{i % 3}" for i in range(n)]),
            "v": pa.array([str(i) for i in range(n)]),
        }
    )
    _upsert(catalog, "db.c", rows)
    # tuples whose parts each exist somewhere but the pair only in some stripes
    keys = pa.table(
        {
            "a": pa.array([0, 5, 2000, 2700, None], pa.int32()),
            "b": pa.array(["s1", "s9", "s2", "s0", "s1"]),
        }
    )
    pruned = _lookup(catalog, "db.c", keys, True)
    full = _lookup(catalog, "db.c", keys, False)
    assert pruned[0] == full[0]
    assert sorted(v for _, v, _ in pruned[0]) == sorted(["1", "6002", "8100"])
    assert pruned[1] > 0


def test_pruning_after_minor_and_major_compaction(catalog):
    name = "db.compacted"
    _table(catalog, name, "bigint", buckets=2)
    for w in range(4):
        _upsert(catalog, name, _rows("bigint", range(w * 3000, w * 3000 + 3000), f"w{w}-"))
    _upsert(catalog, name, _rows("bigint", range(0, 12000, 97), "u"))
    keys = _keys("bigint", list(range(5900, 6100)) + [11999, 12000, 0, 97])

    before = _check(catalog, name, keys)[0]
    info = initiator.request_compaction(catalog, name, None, "minor")
    assert worker.run_worker(None, catalog, cq_id=info.id, config=CFG).state == "ready for cleaning"
    minor = _check(catalog, name, keys)
    assert [r[:2] for r in minor[0]] == [r[:2] for r in before]
    info = initiator.request_compaction(catalog, name, None, "major")
    assert worker.run_worker(None, catalog, cq_id=info.id, config=CFG).state == "ready for cleaning"
    major = _check(catalog, name, keys)
    assert [r[:2] for r in major[0]] == [r[:2] for r in before]


def test_pruning_after_schema_evolution(catalog):
    name = "db.evolved"
    _table(catalog, name, "int")
    _upsert(catalog, name, _rows("int", range(6 * STRIPE_ROWS), "a"))
    # a non-key column renamed, then the key widened int -> bigint: old files keep INT
    alter_table(catalog, name, rename_column=("v", "w"))
    alter_table(catalog, name, change_type=("k", "bigint"))
    table = catalog.get_table(name)
    assert [c.hive_type for c in table.columns][0] == "bigint"
    new = pa.table(
        {
            "k": pa.array([i * 7 for i in range(6144, 6200)] + [3_000_000_000], pa.int64()),
            "w": pa.array(["new"] * 57),
            "n": pa.array([0] * 57, pa.int64()),
        }
    )
    _upsert(catalog, name, new)
    keys = pa.table({"k": pa.array([7 * 10, 7 * 6150, 3_000_000_000, 7 * 5000 + 1], pa.int64())})
    cur = lookup.plan_current(catalog, table, None)
    got = lookup.lookup_rows(None, cur, keys, project=["k", "w"])
    assert sorted(got.column("k").to_pylist()) == [70, 7 * 6150, 3_000_000_000]
    found, skipped, _ = _lookup_renamed(catalog, name, keys)
    assert len(found) == 3 and skipped > 0


def _lookup_renamed(catalog, name, keys):
    table = catalog.get_table(name)
    cur = lookup.plan_current(catalog, table, None)
    verdicts: list = []
    out = []
    for prune in (True, False):
        rows = []
        for task in cur.plan.tasks:
            for b in snapshot.read_task(
                cur.tfs,
                task,
                cur.plan.columns,
                cur.plan.partition_columns,
                cur.plan.valid_write_ids,
                row_id=True,
                keys=keys,
                prune=prune,
                pruned=verdicts if prune else None,
            ):
                rows += b.to_pylist()
        out.append(sorted(rows, key=repr))
    assert out[0] == out[1]
    skipped = sum(v.skipped for _, v in verdicts)
    return out[0], skipped, None


def test_unordered_keys_are_pruned_by_the_writers_bloom_filters(catalog):
    """UUID-like string keys in no order: every stripe's min/max spans nearly everything, so
    only the bloom filters the writers put on the primary key (orc.bloom.filter.columns) can
    skip stripes -- and they do, without missing a key."""
    rnd = random.Random(11)
    catalog.create_table(
        TableDef(
            name="db.u",
            columns=[Column("uid", "string"), Column("v", "string")],
            primary_key=["uid"],
        )
    )
    uids = [f"{rnd.getrandbits(64):016x}" for _ in range(12 * STRIPE_ROWS)]
    _upsert(
        catalog,
        "db.u",
        pa.table({"uid": pa.array(uids), "v": pa.array([str(i) for i in range(len(uids))])}),
    )
    for _ in range(4):
        present = rnd.sample(range(len(uids)), 3)
        keys = pa.table(
            {
                "uid": pa.array(
                    [uids[i] for i in present] + [f"{rnd.getrandbits(64):016x}" for _ in range(3)]
                )
            }
        )
        pruned = _lookup(catalog, "db.u", keys, True)
        assert pruned[0] == _lookup(catalog, "db.u", keys, False)[0]
        assert sorted(v for _, v, _ in pruned[0]) == sorted(str(i) for i in present)
        assert pruned[1] >= 6  # of 12 stripes, at most 3 hold a key
    table = catalog.get_table("db.u")
    cur = lookup.plan_current(catalog, table, None)
    verdicts: list = []
    list(
        snapshot.read_task(
            cur.tfs,
            cur.plan.tasks[0],
            cur.plan.columns,
            cur.plan.partition_columns,
            cur.plan.valid_write_ids,
            keys=pa.table({"uid": pa.array(["zz-absent"])}),
            pruned=verdicts,
        )
    )
    assert verdicts and all(v.by_stats == len(v.keep) for _, v in verdicts)  # above every max
    verdicts.clear()
    list(
        snapshot.read_task(
            cur.tfs,
            cur.plan.tasks[0],
            cur.plan.columns,
            cur.plan.partition_columns,
            cur.plan.valid_write_ids,
            keys=pa.table({"uid": pa.array(["8000000000000000x"])}),
            pruned=verdicts,
        )
    )
    assert sum(v.by_bloom for _, v in verdicts) >= 10


def test_upsert_through_the_lookup_updates_the_right_rows(catalog):
    """The CDC/upsert path end to end: Transaction.upsert (Arrow) looks the keys up with
    pruning; every updated key ends with exactly one row, the new one."""
    name = "db.up"
    _table(catalog, name, "string", buckets=3)
    n = 10 * STRIPE_ROWS
    _upsert(catalog, name, _rows("string", range(n), "a"))
    rnd = random.Random(7)
    changed = sorted(rnd.sample(range(n), 150)) + list(range(n - 50, n + 50))
    _upsert(catalog, name, _rows("string", sorted(set(changed)), "z"))
    from acidflow.read import table as reads

    rows = reads.read_table(None, catalog, name).to_pylist()
    by_key: dict = {}
    for r in rows:
        by_key.setdefault(r["n"], []).append(r["v"])
    assert len(by_key) == n + 50 and all(len(v) == 1 for v in by_key.values())
    assert {i for i, v in by_key.items() if v[0].startswith("z")} == set(changed)


def test_fsck_rebuild_index_reports_each_file(warehouse):
    import json
    import os

    from typer.testing import CliRunner

    from acidflow.cli import app

    cat = SqlCatalog(os.environ["ACIDFLOW_CATALOG_URL"], warehouse=str(warehouse))
    _table(cat, "db.rep", "string")
    _upsert(cat, "db.rep", _rows("string", range(3 * STRIPE_ROWS), "a"))
    _upsert(cat, "db.rep", _rows("string", range(10), "b"))
    res = CliRunner().invoke(
        app, ["fsck", "db.rep", "--rebuild-index", "--json"], env={"COLUMNS": "250"}
    )
    assert res.exit_code == 0, (res.output, res.exception)
    found = [json.loads(line) for line in res.output.splitlines()]
    assert {f["kind"] for f in found} == {"key_index"} and len(found) == 2
    by_dir = {f["path"].split("/")[0]: f for f in found}
    big = by_dir["delta_0000001_0000001_0000"]
    assert big["severity"] == "info"
    assert "3 stripes; k: min/max 3/3, bloom 3/3 (BLOOM_FILTER_UTF8)" in big["detail"]
    cat.close()


HIVE_CASES = [
    "trino-nation-delete-deltas",
    "trino-original-file-nation",
    "trino-original-files-dummy-id",
    "impala-original-file-alltypes",
    "impala-query-compacted-no-acid-metadata",
]


@pytest.mark.parametrize("case", HIVE_CASES)
def test_hive_written_files_prune_without_missing_a_row(fixtures_dir, case):
    """Hive/Impala-written fixtures (statistics, no bloom filters; original files with
    synthetic ROW__IDs): for every key-indexable column, lookups of sampled values with
    pruning return exactly the rows and ROW__IDs of lookups without it."""
    from acidflow.format import types as htypes
    from acidflow.read import table as reads
    from acidflow.storage.fs import TableFS

    path = str(fixtures_dir / case / "table")
    plan = reads.plan_path(path)
    tfs = TableFS(path)
    full = snapshot.read_arrow(tfs, plan)
    rnd = random.Random(case)
    skipped_any = 0
    for name, hive_type in plan.columns:
        t = htypes.arrow_type(hive_type)
        if not (
            pa.types.is_integer(t)
            or pa.types.is_string(t)
            or pa.types.is_date32(t)
            or pa.types.is_decimal(t)
        ):
            continue
        present = [v for v in full.column(name).to_pylist() if v is not None]
        if not present:
            continue
        keys = pa.table({name: pa.array(rnd.sample(present, min(3, len(present))), t)})
        results = []
        for prune in (True, False):
            verdicts: list = []
            rows = [
                r
                for task in plan.tasks
                for b in snapshot.read_task(
                    tfs,
                    task,
                    plan.columns,
                    plan.partition_columns,
                    plan.valid_write_ids,
                    row_id=True,
                    keys=keys,
                    prune=prune,
                    pruned=verdicts,
                )
                for r in b.to_pylist()
            ]
            results.append(sorted(rows, key=repr))
            skipped_any += sum(v.skipped for _, v in verdicts)
        assert results[0] == results[1] and results[0], (case, name)
    if case == "impala-original-file-alltypes":  # 24 stripes: stripes really are skipped
        assert skipped_any > 0
