"""From a policy to a runnable profile: one plugin instance per rule, shared where a
score reads what a filter found (VolumeBinding) or where upstream keeps one plugin for
both points (NodeAffinity, TaintToleration)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.scheduling.framework.interfaces import FilterPlugin, ScorePlugin
from volsched.scheduling.framework.profile import Predicate, Priority, Profile
from volsched.scheduling.plugins.csi_limits import CSILimits
from volsched.scheduling.plugins.dynamic_resources import DynamicResources
from volsched.scheduling.plugins.equal_priority import EqualPriority
from volsched.scheduling.plugins.image_locality import ImageLocality
from volsched.scheduling.plugins.inter_pod_affinity import (
    DEFAULT_HARD_POD_AFFINITY_WEIGHT,
    InterPodAffinity,
)
from volsched.scheduling.plugins.node_affinity import NodeAffinity
from volsched.scheduling.plugins.node_label import NodeLabelPreference, NodeLabelPresence
from volsched.scheduling.plugins.node_name import NodeName
from volsched.scheduling.plugins.node_ports import NodePorts
from volsched.scheduling.plugins.node_resources import (
    BALANCED_RESOURCES,
    BalancedAllocation,
    LeastAllocated,
    NodeResourcesFit,
)
from volsched.scheduling.plugins.node_unschedulable import NodeUnschedulable
from volsched.scheduling.plugins.pod_topology_spread import (
    SYSTEM,
    SYSTEM_DEFAULT_CONSTRAINTS,
    DefaultConstraint,
    PodTopologySpread,
)
from volsched.scheduling.plugins.prioritize_volumes import PrioritizeVolumes
from volsched.scheduling.plugins.resource_scoring import ResourceAllocationScore
from volsched.scheduling.plugins.selector_spread import SelectorSpread
from volsched.scheduling.plugins.service_affinity import ServiceAffinity, ServiceAntiAffinity
from volsched.scheduling.plugins.storage_locality import StorageNodeReady, VolumeLocality
from volsched.scheduling.plugins.taint_toleration import TaintToleration
from volsched.scheduling.plugins.volume_binding import VolumeBinding
from volsched.scheduling.plugins.volume_restrictions import VolumeRestrictions
from volsched.scheduling.plugins.volume_zone import VolumeZone
from volsched.scheduling.policy import PolicySpec
from volsched.scheduling.volumes.provisioning import ProvisionerCheck
from volsched.scheduling.volumes.scoring import CAPACITY_SHAPE, DEFAULT_SHAPE, ShapePoint


class PluginFactory:
    """Builds plugins on demand and hands out the same instance for the same rule."""

    def __init__(
        self,
        cluster: ClusterCache,
        provisioner_checks: Mapping[str, ProvisionerCheck] | None = None,
    ) -> None:
        self.cluster = cluster
        self.provisioner_checks = dict(provisioner_checks or {})
        self._shared: dict[str, Any] = {}
        # VolumeBinding's capacity score (StorageCapacityScoring) and volsched's
        # PrioritizeVolumes each take a shape of their own.
        self.volume_shape: tuple[ShapePoint, ...] = CAPACITY_SHAPE
        self.packing_shape: tuple[ShapePoint, ...] = DEFAULT_SHAPE
        self.hard_pod_affinity_weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
        # InterPodAffinityArgs.ignorePreferredTermsOfExistingPods.
        self.ignore_preferred_terms_of_existing_pods = False
        self.spread_defaults: tuple[tuple[DefaultConstraint, ...], str] = (
            SYSTEM_DEFAULT_CONSTRAINTS,
            SYSTEM,
        )

    def shared(self, key: str, factory: Any) -> Any:
        if key not in self._shared:
            self._shared[key] = factory()
        return self._shared[key]

    def volume_binding(self) -> VolumeBinding:
        plugin: VolumeBinding = self.shared(
            "VolumeBinding",
            lambda: VolumeBinding(self.cluster, self.volume_shape, self.provisioner_checks),
        )
        return plugin

    def inter_pod_affinity(self) -> InterPodAffinity:
        plugin: InterPodAffinity = self.shared(
            "InterPodAffinity",
            lambda: InterPodAffinity(
                self.cluster,
                self.hard_pod_affinity_weight,
                self.ignore_preferred_terms_of_existing_pods,
            ),
        )
        return plugin

    def pod_topology_spread(self) -> PodTopologySpread:
        plugin: PodTopologySpread = self.shared(
            "PodTopologySpread", lambda: PodTopologySpread(self.cluster, *self.spread_defaults)
        )
        return plugin

    def node_affinity(self, argument: Mapping[str, Any]) -> NodeAffinity:
        """One NodeAffinity for filter and score, with the profile's added affinity."""
        plugin: NodeAffinity = self.shared(
            "NodeAffinity", lambda: NodeAffinity(self.cluster, argument.get("addedAffinity"))
        )
        return plugin

    def predicate(self, kind: str, argument: Mapping[str, Any]) -> FilterPlugin:
        cluster = self.cluster
        builders: dict[str, Any] = {
            "PodFitsHostPorts": lambda: self.shared("NodePorts", lambda: NodePorts(cluster)),
            "PodFitsResources": lambda: self.shared(
                "NodeResourcesFit",
                lambda: NodeResourcesFit(
                    cluster,
                    argument.get("ignoredResources", ()),
                    argument.get("ignoredResourceGroups", ()),
                ),
            ),
            "NoDiskConflict": lambda: self.shared(
                "VolumeRestrictions", lambda: VolumeRestrictions(cluster)
            ),
            "MatchNodeSelector": lambda: self.node_affinity(argument),
            "HostName": lambda: self.shared("NodeName", lambda: NodeName(cluster)),
            "CheckDynamicResources": lambda: self.shared(
                "DynamicResources", lambda: DynamicResources(cluster)
            ),
            "CheckNodeUnschedulable": lambda: self.shared(
                "NodeUnschedulable", lambda: NodeUnschedulable(cluster)
            ),
            "PodToleratesNodeTaints": lambda: self.shared(
                "TaintToleration", lambda: TaintToleration(cluster)
            ),
            "CheckVolumeBinding": self.volume_binding,
            "NoVolumeZoneConflict": lambda: self.shared("VolumeZone", lambda: VolumeZone(cluster)),
            "MaxCSIVolumeCountPred": lambda: self.shared("CSILimits", lambda: CSILimits(cluster)),
            "StorageNodeReady": lambda: self.shared(
                "StorageNodeReady", lambda: StorageNodeReady(cluster)
            ),
            "CheckVolumeLocality": lambda: self.shared(
                "VolumeLocality", lambda: VolumeLocality(cluster)
            ),
            "MatchInterPodAffinity": self.inter_pod_affinity,
            "EvenPodsSpread": self.pod_topology_spread,
            "serviceAffinity": lambda: ServiceAffinity(cluster, tuple(argument["labels"])),
            "labelsPresence": lambda: NodeLabelPresence(
                cluster, tuple(argument["labels"]), bool(argument["presence"])
            ),
        }
        plugin: FilterPlugin = builders[kind]()
        return plugin

    def priority(self, kind: str, argument: Mapping[str, Any]) -> ScorePlugin:
        cluster = self.cluster
        builders: dict[str, Any] = {
            "LeastRequestedPriority": lambda: LeastAllocated(cluster),
            "BalancedResourceAllocation": lambda: BalancedAllocation(
                cluster, tuple(argument.get("resources", BALANCED_RESOURCES))
            ),
            "ImageLocalityPriority": lambda: ImageLocality(cluster),
            "SelectorSpreadPriority": lambda: SelectorSpread(cluster),
            "EqualPriority": lambda: EqualPriority(cluster),
            "NodeAffinityPriority": lambda: self.node_affinity(argument),
            "NodeResourcesFitScore": lambda: ResourceAllocationScore(
                cluster, argument.get("scoringStrategy")
            ),
            "TaintTolerationPriority": lambda: self.shared(
                "TaintToleration", lambda: TaintToleration(cluster)
            ),
            "VolumeCapacityScore": self.volume_binding,
            "PrioritizeVolumes": lambda: PrioritizeVolumes(cluster, self.packing_shape),
            "VolumeLocality": lambda: self.shared(
                "VolumeLocality", lambda: VolumeLocality(cluster)
            ),
            "InterPodAffinityPriority": self.inter_pod_affinity,
            "EvenPodsSpreadPriority": self.pod_topology_spread,
            "serviceAntiAffinity": lambda: ServiceAntiAffinity(cluster, str(argument["label"])),
            "labelPreference": lambda: NodeLabelPreference(
                cluster, str(argument["label"]), bool(argument["presence"])
            ),
        }
        plugin: ScorePlugin = builders[kind]()
        return plugin


def build_profile(
    spec: PolicySpec,
    plugins: PluginFactory,
    percentage_of_nodes_to_score: int = 0,
) -> Profile:
    for priority in spec.priorities:
        if "shape" in priority.argument and priority.kind in (
            "VolumeCapacityScore",
            "PrioritizeVolumes",
        ):
            shape = tuple(
                ShapePoint(utilization, score) for utilization, score in priority.argument["shape"]
            )
            if priority.kind == "PrioritizeVolumes":
                plugins.packing_shape = shape
            else:
                plugins.volume_shape = shape
        if priority.kind == "InterPodAffinityPriority":
            plugins.ignore_preferred_terms_of_existing_pods = bool(
                priority.argument.get("ignorePreferredTermsOfExistingPods")
            )
    plugins.hard_pod_affinity_weight = spec.hard_pod_affinity_weight
    if spec.spread_defaults is not None:
        plugins.spread_defaults = spec.spread_defaults
    predicates = [Predicate(p.name, plugins.predicate(p.kind, p.argument)) for p in spec.predicates]
    priorities = [
        Priority(p.name, plugins.priority(p.kind, p.argument), p.weight) for p in spec.priorities
    ]
    return Profile(
        predicates,
        priorities,
        percentage_of_nodes_to_score,
        min_candidate_nodes=spec.min_candidate_nodes,
    )
