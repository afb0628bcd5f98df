"""Ingestion: one list+watch per kind into the cache, resumed from the stored
resourceVersions, with the catch-up proof a warm start needs.

The ingest owns the objects as they arrive: it parses each body once, applies it to the
cache, persists it through the store, feeds pod events to the queue and wakes whoever
waits on that key. This package reads from the API server and never writes to it.
"""
