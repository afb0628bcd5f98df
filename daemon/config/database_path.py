"""The database path as given: a path the store can use, in a directory that exists.

SQLite and the operating system take a path up to its first NUL byte (or refuse it
with a ValueError deep inside the store), so a NUL byte is refused where the path is
read, naming the setting. ``volsched run`` creates the database file but not the
directory it goes in: a typo in ``--database`` must not leave a tree of directories
behind, and the deployments (the Pod's volume, systemd's ``StateDirectory=``) make the
directory themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from volsched.daemon.config.settings import DEFAULT_DATABASE_PATH


def default_database_path(environ: Mapping[str, str]) -> str:
    """Under systemd's ``$STATE_DIRECTORY`` (its first entry) when the unit sets one,
    else ``./volsched.db``."""
    state_directory = environ.get("STATE_DIRECTORY")
    if state_directory:
        return str(Path(state_directory.split(":")[0]) / "volsched.db")
    return DEFAULT_DATABASE_PATH


def database_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a database file (None when it can), without looking at
    the filesystem."""
    if not path:
        return "must be a file path"
    if "\0" in path:
        return "must not contain a NUL byte"
    return None


def database_directory_problem(path: str) -> str | None:
    """Why the daemon cannot create its database file at ``path`` (None when it can, or
    when the file is there already): the directory it goes in must exist."""
    directory = Path(path).parent
    if directory.is_dir():
        return None
    shown = str(directory) if len(str(directory)) <= 200 else str(directory)[:200] + "…"
    if directory.exists():
        return f"{shown} is not a directory"
    return f"the directory {shown} does not exist (volsched creates the file, not the directory)"
