"""Reading a pod's claims straight from the API server, for a caller that cannot wait
for the watch: kube-scheduler's extender calls ask about a pod whose claims may have
been created a moment ago."""

from __future__ import annotations

from volsched.cache.errors import ApiError, NotFound
from volsched.cache.objects.core import Pod
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.ingest import Ingest


async def refresh_claims(client: KubeClient, ingest: Ingest, pod: Pod) -> str | None:
    """Read the pod's claims (and their volumes) into the cache; what went wrong, if
    anything."""
    for claim in pod.claim_names():
        try:
            raw = await client.get("PersistentVolumeClaim", claim, pod.meta.namespace)
            ingest.upsert("PersistentVolumeClaim", raw, persist=False)
            volume = (raw.get("spec") or {}).get("volumeName")
            if volume:
                pv = await client.get("PersistentVolume", volume)
                ingest.upsert("PersistentVolume", pv, persist=False)
        except NotFound:
            continue
        except ApiError as exc:
            return f"cannot read claim {pod.meta.namespace}/{claim}: {exc}"
    return None
