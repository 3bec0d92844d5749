"""Where one bucket's major compaction goes: process CPU and wall time of each part of
``rewrite.run_task`` and of the verification, on the table ``bench.run`` leaves after its
batches (``WORK/n<N>_s<seed>/acidflow.after``).

Parts: the snapshot read of base + deltas + delete deltas, the digest of the rows read, building
the event table, the zlib ORC write (with the old writer options, ``dictionary_key_size_threshold``
0, and the current ones), the digest of the events handed to the writer, the footer check
(``verify.written_checksum``) and, for comparison, the read-back of the new file with its digest
(``acidflow.compactor.verify=readback``). Process time is what to compare on a shared machine.

``--side-by-side R``: then R rounds, in one warm SparkSession (``local[2]``), of the whole major
compaction (queue entry + worker, Spark tasks) next to the plain Spark ORC rewrite of the same
rows (``bench.tools``' ``spark-orc rewrite`` of ``expected_<B>``), each with its wall time and
the CPU time of the whole process tree (driver, JVM, Python workers): CPU ratios hold on a
loaded machine where wall ratios swing by 2x. Round 0 is a cold session (as ``bench.run``'s
fresh-process steps); the plain rewrite's JVM code warms up over the later rounds.

Run: ``python -m bench.compaction_parts --root build/bench/n1000000_s42 --runs 3
--side-by-side 4``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import pyarrow as pa

from acidflow.compactor.initiator import request_compaction
from acidflow.compactor.worker import run_worker
from acidflow.format.layout import ValidWriteIdList
from acidflow.format.orc import columnar
from acidflow.format.orc import files as acid_files
from acidflow.maintenance import compaction, rewrite, verify
from acidflow.read import snapshot
from acidflow.storage.fs import TableFS
from bench.run import snapshot_dir
from bench.tools import TABLE, _acid_catalog, spark_session


class _Planned(Exception):
    """Stops the worker once its tasks are planned."""


def planned_task(root: Path) -> rewrite.CompactTask:
    """The first bucket's task of a major compaction of the restored table (nothing written)."""
    snapshot_dir(root / "acidflow.after", root / "acidflow")
    catalog = _acid_catalog(root / "acidflow")
    tasks: list[rewrite.CompactTask] = []

    def capture(spark: Any, planned: list[rewrite.CompactTask]) -> list[dict]:
        tasks.extend(planned)
        raise _Planned

    real = compaction._write_outputs
    compaction._write_outputs = capture  # type: ignore[assignment]
    try:
        entry = request_compaction(catalog, TABLE, None, "major", requester="bench")
        run_worker(None, catalog, cq_id=entry.id)
    finally:
        compaction._write_outputs = real  # type: ignore[assignment]
    return tasks[0]


def parts(task: rewrite.CompactTask, runs: int) -> dict[str, tuple[float, float]]:
    """``{part: (best CPU s, best wall s)}`` over ``runs`` repetitions."""
    tfs = TableFS(task.tfs_url)
    valid = ValidWriteIdList.from_string(task.valid)
    columns = [(c[0], c[1]) for c in task.columns]
    names = [c[0] for c in columns]
    out: dict[str, list[tuple[float, float]]] = {}

    def clock(label: str, fn: Callable[[], Any]) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        value = fn()
        out.setdefault(label, []).append((time.process_time() - c0, time.perf_counter() - w0))
        return value

    def events(batches: list[pa.RecordBatch]) -> pa.Table:
        t = pa.Table.from_batches(batches)
        rid = t.column(snapshot.ROW_ID).combine_chunks()
        owid = rid.field(0)
        head = [rewrite._ops(len(owid), acid_files.OPERATION_INSERT), owid, rid.field(1)]
        ev = pa.table(
            head + [rid.field(2), owid] + [t.column(n) for n in names],
            names=list(acid_files.EVENT_FIELDS[:5]) + names,
        )
        return rewrite._sorted_by_key(ev)

    threshold = columnar.DICTIONARY_KEY_THRESHOLD
    for _ in range(runs):
        batches = clock(
            "read base + deltas + delete deltas",
            lambda: list(
                snapshot.read_task(tfs, task.read_task(), columns, [], valid, row_id=True)
            ),
        )
        clock("digest of the rows read", lambda: verify.checksum_batches(batches, names))
        ev = clock("build the event table", lambda: events(batches))
        path = os.path.join(tempfile.mkdtemp(prefix="compaction_parts_"), "bucket_00000")
        handed: list[pa.RecordBatch] = []
        try:
            for label, value in (("ORC write, dictionary 0 (old)", 0.0), ("ORC write", threshold)):
                columnar.DICTIONARY_KEY_THRESHOLD = value
                handed.clear()
                done = clock(
                    label,
                    lambda: columnar.write_event_table(
                        tfs,
                        path,
                        columns,
                        ev,
                        stripe_bytes=task.stripe_bytes,
                        on_batch=handed.append,
                    ),
                )
        finally:
            columnar.DICTIONARY_KEY_THRESHOLD = threshold
        schema = batches[0].schema
        clock("digest of the events written", lambda: verify.events_checksum(handed, names, schema))
        row = {**done.to_dict(), "key_index": done.key_index, "s1": "0", "s2": "0"}
        clock("footer check", lambda: verify.written_checksum(tfs, [row], [path]))
        back = snapshot.ReadTask("", task.bucket_id, [snapshot.DataFile(path, "base", 0)], [])
        clock(
            "read-back + digest (readback)",
            lambda: verify.checksum_task(task.tfs_url, back, columns, valid),
        )
        print(f"rows of the bucket: {ev.num_rows}", flush=True)
    return {k: (min(c for c, _ in v), min(w for _, w in v)) for k, v in out.items()}


def _tree_cpu(me: psutil.Process) -> float:
    """CPU seconds of ``me`` and every process below it (reaped children included)."""
    total = 0.0
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:  # a worker that ended between the listing and the read
            pass
    return total


def side_by_side(root: Path, rounds: int, batch: int) -> None:
    """Print ``rounds`` rounds of (major compaction, plain rewrite): wall and tree CPU."""
    spark, _ = spark_session()
    me = psutil.Process()
    src = str(root / "spark-orc" / f"expected_{batch:04d}")
    dst = tempfile.mkdtemp(prefix="compaction_parts_rewrite_")

    def measure(fn: Callable[[], Any]) -> tuple[float, float]:
        c0, w0 = _tree_cpu(me), time.perf_counter()
        fn()
        return time.perf_counter() - w0, _tree_cpu(me) - c0

    for i in range(rounds):
        snapshot_dir(root / "acidflow.after", root / "acidflow")
        catalog = _acid_catalog(root / "acidflow")

        def compact() -> None:
            entry = request_compaction(catalog, TABLE, None, "major", requester="bench")
            out = run_worker(spark, catalog, cq_id=entry.id)
            assert out.state == "ready for cleaning", out.report

        cw, cc = measure(compact)
        rw, rc = measure(lambda: spark.read.orc(src).write.mode("overwrite").orc(dst))
        print(
            f"round {i}: compaction wall {cw:5.2f} s cpu {cc:5.2f} s | plain rewrite wall "
            f"{rw:5.2f} s cpu {rc:5.2f} s | ratio wall {cw / rw:4.2f} cpu {cc / rc:4.2f}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="bench.run's WORK/n<N>_s<seed>")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--side-by-side", type=int, default=0, metavar="R", help="rounds (see doc)")
    ap.add_argument("--batches", type=int, default=10, help="bench.run's --batches")
    a = ap.parse_args(argv)
    if a.runs:
        for label, (cpu, wall) in parts(planned_task(a.root), a.runs).items():
            print(f"{label:36s} cpu {cpu:6.3f} s  wall {wall:6.3f} s")
    if a.side_by_side:
        side_by_side(a.root, a.side_by_side, a.batches)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
