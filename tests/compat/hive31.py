"""Hive 3.1.3's own code as a test oracle: its ACID reader, and its streaming writer.

Both run as a separate JVM (``java -cp`` the classes ``make hive-jars`` compiles from
``tools/hive/java`` plus Hive 3.1.3's jars, :meth:`HiveArtifacts.tools_classpath`): Spark's
JVM holds Hive 2.3's classes (``tests/compat/hive23.py`` is that oracle), so Hive 3.1 cannot be
loaded there.

Reader (:class:`Hive31Oracle`, :func:`read_acid`): ``acidflow.hive31.AcidRead`` reads a table
or partition directory with Hive 3.1.3's ``OrcInputFormat`` in ACID mode -- ``getSplits``
(``AcidUtils.getAcidState`` under the ``ValidReaderWriteIdList`` given as
``hive.txn.valid.writeids``) then ``getRecordReader``, which with vectorization off is the
row-by-row ``OrcRawRecordMerger`` (or the original-file reader with synthetic ROW__IDs) -- and
returns every visible row with its ROW__ID from ``AcidRecordReader.getRecordIdentifier()``.
With ``vectorized=True`` every split goes through
``VectorizedOrcAcidRowBatchReader`` instead (what a vectorized Hive 3 query runs), with the
``ROW__ID`` virtual column in its batch context so that it fills ROW__IDs too. Conf keys set
(``AcidRead.jobConf``): ``hive.transactional.table.scan=true``,
``transactional=true``, ``transactional_properties=default``,
``hive.txn.operational.properties=1`` (split-update), ``columns`` / ``columns.types`` and
``schema.evolution.columns(.types)``, ``bucket_count``, ``hive.txn.valid.writeids``, optionally
``hive.txn.valid.txns``; vectorization off. Hive 3.1 reads ORC timestamps and dates into its
zone-less ``common.type.Timestamp`` / ``Date``, and the JVM runs with ``-Duser.timezone=UTC``.

Measured (``test_hive31_fixtures.py::test_jobconf_keys_that_matter``, both readers): without
``transactional`` Hive 3.1 silently returns no rows; without ``schema.evolution.columns(.types)``
it fails with Error 30020; without ``hive.transactional.table.scan`` the row path hands out a
plain ORC reader and the vectorized one fails with Error 30022; without
``hive.txn.valid.writeids`` every write id is valid. ``transactional_properties``,
``hive.txn.operational.properties`` (unlike Hive 2.3, which then ignores delete deltas),
``columns`` / ``columns.types`` and ``bucket_count`` change nothing on that fixture.

One JVM answers any number of reads (stdin requests, see ``AcidRead.java``): a
:class:`Hive31Oracle` keeps one open (measured: JVM start ~0.5 s, a 23,000-row read ~1.2 s
cold); :func:`read_acid` starts one per call.

Writer (:func:`stream_write`): ``acidflow.hive31.StreamWrite`` streams delimited rows into an
existing transactional table through a metastore with Hive 3.1.3's ``HiveStreamingConnection``
and ``StrictDelimitedInputWriter``: one or more transactions (commit or abort), each its own
write id, ``delta_w_w`` directories written by Hive's ORC record updater.
"""

from __future__ import annotations

import base64
import collections
import datetime as dt
import decimal
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pytest

from acidflow.catalog.base import Catalog
from acidflow.format.writeids import ValidWriteIdList
from acidflow.read import table as reads
from devservers.hms import HiveArtifacts, HiveArtifactsMissing

READER_MAIN = "acidflow.hive31.AcidRead"
WRITER_MAIN = "acidflow.hive31.StreamWrite"

#: Java 17 flags Hive 3.1's ql needs: ``StringInternUtils`` (loaded by ``Utilities``, which
#: ``OrcInputFormat.getRecordReader`` touches) makes ``java.net.URI``'s fields accessible, and
#: Hive's Kryo / reflection utilities reach into java.lang / java.util / java.nio.
JAVA_OPTIONS: tuple[str, ...] = (
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "-Duser.timezone=UTC",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
)


class Hive31Error(RuntimeError):
    """Hive 3.1.3's reader or writer failed; the message carries the Java exception and stack
    (or the JVM's stderr tail when it died)."""


class Hive31Row(NamedTuple):
    """One row Hive 3.1.3 returned: its ROW__ID (``write_id`` = originalTransaction,
    ``bucket`` = the bucket property (BucketCodec V1: ``1<<29 | bucket<<16 | statement``),
    ``row_id``), the column values in table order, and the partition directory it came from
    (relative to the table directory; ``None`` for an unpartitioned read)."""

    write_id: int
    bucket: int
    row_id: int
    values: tuple[Any, ...]
    partition: str | None = None

    @property
    def row_id_struct(self) -> tuple[int, int, int]:
        """``(writeid, bucketid, rowid)``, as acidflow's ``ROW__ID`` struct holds it."""
        return (self.write_id, self.bucket, self.row_id)


def require_hive31_tools() -> HiveArtifacts:
    """The Hive artifacts with the compiled ``acidflow.hive31`` tools; without them: a
    module-level skip, or a failure when ``CI=true``."""
    try:
        arts = HiveArtifacts.locate()
        gone = arts.missing_tools()
        if gone:
            raise HiveArtifactsMissing(
                f"the Hive 3.1 oracle's classes are not in {arts.root} ({gone[0]} is missing):"
                " run 'make hive-jars' (it compiles tools/hive/java)"
            )
    except HiveArtifactsMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc), allow_module_level=True)
        raise  # unreachable: pytest.skip raises
    return arts


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise Hive31Error("no 'java' on PATH and none in $JAVA_HOME (Java 17 is needed)")
    return found


def java_command(
    main: str, *, artifacts: HiveArtifacts | None = None, heap: str = "768m"
) -> list[str]:
    """``java ... -cp <tools classpath> <main>`` for one of the ``acidflow.hive31`` tools."""
    arts = artifacts or HiveArtifacts.locate()
    return [_java(), f"-Xmx{heap}", *JAVA_OPTIONS, "-cp", arts.tools_classpath(), main]


# ---- values ---------------------------------------------------------------------------------


def _norm_type(hive_type: str) -> str:
    return re.sub(r"\s+", "", hive_type.strip().lower())


def _timestamp(text: str) -> dt.datetime:
    # Hive 3.1 Timestamp.toString: "yyyy-MM-dd HH:mm:ss[.fffffffff]" (nanoseconds); Python keeps
    # microseconds, so the fraction is cut to 6 digits.
    head, _, frac = text.partition(".")
    value = dt.datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
    if frac:
        value = value.replace(microsecond=int(frac[:6].ljust(6, "0")))
    return value


def converter(hive_type: str) -> Callable[[Any], Any] | None:
    """The Python conversion of one column's JSON value (``None``: already right).

    int types, boolean, string / varchar / char: as JSON gives them; double: float; float: the
    float32 value as a Python float;
    decimal(p,s): ``decimal.Decimal`` quantized to the scale; date: ``datetime.date``;
    timestamp: naive ``datetime.datetime`` (wall clock, microseconds); binary: ``bytes``.

    Raises:
        ValueError: a type the oracle does not read (complex types), named.
    """
    t = _norm_type(hive_type)
    if (
        t in ("tinyint", "smallint", "int", "bigint", "boolean", "string")
        or t.startswith("varchar")
        or t.startswith("char")
    ):
        return None
    if t == "double":
        return float
    if t == "float":
        # Java prints the float's shortest decimal ("1.1"); the value is the float32 nearest it,
        # which is what a float column holds (1.100000023841858 as a Python float)
        return lambda v: struct.unpack("<f", struct.pack("<f", float(v)))[0]
    if t.startswith("decimal"):
        m = re.fullmatch(r"decimal(?:\((\d+)(?:,(\d+))?\))?", t)
        if not m:
            raise ValueError(f"bad decimal type {hive_type!r}")
        quantum = decimal.Decimal(1).scaleb(-int(m.group(2) or 0))
        context = decimal.Context(prec=60)
        return lambda v: decimal.Decimal(v).quantize(quantum, context=context)
    if t == "date":
        return dt.date.fromisoformat
    if t == "timestamp":
        return _timestamp
    if t == "binary":
        return base64.b64decode
    raise ValueError(f"unsupported column type for the Hive 3.1 oracle: {hive_type!r}")


def _column_name(name: str) -> str:
    # the metastore keeps column names in lower case; ORC matches the file's fields by name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"unsupported column name {name!r}")
    return name.lower()


def write_id_list_string(valid: ValidWriteIdList | str, table: str = "default.t") -> str:
    """Hive's ``ValidReaderWriteIdList`` string form of ``valid`` (a string is taken as is; a
    ``ValidWriteIdList`` without a table name gets ``table``)."""
    if isinstance(valid, str):
        return valid
    text = valid.to_string()
    if valid.table_name is None:
        text = table + text[len("null") :]
    return text


# ---- the reader -----------------------------------------------------------------------------


class Hive31Oracle:
    """One Hive 3.1.3 reader JVM (``acidflow.hive31.AcidRead``) answering reads until closed.
    A context manager; thread-safe (one read at a time)."""

    def __init__(
        self,
        artifacts: HiveArtifacts | None = None,
        *,
        heap: str = "768m",
        timeout_s: float = 600.0,
    ) -> None:
        """Start the JVM. ``timeout_s``: a read that takes longer kills the JVM (the read then
        raises :class:`Hive31Error`; the oracle is closed)."""
        self._timeout_s = timeout_s
        self._cmd = java_command(READER_MAIN, artifacts=artifacts, heap=heap)
        self._stderr = tempfile.TemporaryFile()
        self._proc: subprocess.Popen[str] | None = subprocess.Popen(
            self._cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lock = threading.Lock()
        #: per-read (rows, milliseconds Hive took) of the reads made, for measurements
        self.timings: list[tuple[int, int]] = []

    def close(self) -> None:
        """Ask the JVM to quit and wait for it (killed after 20 s). Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write("quit\n")
                proc.stdin.close()
            proc.wait(20)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
            self._stderr.close()

    def __enter__(self) -> "Hive31Oracle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4000:]

    def _request(self, lines: Sequence[str], action: str) -> list[str]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise Hive31Error("the Hive 3.1 oracle JVM is closed")
        with self._lock:
            try:
                proc.stdin.write("".join(line + "\n" for line in lines) + action + "\n")
                proc.stdin.flush()
            except OSError as exc:
                raise Hive31Error(
                    f"the Hive 3.1 oracle JVM is gone ({exc}):\n{self._stderr_tail()}"
                ) from exc
            out: list[str] = []
            watchdog = threading.Timer(self._timeout_s, proc.kill)
            watchdog.start()
            try:
                while True:
                    line = proc.stdout.readline()
                    if not line:
                        raise Hive31Error(
                            f"the Hive 3.1 oracle JVM exited ({proc.wait()}; killed after"
                            f" {self._timeout_s:.0f}s if -9):\n{self._stderr_tail()}"
                        )
                    if line.startswith("{"):
                        answer = json.loads(line)
                        if "error" in answer:
                            raise Hive31Error(f"Hive 3.1.3 failed to read: {answer['error']}")
                        self.timings.append((int(answer["end"]), int(answer["ms"])))
                        return out
                    out.append(line)
            finally:
                watchdog.cancel()

    @staticmethod
    def _lines(
        dirs: Sequence[str],
        columns: Sequence[tuple[str, str]],
        write_ids: str,
        num_buckets: int,
        valid_txns: str | None,
        conf: Mapping[str, str | None] | None,
        num_splits: int,
        vectorized: bool = False,
    ) -> list[str]:
        lines = [f"dir\t{d}" for d in dirs] + (["vectorized\t1"] if vectorized else [])
        lines += [f"column\t{_column_name(n)}\t{_norm_type(t)}" for n, t in columns]
        lines += [
            f"buckets\t{int(num_buckets)}",
            f"writeids\t{write_ids}",
            f"numsplits\t{int(num_splits)}",
        ]
        if valid_txns is not None:
            lines.append(f"txns\t{valid_txns}")
        lines += [
            f"conf\t{k}\t{v}" if v is not None else f"unset\t{k}" for k, v in (conf or {}).items()
        ]
        for line in lines:
            if "\n" in line or line.count("\t") > 2:
                raise ValueError(f"newline or tab in a Hive 3.1 oracle request: {line!r}")
        return lines

    def read(
        self,
        table_dir: str | os.PathLike[str],
        columns: Sequence[tuple[str, str]],
        valid_write_ids: ValidWriteIdList | str,
        *,
        partition_dirs: Iterable[str] | None = None,
        num_buckets: int = 0,
        valid_txns: str | None = None,
        conf: Mapping[str, str | None] | None = None,
        num_splits: int = 1,
        vectorized: bool = False,
    ) -> list[Hive31Row]:
        """Visible rows of a Hive 3 full-ACID table directory as Hive 3.1.3 reads them.

        Args:
            table_dir: local table directory (base_N / delta_* / delete_delta_* / original
                files, or ``key=value`` partition folders).
            columns: the table's data columns in table order, ``(name, hive type)``; partition
                columns excluded. Types: :func:`converter`.
            valid_write_ids: the table's ValidWriteIdList (acidflow's, or Hive's string form
                ``db.table:hwm:minOpen:open,...:aborted,...``), as ``hive.txn.valid.writeids``.
            partition_dirs: partition folders (relative to ``table_dir``) read one by one, each
                row tagged with its folder; ``None`` reads ``table_dir`` itself.
            num_buckets: the table's bucket count (``bucket_count``), 0 when unbucketed.
            valid_txns: Hive's ValidTxnList string (``hive.txn.valid.txns``), if any.
            conf: more JobConf keys, applied last; a ``None`` value unsets the key.
            num_splits: ``getSplits``' hint.
            vectorized: read every split with Hive 3.1's ``VectorizedOrcAcidRowBatchReader``
                (what a vectorized Hive 3 query runs, ``hive.vectorized.execution.enabled``;
                ROW__ID projected as a virtual column) instead of the row-by-row reader.

        Returns:
            :class:`Hive31Row` s in Hive's split order (compare as multisets or sort).

        Raises:
            Hive31Error: Hive threw (the Java stack is in the message) or the JVM died.
            FileNotFoundError: a directory does not exist.
        """
        root = Path(table_dir).resolve()
        parts: list[str | None] = [None] if partition_dirs is None else list(partition_dirs)
        write_ids = write_id_list_string(valid_write_ids)
        convs = [(i, c) for i, c in enumerate(converter(t) for _, t in columns) if c is not None]
        rows: list[Hive31Row] = []
        for part in parts:
            d = root if part is None else root / part
            if not d.is_dir():
                raise FileNotFoundError(f"no such table or partition directory: {d}")
            lines = self._lines(
                [str(d)], columns, write_ids, num_buckets, valid_txns, conf, num_splits, vectorized
            )
            for text in self._request(lines, "read"):
                raw = json.loads(text)
                values = raw[3:]
                if len(values) != len(columns):
                    raise Hive31Error(
                        f"Hive returned {len(values)} fields, expected {len(columns)}: {text[:200]}"
                    )
                for i, conv in convs:
                    if values[i] is not None:
                        values[i] = conv(values[i])
                rows.append(Hive31Row(int(raw[0]), int(raw[1]), int(raw[2]), tuple(values), part))
        return rows

    def splits(
        self,
        table_dir: str | os.PathLike[str],
        columns: Sequence[tuple[str, str]],
        valid_write_ids: ValidWriteIdList | str,
        *,
        num_buckets: int = 0,
        conf: Mapping[str, str | None] | None = None,
        num_splits: int = 1,
    ) -> list[str]:
        """``toString()`` of every split Hive 3.1.3 computes for the read (diagnostics)."""
        lines = self._lines(
            [str(Path(table_dir).resolve())],
            columns,
            write_id_list_string(valid_write_ids),
            num_buckets,
            None,
            conf,
            num_splits,
        )
        return [json.loads(t) for t in self._request(lines, "splits")]


def read_acid(
    table_dir: str | os.PathLike[str],
    columns: Sequence[tuple[str, str]],
    valid_write_ids: ValidWriteIdList | str,
    **kwargs: Any,
) -> list[Hive31Row]:
    """:meth:`Hive31Oracle.read` in a JVM of its own (started and stopped here)."""
    with Hive31Oracle() as oracle:
        return oracle.read(table_dir, columns, valid_write_ids, **kwargs)


# ---- the writer -----------------------------------------------------------------------------


class StreamedTxn(NamedTuple):
    """One transaction Hive's streaming connection ran: its txn id, write id, rows, and
    ``committed`` / ``aborted``."""

    txn_id: int
    write_id: int
    rows: int
    state: str


def stream_write(
    metastore_url: str,
    db: str,
    table: str,
    transactions: Sequence[Sequence[Sequence[Any]] | str],
    *,
    partition_values: Sequence[str] | None = None,
    artifacts: HiveArtifacts | None = None,
    timeout_s: float = 180.0,
) -> list[StreamedTxn]:
    """Stream rows into the existing transactional table ``db.table`` with Hive 3.1.3's
    ``HiveStreamingConnection`` through the metastore at ``metastore_url``.

    Args:
        transactions: one entry per transaction, in order: a list of rows (each a sequence of
            values, written as Hive's delimited text: ``,`` between fields, ``None`` as ``\\N``),
            or the string ``"abort"`` for a transaction that writes nothing and aborts. A list
            whose last element is ``"abort"`` writes its rows and then aborts.
        partition_values: static partition values of a partitioned table.

    Returns:
        One :class:`StreamedTxn` per transaction, in order.

    Raises:
        Hive31Error: Hive's streaming API failed (Java stack in the message).
    """
    lines: list[str] = []
    for txn in transactions:
        rows = [txn] if isinstance(txn, str) else list(txn)
        abort = bool(rows) and rows[-1] == "abort"
        for row in rows[:-1] if abort else rows:
            fields = ["\\N" if v is None else str(v) for v in row]
            for f in fields:
                if "," in f or "\n" in f:
                    raise ValueError(f"a ',' or newline in a streamed value: {f!r}")
            lines.append(",".join(fields))
        lines.append("!abort" if abort else "")
    args = [metastore_url, db, table]
    if partition_values:
        args.append(",".join(partition_values))
    cmd = java_command(WRITER_MAIN, artifacts=artifacts) + args
    done = subprocess.run(
        cmd,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    errors = [a["error"] for a in answers if "error" in a]
    if done.returncode != 0 or errors:
        raise Hive31Error(
            f"Hive 3.1.3 streaming into {db}.{table} at {metastore_url} failed"
            f" (exit {done.returncode}): {errors[0] if errors else ''}\n"
            f"{done.stderr[-4000:]}"
        )
    return [StreamedTxn(a["txnId"], a["writeId"], a["rows"], a["state"]) for a in answers]


# ---- comparing with acidflow --------------------------------------------------------------


def hive_multiset(rows: Iterable[Hive31Row]) -> collections.Counter[tuple[Any, ...]]:
    """Hive's rows as a multiset of ``(ROW__ID struct, values, partition folder)``."""
    return collections.Counter((r.row_id_struct, r.values, r.partition) for r in rows)


def acidflow_multiset(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[tuple[str, str]],
    partition_columns: Sequence[str] = (),
) -> collections.Counter[tuple[Any, ...]]:
    """acidflow's rows (``to_pylist()`` of a read with ``row_id=True``) in the shape of
    :func:`hive_multiset`: the partition folder is ``k=v[/k2=v2]`` from the partition values
    (plain values only: no escaping is applied)."""
    out: collections.Counter[tuple[Any, ...]] = collections.Counter()
    for r in rows:
        rid = r["ROW__ID"]
        part = "/".join(f"{k}={r[k]}" for k in partition_columns) or None
        out[
            ((rid["writeid"], rid["bucketid"], rid["rowid"]), tuple(r[n] for n, _ in columns), part)
        ] += 1
    return out


def same_as_acidflow(
    oracle: Hive31Oracle,
    catalog: Catalog,
    name: str,
    as_of_write_id: int | None = None,
    modes: Sequence[bool] = (False, True),
    conf: Mapping[str, str | None] | None = None,
) -> list[Hive31Row]:
    """Hive 3.1.3's rows of the catalog table ``name`` (``acidflow.catalog.Catalog``) under the
    catalog's ValidWriteIdList (now, or as of a write id), asserted equal -- ROW__IDs and
    partition folders included -- to acidflow's snapshot read (``acidflow.read.table.read_table``,
    pyarrow), through each of Hive's readers in ``modes`` (False: row-by-row, True: vectorized);
    returns the rows of the first. ``conf``: more JobConf keys for Hive's reader (the table's
    ``orc.*`` properties, which Hive copies into a read's conf, are added by default)."""
    td = catalog.get_table(name)
    conf = {**{k: v for k, v in td.properties.items() if k.startswith("orc.")}, **(conf or {})}
    valid = catalog.valid_write_ids(td.name, as_of_write_id=as_of_write_id)
    cols = [(c.name, c.hive_type) for c in td.columns]
    pcols = [c.name for c in td.partition_columns]
    pdirs = None
    if pcols:
        root = Path(td.location)
        pdirs = sorted(str(p.relative_to(root)) for p in root.glob("/".join(["*=*"] * len(pcols))))
    ours = reads.read_table(
        None, catalog, name, row_id=True, as_of_write_id=as_of_write_id
    ).to_pylist()
    mine = acidflow_multiset(ours, cols, pcols)
    first: list[Hive31Row] | None = None
    for vectorized in modes:
        hive = oracle.read(
            td.location,
            cols,
            valid,
            partition_dirs=pdirs,
            num_buckets=td.num_buckets,
            vectorized=vectorized,
            conf=conf or None,
        )
        theirs = hive_multiset(hive)
        if theirs != mine:
            only_hive = list((theirs - mine).elements())
            only_ours = list((mine - theirs).elements())
            raise AssertionError(
                f"{name} under {valid}: Hive 3.1.3 ({'vectorized' if vectorized else 'row'}"
                f" reader) read {len(hive)} rows, acidflow {len(ours)}; {len(only_hive)} only"
                f" in Hive's, e.g. {only_hive[:3]}; {len(only_ours)} only in acidflow's, e.g."
                f" {only_ours[:3]}"
            )
        first = hive if first is None else first
    assert first is not None, "no reader mode given"
    return first
