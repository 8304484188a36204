"""retired: table `retirement`, the cases, tasks, responses, models, grader runs and
collection runs taken out of the study's future with a reason (db.study.retire), and their
restoring (`undone_at`)

Additive only: nothing is retired before this revision.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 10:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0020'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'retirement',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('item_id', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('undone_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('undone_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('undo_reason', sa.Text(), nullable=True),
        sa.CheckConstraint("kind IN ('case', 'task', 'response', 'model', 'grader-run', "
                           "'collection-run')", name='ck_retirement_kind'),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('retirement', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_retirement_item_id'), ['item_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('retirement', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_retirement_item_id'))
    op.drop_table('retirement')
