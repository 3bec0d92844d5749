"""SQL on the Hive metastore's compaction queue tables (``metastore_db``; SQLAlchemy Core).

Hive 3.1.3's thrift API has ``compact2`` (enqueue) and ``show_compact`` (list) but none of the
worker's calls (``find_next_compact``, ``mark_compacted``, ``mark_failed`` arrived with Hive
4's remote compaction): Hive 3.1's own ``Worker`` / ``Cleaner`` run inside the metastore and
use ``CompactionTxnHandler`` directly on its backing database. acidflow does the same, on the
metastore's RDBMS given by the thrift catalog's ``metastore_db`` setting, with the same
statements:

* claim (``findNextToCompact``): ``UPDATE COMPACTION_QUEUE SET CQ_WORKER_ID=?, CQ_START=?,
  CQ_STATE='w' WHERE CQ_ID=? AND CQ_STATE='i'`` - one row updated or the entry was taken;
* highest write id (``setCompactionHighestWriteId``);
* ready for cleaning (``markCompacted``): ``CQ_STATE='r'``, ``CQ_WORKER_ID=NULL``;
* succeeded / failed (``markCleaned`` / ``markFailed``): the row moves to
  ``COMPLETED_COMPACTIONS`` with ``CC_STATE`` 's' / 'f' and ``CC_END``;
* back to the queue (``revokeTimedoutWorkers``): ``CQ_STATE='i'``, worker and start cleared.

Hive 3.1's schema has no ``CQ_NEXT_TXN_ID`` and no error column (both came with Hive 4): a
failure's error goes into ``CC_META_INFO`` (bytes, UTF-8), and ``CQ_HADOOP_JOB_ID`` names
acidflow's side entry (``acidflow-<id>``), which ``SHOW COMPACTIONS`` shows. Times are
milliseconds since the epoch, as Hive writes them.

Hive's schema scripts create the tables unquoted: lower-case names on PostgreSQL (Derby and
Oracle fold SQLAlchemy's unquoted lower-case names themselves); MySQL / MariaDB keep the
upper-case names Hive's script spells.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from acidflow.catalog.errors import CatalogError
from acidflow.catalog.hms.queuerules import hive_job_id

__all__ = ["HiveQueueDatabase", "MetastoreQueueError"]


class MetastoreQueueError(CatalogError):
    """The metastore's database refused a compaction queue statement; names the database
    (password masked), the entry (``CQ_ID``) and the reason."""


_COLUMNS = (
    "id",
    "database",
    "table",
    "partition",
    "state",
    "type",
    "tblproperties",
    "worker_id",
    "start",
    "run_as",
    "highest_write_id",
    "meta_info",
    "hadoop_job_id",
)


def _tables(upper: bool) -> tuple[sa.TableClause, sa.TableClause]:
    def name(n: str) -> str:
        return n.upper() if upper else n

    queue = sa.table(name("compaction_queue"), *(sa.column(name(f"cq_{c}")) for c in _COLUMNS))
    done = sa.table(
        name("completed_compactions"),
        *(sa.column(name(f"cc_{c}")) for c in (*_COLUMNS, "end")),
    )
    return queue, done


@dataclass(frozen=True)
class _Cols:
    """Column lookup by Hive's lower-case name on either spelling of the tables."""

    table: sa.TableClause

    def __getitem__(self, name: str) -> sa.ColumnClause:
        cols = self.table.c
        return cols[name] if name in cols else cols[name.upper()]


def now_ms() -> int:
    """Milliseconds since the epoch (Hive's ``CQ_START`` / ``CC_END``)."""
    return int(time.time() * 1000)


class HiveQueueDatabase:
    """The metastore's ``COMPACTION_QUEUE`` / ``COMPLETED_COMPACTIONS`` over SQLAlchemy Core
    (module doc: Hive 3.1's ``CompactionTxnHandler`` statements).

    Args:
        url: the metastore's backing database (SQLAlchemy URL, e.g.
            ``postgresql+psycopg2://hive@db/metastore``).

    Raises:
        MetastoreQueueError: from every method when the database refuses (names it, the
            entry and the reason).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.display_url = sa.engine.make_url(url).render_as_string(hide_password=True)
        self.engine = sa.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)
        upper = self.engine.dialect.name in ("mysql", "mariadb")
        self.queue, self.done = _tables(upper)
        self.q, self.c = _Cols(self.queue), _Cols(self.done)

    def close(self) -> None:
        """Release the pool's connections."""
        self.engine.dispose()

    def _run(self, cq_id: int, what: str, stmt: sa.Executable) -> int:
        try:
            with self.engine.begin() as conn:
                return int(conn.execute(stmt).rowcount or 0)
        except sa.exc.SQLAlchemyError as exc:
            raise MetastoreQueueError(
                f"metastore database {self.display_url}: {what} of compaction CQ_ID {cq_id} "
                f"failed: {exc}"
            ) from exc

    def claim(self, cq_id: int, worker_id: str, side_id: int) -> bool:
        """Take entry ``cq_id`` for ``worker_id`` (Hive ``findNextToCompact``: ``CQ_STATE``
        'i' -> 'w' with worker and start, conditional on 'i'), marked as side entry
        ``side_id``'s (``CQ_HADOOP_JOB_ID`` = ``acidflow-<side_id>``: every later move of this
        claim is conditional on it, so a claim revoked and taken by another worker is never
        moved by acidflow). Returns whether this call took it (False: another worker - Hive's
        own, if it runs - was first, or it is gone)."""
        q = self.q
        stmt = (
            sa.update(self.queue)
            .where(q["cq_id"] == cq_id, q["cq_state"] == "i")
            .values(
                {
                    q["cq_state"]: "w",
                    q["cq_worker_id"]: worker_id[:128],
                    q["cq_start"]: now_ms(),
                    q["cq_hadoop_job_id"]: hive_job_id(side_id),
                }
            )
        )
        return self._run(cq_id, "claim", stmt) == 1

    def set_highest_write_id(self, cq_id: int, highest_write_id: int) -> None:
        """``CQ_HIGHEST_WRITE_ID`` of an entry (Hive ``setCompactionHighestWriteId``)."""
        q = self.q
        stmt = (
            sa.update(self.queue)
            .where(q["cq_id"] == cq_id)
            .values({q["cq_highest_write_id"]: highest_write_id})
        )
        self._run(cq_id, "setting the highest write id", stmt)

    def _working_under(self, cq_id: int, side_id: int) -> tuple[Any, ...]:
        """The WHERE of a move of entry ``cq_id`` that only acidflow's own claim may make:
        working ('w') under side entry ``side_id``'s ``CQ_HADOOP_JOB_ID`` (a claim revoked
        and taken by Hive's worker no longer matches)."""
        q = self.q
        return (
            q["cq_id"] == cq_id,
            q["cq_state"] == "w",
            q["cq_hadoop_job_id"] == hive_job_id(side_id),
        )

    def mark_compacted(self, cq_id: int, highest_write_id: int, side_id: int) -> bool:
        """'w' -> 'r' (Hive ``markCompacted``), with the highest write id, for side entry
        ``side_id``'s claim only. Returns whether the entry was working under that claim."""
        q = self.q
        stmt = (
            sa.update(self.queue)
            .where(*self._working_under(cq_id, side_id))
            .values(
                {
                    q["cq_state"]: "r",
                    q["cq_worker_id"]: None,
                    q["cq_highest_write_id"]: highest_write_id,
                }
            )
        )
        return self._run(cq_id, "markCompacted", stmt) == 1

    def revoke(self, cq_id: int, side_id: int) -> None:
        """'w' -> 'i' with worker, start and job id cleared (Hive ``revokeTimedoutWorkers``),
        for side entry ``side_id``'s claim only (never another worker's)."""
        q = self.q
        stmt = (
            sa.update(self.queue)
            .where(*self._working_under(cq_id, side_id))
            .values(
                {
                    q["cq_state"]: "i",
                    q["cq_worker_id"]: None,
                    q["cq_start"]: None,
                    q["cq_hadoop_job_id"]: None,
                }
            )
        )
        self._run(cq_id, "revoking the worker", stmt)

    def finish(self, cq_id: int, state: str, side_id: int, error: str | None = None) -> bool:
        """Move the entry to ``COMPLETED_COMPACTIONS`` with ``CC_STATE`` ``state`` ('s' after
        the cleaner: Hive ``markCleaned``; 'f': ``markFailed``, ``error`` into
        ``CC_META_INFO``, cut to 2048 bytes: MySQL's schema declares ``varbinary(2048)``) and
        ``CC_END`` now, in one transaction, for side entry ``side_id``'s claim only. Returns
        False when the entry is no longer in the queue (finished already) or is not under
        that claim (revoked and taken by another worker)."""
        q, c = self.q, self.c
        try:
            with self.engine.begin() as conn:
                row = (
                    conn.execute(
                        sa.select(*(q[f"cq_{n}"] for n in _COLUMNS))
                        .where(q["cq_id"] == cq_id, q["cq_hadoop_job_id"] == hive_job_id(side_id))
                        .with_for_update()
                    )
                    .mappings()
                    .first()
                )
                if row is None:
                    return False
                values = {c[f"cc_{n}"]: row[q[f"cq_{n}"].name] for n in _COLUMNS}
                values[c["cc_state"]] = state
                values[c["cc_end"]] = now_ms()
                if error is not None:
                    values[c["cc_meta_info"]] = error.encode("utf-8")[:2048]
                conn.execute(sa.insert(self.done).values(values))
                conn.execute(sa.delete(self.queue).where(q["cq_id"] == cq_id))
                return True
        except sa.exc.SQLAlchemyError as exc:
            raise MetastoreQueueError(
                f"metastore database {self.display_url}: moving compaction CQ_ID {cq_id} to "
                f"COMPLETED_COMPACTIONS as {state!r} failed: {exc}"
            ) from exc
