"""What each plugin name means to volsched: the extension points it implements, the
builder's filter and score kinds (the legacy Policy names ``profile_builder`` knows), the
default multi-point set, and the names volsched does not run, each with its reason."""

from __future__ import annotations

from dataclasses import dataclass

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "volsched"
DEFAULT_BIND_TIMEOUT_SECONDS = 600.0

MULTI_POINT = "multiPoint"
# The v1 ``Plugins`` fields, in upstream's order. ``placementGenerate`` and
# ``placementScore`` are the workload (pod group) points of 1.36; volsched runs no plugin
# there.
EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "placementGenerate",
    "placementScore",
    MULTI_POINT,
)
PLACEMENT_POINTS = ("placementGenerate", "placementScore")


@dataclass(frozen=True, slots=True)
class PluginKind:
    """The extension points a plugin implements and the builder kinds it maps to."""

    points: frozenset[str]
    filter_kind: str | None = None
    score_kind: str | None = None


def _kind(points: str, filter_kind: str | None = None, score_kind: str | None = None) -> PluginKind:
    return PluginKind(frozenset(points.split()), filter_kind, score_kind)


PLUGINS: dict[str, PluginKind] = {
    "SchedulingGates": _kind("preEnqueue"),
    "PrioritySort": _kind("queueSort"),
    "NodeUnschedulable": _kind("filter", "CheckNodeUnschedulable"),
    "NodeName": _kind("filter", "HostName"),
    "TaintToleration": _kind(
        "filter preScore score", "PodToleratesNodeTaints", "TaintTolerationPriority"
    ),
    "NodeAffinity": _kind(
        "preFilter filter preScore score", "MatchNodeSelector", "NodeAffinityPriority"
    ),
    "NodePorts": _kind("preFilter filter", "PodFitsHostPorts"),
    "NodeResourcesFit": _kind(
        "preFilter filter preScore score", "PodFitsResources", "NodeResourcesFitScore"
    ),
    "VolumeRestrictions": _kind("preFilter filter", "NoDiskConflict"),
    "NodeVolumeLimits": _kind("preFilter filter", "MaxCSIVolumeCountPred"),
    # Its score is upstream's StorageCapacityScoring one: in a profile only with the gate.
    "VolumeBinding": _kind(
        "preFilter filter reserve preBind preScore score",
        "CheckVolumeBinding",
        "VolumeCapacityScore",
    ),
    "VolumeZone": _kind("preFilter filter", "NoVolumeZoneConflict"),
    "PodTopologySpread": _kind(
        "preFilter filter preScore score", "EvenPodsSpread", "EvenPodsSpreadPriority"
    ),
    "InterPodAffinity": _kind(
        "preFilter filter preScore score", "MatchInterPodAffinity", "InterPodAffinityPriority"
    ),
    "DefaultPreemption": _kind("postFilter"),
    "NodeResourcesBalancedAllocation": _kind("preScore score", None, "BalancedResourceAllocation"),
    "ImageLocality": _kind("score", None, "ImageLocalityPriority"),
    # Upstream's points; volsched runs its PreFilter and Filter (a pod with claims is
    # left pending), and the others have nothing to do.
    "DynamicResources": _kind(
        "preEnqueue preFilter filter postFilter reserve preBind", "CheckDynamicResources"
    ),
    "DefaultBinder": _kind("bind"),
    # Removed upstream (replaced by PodTopologySpread's system defaults); kept for users
    # who still list it.
    "SelectorSpread": _kind("preScore score", None, "SelectorSpreadPriority"),
    # volsched's storage plugins. PrioritizeVolumes reads what VolumeBinding's filter
    # chose for each node.
    "PrioritizeVolumes": _kind("preScore score", None, "PrioritizeVolumes"),
    "StorageNodeReady": _kind("filter", "StorageNodeReady"),
    "VolumeLocality": _kind("filter score", "CheckVolumeLocality", "VolumeLocality"),
}

# In-tree plugins of kube-scheduler 1.36 that volsched does not run, with the reason a
# user is told.
UNAVAILABLE = {
    "NodeDeclaredFeatures": "volsched does not read node-declared features",
    "GangScheduling": "volsched does not schedule pod groups (workloads)",
    "TopologyPlacement": "volsched does not schedule pod groups (workloads)",
}
# The in-tree volume limits of the drivers that moved to CSI: kube-scheduler 1.36's
# validation refuses them by name (NodeVolumeLimits counts their CSI volumes).
REMOVED_IN_V1 = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
IN_TREE_LIMITS = frozenset(REMOVED_IN_V1)
# Well-known out-of-tree plugins (kubernetes-sigs/scheduler-plugins and others): named in
# the refusal so a user knows the plugin is not mistyped but not part of kube-scheduler.
OUT_OF_TREE = frozenset(
    {
        "Coscheduling",
        "CapacityScheduling",
        "NodeResourceTopologyMatch",
        "NodeResourcesAllocatable",
        "TargetLoadPacking",
        "LoadVariationRiskBalancing",
        "LowRiskOverCommitment",
        "Trimaran",
        "NetworkOverhead",
        "TopologicalSort",
        "PreemptionToleration",
        "QOSSort",
        "CrossNodePreemption",
        "PodState",
        "SySched",
        "PeaksPlugin",
        "NodeNUMAResource",
        "Reservation",
        "ElasticQuota",
    }
)

# Upstream's default multi-point set, in its order and with its weights (pkg/scheduler/
# apis/config/v1/default_plugins.go), less what volsched does not run.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
# Joined in volsched's own default profile, never in a KubeSchedulerConfiguration's
# unless enabled there: volsched's storage preference, which kube-scheduler lacks.
VOLSCHED_MULTI_POINT: tuple[tuple[str, int | None], ...] = (("PrioritizeVolumes", 1),)
# Joined when the cluster runs volsched's replicated storage.
STORAGE_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("StorageNodeReady", None),
    ("VolumeLocality", 1),
)

# Whether a plugin still works when one of its points is disabled while its main point
# runs, as kube-scheduler 1.36's plugins do it. A plugin listed here reads, in Filter or
# Score, what its PreFilter or PreScore wrote, and fails every pod without it; the others
# (NodeAffinity, NodeResourcesFit's score, BalancedAllocation, VolumeZone, ...) compute it
# again and work the same.
NEEDS_PRE_FILTER = {
    "NodeResourcesFit": 'error reading "PreFilterNodeResourcesFit" from cycleState: not found',
    "NodePorts": 'reading "PreFilterNodePorts" from cycleState: not found',
    "VolumeRestrictions": 'reading "PreFilterVolumeRestrictions" from cycleState: not found',
    "VolumeBinding": 'reading "PreFilterVolumeBinding" from cycleState: not found',
    "PodTopologySpread": 'reading "PreFilterPodTopologySpread" from cycleState: not found',
    "InterPodAffinity": 'reading "PreFilterInterPodAffinity" from cycleState: not found',
}
NEEDS_PRE_SCORE = {
    "TaintToleration": 'failed to read "PreScoreTaintToleration" from cycleState: not found',
    "InterPodAffinity": 'failed to read "PreScoreInterPodAffinity" from cycleState: not found',
    "PodTopologySpread": 'error reading "PreScorePodTopologySpread" from cycleState: not found',
}
# Points whose plugins follow from the filter and score sets in volsched (a plugin's
# PreFilter runs when its Filter does; its Reserve and PreBind with its Filter).
DERIVED_POINTS = ("preFilter", "preScore", "reserve", "permit", "preBind", "postBind")
# Points that hold exactly one plugin, which cannot be swapped for another here.
FIXED_POINTS = {
    "queueSort": "PrioritySort",
    "bind": "DefaultBinder",
    "preEnqueue": "SchedulingGates",
}


def default_plugins(
    with_storage: bool, volsched_defaults: bool = False
) -> tuple[tuple[str, int | None], ...]:
    """kube-scheduler's defaults; volsched's own default profile adds its storage
    preference, and a cluster with replicated storage the storage plugins."""
    own = VOLSCHED_MULTI_POINT if volsched_defaults else ()
    return DEFAULT_MULTI_POINT + (STORAGE_MULTI_POINT if with_storage else ()) + own
