"""Text read from the store file never raises: a value that is not UTF-8 comes back as
``NotUtf8`` and is judged, with its table, column and row, by the row checks in ``rows``.

SQLite stores whatever bytes it is given in a TEXT column, and Python's sqlite3 module
decodes them as UTF-8 while it fetches. One invalid byte in any text column — a body, a
journal pod, a resume point, the schema stamp — raised ``OperationalError: Could not
decode to UTF-8`` from inside the fetch: not a row the store could name or skip, but an
error that ended every start with exit 2. Every connection to a store file reads text
through ``read_text`` instead (``connecting`` installs it on the engines, ``opening`` and
``checking`` on their own sqlite3 connections).
"""

from __future__ import annotations

import sqlite3


class NotUtf8(bytes):
    """The raw bytes of a stored text value that is not UTF-8."""


def read_text(data: bytes) -> str | NotUtf8:
    """The text factory of every store connection (see the module docstring)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return NotUtf8(data)


def guard_text(connection: sqlite3.Connection) -> sqlite3.Connection:
    """``connection``, reading text through ``read_text``."""
    connection.text_factory = read_text
    return connection
