"""The daemon's HTTP face (aiohttp): health, readiness, metrics, the kube-scheduler
extender verbs and the admission webhook, behind TLS and delegated authentication and
authorisation.

Handlers decide and answer; a write a handler causes (an extender ``/bind``) is carried
out by the binding package that the runtime hands in, never by this package itself. The
only API calls made from here are reads and the TokenReview / SubjectAccessReview that
authenticate a caller.
"""
