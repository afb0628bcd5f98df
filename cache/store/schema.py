"""The tables of the store file, as SQLAlchemy Core metadata.

This is the schema the code reads and writes; the migrations in ``migrations/versions``
build it and must be kept in step (a test compares the two). Bodies are compact JSON
text, exactly the object the API server sent, so a warm start is one plain scan.

``objects``        layer 1: the latest object of each kind per key
``assumed``        layer 2: what this scheduler decided and the API server has not confirmed
``resume_points``  the resourceVersion each watch resumes from
``journal``        binding intents written before a binding cycle's first API write
``meta``           facts about the file itself: the identity of the cluster it mirrors
``snapshot``       at most one row: the parsed layer 1 as of a clean stop (see ``snapshot.py``)
"""

from __future__ import annotations

from sqlalchemy import Column, Float, Integer, LargeBinary, MetaData, Table, Text

metadata = MetaData()
# The migration revision that builds exactly these tables (a test holds the two together):
# a file stamped with it opens without alembic.
REVISION = "0003"


def _object_table(name: str) -> Table:
    return Table(
        name,
        metadata,
        Column("kind", Text, primary_key=True),
        Column("key", Text, primary_key=True),
        Column("body", Text, nullable=False),
    )


objects = _object_table("objects")
assumed = _object_table("assumed")

resume_points = Table(
    "resume_points",
    metadata,
    Column("kind", Text, primary_key=True),
    Column("resource_version", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
)

journal = Table(
    "journal",
    metadata,
    # AUTOINCREMENT: an id is never reused, so a late update for a closed entry can
    # never land on a newer one.
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pod", Text, nullable=False),
    Column("node", Text, nullable=False),
    Column("intent", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    sqlite_autoincrement=True,
)

meta = Table(
    "meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

snapshot = Table(
    "snapshot",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("fingerprint", Text, nullable=False),
    Column("taken_at", Float, nullable=False),
    Column("body", LargeBinary, nullable=False),
)
