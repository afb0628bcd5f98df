"""A snapshot of the parsed layer-1 cache, so a warm start need not parse every object.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25

One row at most, written at a clean stop beside the objects it mirrors and deleted by any
later write of an object; stamped with the fingerprint of the code that parsed it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "snapshot",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("taken_at", sa.Float(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("snapshot")
