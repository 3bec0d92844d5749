"""History retention: which old snapshots of a table must stay readable, and which directories
of one partition they read (docs/hive-acid-format.md §9 "Cleaner", retention).

Hive's cleaner deletes every directory a compaction made obsolete as soon as no open reader
needs it, so time travel (``read_table(as_of_write_id=W)``) and incremental reads to write ids
below the newest compaction fail with ``NotEnoughHistoryError``. acidflow keeps history the way
Hudi's cleaner (``hoodie.cleaner.commits.retained`` / ``hoodie.cleaner.hours.retained``) and
Delta (``delta.deletedFileRetentionDuration``) do, with two table properties:

* ``acidflow.history.retain.commits`` (default 10): the last N commits stay undoable -- the
  snapshot just before them, and every later one, stays readable;
* ``acidflow.history.retain.hours`` (default 24): every snapshot that was the current one at
  some moment of the last H hours stays readable.

**The rule.** The snapshots are the committed states of the table: the one right after each
commit, which ``as_of_write_id=W`` reads for the W that commit wrote (``acidflow.format.
timetravel``: valid = the write ids committed by then in commit order, so it may include write
ids above W and exclude lower ones that committed later). A state is retained when EITHER
bound retains it (the union of Hudi's KEEP_LATEST_COMMITS and KEEP_LATEST_BY_HOURS, so lowering
one property never drops history the other still promises). Retained states are always the
newest ones in commit order, from the one right after the commit of
:func:`oldest_retained_write_id` on (``0`` = the whole history, the empty table before the
first commit included). Both properties at 0 give Hive's behaviour (only the current
snapshot).

The directories one partition must keep are the union, over the retained states, of what
``getAcidState`` picks for each (:func:`retained_names`). Most states are the cut of the
current snapshot at their high watermark (:func:`snapshot_at`), and a cut's choice depends on
its high watermark only through comparisons with the write ids named by the directories and the
exceptions, so evaluating cuts at those break points (:func:`snapshot_points`) from ``oldest``
on covers them (every retained state's high watermark is at least ``oldest``: high watermarks
only grow along commit order). The other states -- a write id below the high watermark still
open then and committed later, so the state lists it as an exception although the current
snapshot does not -- are evaluated one by one (``extra``). Keeping a cut that is no real
state only keeps more. Removing other directories never changes what a retained snapshot picks
(its base and deltas are all kept; the walk of §6 step 7 does not look at skipped deltas).

Defaults can be changed per deployment with ``ACIDFLOW_HISTORY_RETAIN_COMMITS`` /
``ACIDFLOW_HISTORY_RETAIN_HOURS``; a table property wins over the environment.

**The timeline.** The commit records (``acidflow commits``, the UI's history, restore's and
rollback's choice of a commit) outlive the readable snapshots: the cleaner deletes a record only
when it is older than both the oldest retained state and the newest
``acidflow.timeline.keep.commits`` records (default 100; ``ACIDFLOW_TIMELINE_KEEP_COMMITS``), as
Hudi archives its timeline beyond ``hoodie.keep.max.commits`` (:func:`timeline_keep_commits`).
Transactions (``txns``, ``txn_to_write_id``) go with the records: once every table a committed
transaction wrote has archived the records of its commit (``Catalog.purge_transactions``).

**The batch ledger.** A committed batch record (what makes a rerun of an ingest file, a CDC file,
a Kafka offset range or an idempotent data source write a no-op) is kept for
``ACIDFLOW_BATCH_RETAIN_HOURS`` (default 720 = 30 days, Delta Lake's
``delta.setTransactionRetentionDuration`` idea) after it committed; the newest committed record
of each (kind, source) stays whatever its age, as the source's high-water mark (Kafka end
offsets, the highest ``txnVersion``) (:func:`batch_retention`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable, Iterable, Mapping, Sequence

from acidflow.format.layout import (
    AcidState,
    DirEntry,
    NotEnoughHistoryError,
    ValidWriteIdList,
    parse_base,
    parse_delta,
)
from acidflow.storage.fs import TableFS
from acidflow.storage.state import acid_state, history_floor

__all__ = [
    "RETAIN_COMMITS",
    "RETAIN_HOURS",
    "DEFAULT_RETAIN_COMMITS",
    "DEFAULT_RETAIN_HOURS",
    "RetentionPolicy",
    "check_retention_properties",
    "retention_policy",
    "oldest_retained_write_id",
    "snapshot_at",
    "snapshot_points",
    "retained_names",
    "readable_at",
    "history_loss",
    "timeline_keep_commits",
    "batch_retention",
]

RETAIN_COMMITS = "acidflow.history.retain.commits"
RETAIN_HOURS = "acidflow.history.retain.hours"
DEFAULT_RETAIN_COMMITS = 10
DEFAULT_RETAIN_HOURS = 24.0
ENV_RETAIN_COMMITS = "ACIDFLOW_HISTORY_RETAIN_COMMITS"
ENV_RETAIN_HOURS = "ACIDFLOW_HISTORY_RETAIN_HOURS"


@dataclass(frozen=True)
class RetentionPolicy:
    """A table's history retention.

    Attributes:
        commits: number of latest commits that stay undoable (>= 0).
        hours: hours of snapshots that stay readable (>= 0, finite).
    """

    commits: int = DEFAULT_RETAIN_COMMITS
    hours: float = DEFAULT_RETAIN_HOURS

    def describe(self) -> str:
        """``"10 commits / 24 h"``."""
        hours = int(self.hours) if float(self.hours).is_integer() else self.hours
        return f"{self.commits} commit{'s' if self.commits != 1 else ''} / {hours} h"


def _parse_commits(table: str, where: str, value: object) -> int:
    text = str(value).strip()
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(
            f"table {table}: {where}={value!r} is not a number of commits (a whole number >= 0)"
        )
    return n


def _parse_hours(table: str, where: str, value: object) -> float:
    text = str(value).strip()
    try:
        h = float(text)
    except ValueError:
        h = -1.0
    if not math.isfinite(h) or h < 0:
        raise ValueError(
            f"table {table}: {where}={value!r} is not a number of hours (a finite number >= 0)"
        )
    return h


def check_retention_properties(table: str, props: Mapping[str, str]) -> None:
    """Refuse bad retention properties (called by ``TableDef.validate`` and
    ``set_table_properties``, so the tables YAML and ``ALTER ... SET TBLPROPERTIES`` alike).

    Raises:
        ValueError: naming the table, the property and the value.
    """
    if RETAIN_COMMITS in props:
        _parse_commits(table, f"property {RETAIN_COMMITS}", props[RETAIN_COMMITS])
    if RETAIN_HOURS in props:
        _parse_hours(table, f"property {RETAIN_HOURS}", props[RETAIN_HOURS])


TIMELINE_KEEP_COMMITS = "acidflow.timeline.keep.commits"
ENV_TIMELINE_KEEP_COMMITS = "ACIDFLOW_TIMELINE_KEEP_COMMITS"
DEFAULT_TIMELINE_KEEP_COMMITS = 100
ENV_BATCH_RETAIN_HOURS = "ACIDFLOW_BATCH_RETAIN_HOURS"
DEFAULT_BATCH_RETAIN_HOURS = 720.0


def timeline_keep_commits(
    table: str, props: Mapping[str, str], env: Mapping[str, str] | None = None
) -> int:
    """How many of a table's newest commit records the cleaner always keeps (module doc, "The
    timeline"): the property ``acidflow.timeline.keep.commits``, else
    ``ACIDFLOW_TIMELINE_KEEP_COMMITS``, else 100.

    Raises:
        ValueError: a bad property or environment value (table, key and value named).
    """
    env = os.environ if env is None else env
    if TIMELINE_KEEP_COMMITS in props:
        where, value = f"property {TIMELINE_KEEP_COMMITS}", props[TIMELINE_KEEP_COMMITS]
        return _parse_commits(table, where, value)
    if ENV_TIMELINE_KEEP_COMMITS in env:
        return _parse_commits(table, ENV_TIMELINE_KEEP_COMMITS, env[ENV_TIMELINE_KEEP_COMMITS])
    return DEFAULT_TIMELINE_KEEP_COMMITS


def batch_retention(env: Mapping[str, str] | None = None) -> timedelta:
    """How long the cleaner keeps a committed batch record that is not its source's newest
    (module doc, "The batch ledger"): ``ACIDFLOW_BATCH_RETAIN_HOURS`` (hours, a finite number
    >= 0), else 720 hours. A rerun of a batch older than this is applied again: CDC changes are
    then ignored as late events (their positions are not newer than the stored rows'), inserts
    into keyed tables are refused as existing keys, inserts into keyless tables are duplicated.

    Raises:
        ValueError: a bad environment value (key and value named).
    """
    env = os.environ if env is None else env
    value = env.get(ENV_BATCH_RETAIN_HOURS)
    if value is None:
        return timedelta(hours=DEFAULT_BATCH_RETAIN_HOURS)
    try:
        hours = float(value.strip())
    except ValueError:
        hours = -1.0
    if not math.isfinite(hours) or hours < 0:
        raise ValueError(
            f"{ENV_BATCH_RETAIN_HOURS}={value!r} is not a number of hours (a finite number >= 0)"
        )
    return timedelta(hours=hours)


def retention_policy(
    table: str, props: Mapping[str, str], env: Mapping[str, str] | None = None
) -> RetentionPolicy:
    """The policy of a table: its properties, else ``ACIDFLOW_HISTORY_RETAIN_*``, else the
    defaults (10 commits, 24 hours).

    Raises:
        ValueError: a bad property or environment value (table, key and value named).
    """
    env = os.environ if env is None else env
    commits, hours = DEFAULT_RETAIN_COMMITS, DEFAULT_RETAIN_HOURS
    if RETAIN_COMMITS in props:
        commits = _parse_commits(table, f"property {RETAIN_COMMITS}", props[RETAIN_COMMITS])
    elif ENV_RETAIN_COMMITS in env:
        commits = _parse_commits(table, ENV_RETAIN_COMMITS, env[ENV_RETAIN_COMMITS])
    if RETAIN_HOURS in props:
        hours = _parse_hours(table, f"property {RETAIN_HOURS}", props[RETAIN_HOURS])
    elif ENV_RETAIN_HOURS in env:
        hours = _parse_hours(table, ENV_RETAIN_HOURS, env[ENV_RETAIN_HOURS])
    return RetentionPolicy(commits, hours)


def oldest_retained_write_id(
    committed: Sequence[tuple[int, datetime | None]], policy: RetentionPolicy, now: datetime
) -> int:
    """The oldest retained state (pure): the state right after the commit of the returned
    write id, and every state after it in commit order, is retained.

    Args:
        committed: the table's committed write ids in commit order (ascending write ids when
            no commit interleaved), each with its commit time (None when unknown: writes by
            Hive) -- times in one timezone with ``now``.
        policy: the table's :class:`RetentionPolicy`.
        now: the time the rule is evaluated at.
    Returns:
        A committed write id, or 0 (the whole history, the empty table before the first
        commit included). With no commits: 0.

    Commits bound: the state before the last ``commits`` commits, i.e. right after the
    ``(commits+1)``-th newest commit (0 when there are not that many).
    Hours bound: the state that was current at ``now - hours``: right after the last commit
    at or before it (0 when every commit is newer); an unknown time counts as older than any
    known one. The result is the earlier of the two in commit order (either bound retains).
    """
    ids = [w for w, _ in committed]
    if not ids:
        return 0
    by_commits = len(ids) - policy.commits - 1  # index of the state's commit; -1 = empty
    cutoff = now - timedelta(hours=policy.hours)
    by_hours = -1
    for i, (_w, at) in enumerate(committed):
        if at is None or at <= cutoff:
            by_hours = i
    first = min(by_commits, by_hours)
    return ids[first] if first >= 0 else 0


def snapshot_at(valid: ValidWriteIdList, write_id: int) -> ValidWriteIdList:
    """The cut of the current snapshot at high watermark ``write_id`` (pure): the current
    open and aborted exceptions at or below it. It is the state right after ``write_id``'s
    commit (``Catalog.valid_write_ids(as_of_write_id=)``) whenever no lower write id committed
    after it; the states where one did are passed to :func:`retained_names` as ``extra``."""
    w = min(write_id, valid.high_watermark)
    return ValidWriteIdList(
        valid.table_name,
        w,
        [o for o in valid.open_write_ids if o <= w],
        [a for a in valid.aborted_write_ids if a <= w],
    )


def snapshot_points(
    entries: Iterable[DirEntry], valid: ValidWriteIdList, oldest: int, floor: int | None = None
) -> list[int]:
    """High watermarks in ``[oldest, valid.high_watermark]`` at which ``getAcidState`` of this
    listing can change its answer (pure): ``oldest``, the current high watermark, and every
    ``x-1, x, x+1`` for ``x`` a base write id, a delta's min or max write id, or an exception.
    ``getAcidState`` compares the high watermark only with such values (and with ``x+1`` of
    them), so between two consecutive points its answer is constant. ``floor``: the
    partition's history floor (``acidflow.storage.state.history_floor``), a break point too."""
    hwm = valid.high_watermark
    lo = max(0, oldest)
    marks: set[int] = {lo, hwm}
    for e in entries:
        top = e.path.split("/", 1)[0]
        b = parse_base(top)
        if b is not None:
            marks.add(b.write_id)
        d = parse_delta(top)
        if d is not None:
            marks.update((d.min_write_id, d.max_write_id))
    marks.update(valid.open_write_ids)
    marks.update(valid.aborted_write_ids)
    if floor is not None and floor <= hwm + 1:
        marks.add(floor)
    points = {m + k for m in marks for k in (-1, 0, 1)}
    return sorted(p for p in points if lo <= p <= hwm)


def _needed(state: AcidState) -> set[str]:
    names = set(state.current_dirs)
    names.update(p.split("/", 1)[0] for p in state.original_files)
    return names


def retained_names(
    tfs: TableFS,
    partition_dir: str,
    valid: ValidWriteIdList,
    oldest: int,
    *,
    entries: list[DirEntry] | None = None,
    txn_state: Callable[[int], str] | None = None,
    extra: Iterable[ValidWriteIdList] = (),
) -> set[str]:
    """Top-level names (base, delta and delete delta directories, original files or
    directories) of one partition that some retained snapshot reads: the union of
    ``getAcidState`` at every :func:`snapshot_points` high watermark from ``oldest`` on, and
    at every ``extra`` snapshot (retained states with write ids that committed after a higher
    one: ``acidflow.read.history.RetainedRange.interleaved``).

    A snapshot whose files are already gone (``NotEnoughHistoryError``) needs nothing.

    Args:
        valid: the table's current ValidWriteIdList.
        oldest: :func:`oldest_retained_write_id`.
        entries: the partition's recursive listing when the caller has it.
        txn_state: the ``_v<T>`` lookup (``Catalog.visibility_lookup``), as for ``acid_state``.
    Returns:
        Names relative to ``partition_dir``.
    """
    listing = tfs.list_recursive(partition_dir) if entries is None else entries
    keep: set[str] = set()
    floor = history_floor(tfs, partition_dir, listing)
    snapshots = [snapshot_at(valid, w) for w in snapshot_points(listing, valid, oldest, floor)]
    for snap in snapshots + list(extra):
        try:
            keep |= _needed(
                acid_state(tfs, partition_dir, snap, entries=listing, txn_state=txn_state)
            )
        except NotEnoughHistoryError:
            continue
    return keep


def readable_at(
    tfs: TableFS,
    partition_dir: str,
    snapshot: ValidWriteIdList,
    *,
    entries: list[DirEntry] | None = None,
    txn_state: Callable[[int], str] | None = None,
) -> bool:
    """Whether ``snapshot`` (a time-travel state) of one partition can still be read
    (``getAcidState`` finds a usable base or full history; ``txn_state`` as for
    ``acid_state``)."""
    listing = tfs.list_recursive(partition_dir) if entries is None else entries
    try:
        acid_state(tfs, partition_dir, snapshot, entries=listing, txn_state=txn_state)
    except NotEnoughHistoryError:
        return False
    return True


def history_loss(removed: Iterable[str], remaining: Iterable[str]) -> int | None:
    """The lowest high watermark whose base-less read (see ``acidflow.storage.state``) the removal
    of ``removed`` (top-level names of one partition) breaks, or None when it breaks none
    (pure): a delta covered by a remaining delta of the same kind (a minor compaction's wider
    delta) costs nothing, a base costs nothing (base-less reads do not read bases), any other
    delta costs its min write id, an original file or directory costs 0."""
    rest = [d for d in (parse_delta(n) for n in remaining) if d is not None]
    lost: int | None = None
    for name in removed:
        if parse_base(name) is not None:
            continue
        d = parse_delta(name)
        if d is None:
            cost = 0
        elif any(
            c.is_delete == d.is_delete
            and c.min_write_id <= d.min_write_id
            and c.max_write_id >= d.max_write_id
            for c in rest
        ):
            continue
        else:
            cost = d.min_write_id
        lost = cost if lost is None else min(lost, cost)
    return lost
