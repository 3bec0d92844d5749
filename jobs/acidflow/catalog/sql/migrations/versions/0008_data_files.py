"""data_files: the event files of each write, with sizes and event counts

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 00:00:00

One row per event file a transaction wrote (a statement, a compaction, a restore, an alter
rewrite): the partition directory (``part_path``, '' when unpartitioned), the file relative to
it (``file_path``, ``<dir>/<file>``), the owning write id, the transaction, the size in bytes
and the event count. A row counts once its transaction committed. Readers, fsck and the
compactor compare the rows of a snapshot's directories with the listing, so a missing or
truncated file fails instead of losing rows silently. ``lost_at`` / ``lost_note``: a repair
acknowledged the file lost (readers then skip it).
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: Union[str, Sequence[str], None] = "0007"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Create ``data_files``."""
    op.create_table(
        "data_files",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_path", sa.Text(), nullable=False),
        sa.Column("file_path", sa.Text(), nullable=False),
        sa.Column("write_id", sa.BigInteger(), nullable=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("file_size", sa.BigInteger(), nullable=False),
        sa.Column("row_count", sa.BigInteger(), nullable=False),
        sa.Column("lost_at", sa.DateTime(), nullable=True),
        sa.Column("lost_note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint(
            "db_name", "tbl_name", "part_path", "file_path", name="pk_data_files"
        ),
    )
    op.create_index("ix_data_files_txn_id", "data_files", ["txn_id"])


def downgrade() -> None:
    """Drop ``data_files``."""
    op.drop_table("data_files")
