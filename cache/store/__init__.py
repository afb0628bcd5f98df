"""SQLite persistence of both cache layers, the watch resume points and the binding
journal (see ``volsched.cache.store.store`` for what is promised when).

Usage, from the daemon::

    store, opened = await Store.open(path)     # opened.state: warm | cold | rebuilt
    state = await store.load()                 # everything, before the first watch event
    store.put_object(kind, key, raw)           # queued; flushed in batches
    entry = await store.journal_open(pod, node, intent)   # durable when it returns
    ...
    await store.close()

``migrate(path)`` brings a file to the newest schema without opening a store (``volsched
migrate``); ``check_file(path)`` reads every row and reports what is wrong, changing
nothing (``volsched migrate --check``). Store failures surface as ``volsched.cache.errors.StoreError`` (``StoreFull``
when the disk is full); ``store.write_problem`` says why writes fail while they do.
"""

from volsched.cache.store.checking import CheckReport, check_file
from volsched.cache.store.journal import JournalEntry
from volsched.cache.store.loading import StoredState
from volsched.cache.store.opening import OpenResult, check_and_migrate, migrate
from volsched.cache.store.stats import StoreStats
from volsched.cache.store.store import Store

__all__ = [
    "CheckReport",
    "JournalEntry",
    "OpenResult",
    "Store",
    "StoreStats",
    "StoredState",
    "check_and_migrate",
    "check_file",
    "migrate",
]
