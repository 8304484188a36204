"""Alembic environment: migrations run against the engine of `sqlalchemy.url`.

On SQLite, foreign keys are off while migrations run (a table that batch mode rebuilds, to add
a check constraint, must not fail or cascade on its children's rows) and every foreign key is
checked before the migrations commit; they are on again afterwards."""

from alembic import context
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import engine_for

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = engine_for(config.get_main_option("sqlalchemy.url").replace("%%", "%"))
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        raw = connection.connection.dbapi_connection
        if sqlite:  # before the transaction begins: inside one the pragma does nothing
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=sqlite,
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite and (broken := connection.exec_driver_sql(
                        "PRAGMA foreign_key_check").fetchall()):
                    raise RuntimeError(f"migrations left rows without their parent: {broken[:5]}")
            connection.commit()
        finally:
            if sqlite:
                connection.rollback()  # (nothing is left after the commit)
                raw.execute("PRAGMA foreign_keys=ON")


run_migrations_online()
