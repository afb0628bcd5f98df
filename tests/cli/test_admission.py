"""A snapshot's pods get what the API server's admission would have given them."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.daemon.cli.admission import Admission

KATA = {
    "kind": "RuntimeClass",
    "metadata": {"name": "kata"},
    "handler": "kata",
    "overhead": {"podFixed": {"cpu": "250m"}},
    "scheduling": {
        "nodeSelector": {"runtime": "kata"},
        "tolerations": [{"key": "kata", "operator": "Exists"}],
    },
}
NEVER = {
    "kind": "PriorityClass",
    "metadata": {"name": "polite"},
    "value": 1000,
    "preemptionPolicy": "Never",
}
DEFAULT = {
    "kind": "PriorityClass",
    "metadata": {"name": "everyone"},
    "value": 5,
    "globalDefault": True,
    "preemptionPolicy": "Never",
}


def pod(**spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [], **spec}}


@pytest.mark.parametrize(
    ("objects", "spec", "expected"),
    [
        pytest.param(
            [KATA],
            {"runtimeClassName": "kata", "nodeSelector": {"zone": "a"}},
            {
                "overhead": {"cpu": "250m"},
                "nodeSelector": {"runtime": "kata", "zone": "a"},
                "tolerations": [{"key": "kata", "operator": "Exists"}],
            },
            id="RuntimeClass: overhead, node selector and tolerations",
        ),
        pytest.param(
            [KATA],
            {"runtimeClassName": "kata", "overhead": {"cpu": "1"}},
            {
                "overhead": {"cpu": "1"},
                "nodeSelector": {"runtime": "kata"},
                "tolerations": [{"key": "kata", "operator": "Exists"}],
            },
            id="an overhead already set stays",
        ),
        pytest.param(
            [NEVER], {"priorityClassName": "polite"}, {"preemptionPolicy": "Never"}, id="Priority"
        ),
        pytest.param(
            [NEVER],
            {"priorityClassName": "polite", "preemptionPolicy": "PreemptLowerPriority"},
            {"preemptionPolicy": "PreemptLowerPriority"},
            id="a policy already set stays",
        ),
        pytest.param([DEFAULT], {}, {"preemptionPolicy": "Never"}, id="the global default class"),
        pytest.param([], {"runtimeClassName": "gone"}, {}, id="an unknown class changes nothing"),
    ],
)
def test_admission(
    objects: list[dict[str, Any]], spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    admitted = Admission.of(objects).admit(pod(**spec))["spec"]
    for key, value in expected.items():
        assert admitted[key] == value
    assert set(admitted) - {"containers", *spec} == set(expected) - set(spec)
