"""compaction_queue.cq_metastore_id: the Hive metastore's CQ_ID of an entry

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 00:00:00

On a ``thrift://`` catalog with the metastore's database (``metastore_db``), every compaction
acidflow runs is also an entry of the metastore's ``COMPACTION_QUEUE`` (Hive's ``compact2``
assigns its ``CQ_ID``; ``SHOW COMPACTIONS`` lists it), and requests Hive users queued are run
by acidflow's worker. The side catalog's entry keeps acidflow's bookkeeping (verification
records, details) and names the metastore's entry in this nullable column (``NULL``: no
metastore entry, as on every SQL catalog).
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: Union[str, Sequence[str], None] = "0010"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Add ``compaction_queue.cq_metastore_id``."""
    with op.batch_alter_table("compaction_queue") as batch:
        batch.add_column(sa.Column("cq_metastore_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """Drop ``compaction_queue.cq_metastore_id``."""
    with op.batch_alter_table("compaction_queue") as batch:
        batch.drop_column("cq_metastore_id")
