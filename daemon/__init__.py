"""The asyncio shell: everything that waits or talks (files, API server, HTTP, SQLite)."""
