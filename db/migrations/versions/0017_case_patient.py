"""case patient: `patient` on table `case`, an opaque label shared by the cases that describe
one patient (a Neural-MedBench case number present in several release files), so that exams
hold a later stage of one back until the tasks of the others are answered

Additive only: cases imported before this revision are cases of their own (NULL); importing
their release files again links them.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07 10:30:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('case', schema=None) as batch_op:
        batch_op.add_column(sa.Column('patient', sqlmodel.sql.sqltypes.AutoString(length=128),
                                      nullable=True))
        batch_op.create_index(batch_op.f('ix_case_patient'), ['patient'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('case', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_case_patient'))
        batch_op.drop_column('patient')
