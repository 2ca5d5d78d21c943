"""a turn's answer check and the model's own answer (2026-12-06)"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0006'
down_revision = '0005'


def upgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        # turns saved before this revision keep no check: the page shows them without verdicts
        batch_op.add_column(sa.Column('answer_check', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('model_answer', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.drop_column('model_answer')
        batch_op.drop_column('answer_check')
