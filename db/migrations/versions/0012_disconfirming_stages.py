"""disconfirming stages: which revealed stages of a multi-turn task contradict a wrong first
hypothesis (`disconfirming` on table `task`, one true/false per stage)

Additive only: existing tasks keep `disconfirming` NULL (no stage marked).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 19:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.add_column(sa.Column('disconfirming', sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.drop_column('disconfirming')
