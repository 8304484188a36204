"""closed vocabularies, continued: a check constraint on a response's source (model,
physician, student) and a picture's plane (axial, coronal, sagittal, none), as `db.models`
types them with `Literal`

No data change: the tool writes only these words (a human response's source is the taker's
role, and only physicians and students take exams). SQLite adds a check constraint by
rebuilding the table (Alembic's batch mode), as in 0013.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 22:10:00.000000
"""
from collections.abc import Sequence

from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (table, constraint, column, allowed words), as in db/models.py at this revision.
CHECKS = (
    ('response', 'ck_response_source', 'source', ('model', 'physician', 'student')),
    ('series', 'ck_series_plane', 'plane', ('axial', 'coronal', 'sagittal', 'none')),
)


def upgrade() -> None:
    for table, name, column, words in CHECKS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            allowed = ", ".join(f"'{w}'" for w in words)
            batch_op.create_check_constraint(name, f"{column} IN ({allowed})")


def downgrade() -> None:
    for table, name, _, _ in CHECKS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(name, type_='check')
