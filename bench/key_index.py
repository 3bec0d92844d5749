"""How well the key index prunes: stripes read vs skipped by a key lookup, sequential vs random
keys.

Two tables of N rows written through the Transaction API (Arrow upsert, ``stripe_rows``
small; the writers put ORC bloom filters on the primary key, ``orc.bloom.filter.columns``):
``id bigint`` keys in write order, and ``uid string`` keys in no order (UUID-like: every
stripe's min/max spans nearly everything, only bloom filters can skip). For each, the lookup
(``snapshot.read_task(keys=...)``, the reader of ``lookup.lookup_rows``) of K sequential keys
(the newest rows), K random existing keys, 100 and 10 random keys, with and without pruning:
stripes read, skipped by statistics, skipped by bloom filters, seconds (best of three, one
thread, local disk; every lookup's rows checked equal with and without pruning), and the
file reads and bytes each lookup makes (every read is a round trip on object storage: what a
sidecar index could save).

Run: ``python -m bench.key_index --rows 1000000 --keys 10000 --stripe-rows 10000``.

``--upsert 200000,1000000`` instead measures the sidecar key index (``acidflow.read.keyindex``):
per size, a table of random string keys (``uid``) written and major-compacted (so its base
carries ``_acidflow_key_index.parquet``), then the key lookup of a K-key upsert
(``lookup.existing_rows_arrow``, best of three) and the whole upsert (``Transaction.upsert``
of K random existing keys, once) with and without the sidecar (``ACIDFLOW_KEY_SIDECAR``), and
the bytes the lookup reads (data files and sidecar), and the growth of each from the smallest
to the largest size.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.compactor import initiator, worker
from acidflow.compactor.config import CompactorConfig
from acidflow.engine import lookup
from acidflow.engine.transaction import Transaction
from acidflow.read import snapshot
from acidflow.storage.fs import TableFS


class _CountingFile:
    """A file whose reads are counted (each read is a round trip on object storage)."""

    def __init__(self, raw: Any, counts: dict[str, int]):
        self._raw, self._counts = raw, counts

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self._counts["reads"] += 1
        self._counts["bytes"] += len(data)
        return data

    def readinto(self, buf: Any) -> int:
        n = self._raw.readinto(buf)
        self._counts["reads"] += 1
        self._counts["bytes"] += n or 0
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def __enter__(self) -> "_CountingFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()


class _CountingFS:
    """A TableFS whose opened files count their reads into ``counts``."""

    def __init__(self, tfs: TableFS):
        self._tfs = tfs
        self.counts = {"reads": 0, "bytes": 0}

    def open(self, path: str, mode: str = "rb") -> Any:
        return _CountingFile(self._tfs.open(path, mode), self.counts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tfs, name)


def _key_sets(n: int, k: int, rnd: random.Random) -> dict[str, list[int]]:
    return {
        f"{k} sequential (newest)": list(range(n - k, n)),
        f"{k} random": rnd.sample(range(n), k),
        "100 random": rnd.sample(range(n), 100),
        "10 random": rnd.sample(range(n), 10),
    }


def table_lookup(n: int, k: int, stripe_rows: int, seed: int, key: str) -> None:
    """One table (module doc); ``key``: ``id`` (ordered bigint) or ``uid`` (unordered string)."""
    rnd = random.Random(seed)
    ids = np.arange(n)
    values = (
        pa.array(ids, pa.int64())
        if key == "id"
        else pa.array([f"{rnd.getrandbits(128):032x}" for _ in range(n)])
    )
    with tempfile.TemporaryDirectory() as wh:
        cat = SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=wh)
        cat.create_table(
            TableDef(
                name="db.t",
                primary_key=[key],
                columns=[Column(key, "bigint" if key == "id" else "string"), Column("v", "string")],
            )
        )
        t0 = time.perf_counter()
        with Transaction(cat) as txn:
            # uncompressed: exact stripes of stripe_rows rows (a zlib stripe is cut only
            # once a compression block is full)
            txn.upsert(
                "db.t",
                pa.table({key: values, "v": pa.array([f"v{i}" for i in ids])}),
                stripe_rows=stripe_rows,
                compression="none",
            )
        print(
            f"\ntable with {key} keys: {n} rows written in {time.perf_counter() - t0:.1f} s "
            f"(stripe_rows={stripe_rows})"
        )
        cur = lookup.plan_current(cat, cat.get_table("db.t"), None)
        plan = cur.plan
        print(
            f"{'keys':<24} {'read':>5} {'by stats':>8} {'by bloom':>8} {'s pruned':>9} "
            f"{'s full':>7} {'file reads pruned/full':>22} {'MB pruned/full':>15}"
        )
        for label, pick in _key_sets(n, k, rnd).items():
            keys = pa.table({key: values.take(pa.array(pick))})
            out: dict = {}
            reads: dict = {}
            for rep in range(4):  # the first counts reads, then best of three, interleaved
                for prune in (True, False):
                    verdicts: list = []
                    fs: Any = _CountingFS(cur.tfs) if rep == 0 else cur.tfs
                    t0 = time.perf_counter()
                    found = pa.Table.from_batches(
                        [
                            b
                            for task in plan.tasks
                            for b in snapshot.read_task(
                                fs,
                                task,
                                plan.columns,
                                plan.partition_columns,
                                plan.valid_write_ids,
                                row_id=True,
                                project=[key],
                                keys=keys,
                                prune=prune,
                                pruned=verdicts,
                            )
                        ]
                    )
                    took = time.perf_counter() - t0
                    if rep == 0:
                        reads[prune] = fs.counts
                    elif prune not in out or took < out[prune][0]:
                        out[prune] = (took, found, verdicts)
            assert out[True][1].num_rows == len(pick)
            assert out[True][1].sort_by(key).equals(out[False][1].sort_by(key)), label
            verdicts = out[True][2]
            stats = sum(v.by_stats for _, v in verdicts)
            bloom = sum(v.by_bloom for _, v in verdicts)
            total = sum(len(v.keep) for _, v in verdicts)
            r, f = reads[True], reads[False]
            print(
                f"{label:<24} {total - stats - bloom:>5} {stats:>8} {bloom:>8} "
                f"{out[True][0]:>9.3f} {out[False][0]:>7.3f} "
                f"{str(r['reads']) + '/' + str(f['reads']):>22} "
                f"{r['bytes'] / 2**20:>7.1f}/{f['bytes'] / 2**20:<7.1f}"
            )
        cat.close()


def _upsert_times(n: int, k: int, seed: int) -> dict[str, float]:
    """Seconds of the lookup and of the whole upsert of ``k`` random existing keys in a
    compacted table of ``n`` random string keys, with (``on``) and without (``off``) the
    sidecar (module doc)."""
    rnd = random.Random(seed)
    uids = pa.array([f"{rnd.getrandbits(128):032x}" for _ in range(n)])
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as wh:
        cat = SqlCatalog(f"sqlite:///{wh}/_acidflow_catalog.db", warehouse=wh)
        cat.create_table(
            TableDef(
                name="db.t",
                primary_key=["uid"],
                columns=[Column("uid", "string"), Column("v", "string")],
            )
        )
        with Transaction(cat) as txn:
            txn.upsert("db.t", pa.table({"uid": uids, "v": pa.array(["v0"] * n)}))
        info = initiator.request_compaction(cat, "db.t", None, "major")
        worker.run_worker(None, cat, cq_id=info.id, config=CompactorConfig(target_file_bytes=0))
        table = cat.get_table("db.t")
        for mode in ("on", "off"):
            os.environ["ACIDFLOW_KEY_SIDECAR"] = "1" if mode == "on" else "0"
            keys = pa.table({"uid": uids.take(pa.array(rnd.sample(range(n), k)))})
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                found = lookup.existing_rows_arrow(cat, table, None, keys)
                best = min(best, time.perf_counter() - t0)
            assert found.num_rows == k, (mode, found.num_rows)
            out[f"lookup {mode}"] = best
            cur = lookup.plan_current(cat, table, None)
            counting: Any = _CountingFS(cur.tfs)
            lookup.lookup_rows(
                None, lookup.CurrentPlan(counting, cur.table_dir, cur.plan), keys, project=["uid"]
            )
            out[f"MB read {mode}"] = counting.counts["bytes"] / 2**20
            rows = pa.table({"uid": keys.column(0), "v": pa.array([f"v-{mode}"] * k)})
            t0 = time.perf_counter()
            with Transaction(cat) as txn:
                txn.upsert("db.t", rows)
            out[f"upsert {mode}"] = time.perf_counter() - t0
        os.environ.pop("ACIDFLOW_KEY_SIDECAR", None)
        cat.close()
    return out


def upsert_growth(sizes: list[int], k: int, seed: int) -> None:
    """Print :func:`_upsert_times` per size and the growth from the first size to the last."""
    results = {n: _upsert_times(n, k, seed) for n in sizes}
    cols = list(results[sizes[0]])
    print(f"\n{k}-key upsert of random string keys into a major-compacted table (seconds)")
    print(f"{'rows':>10} " + " ".join(f"{c:>11}" for c in cols))
    for n, r in results.items():
        print(f"{n:>10} " + " ".join(f"{r[c]:>11.3f}" for c in cols))
    lo, hi = results[sizes[0]], results[sizes[-1]]
    print(
        f"{'growth':>10} "
        + " ".join(f"{hi[c] / lo[c]:>10.2f}x" for c in cols)
        + f"  ({sizes[-1]} / {sizes[0]} rows)"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--stripe-rows", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument(
        "--upsert",
        default="",
        help="comma-separated table sizes: measure the sidecar key index instead (module doc)",
    )
    a = p.parse_args(argv)
    if a.upsert:
        upsert_growth([int(x) for x in a.upsert.split(",")], a.keys, a.seed)
        return
    for key in ("id", "uid"):
        table_lookup(a.rows, a.keys, a.stripe_rows, a.seed, key)


if __name__ == "__main__":
    main()
