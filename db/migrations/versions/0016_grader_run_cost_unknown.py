"""grader run cost unknown: `cost_usd` on table `graderrun` may be NULL, for a run that sent a
request whose price the price table does not hold (an unpriced or local model), as
`collectionrun.cost_usd` already may; such a run recorded 0.0 before

No data change: a run recorded before this revision keeps the 0.0 it recorded, which cannot be
told apart from a model priced at 0.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 21:55:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('graderrun', schema=None) as batch_op:
        batch_op.alter_column('cost_usd', existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("UPDATE graderrun SET cost_usd = 0 WHERE cost_usd IS NULL")
    with op.batch_alter_table('graderrun', schema=None) as batch_op:
        batch_op.alter_column('cost_usd', existing_type=sa.Float(), nullable=False)
