"""practice: column `task.practice`, a practice item (a bundle's `"practice": true`): first in
raters' queues and in exams, scored and answered as any other, never counted (db.study.practice)

Additive only: existing tasks are not practice (server default false).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-08 09:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0024'
down_revision: str | None = '0023'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.add_column(sa.Column('practice', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.drop_column('practice')
