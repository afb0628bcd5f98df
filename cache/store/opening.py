"""Getting a store file ready to open: cold, warm, or rebuilt — never a crash loop.

- No file: a fresh database (``cold``).
- A healthy file at a revision this code knows: migrated to the newest schema (``warm``).
- A file that is not SQLite, fails ``PRAGMA quick_check``, is stamped with a revision
  this code does not know (written by a newer volsched) or with anything but exactly
  one revision, or holds tables that are not a volsched store: renamed to
  ``<path>.corrupt-<UTC timestamp>`` together with its ``-wal``/``-shm``, and a fresh
  database built in its place (``rebuilt``). Nothing is deleted; the moved file is
  there to inspect.

Trouble that is the machine's, not the file's (no permission, disk full, file locked by
another process), is not fixed by moving the file: it ends in ``StoreError`` naming the
path, and the file is left alone.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table
from sqlalchemy.exc import DBAPIError

from volsched.cache.errors import StoreError
from volsched.cache.store import rows
from volsched.cache.store.schema import REVISION, metadata
from volsched.cache.store.text import guard_text

log = logging.getLogger("volsched.store")

SQLITE_HEADER = b"SQLite format 3\x00"
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")

# Primary result codes that say "the file's content is bad". Anything else — busy,
# locked, I/O error, disk full, cannot open, read-only, no permission — is the machine's
# trouble, and moving a healthy file aside would lose it for nothing.
_CONTENT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_ERROR})


@dataclass(frozen=True)
class OpenResult:
    """How the store file was found: ``warm``, ``cold`` or ``rebuilt`` (and where to)."""

    state: str
    moved_to: str | None = None
    # Why the file was moved aside, when it was.
    reason: str | None = None


@dataclass(frozen=True)
class PreparedFile:
    result: OpenResult
    revision: str
    # What is wrong in a file kept in place, that the daemon works around (a journal
    # entry it skips, a snapshot it does not use), one line each.
    tolerated: tuple[str, ...] = ()


class _BadContent(Exception):
    """The file is not a usable volsched store; the message says why."""


class _SchemaMismatch(_BadContent):
    """The file's tables are not those of the revision it is stamped with."""


def prepare_file(path: Path, clock: Callable[[], float] = time.time) -> PreparedFile:
    """Make ``path`` a store file at the newest schema revision, recovering if needed."""
    _ensure_directory(path)
    state = "warm"
    moved_to: str | None = None
    reason: str | None = None
    stamped: list[str] = []
    if not path.exists():
        _remove_orphans(path)
        state = "cold"
    else:
        try:
            stamped = _inspect(path)
            if not stamped:
                state = "cold"
        except _BadContent as problem:
            reason = str(problem)
            moved_to = move_aside(path, clock, reason)
            state = "rebuilt"
    try:
        # A file already at this code's revision needs no migration, and an empty one is
        # built at it directly: alembic (a tenth of the start-up's imports, and its
        # scripts run one by one) is for files at an older revision.
        if stamped == [REVISION]:
            revision = REVISION
        else:
            revision = _upgrade(path) if stamped else _build_fresh(path)
        _verify_schema(path, revision)
    except _BadContent as problem:
        if state != "warm":
            # A fresh file we just made cannot be upgraded: that is not the file's fault.
            raise StoreError(f"{path}: cannot build a new store: {problem}") from None
        reason = (
            str(problem)
            if isinstance(problem, _SchemaMismatch)
            else f"cannot migrate it: {problem}"
        )
        moved_to = move_aside(path, clock, reason)
        state = "rebuilt"
        try:
            revision = _build_fresh(path)
            _verify_schema(path, revision)
        except _BadContent as again:
            raise StoreError(f"{path}: cannot build a new store: {again}") from None
    return PreparedFile(OpenResult(state, moved_to, reason), revision)


def migrate(path: str | os.PathLike[str]) -> str:
    """Bring the store file at ``path`` to the newest schema; the revision it is at.

    Idempotent. Recovers bad files exactly as ``Store.open`` does (moved aside, rebuilt,
    logged), so ``volsched migrate`` and the daemon agree on what a usable file is.
    """
    return check_and_migrate(path).revision


def check_and_migrate(
    path: str | os.PathLike[str], clock: Callable[[], float] = time.time
) -> PreparedFile:
    """``migrate`` with the verdict: whether the file was healthy, and if not, why and
    where it went.

    Every row is decoded too (``checking``), so a file the daemon's first load would
    move aside is moved aside here, for the same reason."""
    from volsched.cache.store.checking import check_file

    file = Path(path).absolute()
    prepared = prepare_file(file, clock)
    report = check_file(file)
    reason = report.first_rebuild_reason
    if reason is None:
        tolerated = tuple(f"{p.what} ({p.consequence})" for p in report.problems)
        return PreparedFile(prepared.result, prepared.revision, tolerated)
    moved_to = move_aside(file, clock, reason)
    again = prepare_file(file, clock)
    return PreparedFile(OpenResult("rebuilt", moved_to, reason), again.revision)


# -- the checks -----------------------------------------------------------------------


def _ensure_directory(path: Path) -> None:
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(
            f"{path}: cannot create the directory {directory}: {error.strerror or error}"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreError(f"{path}: the directory {directory} is not writable")
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a store file")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"{path}: the file is not readable and writable")


def _inspect(path: Path) -> list[str]:
    """The revision the existing file is stamped with (none: an empty database); raises
    ``_BadContent`` if it is unusable."""
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreError(f"{path}: cannot read the file: {error.strerror or error}") from None
    if not header:
        return []  # a zero-length file is an empty SQLite database
    if header != SQLITE_HEADER:
        raise _BadContent("not a SQLite database")
    try:
        connection = guard_text(sqlite3.connect(path, timeout=5.0))
    except sqlite3.Error as error:
        raise _classify(path, error) from None
    try:
        problems = [
            " ".join(str(row[0]).split()) for row in connection.execute("PRAGMA quick_check")
        ]
        if problems != ["ok"]:
            raise _BadContent(f"PRAGMA quick_check: {'; '.join(problems[:3])}")
        tables = {
            str(row[0])
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if "alembic_version" in tables:
            versions = [
                row[0] for row in connection.execute("SELECT version_num FROM alembic_version")
            ]
            if not versions and tables == {"alembic_version"}:
                return []  # stamped with nothing and holding nothing: an empty store
            try:
                stamped = rows.stamp(versions)
            except rows.BadRow as problem:
                raise _BadContent(str(problem)) from None
            if stamped != REVISION:
                _check_known([stamped])
            return [stamped]
        if tables:
            raise _BadContent(
                f"holds tables ({', '.join(sorted(tables)[:5])}) but is not a volsched store"
            )
        return []
    except sqlite3.Error as error:
        raise _classify(path, error) from None
    finally:
        connection.close()


def _check_known(stamped: list[str]) -> None:
    from volsched.cache.store.migrating import head_revision, known_revisions

    unknown = [revision for revision in stamped if revision not in known_revisions()]
    if unknown:
        raise _BadContent(
            f"schema revision {', '.join(unknown)} is unknown to this volsched"
            f" (newest known: {head_revision()}); written by a newer version?"
        )


def _verify_schema(path: Path, revision: str) -> None:
    """Every table and column of this revision is there (alembic trusts its stamp; a
    table dropped by hand, or a half-copied file, would fail much later)."""
    try:
        connection = guard_text(sqlite3.connect(path, timeout=5.0))
    except sqlite3.Error as error:
        raise _classify(path, error) from None
    try:
        problem = schema_problem(connection, revision)
        if problem is not None:
            raise _SchemaMismatch(problem)
    except sqlite3.Error as error:
        raise _classify(path, error) from None
    finally:
        connection.close()


def schema_problem(connection: sqlite3.Connection, revision: str) -> str | None:
    """The first table or column of this code's schema the file lacks (None: none)."""
    for table in metadata.sorted_tables:
        present = {str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table.name}")')}
        if not present:
            return f"table {table.name} is missing at revision {revision}"
        missing = sorted(column.name for column in table.columns if column.name not in present)
        if missing:
            return f"table {table.name} lacks {', '.join(missing)} at revision {revision}"
    return None


# alembic's version table, declared as alembic declares it.
STAMP = Table(
    "alembic_version",
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)


def _build_fresh(path: Path) -> str:
    """An empty file made into a store at the newest revision in one transaction: the
    tables of ``schema`` and alembic's stamp, as alembic's own upgrade would leave it
    (``tests/store/test_migrations.py`` holds the two equal)."""
    from volsched.cache.store.connecting import create_sync_engine

    with _file_errors(path):
        engine = create_sync_engine(path)
        try:
            with engine.begin() as connection:
                metadata.create_all(connection)
                STAMP.create(connection)
                connection.execute(STAMP.insert().values(version_num=REVISION))
        finally:
            engine.dispose()
    return REVISION


def _upgrade(path: Path) -> str:
    from volsched.cache.store.migrating import upgrade_to_head

    with _file_errors(path):
        return upgrade_to_head(path)


@contextmanager
def _file_errors(path: Path) -> Iterator[None]:
    """SQLite's errors as the file's fault (``_BadContent``) or the machine's."""
    try:
        yield
    except DBAPIError as error:
        original = error.orig
        if isinstance(original, sqlite3.Error):
            raise _classify(path, original) from None
        raise StoreError(f"{path}: {original}") from None
    except sqlite3.Error as error:
        raise _classify(path, error) from None


def _classify(path: Path, error: sqlite3.Error) -> Exception:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _CONTENT_CODES:
        return _BadContent(str(error))
    return StoreError(f"{path}: {error}")


# -- moving files -----------------------------------------------------------------------


def move_aside(path: Path, clock: Callable[[], float], reason: str) -> str:
    """Rename the file and its companions to ``<path>.corrupt-<UTC timestamp>``."""
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    attempt = 1
    while any(_with_suffix(target, s).exists() for s in ("", *COMPANION_SUFFIXES)):
        attempt += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{attempt}")
    # Companions first: should we die halfway, the main file is still where it was and
    # the next start simply checks it again.
    try:
        for suffix in (*COMPANION_SUFFIXES, ""):
            source = _with_suffix(path, suffix)
            if source.exists():
                os.replace(source, _with_suffix(target, suffix))
    except OSError as error:
        raise StoreError(
            f"{path}: {reason}, and it cannot be moved aside: {error.strerror or error}"
        ) from None
    log.warning("%s: %s; moved it to %s and starting from an empty store", path, reason, target)
    return str(target)


def _remove_orphans(path: Path) -> None:
    """A -wal or -shm without its database is useless, and SQLite could replay a stale
    WAL into the new file: remove them before creating one."""
    for suffix in COMPANION_SUFFIXES:
        orphan = _with_suffix(path, suffix)
        try:
            orphan.unlink(missing_ok=True)
        except OSError as error:
            raise StoreError(f"{orphan}: cannot remove: {error.strerror or error}") from None


def _with_suffix(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)
