"""The extenders of a KubeSchedulerConfiguration at each point of a pod's cycle, with
upstream's rules of who is asked and what an error means.

- **filter** (findNodesThatPassExtenders): after the in-tree filters, one extender after
  the other on the nodes still feasible, each only for a pod it is interested in
  (``managedResources``); an error fails the pod's cycle unless the extender is
  ``ignorable``, then it is skipped and logged. Every failure counts — an error
  status, a timeout, an answer too large, too deep, not JSON or of the wrong shape —
  and each is logged once, not once per pod (``failure_log``).
- **prioritize** (prioritizeNodes): the interested extenders at once; an error only
  costs that extender's scores, ignorable or not (upstream logs it and goes on).
- **preempt** (callExtenders): each interested extender with a preempt verb may drop
  candidate nodes or change their victims; an error is the preemption's error unless
  ignorable.
- **bind** (extendersBinding): the one interested extender with a bind verb binds the
  pod instead of volsched; an ignorable one that fails leaves it to volsched.

Pods and nodes are sent as the API server gave them (the ingest keeps their JSON while
extenders are configured); an object known only from a warm start's stored views is
rendered from its view, with the fields the scheduler reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import CPU, Node, Pod
from volsched.daemon.extenders.client import ExtenderClient, ExtenderError, Extenders
from volsched.daemon.extenders.failure_log import FailureLog
from volsched.daemon.extenders.wire import Victims
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.extender_results import (
    apply_filter_result,
    combined_scores,
    failed_cycle,
)
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.preemption.victims import Candidate

log = logging.getLogger("volsched.extenders")


def _quantity(resource: str, value: int) -> str:
    return f"{value}m" if resource == CPU else str(value)


def rendered_pod(pod: Pod) -> dict[str, Any]:
    """A pod's JSON rebuilt from its view: identity, labels, annotations, scheduler and
    its requests (as one container holding the pod's effective requests)."""
    meta = pod.meta
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta.name,
            "namespace": meta.namespace,
            "uid": meta.uid,
            "resourceVersion": str(meta.resource_version),
            "labels": dict(meta.labels),
            "annotations": dict(meta.annotations),
        },
        "spec": {
            "schedulerName": pod.scheduler_name,
            "nodeName": pod.node_name or None,
            "priority": pod.priority,
            "nodeSelector": dict(pod.node_selector),
            "containers": [
                {
                    "name": "requests",
                    "resources": {
                        "requests": {k: _quantity(k, v) for k, v in pod.requests.items()}
                    },
                }
            ],
        },
    }


def rendered_node(node: Node) -> dict[str, Any]:
    meta = node.meta
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": meta.name,
            "uid": meta.uid,
            "labels": dict(meta.labels),
            "annotations": dict(meta.annotations),
        },
        "spec": {"unschedulable": node.unschedulable},
        "status": {"allocatable": {k: _quantity(k, v) for k, v in node.allocatable.items()}},
    }


class ExtenderCalls:
    """The configured extenders, called at each point of a cycle."""

    def __init__(self, extenders: Extenders, cluster: ClusterCache, ingest: Ingest) -> None:
        self.extenders = extenders
        self.cluster = cluster
        self.ingest = ingest
        self.failures = FailureLog(log)
        ingest.keep_raw("Pod", "Node")

    def _pod_json(self, pod: Pod) -> dict[str, Any]:
        return self.ingest.raw_object("Pod", pod.meta.key) or rendered_pod(pod)

    def _node_json(self, name: str) -> dict[str, Any]:
        raw = self.ingest.raw_object("Node", name)
        if raw is not None:
            return raw
        info = self.cluster.nodes.get(name)
        node = info.node if info is not None else None
        return rendered_node(node) if node is not None else {"metadata": {"name": name}}

    def _nodes(self, client: ExtenderClient, names: list[str]) -> list[dict[str, Any]]:
        return [] if client.spec.node_cache_capable else [self._node_json(n) for n in names]

    def _skipped(self, client: ExtenderClient, verb: str, exc: ExtenderError) -> None:
        self.failures.failed(client.name, verb, f"skipped in {verb} (ignorable)", str(exc))

    async def filter(self, decision: Decision) -> None:
        """Narrow ``decision.feasible`` by each interested extender in turn; a failing
        extender that is not ignorable fails the decision with its error."""
        pod = decision.pod
        pod_json: dict[str, Any] | None = None
        for client in self.extenders.clients:
            if not decision.feasible:
                return
            if not client.spec.filter_verb or not client.spec.is_interested(pod):
                continue
            pod_json = pod_json or self._pod_json(pod)
            names = [info.name for info in decision.feasible]
            try:
                answer = await client.filter(pod_json, self._nodes(client, names), names)
            except ExtenderError as exc:
                if client.spec.ignorable:
                    self._skipped(client, "filter", exc)
                    continue
                failed_cycle(decision, str(exc))
                return
            self.failures.recovered(client.name, "filter")
            apply_filter_result(
                decision,
                client.name,
                answer.kept,
                answer.failed,
                answer.failed_and_unresolvable,
            )

    async def prioritize(self, decision: Decision) -> dict[str, int]:
        """What the interested extenders add to each feasible node's score."""
        pod = decision.pod
        asked = [
            client
            for client in self.extenders.clients
            if client.spec.prioritize_verb and client.spec.is_interested(pod)
        ]
        if not asked:
            return {}
        pod_json = self._pod_json(pod)
        names = [info.name for info in decision.feasible]
        answers = await asyncio.gather(
            *(client.prioritize(pod_json, self._nodes(client, names), names) for client in asked),
            return_exceptions=True,
        )
        weighted = []
        for client, answer in zip(asked, answers, strict=True):
            if isinstance(answer, ExtenderError):
                # Upstream: a prioritize error only costs this extender's scores.
                self.failures.failed(client.name, "prioritize", "gave no scores", str(answer))
                continue
            if isinstance(answer, BaseException):
                raise answer
            self.failures.recovered(client.name, "prioritize")
            weighted.append((answer, client.spec.weight))
        return combined_scores(weighted)

    async def preempt(self, pod: Pod, candidates: Mapping[str, Candidate]) -> dict[str, Candidate]:
        """The candidates left once each interested extender with a preempt verb has had
        its say; raises ``ExtenderError`` for an extender that fails and is not
        ignorable (or keeps a node without victims)."""
        current = dict(candidates)
        pod_json: dict[str, Any] | None = None
        for client in self.extenders.clients:
            if not current:
                break
            if not client.spec.preempt_verb or not client.spec.is_interested(pod):
                continue
            pod_json = pod_json or self._pod_json(pod)
            by_uid = {
                victim.meta.uid: self._pod_json(victim)
                for candidate in current.values()
                for victim in candidate.pods
            }
            wire = {
                node: Victims(tuple(v.meta.uid for v in c.pods), c.pdb_violations)
                for node, c in current.items()
            }
            try:
                kept = await client.preempt(pod_json, wire, by_uid)
                current = self._victims_back(client, kept)
            except ExtenderError as exc:
                if client.spec.ignorable:
                    self._skipped(client, "preempt", exc)
                    continue
                raise
        return current

    def _victims_back(
        self, client: ExtenderClient, kept: Mapping[str, Victims]
    ) -> dict[str, Candidate]:
        """The extender's answer (UIDs) as pods of the cache: upstream's
        convertToVictims, and its rule that a kept node needs a victim."""
        result: dict[str, Candidate] = {}
        for node, victims in kept.items():
            info = self.cluster.nodes.get(node)
            if info is None:
                raise ExtenderError(f'node "{node}" not found')
            if not victims.uids:
                if client.spec.ignorable:
                    log.info("extender %s kept node %s without victims; ignored", client.name, node)
                    continue
                raise ExtenderError(f'expected at least one victim pod on node "{node}"')
            on_node = {other.meta.uid: other for other in info.pods.values()}
            pods = []
            for uid in victims.uids:
                if uid not in on_node:
                    raise ExtenderError(
                        f"extender: {client.name} claims to preempt pod (UID: {uid}) on node: "
                        f"{node}, but the pod is not found on that node"
                    )
                pods.append(on_node[uid])
            result[node] = Candidate(node, tuple(pods), victims.num_pdb_violations)
        return result

    async def bind(self, key: str, uid: str, node: str) -> bool:
        """True when an extender bound the pod; False leaves it to volsched's binder.
        Raises ``ExtenderError`` when the binding extender fails and is not ignorable."""
        pod = self.cluster.pods.get(key)
        namespace, name = key.split("/", 1)
        for client in self.extenders.clients:
            if not client.spec.bind_verb or (
                pod is not None and not client.spec.is_interested(pod)
            ):
                continue
            try:
                await client.bind(namespace, name, uid, node)
            except ExtenderError as exc:
                if client.spec.ignorable:
                    self._skipped(client, "bind", exc)
                    continue
                raise
            return True
        return False
