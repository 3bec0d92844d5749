"""batches: an index on (kind, source)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 00:00:00

A source's high-water mark is the newest committed batch record of its (kind, source): a Kafka
source's end offsets, a data source application's highest ``txnVersion``
(``Catalog.newest_batch``). Streams look it up every micro-batch, and the batch retention keeps
up to 30 days of records, so the lookup goes through this index instead of a scan of the kind.
"""

from typing import Sequence, Union

from alembic import op

revision: str = "0009"
down_revision: Union[str, Sequence[str], None] = "0008"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Create ``ix_batches_kind_source``."""
    op.create_index("ix_batches_kind_source", "batches", ["kind", "source"])


def downgrade() -> None:
    """Drop ``ix_batches_kind_source``."""
    op.drop_index("ix_batches_kind_source", table_name="batches")
