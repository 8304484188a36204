"""reviewed cases: the cases whose reference answer an attempt's review handed to its taker
(`reviewed_cases` on table `examattempt`), so that no exam opened later asks their tasks

Additive only: attempts reviewed before this revision have no record (NULL); their
reviews were guarded only by withholding the cases of the exams open at the time.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 14:10:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('examattempt', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reviewed_cases', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('examattempt', schema=None) as batch_op:
        batch_op.drop_column('reviewed_cases')
