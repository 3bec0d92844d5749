"""catalog_identity: the catalog's stable id (one row), so a warehouse can record its owner

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 00:00:00

One row (``identity_key`` = 1): ``catalog_id`` (a random UUID generated once, when the
catalog is created or upgraded to this revision) and ``created_at``. The warehouse's marker file
``_acidflow_warehouse.json`` names this id; a catalog with another id refuses to write there.
"""

import uuid
from datetime import datetime, timezone
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: Union[str, Sequence[str], None] = "0004"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Create ``catalog_identity`` and give the catalog its id."""
    table = op.create_table(
        "catalog_identity",
        sa.Column("identity_key", sa.Integer(), nullable=False),
        sa.Column("catalog_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("identity_key", name="pk_catalog_identity"),
    )
    op.bulk_insert(
        table,
        [
            {
                "identity_key": 1,
                "catalog_id": str(uuid.uuid4()),
                "created_at": datetime.now(timezone.utc).replace(tzinfo=None),
            }
        ],
    )


def downgrade() -> None:
    """Drop ``catalog_identity`` (the id is lost; a new one is made by the next upgrade)."""
    op.drop_table("catalog_identity")
