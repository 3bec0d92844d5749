"""compaction queue and history, reader registrations

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 00:00:00

Frozen schema (does not import acidflow.catalog.sql.schema).

* ``compaction_queue`` -- Hive's ``COMPACTION_QUEUE`` and ``COMPLETED_COMPACTIONS`` in one table:
  an entry keeps its row from *initiated* through *working* and *ready for cleaning* to
  *succeeded* / *failed* (or is recorded directly as *did not initiate* / *refused*); finished
  entries are pruned by the history retention (Hive ``hive.compactor.history.retention.*``).
* ``reader_registrations`` -- snapshot readers (table, ValidWriteIdList, position in the txn
  sequence, heartbeat) the cleaner waits for before deleting directories a compaction made
  obsolete.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: Union[str, Sequence[str], None] = "0002"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

COMPACTION_STATES = (
    "initiated",
    "working",
    "ready for cleaning",
    "succeeded",
    "failed",
    "did not initiate",
    "refused",
)
COMPACTION_TYPES = ("major", "minor")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    """Create ``compaction_queue`` and ``reader_registrations``."""
    op.create_table(
        "compaction_queue",
        sa.Column("cq_id", BigId, nullable=False, autoincrement=True),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_name", sa.Text(), nullable=True),
        sa.Column("cq_type", sa.String(16), nullable=False),
        sa.Column("cq_state", sa.String(32), nullable=False),
        sa.Column("cq_requester", sa.String(256), nullable=False),
        sa.Column("cq_worker_id", sa.String(256), nullable=True),
        sa.Column("cq_enqueue_time", sa.DateTime(), nullable=False),
        sa.Column("cq_start", sa.DateTime(), nullable=True),
        sa.Column("cq_end", sa.DateTime(), nullable=True),
        sa.Column("cq_heartbeat", sa.DateTime(), nullable=True),
        sa.Column("cq_error_message", sa.Text(), nullable=True),
        sa.Column("cq_highest_write_id", sa.BigInteger(), nullable=True),
        sa.Column("cq_txn_id", sa.BigInteger(), nullable=True),
        sa.Column("cq_commit_id", sa.BigInteger(), nullable=True),
        sa.Column("cq_properties", sa.JSON(), nullable=False),
        sa.Column("cq_details", sa.JSON(), nullable=False),
        sa.CheckConstraint(_in("cq_state", COMPACTION_STATES), name="ck_compaction_queue_cq_state"),
        sa.CheckConstraint(_in("cq_type", COMPACTION_TYPES), name="ck_compaction_queue_cq_type"),
        sa.PrimaryKeyConstraint("cq_id", name="pk_compaction_queue"),
    )
    op.create_index(
        "ix_compaction_queue_db_name_tbl_name_part_name",
        "compaction_queue",
        ["db_name", "tbl_name", "part_name"],
    )
    op.create_index("ix_compaction_queue_cq_state", "compaction_queue", ["cq_state"])

    op.create_table(
        "reader_registrations",
        sa.Column("reader_id", BigId, nullable=False, autoincrement=True),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("snapshot_seq", sa.BigInteger(), nullable=False),
        sa.Column("high_watermark", sa.BigInteger(), nullable=True),
        sa.Column("valid_write_ids", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("last_heartbeat", sa.DateTime(), nullable=False),
        sa.Column("reader_user", sa.String(256), nullable=True),
        sa.Column("reader_host", sa.String(256), nullable=True),
        sa.Column("agent_info", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("reader_id", name="pk_reader_registrations"),
    )
    op.create_index(
        "ix_reader_registrations_db_name_tbl_name", "reader_registrations", ["db_name", "tbl_name"]
    )


def downgrade() -> None:
    """Drop ``reader_registrations`` and ``compaction_queue``."""
    op.drop_table("reader_registrations")
    op.drop_table("compaction_queue")
