"""Alembic environment and versions for the volsched store (SQLite).

``volsched.cache.store`` applies these itself (``Store.open`` and ``volsched migrate``), with a
programmatic alembic ``Config`` whose script location is this package's directory, so
they work from a wheel and from any working directory. ``alembic.ini`` at the repository
root is for developers writing new versions; see its comments.
"""
