"""Why a pod goes where it goes, node by node: the explanation ``volsched explain``
prints for a snapshot and the daemon's decisions page shows for its live cache.

``explain_pod`` decides one pod the way the scheduling loop would — its nominated node
first, then every node, then the PostFilter's dry run when nothing fits — without
reserving anything: the cache is left exactly as it was, so it may be asked of the
daemon's own cache between two cycles. ``explain_json`` turns an outcome into the
per-node rows both front ends render.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.plugins.volume_binding import rejection_details
from volsched.scheduling.preemption.post_filter import Preemptor
from volsched.scheduling.simulation import PodOutcome, claim_outcomes


def explain_pod(serving: Scheduler, pod: Pod, seed: int = 0) -> PodOutcome:
    """Decide ``pod`` against ``serving``'s cache and profile without touching either.

    A scheduler of its own runs the cycle (same cache, profile and nominated pods), so
    the serving scheduler's round-robin start node and random ties are not moved by a
    question; nothing is reserved or assumed, and the PostFilter is only a dry run."""
    held = serving.profile.hold(pod)
    if held is not None:
        # PreEnqueue: a held pod is never attempted.
        return PodOutcome(Decision(pod, message=held.message))
    asking = Scheduler(serving.cluster, serving.profile, random.Random(seed), serving.clock_ns)
    asking.nominated = serving.nominated
    decision = asking.find_node_nominated_first(pod)
    if decision.node is not None:
        return PodOutcome(decision, claim_outcomes(decision))
    preemption = Preemptor(asking, serving.nominated).post_filter(decision)
    return PodOutcome(decision, claim_outcomes(decision), preemption)


def preemption_json(outcome: PodOutcome) -> dict[str, Any]:
    """``nominatedNode``, ``victims`` and ``preemption`` (the PostFilter message: null when
    preemption did not run, "" when it succeeded, as upstream's successful PostFilter
    carries no message)."""
    preemption = outcome.preemption
    if preemption is None:
        return {"nominatedNode": None, "victims": [], "preemption": None}
    return {
        "nominatedNode": preemption.node,
        "victims": [victim.meta.key for victim in preemption.victims],
        "preemption": preemption.message or "",
    }


def _plugin_details(
    decision: Decision, profile: Profile, name: str, nodes: Mapping[str, NodeInfo]
) -> list[str]:
    """What the rejecting plugin says about this node, if it explains itself (which term
    or constraint rejected it); asked only here, never during a cycle."""
    rejected_by = decision.rejected_plugin.get(name)
    node = nodes.get(name)
    if rejected_by is None or node is None:
        return []
    for predicate in profile.predicates:
        if predicate.plugin.name != rejected_by:
            continue
        explain = getattr(predicate.plugin, "explain", None)
        if callable(explain):
            text = explain(decision.state, decision.pod, node)
            return [text] if isinstance(text, str) and text else []
    return []


def explain_json(
    outcome: PodOutcome,
    profile: Profile,
    all_nodes: list[str],
    nodes: Mapping[str, NodeInfo] | None = None,
) -> dict[str, Any]:
    """Per node, why the pod's filter cycle accepted or rejected it; for a pod that
    preempted, the rows are those of the cycle that failed, each candidate node with the
    victims its eviction would take."""
    final = outcome.decision
    decision = outcome.filter_decision or final
    preemption = outcome.preemption
    weights = {p.policy_name: p.weight for p in profile.priorities}
    evaluated = set(decision.evaluated) | set(decision.filtered)
    rows: list[dict[str, Any]] = []
    for name in all_nodes:
        row: dict[str, Any] = {"node": name}
        if name in decision.filtered:
            row["result"] = "rejected"
            row["predicate"] = decision.rejected_by.get(name)
            row["reasons"] = decision.filtered[name]
            details = rejection_details(decision.state, name) + _plugin_details(
                decision, profile, name, nodes or {}
            )
            if details:
                row["details"] = details
        elif name in decision.scores:
            row["result"] = "chosen" if name == decision.node else "feasible"
            row["scores"] = {
                priority: {"score": score, "weight": weights.get(priority, 0)}
                for priority, score in decision.score_parts.get(name, {}).items()
            }
            row["total"] = decision.scores[name]
        elif name in evaluated:
            row["result"] = "feasible"
        elif decision.pre_filter_rejection is not None:
            # No node was looked at: the PreFilter's reason holds for each of them.
            row["result"] = "rejected"
            row["predicate"], reason = decision.pre_filter_rejection
            row["reasons"] = [reason]
        else:
            row["result"] = "not-evaluated"
        if preemption is not None:
            candidate = preemption.candidates.get(name)
            if candidate is not None:
                row["victims"] = [victim.meta.key for victim in candidate.pods]
            elif name in preemption.rejected:
                row["preemption"] = preemption.rejected[name]
        rows.append(row)
    return {
        "pod": final.pod.meta.key,
        "node": final.node,
        "message": final.message if final.node is None else None,
        "volumes": outcome.volumes,
        **preemption_json(outcome),
        "nodes": rows,
    }


def node_names(cluster: ClusterCache) -> list[str]:
    """Every node's name, sorted: the rows of an explanation."""
    return sorted(info.name for info in cluster.node_list())
