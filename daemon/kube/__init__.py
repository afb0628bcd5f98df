"""The one boundary to the API server.

Everything volsched says to kube-apiserver goes through ``KubeClient``: list, watch and
get for the readers (``watch/``, the webhook, authentication), and the writes of
``binding/`` and leader election. Library errors are translated here into volsched's
(``Conflict``, ``NotFound``, ``Gone``, ``ApiError``). This package imports nothing else of
the daemon.
"""
