"""schema_history and column comments: schema evolution with Hive's rules

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 00:00:00

``columns_v2.comment``: a column's comment (Hive ``COLUMNS_V2.COMMENT``).

``schema_history``: one row per schema version of a table, valid from the write id of the
transaction that made the change (``write_id``; 0 = the schema the table had before its first
recorded change). ``columns`` is the data columns as ``[{"name", "type", "comment"}]`` in file
order, ``change`` what was done (``{"op": "rename_column", ...}``). A reader takes the newest
version whose write id is valid in its ValidWriteIdList, so a change becomes visible atomically
with the commit of its transaction and time travel reads the schema of its time.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: Union[str, Sequence[str], None] = "0006"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Add ``columns_v2.comment``; create ``schema_history``."""
    with op.batch_alter_table("columns_v2") as batch:
        batch.add_column(sa.Column("comment", sa.Text(), nullable=True))
    op.create_table(
        "schema_history",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("write_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=True),
        sa.Column("columns", sa.JSON(), nullable=False),
        sa.Column("change", sa.JSON(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("db_name", "tbl_name", "write_id", name="pk_schema_history"),
    )


def downgrade() -> None:
    """Drop ``schema_history`` and ``columns_v2.comment``."""
    op.drop_table("schema_history")
    with op.batch_alter_table("columns_v2") as batch:
        batch.drop_column("comment")
