"""``volsched migrate --check``: read every row of a store file, change nothing, and say
what is wrong and what the daemon will do about it.

The checks are the daemon's own: the file checks of ``opening`` (SQLite header,
``PRAGMA quick_check``, the ``alembic_version`` stamp, the tables and columns of the
revision) and the row decoding of ``rows``, run over every table rather than stopping at
the first problem. Each problem is reported with its consequence:

- the file is moved aside and rebuilt (anything in the file itself, an object, assumed
  or resume row) — ``volsched migrate`` and the daemon's first load both do this;
- the journal entry is skipped and removed (a journal row);
- the rows are read instead (a snapshot that does not decode);
- the object is left out of the cache until the API server sends it again (an object
  row that decodes but does not parse as its kind);
- the assumption is not restored (an assumed row that decodes but cannot be restored);
- the stored state is discarded as another cluster's (a meta row that is not text: the
  cluster's identity cannot be compared).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volsched.cache.errors import ObjectError, StoreError
from volsched.cache.objects.registry import KINDS
from volsched.cache.store import rows, snapshot
from volsched.cache.store.opening import SQLITE_HEADER, schema_problem
from volsched.cache.store.schema import REVISION
from volsched.cache.store.text import guard_text

REBUILT = "the daemon moves the file aside and rebuilds it"
SKIPPED = "the daemon skips and removes this journal entry"
ROWS_INSTEAD = "the daemon reads the object rows instead"
LEFT_OUT = "the daemon leaves it out until the API server sends it again"
DROPPED = "the daemon does not restore this assumption"
DISCARDED = "the daemon takes the file for another cluster's and discards its state"
# The assumed kinds a start restores by parsing them (pods: by their spec.nodeName).
RESTORED = ("PersistentVolume", "PersistentVolumeClaim")
# Problems listed per table; past this they are counted.
MAX_LISTED = 20

# Primary result codes that mean the content is bad (as in ``opening``).
_CONTENT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_ERROR})


@dataclass(frozen=True)
class Problem:
    what: str
    consequence: str

    @property
    def rebuilds(self) -> bool:
        return self.consequence == REBUILT


@dataclass
class CheckReport:
    path: Path
    exists: bool = True
    revision: str | None = None
    rows_read: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def first_rebuild_reason(self) -> str | None:
        """Why the daemon would move the file aside (None: it would not)."""
        return next((p.what for p in self.problems if p.rebuilds), None)

    def lines(self) -> list[str]:
        """What ``volsched migrate --check`` prints, one line each."""
        path = self.path
        if not self.exists:
            return [f"{path}: no such file; the daemon starts with an empty store"]
        if self.revision is None and self.healthy:
            return [f"{path}: an empty store; the daemon fills it on its first start"]
        lines = [f"{path}: {problem.what} ({problem.consequence})" for problem in self.problems]
        if self.healthy:
            at = f"schema verified at revision {self.revision}"
            if self.revision != REVISION:
                at = f"schema at revision {self.revision} (volsched migrate upgrades it to {REVISION})"
            lines.append(f"{path}: {at}; {self.rows_read} rows decoded")
        else:
            count = f"{len(self.problems)} problem(s)"
            if self.first_rebuild_reason:
                verdict = f"{count}; volsched migrate moves the file aside and rebuilds it"
            else:
                verdict = f"{count} the daemon works around"
            lines.append(f"{path}: {verdict}")
        return lines


def check_file(path: str | Path) -> CheckReport:
    """Check the store file at ``path`` without writing to it.

    Raises ``StoreError`` when the file cannot be read at all for a reason that is not
    its content (no permission, locked).
    """
    report = CheckReport(Path(path).absolute())
    file = report.path
    if not file.exists():
        report.exists = False
        return report
    try:
        with file.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreError(f"{file}: cannot read the file: {error.strerror or error}") from None
    if not header:
        return report
    if header != SQLITE_HEADER:
        report.problems.append(Problem("not a SQLite database", REBUILT))
        return report
    try:
        connection = guard_text(sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True, timeout=5.0))
    except sqlite3.Error as error:
        raise StoreError(f"{file}: cannot open the file: {error}") from None
    try:
        _check(connection, report)
    except sqlite3.Error as error:
        code = getattr(error, "sqlite_errorcode", None)
        if code is None or code & 0xFF not in _CONTENT_CODES:
            raise StoreError(f"{file}: cannot read the file: {error}") from None
        report.problems.append(Problem(f"SQLite: {error}", REBUILT))
    finally:
        connection.close()
    return report


def _check(connection: sqlite3.Connection, report: CheckReport) -> None:
    problems = [" ".join(str(row[0]).split()) for row in connection.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        report.problems.append(Problem(f"PRAGMA quick_check: {'; '.join(problems[:3])}", REBUILT))
        return
    tables = {
        str(row[0])
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if "alembic_version" not in tables:
        if tables:
            what = f"holds tables ({', '.join(sorted(tables)[:5])}) but is not a volsched store"
            report.problems.append(Problem(what, REBUILT))
        return
    versions = [row[0] for row in connection.execute("SELECT version_num FROM alembic_version")]
    if not versions and tables == {"alembic_version"}:
        return
    try:
        report.revision = rows.stamp(versions)
    except rows.BadRow as problem:
        report.problems.append(Problem(str(problem), REBUILT))
        return
    from volsched.cache.store.migrating import known_revisions

    if report.revision not in known_revisions():
        what = f"schema revision {report.revision} is unknown to this volsched"
        report.problems.append(Problem(what, REBUILT))
        return
    if report.revision == REVISION:
        mismatch = schema_problem(connection, REVISION)
        if mismatch is not None:
            report.problems.append(Problem(mismatch, REBUILT))
            return
    for table in ("objects", "assumed"):
        if table in tables:
            select = f"SELECT kind, key, body FROM {table}"
            _each(report, connection.execute(select), _object_decoder(table), REBUILT)
    if "resume_points" in tables:
        select = "SELECT kind, resource_version, updated_at FROM resume_points"
        _each(report, connection.execute(select), lambda row: rows.resume_row(*row), REBUILT)
    if "journal" in tables:
        select = "SELECT id, pod, node, intent, state, created_at, updated_at FROM journal"
        _each(report, connection.execute(select), rows.journal_row, SKIPPED)
    if "meta" in tables:
        select = "SELECT key, value FROM meta"
        _each(report, connection.execute(select), lambda row: rows.meta_row(*row), DISCARDED)
    if "snapshot" in tables:
        _check_snapshot(connection, report)


def _object_decoder(table: str) -> Callable[[Any], Problem | None]:
    def decode(row: Any) -> Problem | None:
        kind, key, raw = rows.object_row(table, *row)
        if table == "assumed" and kind == "Pod":
            # What restoring a pod's assumption reads: the node it was assumed on.
            spec = raw.get("spec")
            if not isinstance(spec, dict) or not isinstance(spec.get("nodeName", ""), str):
                return Problem(f"assumed row Pod {key}: spec.nodeName is unreadable", DROPPED)
            return None
        info = KINDS.get(kind)
        if info is None or (table == "assumed" and kind not in RESTORED):
            return None
        try:
            info.parse(raw)
        except ObjectError as error:
            what = f"{table} row {kind} {key}: {error}"
            return Problem(what, LEFT_OUT if table == "objects" else DROPPED)
        return None

    return decode


def _each(
    report: CheckReport,
    cursor: sqlite3.Cursor,
    decode: Callable[[Any], object],
    consequence: str,
) -> None:
    found: list[Problem] = []
    for row in cursor:
        report.rows_read += 1
        try:
            other = decode(row)
        except rows.BadRow as problem:
            found.append(Problem(str(problem), consequence))
        else:
            if isinstance(other, Problem):
                found.append(other)
    report.problems.extend(found[:MAX_LISTED])
    if len(found) > MAX_LISTED:
        what = f"and {len(found) - MAX_LISTED} more rows like the last"
        report.problems.append(Problem(what, found[-1].consequence))


def _check_snapshot(connection: sqlite3.Connection, report: CheckReport) -> None:
    select = "SELECT id, fingerprint, taken_at, body FROM snapshot ORDER BY id"
    parts = connection.execute(select).fetchall()
    report.rows_read += len(parts)
    try:
        bodies = [rows.snapshot_row(*part) for part in parts]
    except rows.BadRow as problem:
        report.problems.append(Problem(str(problem), ROWS_INSTEAD))
        return
    if not parts or any(fingerprint != snapshot.fingerprint() for _, fingerprint, _, _ in parts):
        return  # none, or taken by other code: the daemon does not read it
    # Part by part, to name the row; the daemon stops at the first that fails.
    for (part, _, _, _), body in zip(parts, bodies, strict=True):
        try:
            snapshot.decode([body])
        except snapshot.SnapshotError as problem:
            report.problems.append(Problem(f"snapshot row {part}: {problem}", ROWS_INSTEAD))
            return
