"""Alembic's environment for the store: runs on the connection `indexes.migrations` hands it."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from indexes import models  # noqa: F401  (registers the tables)
from indexes.migrations import include_object

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    include_object=include_object,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
