"""The one error vocabulary of volsched.

::

    VolschedError
    ├── ConfigError      a bad policy, config or settings file (names the file and key)
    ├── ObjectError      a malformed Kubernetes object (names the source, kind/name, field)
    ├── StoreError       the SQLite store could not be read or written
    │   ├── CorruptStore the file's content cannot be used: moved aside and rebuilt
    │   └── StoreFull    the disk (or the file's size limit) is full: writes wait for space
    └── ApiError         the API server said no (raised by the daemon's client boundary)
        ├── Conflict     409: the object changed since it was read
        ├── NotFound     404: the object (or its namespace) is gone
        │   └── InvalidName  no object can have this name: refused before any request
        └── Gone         410: the watch resource version was compacted away

Everything a user can cause ends in one of these with a one-line message; anything else
is a bug and may show a traceback.
"""

from __future__ import annotations


class VolschedError(Exception):
    """Base of every error volsched raises on purpose."""


class ConfigError(VolschedError):
    """A policy, config or settings file is malformed or holds an out-of-range value."""


class ObjectError(VolschedError):
    """A Kubernetes object could not be read into its typed view.

    The message names where the object came from (file and document index when known),
    its kind and name, and the offending field.
    """

    def __init__(self, kind: str, name: str, field: str, problem: str, source: str = "") -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.problem = problem
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.source}: " if self.source else ""
        who = f"{self.kind}/{self.name}" if self.name else self.kind
        at = f" field {self.field}" if self.field else ""
        return f"{where}{who}{at}: {self.problem}"

    def located(self, source: str) -> ObjectError:
        """The same error, with the file and document it came from."""
        return ObjectError(self.kind, self.name, self.field, self.problem, source)


class StoreError(VolschedError):
    """The SQLite store failed; the message says which file and what went wrong."""


class CorruptStore(StoreError):
    """The file's content cannot be used (a row that does not decode, a table missing
    at its recorded revision): it is moved aside and rebuilt from a relist."""


class StoreFull(StoreError):
    """A write found no room: SQLite's SQLITE_FULL ("database or disk is full") or the
    filesystem's ENOSPC. Nothing is wrong with the file; the same write succeeds once
    space returns, so queued cache writes are kept and retried, never dropped."""


class ApiError(VolschedError):
    """The API server refused a request."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"{status}: {message}")


class Conflict(ApiError):
    """409: the object changed since this scheduler read it."""


class NotFound(ApiError):
    """404: the object or its namespace no longer exists."""


class InvalidName(NotFound):
    """A name no object of its kind can have (not a DNS-1123 subdomain, say): nothing is
    sent, and the answer is the API server's for an object that does not exist, 404."""

    def __init__(self, message: str) -> None:
        super().__init__(404, message)


class Gone(ApiError):
    """410: the resource version asked for has been compacted away; relist."""
