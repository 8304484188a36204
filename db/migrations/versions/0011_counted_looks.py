"""counted held-out looks: a look has its own id and its number under the protocol, and can
be suspended when the data behind it change

Table `heldoutlook` is rebuilt (its key was the config: one look per config for good). Existing
looks keep their values and are numbered per protocol in the order they were taken.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 19:00:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEPT = ['config_id', 'report_id', 'protocol_id', 'passed', 'created_at', 'revoked_at',
        'revoked_by', 'revoke_reason']


def _common() -> list:
    return [
        sa.Column('config_id', sa.Integer(), nullable=False),
        sa.Column('report_id', sa.Integer(), nullable=False),
        sa.Column('protocol_id', sa.Integer(), nullable=False),
        sa.Column('passed', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('revoked_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('revoke_reason', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['config_id'], ['graderconfig.id'], ),
        sa.ForeignKeyConstraint(['protocol_id'], ['calibrationprotocol.id'], ),
        sa.ForeignKeyConstraint(['report_id'], ['calibrationreport.id'], ),
        sa.UniqueConstraint('report_id'),
    ]


def _read(order: list[str]) -> list[dict]:
    """The looks as stored, typed (SQLite keeps times as text: read through DateTime)."""
    types = {'passed': sa.Boolean(), 'created_at': sa.DateTime(timezone=True),
             'revoked_at': sa.DateTime(timezone=True), 'revoked_by': sa.String(),
             'revoke_reason': sa.Text()}
    columns = [sa.column(name, types.get(name, sa.Integer())) for name in KEPT]
    old = sa.table('heldoutlook', *columns)
    if 'id' in order:
        old.append_column(sa.column('id', sa.Integer()))
    query = sa.select(*columns).select_from(old).order_by(*(old.c[name] for name in order))
    return [dict(row) for row in op.get_bind().execute(query).mappings()]


def upgrade() -> None:
    rows = _read(['protocol_id', 'created_at', 'config_id'])
    op.drop_table('heldoutlook')
    table = op.create_table(
        'heldoutlook',
        sa.Column('id', sa.Integer(), nullable=False),
        *_common(),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('suspended_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('suspend_reason', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('protocol_id', 'number'),
    )
    op.create_index(op.f('ix_heldoutlook_config_id'), 'heldoutlook', ['config_id'], unique=False)
    seen: dict[int, int] = {}
    for row in rows:
        seen[row['protocol_id']] = row['number'] = seen.get(row['protocol_id'], 0) + 1
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    latest = {row['config_id']: row for row in _read(['id'])}  # each config's newest look
    op.drop_index(op.f('ix_heldoutlook_config_id'), table_name='heldoutlook')
    op.drop_table('heldoutlook')
    table = op.create_table('heldoutlook', *_common(), sa.PrimaryKeyConstraint('config_id'))
    if latest:
        op.bulk_insert(table, list(latest.values()))
