"""CustomResourceDefinitions: established at once, serving their resources until deleted.

Creating a CRD registers its served versions in the resource table (and marks it
``Established`` and ``NamesAccepted``, which a real server does within moments); updating
it re-registers them; deleting it deletes every custom resource — watchers see each
DELETED, then their stream ends — and its paths answer 404 again.
"""

from __future__ import annotations

from volsched.emulator.raw import Raw, clone, mapping, name_of, now_rfc3339
from volsched.emulator.resources import ResourceTable, crd_resource_types
from volsched.emulator.store import Store


def establish(crd: Raw) -> None:
    names = mapping(crd, "spec", "names")
    now = now_rfc3339()
    crd["status"] = {
        "acceptedNames": dict(names),
        "storedVersions": [
            v["name"] for v in mapping(crd, "spec").get("versions", []) if v.get("storage")
        ],
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": now, "reason": r, "message": m}
            for t, r, m in (
                ("NamesAccepted", "NoConflicts", "no conflicts found"),
                ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            )
        ],
    }


def serve(resources: ResourceTable, crd: Raw, previous: Raw | None = None) -> None:
    if previous is not None:
        for resource in crd_resource_types(previous):
            resources.unregister(resource.group, resource.plural)
    for resource in crd_resource_types(crd):
        resources.register(resource)


def unserve(store: Store, resources: ResourceTable, crd: Raw) -> None:
    for resource in crd_resource_types(crd)[:1]:
        for obj in store.list_objects(resource.key):
            namespace = str(mapping(obj, "metadata").get("namespace") or "")
            store.remove(resource.key, namespace, name_of(obj), clone(obj))
        for subscription in store.subscriptions(resource.key):
            subscription.finish()
        resources.unregister(resource.group, resource.plural)
