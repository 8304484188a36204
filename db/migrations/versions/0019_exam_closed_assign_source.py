"""exams close, assignments by source: `closed_at` and `closed_by` on table `exam` (`nmb exam
close`: no new attempt, no new answer); on table `assignmentdesign`, the selections
"unassigned", "model" (its `model` column naming whose responses) and "human" (`nmb assign
--items`)

Additive only: existing exams are open; existing designs keep "all" or "calibration". SQLite
replaces the check constraint by rebuilding the table (Alembic's batch mode), as in 0013.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 10:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0019'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = ('all', 'calibration')
AFTER = ('all', 'calibration', 'unassigned', 'model', 'human')


def _check(words: tuple[str, ...]) -> str:
    return "selection IN (" + ", ".join(f"'{w}'" for w in words) + ")"


def upgrade() -> None:
    with op.batch_alter_table('exam', schema=None) as batch_op:
        batch_op.add_column(sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('closed_by', sa.String(length=64), nullable=True))
    with op.batch_alter_table('assignmentdesign', schema=None) as batch_op:
        batch_op.add_column(sa.Column('model', sa.String(length=128), nullable=True))
        batch_op.drop_constraint('ck_assignmentdesign_selection', type_='check')
        batch_op.create_check_constraint('ck_assignmentdesign_selection', _check(AFTER))


def downgrade() -> None:
    # a design drawn from a part of the unassigned responses: "all" (also only the unassigned)
    op.execute("UPDATE assignmentdesign SET selection = 'all' "
               "WHERE selection NOT IN ('all', 'calibration')")
    with op.batch_alter_table('assignmentdesign', schema=None) as batch_op:
        batch_op.drop_constraint('ck_assignmentdesign_selection', type_='check')
        batch_op.drop_column('model')
        batch_op.create_check_constraint('ck_assignmentdesign_selection', _check(BEFORE))
    with op.batch_alter_table('exam', schema=None) as batch_op:
        batch_op.drop_column('closed_by')
        batch_op.drop_column('closed_at')
