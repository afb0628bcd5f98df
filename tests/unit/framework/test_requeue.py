"""The requeue table: built from what each profile's plugins declare, and read as
kube-scheduler's queue reads its queueing hints."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.support import node, parse, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Node, Pod
from volsched.scheduling.framework.events import (
    ADD,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    EVERYTHING,
    NODE,
    PERSISTENT_VOLUME,
    POD,
    UPDATE,
    UPDATE_NODE_LABEL,
    UPDATE_POD_LABEL,
    ActionType,
    ClusterEvent,
    assigned_pod_events,
    node_update_events,
    on,
)
from volsched.scheduling.framework.interfaces import EnqueueExtensions
from volsched.scheduling.framework.profile import Predicate, Profile
from volsched.scheduling.framework.requeue import RequeueTable
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile

NODE_ADD = ClusterEvent(NODE, ADD)


def a_pod(name: str = "p", **kwargs: Any) -> Pod:
    view: Pod = parse(pod(name, **kwargs))
    return view


def a_node(name: str = "n1", **kwargs: Any) -> Node:
    view: Node = parse(node(name, **kwargs))
    return view


def test_the_profile_table_is_what_its_filters_declare() -> None:
    profile = build_profile(
        default_profile(with_storage=True).policy, PluginFactory(ClusterCache())
    )
    table = profile.requeue_events()
    filters = {p.plugin.name: p.plugin for p in profile.predicates}
    assert set(table) == set(filters)
    for name, plugin in filters.items():
        assert isinstance(plugin, EnqueueExtensions), name
        assert table[name] == plugin.events_to_register()
    # Upstream's own plugins and volsched's storage rules are all there.
    assert {
        "NodeResourcesFit",
        "NodeAffinity",
        "TaintToleration",
        "InterPodAffinity",
        "PodTopologySpread",
        "VolumeBinding",
        "VolumeZone",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "StorageNodeReady",
        "VolumeLocality",
    } <= set(table)


class Silent:
    """A filter that declares no events."""

    name = "Silent"

    def filter(self, state: Any, pod: Pod, node: Any) -> None:
        return None


def test_a_filter_that_declares_nothing_is_retried_on_every_event() -> None:
    profile = Profile([Predicate("Silent", Silent())], [])
    assert profile.requeue_events() == {"Silent": EVERYTHING}
    table = RequeueTable({"volsched": profile.requeue_events()})
    assert table.worth_requeueing(a_pod(), {"Silent"}, ClusterEvent("Anything", ADD))


def test_plugins_sharing_a_name_share_one_entry() -> None:
    plugins = PluginFactory(ClusterCache())
    first = plugins.predicate("labelsPresence", {"labels": ["a"], "presence": True})
    second = plugins.predicate("labelsPresence", {"labels": ["b"], "presence": False})
    profile = Profile([Predicate("one", first), Predicate("two", second)], [])
    assert profile.requeue_events() == {"NodeLabel": (on(NODE, ADD | UPDATE_NODE_LABEL),)}


def never(pod: Pod, old: Any, new: Any) -> bool:
    return False


def broken(pod: Pod, old: Any, new: Any) -> bool:
    raise KeyError("a hint that fails")


def test_hints_filter_and_doubt_means_retry() -> None:
    table = RequeueTable(
        {
            "volsched": {
                "Quiet": (on(NODE, ADD, never),),
                "Broken": (on(NODE, ADD, broken),),
                "Blind": (on(NODE, ADD),),
            }
        }
    )
    pod_ = a_pod()
    assert not table.worth_requeueing(pod_, {"Quiet"}, NODE_ADD)
    assert table.worth_requeueing(pod_, {"Broken"}, NODE_ADD)
    assert table.worth_requeueing(pod_, {"Blind"}, NODE_ADD)
    assert table.worth_requeueing(pod_, {"Quiet", "Blind"}, NODE_ADD)
    # Not registered by the plugins that rejected the pod: no move.
    assert not table.worth_requeueing(pod_, {"Blind"}, ClusterEvent(PERSISTENT_VOLUME, ADD))
    # A rejecting plugin the table does not know: retry rather than strand the pod.
    assert table.worth_requeueing(pod_, {"Unknown"}, NODE_ADD)
    # No plugin to blame: any event some plugin registered, and only those.
    assert table.worth_requeueing(pod_, set(), NODE_ADD)
    assert not table.worth_requeueing(pod_, set(), ClusterEvent(PERSISTENT_VOLUME, ADD))


def test_each_pod_is_judged_by_its_own_profile() -> None:
    table = RequeueTable(
        {"first": {"P": (on(NODE, ADD),)}, "second": {"P": (on(NODE, ADD, never),)}},
        default="first",
    )
    assert table.worth_requeueing(a_pod(spec={"schedulerName": "first"}), {"P"}, NODE_ADD)
    assert not table.worth_requeueing(a_pod(spec={"schedulerName": "second"}), {"P"}, NODE_ADD)
    # A profile not served (the extender's pods): the default one.
    assert table.worth_requeueing(a_pod(spec={"schedulerName": "other"}), {"P"}, NODE_ADD)


def test_labels_are_upstreams() -> None:
    assert ASSIGNED_POD_ADD.label == "AssignedPodAdd"
    assert ASSIGNED_POD_DELETE.label == "AssignedPodDelete"
    assert ClusterEvent(POD, UPDATE_POD_LABEL).label == "AssignedPodUpdatePodLabel"
    assert ClusterEvent(NODE, UPDATE_NODE_LABEL).label == "NodeUpdateNodeLabel"
    assert ClusterEvent(PERSISTENT_VOLUME, UPDATE).label == "PersistentVolumeUpdate"


def test_registrations_match_by_resource_and_shared_action() -> None:
    registered = ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL)
    assert registered.matches(ClusterEvent(NODE, UPDATE_NODE_LABEL))
    assert not registered.matches(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT))
    assert not registered.matches(ClusterEvent(POD, ADD))
    # Other kinds' updates are every update bit: any update registration covers them.
    assert ClusterEvent(PERSISTENT_VOLUME, ADD | UPDATE).matches(
        ClusterEvent(PERSISTENT_VOLUME, UPDATE)
    )


def test_a_node_update_names_what_changed_and_a_heartbeat_nothing() -> None:
    old = a_node()
    assert node_update_events(old, a_node()) == []
    relabelled = a_node(labels={"disk": "ssd"})
    assert node_update_events(old, relabelled) == [ClusterEvent(NODE, UPDATE_NODE_LABEL)]
    cordoned = a_node(unschedulable=True, cpu="8")
    assert node_update_events(old, cordoned) == [
        ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE),
        ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT),
    ]


def test_an_assigned_pods_events() -> None:
    pending = a_pod(labels={"app": "a"}, cpu="1")
    placed = a_pod(labels={"app": "a"}, cpu="1", node_name="n1")
    relabelled = a_pod(labels={"app": "b"}, cpu="1", node_name="n1")
    resized = a_pod(labels={"app": "a"}, cpu="500m", node_name="n1")
    assert assigned_pod_events(None, pending) == []
    assert assigned_pod_events(pending, placed) == [(ASSIGNED_POD_ADD, None, placed)]
    assert assigned_pod_events(None, placed) == [(ASSIGNED_POD_ADD, None, placed)]
    assert assigned_pod_events(placed, relabelled) == [
        (ClusterEvent(POD, UPDATE_POD_LABEL), placed, relabelled)
    ]
    assert assigned_pod_events(placed, resized) == [
        (ClusterEvent(POD, ActionType.UPDATE_POD_SCALE_DOWN), placed, resized)
    ]
    # A status change (the same view but for its version) is no event.
    assert assigned_pod_events(placed, a_pod(labels={"app": "a"}, cpu="1", node_name="n1")) == []
    finished = dataclasses.replace(placed, phase="Succeeded")
    assert assigned_pod_events(placed, finished) == [(ASSIGNED_POD_DELETE, placed, None)]
