"""batches: idempotence records for ingest and CDC batches

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 00:00:00

One row per batch id (a digest of the batch's source: its files and checksums, or a slot's LSN
range), pointing at the transaction that applies it. The batch counts as applied exactly when
that transaction committed, so the record becomes true atomically with the data.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: Union[str, Sequence[str], None] = "0001"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Create ``batches``."""
    op.create_table(
        "batches",
        sa.Column("batch_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("registered_at", sa.DateTime(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("batch_id", name="pk_batches"),
        sa.ForeignKeyConstraint(["txn_id"], ["txns.txn_id"], name="fk_batches_txn_id_txns"),
    )
    op.create_index("ix_batches_txn_id", "batches", ["txn_id"])
    op.create_index("ix_batches_kind", "batches", ["kind"])


def downgrade() -> None:
    """Drop ``batches``."""
    op.drop_table("batches")
