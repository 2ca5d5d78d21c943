"""PostgreSQL full-text search columns of chunks (tsvector, pg_trgm); nothing on SQLite (2026-12-01)"""

from __future__ import annotations

from alembic import op

from indexes.pg import PgDriver
from indexes.lexical.postgres import fill_missing

revision = '0004'
down_revision = '0003'


def upgrade() -> None:
    # SQLite keeps its FTS5 tables beside the rows (indexes/db.py); these columns are PostgreSQL's own.
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute("ALTER TABLE chunk ADD COLUMN IF NOT EXISTS lexical_vector tsvector, "
               "ADD COLUMN IF NOT EXISTS lexical_cjk text")
    fill_missing(PgDriver(op.get_bind().connection.driver_connection))  # chunks written before this revision
    op.execute("CREATE INDEX IF NOT EXISTS ix_chunk_lexical_vector ON chunk USING gin (lexical_vector)")
    op.execute("CREATE INDEX IF NOT EXISTS ix_chunk_lexical_cjk ON chunk USING gin (lexical_cjk gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_chunk_lexical_cjk")
    op.execute("DROP INDEX IF EXISTS ix_chunk_lexical_vector")
    op.execute("ALTER TABLE chunk DROP COLUMN IF EXISTS lexical_cjk, DROP COLUMN IF EXISTS lexical_vector")
