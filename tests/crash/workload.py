"""The cluster a crash round runs on, and the pods it adds life after life.

Three nodes in three zones, each with four 10 GiB local PVs of a WaitForFirstConsumer
class, a dynamically provisioned local class, and a replicated class (two replicas) on
volsched's hyperconverged storage. Pods come in small batches: with static claims, with
claims to provision, with a replicated claim, with both kinds, with none — and now and
then one that can never fit (a claim larger than any PV, or a node selector no node
has), which must end pending with a reason.

Every pod that can fit always fits somewhere, whatever the scheduler chose before: a
round never asks for more than six static claims, two per pod at most, so whichever
node earlier pods went to, one node still has three PVs free.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from random import Random
from typing import Any

from tests.integration.objects import claim, local_pv, node, pod, storage_class, storage_node

Raw = dict[str, Any]
NAMESPACE = "default"
NODES = {"node-a": "zone-a", "node-b": "zone-b", "node-c": "zone-c"}
PVS_PER_NODE = 4
STATIC_CLAIMS_PER_ROUND = 6
LOCAL, DYNAMIC, REPLICATED, TOO_BIG = "local", "dynamic", "replicated", "too-big"
DYNAMIC_PROVISIONER = "rancher.io/local-path"
REPLICATED_PROVISIONER = "replicated.volsched.io"
REPLICAS_PER_VOLUME = 2

# (kind of pod, weight): what a batch is drawn from.
POD_KINDS = (
    ("static", 3),
    ("two-static", 1),
    ("dynamic", 3),
    ("replicated", 2),
    ("mixed", 2),
    ("plain", 2),
)


@dataclass(frozen=True, slots=True)
class PodPlan:
    """A pod of the workload, its claims (name → class) and whether it can ever fit."""

    name: str
    claims: tuple[tuple[str, str], ...]
    schedulable: bool
    node_selector: tuple[tuple[str, str], ...] = ()


def base_objects() -> list[Raw]:
    """Everything that exists before the first pod (the CRDs aside)."""
    objects: list[Raw] = [
        storage_class(LOCAL),
        storage_class(DYNAMIC, DYNAMIC_PROVISIONER),
        storage_class(
            REPLICATED, REPLICATED_PROVISIONER, numberOfReplicas=str(REPLICAS_PER_VOLUME)
        ),
    ]
    for name, zone in NODES.items():
        objects += [node(name, zone), storage_node(name)]
        objects += [local_pv(f"{name}-pv-{i}", name) for i in range(PVS_PER_NODE)]
    return objects


def claim_size(storage: str) -> str:
    if storage == TOO_BIG:
        return "100Gi"
    return "1Gi" if storage == REPLICATED else "5Gi"


def manifests(plan: PodPlan) -> list[Raw]:
    """The claims and the pod, as a user would apply them."""
    objects = [
        claim(name, LOCAL if storage == TOO_BIG else storage, claim_size(storage))
        for name, storage in plan.claims
    ]
    body = pod(plan.name, tuple(name for name, _ in plan.claims))
    if plan.node_selector:
        body["spec"]["nodeSelector"] = dict(plan.node_selector)
    return [*objects, body]


@dataclass(slots=True)
class Workload:
    """The pods of one round, drawn from its seeded generator."""

    rng: Random
    pods: list[PodPlan] = field(default_factory=list)
    static_claims: int = 0
    impossible_added: bool = False

    def batch(self, life: int) -> list[PodPlan]:
        """One to three new pods (and, now and then, one that cannot fit)."""
        batch = [self._pod(f"p{life}-{i}") for i in range(self.rng.randint(1, 3))]
        if not self.impossible_added and self.rng.random() < 0.3:
            self.impossible_added = True
            name = f"p{life}-x"
            if self.rng.random() < 0.5:
                batch.append(PodPlan(name, ((f"{name}-c0", TOO_BIG),), schedulable=False))
            else:
                selector = (("kubernetes.io/hostname", "node-z"),)
                batch.append(PodPlan(name, (), schedulable=False, node_selector=selector))
        self.pods += batch
        return batch

    def _pod(self, name: str) -> PodPlan:
        kinds, weights = zip(*POD_KINDS, strict=True)
        kind = self.rng.choices(kinds, weights)[0]
        static = {"static": 1, "two-static": 2, "mixed": 1}.get(kind, 0)
        if self.static_claims + static > STATIC_CLAIMS_PER_ROUND:
            kind, static = "dynamic", 0
        self.static_claims += static
        storages = {
            "static": [LOCAL],
            "two-static": [LOCAL, LOCAL],
            "dynamic": [DYNAMIC],
            "replicated": [REPLICATED],
            "mixed": [LOCAL, DYNAMIC],
            "plain": [],
        }[kind]
        claims = tuple((f"{name}-c{i}", storage) for i, storage in enumerate(storages))
        return PodPlan(name, claims, schedulable=True)


def expected_writes(batch: list[PodPlan]) -> Counter[str]:
    """How many writes of each binding-cycle kind placing the batch takes."""
    counts: Counter[str] = Counter()
    for plan in batch:
        if not plan.schedulable:
            continue
        counts["bind pod"] += 1
        for _, storage in plan.claims:
            if storage == LOCAL:
                counts["prebind PV"] += 1
            elif storage in (DYNAMIC, REPLICATED):
                counts["annotate claim"] += 1
            if storage == REPLICATED:
                counts["create Replica"] += REPLICAS_PER_VOLUME
    return counts
