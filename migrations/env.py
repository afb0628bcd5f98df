"""Alembic environment for the volsched store.

Three ways in:

- from ``volsched.cache.store`` (the daemon, ``volsched migrate``): the caller passes an open
  synchronous connection in ``config.attributes["connection"]``;
- from the alembic command line: ``alembic -x db=PATH upgrade head`` (see alembic.ini);
- offline (``--sql``): the SQL is printed instead of run.

Migrations run in one transaction (SQLite has transactional DDL), so a crash halfway
leaves the file as it was.
"""

from __future__ import annotations

from logging.config import fileConfig
from pathlib import Path

from alembic import context
from sqlalchemy import Connection

from volsched.cache.store.connecting import create_sync_engine
from volsched.cache.store.schema import metadata

config = context.config

if config.config_file_name is not None:  # the alembic command line, with alembic.ini
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _database_path() -> str:
    path = context.get_x_argument(as_dictionary=True).get("db")
    if path:
        return path
    url = config.get_main_option("sqlalchemy.url") or ""
    prefix = "sqlite:///"
    if url.startswith(prefix):
        return url[len(prefix) :]
    raise SystemExit("name the store file: alembic -x db=PATH upgrade head")


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        transactional_ddl=True,
        render_as_batch=True,  # SQLite alters tables by copying them
    )
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    # Only the dialect matters when printing SQL; no file is opened.
    context.configure(
        url="sqlite://",
        target_metadata=metadata,
        literal_binds=True,
        transactional_ddl=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
        return
    engine = create_sync_engine(Path(_database_path()))
    try:
        with engine.begin() as connection:
            _run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
