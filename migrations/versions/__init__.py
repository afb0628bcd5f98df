"""Schema versions of the store, oldest first; each file is one alembic revision."""
