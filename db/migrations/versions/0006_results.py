"""results: grader rank and stage judgments, response usage

Additive only: grades made before prompt nmb-grader-2 keep `diagnosis_rank` and `stages` NULL
(top-k and revision measures are then unknown for them); responses without `usage` keep NULL.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 09:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('graderscore', schema=None) as batch_op:
        batch_op.add_column(sa.Column('diagnosis_rank', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('stages', sa.JSON(none_as_null=True), nullable=True))
    with op.batch_alter_table('response', schema=None) as batch_op:
        batch_op.add_column(sa.Column('usage', sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('response', schema=None) as batch_op:
        batch_op.drop_column('usage')
    with op.batch_alter_table('graderscore', schema=None) as batch_op:
        batch_op.drop_column('stages')
        batch_op.drop_column('diagnosis_rank')
