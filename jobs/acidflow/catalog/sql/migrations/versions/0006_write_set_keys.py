"""write_set_keys: the key-level write set of keyed tables

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28 00:00:00

One row per (transaction, table, scope) a transaction wrote primary keys into: the scope is a
partition (NULL = every partition) and a bucket (-1 = every bucket); ``key_hashes`` holds the
64-bit hashes of the keys written there as a sorted little-endian uint64 array, or NULL with
``whole`` set when the scope was recorded whole. ``commit_id`` is set when the transaction
commits; the commit-time check aborts a transaction whose keys intersect those of a transaction
that committed after it opened.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: Union[str, Sequence[str], None] = "0005"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

#: 64-bit ids that autoincrement on both backends (as the models' BigId)
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create ``write_set_keys``."""
    op.create_table(
        "write_set_keys",
        sa.Column("wk_id", BigId, nullable=False, autoincrement=True),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("commit_id", sa.BigInteger(), nullable=True),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_name", sa.Text(), nullable=True),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("whole", sa.Boolean(), nullable=False),
        sa.Column("key_count", sa.BigInteger(), nullable=False),
        sa.Column("key_hashes", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("wk_id", name="pk_write_set_keys"),
    )
    op.create_index(
        "ix_write_set_keys_db_name_tbl_name_commit_id",
        "write_set_keys",
        ["db_name", "tbl_name", "commit_id"],
    )
    op.create_index("ix_write_set_keys_txn_id", "write_set_keys", ["txn_id"])


def downgrade() -> None:
    """Drop ``write_set_keys``."""
    op.drop_table("write_set_keys")
