"""a collection's display name, in any language, beside its API name (2026-12-06)"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0007'
down_revision = '0006'


def upgrade() -> None:
    with op.batch_alter_table('collection', schema=None) as batch_op:
        batch_op.add_column(sa.Column('title', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
    # collections made before this revision are read under the names they had
    op.execute("UPDATE collection SET title = name WHERE title = ''")


def downgrade() -> None:
    with op.batch_alter_table('collection', schema=None) as batch_op:
        batch_op.drop_column('title')
