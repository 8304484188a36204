"""model cards, breadth scores and conditions: tables `modelcard` and `breadthscore`, the
condition of a response (`response.condition`), the self-consistency votes of a collected
response (`collectedresponse.votes`) and a case's publication date (`case.published`)

Additive only: every new column is nullable; nothing before this revision has a card, a
breadth score, a condition or a publication date.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07 19:45:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0022'
down_revision: str | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'modelcard',
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('maker', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column('version', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column('released', sa.Date(), nullable=True),
        sa.Column('training_cutoff', sa.Date(), nullable=True),
        sa.Column('web_access', sa.Boolean(), nullable=True),
        sa.Column('params', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column('updated_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('base', 'general', 'medical')", name='ck_modelcard_kind'),
        sa.PrimaryKeyConstraint('name'),
    )
    op.create_table(
        'breadthscore',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('benchmark', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('score', sa.Float(), nullable=False),
        sa.Column('n', sa.Integer(), nullable=True),
        sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=True),
        sa.Column('imported_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('imported_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('model', 'benchmark'),
    )
    with op.batch_alter_table('breadthscore', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_breadthscore_model'), ['model'], unique=False)
    with op.batch_alter_table('response', schema=None) as batch_op:
        batch_op.add_column(sa.Column('condition', sqlmodel.sql.sqltypes.AutoString(length=40),
                                      nullable=True))
    with op.batch_alter_table('collectedresponse', schema=None) as batch_op:
        batch_op.add_column(sa.Column('votes', sa.JSON(none_as_null=True), nullable=True))
    with op.batch_alter_table('case', schema=None) as batch_op:
        batch_op.add_column(sa.Column('published', sa.Date(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('case', schema=None) as batch_op:
        batch_op.drop_column('published')
    with op.batch_alter_table('collectedresponse', schema=None) as batch_op:
        batch_op.drop_column('votes')
    with op.batch_alter_table('response', schema=None) as batch_op:
        batch_op.drop_column('condition')
    with op.batch_alter_table('breadthscore', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_breadthscore_model'))
    op.drop_table('breadthscore')
    op.drop_table('modelcard')
