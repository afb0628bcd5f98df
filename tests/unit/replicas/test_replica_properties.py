"""Properties over random clusters: space limits hold, hard anti-affinity holds, and the
same input always gives the same placements."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.replicas.builders import (
    GB,
    Disk,
    Host,
    kube_node,
    replica,
    storage_node,
    volume,
)
from volsched.cache.objects.replicated import Volume
from volsched.scheduling.replicas import (
    ReplicaCluster,
    ReplicaSchedulingSettings,
    ScheduledSpace,
    VolumePlacement,
    place_for_new_volume,
    schedule_volume,
)
from volsched.scheduling.replicas.disks import over_provisioning_limit

ZONES = ["z1", "z2", "z3", None]


@st.composite
def disks(draw: st.DrawFn) -> Disk:
    """Mostly roomy disks (so placements happen), sometimes full, odd or unusable ones."""
    maximum = draw(st.sampled_from([0, 20, 50, 100, 200])) * GB
    return Disk(
        maximum=maximum,
        available=draw(st.integers(maximum // 2, maximum) | st.integers(0, maximum)),
        scheduled=draw(st.sampled_from([0, 0, 10, 40, 150])) * GB,
        reserved=draw(st.integers(0, maximum // 10)),
        tags=draw(st.sampled_from([(), ("ssd",)])),
        allow=draw(st.sampled_from([True] * 7 + [False])),
        evicting=draw(st.sampled_from([False] * 7 + [True])),
    )


@st.composite
def hosts(draw: st.DrawFn) -> list[Host]:
    count = draw(st.integers(2, 9))
    result = []
    for i in range(count):
        disk_count = draw(st.integers(1, 3))
        result.append(
            Host(
                f"n{i}",
                zone=draw(st.sampled_from(ZONES)),
                disks={f"d{d}": draw(disks()) for d in range(disk_count)},
                tags=draw(st.sampled_from([(), ("fast",)])),
                ready=draw(st.sampled_from([True] * 7 + [False])),
                cordoned=draw(st.sampled_from([False] * 7 + [True])),
            )
        )
    return result


@st.composite
def volumes(draw: st.DrawFn, node_count: int, overrides: bool = True) -> list[Volume]:
    result = []
    for v in range(draw(st.integers(1, 6))):
        spec: dict[str, Any] = {}
        locality = draw(st.sampled_from(["disabled", "best-effort"]))
        spec["dataLocality"] = locality
        if locality == "best-effort" and draw(st.booleans()):
            spec["nodeID"] = f"n{draw(st.integers(0, node_count - 1))}"
        if draw(st.integers(0, 3)) == 0:
            spec["diskSelector"] = ["ssd"]
        if draw(st.integers(0, 3)) == 0:
            spec["nodeSelector"] = ["fast"]
        if overrides:
            for key in ("Node", "Zone", "Disk"):
                spec[f"replica{key}LevelSoftAntiAffinity"] = draw(
                    st.sampled_from(["ignored", "enabled", "disabled"])
                )
        size = draw(st.integers(1, 30)) * GB
        result.append(volume(f"v{v}", size, draw(st.integers(1, 3)), **spec))
    return result


replica_settings = st.builds(
    ReplicaSchedulingSettings,
    replica_node_level_soft_anti_affinity=st.booleans(),
    replica_zone_level_soft_anti_affinity=st.booleans(),
    replica_disk_level_soft_anti_affinity=st.booleans(),
    storage_minimal_available_percentage=st.integers(0, 30),
    storage_over_provisioning_percentage=st.integers(50, 300),
    allow_empty_node_selector_volume=st.sampled_from([True, True, False]),
    allow_empty_disk_selector_volume=st.sampled_from([True, True, False]),
    disable_scheduling_on_cordoned_node=st.booleans(),
    disk_selection=st.sampled_from(["balanced", "most-usable"]),
)


@dataclass
class Outcome:
    results: list[VolumePlacement | None]
    scheduled: ScheduledSpace


def run(
    cluster_hosts: list[Host],
    vols: list[Volume],
    chosen: ReplicaSchedulingSettings,
    shuffle: int | None = None,
    replicas: list[Any] | None = None,
) -> Outcome:
    kube = [kube_node(h) for h in cluster_hosts]
    storage = [storage_node(h) for h in cluster_hosts]
    existing = list(replicas or [])
    if shuffle is not None:
        rng = random.Random(shuffle)
        rng.shuffle(kube)
        rng.shuffle(storage)
        rng.shuffle(existing)
    view = ReplicaCluster(kube, storage, existing)
    scheduled = ScheduledSpace()
    results = [schedule_volume(v, view, chosen, 1000.0, scheduled) for v in vols]
    return Outcome(results, scheduled)


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=st.data(), chosen=replica_settings)
def test_no_disk_exceeds_its_over_provisioning_limit(
    data: st.DataObject, chosen: ReplicaSchedulingSettings
) -> None:
    cluster_hosts = data.draw(hosts())
    vols = data.draw(volumes(len(cluster_hosts)))
    outcome = run(cluster_hosts, vols, chosen)
    by_name = {h.name: h for h in cluster_hosts}
    for node, disk_name, added in outcome.scheduled.items():
        disk = by_name[node].disks[disk_name]
        limit = over_provisioning_limit(
            disk.maximum, disk.reserved, chosen.storage_over_provisioning_percentage
        )
        assert disk.scheduled + added <= limit
        assert disk.allow and not disk.evicting
        host = by_name[node]
        assert host.ready and not (host.cordoned and chosen.disable_scheduling_on_cordoned_node)
    # What was recorded is exactly what was placed.
    total = sum(added for _node, _disk, added in outcome.scheduled.items())
    placed = sum(
        len(result.placed) * vol.size
        for vol, result in zip(vols, outcome.results, strict=True)
        if result is not None
    )
    assert total == placed


@PROPERTY
@given(data=st.data(), chosen=replica_settings)
def test_hard_anti_affinity_is_never_broken(
    data: st.DataObject, chosen: ReplicaSchedulingSettings
) -> None:
    cluster_hosts = data.draw(hosts())
    vols = data.draw(volumes(len(cluster_hosts), overrides=False))
    outcome = run(cluster_hosts, vols, chosen)
    zone = {h.name: h.zone or "" for h in cluster_hosts}
    for result in outcome.results:
        if result is None:
            continue
        assert len(result.placed) + result.unplaced >= 1
        nodes = [p.node for p in result.placed]
        if not chosen.replica_node_level_soft_anti_affinity:
            assert len(nodes) == len(set(nodes))
        if not chosen.replica_zone_level_soft_anti_affinity:
            zones = [zone[n] for n in nodes]
            assert len(zones) == len(set(zones))
        if not chosen.replica_disk_level_soft_anti_affinity:
            spots = [(p.node, p.disk) for p in result.placed]
            assert len(spots) == len(set(spots))
        if result.unplaced:
            assert result.reasons and list(result.reasons) == sorted(set(result.reasons))
        else:
            assert result.reasons == ()


@PROPERTY
@given(data=st.data(), chosen=replica_settings, seed=st.integers(0, 1000))
def test_placements_are_reproducible(
    data: st.DataObject, chosen: ReplicaSchedulingSettings, seed: int
) -> None:
    cluster_hosts = data.draw(hosts())
    vols = data.draw(volumes(len(cluster_hosts)))
    existing = [
        replica(
            f"r{i}",
            data.draw(st.sampled_from([v.name for v in vols])),
            data.draw(st.sampled_from(["", *[h.name for h in cluster_hosts]])),
            "d0",
            evictionRequested=data.draw(st.booleans()),
        )
        for i in range(data.draw(st.integers(0, 4)))
    ]
    first = run(cluster_hosts, vols, chosen, replicas=existing)
    again = run(cluster_hosts, vols, chosen, shuffle=seed, replicas=existing)
    assert first.results == again.results
    assert list(first.scheduled.items()) == list(again.scheduled.items())


@PROPERTY
@given(data=st.data(), chosen=replica_settings)
def test_new_volume_checks_share_work_but_not_results(
    data: st.DataObject, chosen: ReplicaSchedulingSettings
) -> None:
    cluster_hosts = data.draw(hosts())
    locality = data.draw(st.sampled_from(["disabled", "best-effort", "strict-local"]))
    count = 1 if locality == "strict-local" else data.draw(st.integers(1, 3))
    size = data.draw(st.integers(1, 40)) * GB
    selectors = data.draw(st.sampled_from([((), ()), (("fast",), ()), ((), ("ssd",))]))

    def fresh_view() -> ReplicaCluster:
        return ReplicaCluster(
            [kube_node(h) for h in cluster_hosts], [storage_node(h) for h in cluster_hosts], []
        )

    shared_view = fresh_view()
    shared_space = ScheduledSpace()
    for host in cluster_hosts + cluster_hosts[:2]:
        args = (size, count, locality, *selectors, host.name)
        shared = place_for_new_volume(*args, shared_view, chosen, shared_space)
        alone = place_for_new_volume(*args, fresh_view(), chosen, ScheduledSpace())
        assert shared == alone
    assert list(shared_space.items()) == []
