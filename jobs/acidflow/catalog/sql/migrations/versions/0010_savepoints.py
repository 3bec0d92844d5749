"""savepoints: named states of a table kept past history retention

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-10 00:00:00

One row per savepoint (Hudi's savepoint, Iceberg's tag): the table, the savepoint's name, the
write id whose time-travel state it pins (``as_of_write_id``), that state's ValidWriteIdList
(string form), when and by whom it was made. The cleaner keeps every directory the state
reads, and the purge of commit records keeps the records from the commit of its write id on
(and so the transactions of those commits), so time travel and restore to it keep working
past ``acidflow.history.retain.*``.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: Union[str, Sequence[str], None] = "0009"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Create ``savepoints``."""
    op.create_table(
        "savepoints",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("sp_name", sa.String(256), nullable=False),
        sa.Column("write_id", sa.BigInteger(), nullable=False),
        sa.Column("valid_write_ids", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(256), nullable=True),
        sa.PrimaryKeyConstraint("db_name", "tbl_name", "sp_name", name="pk_savepoints"),
    )


def downgrade() -> None:
    """Drop ``savepoints``."""
    op.drop_table("savepoints")
