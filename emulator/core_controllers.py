"""Two controllers of kube-controller-manager that clients take for granted.

- The ServiceAccount controller creates a ``default`` ServiceAccount in every namespace
  (pods are refused without one, see ``defaults``).
- The node lifecycle controller lifts the ``node.kubernetes.io/not-ready:NoSchedule``
  taint the API server puts on every new node, once the node's ``Ready`` condition is
  ``True``. (Tainting nodes that stop being Ready is left to the emulated kubelet's
  controller, which is off by default so tests control their nodes.)

Both run by default; ``ControllerSettings(service_accounts=False, node_lifecycle=False)``
is a bare control plane, as a kube-apiserver with no controller manager is.
"""

from __future__ import annotations

from volsched.emulator.controllers import Controller
from volsched.emulator.defaults import DEFAULT_SERVICE_ACCOUNT, NOT_READY_TAINT
from volsched.emulator.errors import ApiError
from volsched.emulator.raw import Raw, clone, mapping, metadata, name_of
from volsched.emulator.store import Change


def default_service_account(namespace: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace},
    }


def is_ready(node: Raw) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in mapping(node, "status").get("conditions") or []
    )


def _is_not_ready_taint(taint: object) -> bool:
    return (
        isinstance(taint, dict)
        and taint.get("key") == NOT_READY_TAINT["key"]
        and taint.get("effect") == NOT_READY_TAINT["effect"]
    )


class ServiceAccountController(Controller):
    name = "serviceaccount-controller"
    # Only these kinds can change what it does: it sleeps through everything else.
    watched = (("", "namespaces"), ("", "serviceaccounts"))

    def notify(self, key: tuple[str, str], change: Change) -> None:
        if key in self.watched:
            super().notify(key, change)

    def reconcile(self) -> None:
        accounts = self.kind("", "serviceaccounts")
        if accounts is None:
            return
        for namespace in self.objects("", "namespaces"):
            if metadata(namespace).get("deletionTimestamp"):
                continue
            name = name_of(namespace)
            if self.find("", "serviceaccounts", name, DEFAULT_SERVICE_ACCOUNT) is None:
                try:
                    self.registry.create(accounts, name, default_service_account(name))
                except ApiError as error:
                    if error.code != 409:  # created meanwhile: nothing to do
                        raise


class NodeLifecycleController(Controller):
    name = "node-lifecycle-controller"

    def notify(self, key: tuple[str, str], change: Change) -> None:
        if key == ("", "nodes"):
            super().notify(key, change)

    def reconcile(self) -> None:
        for node in self.objects("", "nodes"):
            taints = mapping(node, "spec").get("taints") or []
            if is_ready(node) and any(_is_not_ready_taint(t) for t in taints):
                new = clone(node)
                new["spec"]["taints"] = [t for t in taints if not _is_not_ready_taint(t)]
                self.write("", "nodes", new)
