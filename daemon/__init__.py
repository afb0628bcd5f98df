"""The asyncio shell: everything that waits or talks (files, API server, HTTP, SQLite).

Subpackages by concern, each lower one knowing nothing of those above it:

- ``cli/``: the command line and the demo; nothing imports it;
- ``runtime/``: the assembled daemon, leader election, the scheduling loop;
- ``http/``: health, metrics, the extender, the webhook, authentication, TLS;
- ``binding/``: every API write of a decision (binder, recovery, preemption, replicas,
  events) — the only package that writes, besides the leader's Lease;
- ``watch/``: list+watch per kind, the ingest, the catch-up of a warm start;
- ``queue/``: the scheduling queue;
- ``telemetry/``: metrics and tracing;
- ``kube/`` and ``config/``: the API client boundary and the settings tree.
"""
