"""How well the key index prunes: stripes read vs skipped by a key lookup, sequential vs random
keys (issue 13, deliverable 1).

Two measurements, each printed as a table:

1. **A real table** (``key_index_table``): N rows written through the Transaction API (Arrow
   upsert, ``stripe_rows`` small), keys ``id`` in write order; then the lookup
   (``snapshot.read_task(keys=...)``, the reader of ``lookup.lookup_rows``) of K sequential
   keys (the newest ids), K random existing keys and a few random keys, with and without
   pruning: stripes read / skipped and seconds. Until the writers put bloom filters in the
   files (branch ``colwrite``), this is statistics (min/max) pruning only.
2. **One ORC file with bloom filters** (pyarrow's writer, ``bloom_filter_columns``): the
   same key sets over integer ids in order, and over random string ids (UUID-like, no order:
   min/max cannot help, only blooms), counting stripes skipped by statistics and by bloom
   filters, and the seconds spent reading the index (tail + bloom streams).

Run: ``python -m bench.key_index --rows 1000000 --stripe-rows 10000`` (about a minute at 1M).
"""
from __future__ import annotations

import argparse
import io
import random
import tempfile
import time
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc

from acidflow.acid import lookup, orcindex, snapshot
from acidflow.acid.transaction import Transaction
from acidflow.catalog import Column, SqlCatalog, TableDef


def _key_sets(n: int, k: int, rnd: random.Random) -> dict[str, list[int]]:
    return {f"{k} sequential (newest)": list(range(n - k, n)),
            f"{k} random": rnd.sample(range(n), k),
            "100 random": rnd.sample(range(n), 100),
            "10 random": rnd.sample(range(n), 10)}


def table_lookup(n: int, k: int, stripe_rows: int, seed: int) -> None:
    """Measurement 1 (module doc)."""
    rnd = random.Random(seed)
    with tempfile.TemporaryDirectory() as wh:
        cat = SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=wh)
        cat.create_table(TableDef(name="db.t", primary_key=["id"], columns=[
            Column("id", "bigint"), Column("v", "string"), Column("n", "bigint")]))
        t0 = time.perf_counter()
        rows = pa.table({"id": pa.array(np.arange(n), pa.int64()),
                         "v": pa.array([f"v{i}" for i in range(n)]),
                         "n": pa.array(np.arange(n) * 7, pa.int64())})
        with Transaction(cat) as txn:
            txn.upsert("db.t", rows, stripe_rows=stripe_rows)
        print(f"table: {n} rows written in {time.perf_counter() - t0:.1f} s "
              f"(stripe_rows={stripe_rows})")
        table = cat.get_table("db.t")
        cur = lookup.plan_current(cat, table, None)
        plan = cur.plan
        print(f"{'keys':<24} {'stripes read':>12} {'skipped':>8} {'s pruned':>9} "
              f"{'s full':>7} {'rows found':>10}")
        for label, ids in _key_sets(n, k, rnd).items():
            keys = pa.table({"id": pa.array(ids, pa.int64())})
            out = {}
            for prune in (True, False):
                verdicts: list = []
                t0 = time.perf_counter()
                found = sum(b.num_rows for task in plan.tasks for b in snapshot.read_task(
                    cur.tfs, task, plan.columns, plan.partition_columns,
                    plan.valid_write_ids, row_id=True, project=["id"], keys=keys,
                    prune=prune, pruned=verdicts))
                out[prune] = (time.perf_counter() - t0, found, verdicts)
            assert out[True][1] == out[False][1] == len(ids), (label, out[True][1])
            verdicts = out[True][2]
            skipped = sum(v.skipped for _, v in verdicts)
            total = sum(len(v.keep) for _, v in verdicts)
            print(f"{label:<24} {total - skipped:>12} {skipped:>8} {out[True][0]:>9.3f} "
                  f"{out[False][0]:>7.3f} {out[True][1]:>10}")
        cat.close()


def file_index(n: int, k: int, stripe_rows: int, seed: int) -> None:
    """Measurement 2 (module doc)."""
    rnd = random.Random(seed)
    ids = np.arange(n, dtype=np.int64)
    uuids = [str(uuid.UUID(int=rnd.getrandbits(128))) for _ in range(n)]
    data = pa.table({"id": pa.array(ids), "uid": pa.array(uuids)})
    buf = io.BytesIO()
    # stripes of about stripe_rows rows: pyarrow cuts by bytes, so size them from a sample
    sample = io.BytesIO()
    paorc.write_table(data.slice(0, stripe_rows), sample, compression="zlib")
    paorc.write_table(data, buf, compression="zlib", stripe_size=len(sample.getvalue()) * 2,
                      bloom_filter_columns=[1, 2])
    raw = buf.getvalue()
    fh = io.BytesIO(raw)
    tail = orcindex.read_tail_index(fh, len(raw))
    print(f"\nfile: {n} rows, {len(tail.stripes)} stripes, bloom filters on id and uid "
          f"(fpp 0.05, row groups of {tail.row_index_stride})")
    print(f"{'column / keys':<32} {'read':>5} {'by stats':>8} {'by bloom':>8} {'index s':>8}")
    for column, col_id in (("id", 1), ("uid", 2)):
        for label, pick in _key_sets(n, k, rnd).items():
            values = pa.array(ids[pick]) if column == "id" else pa.array([uuids[i] for i in pick])
            keys = pa.table({column: values})
            t0 = time.perf_counter()
            tail = orcindex.read_tail_index(fh, len(raw))
            v = orcindex.stripes_to_read(fh, tail, [col_id], keys)
            dt = time.perf_counter() - t0
            print(f"{column + ' / ' + label:<32} {sum(v.keep):>5} {v.by_stats:>8} "
                  f"{v.by_bloom:>8} {dt:>8.3f}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--stripe-rows", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=13)
    a = p.parse_args(argv)
    table_lookup(a.rows, a.keys, a.stripe_rows, a.seed)
    file_index(a.rows, a.keys, a.stripe_rows, a.seed)


if __name__ == "__main__":
    main()
