"""opening view: column `case.opening_view`, where the viewer opens a case (a bundle's
`hanging_protocol`, or the view an admin chose on /admin: db.study.opening_view)

Additive only: existing cases keep it NULL (their key slices, lesion mask or the family's
plane apply: imaging.opening_view).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 19:40:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0023'
down_revision: str | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('case', schema=None) as batch_op:
        batch_op.add_column(sa.Column('opening_view', sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('case', schema=None) as batch_op:
        batch_op.drop_column('opening_view')
