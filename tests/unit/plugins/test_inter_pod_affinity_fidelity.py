"""InterPodAffinity where it departed from upstream: ``matchLabelKeys`` is folded into a
term's selector once, as kube-apiserver does when it admits the pod (a label changed
since must not fold a second, contradicting requirement), and normalized scores round as
upstream's float arithmetic does."""

from __future__ import annotations

from typing import Any

from tests.unit.plugins.test_inter_pod_affinity import (
    DB,
    affinity,
    existing,
    filter_all,
    incoming,
    scores,
    snapshot,
    term,
)
from volsched.scheduling.plugins.inter_pod_affinity import (
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
)

Raw = dict[str, Any]


def as_admitted(term_body: Raw, key: str, value: str) -> Raw:
    """The term as kube-apiserver stores it: the key's value at creation folded in."""
    folded = {"key": key, "operator": "In", "values": [value]}
    selector = term_body["labelSelector"]
    return {
        **term_body,
        "labelSelector": {**selector, "matchExpressions": [*selector["matchExpressions"], folded]},
        "matchLabelKeys": [key],
    }


def test_an_existing_pod_whose_label_changed_keeps_its_anti_affinity() -> None:
    # Created as tenant a (the API server folded "tenant In (a)"), relabelled tenant b.
    guard = affinity(anti=[as_admitted(term("app", "zone", values=("db",)), "tenant", "a")])
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", {**DB, "tenant": "b"}, spec=guard)))
    result = filter_all(plugin, incoming({**DB, "tenant": "a"}))
    assert result["n1"] is not None
    assert result["n1"].reasons == (REASON_EXISTING_ANTI_AFFINITY,)
    # Tenant b pods were never what it kept away.
    assert filter_all(plugin, incoming({**DB, "tenant": "b"}))["n1"] is None


def test_a_term_from_a_file_is_folded_from_the_pod_s_labels() -> None:
    """A pod that never went through admission (``simulate`` on a file)."""
    guard = affinity(anti=[{**term("app", "zone", values=("db",)), "matchLabelKeys": ["tenant"]}])
    plugin = InterPodAffinity(snapshot(existing("db-0", "n1", {**DB, "tenant": "a"}, spec=guard)))
    assert filter_all(plugin, incoming({**DB, "tenant": "a"}))["n1"] is not None
    assert filter_all(plugin, incoming({**DB, "tenant": "b"}))["n1"] is None


def preferred_term(app: str) -> Raw:
    return term("app", "zone", values=(app,))


def test_normalized_scores_round_as_upstream_s_float_arithmetic() -> None:
    """Upstream's NormalizeScore: float64(100) * (float64(29) / float64(100)) is
    28.999999999999996, truncated to 28 (an integer product first would give 29)."""
    spec = affinity(preferred=[(29, preferred_term("a")), (100, preferred_term("b"))])
    plugin = InterPodAffinity(
        snapshot(existing("a-0", "n1", {"app": "a"}), existing("b-0", "n2", {"app": "b"}))
    )
    assert scores(plugin, incoming({"app": "web"}, spec)) == {"n1": 28, "n2": 100, "n3": 0}
