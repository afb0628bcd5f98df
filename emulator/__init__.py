"""An in-process Kubernetes API server emulator.

It speaks the real HTTP API over a loopback port — list, watch with resourceVersion and
bookmarks, 410 after compaction, 409 on stale writes, merge and JSON patches, the status
and binding subresources, CRDs, TokenReviews and SubjectAccessReviews (RBAC for
non-resource URLs) — and plays the controllers a scheduler relies on (PV binding,
dynamic provisioning, volsched's storage agent, the ServiceAccount and node lifecycle
controllers, optionally a kubelet), so the real daemon and the real kubernetes-asyncio
client run against it unchanged.

It stands alone: it works on raw JSON dicts and imports nothing from volsched's other
packages.

    server = ApiServer(controllers=ControllerSettings(...))
    url = await server.start()
    server.load(objects)
    write_kubeconfig(path, url)
    ...
    await server.stop()
"""

from volsched.emulator.access import AccessTable, User
from volsched.emulator.controllers import ControllerSettings
from volsched.emulator.errors import ApiError
from volsched.emulator.faults import Faults, RequestRecord, Tripwire, WriteRequest
from volsched.emulator.kubeconfig import write_kubeconfig
from volsched.emulator.server import ApiServer

__all__ = [
    "AccessTable",
    "ApiError",
    "ApiServer",
    "ControllerSettings",
    "Faults",
    "RequestRecord",
    "Tripwire",
    "User",
    "WriteRequest",
    "write_kubeconfig",
]
