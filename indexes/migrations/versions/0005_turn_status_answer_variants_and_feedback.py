"""turn status, answer variants and feedback (2026-12-02)"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0005'
down_revision = '0004'


def upgrade() -> None:
    op.create_table('feedback',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('turn_id', sa.Integer(), nullable=False),
    sa.Column('rating', sa.Integer(), nullable=False),
    sa.Column('comment', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['turn_id'], ['turn.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('feedback', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_feedback_turn_id'), ['turn_id'], unique=True)

    with op.batch_alter_table('turn', schema=None) as batch_op:
        # turns saved before this revision were all answered to the end
        batch_op.add_column(sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default='done'))
        batch_op.add_column(sa.Column('variant_of', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_turn_variant_of'), ['variant_of'], unique=False)
        batch_op.create_foreign_key('fk_turn_variant_of_turn', 'turn', ['variant_of'], ['id'], ondelete='CASCADE')



def downgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.drop_constraint('fk_turn_variant_of_turn', type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_turn_variant_of'))
        batch_op.drop_column('variant_of')
        batch_op.drop_column('status')

    with op.batch_alter_table('feedback', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_feedback_turn_id'))

    op.drop_table('feedback')
