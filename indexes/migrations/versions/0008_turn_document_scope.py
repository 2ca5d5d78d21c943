"""the one document a turn's question was asked about (2026-12-06)"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0008'
down_revision = '0007'


def upgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        # turns saved before this revision were asked of their collections, as far as anyone can tell
        batch_op.add_column(sa.Column('document_scope', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.drop_column('document_scope')
