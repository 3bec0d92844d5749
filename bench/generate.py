"""Deterministic benchmark data: a table of N rows and B change batches of K GoldenGate events.

Files written under ``OUT`` (same seed and sizes = byte-identical files)::

    base.parquet            the initial table, N rows (ids 0..N-1)
    batch_0001.jsonl ...    B change batches, K GoldenGate JSON events each (one per line)
    expected_0001.parquet   the table after batch 1, and expected_<B>.parquet after batch B
    meta.json               sizes, seed, and per batch the event counts by kind

Row schema (all tools): ``id`` bigint (the key), ``name`` string, ``age`` int, ``city`` string,
``updated_at`` timestamp (microseconds, no time zone), ``payload`` string (60 characters). A row
version is a pure function of ``(id, version)`` plus its ``updated_at``, so the state kept while
generating is only ``live``, ``version`` and ``updated_at`` per id.

A change batch (K events; ``pos`` strictly increasing through the file, ``op_ts`` increasing with
it except for late events):

* about 10% of the touched keys change twice in the batch (U then U, I then U, or U then D);
* of all events about 55% are updates of existing keys, 30% inserts of new keys, 15% deletes;
* ``max(2, K // 1000)`` of the single updates and deletes are *late*: their ``op_ts`` is one
  hour older than the stored row's ``updated_at``, so every tool must ignore them.

The expected table applies, per key, the latest event by ``(op_ts, pos)`` when it is newer than
the stored row (``updated_at``): updates and inserts write the after image (``updated_at`` =
``op_ts``), deletes remove the row.

Run: ``python -m bench.generate OUT --rows N --events K [--batches B] [--seed S]``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TABLE = "BENCH.ITEMS"
CITIES = np.array(
    [
        "Amsterdam",
        "Berlin",
        "Cairo",
        "Dakar",
        "Edinburgh",
        "Fukuoka",
        "Geneva",
        "Hanoi",
        "Istanbul",
        "Jakarta",
        "Kyiv",
        "Lima",
        "Madrid",
        "Nairobi",
        "Oslo",
        "Porto",
    ]
)
ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8
)
PAYLOAD_LEN = 60
EPOCH = datetime(1970, 1, 1)
BASE_START_US = int((datetime(2024, 1, 1) - EPOCH).total_seconds() * 1_000_000)
BATCH_START = datetime(2025, 1, 1)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("age", pa.int32()),
        ("city", pa.string()),
        ("updated_at", pa.timestamp("us")),
        ("payload", pa.string()),
    ]
)
CHUNK = 1_000_000


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (uint64 -> uint64), vectorised."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
    x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)).astype(np.uint64)
    x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)).astype(np.uint64)
    return x ^ (x >> np.uint64(31))


def row_values(ids: np.ndarray, versions: np.ndarray) -> dict[str, np.ndarray | pa.Array]:
    """``name``, ``age``, ``city`` and ``payload`` of row versions ``(id, version)``."""
    with np.errstate(over="ignore"):
        h = _mix(ids.astype(np.uint64) * np.uint64(1_000_003) + versions.astype(np.uint64))
        words = np.stack([_mix(h + np.uint64(j)) for j in range(8)], axis=1)  # n x 64 bytes
    chars = ALPHABET[words.view(np.uint8).reshape(len(ids), 64)[:, :PAYLOAD_LEN] & 63]
    payload = pa.array(np.ascontiguousarray(chars).view(f"S{PAYLOAD_LEN}").ravel()).cast(
        pa.string()
    )
    names = pc.binary_join_element_wise(
        "user_",
        pc.cast(pa.array(ids), pa.string()),
        "_v",
        pc.cast(pa.array(versions), pa.string()),
        "",
    )
    return {
        "name": names,
        "age": (18 + (h % np.uint64(70))).astype(np.int32),
        "city": CITIES[(h >> np.uint64(8)) % np.uint64(len(CITIES))],
        "payload": payload,
    }


def rows_table(ids: np.ndarray, versions: np.ndarray, updated_us: np.ndarray) -> pa.Table:
    """Arrow table (:data:`SCHEMA`) of the given row versions."""
    v = row_values(ids, versions)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": v["name"],
            "age": pa.array(v["age"], pa.int32()),
            "city": pa.array(v["city"]),
            "updated_at": pa.array(updated_us, pa.timestamp("us")),
            "payload": v["payload"],
        },
        schema=SCHEMA,
    )


@dataclass
class State:
    """The table while generating: per id ``live``, ``version`` and ``updated_at`` (µs)."""

    live: np.ndarray
    version: np.ndarray
    updated: np.ndarray
    next_id: int

    @classmethod
    def initial(cls, n: int, capacity: int) -> "State":
        live = np.zeros(capacity, bool)
        live[:n] = True
        updated = np.zeros(capacity, np.int64)
        # spread over 2024, whole microseconds, distinct per id
        updated[:n] = BASE_START_US + (np.arange(n, dtype=np.int64) * 3_137_777) % (
            365 * 86_400_000_000
        )
        return cls(live, np.zeros(capacity, np.int32), updated, n)

    def write(self, path: Path) -> int:
        """Write the live rows (sorted by id) to ``path``; returns the row count."""
        ids = np.flatnonzero(self.live)
        with pq.ParquetWriter(path, SCHEMA, compression="zstd") as w:
            for i in range(0, len(ids), CHUNK):
                part = ids[i : i + CHUNK]
                w.write_table(rows_table(part, self.version[part], self.updated[part]))
        return len(ids)


def ts_text(us: int) -> str:
    """GoldenGate ``op_ts`` text of a microsecond timestamp."""
    return (EPOCH + timedelta(microseconds=int(us))).strftime("%Y-%m-%d %H:%M:%S.%f")


def plan_batch(state: State, k: int, rng: np.random.Generator) -> list[tuple[str, int, bool]]:
    """The ``(op, id, late)`` events of one batch in file order (see module docstring)."""
    touched = max(1, round(k / 1.1))
    doubles = round(touched * 0.1)
    d_uu, d_iu = doubles // 3, doubles // 3
    d_ud = doubles - d_uu - d_iu
    inserts = max(0, round(0.30 * k) - d_iu)
    deletes = max(0, round(0.15 * k) - d_ud)
    updates = max(0, k - 2 * doubles - inserts - deletes)
    live_ids = np.flatnonzero(state.live)
    n_existing = d_uu + d_ud + updates + deletes
    existing = rng.choice(live_ids, size=n_existing, replace=False)
    new_ids = np.arange(state.next_id, state.next_id + d_iu + inserts)
    state.next_id += len(new_ids)
    late = max(2, k // 1000)
    groups: list[list[tuple[str, int, bool]]] = []
    i = 0
    for _ in range(d_uu):
        groups.append([("U", int(existing[i]), False), ("U", int(existing[i]), False)])
        i += 1
    for _ in range(d_ud):
        groups.append([("U", int(existing[i]), False), ("D", int(existing[i]), False)])
        i += 1
    for j in range(updates):
        groups.append([("U", int(existing[i]), j < late - late // 2)])
        i += 1
    for j in range(deletes):
        groups.append([("D", int(existing[i]), j < late // 2)])
        i += 1
    for j in range(d_iu):
        groups.append([("I", int(new_ids[j]), False), ("U", int(new_ids[j]), False)])
    for j in range(d_iu, d_iu + inserts):
        groups.append([("I", int(new_ids[j]), False)])
    # interleave: each event gets a random slot; a key's second event comes after its first
    slots = rng.permutation(sum(len(g) for g in groups))
    order, s = [], 0
    for g in groups:
        mine = sorted(slots[s : s + len(g)])
        s += len(g)
        order += [(slot, ev) for slot, ev in zip(mine, g)]
    order.sort(key=lambda t: t[0])
    return [ev for _, ev in order]


def write_batch(
    state: State, events: list[tuple[str, int, bool]], batch_no: int, path: Path
) -> dict[str, int]:
    """Write the batch's GoldenGate JSON lines and apply it to ``state``; returns counts."""
    start_us = int((BATCH_START + timedelta(days=batch_no) - EPOCH).total_seconds() * 1_000_000)
    counts = {"I": 0, "U": 0, "D": 0, "late": 0}
    # pass 1 (sequential): event times and row versions, state updated
    op_us, vers = [], []
    for seq, (op, key, late) in enumerate(events):
        t = int(state.updated[key]) - 3_600_000_000 if late else start_us + seq
        op_us.append(t)
        counts[op] += 1
        counts["late"] += late
        ver = 0 if op == "I" else int(state.version[key]) + (0 if late or op == "D" else 1)
        vers.append(ver)
        if late:
            continue
        if op == "D":
            state.live[key] = False
        else:
            state.live[key] = True
            state.version[key] = ver
            state.updated[key] = t
    # pass 2: after images, vectorised
    ids = np.array([k for _, k, _ in events], np.int64)
    v = row_values(ids, np.array(vers, np.int32))
    names, payloads = v["name"].to_pylist(), v["payload"].to_pylist()
    ages, cities = v["age"].tolist(), v["city"].tolist()
    with path.open("w") as f:
        for seq, (op, key, late) in enumerate(events):
            ts = ts_text(op_us[seq])
            rec = {
                "table": TABLE,
                "op_type": op,
                "op_ts": ts,
                "current_ts": ts_text(start_us + seq + 5_000_000),
                "pos": f"{batch_no:06d}{seq:014d}",
                "primary_keys": ["ID"],
            }
            if op == "D":
                rec["before"], rec["after"] = {"ID": key}, None
            else:
                rec["before"] = None if op == "I" else {"ID": key}
                rec["after"] = {
                    "ID": key,
                    "NAME": names[seq],
                    "AGE": ages[seq],
                    "CITY": cities[seq],
                    "UPDATED_AT": ts,
                    "PAYLOAD": payloads[seq],
                }
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    return counts


def generate(out: str | Path, rows: int, events: int, batches: int = 10, seed: int = 42) -> dict:
    """Write the files listed in the module docstring; returns the ``meta.json`` content.

    Args:
        out: directory (created).
        rows: N, rows of the initial table.
        events: K, events per batch.
        batches: B, number of batches (expected tables after 1 and after B).
        seed: random seed (numpy ``default_rng``).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    state = State.initial(rows, rows + batches * events + 1)
    meta = {
        "rows": rows,
        "events": events,
        "batches": batches,
        "seed": seed,
        "table": TABLE,
        "base_rows": state.write(out / "base.parquet"),
        "batch_counts": [],
        "expected_rows": {},
    }
    for b in range(1, batches + 1):
        counts = write_batch(state, plan_batch(state, events, rng), b, out / f"batch_{b:04d}.jsonl")
        meta["batch_counts"].append(counts)
        if b in (1, batches):
            meta["expected_rows"][b] = state.write(out / f"expected_{b:04d}.parquet")
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    return meta


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args(argv)
    print(json.dumps(generate(a.out, a.rows, a.events, a.batches, a.seed)))


if __name__ == "__main__":
    main()
