"""The cluster a database belongs to: a key/value table holding its identity.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24

A warm database opened against another cluster (a restored volume, a copied file, a
kubeconfig pointing elsewhere) must be discarded, not acted on; the identity recorded
here (the kube-system namespace's uid) tells.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    op.drop_table("meta")
