"""closed vocabularies: a check constraint on each column that holds one word of a fixed
list (score and run statuses, the items a grader run grades, an assignment's selection,
calibration parts), as `db.models` types them with `Literal`

No data change: the tool writes only these words. SQLite adds a check constraint by rebuilding
the table (Alembic's batch mode); `db/migrations/env.py` turns foreign keys off around the
migrations on SQLite for that, and checks them all before committing.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 19:20:00.000000
"""
from collections.abc import Sequence

from alembic import op

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (table, constraint, column, allowed words), as in db/models.py at this revision.
CHECKS = (
    ('assignmentdesign', 'ck_assignmentdesign_selection', 'selection', ('all', 'calibration')),
    ('expertscore', 'ck_expertscore_status', 'status', ('draft', 'submitted')),
    ('graderrun', 'ck_graderrun_items', 'items', ('pending', 'calibration', 'all')),
    ('graderrun', 'ck_graderrun_status', 'status', ('running', 'finished', 'interrupted')),
    ('collectionrun', 'ck_collectionrun_status', 'status', ('running', 'finished', 'interrupted')),
    ('calibrationitem', 'ck_calibrationitem_part', 'part', ('dev', 'heldout')),
    ('calibrationreport', 'ck_calibrationreport_part', 'part', ('dev', 'heldout', 'all')),
)


def _tables() -> dict[str, list[tuple]]:
    tables: dict[str, list[tuple]] = {}
    for table, *check in CHECKS:
        tables.setdefault(table, []).append(tuple(check))
    return tables


def upgrade() -> None:
    for table, checks in _tables().items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, column, words in checks:
                allowed = ", ".join(f"'{w}'" for w in words)
                batch_op.create_check_constraint(name, f"{column} IN ({allowed})")


def downgrade() -> None:
    for table, checks in _tables().items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, _, _ in checks:
                batch_op.drop_constraint(name, type_='check')
