"""cdc_tombstones: the ordering value of each CDC delete, so late events cannot resurrect keys

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 00:00:00

One row per (table, key, transaction): the key (canonical JSON and its SHA-256), the ordering
value of the delete event and the transaction that wrote it. A row counts only once its
transaction committed; readers take the largest committed position per key.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: Union[str, Sequence[str], None] = "0003"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Create ``cdc_tombstones``."""
    op.create_table(
        "cdc_tombstones",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("key_json", sa.Text(), nullable=False),
        sa.Column("position", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint(
            "db_name", "tbl_name", "key_hash", "txn_id", name="pk_cdc_tombstones"
        ),
        sa.ForeignKeyConstraint(["txn_id"], ["txns.txn_id"], name="fk_cdc_tombstones_txn_id_txns"),
    )
    op.create_index("ix_cdc_tombstones_txn_id", "cdc_tombstones", ["txn_id"])


def downgrade() -> None:
    """Drop ``cdc_tombstones``."""
    op.drop_table("cdc_tombstones")
