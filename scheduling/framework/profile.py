"""A configured profile: the predicates in order and the weighted priorities."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import EVERYTHING
from volsched.scheduling.framework.interfaces import (
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    ListNormalizeScorePlugin,
    NodeLocalFilter,
    NodeLocalScore,
    NormalizeScorePlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    ScreeningFilter,
)
from volsched.scheduling.framework.pre_enqueue import Hold, hold_of
from volsched.scheduling.framework.requeue import PluginEvents, merge
from volsched.scheduling.framework.status import Status


@dataclass(frozen=True, slots=True)
class Predicate:
    policy_name: str
    plugin: FilterPlugin


@dataclass(frozen=True, slots=True)
class Priority:
    policy_name: str
    plugin: ScorePlugin
    weight: int


@dataclass(frozen=True, slots=True)
class ScoreStep:
    priority: Priority
    pre_score: Callable[[CycleState, Pod, list[NodeInfo]], Status] | None
    score_nodes: Callable[[CycleState, Pod, list[NodeInfo]], list[int]] | None
    normalize: Callable[[CycleState, Pod, dict[str, int]], None] | None
    # The plugin's NodeLocalScore key, when it has one.
    score_key: Callable[[CycleState, Pod], Hashable | None] | None = None
    normalize_list: Callable[[CycleState, Pod, list[int]], list[int]] | None = None


@dataclass(slots=True)
class Profile:
    """What a cycle runs. Pre-filter and reserve lists are derived from the plugins.

    ``percentage_of_nodes_to_score`` is kube-scheduler's knob: 0 means its adaptive
    default (all nodes below 100, then 50 % falling to 5 % as the cluster grows).
    """

    predicates: list[Predicate]
    priorities: list[Priority]
    percentage_of_nodes_to_score: int = 0
    # DefaultPreemptionArgs: (minCandidateNodesPercentage, minCandidateNodesAbsolute).
    min_candidate_nodes: tuple[int, int] = (10, 100)
    pre_enqueuers: list[PreEnqueuePlugin] = field(default_factory=list)
    pre_filters: list[PreFilterPlugin] = field(default_factory=list)
    # The pre-filters whose state counts pods, told of pods added and removed.
    pre_filter_extensions: list[PreFilterExtensions] = field(default_factory=list)
    reservers: list[ReservePlugin] = field(default_factory=list)
    post_binders: list[PostBindPlugin] = field(default_factory=list)
    # The PostFilters that run before DefaultPreemption, in filter order.
    post_filters: list[PostFilterPlugin] = field(default_factory=list)
    # Each priority with its optional extension points, resolved once: isinstance on a
    # runtime Protocol is slow, and the cycle asks for every pod.
    score_steps: list[ScoreStep] = field(default_factory=list)
    # The filters that can name the nodes they may accept, in filter order.
    screeners: list[ScreeningFilter] = field(default_factory=list)
    # Per predicate, in order: its NodeLocalFilter key, when it has one.
    filter_keys: list[Callable[[CycleState, Pod], Hashable | None] | None] = field(
        default_factory=list
    )

    def __post_init__(self) -> None:
        seen: set[int] = set()
        filters = {id(p.plugin) for p in self.predicates}
        self.pre_enqueuers = []
        self.pre_filters = []
        self.pre_filter_extensions = []
        self.reservers = []
        self.post_binders = []
        self.post_filters = []
        plugins: list[object] = [p.plugin for p in self.predicates] + [
            p.plugin for p in self.priorities
        ]
        for plugin in plugins:
            if id(plugin) in seen:
                continue
            seen.add(id(plugin))
            if isinstance(plugin, PreEnqueuePlugin) and id(plugin) in filters:
                self.pre_enqueuers.append(plugin)
            if isinstance(plugin, PreFilterPlugin) and id(plugin) in filters:
                self.pre_filters.append(plugin)
                if isinstance(plugin, PreFilterExtensions):
                    self.pre_filter_extensions.append(plugin)
            if isinstance(plugin, ReservePlugin):
                self.reservers.append(plugin)
            if isinstance(plugin, PostBindPlugin):
                self.post_binders.append(plugin)
            if isinstance(plugin, PostFilterPlugin) and id(plugin) in filters:
                self.post_filters.append(plugin)

        self.screeners = [
            p.plugin for p in self.predicates if isinstance(p.plugin, ScreeningFilter)
        ]
        self.filter_keys = [
            p.plugin.filter_key if isinstance(p.plugin, NodeLocalFilter) else None
            for p in self.predicates
        ]
        self.score_steps = [
            ScoreStep(
                priority,
                plugin.pre_score if isinstance(plugin, PreScorePlugin) else None,
                plugin.score_nodes if isinstance(plugin, BatchScorePlugin) else None,
                plugin.normalize if isinstance(plugin, NormalizeScorePlugin) else None,
                plugin.score_key if isinstance(plugin, NodeLocalScore) else None,
                plugin.normalize_scores if isinstance(plugin, ListNormalizeScorePlugin) else None,
            )
            for priority in self.priorities
            for plugin in (priority.plugin,)
        ]

    def hold(self, pod: Pod) -> Hold | None:
        """What keeps ``pod`` from being attempted (None: nothing); see ``pre_enqueue``."""
        return hold_of(pod, self.pre_enqueuers)

    def predicate_name(self, plugin_name: str) -> str:
        for predicate in self.predicates:
            if predicate.plugin.name == plugin_name:
                return predicate.policy_name
        return plugin_name

    def requeue_events(self) -> PluginEvents:
        """What each plugin that can reject a pod (the filters, with their pre-filters)
        declared: the profile's part of the queue's requeue table."""
        return merge(
            (
                predicate.plugin.name,
                predicate.plugin.events_to_register()
                if isinstance(predicate.plugin, EnqueueExtensions)
                else EVERYTHING,
            )
            for predicate in self.predicates
        )
