"""series pictures: a series may be a 2-D picture (`picture`, `plane`, `caption`, `width`,
`height` on table `series`)

Additive only: existing series are volumes (`picture` false, the rest NULL).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04 03:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('series', schema=None) as batch_op:
        batch_op.add_column(sa.Column('picture', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
        batch_op.add_column(sa.Column('plane', sqlmodel.sql.sqltypes.AutoString(length=16),
                                      nullable=True))
        batch_op.add_column(sa.Column('caption', sqlmodel.sql.sqltypes.AutoString(length=500),
                                      nullable=True))
        batch_op.add_column(sa.Column('width', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('height', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('series', schema=None) as batch_op:
        for column in ('height', 'width', 'caption', 'plane', 'picture'):
            batch_op.drop_column(column)
