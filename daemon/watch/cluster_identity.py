"""Which cluster a database mirrors, and discarding one that mirrors another.

A database records the cluster it mirrors (the kube-system namespace's uid); one from
another cluster — a restored volume, a copied file, a kubeconfig pointing elsewhere — is
discarded, never acted on, and the caches are relisted.
"""

from __future__ import annotations

import logging

from volsched.cache.errors import ApiError
from volsched.cache.store import Store
from volsched.daemon.kube.client import KubeClient

log = logging.getLogger("volsched")
# The meta key of the cluster a database mirrors.
CLUSTER_IDENTITY = "cluster.kube-system-uid"


async def discard_foreign_state(client: KubeClient, store: Store, database_path: str) -> bool:
    """Record this cluster's identity in the database; True when the database held
    another cluster's state, which is now discarded."""
    try:
        namespace = await client.get("Namespace", "kube-system")
    except ApiError as exc:
        log.warning(
            "cannot read the cluster's identity (namespace kube-system): %s; keeping the database",
            exc,
        )
        return False
    uid = str((namespace.get("metadata") or {}).get("uid") or "")
    if not uid:
        return False
    stored = await store.read_meta(CLUSTER_IDENTITY)
    if stored == uid:
        return False
    discarded = stored is not None
    if discarded:
        log.warning(
            "database %s belongs to another cluster (kube-system uid %s, this one's is "
            "%s): discarded; relisting",
            database_path,
            stored,
            uid,
        )
        await store.discard_cluster_state()
    await store.write_meta(CLUSTER_IDENTITY, uid)
    return discarded
