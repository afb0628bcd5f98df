"""Telling a cycle's PreFilter states that a pod was added to or removed from a node.

kube-scheduler's ``RunPreFilterExtensionAddPod`` / ``RemovePod``: the preemption dry
run takes victims off a node and puts some back, and the nominated-pods pass adds the
pods nominated to a node; each time the plugins whose state counts pods (inter-pod
affinity, topology spread) update it. Always on a clone of the cycle's state
(``CycleState.clone``), never on the one the cycle itself filters with; a plugin whose
PreFilter was skipped this cycle is not asked.
"""

from __future__ import annotations

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.profile import Profile


def add_pod(profile: Profile, state: CycleState, pod: Pod, added: Pod, node: NodeInfo) -> None:
    for plugin in profile.pre_filter_extensions:
        if plugin.name not in state.skip_filter:
            plugin.add_pod(state, pod, added, node)


def remove_pod(profile: Profile, state: CycleState, pod: Pod, removed: Pod, node: NodeInfo) -> None:
    for plugin in profile.pre_filter_extensions:
        if plugin.name not in state.skip_filter:
            plugin.remove_pod(state, pod, removed, node)
