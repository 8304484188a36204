"""imported scores: `imported` on table `expertscore` marks an expert score brought in by
`nmb import-scores` (a paper form, a spreadsheet, an earlier study), not collected blind
through the tool

Additive only: every existing score was collected through the tool (`imported` false).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-12 10:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0018'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('expertscore', schema=None) as batch_op:
        batch_op.add_column(sa.Column('imported', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('expertscore', schema=None) as batch_op:
        batch_op.drop_column('imported')
