"""InterPodAffinity's filter and score.

The rows restate the cases of upstream's filtering_test.go and scoring_test.go
(interpodaffinity) in our own data: operators in terms, several terms ANDed, namespaces
and namespaceSelector, affinity and anti-affinity together, the existing pods'
anti-affinity (symmetry), a node without the topology label, the first pod of a group
with affinity to itself; preferred terms both ways, hardPodAffinityWeight and the
min..max normalization.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.plugins.inter_pod_affinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
)

Raw = dict[str, Any]
WEB = {"app": "web"}
DB = {"app": "db", "tier": "data"}
# Two regions; zone-a and zone-b in east, zone-c in west.
NODES = {
    "n1": {"region": "east", "zone": "zone-a"},
    "n2": {"region": "east", "zone": "zone-b"},
    "n3": {"region": "west", "zone": "zone-c"},
}


def term(
    key: str,
    topology: str,
    operator: str = "In",
    values: tuple[str, ...] = (),
    namespaces: list[str] | None = None,
    namespace_selector: Raw | None = None,
) -> Raw:
    expression: Raw = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    body: Raw = {"labelSelector": {"matchExpressions": [expression]}, "topologyKey": topology}
    if namespaces is not None:
        body["namespaces"] = namespaces
    if namespace_selector is not None:
        body["namespaceSelector"] = namespace_selector
    return body


def affinity(
    required: list[Raw] = (),  # type: ignore[assignment]
    anti: list[Raw] = (),  # type: ignore[assignment]
    preferred: list[tuple[int, Raw]] = (),  # type: ignore[assignment]
    preferred_anti: list[tuple[int, Raw]] = (),  # type: ignore[assignment]
) -> Raw:
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    spec: Raw = {"podAffinity": {}, "podAntiAffinity": {}}
    if required:
        spec["podAffinity"][req] = list(required)
    if preferred:
        spec["podAffinity"][pref] = [{"weight": w, "podAffinityTerm": t} for w, t in preferred]
    if anti:
        spec["podAntiAffinity"][req] = list(anti)
    if preferred_anti:
        spec["podAntiAffinity"][pref] = [
            {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti
        ]
    return {"affinity": spec}


def existing(
    name: str,
    on: str,
    labels: Raw,
    namespace: str = "default",
    spec: Raw | None = None,
) -> Raw:
    return pod(name, namespace=namespace, node_name=on, labels=labels, spec=spec)


def snapshot(*objects: Raw, nodes: dict[str, dict[str, str]] = NODES) -> Any:
    return cluster(*(node(name, labels=labels) for name, labels in nodes.items()), *objects)


def incoming(labels: Raw, spec: Raw | None = None, namespace: str = "default") -> Pod:
    parsed: Pod = parse(pod("incoming", namespace=namespace, labels=labels, spec=spec))
    return parsed


def filter_all(plugin: InterPodAffinity, target: Pod) -> dict[str, Status | None]:
    state = CycleState()
    _, status = plugin.pre_filter(state, target)
    if status.code is Code.SKIP:
        return dict.fromkeys(sorted(plugin.cluster.nodes))
    assert status.code is Code.SUCCESS
    return {
        name: plugin.filter(state, target, plugin.cluster.nodes[name])
        for name in sorted(plugin.cluster.nodes)
    }


OK = None
AFFINITY = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY)
ANTI = (Code.UNSCHEDULABLE, REASON_ANTI_AFFINITY)
EXISTING = (Code.UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY)


@pytest.mark.parametrize(
    ("objects", "labels", "spec", "n1"),
    [
        pytest.param([], DB, None, OK, id="no terms anywhere"),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(required=[term("app", "region", values=("web", "cache"))]),
            OK,
            id="affinity In matches the existing pod",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(required=[term("app", "region", "NotIn", ("batch", "cache"))]),
            OK,
            id="affinity NotIn matches the existing pod",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(required=[term("app", "region", values=("web",), namespaces=["other"])]),
            AFFINITY,
            id="the matching pod is in another namespace than the term names",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(required=[term("app", "region", values=("cache",))]),
            AFFINITY,
            id="no pod matches the selector",
        ),
        pytest.param(
            [existing("web-0", "n1", {"app": "web", "tier": "front"})],
            DB,
            affinity(
                required=[
                    term("app", "region", values=("web",)),
                    term("tier", "region", "Exists"),
                ]
            ),
            OK,
            id="every term matched by the same pod",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(
                required=[
                    term("app", "region", values=("web",)),
                    term("tier", "region", "Exists"),
                ]
            ),
            AFFINITY,
            id="terms are ANDed: one unmatched term fails the node",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(
                required=[term("app", "region", values=("web",))],
                anti=[term("app", "rack", values=("web",))],
            ),
            OK,
            id="anti-affinity on a key the node lacks does not reject",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(
                required=[term("app", "region", values=("web",))],
                anti=[term("app", "zone", values=("web",))],
            ),
            ANTI,
            id="affinity met, anti-affinity broken in the zone",
        ),
        pytest.param(
            [
                existing(
                    "web-0", "n1", WEB, spec=affinity(anti=[term("app", "zone", values=("db",))])
                )
            ],
            DB,
            None,
            EXISTING,
            id="an existing pod's anti-affinity keeps a pod without terms away",
        ),
        pytest.param(
            [
                existing(
                    "web-0", "n1", WEB, spec=affinity(anti=[term("app", "zone", "NotIn", ("db",))])
                )
            ],
            DB,
            None,
            OK,
            id="an existing pod's anti-affinity that does not select the pod",
        ),
        pytest.param(
            [],
            DB,
            affinity(required=[term("app", "zone", values=("db",))]),
            OK,
            id="the first pod of a group with affinity to itself",
        ),
        pytest.param(
            [],
            DB,
            affinity(required=[term("app", "zone", values=("web",))]),
            AFFINITY,
            id="no pod anywhere and the pod does not match its own term",
        ),
        pytest.param(
            [existing("db-0", "n3", DB)],
            DB,
            affinity(required=[term("app", "region", values=("db",))]),
            AFFINITY,
            id="the group exists, in another region: not the first pod any more",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            DB,
            affinity(required=[term("app", "rack", values=("web",))]),
            AFFINITY,
            id="a node without the topology label cannot satisfy affinity",
        ),
        pytest.param(
            [
                {"kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}},
                existing("web-0", "n1", WEB, namespace="shop"),
            ],
            DB,
            affinity(
                required=[
                    term(
                        "app",
                        "region",
                        values=("web",),
                        namespace_selector={"matchLabels": {"team": "a"}},
                    )
                ]
            ),
            OK,
            id="namespaceSelector selects the namespace by its labels",
        ),
        pytest.param(
            [
                {"kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "b"}}},
                existing("web-0", "n1", WEB, namespace="shop"),
            ],
            DB,
            affinity(
                required=[
                    term(
                        "app",
                        "region",
                        values=("web",),
                        namespace_selector={"matchLabels": {"team": "a"}},
                    )
                ]
            ),
            AFFINITY,
            id="namespaceSelector does not select the namespace",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB, namespace="anywhere")],
            DB,
            affinity(required=[term("app", "region", values=("web",), namespace_selector={})]),
            OK,
            id="an empty namespaceSelector means every namespace",
        ),
    ],
)
def test_filter(objects: list[Raw], labels: Raw, spec: Raw | None, n1: Any) -> None:
    plugin = InterPodAffinity(snapshot(*objects))
    status = filter_all(plugin, incoming(labels, spec))["n1"]
    if n1 is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (n1[0], (n1[1],))


def test_three_replicas_with_required_anti_affinity_on_two_nodes() -> None:
    """The StatefulSet of the issue: the third replica finds no node."""
    anti = affinity(anti=[term("app", "kubernetes.io/hostname", values=("db",))])
    nodes = {"n1": {}, "n2": {}}
    plugin = InterPodAffinity(
        snapshot(
            existing("db-0", "n1", DB, spec=anti),
            existing("db-1", "n2", DB, spec=anti),
            nodes=nodes,
        )
    )
    results = filter_all(plugin, incoming(DB, anti))
    for status in results.values():
        assert status is not None and status.reasons == (REASON_ANTI_AFFINITY,)


def test_anti_affinity_per_zone_leaves_the_other_zones() -> None:
    anti = affinity(anti=[term("app", "zone", values=("db",))])
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", DB, spec=anti)))
    results = filter_all(plugin, incoming(DB, anti))
    assert results["n1"] is not None and results["n1"].reasons == (REASON_ANTI_AFFINITY,)
    assert results["n2"] is None and results["n3"] is None


# -- score -------------------------------------------------------------------------


def scores(plugin: InterPodAffinity, target: Pod) -> dict[str, int]:
    state = CycleState()
    infos = [plugin.cluster.nodes[name] for name in sorted(plugin.cluster.nodes)]
    status = plugin.pre_score(state, target, infos)
    if status.code is Code.SKIP:
        return dict.fromkeys(sorted(plugin.cluster.nodes), 0)
    raw = {info.name: plugin.score(state, target, info) for info in infos}
    plugin.normalize(state, target, raw)
    return raw


@pytest.mark.parametrize(
    ("objects", "spec", "hard_weight", "expected"),
    [
        # n1 and n2 share region east with web-0: raw 5, 5, 0.
        pytest.param(
            [existing("web-0", "n1", WEB)],
            affinity(preferred=[(5, term("app", "region", values=("web",)))]),
            1,
            {"n1": 100, "n2": 100, "n3": 0},
            id="preferred affinity to a pod in the region",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            affinity(preferred_anti=[(5, term("app", "region", values=("web",)))]),
            1,
            {"n1": 0, "n2": 0, "n3": 100},
            id="preferred anti-affinity",
        ),
        # Affinity 8 (region east: n1, n2) and anti-affinity 4 (zone-b: n2): 8, 4, 0.
        pytest.param(
            [existing("web-0", "n1", WEB), existing("cache-0", "n2", {"app": "cache"})],
            affinity(
                preferred=[(8, term("app", "region", values=("web",)))],
                preferred_anti=[(4, term("app", "zone", values=("cache",)))],
            ),
            1,
            {"n1": 100, "n2": 50, "n3": 0},
            id="both preferred kinds, normalized min..max",
        ),
        pytest.param(
            [
                existing(
                    "web-0",
                    "n3",
                    WEB,
                    spec=affinity(required=[term("app", "zone", values=("db",))]),
                )
            ],
            None,
            1,
            {"n1": 0, "n2": 0, "n3": 100},
            id="an existing pod's required affinity to the pod, hardPodAffinityWeight 1",
        ),
        pytest.param(
            [
                existing(
                    "web-0",
                    "n3",
                    WEB,
                    spec=affinity(required=[term("app", "zone", values=("db",))]),
                )
            ],
            None,
            0,
            {"n1": 0, "n2": 0, "n3": 0},
            id="hardPodAffinityWeight 0 ignores it",
        ),
        pytest.param(
            [
                existing(
                    "web-0",
                    "n1",
                    WEB,
                    spec=affinity(preferred_anti=[(3, term("app", "region", values=("db",)))]),
                )
            ],
            None,
            1,
            {"n1": 0, "n2": 0, "n3": 100},
            id="an existing pod's preferred anti-affinity to the pod",
        ),
        pytest.param(
            [
                existing(
                    "web-0",
                    "n2",
                    WEB,
                    spec=affinity(preferred=[(7, term("tier", "zone", "Exists"))]),
                )
            ],
            None,
            1,
            {"n1": 0, "n2": 100, "n3": 0},
            id="an existing pod's preferred affinity to the pod",
        ),
        pytest.param(
            [existing("web-0", "n1", WEB)],
            affinity(preferred=[(5, term("app", "region", values=("web",), namespaces=["other"]))]),
            1,
            {"n1": 0, "n2": 0, "n3": 0},
            id="a preferred term for another namespace",
        ),
    ],
)
def test_score(
    objects: list[Raw], spec: Raw | None, hard_weight: int, expected: dict[str, int]
) -> None:
    plugin = InterPodAffinity(snapshot(*objects), hard_weight)
    assert scores(plugin, incoming(DB, spec)) == expected


def test_match_and_mismatch_label_keys_use_the_pods_own_values() -> None:
    """matchLabelKeys adds ``key In (own value)``, mismatchLabelKeys ``key NotIn``."""
    tenant_a = {**DB, "tenant": "a"}
    spec = affinity(anti=[{**term("app", "zone", values=("db",)), "mismatchLabelKeys": ["tenant"]}])
    # Anti-affinity to db pods of *other* tenants: a same-tenant neighbour is fine.
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", tenant_a)))
    assert filter_all(plugin, incoming(tenant_a, spec))["n1"] is None
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", {**DB, "tenant": "b"})))
    rejected = filter_all(plugin, incoming(tenant_a, spec))["n1"]
    assert rejected is not None and rejected.reasons == (REASON_ANTI_AFFINITY,)
    together = affinity(
        required=[{**term("app", "zone", values=("db",)), "matchLabelKeys": ["tenant"]}]
    )
    # A web pod that wants its own tenant's database in the zone.
    web_a = {"app": "web", "tenant": "a"}
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", {**DB, "tenant": "b"})))
    assert filter_all(plugin, incoming(web_a, together))["n1"] is not None
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", tenant_a)))
    assert filter_all(plugin, incoming(web_a, together))["n1"] is None


@pytest.mark.parametrize(
    ("spec", "ignoring", "expected"),
    [
        pytest.param(None, False, {"n1": 0, "n2": 100, "n3": 0}, id="existing terms count"),
        pytest.param(None, True, {"n1": 0, "n2": 0, "n3": 0}, id="ignored: not scored at all"),
        # The pod's own preferred term (region east: n1, n2) brings the existing pod's
        # term back too: n2 7 + 5, n1 5, n3 0.
        pytest.param(
            affinity(preferred=[(5, term("app", "region", values=("web",)))]),
            True,
            {"n1": 41, "n2": 100, "n3": 0},
            id="a pod with preferred terms is scored in full",
        ),
    ],
)
def test_ignore_preferred_terms_of_existing_pods(
    spec: Raw | None, ignoring: bool, expected: dict[str, int]
) -> None:
    """InterPodAffinityArgs.ignorePreferredTermsOfExistingPods, as upstream: it only
    spares the work for a pod that has no preferred terms of its own."""
    liking = affinity(preferred=[(7, term("tier", "zone", "Exists"))])
    plugin = InterPodAffinity(
        snapshot(existing("web-0", "n2", WEB, spec=liking)),
        ignore_preferred_terms_of_existing_pods=ignoring,
    )
    assert scores(plugin, incoming(DB, spec)) == expected
