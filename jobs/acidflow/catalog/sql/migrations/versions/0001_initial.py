"""initial catalog: table metadata, transactions, write ids, write set, locks, commit records

Revision ID: 0001
Revises:
Create Date: 2025-01-01 00:00:00

Frozen schema (does not import acidflow.catalog.sql.schema). The compaction queue/history tables come
in a later revision. Constraint names follow schema.NAMING_CONVENTION.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


TXN_STATES = ("open", "committed", "aborted")
OPERATIONS = ("insert", "update", "delete", "insert_overwrite")
LOCK_TYPES = ("shared_read", "shared_write", "exclusive")
LOCK_STATES = ("acquired", "waiting")


def _tbl_fk() -> sa.Column:
    return sa.Column("tbl_id", BigId, nullable=False)


def upgrade() -> None:
    """Create every table of revision 0001 and seed the two sequence rows."""
    op.create_table(
        "tbls",
        sa.Column("tbl_id", BigId, nullable=False, autoincrement=True),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("num_buckets", sa.Integer(), nullable=False),
        sa.Column("bucketing_version", sa.Integer(), nullable=False),
        sa.Column("ordering_column", sa.String(256), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tbl_id", name="pk_tbls"),
        sa.UniqueConstraint("db_name", "tbl_name", name="uq_tbls_db_name_tbl_name"),
    )
    for name, cols, uq in (
        (
            "columns_v2",
            [
                sa.Column("column_name", sa.String(256), nullable=False),
                sa.Column("type_name", sa.Text(), nullable=False),
            ],
            "column_name",
        ),
        (
            "partition_keys",
            [
                sa.Column("pkey_name", sa.String(256), nullable=False),
                sa.Column("pkey_type", sa.Text(), nullable=False),
            ],
            "pkey_name",
        ),
        ("bucketing_cols", [sa.Column("bucket_col_name", sa.String(256), nullable=False)], None),
        ("primary_key_cols", [sa.Column("column_name", sa.String(256), nullable=False)], None),
    ):
        extra = [sa.UniqueConstraint("tbl_id", uq, name=f"uq_{name}_tbl_id_{uq}")] if uq else []
        op.create_table(
            name,
            _tbl_fk(),
            sa.Column("integer_idx", sa.Integer(), nullable=False),
            *cols,
            sa.ForeignKeyConstraint(
                ["tbl_id"], ["tbls.tbl_id"], ondelete="CASCADE", name=f"fk_{name}_tbl_id_tbls"
            ),
            sa.PrimaryKeyConstraint("tbl_id", "integer_idx", name=f"pk_{name}"),
            *extra,
        )
    op.create_table(
        "table_params",
        _tbl_fk(),
        sa.Column("param_key", sa.String(256), nullable=False),
        sa.Column("param_value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tbl_id"], ["tbls.tbl_id"], ondelete="CASCADE", name="fk_table_params_tbl_id_tbls"
        ),
        sa.PrimaryKeyConstraint("tbl_id", "param_key", name="pk_table_params"),
    )

    next_txn_id = op.create_table(
        "next_txn_id",
        sa.Column("id", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("ntxn_next", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_next_txn_id_single_row"),
        sa.PrimaryKeyConstraint("id", name="pk_next_txn_id"),
    )
    op.create_table(
        "txns",
        sa.Column("txn_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("txn_state", sa.String(16), nullable=False),
        sa.Column("txn_started", sa.DateTime(), nullable=False),
        sa.Column("txn_last_heartbeat", sa.DateTime(), nullable=False),
        sa.Column("txn_heartbeat_count", sa.Integer(), nullable=False),
        sa.Column("txn_user", sa.String(256), nullable=True),
        sa.Column("txn_host", sa.String(256), nullable=True),
        sa.Column("txn_agent_info", sa.Text(), nullable=True),
        sa.Column("txn_commit_id", sa.BigInteger(), nullable=True),
        sa.Column("txn_committed", sa.DateTime(), nullable=True),
        sa.Column("txn_aborted", sa.DateTime(), nullable=True),
        sa.Column("txn_abort_reason", sa.Text(), nullable=True),
        sa.CheckConstraint(_in("txn_state", TXN_STATES), name="ck_txns_txn_state"),
        sa.PrimaryKeyConstraint("txn_id", name="pk_txns"),
        sa.UniqueConstraint("txn_commit_id", name="uq_txns_txn_commit_id"),
    )
    op.create_index(
        "ix_txns_txn_state_txn_last_heartbeat", "txns", ["txn_state", "txn_last_heartbeat"]
    )

    op.create_table(
        "txn_components",
        sa.Column("tc_id", BigId, nullable=False, autoincrement=True),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_name", sa.Text(), nullable=True),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.Column("write_id", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(_in("operation", OPERATIONS), name="ck_txn_components_operation"),
        sa.ForeignKeyConstraint(["txn_id"], ["txns.txn_id"], name="fk_txn_components_txn_id_txns"),
        sa.PrimaryKeyConstraint("tc_id", name="pk_txn_components"),
    )
    op.create_index("ix_txn_components_txn_id", "txn_components", ["txn_id"])
    op.create_index(
        "ix_txn_components_db_name_tbl_name_part_name",
        "txn_components",
        ["db_name", "tbl_name", "part_name"],
    )

    op.create_table(
        "completed_txn_components",
        sa.Column("ctc_id", BigId, nullable=False, autoincrement=True),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_name", sa.Text(), nullable=True),
        sa.Column("write_id", sa.BigInteger(), nullable=False),
        sa.Column("committed_at", sa.DateTime(), nullable=False),
        sa.Column("update_delete", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("ctc_id", name="pk_completed_txn_components"),
    )
    op.create_index("ix_completed_txn_components_txn_id", "completed_txn_components", ["txn_id"])
    op.create_index(
        "ix_completed_txn_components_db_name_tbl_name_part_name",
        "completed_txn_components",
        ["db_name", "tbl_name", "part_name"],
    )

    op.create_table(
        "next_write_id",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("nwi_next", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("db_name", "tbl_name", name="pk_next_write_id"),
    )
    op.create_table(
        "txn_to_write_id",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("write_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("db_name", "tbl_name", "write_id", name="pk_txn_to_write_id"),
        sa.UniqueConstraint(
            "txn_id", "db_name", "tbl_name", name="uq_txn_to_write_id_txn_id_db_name_tbl_name"
        ),
    )
    op.create_table(
        "write_set",
        sa.Column("ws_id", BigId, nullable=False, autoincrement=True),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("commit_id", sa.BigInteger(), nullable=False),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_name", sa.Text(), nullable=True),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.CheckConstraint(_in("operation", OPERATIONS), name="ck_write_set_operation"),
        sa.PrimaryKeyConstraint("ws_id", name="pk_write_set"),
    )
    op.create_index(
        "ix_write_set_db_name_tbl_name_commit_id", "write_set", ["db_name", "tbl_name", "commit_id"]
    )

    next_lock_id = op.create_table(
        "next_lock_id",
        sa.Column("id", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("nl_next", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_next_lock_id_single_row"),
        sa.PrimaryKeyConstraint("id", name="pk_next_lock_id"),
    )
    op.create_table(
        "hive_locks",
        sa.Column("lock_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("part_name", sa.Text(), nullable=True),
        sa.Column("lock_type", sa.String(16), nullable=False),
        sa.Column("lock_state", sa.String(16), nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("acquired_at", sa.DateTime(), nullable=True),
        sa.Column("last_heartbeat", sa.DateTime(), nullable=False),
        sa.Column("lock_user", sa.String(256), nullable=True),
        sa.Column("lock_host", sa.String(256), nullable=True),
        sa.Column("agent_info", sa.Text(), nullable=True),
        sa.CheckConstraint(_in("lock_type", LOCK_TYPES), name="ck_hive_locks_lock_type"),
        sa.CheckConstraint(_in("lock_state", LOCK_STATES), name="ck_hive_locks_lock_state"),
        sa.ForeignKeyConstraint(["txn_id"], ["txns.txn_id"], name="fk_hive_locks_txn_id_txns"),
        sa.PrimaryKeyConstraint("lock_id", name="pk_hive_locks"),
    )
    op.create_index("ix_hive_locks_txn_id", "hive_locks", ["txn_id"])
    op.create_index("ix_hive_locks_db_name_tbl_name", "hive_locks", ["db_name", "tbl_name"])

    op.create_table(
        "commit_records",
        sa.Column("db_name", sa.String(128), nullable=False),
        sa.Column("tbl_name", sa.String(256), nullable=False),
        sa.Column("write_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("txn_id", sa.BigInteger(), nullable=False),
        sa.Column("commit_id", sa.BigInteger(), nullable=False),
        sa.Column("committed_at", sa.DateTime(), nullable=False),
        sa.Column("operations", sa.JSON(), nullable=False),
        sa.Column("stats", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("db_name", "tbl_name", "write_id", name="pk_commit_records"),
        sa.UniqueConstraint(
            "txn_id", "db_name", "tbl_name", name="uq_commit_records_txn_id_db_name_tbl_name"
        ),
    )
    op.create_index("ix_commit_records_commit_id", "commit_records", ["commit_id"])

    op.bulk_insert(next_txn_id, [{"id": 1, "ntxn_next": 1}])
    op.bulk_insert(next_lock_id, [{"id": 1, "nl_next": 1}])


def downgrade() -> None:
    """Drop everything revision 0001 created (children first)."""
    for name in (
        "commit_records",
        "hive_locks",
        "next_lock_id",
        "write_set",
        "txn_to_write_id",
        "next_write_id",
        "completed_txn_components",
        "txn_components",
        "txns",
        "next_txn_id",
        "table_params",
        "primary_key_cols",
        "bucketing_cols",
        "partition_keys",
        "columns_v2",
        "tbls",
    ):
        op.drop_table(name)
