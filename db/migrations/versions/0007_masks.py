"""masks: lesion masks of a case (table `mask`), `task.show_masks`

Additive only: existing cases have no masks; existing tasks do not show masks.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 10:30:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'mask',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('case_id', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('label', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('series', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column('path', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
        sa.Column('sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('shape', sa.JSON(), nullable=False),
        sa.Column('voxel_sizes', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['case_id'], ['case.case_id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('case_id', 'position'),
    )
    with op.batch_alter_table('mask', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mask_case_id'), ['case_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_mask_sha256'), ['sha256'], unique=False)
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.add_column(sa.Column('show_masks', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.drop_column('show_masks')
    with op.batch_alter_table('mask', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mask_sha256'))
        batch_op.drop_index(batch_op.f('ix_mask_case_id'))
    op.drop_table('mask')
