"""ImageLocality, table-driven: the rows of upstream's TestImageLocalityPriority in our
own data — thresholds scaled by the container count, the spread of an image across the
nodes, and the ``:latest`` normalization."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import parse_node, parse_pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.plugins.image_locality import ImageLocality, normalized_image_name

MIB = 1024 * 1024


def node(name: str, *images: tuple[list[str], int]) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"},
            "images": [{"names": names, "sizeBytes": size} for names, size in images],
        },
    }


def pod(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [{"name": f"i{n}", "image": i} for n, i in enumerate(init)],
            "containers": [{"name": f"c{n}", "image": i} for n, i in enumerate(images)],
            "volumes": [
                {"name": f"v{n}", "image": {"reference": r}} for n, r in enumerate(volumes)
            ],
        },
    }


# Two nodes: "big" holds a 60 MiB and a 500 MiB image (and a 3000 MiB one), "small" a
# 700 MiB and a 12 MiB one; "bare" holds nothing.
BIG = node(
    "big",
    (["registry.local/app:latest", "registry.local/app:v2"], 60 * MIB),
    (["registry.local/db:latest"], 500 * MIB),
    (["registry.local/huge:latest"], 3000 * MIB),
)
SMALL = node(
    "small",
    (["registry.local/web:latest"], 700 * MIB),
    (["registry.local/tiny:latest", "registry.local/tiny:1"], 12 * MIB),
)
BARE = node("bare")


@pytest.mark.parametrize(
    ("nodes", "the_pod", "expected"),
    [
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/app", "registry.local/web"),
            # big: 60 MiB spread over half the nodes = 30 MiB, barely above 23 MiB
            # small: 700/2 = 350 MiB of a 2 × 1000 MiB range.
            {"big": 0, "small": 16},
            id="each node holds one image: the larger one wins",
        ),
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/app", "registry.local/db"),
            # big: (60 + 500) / 2 = 280 MiB → 100 × (280 - 23) / (2000 - 23).
            {"big": 12, "small": 0},
            id="both images on one node",
        ),
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/huge", "registry.local/tiny"),
            # big: 3000 / 2 = 1500 MiB, under the 2 × 1000 MiB ceiling.
            {"big": 74, "small": 0},
            id="the ceiling grows with the container count",
        ),
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/huge"),
            {"big": 100, "small": 0},
            id="one container: clamped at 1000 MiB",
        ),
        pytest.param(
            [BIG, SMALL, BARE],
            pod("registry.local/huge", "registry.local/tiny"),
            # Spread over three nodes now: 3000 / 3 = 1000 MiB.
            {"big": 49, "small": 0, "bare": 0},
            id="a node without images lowers every image's spread",
        ),
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/web", init=("registry.local/db",)),
            # Two containers (one init): small 350 MiB, big 250 MiB of 2 × 1000 MiB.
            {"big": 11, "small": 16},
            id="init containers count",
        ),
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/app:v2", "registry.local/app:v3"),
            {"big": 0, "small": 0},
            id="tags are matched as written",
        ),
        pytest.param(
            [BIG, SMALL],
            pod("registry.local/tiny", volumes=("registry.local/db:latest",)),
            # An image volume adds its image (500 / 2 = 250 MiB on big) but not a
            # container: the range stays 1 × 1000 MiB. big 250, small 6 MiB.
            {"big": 23, "small": 0},
            id="image volumes count as images, not as containers",
        ),
        pytest.param(
            [BIG, node("also-db", (["registry.local/db:latest"], 900 * MIB))],
            pod("registry.local/db"),
            # Both nodes score with the size seen first (big's 500 MiB), spread over
            # both: 500 MiB → 100 × (500 - 23) / (1000 - 23).
            {"big": 48, "also-db": 48},
            id="every node scores an image with the size first seen for its name",
        ),
    ],
)
def test_image_locality_scores(
    nodes: list[dict[str, Any]], the_pod: dict[str, Any], expected: dict[str, int]
) -> None:
    cluster = ClusterCache()
    for raw in nodes:
        cluster.upsert("Node", parse_node(raw))
    plugin = ImageLocality(cluster)
    infos = cluster.node_list()
    scores = plugin.score_nodes(CycleState(), parse_pod(the_pod), infos)
    assert dict(zip((info.name for info in infos), scores, strict=True)) == expected


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        ("busybox", "busybox:latest"),
        ("registry.local:5000/team/app", "registry.local:5000/team/app:latest"),
        ("busybox:1.36", "busybox:1.36"),
        ("busybox@sha256:" + "ab" * 32, "busybox@sha256:" + "ab" * 32),
        ("docker.io/library/busybox", "docker.io/library/busybox:latest"),
    ],
)
def test_image_names_are_normalized_as_upstream(image: str, normalized: str) -> None:
    assert normalized_image_name(image) == normalized


def test_node_view_keeps_only_image_names_and_sizes() -> None:
    raw = node("n", (["a:1", "a:latest"], 5), (["b:2"], 7))
    raw["status"]["images"][0]["extra"] = "dropped"
    assert parse_node(raw).images == {"a:1": 5, "a:latest": 5, "b:2": 7}


def test_the_spread_follows_nodes_that_gain_lose_and_leave() -> None:
    cluster = ClusterCache()
    for raw in (BIG, SMALL, BARE):
        cluster.upsert("Node", parse_node(raw))
    assert cluster.image_nodes["registry.local/db:latest"] == 1
    bare_with_db = node("bare", (["registry.local/db:latest"], 500 * MIB))
    bare_with_db["metadata"]["resourceVersion"] = "2"
    cluster.upsert("Node", parse_node(bare_with_db))
    assert cluster.image_nodes["registry.local/db:latest"] == 2
    cluster.delete("Node", "big")
    assert cluster.image_nodes["registry.local/db:latest"] == 1
    assert "registry.local/app:latest" not in cluster.image_nodes
    plugin = ImageLocality(cluster)
    infos = cluster.node_list()
    scores = plugin.score_nodes(CycleState(), parse_pod(pod("registry.local/db")), infos)
    # 500 MiB on one node of two: 250 MiB of a 1000 MiB range.
    assert dict(zip((info.name for info in infos), scores, strict=True)) == {
        "bare": 23,
        "small": 0,
    }
