"""Cluster events: what changed in the cluster, in the terms plugins register for.

After kube-scheduler's ``ClusterEvent`` (a resource and an action type) and its
``EnqueueExtensions``: each plugin that can reject a pod declares the events that can
make such a pod schedulable again, each with an optional queueing hint — a pure function
of the rejected pod and the object before and after the change that says whether this
particular change may help (``True``: queue it; ``False``: skip). A plugin without a
hint for an event is retried on every such event.

The action types are bits, so a registration covers several at once (``ADD | DELETE``)
and an incoming event matches when a bit is shared. Node and pod updates are split into
what changed (labels, taints, allocatable, …), as upstream does, so a plugin that only
cares about labels is not asked about a heartbeat; other kinds' updates are ``UPDATE``,
every update bit at once.

Pod events are about *assigned* pods (placed on a node, or assumed there by this
scheduler): the pending pods' own changes reach the queue directly, and a rejected pod
that changes is always retried. An assumed pod forgotten (its binding failed, or was
never confirmed in time) frees what it held: it is an assigned pod's deletion.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from volsched.cache.objects.core import Node, Pod


class ActionType(enum.IntFlag):
    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    # Taints, or spec.unschedulable (a cordon is a taint for the scheduler).
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    # Some resource request of the pod got smaller (in-place resize).
    UPDATE_POD_SCALE_DOWN = enum.auto()
    UPDATE_POD_TOLERATION = enum.auto()
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
    )
    ALL = ADD | DELETE | UPDATE


# Upstream's names, used in the queue's metrics labels ("NodeUpdateNodeLabel").
_ACTION_NAMES = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}

# Resources: the kinds volsched watches by their kind name; Longhorn's kinds are
# announced as the volsched kinds they map onto (a LonghornReplica as a Replica).
POD = "Pod"
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
NAMESPACE = "Namespace"
SERVICE = "Service"
STORAGE_NODE = "StorageNode"
VOLUME = "Volume"
REPLICA = "Replica"
RESOURCE_CLAIM = "ResourceClaim"
DEVICE_CLASS = "DeviceClass"
# Registered for every resource (what a plugin that declares nothing gets).
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: str
    action: ActionType

    @property
    def label(self) -> str:
        """Upstream's label: resource then action; pod events are about assigned pods."""
        resource = "AssignedPod" if self.resource == POD else self.resource
        return f"{resource}{_ACTION_NAMES.get(self.action, str(self.action.value))}"

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether an incoming event is one this registration covers."""
        if self.resource == WILDCARD:
            return True
        return self.resource == incoming.resource and bool(self.action & incoming.action)


# (the rejected pod, the object before the change or None, after it or None) → whether
# the change may make the pod schedulable. It must be pure and cheap: it runs for each
# parked pod on each matching event. An exception counts as True (when in doubt, retry).
QueueingHint = Callable[[Pod, Any, Any], bool]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHint | None = None


def on(resource: str, action: ActionType, hint: QueueingHint | None = None) -> ClusterEventWithHint:
    """A registration, as plugins write them: ``on(NODE, ADD | UPDATE_NODE_LABEL, hint)``."""
    return ClusterEventWithHint(ClusterEvent(resource, action), hint)


ADD = ActionType.ADD
DELETE = ActionType.DELETE
UPDATE = ActionType.UPDATE
ALL = ActionType.ALL
UPDATE_NODE_ALLOCATABLE = ActionType.UPDATE_NODE_ALLOCATABLE
UPDATE_NODE_LABEL = ActionType.UPDATE_NODE_LABEL
UPDATE_NODE_TAINT = ActionType.UPDATE_NODE_TAINT
UPDATE_NODE_CONDITION = ActionType.UPDATE_NODE_CONDITION
UPDATE_POD_LABEL = ActionType.UPDATE_POD_LABEL
UPDATE_POD_SCALE_DOWN = ActionType.UPDATE_POD_SCALE_DOWN

EVERYTHING = (on(WILDCARD, ALL),)

ASSIGNED_POD_ADD = ClusterEvent(POD, ActionType.ADD)
ASSIGNED_POD_DELETE = ClusterEvent(POD, ActionType.DELETE)


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """What a node update changed, one event per kind of change, in upstream's order;
    none for a change no plugin reads (a heartbeat)."""
    actions: list[ActionType] = []
    if old.allocatable != new.allocatable:
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if old.meta.labels != new.meta.labels:
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if old.ready != new.ready:
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    return [ClusterEvent(NODE, action) for action in actions]


def _scaled_down(old: Pod, new: Pod) -> bool:
    return any(new.requests.get(name, 0) < amount for name, amount in old.requests.items())


def assigned_pod_update_events(old: Pod, new: Pod) -> list[ClusterEvent]:
    """What an assigned pod's update changed that a plugin may care about."""
    actions: list[ActionType] = []
    if old.meta.labels != new.meta.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if len(old.tolerations) != len(new.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    return [ClusterEvent(POD, action) for action in actions]


def assigned_pod_events(old: Pod | None, new: Pod) -> list[tuple[ClusterEvent, Any, Any]]:
    """The events a pod's add or update means for pods waiting elsewhere: placed on a node
    (an add), changed while placed, or finished (a deletion: a terminal pod holds
    nothing). Each with the (old, new) objects its hints see."""
    if new.node_name and not new.terminal:
        if old is None or not old.node_name:
            return [(ASSIGNED_POD_ADD, None, new)]
        return [(event, old, new) for event in assigned_pod_update_events(old, new)]
    if new.terminal and old is not None and not old.terminal:
        return [(ASSIGNED_POD_DELETE, old, None)]
    return []


def as_placed(pod: Pod, node_name: str) -> Pod:
    """An assumed pod as its hints should see it: on the node it was assumed on."""
    return pod if pod.node_name == node_name else dataclasses.replace(pod, node_name=node_name)
