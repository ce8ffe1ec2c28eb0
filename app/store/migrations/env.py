"""Alembic environment: reuse the caller's connection (``store.migrate``) or open TCFL_DATABASE_URL."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import MetaData

from app.settings import Settings
from app.store.migrations import import_models
from app.store.store import Base, make_engine

config = context.config


def target_metadata() -> MetaData:
    """Every table's metadata (``import_models``), for autogenerate from the command line."""
    import_models()
    return Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        # ``app.store.engine.migrate``: an upgrade, which reads no metadata; the models are not
        # loaded for it (some are the service's, which would import the web framework)
        context.configure(connection=connection, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    if config.config_file_name is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    engine = make_engine(Settings().database_url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata(), render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


def run_migrations_offline() -> None:
    context.configure(url=Settings().database_url, target_metadata=target_metadata(), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
