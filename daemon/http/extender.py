"""The kube-scheduler extender protocol: volsched behind a stock kube-scheduler.

``POST {prefix}/filter``, ``/prioritize``, ``/bind``, ``/preempt`` with kube-scheduler's
wire format. Its extender structs carry no JSON tags, so keys are Go field names
(``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``,
``Error``, ``Host``, ``Score``, ``PodName``, ``PodNamespace``, ``PodUID``, ``Node``,
``NodeNameToVictims``, ``NodeNameToMetaVictims``, ``NumPDBViolations``, ``UID``); Go's
decoder matches keys case-insensitively, so we accept any case and answer with the exact
names.

Every call answers well within kube-scheduler's default ``httpTimeout`` (5 s); a
malformed or oversized body gets 400 with a one-line JSON ``Error``, never a 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from volsched.cache.errors import ObjectError
from volsched.cache.objects.core import DEFAULT_SCHEDULER, Pod, parse_pod
from volsched.daemon.extenders.wire import BadRequest, Victims, field, preemption_candidates
from volsched.daemon.http.reading import BodyError, read_json
from volsched.scheduling.extender_results import MAX_EXTENDER_PRIORITY
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.node_verdicts import active_checks
from volsched.scheduling.framework.pod_changes import remove_pod
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.plugins.storage_locality import VolumeLocality, pod_storage
from volsched.scheduling.preemption.nominated import clone_node
from volsched.scheduling.preemption.post_filter import node_fits

log = logging.getLogger("volsched.extender")

# Rejections by these plugins are about where the data is: preemption cannot fix them.
VOLUME_PLUGINS = frozenset(
    {"VolumeBinding", "VolumeZone", "NodeVolumeLimits", "StorageNodeReady", "VolumeLocality"}
)


class Forbidden(Exception):
    """The pod belongs to a scheduler volsched does not serve."""


@dataclass(frozen=True, slots=True)
class ExtenderSettings:
    path_prefix: str = "/scheduler"
    locality_points: bool = False  # answer Ondat's raw 15/10/5/1 points in prioritize
    deadline_seconds: float = 4.0
    max_body_bytes: int = 16 * 1024 * 1024
    body_timeout_seconds: float = 10.0
    # Pods whose spec.schedulerName is one of these; any other pod is refused (403).
    scheduler_names: frozenset[str] = frozenset({DEFAULT_SCHEDULER})


@dataclass(frozen=True, slots=True)
class _Binding:
    """The binding cycle running for a pod: the node it binds to, its answer."""

    node: str
    outcome: asyncio.Future[dict[str, Any]]


class Extender:
    def __init__(
        self,
        scheduler: Scheduler,
        bind: Callable[[Decision], Awaitable[bool]],
        pods: Callable[[str], Pod | None],
        settings: ExtenderSettings,
        leading: Callable[[], bool] = lambda: True,
        refresh_claims: Callable[[Pod], Awaitable[str | None]] | None = None,
    ) -> None:
        self.refresh_claims = refresh_claims
        self.scheduler = scheduler
        self.bind = bind
        self.pods = pods
        self.settings = settings
        self.leading = leading
        self._binding: dict[str, _Binding] = {}

    # -- decoding --------------------------------------------------------------------

    def _pod(self, body: Mapping[str, Any]) -> Pod:
        raw = field(body, "Pod")
        if not isinstance(raw, Mapping):
            raise BadRequest("Pod is required")
        try:
            pod = parse_pod(raw)
        except ObjectError as exc:
            raise BadRequest(str(exc)) from None
        self._check_served(pod)
        return pod

    def _check_served(self, pod: Pod) -> None:
        served = self.settings.scheduler_names
        if pod.scheduler_name not in served:
            raise Forbidden(
                f"pod {pod.meta.key} has schedulerName {pod.scheduler_name!r}; this extender "
                f"serves only {', '.join(sorted(served))}"
            )

    @staticmethod
    def _nodes(body: Mapping[str, Any]) -> tuple[list[str], list[dict[str, Any]] | None]:
        names = field(body, "NodeNames")
        if names is not None:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise BadRequest("NodeNames must be a list of node names")
            return list(names), None
        nodes = field(body, "Nodes")
        if not isinstance(nodes, Mapping):
            raise BadRequest("Nodes or NodeNames is required")
        items = field(nodes, "Items") or []
        if not isinstance(items, list):
            raise BadRequest("Nodes.items must be a list")
        result = []
        for item in items:
            meta = item.get("metadata") if isinstance(item, Mapping) else None
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str) or not name:
                raise BadRequest("every node in Nodes.items needs metadata.name")
            result.append(name)
        return result, items

    # -- verbs -------------------------------------------------------------------------

    def filter(self, body: Mapping[str, Any]) -> dict[str, Any]:
        pod = self._pod(body)
        names, items = self._nodes(body)
        known = set(self.scheduler.cluster.nodes)
        decision = self.scheduler.find_node(pod, only=set(names) & known)
        if decision.error is not None:
            return {
                "Nodes": None,
                "NodeNames": None,
                "FailedNodes": {},
                "FailedAndUnresolvableNodes": {},
                "Error": decision.error,
            }
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        feasible = set(decision.scores)
        pre_filter_rejection = not decision.evaluated and decision.message is not None
        for name in names:
            if name in feasible:
                continue
            if name not in known:
                failed[name] = "node(s) not found in volsched's cache"
                continue
            if pre_filter_rejection:
                reason = decision.error or decision.message or ""
                (unresolvable if decision.unresolvable else failed)[name] = reason
                continue
            reasons = ", ".join(decision.filtered.get(name, []))
            plugin = decision.rejected_plugin.get(name, "")
            (unresolvable if plugin in VOLUME_PLUGINS else failed)[name] = reasons
        result: dict[str, Any] = {
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": "",
        }
        if items is not None:
            kept = [item for item in items if item["metadata"]["name"] in feasible]
            result["Nodes"] = {"metadata": {}, "items": kept}
            result["NodeNames"] = None
        else:
            result["Nodes"] = None
            result["NodeNames"] = [name for name in names if name in feasible]
        return result

    def prioritize(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        pod = self._pod(body)
        names, _ = self._nodes(body)
        known = set(self.scheduler.cluster.nodes)
        decision = self.scheduler.find_node(pod, only=set(names) & known)
        if self.settings.locality_points:
            return [{"Host": name, "Score": self._locality_points(pod, name)} for name in names]
        total_weight = sum(p.weight for p in self.scheduler.profile.priorities) or 1
        top = MAX_NODE_SCORE * total_weight
        scores = []
        for name in names:
            total = decision.scores.get(name, 0)
            scaled = min(MAX_EXTENDER_PRIORITY, max(0, round(total * MAX_EXTENDER_PRIORITY / top)))
            scores.append({"Host": name, "Score": scaled})
        return scores

    def _locality_points(self, pod: Pod, node: str) -> int:
        """Ondat's raw points (15/10/5/1, mean over volumes) for drop-in compatibility."""
        info = self.scheduler.cluster.nodes.get(node)
        if info is None or pod_storage(self.scheduler.cluster, pod) is None:
            return 0
        plugin = VolumeLocality(self.scheduler.cluster)
        return plugin.score(CycleState(), pod, info) // 10

    async def bind_pod(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = field(body, "PodName")
        namespace = field(body, "PodNamespace")
        uid = field(body, "PodUID")
        node = field(body, "Node")
        if not all(isinstance(v, str) and v for v in (name, namespace, node)):
            raise BadRequest("PodName, PodNamespace and Node are required")
        if not self.leading():
            # Filter and prioritize answer from any replica's warm cache; only the leader
            # writes bindings, so two replicas never bind the same volumes.
            return {"Error": "this volsched replica is a standby; retry against the leader"}
        pod = self.pods(f"{namespace}/{name}")
        if pod is None:
            return {"Error": f"pod {namespace}/{name} is not in volsched's cache"}
        self._check_served(pod)
        if uid and pod.meta.uid and uid != pod.meta.uid:
            return {"Error": f"pod {namespace}/{name} has uid {pod.meta.uid}, not {uid}"}
        running = self._binding.get(pod.meta.key)
        if running is None:
            # One binding cycle per pod: the calls that come while it runs (kube-scheduler
            # retrying, a second replica of it) wait for it and get its answer. It runs
            # to its end even if kube-scheduler stops waiting: a cycle cut in the middle
            # would leave half-written volumes behind.
            running = _Binding(node, asyncio.ensure_future(self._bind_once(pod, node)))
            self._binding[pod.meta.key] = running
            running.outcome.add_done_callback(lambda _: self._binding.pop(pod.meta.key, None))
        elif running.node != node:
            return {"Error": f"pod {pod.meta.key} is already being bound to node {running.node}"}
        return dict(await asyncio.shield(running.outcome))

    async def _bind_once(self, pod: Pod, node: str) -> dict[str, Any]:
        if pod.node_name:
            if pod.node_name == node:
                return {"Error": ""}
            return {"Error": f"pod {pod.meta.key} is already assigned to node {pod.node_name}"}
        if pod.meta.key in self.scheduler.cluster.assumed_pods:
            return {"Error": f"pod {pod.meta.key} is already being bound"}
        if self.refresh_claims is not None:
            # kube-scheduler's own VolumeBinding may have prebound the claims moments
            # ago (its PreBind runs before the extender's bind): read them fresh so a
            # claim it bound is seen bound and volsched does not pick volumes again.
            problem = await self.refresh_claims(pod)
            if problem is not None:
                return {"Error": problem}
        decision = self.scheduler.find_node(pod, only={node})
        if node not in decision.scores:
            reasons = "; ".join(decision.filtered.get(node, [])) or decision.message or "infeasible"
            return {"Error": f"node {node} cannot take pod {pod.meta.key}: {reasons}"}
        decision.node = node
        self.scheduler.commit(decision)
        if decision.node is None:
            return {"Error": decision.message or f"reserving {node} failed"}
        bound = await self.bind(decision)
        return {"Error": "" if bound else f"binding {pod.meta.key} to {node} failed"}

    def preempt(self, body: Mapping[str, Any]) -> dict[str, Any]:
        pod = self._pod(body)
        candidates = preemption_candidates(body)
        decision = self.scheduler.find_node(pod, only=set(candidates))
        kept = {}
        for node, victims in candidates.items():
            if not self._eviction_can_help(decision, node, victims):
                continue  # evicting pods cannot move this pod's data, labels or taints
            kept[node] = victims.wire()
        return {"NodeNameToMetaVictims": kept}

    def _eviction_can_help(self, decision: Decision, node: str, victims: Victims) -> bool:
        """The PostFilter's rule on volumes: a node a volume plugin rejects is no
        candidate, whether it did so at filter time or only once the proposed victims
        are gone (a volume reason hidden behind "Insufficient cpu": evicting pods never
        frees a PV bound to their claims)."""
        if decision.rejected_plugin.get(node) in VOLUME_PLUGINS:
            return False
        info = self.scheduler.cluster.nodes.get(node)
        if info is None or node not in decision.filtered:
            return True
        uids = set(victims.uids) - {""}
        leaving = [other for other in info.pods.values() if other.meta.uid in uids]
        profile = self.scheduler.profile
        checks = active_checks(profile, decision.state)
        without = clone_node(info, [other.meta.key for other in leaving])
        # The victims leave the cycle's counts too (affinity, spread), on a clone.
        state = decision.state.clone()
        for other in leaving:
            remove_pod(profile, state, decision.pod, other, without)
        status = node_fits(
            checks,
            profile,
            state,
            decision.pod,
            without,
            self.scheduler.nominated,
            self.scheduler.cluster,
        )
        return status is None or status.plugin not in VOLUME_PLUGINS


def extender_routes(extender: Extender) -> list[web.RouteDef]:
    settings = extender.settings
    prefix = "/" + settings.path_prefix.strip("/")

    def handler(
        verb: Callable[[Mapping[str, Any]], Any],
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            try:
                try:
                    body = await read_json(
                        request, settings.max_body_bytes, settings.body_timeout_seconds
                    )
                except BodyError as exc:
                    return web.json_response({"Error": str(exc)}, status=exc.status)
                if not isinstance(body, dict):
                    raise BadRequest("request body must be a JSON object")
                result = verb(body)
                if asyncio.iscoroutine(result):
                    # Bind waits for the PV controller, which may take longer than
                    # kube-scheduler waits; the cycle itself is shielded (see bind_pod).
                    deadline = None if verb == extender.bind_pod else settings.deadline_seconds
                    result = await asyncio.wait_for(result, deadline)
                return web.json_response(result)
            except BadRequest as exc:
                return web.json_response({"Error": str(exc).splitlines()[0]}, status=400)
            except Forbidden as exc:
                return web.json_response({"Error": str(exc)}, status=403)
            except TimeoutError:
                return web.json_response(
                    {"Error": f"no answer within {settings.deadline_seconds:g}s"}, status=200
                )

        return handle

    return [
        web.post(f"{prefix}/filter", handler(extender.filter)),
        web.post(f"{prefix}/prioritize", handler(extender.prioritize)),
        web.post(f"{prefix}/bind", handler(extender.bind_pod)),
        web.post(f"{prefix}/preempt", handler(extender.preempt)),
    ]
