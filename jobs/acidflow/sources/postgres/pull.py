"""Pull change data from a PostgreSQL logical replication slot (wal2json) into a landing zone.

One *pull* reads the slot with ``pg_logical_slot_peek_changes`` and writes each chunk it reads as
one landing file of wal2json format-version 2 JSON lines, exactly as wal2json emits them (the
``data`` column, one JSON object per line), gzip-compressed. A landing file

* holds whole transactions only: every ``B`` record is followed by its changes and its ``C``;
* is named ``wal2json_<first>_<last>.jsonl.gz`` where ``<first>`` is the commit LSN of its first
  transaction (the ``lsn`` of its ``B``/``C`` records) and ``<last>`` the end LSN of its last
  transaction (the ``nextlsn`` of its last ``C``), both as 16 upper-case hex digits, so the
  lexical order of the names is the LSN (commit) order and the ranges of two files never
  overlap;
* is applied later as one batch whose batch id is its LSN range (see :func:`parse_landing_name`).

Durability protocol, per file: write to a hidden temp name in the landing directory, fsync the
file, rename it to its final name, fsync the directory, and only then advance the slot with
``pg_replication_slot_advance(slot, <last>)``. If the process dies after the rename but before
the advance (or PostgreSQL crashes before it persisted the advanced slot, which it only does at
the next checkpoint), the next pull finds the highest end LSN already landed, advances the slot
past it first and drops any transaction that ends at or below it: nothing is lost (the slot is
never advanced past data that is not on disk) and nothing is landed twice.

Non-transactional logical decoding messages (``pg_logical_emit_message(false, ...)``, wal2json
action ``M`` outside a transaction) belong to no transaction and carry no table data; they are
not landed. Transactional messages stay inside their transaction.

The end LSN of the last landed file is also kept in ``<landing>/.pull.landed_lsn`` (written
durably after the rename, before the advance), so landed files may be moved away (archived)
after they were applied without weakening the protocol.

Only one pull may run per landing directory at a time (an exclusive ``flock`` on
``<landing>/.pull.lock``); PostgreSQL itself refuses two concurrent users of one slot.

The pure parts (file names, splitting the slot's rows into transactions; LSN text is
``acidflow.sources.postgres.lsn``'s) are separate from the I/O (:func:`write_landing_file`,
:func:`pull`).
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import logging
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from acidflow.sources.postgres.connection import PullError, connect
from acidflow.sources.postgres.lsn import format_lsn, parse_lsn

log = logging.getLogger(__name__)

OUTPUT_PLUGIN = "wal2json"

#: wal2json options passed to ``pg_logical_slot_peek_changes``: format version 2 (one JSON object
#: per change), ``B``/``C`` transaction records, LSNs, commit timestamps, xids, column types
#: (with type modifiers, wal2json's default), and the primary key (``pk``) of each change.
#: ``identity`` (old key, or old row under REPLICA IDENTITY FULL) is always emitted for U/D.
WAL2JSON_OPTIONS: tuple[tuple[str, str], ...] = (
    ("format-version", "2"),
    ("include-transaction", "1"),
    ("include-lsn", "1"),
    ("include-timestamp", "1"),
    ("include-xids", "1"),
    ("include-types", "1"),
    ("include-pk", "1"),
)

#: Default peek size: rows of wal2json output (changes plus B/C records) per landing file.
DEFAULT_MAX_CHANGES = 50_000

LANDING_PREFIX = "wal2json_"
LANDING_SUFFIX = ".jsonl.gz"
LANDING_RE = re.compile(r"^wal2json_([0-9A-F]{16})_([0-9A-F]{16})\.jsonl\.gz$")
TEMP_PREFIX = ".tmp-wal2json_"
LOCK_NAME = ".pull.lock"
#: Hidden file in the landing directory holding the end LSN of the last landed file (pg_lsn text),
#: so that the protocol still holds when landed files are moved away (archived) after apply.
STATE_NAME = ".pull.landed_lsn"

#: Test hook: when set to N (>= 1), the pull SIGKILLs its own process right after the N-th
#: landing file is renamed into place and the directory fsynced, before the slot is advanced.
CRASH_HOOK_ENV = "ACIDFLOW_TEST_PULL_CRASH_AFTER_FILE"

# ------------------------------------------------------------------------------ pure helpers


def landing_file_name(first_lsn: int, last_lsn: int) -> str:
    """``wal2json_<first as 16 hex>_<last as 16 hex>.jsonl.gz`` (upper-case hex, zero-padded,
    so lexical order = LSN order)."""
    if not 0 <= first_lsn <= last_lsn < 1 << 64:
        raise ValueError(f"bad LSN range {first_lsn}..{last_lsn}")
    return f"{LANDING_PREFIX}{first_lsn:016X}_{last_lsn:016X}{LANDING_SUFFIX}"


def parse_landing_name(name: str) -> tuple[int, int] | None:
    """``(first_lsn, last_lsn)`` of a landing file name (a path's last component is used), or
    ``None`` when the name is not a landing file's (temp files, other files)."""
    m = LANDING_RE.match(os.path.basename(str(name)))
    if not m:
        return None
    return int(m.group(1), 16), int(m.group(2), 16)


@dataclass(frozen=True)
class TxnUnit:
    """One whole transaction as wal2json emitted it.

    Attributes:
        commit_lsn: LSN of the commit record (the ``lsn`` of the ``B``/``C`` records).
        end_lsn: end of the commit record (the ``nextlsn`` of ``C``; also the ``lsn`` column
            of the ``C`` row in the slot's output). The slot is advanced to this.
        xid: transaction id (text as returned by PostgreSQL).
        lines: the JSON lines, ``B`` first and ``C`` last, unchanged.
    """

    commit_lsn: int
    end_lsn: int
    xid: str
    lines: tuple[str, ...]

    @property
    def changes(self) -> int:
        """Number of records between ``B`` and ``C``."""
        return len(self.lines) - 2


def _action(data: str) -> str | None:
    # wal2json v2 always writes "action" first: {"action":"B",...}
    if data.startswith('{"action":"') and len(data) > 12 and data[12] == '"':
        return data[11]
    try:
        return json.loads(data).get("action")
    except (ValueError, AttributeError):
        return None


def split_transactions(
    rows: Iterable[tuple[str, object, str]], *, slot: str = "?"
) -> Iterator[TxnUnit]:
    """Group the rows of ``pg_logical_slot_peek_changes`` into whole transactions.

    Args:
        rows: ``(lsn, xid, data)`` tuples in the order PostgreSQL returns them, from a slot
            decoding with :data:`WAL2JSON_OPTIONS` (``include-transaction`` and ``include-lsn``
            on).
        slot: slot name, for error messages.
    Yields:
        :class:`TxnUnit` per ``B`` ... ``C`` group, in commit order. Non-transactional
        ``M`` records outside any transaction are dropped.
    Raises:
        PullError: a change outside a transaction, a ``B`` inside a transaction, a ``C`` of
            another transaction, missing ``lsn``/``nextlsn`` on ``B``/``C``, or output that ends
            inside a transaction (PostgreSQL only returns whole transactions from peek, so each of
            these means the slot was not decoding with the expected options).
    """
    cur: list[str] | None = None
    cur_xid: object = None
    begin_lsn_col: str | None = None
    for lsn, xid, data in rows:
        act = _action(data)
        if act == "B":
            if cur is not None:
                raise PullError(
                    f"slot {slot}: BEGIN at {lsn} inside transaction {cur_xid} "
                    f"(begun at {begin_lsn_col}) without its COMMIT"
                )
            cur, cur_xid, begin_lsn_col = [data], xid, lsn
        elif act == "C":
            if cur is None:
                raise PullError(f"slot {slot}: COMMIT at {lsn} (xid {xid}) without BEGIN")
            if str(xid) != str(cur_xid):
                raise PullError(
                    f"slot {slot}: COMMIT of xid {xid} at {lsn} inside transaction {cur_xid}"
                )
            rec = json.loads(data)
            try:
                commit_lsn = parse_lsn(rec["lsn"])
                end_lsn = parse_lsn(rec["nextlsn"])
            except (KeyError, ValueError) as exc:
                raise PullError(
                    f"slot {slot}: COMMIT at {lsn} has no usable lsn/nextlsn "
                    f"({exc}); decode with 'include-lsn' = '1'"
                ) from exc
            cur.append(data)
            yield TxnUnit(commit_lsn, end_lsn, str(xid), tuple(cur))
            cur, cur_xid, begin_lsn_col = None, None, None
        elif cur is None:
            if act == "M" and '"transactional":false' in data:
                log.debug("slot %s: dropping non-transactional message at %s", slot, lsn)
                continue
            raise PullError(
                f"slot {slot}: record {act or '?'} at {lsn} outside a transaction; "
                "decode with 'include-transaction' = '1'"
            )
        else:
            cur.append(data)
    if cur is not None:
        raise PullError(
            f"slot {slot}: output ended inside transaction {cur_xid} (begun at {begin_lsn_col})"
        )


@dataclass(frozen=True)
class PulledFile:
    """One landing file written by :func:`pull`.

    Attributes:
        path: final path of the file.
        first_lsn, last_lsn: commit LSN of its first transaction, end LSN of its last one
            (64-bit integers; :func:`format_lsn` gives the text).
        transactions: number of ``B`` ... ``C`` groups.
        changes: records other than ``B``/``C`` (I, U, D, T, transactional M).
        bytes: compressed size on disk.
    """

    path: Path
    first_lsn: int
    last_lsn: int
    transactions: int
    changes: int
    bytes: int

    @property
    def lsn_range(self) -> str:
        """``"<first>-<last>"`` in ``pg_lsn`` text."""
        return f"{format_lsn(self.first_lsn)}-{format_lsn(self.last_lsn)}"

    @property
    def batch_id(self) -> str:
        """The file name without ``.jsonl.gz``: ``wal2json_<first>_<last>``."""
        return self.path.name[: -len(LANDING_SUFFIX)]


# ------------------------------------------------------------------------------ landing I/O


def landing_files(landing_dir: str | os.PathLike) -> list[tuple[Path, int, int]]:
    """``(path, first_lsn, last_lsn)`` of the landing files in a directory, in LSN order
    (temp and other files ignored; a missing directory has none)."""
    d = Path(landing_dir)
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        rng = parse_landing_name(p.name)
        if rng is not None and p.is_file():
            out.append((p, *rng))
    return sorted(out, key=lambda t: (t[1], t[2]))


def highest_landed_lsn(landing_dir: str | os.PathLike) -> int | None:
    """The highest end LSN landed in a directory: the maximum of the landing files' end LSNs
    and of the :data:`STATE_NAME` record (which survives moving the files away), or ``None``.

    Raises:
        PullError: the state file is unreadable.
    """
    files = landing_files(landing_dir)
    found = [last for _, _, last in files]
    state = Path(landing_dir) / STATE_NAME
    if state.is_file():
        text = state.read_text().strip()
        try:
            found.append(parse_lsn(text))
        except ValueError as exc:
            raise PullError(f"{state}: not an LSN ({text[:40]!r}); fix or delete it") from exc
    return max(found) if found else None


def record_landed_lsn(landing_dir: str | os.PathLike, lsn: int) -> None:
    """Durably write ``lsn`` to :data:`STATE_NAME` (temp file, fsync, rename, fsync dir)."""
    d = Path(landing_dir)
    tmp = d / f"{STATE_NAME}.tmp"
    with open(tmp, "w") as fh:
        fh.write(format_lsn(lsn) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.rename(tmp, d / STATE_NAME)
    _fsync_dir(d)


def _fsync_dir(path: Path) -> None:
    fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_landing_file(
    landing_dir: str | os.PathLike, units: Iterable[TxnUnit], *, compresslevel: int = 6
) -> PulledFile | None:
    """Write transactions to one gzip landing file, durably.

    Writes to ``.tmp-wal2json_<pid>.jsonl.gz`` in ``landing_dir``, fsyncs it, renames it to
    :func:`landing_file_name` of its LSN range and fsyncs the directory. The gzip header carries
    no name and mtime 0, so the same transactions give the same bytes.

    Args:
        landing_dir: existing directory.
        units: whole transactions in commit order (consumed as a stream).
    Returns:
        The :class:`PulledFile`, or ``None`` (nothing written) when ``units`` is empty.
    Raises:
        PullError: transactions out of LSN order, or the final name exists already.
        OSError: from the file system (the temp file is removed).
    """
    d = Path(landing_dir)
    tmp = d / f"{TEMP_PREFIX}{os.getpid()}{LANDING_SUFFIX}"
    first: int | None = None
    last: int | None = None
    n_txn = n_changes = 0
    try:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=compresslevel
            ) as gz:
                for u in units:
                    if last is not None and u.commit_lsn < last:
                        raise PullError(
                            f"transaction {u.xid} commits at {format_lsn(u.commit_lsn)}"
                            f", before the previous one ended ({format_lsn(last)})"
                        )
                    if first is None:
                        first = u.commit_lsn
                    last = u.end_lsn
                    n_txn += 1
                    n_changes += u.changes
                    gz.write(("\n".join(u.lines) + "\n").encode("utf-8"))
            raw.flush()
            os.fsync(raw.fileno())
        if first is None:
            tmp.unlink()
            return None
        assert last is not None  # set with first, by the same transaction
        final = d / landing_file_name(first, last)
        if final.exists():
            raise PullError(
                f"landing file {final} exists already: LSN range "
                f"{format_lsn(first)}-{format_lsn(last)} was landed before"
            )
        os.rename(tmp, final)
        _fsync_dir(d)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return PulledFile(final, first, last, n_txn, n_changes, final.stat().st_size)


def read_landing_lines(path: str | os.PathLike) -> list[str]:
    """The JSON lines of a landing file (without newlines)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


# ------------------------------------------------------------------------------ PostgreSQL


def slot_info(conn: Any, slot: str) -> dict[str, Any] | None:
    """The row of ``pg_replication_slots`` for ``slot`` (plugin, slot_type, database,
    confirmed_flush_lsn as int, restart_lsn as int, active), or ``None``."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT plugin, slot_type, database, confirmed_flush_lsn::text, "
            "restart_lsn::text, active FROM pg_replication_slots WHERE slot_name = %s",
            (slot,),
        )
        row = cur.fetchone()
    if row is None:
        return None
    return {
        "plugin": row[0],
        "slot_type": row[1],
        "database": row[2],
        "confirmed_flush_lsn": parse_lsn(row[3]) if row[3] else None,
        "restart_lsn": parse_lsn(row[4]) if row[4] else None,
        "active": row[5],
    }


def ensure_slot(conn: Any, slot: str) -> int:
    """``pg_create_logical_replication_slot(slot, 'wal2json')`` unless a wal2json slot of that
    name exists already in this database. Returns the slot's confirmed flush LSN.

    Raises:
        PullError: a slot of that name exists with another plugin or database, or PostgreSQL
            refuses (``wal_level`` not ``logical``, no free slot, wal2json not installed).
    """
    import psycopg2  # deferred: optional driver, needed only when a PostgreSQL source is used

    info = slot_info(conn, slot)
    if info is None:
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT lsn::text FROM pg_create_logical_replication_slot(%s, %s)",
                    (slot, OUTPUT_PLUGIN),
                )
                return parse_lsn(cur.fetchone()[0])
        except psycopg2.Error as exc:
            raise PullError(
                f"cannot create logical replication slot {slot!r} with "
                f"{OUTPUT_PLUGIN}: {str(exc).strip()}"
            ) from exc
    _check_slot(conn, slot, info)
    return info["confirmed_flush_lsn"]


def _check_slot(conn: Any, slot: str, info: dict[str, Any] | None) -> dict[str, Any]:
    if info is None:
        raise PullError(
            f"replication slot {slot!r} does not exist (pass create_slot=True / "
            "--create-slot to create it)"
        )
    if info["slot_type"] != "logical" or info["plugin"] != OUTPUT_PLUGIN:
        raise PullError(
            f"replication slot {slot!r} is a {info['slot_type']} slot with plugin "
            f"{info['plugin']!r}, not a logical {OUTPUT_PLUGIN} slot"
        )
    db = conn.get_dsn_parameters().get("dbname")
    if info["database"] != db:
        raise PullError(
            f"replication slot {slot!r} belongs to database {info['database']!r}, "
            f"not {db!r} (connect to that database)"
        )
    return info


def advance_slot(conn: Any, slot: str, lsn: int) -> int:
    """``pg_replication_slot_advance(slot, lsn)``; returns the slot's new position.

    PostgreSQL clamps the target to the current WAL flush position and persists the slot only at
    the next checkpoint (a crash before it moves the slot back; :func:`pull` copes with that).

    Raises:
        PullError: PostgreSQL refused (e.g. the target is behind the slot).
    """
    import psycopg2  # deferred: optional driver, needed only when a PostgreSQL source is used

    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT end_lsn::text FROM pg_replication_slot_advance(%s, %s::pg_lsn)",
                (slot, format_lsn(lsn)),
            )
            return parse_lsn(cur.fetchone()[0])
    except psycopg2.Error as exc:
        raise PullError(
            f"cannot advance slot {slot!r} to {format_lsn(lsn)}: {str(exc).strip()}"
        ) from exc


def _peek_rows(
    conn: Any, slot: str, upto_lsn: int | None, upto_nchanges: int, counter: list[int]
) -> Iterator[tuple[str, str, str]]:
    """Stream ``pg_logical_slot_peek_changes`` through a server-side cursor; counts rows."""
    opts = ", ".join("%s" for _ in range(2 * len(WAL2JSON_OPTIONS)))
    params: list[object] = [
        slot,
        format_lsn(upto_lsn) if upto_lsn is not None else None,
        upto_nchanges,
    ]
    for k, v in WAL2JSON_OPTIONS:
        params += [k, v]
    conn.autocommit = False
    try:
        with conn.cursor(name=f"acidflow_peek_{os.getpid()}") as cur:
            cur.itersize = 2000
            cur.execute(
                "SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_changes("
                f"%s, %s::pg_lsn, %s, {opts})",
                params,
            )
            for row in cur:
                counter[0] += 1
                yield row
        conn.commit()
    except BaseException:
        with contextlib.suppress(Exception):
            conn.rollback()
        raise
    finally:
        conn.autocommit = True


@contextlib.contextmanager
def _landing_lock(d: Path) -> Iterator[None]:
    fh = open(d / LOCK_NAME, "a+")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise PullError(f"another pull holds {d / LOCK_NAME}") from exc
        yield
    finally:
        fh.close()


def _crash_hook(n_written: int) -> None:
    at = os.environ.get(CRASH_HOOK_ENV)
    if at and n_written >= int(at):
        os.kill(os.getpid(), signal.SIGKILL)


def pull(
    dsn: str,
    slot: str,
    landing_dir: str | os.PathLike,
    *,
    max_changes_per_file: int = DEFAULT_MAX_CHANGES,
    create_slot: bool = False,
    upto_lsn: int | None = None,
    max_files: int | None = None,
) -> list[PulledFile]:
    """Pull the changes of a wal2json logical replication slot into landing files.

    Reads with ``pg_logical_slot_peek_changes(slot, upto_lsn, max_changes_per_file,``
    :data:`WAL2JSON_OPTIONS` ``)``, writes each chunk as one landing file (whole transactions,
    see the module docstring for names and durability), then advances the slot with
    ``pg_replication_slot_advance`` to the file's end LSN; repeats until the slot has nothing
    more up to ``upto_lsn``.

    Before the first read, the highest end LSN already landed in ``landing_dir`` is compared
    with the slot: if the slot is behind it (a pull died between landing a file and advancing
    the slot), the slot is advanced to it first, and transactions ending at or below it are
    dropped, so a re-run neither loses nor duplicates changes.

    Args:
        dsn: libpq connection string or URL (``postgresql://user@host:port/db``; a SQLAlchemy
            ``postgresql+psycopg2://`` URL works too) of the slot's database. The role needs the
            REPLICATION attribute (or superuser).
        slot: logical replication slot name (plugin wal2json).
        landing_dir: directory for the landing files (created if missing).
        max_changes_per_file: rows of wal2json output (changes plus ``B``/``C`` records) asked
            of each peek; a file can hold more, as a transaction is never split.
        create_slot: create the slot (``pg_create_logical_replication_slot(slot, 'wal2json')``)
            when it does not exist. Changes before its creation are not in it.
        upto_lsn: stop at this LSN (default: the WAL flush position when the pull starts, so a
            pull ends even while writes go on).
        max_files: stop after this many files (default: no limit).
    Returns:
        The files written, in LSN order (empty when there was nothing to pull).
    Raises:
        PullError: cannot connect, slot missing or not a wal2json slot of this database,
            malformed output, landing directory locked by another pull.
        OSError: writing the landing directory.
    """
    if max_changes_per_file < 1:
        raise ValueError("max_changes_per_file must be >= 1")
    d = Path(landing_dir)
    d.mkdir(parents=True, exist_ok=True)
    written: list[PulledFile] = []
    with _landing_lock(d):
        for stale in d.glob(f"{TEMP_PREFIX}*"):
            log.info("removing stale temp file %s", stale)
            stale.unlink(missing_ok=True)
        conn = connect(dsn)
        try:
            if create_slot:
                ensure_slot(conn, slot)
            info = _check_slot(conn, slot, slot_info(conn, slot))
            floor = highest_landed_lsn(d)
            if (
                floor is not None
                and info["confirmed_flush_lsn"] is not None
                and floor > info["confirmed_flush_lsn"]
            ):
                log.warning(
                    "slot %s is at %s, behind the landed LSN %s: advancing it",
                    slot,
                    format_lsn(info["confirmed_flush_lsn"]),
                    format_lsn(floor),
                )
                advance_slot(conn, slot, floor)
            if upto_lsn is None:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_current_wal_flush_lsn()::text")
                    upto_lsn = parse_lsn(cur.fetchone()[0])
            while max_files is None or len(written) < max_files:
                counter = [0]
                units = (
                    u
                    for u in split_transactions(
                        _peek_rows(conn, slot, upto_lsn, max_changes_per_file, counter), slot=slot
                    )
                    if floor is None or u.end_lsn > floor
                )
                pf = write_landing_file(d, units)
                if pf is None:
                    break
                written.append(pf)
                record_landed_lsn(d, pf.last_lsn)
                log.info(
                    "landed %s: %d transactions, %d changes, %d bytes",
                    pf.path.name,
                    pf.transactions,
                    pf.changes,
                    pf.bytes,
                )
                _crash_hook(len(written))
                advance_slot(conn, slot, pf.last_lsn)
                floor = pf.last_lsn
                if counter[0] < max_changes_per_file:
                    break  # the peek ended before its row limit: nothing more up to upto_lsn
        finally:
            conn.close()
    return written
