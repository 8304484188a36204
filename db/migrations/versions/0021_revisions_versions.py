"""revisions and versions: table `revision`, the changed case records and tasks imported with
`--revise` (db.study.revisions), and table `benchmarkversion`, the named versions of the
benchmark (`nmb version tag`, db.study.versions)

Additive only: nothing is revised or tagged before this revision; a grader run may now grade
the stale grades' responses again (`items` 'stale').

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 20:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0021'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


ITEMS = ('pending', 'calibration', 'all')  # a grader run's items before this revision


def _items_check(words: tuple[str, ...]) -> None:
    with op.batch_alter_table('graderrun', schema=None) as batch_op:
        batch_op.drop_constraint('ck_graderrun_items', type_='check')
        batch_op.create_check_constraint('ck_graderrun_items',
                                         f"items IN ({', '.join(repr(w) for w in words)})")


def upgrade() -> None:
    _items_check((*ITEMS, 'stale'))
    op.create_table(
        'revision',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column('item_id', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('fields', sa.JSON(), nullable=False),
        sa.Column('old', sa.JSON(), nullable=False),
        sa.Column('new', sa.JSON(), nullable=False),
        sa.Column('shown', sa.Boolean(), nullable=False),
        sa.Column('bundle', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
        sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('case', 'task')", name='ck_revision_kind'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('kind', 'item_id', 'number'),
    )
    with op.batch_alter_table('revision', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_revision_item_id'), ['item_id'], unique=False)
    op.create_table(
        'benchmarkversion',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('task_ids', sa.JSON(), nullable=False),
        sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )


def downgrade() -> None:
    op.execute("UPDATE graderrun SET items = 'all' WHERE items = 'stale'")
    _items_check(ITEMS)
    op.drop_table('benchmarkversion')
    with op.batch_alter_table('revision', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_revision_item_id'))
    op.drop_table('revision')
