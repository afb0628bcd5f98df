"""Every column of every table, damaged every way its values can go wrong under SQLite's
feet: text that is not UTF-8, the right bytes as a blob, a NULL the schema no longer
forbids; for JSON columns also text that is not JSON, JSON that is not an object, a body
cut in half, nested too deep, a number too long, NaN; for times also text, a blob and an
infinite number.

What the daemon does depends only on the table: a bad object, assumed, resume or
alembic_version row means the file is rebuilt, a bad journal row is skipped, a bad meta
row makes the file another cluster's, a bad snapshot row means the rows are read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .damage_kit import (
    DEEP_ARRAYS,
    DISCARDED,
    HUGE_NUMBER,
    REBUILT,
    ROWS,
    SKIPPED,
    Damage,
    allow_null,
    sql,
)

OUTCOMES = {
    "objects": REBUILT,
    "assumed": REBUILT,
    "resume_points": REBUILT,
    "alembic_version": REBUILT,
    "journal": SKIPPED,
    "meta": DISCARDED,
    "snapshot": ROWS,
}
# The row of each table that is damaged (the healthy file has one, or a few alike).
ROWS_DAMAGED = {"objects": "kind = 'Node'", "meta": "key = 'cluster.kube-system-uid'"}

TEXT_COLUMNS = [
    ("objects", "kind"),
    ("objects", "key"),
    ("assumed", "kind"),
    ("assumed", "key"),
    ("resume_points", "kind"),
    ("resume_points", "resource_version"),
    ("journal", "pod"),
    ("journal", "node"),
    ("journal", "state"),
    ("meta", "key"),
    ("meta", "value"),
    ("snapshot", "fingerprint"),
    ("alembic_version", "version_num"),
]
JSON_COLUMNS = [("objects", "body"), ("assumed", "body"), ("journal", "intent")]
TIME_COLUMNS = [
    ("resume_points", "updated_at"),
    ("journal", "created_at"),
    ("journal", "updated_at"),
    ("snapshot", "taken_at"),
]

NOT_UTF8 = "CAST(X'FF' AS TEXT) || {column}"
# (what, value as SQL, what the report says after the column's name, or None: the column's
# table decides, as the words are the JSON decoder's)
TEXT_VALUES = [
    ("not UTF-8", NOT_UTF8, "is not UTF-8 text"),
    ("a blob", "CAST({column} AS BLOB)", "is bytes, not"),
    ("NULL", "NULL", "is NoneType, not"),
]
JSON_VALUES = [
    ("not UTF-8", NOT_UTF8, "is not UTF-8 text"),
    ("a blob", "CAST({column} AS BLOB)", "is bytes, not JSON text"),
    ("NULL", "NULL", "is NoneType, not JSON text"),
    ("not JSON", "'{{not json'", "cannot be decoded"),
    ("a JSON list", "'[1, 2]'", "is not a JSON object"),
    ("JSON null", "'null'", "is not a JSON object"),
    ("cut in half", "substr({column}, 1, length({column}) / 2)", "cannot be decoded"),
    ("nested 5,000 deep", "'{{\"a\":' || '" + DEEP_ARRAYS + "' || '}}'", "is nested deeper"),
    (
        "a 5,000-digit number",
        "'" + HUGE_NUMBER.replace("{", "{{").replace("}", "}}") + "'",
        "cannot be decoded",
    ),
    ("holding NaN", "'{{\"a\": NaN}}'", "cannot be decoded: NaN is not a JSON number"),
]
TIME_VALUES = [
    ("text", "'yesterday'", "is str, not a time"),
    ("a blob", "X'00'", "is bytes, not a time"),
    ("NULL", "NULL", "is NoneType, not a time"),
    ("infinite", "9e999", "is inf, not a time"),
]


def _damage(table: str, column: str, what: str, value: str, says: str) -> Damage:
    where = ROWS_DAMAGED.get(table, "1")
    update = sql(f"UPDATE {table} SET {column} = {value.format(column=column)} WHERE {where}")
    apply: Callable[[Path], None] = update
    if value == "NULL":
        loosen = allow_null(table, column)

        def apply(path: Path) -> None:
            loosen(path)
            update(path)

    return Damage(f"{table}.{column} {what}", apply, OUTCOMES[table], f"{column} {says}")


COLUMN_DAMAGES: list[Damage] = [
    *(
        _damage(table, column, what, value, says)
        for table, column in TEXT_COLUMNS
        for what, value, says in TEXT_VALUES
    ),
    *(
        _damage(table, column, what, value, says)
        for table, column in JSON_COLUMNS
        for what, value, says in JSON_VALUES
    ),
    *(
        _damage(table, column, what, value, says)
        for table, column in TIME_COLUMNS
        for what, value, says in TIME_VALUES
    ),
]
