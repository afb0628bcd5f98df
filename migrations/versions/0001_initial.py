"""The first schema: both cache layers, watch resume points and the binding journal.

Revision ID: 0001
Revises:
Create Date: 2024-11-22

Migrations are frozen in time: the tables are spelled out here rather than imported from
cache.store.schema, which describes the newest version only.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _object_table(name: str) -> None:
    op.create_table(
        name,
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "key"),
    )


def upgrade() -> None:
    _object_table("objects")
    _object_table("assumed")
    op.create_table(
        "resume_points",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("resource_version", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("kind"),
    )
    op.create_table(
        "journal",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pod", sa.Text(), nullable=False),
        sa.Column("node", sa.Text(), nullable=False),
        sa.Column("intent", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("journal")
    op.drop_table("resume_points")
    op.drop_table("assumed")
    op.drop_table("objects")
