"""The race harness: several processes write one keyed, bucketed table at once -- upserting writers
(each with its own Spark session, local[1], or the pyarrow driver path), a CDC job applying
generated wal2json change files, and a compactor (major/minor compaction plus the cleaner) -- and
every writer logs what it committed (txn id, commit id, rows) and what aborted (error class).
:func:`verify` then replays exactly the committed transactions in commit order and compares the
replay with the table, counts duplicate primary keys, and checks that every loser was aborted with a
clean error and left nothing visible.

Sizes come from a :class:`RaceConfig` (``RaceConfig.from_env``: ``ACIDFLOW_RACE_WRITERS``,
``ACIDFLOW_RACE_SPARK_WRITERS``, ``ACIDFLOW_RACE_ROUNDS``, ``ACIDFLOW_RACE_KEYS``,
``ACIDFLOW_RACE_BATCH``, ``ACIDFLOW_RACE_SEED``); ``make stress`` runs the same harness larger.

Processes are started with the ``spawn`` method (no forked SQLAlchemy engines or JVMs); they
start writing together once all are ready (Spark start-up takes a while).
"""

from __future__ import annotations

import collections
import json
import multiprocessing as mp
import os
import random
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TABLE = "default.race"
SOURCE = "public.race"
CLEAN_ERRORS = ("WriteConflictError", "LockTimeoutError")


@dataclass
class RaceConfig:
    """Size of one race.

    Attributes:
        writers: upserting processes (>= 1); the first ``spark_writers`` of them use Spark.
        spark_writers: writers with their own SparkSession (local[1]); 0 = all pyarrow.
        rounds: transactions per writer and change files of the CDC job.
        keys: the key space (0 .. keys-1) every writer draws from: small = many races.
        batch: keys per transaction.
        cdc: run the CDC job; compaction: run the compactor.
        seed: random seed (each process derives its own).
    """

    writers: int = 2
    spark_writers: int = 1
    rounds: int = 8
    keys: int = 40
    batch: int = 8
    cdc: bool = True
    compaction: bool = True
    seed: int = 15

    @classmethod
    def from_env(cls, **defaults: Any) -> "RaceConfig":
        """The config with ``ACIDFLOW_RACE_*`` environment variables over ``defaults``."""
        cfg = cls(**defaults)
        for name in ("writers", "spark_writers", "rounds", "keys", "batch", "seed"):
            raw = os.environ.get(f"ACIDFLOW_RACE_{name.upper()}")
            if raw:
                setattr(cfg, name, int(raw))
        cfg.spark_writers = min(cfg.spark_writers, cfg.writers)
        return cfg


@dataclass
class RaceResult:
    """What :func:`verify` found. ``ok`` is true when every check passed; ``problems`` lists
    the failed ones."""

    rounds: int = 0
    transactions: int = 0
    commits: int = 0
    conflicts: int = 0
    lock_timeouts: int = 0
    cdc_batches: int = 0
    cdc_retries: int = 0
    compactions: int = 0
    duplicates: int = 0
    rows: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line: rounds, commits, conflicts, duplicates and the rest."""
        d = asdict(self)
        d.pop("problems")
        return "race: " + " ".join(
            f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items()
        )


# ----------------------------------------------------------------------------- processes


def _catalog(root: Path):
    from acidflow.catalog import SqlCatalog

    wh = root / "warehouse"
    return SqlCatalog(f"sqlite:///{wh / '_acidflow_catalog.db'}", warehouse=str(wh), migrate=False)


def _wait_for_start(root: Path, name: str) -> None:
    (root / "ready" / name).touch()
    deadline = time.monotonic() + 600
    while not (root / "go").exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the race never started")
        time.sleep(0.05)


def _log(root: Path, name: str, record: dict[str, Any]) -> None:
    with open(root / "logs" / f"{name}.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")


def upsert_worker(root: str, name: str, index: int, use_spark: bool, cfg: dict) -> None:
    """A writer: ``rounds`` transactions, each upserting ``batch`` keys drawn from the shared key
    space (new and existing keys) with the value ``<name>-r<round>``; pauses a little between
    the write and the commit so transactions overlap."""
    import pyarrow as pa

    from acidflow.engine.transaction import Transaction

    rootp = Path(root)
    conf = RaceConfig(**cfg)
    rng = random.Random(conf.seed * 1000 + index)
    spark = None
    if use_spark:
        from acidflow.spark import get_spark

        spark = get_spark(
            f"race-{name}",
            master="local[1]",
            **{
                "spark.ui.enabled": "false",
                "spark.driver.memory": "1g",
                "spark.sql.shuffle.partitions": "2",
            },
        )
    catalog = _catalog(rootp)
    _wait_for_start(rootp, name)
    for r in range(conf.rounds):
        keys = sorted(rng.sample(range(conf.keys), conf.batch))
        value = f"{name}-r{r}"
        rows = [[k, value] for k in keys]
        if spark is not None:
            data = spark.createDataFrame([(k, v) for k, v in rows], "id bigint, v string")
        else:
            data = pa.table(
                {"id": pa.array(keys, pa.int64()), "v": pa.array([value] * len(keys), pa.string())}
            )
        txn = Transaction(catalog, agent_info=f"race {name}")
        record: dict[str, Any] = {"writer": name, "round": r, "kind": "upsert", "rows": rows}
        try:
            txn.begin()
            record["txn_id"] = txn.txn_id
            txn.upsert(TABLE, data)
            time.sleep(rng.uniform(0.0, 0.3))
            record["commit_id"] = txn.commit()
            record["status"] = "committed"
        except Exception as exc:  # noqa: BLE001 - logged; verify() judges it
            if txn.state == "open":
                txn.abort(f"{type(exc).__name__}: {exc}")
            record["status"] = "aborted"
            record["error"] = type(exc).__name__
            record["message"] = str(exc)[:500]
            if type(exc).__name__ not in CLEAN_ERRORS:
                record["traceback"] = traceback.format_exc(limit=6)
        _log(rootp, name, record)
    if spark is not None:
        spark.stop()


def _cdc_file(path: Path, lsn: int, ops: list[tuple[str, int, str | None]]) -> None:
    """One wal2json (v2) transaction: ``ops`` = [(I|U|D, key, value)]."""

    def cols(k: int, v: str | None) -> list[dict]:
        return [
            {"name": "id", "type": "bigint", "value": k},
            {"name": "v", "type": "text", "value": v},
        ]

    schema, table = SOURCE.split(".")
    lines: list[dict] = [{"action": "B", "xid": lsn, "lsn": f"0/{lsn:X}"}]
    for i, (op, k, v) in enumerate(ops):
        base = {
            "action": op,
            "schema": schema,
            "table": table,
            "lsn": f"0/{lsn + 1 + i:X}",
            "pk": [{"name": "id", "type": "bigint"}],
        }
        if op == "D":
            base["identity"] = [{"name": "id", "type": "bigint", "value": k}]
        else:
            base["columns"] = cols(k, v)
        lines.append(base)
    end = lsn + 1 + len(ops)
    lines.append({"action": "C", "xid": lsn, "lsn": f"0/{end:X}", "nextlsn": f"0/{end:X}"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def cdc_worker(root: str, cfg: dict) -> None:
    """The CDC job: ``rounds`` change files (inserts, updates and deletes of keys of the shared
    key space, each key at most once per file), each applied as one batch with
    ``acidflow.cdc.apply.apply_file`` (pyarrow driver path); its retry after a lost write-set
    race is part of what is tested."""
    import logging

    from acidflow.cdc import apply as cdc_apply

    rootp = Path(root)
    conf = RaceConfig(**cfg)
    rng = random.Random(conf.seed * 1000 + 999)
    catalog = _catalog(rootp)
    options = cdc_apply.CdcOptions(fmt="wal2json", quality_gate=False)
    retries = []

    class _Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "write conflict" in record.getMessage():
                retries.append(record.getMessage())

    logging.getLogger("acidflow.cdc.apply").addHandler(_Count(level=logging.WARNING))
    indir = rootp / "cdc"
    indir.mkdir(exist_ok=True)
    _wait_for_start(rootp, "cdc")
    lsn = 0x1000
    for r in range(conf.rounds):
        keys = rng.sample(range(conf.keys), conf.batch)
        ops = [(rng.choice("IUD"), k, f"cdc-r{r}") for k in keys]
        ops = [(op, k, None if op == "D" else v) for op, k, v in ops]
        path = indir / f"wal2json_{r:05d}.jsonl"
        _cdc_file(path, lsn, ops)
        lsn += 0x100
        # the batch's effect per key: a full row (insert, update; upsert semantics under the
        # default policies) or a delete
        record: dict[str, Any] = {
            "writer": "cdc",
            "round": r,
            "kind": "cdc",
            "rows": [[k, v] for op, k, v in ops if op != "D"],
            "deletes": [k for op, k, _ in ops if op == "D"],
        }
        before = len(retries)
        try:
            report = cdc_apply.apply_file(None, catalog, str(path), options)
            record.update(
                status="committed",
                txn_id=report.txn_id,
                commit_id=catalog.get_transaction(report.txn_id).commit_id,
                attempts=report.attempts,
            )
        except Exception as exc:  # noqa: BLE001 - logged; verify() judges it
            record.update(status="aborted", error=type(exc).__name__, message=str(exc)[:500])
            if type(exc).__name__ not in CLEAN_ERRORS:
                record["traceback"] = traceback.format_exc(limit=6)
        record["retries"] = len(retries) - before
        _log(rootp, "cdc", record)
        time.sleep(rng.uniform(0.0, 0.2))


def compact_worker(root: str, cfg: dict) -> None:
    """The compactor: while the writers run, alternately request a minor and a major compaction
    of the table, run the worker and the cleaner (pyarrow path)."""
    from acidflow.compactor.cleaner import run_cleaner
    from acidflow.compactor.initiator import request_compaction
    from acidflow.compactor.worker import run_worker

    rootp = Path(root)
    catalog = _catalog(rootp)
    _wait_for_start(rootp, "compactor")
    n = 0
    while not (rootp / "stop").exists():
        kind = "minor" if n % 2 == 0 else "major"
        record: dict[str, Any] = {
            "writer": "compactor",
            "round": n,
            "kind": "compaction",
            "type": kind,
        }
        try:
            request_compaction(catalog, TABLE, None, kind, requester="race")
            outcome = run_worker(None, catalog)
            run_cleaner(catalog)
            record["state"] = outcome.state if outcome else "nothing to do"
            if outcome is not None and outcome.state == "failed":
                record["error"] = str(outcome.report.get("error"))[:500]
        except Exception as exc:  # noqa: BLE001 - logged; verify() judges it
            record.update(
                state="error",
                error=f"{type(exc).__name__}: {exc}"[:500],
                traceback=traceback.format_exc(limit=6),
            )
        _log(rootp, "compactor", record)
        n += 1
        time.sleep(0.5)


# ----------------------------------------------------------------------------- driver


def run_race(root: Path, cfg: RaceConfig) -> RaceResult:
    """Create the table, start the processes, wait for them, finish with a major compaction
    and a cleaner pass, and :func:`verify` the outcome.

    Raises:
        RuntimeError: a process exited with an error (its exit code and name).
    """
    from acidflow.catalog import Column, SqlCatalog, TableDef

    t0 = time.monotonic()
    root = Path(root)
    wh = root / "warehouse"
    for d in (wh, root / "logs", root / "ready"):
        d.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(f"sqlite:///{wh / '_acidflow_catalog.db'}", warehouse=str(wh))
    catalog.create_table(
        TableDef(
            name=TABLE,
            columns=[Column("id", "bigint"), Column("v", "string")],
            primary_key=["id"],
            num_buckets=4,
        )
    )
    ctx = mp.get_context("spawn")
    conf = asdict(cfg)
    procs = []
    for i in range(cfg.writers):
        name = f"w{i}" + ("s" if i < cfg.spark_writers else "a")
        procs.append(
            ctx.Process(
                target=upsert_worker,
                name=name,
                args=(str(root), name, i, i < cfg.spark_writers, conf),
            )
        )
    if cfg.cdc:
        procs.append(ctx.Process(target=cdc_worker, name="cdc", args=(str(root), conf)))
    compactor = None
    if cfg.compaction:
        compactor = ctx.Process(target=compact_worker, name="compactor", args=(str(root), conf))
    everyone = procs + ([compactor] if compactor else [])
    for p in everyone:
        p.start()
    try:
        deadline = time.monotonic() + 900
        while len(list((root / "ready").iterdir())) < len(everyone):
            dead = [p for p in everyone if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(
                    f"race processes failed to start: {[(p.name, p.exitcode) for p in dead]}"
                )
            time.sleep(0.1)
        (root / "go").touch()
        for p in procs:
            p.join(timeout=1800)
        (root / "stop").touch()
        if compactor is not None:
            compactor.join(timeout=600)
    finally:
        for p in everyone:
            if p.is_alive():
                p.terminate()
                p.join(5)
    failed = [(p.name, p.exitcode) for p in everyone if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"race processes exited with errors: {failed}")
    # the table must survive a final compaction + clean unchanged
    from acidflow.compactor.cleaner import run_cleaner
    from acidflow.compactor.initiator import request_compaction
    from acidflow.compactor.worker import run_worker

    before = _table_rows(catalog)
    request_compaction(catalog, TABLE, None, "major", requester="race")
    outcome = run_worker(None, catalog)
    run_cleaner(catalog)
    result = verify(root, catalog, cfg)
    after = _table_rows(catalog)
    if outcome is None or outcome.state != "ready for cleaning":
        result.problems.append(f"final major compaction: {outcome}")
    if sorted(before) != sorted(after):
        result.problems.append("the final major compaction changed the table")
    stuck = catalog.list_compactions(TABLE, states=("ready for cleaning",))
    if stuck:  # nothing is open any more: every compaction must be cleaned by now
        result.problems.append(f"compactions never cleaned: {[c.id for c in stuck]}")
    result.seconds = time.monotonic() - t0
    catalog.close()
    return result


def _table_rows(catalog) -> list[tuple[int, str]]:
    from acidflow.read import table as reads

    return [(r["id"], r["v"]) for r in reads.read_table(None, catalog, TABLE).to_pylist()]


def read_logs(root: Path) -> list[dict[str, Any]]:
    """Every record every process logged."""
    out = []
    for f in sorted((Path(root) / "logs").glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def verify(root: Path, catalog, cfg: RaceConfig) -> RaceResult:
    """Compare the table with a serial replay of the committed transactions (commit order),
    count duplicate keys, and check the losers and the catalog's view of every transaction."""
    res = RaceResult(rounds=cfg.rounds)
    records = read_logs(root)
    writes = [r for r in records if r["kind"] in ("upsert", "cdc")]
    res.transactions = len(writes)
    committed = sorted(
        (r for r in writes if r["status"] == "committed"), key=lambda r: r["commit_id"]
    )
    losers = [r for r in writes if r["status"] == "aborted"]
    res.commits = len(committed)
    res.conflicts = sum(1 for r in losers if r.get("error") == "WriteConflictError")
    res.lock_timeouts = sum(1 for r in losers if r.get("error") == "LockTimeoutError")
    res.cdc_batches = sum(1 for r in committed if r["kind"] == "cdc")
    res.cdc_retries = sum(r.get("retries", 0) for r in writes if r["kind"] == "cdc")
    compactions = [r for r in records if r["kind"] == "compaction"]
    res.compactions = sum(
        1 for r in compactions if r.get("state") in ("ready for cleaning", "succeeded")
    )
    for r in losers:
        if r.get("error") not in CLEAN_ERRORS:
            res.problems.append(
                f"{r['writer']} round {r['round']}: unclean abort "
                f"{r.get('error')}: {r.get('message')}\n{r.get('traceback')}"
            )
    for r in compactions:
        if r.get("state") in ("error", "failed"):
            res.problems.append(
                f"compactor round {r['round']}: {r.get('error')}\n{r.get('traceback')}"
            )
    # serial replay of exactly the committed transactions, in commit order
    expected: dict[int, str] = {}
    for r in committed:
        for k, v in r["rows"]:
            expected[k] = v
        for k in r.get("deletes", []):
            expected.pop(k, None)
    actual = _table_rows(catalog)
    counts = collections.Counter(k for k, _ in actual)
    dups = {k: n for k, n in counts.items() if n > 1}
    res.duplicates = sum(n - 1 for n in dups.values())
    res.rows = len(actual)
    if dups:
        res.problems.append(f"duplicate primary keys: {sorted(dups.items())[:10]}")
    got = dict(actual)
    if got != expected:
        diff = sorted(set(got.items()) ^ set(expected.items()))[:10]
        res.problems.append(
            f"table != serial replay of the committed transactions; "
            f"differences (key, value) e.g. {diff}"
        )
    # the catalog agrees: committed ones have commit records, losers are aborted, and every
    # aborted transaction of a writer ended with a clean error
    records_by_txn = {c.txn_id: c for c in catalog.commit_records(TABLE)}
    for r in committed:
        if r["txn_id"] not in records_by_txn:
            res.problems.append(f"txn {r['txn_id']} logged committed has no commit record")
    logged = {r["txn_id"] for r in committed}
    extra = set(records_by_txn) - logged
    if extra:
        res.problems.append(f"commit records of transactions no writer logged: {sorted(extra)}")
    for r in losers:
        if "txn_id" in r and catalog.get_transaction(r["txn_id"]).state != "aborted":
            res.problems.append(f"loser txn {r['txn_id']} is not aborted in the catalog")
    valid = catalog.valid_write_ids(TABLE)
    for t in catalog.list_transactions(states=["aborted"]):
        wid = t.write_ids.get(TABLE)
        if wid is not None and valid.is_write_id_valid(wid):
            res.problems.append(f"aborted txn {t.txn_id}'s write id {wid} is visible")
        if (t.agent_info or "").startswith("compactor"):
            continue
        reason = t.abort_reason or ""
        if "write conflict" not in reason and "lock" not in reason.lower():
            res.problems.append(f"txn {t.txn_id} ({t.agent_info}) aborted for {reason!r}")
    return res
