"""stage judgments: an expert's judgment of each intermediate stage's answer of a multi-turn
item (`stage_correct` on table `expertscore`)

Additive only: existing scores keep `stage_correct` NULL (not judged per stage).

Revision ID: 0010
Revises: 0008
Create Date: 2026-12-04 04:30:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('expertscore', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stage_correct', sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('expertscore', schema=None) as batch_op:
        batch_op.drop_column('stage_correct')
