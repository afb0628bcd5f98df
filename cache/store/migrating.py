"""The store's schema, applied with alembic from the ``migrations`` package.

The alembic ``Config`` is built here rather than read from ``alembic.ini``: its script
location is the directory of the installed ``migrations`` package, so migrations run the
same from a checkout, from a wheel and from any working directory. They run on a
synchronous (stdlib sqlite3) engine, before any async engine opens the file.
"""

from __future__ import annotations

import functools
import importlib.resources
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from volsched.cache.store.connecting import create_sync_engine

# alembic keeps the running environment in module globals (``alembic.context``), so two
# migrations at once in one process (two stores opened from threads) must take turns.
_alembic_lock = threading.Lock()


def migrations_directory() -> Path:
    """Where the ``migrations`` package lives (its env.py and versions/)."""
    return Path(str(importlib.resources.files("volsched.migrations")))


def alembic_config(connection: Connection | None = None) -> Config:
    """A programmatic alembic config; with ``connection``, env.py migrates through it."""
    config = Config()
    config.set_main_option("script_location", str(migrations_directory()))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision this code ships; a file stamped with another one is from the future."""
    script = ScriptDirectory.from_config(alembic_config())
    return frozenset(revision.revision for revision in script.walk_revisions())


@functools.cache
def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("the migrations package holds no revisions")
    return head


def upgrade_to_head(path: Path) -> str:
    """Bring the file at ``path`` to the newest schema in one transaction; the revision.

    Raises what SQLAlchemy and sqlite3 raise; the caller decides whether the file is to
    blame (corrupt, foreign) or the machine is (disk full, no permission).
    """
    engine = create_sync_engine(path)
    try:
        with _alembic_lock, engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
            revision = MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
    return revision or ""
