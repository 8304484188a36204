"""Alembic environment: migrations run against the engine of `sqlalchemy.url`."""

from alembic import context
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import engine_for

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = engine_for(config.get_main_option("sqlalchemy.url").replace("%%", "%"))
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
