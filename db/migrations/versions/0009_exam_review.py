"""exam review: an exam may let its takers read their answers beside the reference answers
once they have finished (`review` on table `exam`)

Additive only: existing exams do not allow review (`review` false), as a baseline study
expects.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 04:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('exam', schema=None) as batch_op:
        batch_op.add_column(sa.Column('review', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('exam', schema=None) as batch_op:
        batch_op.drop_column('review')
