"""``apiVersion``, read before any other field: a retired version is refused with the
release that removed it and kube-scheduler's own migration steps ("Scheduler configuration
migrations" in the Kubernetes documentation), from that version up to v1."""

from __future__ import annotations

from typing import Any

from volsched.cache.objects.fields import shown
from volsched.scheduling.scheduler_config.catalog import API_VERSION, KIND
from volsched.scheduling.scheduler_config.fields import Where

GROUP = "kubescheduler.config.k8s.io"

# Oldest first: (version, the kube-scheduler release that removed it, what changed in the
# next version).
RETIRED = (
    ("v1alpha1", "1.19", "the Policy-based algorithmSource became profiles of plugins"),
    ("v1alpha2", "1.21", "the plugin arguments became typed (kind: <Plugin>Args)"),
    (
        "v1beta1",
        "1.23",
        "NodeResourcesLeastAllocated, NodeResourcesMostAllocated and "
        "RequestedToCapacityRatio became NodeResourcesFit's scoringStrategy; NodeLabel, "
        "ServiceAffinity and NodePreferAvoidPods were removed",
    ),
    (
        "v1beta2",
        "1.28",
        "the default weights of InterPodAffinity and NodeAffinity went from 1 to 2 and "
        "TaintToleration's from 1 to 3",
    ),
    (
        "v1beta3",
        "1.29",
        "SelectorSpread was removed (PodTopologySpread's system defaults spread pods instead)",
    ),
)


def check_api_version(version: Any, where: Where) -> None:
    if version == API_VERSION:
        return
    at = where.at("apiVersion")
    for index, (retired, removed_in, _) in enumerate(RETIRED):
        if version == f"{GROUP}/{retired}":
            steps = "; ".join(change for _, _, change in RETIRED[index:])
            raise at.fail(
                f'no kind "{KIND}" is registered for version "{version}": kube-scheduler '
                f"removed it in {removed_in}; migrate to {API_VERSION} (set apiVersion to it "
                f"and apply what changed since {retired}: {steps})"
            )
    raise at.fail(f"must be {API_VERSION}, not {shown(version)}")
