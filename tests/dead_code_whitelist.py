"""Names vulture reports as unused that are used, each with the reason it cannot see.

vulture reads this file as code that uses these names (tests/test_dead_code.py); it is
never imported. A name belongs here only with a reason; anything else it reports is
dead and goes.
"""

# Python protocols called by the runtime, not by our code.
__getstate__  # pickle: set on the slotted views so stored snapshots load fast
__setstate__  # pickle: the other half
process  # logging.LoggerAdapter hook (daemon/http/server.py's one-line logger)
get_loop  # asyncio.AbstractServer, which the bounded listener implements
is_serving  # asyncio.AbstractServer
serve_forever  # asyncio.AbstractServer
on_body  # httptools parser callback, looked up by name on the protocol
on_message_complete  # httptools parser callback
exc_type  # __aexit__ signature (emulator/server.py)
traceback  # __aexit__ signature
frame  # signal handler signature (daemon/cli/main.py)

# Attributes a library reads.
charset  # aiohttp.web.Response.charset, set on the metrics response
isolation_level  # sqlite3 connection attribute, set in the connect listener
_server  # aiohttp BaseSite keeps its server here; the bounded listener replaces it
_on_connect  # SQLAlchemy event listener, registered by its decorator
_on_begin  # SQLAlchemy event listener, registered by its decorator

# Fields read by the decisions page's Jinja templates.
more_volumes  # templates/decisions/index.html
more_rows  # templates/decisions/pod.html

# Alembic reads these module attributes and functions of each migration.
down_revision
branch_labels
depends_on
downgrade

# A parsed field of a stored view: dropping it changes the format of stored snapshots.
topology_keys  # CSINodeDriver.topology_keys

# Status a component keeps for whoever asks: read by metrics (StoreStats) or by the
# integration tests that prove the behaviour (reloads, recovery, cache sync, watches,
# webhook routing).
journal_update  # the store's journal API (journal_open / update / close)
reloads  # daemon/http/tls_files.py: certificate reloads
loaded_from_snapshot  # daemon/watch/cache_sync.py
discarded_foreign_state  # daemon/watch/cache_sync.py
restarts  # daemon/watch/watching.py: per-kind watch restarts
last_error  # daemon/watch/watching.py
routed  # daemon/http/webhook.py: admission counters
looked_up
lookups_failed

# The embedded API server is a test instrument: its fault injection, controller
# switches and helpers are called by the tests and the demo, not by the daemon.
none  # ControllerSettings.none(): a bare control plane
cut_watches
stall_watches
freeze_bookmarks
suppress_bookmarks
fail_next
delay_next
garble
trip
disarm
pending_failures
reset
longhorn_crds
service_account_token

# The seed's default Policy (DESIGN: the OpenShift policy scheduler), which the policy,
# extender and engine tests build their profiles from.
default_policy

# Hooks the standard library calls by name: sqlite3 reads a connection's text_factory
# for every text value; pickle's Unpickler calls find_class for every global it loads.
text_factory
find_class
